// Markdown text helpers; see markdown_text.h.
#include "server/core/markdown_text.h"

#include <algorithm>

namespace ttap {

// The hover's Markdown as plain text for clients that ask for it: emphasis and code marks
// dropped, links written out, table rules removed, cells separated by two spaces.
std::string MarkdownToPlainText(const std::string& md) {
  std::string out;
  size_t line_start = 0;
  while (line_start <= md.size()) {
    size_t end = md.find('\n', line_start);
    if (end == std::string::npos) end = md.size();
    std::string line = md.substr(line_start, end - line_start);
    line_start = end + 1;
    if (line.find_first_not_of("|-: ") == std::string::npos && line.find("--") != std::string::npos)
      continue;  // a table rule
    if (line == "---") line = "";
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line.compare(i, 2, "**") == 0) {
        ++i;
        continue;
      }
      if (line[i] == '`') continue;
      if (line[i] == '[') {  // [label](url) -> label: url
        const size_t close = line.find("](", i);
        const size_t paren = close == std::string::npos ? close : line.find(')', close);
        if (paren != std::string::npos) {
          text +=
              line.substr(i + 1, close - i - 1) + ": " + line.substr(close + 2, paren - close - 2);
          i = paren;
          continue;
        }
      }
      text += line[i];
    }
    if (!text.empty() && text.front() == '|') {  // a table row: cells apart
      std::string row;
      size_t a = 1;
      while (a < text.size()) {
        size_t b = text.find('|', a);
        if (b == std::string::npos) b = text.size();
        std::string cell = text.substr(a, b - a);
        const size_t x = cell.find_first_not_of(' '), y = cell.find_last_not_of(' ');
        if (x != std::string::npos) row += (row.empty() ? "" : "  ") + cell.substr(x, y - x + 1);
        a = b + 1;
      }
      text = row;
    }
    out += text + "\n";
    if (end == md.size()) break;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string Sparkline(const std::vector<double>& v) {
  static const char* kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::string s;
  for (double x : v) s += kBars[std::clamp(static_cast<int>(x * 7.999), 0, 7)];
  return s;
}

}  // namespace ttap

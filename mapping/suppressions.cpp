// Suppression comments and code lists; see suppressions.h.
#include "mapping/suppressions.h"

#include <algorithm>

namespace ttap {

namespace {

// The offset just past `ttap: ignore` in a comment of |line|, or npos.
size_t IgnoreDirective(std::string_view line) {
  size_t hash = line.find('#');
  while (hash != std::string_view::npos) {
    size_t p = line.find_first_not_of(" \t", hash + 1);
    if (p != std::string_view::npos && line.substr(p, 5) == "ttap:") {
      p = line.find_first_not_of(" \t", p + 5);
      if (p != std::string_view::npos && line.substr(p, 6) == "ignore") return p + 6;
    }
    hash = line.find('#', hash + 1);
  }
  return std::string_view::npos;
}

std::string_view Trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace

bool SuppressedOnLine(std::string_view line, const std::string& code) {
  const size_t p = IgnoreDirective(line);
  if (p == std::string_view::npos) return false;
  if (p >= line.size() || line[p] != '[') return true;
  const size_t close = line.find(']', p);
  std::string_view list =
      line.substr(p + 1, close == std::string_view::npos ? std::string_view::npos : close - p - 1);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (Trim(list.substr(0, comma)) == code) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

bool SuppressedAt(const PythonSource& src, const MappedRange& m, int frame_line,
                  const std::string& code) {
  if (m.past_end) return false;
  const int first = src.ToPosition(m.range.start, PositionEncoding::kUtf8).line;
  const int last = std::min(src.ToPosition(m.range.end, PositionEncoding::kUtf8).line, first + 50);
  for (int l = first; l <= last; ++l) {
    if (SuppressedOnLine(src.LineText(l), code)) return true;
  }
  return !m.reanchored && SuppressedOnLine(src.LineText(frame_line - 1), code);
}

bool CodeSelected(const std::string& code, const std::vector<std::string>& select,
                  const std::vector<std::string>& ignore) {
  auto matches = [&](const std::vector<std::string>& list) {
    for (const auto& entry : list) {
      if (entry == "ALL" || code.rfind(entry, 0) == 0) return true;
    }
    return false;
  };
  if (matches(ignore)) return false;
  return select.empty() || matches(select);
}

std::string CheckCodeList(const std::vector<std::string>& codes) {
  for (const auto& c : codes) {
    if (c == "ALL") continue;
    bool ok = c.size() >= 3 && c.size() <= 6 && c.compare(0, 3, "TTA") == 0;
    for (size_t i = 3; ok && i < c.size(); ++i) ok = c[i] >= '0' && c[i] <= '9';
    if (!ok) return "'" + c + "' is not a code or code prefix (TTA001, TTA00, TTA, ALL)";
  }
  return "";
}

TextEdit SuppressionEdit(const PythonSource& src, int line0, const std::string& code) {
  const std::string_view line = src.LineText(line0);
  const uint32_t start = src.LineStart(line0);
  const size_t p = IgnoreDirective(line);
  if (p != std::string_view::npos && p < line.size() && line[p] == '[') {
    const size_t close = line.find(']', p);
    if (close != std::string_view::npos) {
      const uint32_t at = start + static_cast<uint32_t>(close);
      const bool empty = Trim(line.substr(p + 1, close - p - 1)).empty();
      return {{at, at}, (empty ? "" : ", ") + code};
    }
  }
  const uint32_t end = start + static_cast<uint32_t>(line.size());
  return {{end, end}, "  # ttap: ignore[" + code + "]"};
}

}  // namespace ttap

// PythonSource and SourceCache; see python_source.h.
#include "mapping/python_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

extern "C" const TSLanguage* tree_sitter_python(void);

namespace ttap {

namespace {

// UTF-8 sequence length from its lead byte (1 for invalid bytes, so nothing is skipped twice).
inline int Utf8Length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}

int CountErrors(TSNode node) {
  if (!ts_node_has_error(node)) return 0;
  int n = (ts_node_is_missing(node) || std::string_view(ts_node_type(node)) == "ERROR") ? 1 : 0;
  for (uint32_t i = 0; i < ts_node_child_count(node); ++i) n += CountErrors(ts_node_child(node, i));
  return n;
}

}  // namespace

void PythonSource::IndexLines() {
  line_starts_.clear();
  line_starts_.push_back(0);
  const uint32_t size = static_cast<uint32_t>(text_.size());
  const char* data = text_.data();
  for (uint32_t i = 0; i < size; ++i) {
    const char c = data[i];
    if (c == '\n') {
      line_starts_.push_back(i + 1);
    } else if (c == '\r') {
      if (i + 1 < size && data[i + 1] == '\n') ++i;
      line_starts_.push_back(i + 1);
    }
  }
}

std::shared_ptr<const PythonSource> PythonSource::Build(std::string text, TSTree* edited_old) {
  std::shared_ptr<PythonSource> s(new PythonSource());
  s->text_ = std::move(text);
  s->IndexLines();
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, tree_sitter_python());
  s->tree_ = ts_parser_parse_string(parser, edited_old, s->text_.data(),
                                    static_cast<uint32_t>(s->text_.size()));
  ts_parser_delete(parser);
  return s;
}

std::shared_ptr<const PythonSource> PythonSource::Parse(std::string text) {
  return Build(std::move(text), nullptr);
}

std::shared_ptr<const PythonSource> PythonSource::Reparse(const PythonSource& old, std::string text,
                                                          const std::vector<BufferEdit>& edits) {
  TSTree* edited = ts_tree_copy(old.tree_);
  for (const BufferEdit& e : edits) {
    TSInputEdit in{e.start, e.old_end, e.new_end, e.start_point, e.old_end_point, e.new_end_point};
    ts_tree_edit(edited, &in);
  }
  auto s = Build(std::move(text), edited);
  ts_tree_delete(edited);
  return s;
}

namespace {

// The (row, byte column) just past |text| when it starts at |from|; rows counted by '\n', as
// tree-sitter counts them.
TSPoint PointAfter(TSPoint from, std::string_view text) {
  const uint32_t rows = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n'));
  const size_t nl = text.rfind('\n');
  if (nl == std::string_view::npos)
    return {from.row, from.column + static_cast<uint32_t>(text.size())};
  return {from.row + rows, static_cast<uint32_t>(text.size() - nl - 1)};
}

}  // namespace

BufferEdit DescribeEdit(std::string_view old_text, uint32_t start, uint32_t end,
                        std::string_view new_text) {
  BufferEdit e;
  e.start = start;
  e.old_end = end;
  e.new_end = start + static_cast<uint32_t>(new_text.size());
  e.start_point = PointAfter({0, 0}, old_text.substr(0, start));
  // Both ends from the start, so only the replaced and the new bytes are scanned again.
  e.old_end_point = PointAfter(e.start_point, old_text.substr(start, end - start));
  e.new_end_point = PointAfter(e.start_point, new_text);
  return e;
}

PythonSource::~PythonSource() {
  if (tree_) ts_tree_delete(tree_);
}

TSNode PythonSource::root() const { return ts_tree_root_node(tree_); }
bool PythonSource::HasErrors() const { return ts_node_has_error(root()); }
int PythonSource::error_count() const { return CountErrors(root()); }

uint32_t PythonSource::LineStart(int line) const {
  if (line < 0) return 0;
  if (line >= line_count()) return static_cast<uint32_t>(text_.size());
  return line_starts_[line];
}

std::string_view PythonSource::LineText(int line) const {
  if (line < 0 || line >= line_count()) return {};
  uint32_t a = line_starts_[line];
  uint32_t b =
      line + 1 < line_count() ? line_starts_[line + 1] : static_cast<uint32_t>(text_.size());
  while (b > a && (text_[b - 1] == '\n' || text_[b - 1] == '\r')) --b;
  return std::string_view(text_).substr(a, b - a);
}

SourcePosition PythonSource::ToPosition(uint32_t byte, PositionEncoding enc) const {
  byte = std::min<uint32_t>(byte, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), byte);
  int line = static_cast<int>(it - line_starts_.begin()) - 1;
  uint32_t p = line_starts_[line];
  int units = 0;
  while (p < byte) {
    int len = Utf8Length(static_cast<unsigned char>(text_[p]));
    if (enc == PositionEncoding::kUtf8)
      units += len;
    else if (enc == PositionEncoding::kUtf16)
      units += len == 4 ? 2 : 1;
    else
      units += 1;
    p += len;
  }
  return {line, units};
}

namespace {

// The byte |character| units into the line text[p, end), clamped to the line's end.
uint32_t AdvanceUnits(std::string_view text, uint32_t p, uint32_t end, int character,
                      PositionEncoding enc) {
  int units = 0;
  while (p < end && units < character) {
    int len = Utf8Length(static_cast<unsigned char>(text[p]));
    int u = enc == PositionEncoding::kUtf8    ? len
            : enc == PositionEncoding::kUtf16 ? (len == 4 ? 2 : 1)
                                              : 1;
    if (units + u > character) break;  // inside a surrogate pair: stay before it
    units += u;
    p += len;
  }
  return p;
}

}  // namespace

uint32_t PythonSource::ToByte(SourcePosition pos, PositionEncoding enc) const {
  if (pos.line < 0) return 0;
  if (pos.line >= line_count()) return static_cast<uint32_t>(text_.size());
  uint32_t end = LineStart(pos.line) + static_cast<uint32_t>(LineText(pos.line).size());
  return AdvanceUnits(text_, line_starts_[pos.line], end, pos.character, enc);
}

uint32_t ByteOffsetInText(std::string_view text, SourcePosition pos, PositionEncoding enc) {
  if (pos.line < 0) return 0;
  uint32_t start = 0;
  const uint32_t size = static_cast<uint32_t>(text.size());
  for (int line = 0; line < pos.line; ++line) {
    while (start < size && text[start] != '\n' && text[start] != '\r') ++start;
    if (start >= size) return size;
    start += (text[start] == '\r' && start + 1 < size && text[start + 1] == '\n') ? 2 : 1;
  }
  uint32_t end = start;
  while (end < size && text[end] != '\n' && text[end] != '\r') ++end;
  return AdvanceUnits(text, start, end, pos.character, enc);
}

uint32_t LineStartFrom(std::string_view text, LineHint* hint, int line) {
  if (line < hint->line) *hint = LineHint{};
  const uint32_t size = static_cast<uint32_t>(text.size());
  uint32_t start = std::min(hint->start, size);
  int at = hint->line;
  while (at < line) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) break;  // past the last line: stays on it
    start = static_cast<uint32_t>(nl + 1);
    ++at;
  }
  *hint = LineHint{at, start};
  return start;
}

uint32_t ByteOffsetFrom(std::string_view text, LineHint* hint, SourcePosition pos,
                        PositionEncoding enc, TSPoint* point) {
  const int line = std::max(0, pos.line);
  const uint32_t start = LineStartFrom(text, hint, line);
  if (hint->line < line) {  // beyond the buffer: its end
    const uint32_t size = static_cast<uint32_t>(text.size());
    *point = {static_cast<uint32_t>(hint->line), size - start};
    return size;
  }
  const size_t nl = text.find('\n', start);
  uint32_t end =
      nl == std::string_view::npos ? static_cast<uint32_t>(text.size()) : static_cast<uint32_t>(nl);
  if (end > start && text[end - 1] == '\r') --end;
  const uint32_t b = AdvanceUnits(text, start, end, pos.character, enc);
  *point = {static_cast<uint32_t>(line), b - start};
  return b;
}

bool HasLoneCarriageReturn(std::string_view text) {
  for (size_t i = text.find('\r'); i != std::string_view::npos; i = text.find('\r', i + 1)) {
    if (i + 1 >= text.size() || text[i + 1] != '\n') return true;
  }
  return false;
}

BufferEdit DescribeEditAt(uint32_t start, uint32_t end, TSPoint start_point, TSPoint old_end_point,
                          std::string_view new_text) {
  BufferEdit e;
  e.start = start;
  e.old_end = end;
  e.new_end = start + static_cast<uint32_t>(new_text.size());
  e.start_point = start_point;
  e.old_end_point = old_end_point;
  e.new_end_point = PointAfter(start_point, new_text);
  return e;
}

std::string ApplyEdits(std::string_view text, std::vector<TextEdit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const TextEdit& a, const TextEdit& b) { return a.range.start > b.range.start; });
  std::string out(text);
  for (const TextEdit& e : edits) {
    out.replace(e.range.start, e.range.end - e.range.start, e.new_text);
  }
  return out;
}

std::shared_ptr<const PythonSource> SourceCache::GetFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return nullptr;
  std::string version = "disk:" + std::to_string(st.st_mtim.tv_sec) + "." +
                        std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_size);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(path);
    if (it != entries_.end() && it->second.version == version) return it->second.source;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::stringstream ss;
  ss << in.rdbuf();
  auto source = PythonSource::Parse(ss.str());
  std::lock_guard<std::mutex> lock(mu_);
  ++parses_;
  entries_[path] = {version, source};
  return source;
}

std::shared_ptr<const PythonSource> SourceCache::GetBuffer(const std::string& path, int64_t version,
                                                           std::string_view text) {
  std::string v = "buffer:" + std::to_string(version);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(path);
    if (it != entries_.end() && it->second.version == v) return it->second.source;
  }
  auto source = PythonSource::Parse(std::string(text));
  std::lock_guard<std::mutex> lock(mu_);
  ++parses_;
  entries_[path] = {v, source};
  return source;
}

void SourceCache::Forget(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(path);
}

}  // namespace ttap

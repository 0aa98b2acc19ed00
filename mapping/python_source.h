// PythonSource: one version of a Python file, parsed with tree-sitter (tree-sitter-python 0.23.6,
// grammar ABI 14, which Debian's libtree-sitter 0.20.7 loads), with the line index needed to
// turn byte offsets into LSP positions (0-based lines; UTF-16 code units by default, UTF-8 or
// code points when negotiated) and back. SourceCache keeps parse trees per file version.
// Immutable after Parse, so any thread may read it. Used by the range narrowing (source_ranges.h),
// the quick fixes (quick_fixes.h), scan and the language server.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ttap {

enum class PositionEncoding { kUtf16, kUtf8, kUtf32 };

struct SourcePosition {
  int line = 0;       // 0-based
  int character = 0;  // 0-based, in the chosen encoding's units
  bool operator==(const SourcePosition& o) const {
    return line == o.line && character == o.character;
  }
};

struct SourceRange {
  SourcePosition start;
  SourcePosition end;
};

struct ByteRange {
  uint32_t start = 0;
  uint32_t end = 0;
};

// A replacement of |range| (bytes of the original text) by |new_text|.
struct TextEdit {
  ByteRange range;
  std::string new_text;
};

// One edit of a buffer, as tree-sitter needs it to re-parse incrementally: bytes [start,
// old_end) of the old text became [start, new_end) of the new one; points are (row, byte column)
// with rows counted by '\n', as tree-sitter counts them.
struct BufferEdit {
  uint32_t start = 0, old_end = 0, new_end = 0;
  TSPoint start_point{0, 0}, old_end_point{0, 0}, new_end_point{0, 0};
};

// The edit that replaces bytes [start, end) of |old_text| by |new_text|.
BufferEdit DescribeEdit(std::string_view old_text, uint32_t start, uint32_t end,
                        std::string_view new_text);

class PythonSource {
 public:
  static std::shared_ptr<const PythonSource> Parse(std::string text);
  // |text| parsed reusing |old|'s tree: |edits|, applied in order, turn old.text() into |text|.
  // A keystroke in a 1 MB buffer re-parses in about a millisecond instead of a full parse.
  static std::shared_ptr<const PythonSource> Reparse(const PythonSource& old, std::string text,
                                                     const std::vector<BufferEdit>& edits);
  ~PythonSource();
  PythonSource(const PythonSource&) = delete;
  PythonSource& operator=(const PythonSource&) = delete;

  const std::string& text() const { return text_; }
  TSNode root() const;
  // True when the tree has ERROR or MISSING nodes.
  bool HasErrors() const;
  int error_count() const;  // number of ERROR/MISSING nodes

  int line_count() const { return static_cast<int>(line_starts_.size()); }
  uint32_t LineStart(int line) const;         // byte offset; text().size() past the end
  std::string_view LineText(int line) const;  // without the line break

  SourcePosition ToPosition(uint32_t byte, PositionEncoding enc) const;
  uint32_t ToByte(SourcePosition pos, PositionEncoding enc) const;
  SourceRange ToRange(ByteRange r, PositionEncoding enc) const {
    return {ToPosition(r.start, enc), ToPosition(r.end, enc)};
  }
  std::string_view Slice(ByteRange r) const {
    return std::string_view(text_).substr(r.start, r.end - r.start);
  }
  std::string_view NodeText(TSNode n) const {
    return Slice({ts_node_start_byte(n), ts_node_end_byte(n)});
  }
  static ByteRange NodeRange(TSNode n) { return {ts_node_start_byte(n), ts_node_end_byte(n)}; }

 private:
  PythonSource() = default;
  // |text| indexed and parsed, reusing |edited_old| (an edited copy of a previous tree) or not.
  static std::shared_ptr<const PythonSource> Build(std::string text, TSTree* edited_old);
  void IndexLines();
  std::string text_;
  TSTree* tree_ = nullptr;
  std::vector<uint32_t> line_starts_;
};

// PythonSource::ToByte on plain text, without parsing it (the language server applies
// incremental edits with it).
uint32_t ByteOffsetInText(std::string_view text, SourcePosition pos, PositionEncoding enc);

// A position in a buffer being edited, found from a line whose start is known (|hint|: the
// previous edit's line): a keystroke costs the lines between, not the buffer. Lines end at '\n'
// as tree-sitter counts rows; callers keep buffers with a lone '\r' on ByteOffsetInText.
struct LineHint {
  int line = 0;
  uint32_t start = 0;  // byte offset where |line| starts
};
// Moves |hint| to |line| (forwards from it, else from the start) and returns that line's start.
uint32_t LineStartFrom(std::string_view text, LineHint* hint, int line);
// The byte offset of |pos| and, in |point|, tree-sitter's (row, byte column) of it.
uint32_t ByteOffsetFrom(std::string_view text, LineHint* hint, SourcePosition pos,
                        PositionEncoding enc, TSPoint* point);
// Whether |text| has a '\r' not followed by '\n' (a line break LSP counts and tree-sitter
// does not).
bool HasLoneCarriageReturn(std::string_view text);
// The edit that replaces bytes [start, end) (at |start_point| and |old_end_point|) by
// |new_text|: DescribeEdit without scanning the text before it.
BufferEdit DescribeEditAt(uint32_t start, uint32_t end, TSPoint start_point, TSPoint old_end_point,
                          std::string_view new_text);

// Applies non-overlapping edits (any order) to |text|.
std::string ApplyEdits(std::string_view text, std::vector<TextEdit> edits);

// Caches parsed sources by path and version (an LSP document version, or the file's mtime and
// size for files on disk). Thread-safe.
class SourceCache {
 public:
  // The file as on disk; nullptr when it cannot be read.
  std::shared_ptr<const PythonSource> GetFile(const std::string& path);
  // An editor's buffer at |version|.
  std::shared_ptr<const PythonSource> GetBuffer(const std::string& path, int64_t version,
                                                std::string_view text);
  void Forget(const std::string& path);
  size_t parses() const { return parses_; }  // visible for testing: parses actually done

 private:
  struct Entry {
    std::string version;
    std::shared_ptr<const PythonSource> source;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  size_t parses_ = 0;
};

}  // namespace ttap

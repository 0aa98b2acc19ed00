// JsonSplitter: a resumable, non-recursive scanner over the top level of a trace document
// ({"traceEvents": [...], ...} or a bare [...] array). It finds the byte range of every element of
// the event array and of selected top-level values, chunk by chunk, so the loader can hand whole
// events to simdjson without ever holding the document (simdjson 3.0.1 has no comma-separated
// document stream). Nesting depth is a counter, so 200,000 nested brackets cost nothing.
// Used by the loader's reader thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ttap {

class JsonSplitter {
 public:
  struct Range {
    size_t begin;  // offsets into the buffer passed to Scan
    size_t end;
  };
  struct TopLevelValue {
    std::string key;
    Range range;
  };
  enum class Result { kNeedMore, kDone, kError };

  // Top-level keys whose values are reported by Scan (others are skipped without buffering).
  explicit JsonSplitter(std::vector<std::string> captured_keys);

  // Scans buf[0, len) from where the last call stopped. |buf| must start with the bytes kept from
  // the previous call (see KeepFrom/Rebase). |at_eof|: no more bytes will come.
  Result Scan(const char* buf, size_t len, bool at_eof, std::vector<Range>* elements,
              std::vector<TopLevelValue>* values);

  // Earliest byte offset the next Scan still needs (start of an unfinished element or value).
  size_t KeepFrom() const;
  // The caller dropped the first |shift| bytes of the buffer.
  void Rebase(size_t shift);

  bool bare_array() const { return bare_array_; }
  bool saw_trace_events() const { return saw_trace_events_; }
  // A bare array that ended without its ']' (accepted, as the Chrome trace format allows).
  bool unterminated_array() const { return unterminated_array_; }
  const std::string& error() const { return error_; }
  // Absolute position (bytes since the start of the document) of buffer offset 0.
  uint64_t base() const { return base_; }

 private:
  enum class State {
    kStart,
    kObjKeyOrEnd,
    kObjKey,
    kInKey,
    kColon,
    kValueStart,
    kInValue,
    kObjAfterValue,
    kArrElemOrEnd,
    kArrElem,
    kInElem,
    kArrAfterElem,
    kDone,
  };
  // Advances a generic JSON value scan; returns true when the value ended (at *pos).
  bool ScanValue(const char* buf, size_t len, size_t* pos, bool at_eof);
  void StartValue(char first, size_t at);
  Result Fail(std::string what, size_t at);

  std::vector<std::string> captured_keys_;
  State state_ = State::kStart;
  size_t pos_ = 0;
  uint64_t base_ = 0;
  std::string key_;
  bool key_escape_ = false;
  bool in_trace_events_ = false;
  bool capture_value_ = false;
  bool bare_array_ = false;
  bool saw_trace_events_ = false;
  bool unterminated_array_ = false;
  // Generic value scan state.
  size_t value_begin_ = 0;
  int64_t depth_ = 0;
  bool in_string_ = false;
  bool escape_pending_ = false;
  bool scalar_ = false;
  std::string error_;
};

}  // namespace ttap

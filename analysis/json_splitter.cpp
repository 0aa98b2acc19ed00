// JsonSplitter implementation; see json_splitter.h. The inner loops skip to the next interesting
// byte 16 at a time with SSE2.
#include "analysis/json_splitter.h"

#include <emmintrin.h>

#include <algorithm>

namespace ttap {

namespace {

inline bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline size_t FindQuoteOrBackslash(const char* b, size_t p, size_t len) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i bslash = _mm_set1_epi8('\\');
  while (p + 16 <= len) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + p));
    int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
    if (mask) return p + __builtin_ctz(mask);
    p += 16;
  }
  while (p < len && b[p] != '"' && b[p] != '\\') ++p;
  return p;
}

inline bool IsStructural(char c) {
  return c == '"' || c == '{' || c == '}' || c == '[' || c == ']';
}

inline size_t FindStructural(const char* b, size_t p, size_t len) {
  const __m128i q = _mm_set1_epi8('"');
  const __m128i ob = _mm_set1_epi8('{');
  const __m128i cb = _mm_set1_epi8('}');
  const __m128i os = _mm_set1_epi8('[');
  const __m128i cs = _mm_set1_epi8(']');
  while (p + 16 <= len) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + p));
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, ob)),
                             _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, cb), _mm_cmpeq_epi8(v, os)),
                                          _mm_cmpeq_epi8(v, cs)));
    int mask = _mm_movemask_epi8(m);
    if (mask) return p + __builtin_ctz(mask);
    p += 16;
  }
  while (p < len && !IsStructural(b[p])) ++p;
  return p;
}

}  // namespace

JsonSplitter::JsonSplitter(std::vector<std::string> captured_keys)
    : captured_keys_(std::move(captured_keys)) {}

size_t JsonSplitter::KeepFrom() const {
  if (state_ == State::kInElem || (state_ == State::kInValue && capture_value_)) {
    return value_begin_;
  }
  return pos_;
}

void JsonSplitter::Rebase(size_t shift) {
  pos_ -= shift;
  if (value_begin_ >= shift) value_begin_ -= shift;
  base_ += shift;
}

JsonSplitter::Result JsonSplitter::Fail(std::string what, size_t at) {
  error_ = what + " at byte " + std::to_string(base_ + at);
  state_ = State::kDone;
  return Result::kError;
}

void JsonSplitter::StartValue(char first, size_t at) {
  value_begin_ = at;
  depth_ = 0;
  in_string_ = false;
  escape_pending_ = false;
  scalar_ = false;
  if (first == '{' || first == '[') {
    depth_ = 1;
  } else if (first == '"') {
    in_string_ = true;
  } else {
    scalar_ = true;
  }
}

bool JsonSplitter::ScanValue(const char* buf, size_t len, size_t* pos, bool at_eof) {
  size_t p = *pos;
  if (scalar_) {
    while (p < len) {
      char c = buf[p];
      if (c == ',' || c == ']' || c == '}' || IsSpace(c)) {
        *pos = p;
        return true;
      }
      ++p;
    }
    *pos = p;
    return at_eof;  // a scalar may end with the input
  }
  if (escape_pending_) {
    if (p >= len) return false;
    ++p;
    escape_pending_ = false;
  }
  while (p < len) {
    if (in_string_) {
      p = FindQuoteOrBackslash(buf, p, len);
      if (p >= len) break;
      if (buf[p] == '\\') {
        if (p + 1 >= len) {
          escape_pending_ = true;
          p = len;
          break;
        }
        p += 2;
        continue;
      }
      in_string_ = false;
      ++p;
      if (depth_ == 0) {
        *pos = p;
        return true;
      }
      continue;
    }
    p = FindStructural(buf, p, len);
    if (p >= len) break;
    char c = buf[p++];
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else {
      if (--depth_ == 0) {
        *pos = p;
        return true;
      }
    }
  }
  *pos = p;
  return false;
}

JsonSplitter::Result JsonSplitter::Scan(const char* buf, size_t len, bool at_eof,
                                        std::vector<Range>* elements,
                                        std::vector<TopLevelValue>* values) {
  size_t p = pos_;
  while (true) {
    switch (state_) {
      case State::kStart: {
        while (p < len && IsSpace(buf[p])) ++p;
        // UTF-8 byte order mark.
        if (base_ + p == 0 && len >= 3 && static_cast<unsigned char>(buf[0]) == 0xEF &&
            static_cast<unsigned char>(buf[1]) == 0xBB && static_cast<unsigned char>(buf[2]) == 0xBF) {
          p = 3;
          continue;
        }
        if (p >= len) goto need_more;
        if (buf[p] == '{') {
          state_ = State::kObjKeyOrEnd;
        } else if (buf[p] == '[') {
          bare_array_ = true;
          in_trace_events_ = true;
          saw_trace_events_ = true;
          state_ = State::kArrElemOrEnd;
        } else {
          return Fail("not a JSON trace: expected '{' or '['", p);
        }
        ++p;
        break;
      }
      case State::kObjKeyOrEnd:
      case State::kObjKey: {
        while (p < len && IsSpace(buf[p])) ++p;
        if (p >= len) goto need_more;
        if (buf[p] == '}' && state_ == State::kObjKeyOrEnd) {
          ++p;
          state_ = State::kDone;
          break;
        }
        if (buf[p] != '"') return Fail("expected a key in the top-level object", p);
        ++p;
        key_.clear();
        key_escape_ = false;
        state_ = State::kInKey;
        break;
      }
      case State::kInKey: {
        while (p < len) {
          char c = buf[p++];
          if (key_escape_) {
            key_escape_ = false;
            key_.push_back(c);
          } else if (c == '\\') {
            key_escape_ = true;
          } else if (c == '"') {
            state_ = State::kColon;
            break;
          } else {
            if (key_.size() > 4096) return Fail("top-level key too long", p);
            key_.push_back(c);
          }
        }
        if (state_ == State::kInKey) goto need_more;
        break;
      }
      case State::kColon: {
        while (p < len && IsSpace(buf[p])) ++p;
        if (p >= len) goto need_more;
        if (buf[p] != ':') return Fail("expected ':' after key \"" + key_ + "\"", p);
        ++p;
        state_ = State::kValueStart;
        break;
      }
      case State::kValueStart: {
        while (p < len && IsSpace(buf[p])) ++p;
        if (p >= len) goto need_more;
        if (key_ == "traceEvents") {
          if (buf[p] != '[') return Fail("\"traceEvents\" is not an array", p);
          saw_trace_events_ = true;
          in_trace_events_ = true;
          ++p;
          state_ = State::kArrElemOrEnd;
          break;
        }
        capture_value_ =
            std::find(captured_keys_.begin(), captured_keys_.end(), key_) != captured_keys_.end();
        StartValue(buf[p], p);
        ++p;
        state_ = State::kInValue;
        break;
      }
      case State::kInValue: {
        if (!ScanValue(buf, len, &p, at_eof)) goto need_more;
        if (capture_value_) values->push_back({key_, {value_begin_, p}});
        state_ = State::kObjAfterValue;
        break;
      }
      case State::kObjAfterValue: {
        while (p < len && IsSpace(buf[p])) ++p;
        if (p >= len) goto need_more;
        if (buf[p] == ',') {
          state_ = State::kObjKey;
        } else if (buf[p] == '}') {
          state_ = State::kDone;
        } else {
          return Fail("expected ',' or '}' in the top-level object", p);
        }
        ++p;
        break;
      }
      case State::kArrElemOrEnd:
      case State::kArrElem: {
        while (p < len && IsSpace(buf[p])) ++p;
        if (p >= len) goto need_more;
        if (buf[p] == ']' && state_ == State::kArrElemOrEnd) {
          ++p;
          in_trace_events_ = false;
          state_ = bare_array_ ? State::kDone : State::kObjAfterValue;
          break;
        }
        if (buf[p] == ',' || buf[p] == ']' || buf[p] == '}') {
          return Fail("expected an event in \"traceEvents\"", p);
        }
        StartValue(buf[p], p);
        ++p;
        state_ = State::kInElem;
        break;
      }
      case State::kInElem: {
        if (!ScanValue(buf, len, &p, at_eof)) goto need_more;
        elements->push_back({value_begin_, p});
        state_ = State::kArrAfterElem;
        break;
      }
      case State::kArrAfterElem: {
        while (p < len && IsSpace(buf[p])) ++p;
        if (p >= len) goto need_more;
        if (buf[p] == ',') {
          state_ = State::kArrElem;
        } else if (buf[p] == ']') {
          in_trace_events_ = false;
          state_ = bare_array_ ? State::kDone : State::kObjAfterValue;
        } else {
          return Fail("expected ',' or ']' after an event", p);
        }
        ++p;
        break;
      }
      case State::kDone: {
        while (p < len && IsSpace(buf[p])) ++p;
        pos_ = p;
        if (!error_.empty()) return Result::kError;
        if (p < len) return Fail("unexpected data after the end of the trace", p);
        return Result::kDone;
      }
    }
  }
need_more:
  pos_ = p;
  if (at_eof) {
    // Legacy traces written by a crashed profiler may lack the closing ']' of a bare array;
    // anything else that ends early is a truncated file.
    std::string where = state_ == State::kInElem || state_ == State::kArrElem ||
                                state_ == State::kArrElemOrEnd || state_ == State::kArrAfterElem
                            ? " inside \"traceEvents\""
                            : "";
    if (state_ == State::kStart) {
      error_ = "empty file (no JSON value)";
      return Result::kError;
    }
    return Fail("unexpected end of data" + where + " (truncated or still being written?)", p);
  }
  return Result::kNeedMore;
}

}  // namespace ttap

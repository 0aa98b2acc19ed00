// JsonSplitter implementation; see json_splitter.h. The inner loops skip to the next interesting
// byte 16 at a time with SSE2.
#include "analysis/load/json_splitter.h"

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

namespace {

// Bit i set where byte i of the 64 at |p| equals |c|.
inline uint64_t EqMask(const char* p, char c) {
  const __m128i v = _mm_set1_epi8(c);
  uint64_t m = 0;
  for (int k = 0; k < 4; ++k) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    m |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, v))))
         << (16 * k);
  }
  return m;
}

inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

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
  if (depth_ == 0) {
    // A string value at the top of the element.
    if (escape_pending_) {
      if (p >= len) return false;
      ++p;
      escape_pending_ = false;
    }
    while (p < len) {
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
      *pos = p + 1;
      return true;
    }
    *pos = p;
    return false;
  }
  // An object or array: classify 64 bytes at a time with bit masks (quotes not escaped by a
  // backslash, inside-string bits by prefix XOR) and visit only the brackets outside strings.
  // Reading up to 63 bytes past |len| is safe: the loader's buffers carry padding.
  uint64_t in_string = in_string_ ? ~uint64_t{0} : 0;
  bool escape_carry = escape_pending_;
  while (p < len) {
    const size_t n = std::min<size_t>(64, len - p);
    const uint64_t valid = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    const char* b = buf + p;
    uint64_t backslash = EqMask(b, '\\') & valid;
    uint64_t escaped = escape_carry ? 1 : 0;
    escape_carry = false;
    while (backslash) {
      int i = __builtin_ctzll(backslash);
      backslash &= backslash - 1;
      if ((escaped >> i) & 1) continue;  // an escaped backslash escapes nothing
      if (static_cast<size_t>(i) + 1 >= n) {
        escape_carry = true;
      } else {
        escaped |= uint64_t{1} << (i + 1);
      }
    }
    uint64_t quotes = EqMask(b, '"') & valid & ~escaped;
    uint64_t inside = PrefixXor(quotes) ^ in_string;
    uint64_t opens = (EqMask(b, '{') | EqMask(b, '[')) & valid & ~inside;
    uint64_t closes = (EqMask(b, '}') | EqMask(b, ']')) & valid & ~inside;
    uint64_t brackets = opens | closes;
    while (brackets) {
      int i = __builtin_ctzll(brackets);
      brackets &= brackets - 1;
      if ((opens >> i) & 1) {
        ++depth_;
      } else if (--depth_ == 0) {
        in_string_ = false;
        escape_pending_ = false;
        *pos = p + static_cast<size_t>(i) + 1;
        return true;
      }
    }
    in_string = ((inside >> (n - 1)) & 1) ? ~uint64_t{0} : 0;
    p += n;
  }
  in_string_ = in_string != 0;
  escape_pending_ = escape_carry;
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
            static_cast<unsigned char>(buf[1]) == 0xBB &&
            static_cast<unsigned char>(buf[2]) == 0xBF) {
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
    // The Chrome trace format lets a bare array omit its closing ']' (a profiler that stopped
    // after a complete event); anything else that ends early is a truncated file.
    if (bare_array_ && (state_ == State::kArrAfterElem || state_ == State::kArrElem ||
                        state_ == State::kArrElemOrEnd)) {
      state_ = State::kDone;
      unterminated_array_ = true;
      return Result::kDone;
    }
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

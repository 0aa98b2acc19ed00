// Decimal microsecond text -> int64 nanoseconds, exactly. Kineto writes ts such as
// 1712195495519689.047, which a double cannot hold to the nanosecond; parsing the text keeps it.
// Used by the event parser; header-only so tests can reach it directly.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace ttap {

enum class TimeParse { kOk, kNotANumber, kOutOfRange };

// Parses a JSON number (or a quoted one) in microseconds into nanoseconds, rounding half away
// from zero below the nanosecond. |fractional| reports whether the text had a fractional part.
inline TimeParse ParseMicrosToNanos(std::string_view text, int64_t* ns, bool* fractional) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = text.substr(1, text.size() - 2);
  }
  size_t i = 0, n = text.size();
  bool neg = false;
  if (i < n && (text[i] == '-' || text[i] == '+')) {
    neg = text[i] == '-';
    ++i;
  }
  if (i >= n || !(text[i] >= '0' && text[i] <= '9')) return TimeParse::kNotANumber;
  // Integer part.
  int64_t whole = 0;
  for (; i < n && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (whole > (INT64_MAX / 1000 - 9) / 10) return TimeParse::kOutOfRange;
    whole = whole * 10 + (text[i] - '0');
  }
  int64_t frac = 0;
  int digits = 0;
  bool round_up = false;
  *fractional = false;
  if (i < n && text[i] == '.') {
    ++i;
    if (i >= n || !(text[i] >= '0' && text[i] <= '9')) return TimeParse::kNotANumber;
    for (; i < n && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (text[i] != '0') *fractional = true;
      if (digits < 3) {
        frac = frac * 10 + (text[i] - '0');
        ++digits;
      } else if (digits == 3) {
        round_up = text[i] >= '5';
        ++digits;
      }
    }
    while (digits < 3) {
      frac *= 10;
      ++digits;
    }
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    // Rare: fall back to long double and check the range.
    long double v = std::strtold(std::string(text).c_str(), nullptr);
    if (!std::isfinite(static_cast<double>(v)) || std::fabs(static_cast<double>(v)) > 9.0e15) {
      return TimeParse::kOutOfRange;
    }
    *ns = static_cast<int64_t>(std::llround(static_cast<double>(v * 1000.0L)));
    *fractional = *ns % 1000 != 0;
    return TimeParse::kOk;
  }
  if (i != n) return TimeParse::kNotANumber;
  int64_t value = whole * 1000 + frac + (round_up ? 1 : 0);
  *ns = neg ? -value : value;
  return TimeParse::kOk;
}

}  // namespace ttap

// Unit tests of ParseMicrosToNanos: exact decimal microseconds -> nanoseconds, rounding, errors.
#include "analysis/load/timestamp.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

namespace ttap {
namespace {

struct Parsed {
  TimeParse result;
  int64_t ns;
  bool fractional;
};

Parsed Parse(const std::string& text) {
  Parsed p{TimeParse::kOk, -777, true};
  p.result = ParseMicrosToNanos(text, &p.ns, &p.fractional);
  return p;
}

TEST_CASE("ParseMicrosToNanos keeps fractional microseconds beyond double precision",
          "[timestamp]") {
  auto p = Parse("1712195495519689.047");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == INT64_C(1712195495519689047));
  CHECK(p.fractional);
  // A double would not round-trip this value.
  CHECK(static_cast<int64_t>(1712195495519689.047 * 1000.0) != INT64_C(1712195495519689047));

  auto q = Parse("1712195495519689.001");
  REQUIRE(q.result == TimeParse::kOk);
  CHECK(q.ns == INT64_C(1712195495519689001));
}

TEST_CASE("ParseMicrosToNanos parses integers", "[timestamp]") {
  auto p = Parse("0");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == 0);
  CHECK_FALSE(p.fractional);

  p = Parse("1606910596297023");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == INT64_C(1606910596297023000));
  CHECK_FALSE(p.fractional);

  p = Parse("+42");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == 42000);

  // Trailing zeros after the point are not a fractional part.
  p = Parse("12.000");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == 12000);
  CHECK_FALSE(p.fractional);
}

TEST_CASE("ParseMicrosToNanos parses negative values", "[timestamp]") {
  auto p = Parse("-5");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == -5000);
  p = Parse("-0.25");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == -250);
  CHECK(p.fractional);
}

TEST_CASE("ParseMicrosToNanos parses exponents", "[timestamp]") {
  auto p = Parse("1.5e3");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == 1500000);
  CHECK_FALSE(p.fractional);

  p = Parse("1.25E-1");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == 125);
  CHECK(p.fractional);

  p = Parse("1e0");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == 1000);
}

TEST_CASE("ParseMicrosToNanos rejects out-of-range values", "[timestamp]") {
  CHECK(Parse("1e400").result == TimeParse::kOutOfRange);
  CHECK(Parse("-1e400").result == TimeParse::kOutOfRange);
  CHECK(Parse("1e16").result == TimeParse::kOutOfRange);
  CHECK(Parse("99999999999999999999999").result == TimeParse::kOutOfRange);
  // The largest whole-microsecond count that still fits in int64 nanoseconds is accepted.
  auto p = Parse("9000000000000000");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == INT64_C(9000000000000000000));
}

TEST_CASE("ParseMicrosToNanos rejects text that is not a number", "[timestamp]") {
  CHECK(Parse("abc").result == TimeParse::kNotANumber);
  CHECK(Parse("").result == TimeParse::kNotANumber);
  CHECK(Parse("-").result == TimeParse::kNotANumber);
  CHECK(Parse("12abc").result == TimeParse::kNotANumber);
  CHECK(Parse("1.").result == TimeParse::kNotANumber);
  CHECK(Parse(".5").result == TimeParse::kNotANumber);
  CHECK(Parse("null").result == TimeParse::kNotANumber);
  CHECK(Parse("true").result == TimeParse::kNotANumber);
  CHECK(Parse("\"\"").result == TimeParse::kNotANumber);
}

TEST_CASE("ParseMicrosToNanos accepts quoted numbers", "[timestamp]") {
  auto p = Parse("\"12.5\"");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == 12500);
  CHECK(p.fractional);

  p = Parse("\"1712195495519689.047\"");
  REQUIRE(p.result == TimeParse::kOk);
  CHECK(p.ns == INT64_C(1712195495519689047));

  CHECK(Parse("\"abc\"").result == TimeParse::kNotANumber);
}

TEST_CASE("ParseMicrosToNanos rounds the fourth fractional digit half away from zero",
          "[timestamp]") {
  CHECK(Parse("1.0004").ns == 1000);
  CHECK(Parse("1.0005").ns == 1001);
  CHECK(Parse("1.0009").ns == 1001);
  CHECK(Parse("1.00049999").ns == 1000);
  CHECK(Parse("1.2345678").ns == 1235);
  CHECK(Parse("0.9995").ns == 1000);
  CHECK(Parse("-1.0005").ns == -1001);
  CHECK(Parse("-1.0004").ns == -1000);
  // Only sub-nanosecond digits: still a fractional value.
  auto p = Parse("5.0001");
  CHECK(p.ns == 5000);
  CHECK(p.fractional);
}

}  // namespace
}  // namespace ttap

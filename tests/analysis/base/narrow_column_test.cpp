// NarrowInt64Column (analysis/base/narrow_column.h): every value reads back exactly, small or
// beyond int32, through Set, push_back, resize and assign; a column whose wide values are not
// rare turns into 8-byte storage and still reads back exactly.
#include "analysis/base/narrow_column.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <vector>

using ttap::NarrowInt64Column;

TEST_CASE("narrow column: small and wide values read back exactly", "[base][narrow_column]") {
  const int64_t big = int64_t{3} << 40, min32 = std::numeric_limits<int32_t>::min();
  const std::vector<int64_t> values{0,         -1,        7,   std::numeric_limits<int32_t>::max(),
                                    min32,     min32 + 1, big, -big,
                                    INT64_MIN, INT64_MAX};
  NarrowInt64Column c;
  for (int64_t v : values) c.push_back(v);
  REQUIRE(c.size() == values.size());
  CHECK_FALSE(c.wide());
  for (size_t i = 0; i < values.size(); ++i) CHECK(c[i] == values[i]);
  // Overwriting a wide value with a small one and back.
  c.Set(6, 5);
  CHECK(c[6] == 5);
  c.Set(0, big + 1);
  CHECK(c[0] == big + 1);
  c.resize(3);  // drops the values beyond, wide ones included
  c.resize(5);
  CHECK(c[0] == big + 1);
  CHECK(c[3] == 0);
  CHECK(c[4] == 0);
  c.assign(4, -big);
  for (size_t i = 0; i < 4; ++i) CHECK(c[i] == -big);
  c.Release();
  CHECK(c.empty());
}

TEST_CASE("narrow column: many wide values turn it into plain 8-byte storage",
          "[base][narrow_column]") {
  // Correlation ids all beyond int32 (an exporter that numbers from 2^32): a map entry each
  // would cost several times the 8 bytes of a plain column.
  NarrowInt64Column c;
  const int64_t base = int64_t{1} << 32;
  for (int64_t i = 0; i < 200000; ++i) c.push_back(i % 2 ? base + i : i);
  CHECK(c.wide());
  int wrong = 0;
  for (int64_t i = 0; i < 200000; ++i) wrong += c[i] != (i % 2 ? base + i : i);
  CHECK(wrong == 0);
  c.Set(1, 3);
  CHECK(c[1] == 3);
  NarrowInt64Column few;
  for (int64_t i = 0; i < 200000; ++i) few.push_back(i % 1000 ? i : base + i);
  CHECK_FALSE(few.wide());  // 200 wide values in 200,000: kept aside
  for (int64_t i = 0; i < 200000; ++i) wrong += few[i] != (i % 1000 ? i : base + i);
  CHECK(wrong == 0);
}

TEST_CASE("narrow column: a pass that writes every value once, read through a view",
          "[base][narrow_column]") {
  // The replay's pattern: a view taken before the pass reads what SetOnce writes, wide values
  // included; values left aside by the previous pass do not survive it; EndPass widens a
  // column whose wide values were not rare.
  NarrowInt64Column c;
  c.resize(100000);
  const int64_t big = int64_t{5} << 32;
  for (int pass = 0; pass < 2; ++pass) {
    c.BeginPass();
    const NarrowInt64Column::View view = c.view();
    int wrong = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      const int64_t v = pass == 0 ? (i % 10 ? int64_t(i) : big + int64_t(i)) : -int64_t(i);
      c.SetOnce(i, v);
      wrong += view[i] != v;
    }
    c.EndPass();
    CHECK(wrong == 0);
    CHECK(c.wide());  // one value in ten beyond int32: wide from the first pass on
  }
  int wrong = 0;
  for (size_t i = 0; i < c.size(); ++i) wrong += c[i] != -int64_t(i);
  CHECK(wrong == 0);
}

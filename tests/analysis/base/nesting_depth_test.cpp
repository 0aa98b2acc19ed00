// Nesting depth of every JSON and TOML input (issue 33): the guard (analysis/base/nesting_depth.h)
// against random mixes of brackets, strings and comments, and the trace loader, which parses
// with simdjson (its own depth limit), on traces nested far too deep. A fuzz test: random
// depths and shapes from fixed seeds; nothing may crash, deep input is refused.
#include "analysis/base/nesting_depth.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "analysis/load/trace_loader.h"

using ttap::kMaxJsonNesting;
using ttap::kMaxTomlNesting;
using ttap::NestingExceeds;
using ttap::TextSyntax;

namespace {

// Random nesting of |depth| levels of [ / {, with strings holding brackets between levels.
std::string RandomNest(std::mt19937_64* rng, int depth, bool toml) {
  std::string open, close;
  std::uniform_int_distribution<int> pick(0, 5);
  for (int i = 0; i < depth; ++i) {
    const int k = pick(*rng);
    const bool brace = k % 2 == 0;
    open += brace ? "{\"k\": " : "[";
    if (k == 3) open += "\"]][[{\\\"\", ";   // brackets and an escaped quote inside a string
    if (toml && k == 5) open += "'[[[{', ";  // a TOML literal string
    close.insert(close.begin(), brace ? '}' : ']');
  }
  return open + "1" + close;
}

}  // namespace

TEST_CASE("nesting guard: depth is counted outside strings and comments", "[nesting]") {
  CHECK_FALSE(NestingExceeds("[[[]]]", 3, TextSyntax::kJson));
  CHECK(NestingExceeds("[[[[]]]]", 3, TextSyntax::kJson));
  CHECK_FALSE(NestingExceeds("[\"[[[[\"]", 3, TextSyntax::kJson));
  CHECK_FALSE(NestingExceeds("[\"\\\"[[[[\"]", 3, TextSyntax::kJson));  // escaped quote
  CHECK_FALSE(NestingExceeds("a = 1 # [[[[[[\nb = [1]", 3, TextSyntax::kToml));
  CHECK_FALSE(NestingExceeds("a = '''[[[[\n[[[[''' \nb = [1]", 3, TextSyntax::kToml));
  CHECK_FALSE(NestingExceeds("a = \"\"\"[[\\\"\"\"[[\"\"\"", 1, TextSyntax::kToml));
  CHECK(NestingExceeds("a = [[[[1]]]]", 3, TextSyntax::kToml));
  // Unbalanced closers never go below zero; an unterminated string ends the scan.
  CHECK_FALSE(NestingExceeds("]]]]][[[", 3, TextSyntax::kJson));
  CHECK_FALSE(NestingExceeds("[\"[[[[[[", 3, TextSyntax::kJson));
}

TEST_CASE("nesting guard: random shapes at random depths (fuzz)", "[nesting][fuzz]") {
  std::mt19937_64 rng(33);
  std::uniform_int_distribution<int> depth(1, 3000);
  for (int round = 0; round < 300; ++round) {
    const bool toml = round % 2 == 1;
    const int d = depth(rng);
    const int limit = toml ? kMaxTomlNesting : kMaxJsonNesting;
    const std::string text = RandomNest(&rng, d, toml);
    INFO("round " << round << " depth " << d);
    CHECK(NestingExceeds(text, limit, toml ? TextSyntax::kToml : TextSyntax::kJson) == (d > limit));
  }
}

TEST_CASE("nesting: traces nested far too deep are refused by the loader, not a crash",
          "[nesting][loader]") {
  std::mt19937_64 rng(7);
  for (int d : {600, 5000, 200000}) {
    const std::string args = std::string(d, '[') + std::string(d, ']');
    const std::string trace =
        "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 1, \"dur\": 2, \"args\": {\"x\": " +
        args + "}}]}";
    auto t = ttap::LoadTraceFromMemory(trace, "deep.json", {});
    INFO("depth " << d);
    // Either refused, or loaded with the event counted as skipped: never a crash.
    if (t.ok()) CHECK(t.value()->events.size() <= 1);
  }
  const std::string whole = RandomNest(&rng, 100000, false);
  auto t = ttap::LoadTraceFromMemory(whole, "deep2.json", {});
  if (t.ok()) CHECK(t.value()->events.size() == 0);
}

// Unit tests of JsonSplitter: element and top-level value ranges, chunk-split invariance, errors.
#include "analysis/load/json_splitter.h"

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ttap {
namespace {

struct SplitResult {
  JsonSplitter::Result result = JsonSplitter::Result::kNeedMore;
  std::vector<std::string> elements;
  std::vector<std::pair<std::string, std::string>> values;
  std::string error;
  bool bare_array = false;
  bool saw_trace_events = false;
};

// Feeds |input| in chunks whose sizes are given by |cuts| (offsets where a chunk ends), then one
// last Scan with at_eof, keeping and rebasing the buffer exactly like trace_loader.cpp does.
SplitResult SplitAt(const std::string& input, const std::vector<size_t>& cuts,
                    std::vector<std::string> keys = {"deviceProperties"}) {
  JsonSplitter splitter(std::move(keys));
  SplitResult out;
  std::string buf;
  size_t fed = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(input.size());
  auto scan = [&](bool at_eof) {
    std::vector<JsonSplitter::Range> ranges;
    std::vector<JsonSplitter::TopLevelValue> values;
    out.result = splitter.Scan(buf.data(), buf.size(), at_eof, &ranges, &values);
    for (const auto& r : ranges) {
      REQUIRE(r.begin <= r.end);
      REQUIRE(r.end <= buf.size());
      out.elements.push_back(buf.substr(r.begin, r.end - r.begin));
    }
    for (const auto& v : values) {
      out.values.emplace_back(v.key, buf.substr(v.range.begin, v.range.end - v.range.begin));
    }
    size_t keep = splitter.KeepFrom();
    REQUIRE(keep <= buf.size());
    buf.erase(0, keep);
    splitter.Rebase(keep);
  };
  for (size_t end : ends) {
    if (end < fed) continue;
    buf.append(input, fed, end - fed);
    fed = end;
    scan(false);
    if (out.result != JsonSplitter::Result::kNeedMore) break;
  }
  if (out.result == JsonSplitter::Result::kNeedMore) scan(true);
  out.error = splitter.error();
  out.bare_array = splitter.bare_array();
  out.saw_trace_events = splitter.saw_trace_events();
  return out;
}

SplitResult SplitWhole(const std::string& input) { return SplitAt(input, {}); }

SplitResult SplitBytewise(const std::string& input) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
  return SplitAt(input, cuts);
}

const std::string kTricky = R"({"schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "A ]} [{ \" \\"}],
  "traceEvents": [
    {"name": "a]b}c", "ph": "X", "args": {"s": "[[{{", "q": "\"]\"", "bs": "\\", "bs2": "x\\\\"}},
    {"name": "\\\"}]", "ph": "i"},
    {"name": "plain", "nested": [[1, 2], {"k": [3, {"m": "}"}]}]}
  ],
  "displayTimeUnit": "ms", "other": {"x": "]"}})";

const std::vector<std::string> kTrickyElements = {
    R"({"name": "a]b}c", "ph": "X", "args": {"s": "[[{{", "q": "\"]\"", "bs": "\\", "bs2": "x\\\\"}})",
    R"({"name": "\\\"}]", "ph": "i"})",
    R"({"name": "plain", "nested": [[1, 2], {"k": [3, {"m": "}"}]}]})",
};

TEST_CASE("JsonSplitter finds the elements of traceEvents", "[json_splitter]") {
  auto r = SplitWhole(R"({"traceEvents":[{"ph":"X","ts":1},{"ph":"M","name":"x"}]})");
  CHECK(r.result == JsonSplitter::Result::kDone);
  CHECK(r.error.empty());
  CHECK_FALSE(r.bare_array);
  CHECK(r.saw_trace_events);
  REQUIRE(r.elements.size() == 2);
  CHECK(r.elements[0] == R"({"ph":"X","ts":1})");
  CHECK(r.elements[1] == R"({"ph":"M","name":"x"})");
}

TEST_CASE("JsonSplitter finds the elements of a bare array", "[json_splitter]") {
  auto r = SplitWhole("\n[ {\"a\": 1} ,\n {\"b\": [2]}\n]\n");
  CHECK(r.result == JsonSplitter::Result::kDone);
  CHECK(r.bare_array);
  CHECK(r.saw_trace_events);
  REQUIRE(r.elements.size() == 2);
  CHECK(r.elements[0] == R"({"a": 1})");
  CHECK(r.elements[1] == R"({"b": [2]})");
}

TEST_CASE("JsonSplitter handles an empty event array and a UTF-8 BOM", "[json_splitter]") {
  auto r = SplitWhole(R"({"traceEvents": []})");
  CHECK(r.result == JsonSplitter::Result::kDone);
  CHECK(r.elements.empty());
  CHECK(r.saw_trace_events);

  auto bom = SplitWhole("\xEF\xBB\xBF[{\"x\":1}]");
  CHECK(bom.result == JsonSplitter::Result::kDone);
  REQUIRE(bom.elements.size() == 1);
  CHECK(bom.elements[0] == R"({"x":1})");
}

TEST_CASE("JsonSplitter reports non-object elements as elements", "[json_splitter]") {
  auto r = SplitWhole(R"([5, "str", [1, [2]], null, {"a": 1}])");
  CHECK(r.result == JsonSplitter::Result::kDone);
  REQUIRE(r.elements.size() == 5);
  CHECK(r.elements[0] == "5");
  CHECK(r.elements[1] == R"("str")");
  CHECK(r.elements[2] == "[1, [2]]");
  CHECK(r.elements[3] == "null");
  CHECK(r.elements[4] == R"({"a": 1})");
}

TEST_CASE("JsonSplitter copes with brackets, braces, escaped quotes and backslashes in strings",
          "[json_splitter]") {
  auto r = SplitWhole(kTricky);
  CHECK(r.result == JsonSplitter::Result::kDone);
  CHECK(r.error.empty());
  CHECK(r.elements == kTrickyElements);
  REQUIRE(r.values.size() == 1);
  CHECK(r.values[0].first == "deviceProperties");
  CHECK(r.values[0].second == R"([{"id": 0, "name": "A ]} [{ \" \\"}])");
}

TEST_CASE("JsonSplitter reports captured top-level values only", "[json_splitter]") {
  const std::string doc =
      R"({"schemaVersion": 1, "distributedInfo": {"rank": 3, "s": "}"}, "baseTimeNanoseconds": 1700000000000000000,
          "traceEvents": [{"x": 1}], "deviceProperties": [{"id": 0}], "displayTimeUnit": "ms"})";
  auto r = SplitAt(doc, {}, {"deviceProperties", "distributedInfo", "baseTimeNanoseconds"});
  CHECK(r.result == JsonSplitter::Result::kDone);
  REQUIRE(r.values.size() == 3);
  CHECK(r.values[0] ==
        std::make_pair(std::string("distributedInfo"), std::string(R"({"rank": 3, "s": "}"})")));
  CHECK(r.values[1] ==
        std::make_pair(std::string("baseTimeNanoseconds"), std::string("1700000000000000000")));
  CHECK(r.values[2] ==
        std::make_pair(std::string("deviceProperties"), std::string(R"([{"id": 0}])")));
  CHECK(r.elements == std::vector<std::string>{R"({"x": 1})"});
}

TEST_CASE("JsonSplitter gives the same elements for every 2-way split", "[json_splitter]") {
  const auto whole = SplitWhole(kTricky);
  REQUIRE(whole.result == JsonSplitter::Result::kDone);
  for (size_t cut = 0; cut <= kTricky.size(); ++cut) {
    INFO("cut at " << cut);
    auto r = SplitAt(kTricky, {cut});
    REQUIRE(r.result == JsonSplitter::Result::kDone);
    REQUIRE(r.elements == kTrickyElements);
    REQUIRE(r.values == whole.values);
  }
}

TEST_CASE("JsonSplitter gives the same elements when fed one byte at a time", "[json_splitter]") {
  auto r = SplitBytewise(kTricky);
  CHECK(r.result == JsonSplitter::Result::kDone);
  CHECK(r.elements == kTrickyElements);
  CHECK(r.values == SplitWhole(kTricky).values);

  const std::string bare = "[{\"a\":\"\\\\\"},\n{\"b\":\"\\\"[\"}]";
  auto whole = SplitWhole(bare);
  auto bytes = SplitBytewise(bare);
  REQUIRE(whole.elements.size() == 2);
  CHECK(bytes.result == JsonSplitter::Result::kDone);
  CHECK(bytes.elements == whole.elements);
}

TEST_CASE("JsonSplitter: top-level scalar value ending at a chunk boundary", "[json_splitter]") {
  // A captured scalar value (a number) ends with the '}' that may arrive in the next chunk.
  const std::string doc = R"({"traceEvents":[{"a":1}],"deviceProperties":12345})";
  for (size_t cut = 0; cut <= doc.size(); ++cut) {
    INFO("cut at " << cut);
    auto r = SplitAt(doc, {cut});
    REQUIRE(r.result == JsonSplitter::Result::kDone);
    REQUIRE(r.values.size() == 1);
    REQUIRE(r.values[0].second == "12345");
  }
}

TEST_CASE("JsonSplitter errors: traceEvents not an array", "[json_splitter]") {
  auto r = SplitWhole(R"({"traceEvents": 5})");
  CHECK(r.result == JsonSplitter::Result::kError);
  CHECK_THAT(r.error, Catch::Contains("traceEvents"));
  CHECK_THAT(r.error, Catch::Contains("at byte 16"));
}

TEST_CASE("JsonSplitter errors: not JSON", "[json_splitter]") {
  auto r = SplitWhole("hello");
  CHECK(r.result == JsonSplitter::Result::kError);
  CHECK_THAT(r.error, Catch::Contains("at byte 0"));
  auto n = SplitWhole("42");
  CHECK(n.result == JsonSplitter::Result::kError);
  CHECK_FALSE(n.error.empty());
}

TEST_CASE("JsonSplitter errors: empty input", "[json_splitter]") {
  auto r = SplitWhole("");
  CHECK(r.result == JsonSplitter::Result::kError);
  CHECK_THAT(r.error, Catch::Contains("empty file"));
  auto ws = SplitWhole(" \n\t ");
  CHECK(ws.result == JsonSplitter::Result::kError);
  CHECK_THAT(ws.error, Catch::Contains("empty file"));
}

TEST_CASE("JsonSplitter errors: truncated input", "[json_splitter]") {
  const std::string doc = R"({"traceEvents":[{"ph":"X","name":"abc"},{"ph":"X","name":"def"}]})";
  // Every proper prefix that has started the document is an error, never kDone.
  for (size_t len = 1; len < doc.size(); ++len) {
    INFO("prefix of " << len << " bytes");
    auto r = SplitWhole(doc.substr(0, len));
    REQUIRE(r.result == JsonSplitter::Result::kError);
    REQUIRE_THAT(r.error, Catch::Contains("unexpected end"));
  }
  // Cut inside the second event: the first one was still reported.
  auto r = SplitWhole(doc.substr(0, 50));
  CHECK(r.elements == std::vector<std::string>{R"({"ph":"X","name":"abc"})"});
  CHECK_THAT(r.error, Catch::Contains("traceEvents"));
}

TEST_CASE("JsonSplitter errors: trailing garbage after the document", "[json_splitter]") {
  auto r = SplitWhole("{\"traceEvents\":[{\"a\":1}]} xyz");
  CHECK(r.result == JsonSplitter::Result::kError);
  CHECK_THAT(r.error, Catch::Contains("after the end"));
  CHECK_THAT(r.error, Catch::Contains("at byte 26"));
  auto bare = SplitWhole("[{\"a\":1}]]");
  CHECK(bare.result == JsonSplitter::Result::kError);
  // Trailing whitespace is fine.
  CHECK(SplitWhole("[{\"a\":1}]\n\n  ").result == JsonSplitter::Result::kDone);
}

TEST_CASE("JsonSplitter errors: malformed structure", "[json_splitter]") {
  CHECK(SplitWhole(R"({"traceEvents":[{"a":1} {"b":2}]})").result == JsonSplitter::Result::kError);
  CHECK(SplitWhole(R"({"traceEvents":[,{"a":1}]})").result == JsonSplitter::Result::kError);
  CHECK(SplitWhole(R"({"traceEvents" 1})").result == JsonSplitter::Result::kError);
  CHECK(SplitWhole(R"({traceEvents: []})").result == JsonSplitter::Result::kError);
  CHECK(SplitWhole(R"({"a": 1 "traceEvents": []})").result == JsonSplitter::Result::kError);
}

TEST_CASE("JsonSplitter survives 200,000 nested brackets inside one element", "[json_splitter]") {
  const size_t depth = 200000;
  std::string doc = "{\"traceEvents\":[{\"args\":";
  doc.append(depth, '[');
  doc.append(depth, ']');
  doc += "},{\"b\":1}]}";
  auto r = SplitWhole(doc);
  CHECK(r.result == JsonSplitter::Result::kDone);
  REQUIRE(r.elements.size() == 2);
  CHECK(r.elements[0].size() == 2 * depth + 9);
  CHECK(r.elements[1] == R"({"b":1})");

  // Unbalanced: the element never closes, which is a truncation error, not a crash.
  std::string open = "[{\"args\":";
  open.append(depth, '[');
  auto t = SplitWhole(open);
  CHECK(t.result == JsonSplitter::Result::kError);
  CHECK_THAT(t.error, Catch::Contains("unexpected end"));

  // Fed in small chunks as the loader would.
  std::vector<size_t> cuts;
  for (size_t i = 4096; i < doc.size(); i += 4096) cuts.push_back(i);
  auto chunked = SplitAt(doc, cuts);
  CHECK(chunked.result == JsonSplitter::Result::kDone);
  CHECK(chunked.elements == r.elements);
}

}  // namespace
}  // namespace ttap

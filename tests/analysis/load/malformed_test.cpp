// Malformed inputs: fatal ones give a Status naming the file; bad events are skipped and counted.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/load/trace_loader.h"
#include "analysis/model/trace.h"
#include "analysis/model/trace_stats.h"
#include "tests/analysis/test_helpers.h"

namespace ttap {
namespace {

using testing::Gzip;
using testing::TempFile;

LoadOptions Opts(int threads) {
  LoadOptions o;
  o.threads = threads;
  return o;
}

// Loads |data| from memory and expects an error; returns its message.
std::string LoadError(std::string_view data, int threads = 1) {
  auto r = LoadTraceFromMemory(data, "inline.json", Opts(threads));
  REQUIRE_FALSE(r.ok());
  const std::string& m = r.status().message();
  INFO(m);
  CHECK_THAT(m, Catch::StartsWith("inline.json: "));
  return m;
}

std::unique_ptr<Trace> LoadOk(std::string_view data, int threads = 1) {
  auto r = LoadTraceFromMemory(data, "inline.json", Opts(threads));
  INFO(r.status().message());
  REQUIRE(r.ok());
  return std::move(*r);
}

const std::string kValid = R"({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::first_operator", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
  {"ph": "X", "cat": "cpu_op", "name": "aten::second_operator", "pid": 1, "tid": 1, "ts": 20, "dur": 5},
  {"ph": "X", "cat": "cpu_op", "name": "aten::third_operator", "pid": 1, "tid": 1, "ts": 30, "dur": 5}
]})";

TEST_CASE("Malformed: empty file and whitespace only", "[malformed]") {
  CHECK_THAT(LoadError(""), Catch::Contains("empty file"));
  CHECK_THAT(LoadError(" \n\t\r\n  "), Catch::Contains("empty file"));
  TempFile empty("", ".json");
  auto r = LoadTrace(empty.path());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::StartsWith(empty.path() + ": "));
  CHECK_THAT(r.status().message(), Catch::Contains("empty file"));
}

TEST_CASE("Malformed: not JSON", "[malformed]") {
  auto m = LoadError("hello world");
  CHECK_THAT(m, Catch::Contains("at byte 0"));
  m = LoadError("  <html><body>404</body></html>");
  CHECK_THAT(m, Catch::Contains("at byte 2"));
  // A top-level number.
  CHECK_THAT(LoadError("42"), Catch::Contains("at byte 0"));
  CHECK_THAT(LoadError("\"traceEvents\""), Catch::Contains("at byte 0"));
}

TEST_CASE("Malformed: traceEvents is not an array, or missing", "[malformed]") {
  auto m = LoadError(R"({"traceEvents": 5})");
  CHECK_THAT(m, Catch::Contains("traceEvents"));
  CHECK_THAT(m, Catch::Contains("at byte 16"));
  m = LoadError(R"({"foo": 1})");
  CHECK_THAT(m, Catch::Contains("traceEvents"));
  m = LoadError(R"({})");
  CHECK_THAT(m, Catch::Contains("traceEvents"));
  m = LoadError(R"({"traceEvents": {"a": 1}})");
  CHECK_THAT(m, Catch::Contains("traceEvents"));
}

TEST_CASE("Malformed: truncated JSON", "[malformed]") {
  for (int threads : {1, 2}) {
    // In the middle of the second event (after its name string).
    size_t mid_event = kValid.find("\"pid\"", kValid.find("second"));
    auto m = LoadError(kValid.substr(0, mid_event), threads);
    CHECK_THAT(m, Catch::Contains("unexpected end"));
    CHECK_THAT(m, Catch::Contains("at byte " + std::to_string(mid_event)));
    // In the middle of a string.
    size_t mid_string = kValid.find("second") + 3;
    m = LoadError(kValid.substr(0, mid_string), threads);
    CHECK_THAT(m, Catch::Contains("unexpected end"));
    // Just the closing brace missing.
    m = LoadError(kValid.substr(0, kValid.size() - 1), threads);
    CHECK_THAT(m, Catch::Contains("unexpected end"));
    // Every prefix fails cleanly.
    for (size_t len = 1; len < kValid.size(); len += 7) {
      auto r = LoadTraceFromMemory(kValid.substr(0, len), "inline.json", Opts(threads));
      INFO("prefix " << len);
      REQUIRE_FALSE(r.ok());
      REQUIRE_THAT(r.status().message(), Catch::StartsWith("inline.json: "));
    }
  }
}

TEST_CASE("Malformed: trailing garbage after the document", "[malformed]") {
  auto m = LoadError(kValid + "\n{\"more\": 1}");
  CHECK_THAT(m, Catch::Contains("after the end"));
  CHECK_THAT(m, Catch::Contains("at byte " + std::to_string(kValid.size() + 1)));
}

TEST_CASE("Malformed: truncated gzip", "[malformed]") {
  const std::string gz = Gzip(kValid);
  const std::string half = gz.substr(0, gz.size() / 2);
  auto m = LoadError(half);
  CHECK_THAT(m, Catch::Contains("gzip"));
  CHECK_THAT(m, Catch::Contains("byte"));

  TempFile file(half, ".json.gz");
  auto r = LoadTrace(file.path(), Opts(2));
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::StartsWith(file.path() + ": "));
  CHECK_THAT(r.status().message(), Catch::Contains("truncated gzip"));

  // Only the 8-byte trailer missing.
  m = LoadError(gz.substr(0, gz.size() - 8));
  CHECK_THAT(m, Catch::Contains("gzip"));
  // Just the magic bytes.
  CHECK_FALSE(LoadTraceFromMemory(gz.substr(0, 2), "inline.json", Opts(1)).ok());
  CHECK_FALSE(LoadTraceFromMemory(gz.substr(0, 11), "inline.json", Opts(1)).ok());
}

TEST_CASE("Malformed: corrupt gzip data", "[malformed]") {
  std::string gz = Gzip(kValid);
  REQUIRE(gz.size() > 40);
  // 0xFF bytes right after the 10-byte header: a deflate block of the reserved type 3.
  std::string bad = gz;
  for (size_t i = 10; i < 30; ++i) bad[i] = '\xff';
  auto m = LoadError(bad);
  CHECK_THAT(m, Catch::Contains("corrupt gzip"));
  CHECK_THAT(m, Catch::Contains("byte"));

  TempFile file(bad, ".json.gz");
  auto r = LoadTrace(file.path());
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::StartsWith(file.path() + ": "));

  // A wrong CRC in the trailer.
  std::string crc = gz;
  crc[crc.size() - 6] ^= 0x5a;
  CHECK_THAT(LoadError(crc), Catch::Contains("gzip"));

  // Garbage after a complete member.
  CHECK_THAT(LoadError(gz + "garbage!"), Catch::Contains("gzip"));
}

TEST_CASE("Malformed: a directory is not a trace", "[malformed]") {
  std::string dir = std::filesystem::temp_directory_path().string();
  auto r = LoadTrace(dir);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::StartsWith(dir + ": "));
  CHECK_THAT(r.status().message(), Catch::Contains("directory"));
}

TEST_CASE("Malformed: a missing file", "[malformed]") {
  std::string path = "/nonexistent/dir/rank-0.json";
  auto r = LoadTrace(path);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::StartsWith(path + ": "));
}

// A trace whose second event is |bad|; the first and third are fine.
std::string WithBadEvent(const std::string& bad) {
  return R"({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "good_before", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
  )" + bad +
         R"(,
  {"ph": "X", "cat": "cpu_op", "name": "good_after", "pid": 1, "tid": 1, "ts": 30, "dur": 5}
]})";
}

// Loads a trace with one bad event and checks that it was skipped for |reason|.
void ExpectSkipped(const std::string& bad, const std::string& reason) {
  for (int threads : {1, 2}) {
    INFO("threads " << threads << ", reason " << reason);
    const std::string doc = WithBadEvent(bad);
    auto t = LoadOk(doc, threads);
    REQUIRE(t->events.size() == 2);
    CHECK(t->Name(0) == "good_before");
    CHECK(t->Name(1) == "good_after");
    CHECK(t->stats.elements == 3);
    CHECK(t->stats.total_skipped() == 1);
    CHECK(t->stats.skipped.count(reason) == 1);
    // The first error names the reason and the event's byte offset.
    CHECK_THAT(t->stats.first_error, Catch::Contains(reason));
    CHECK_THAT(t->stats.first_error, Catch::Contains("byte " + std::to_string(doc.find(bad))));
  }
}

TEST_CASE("Skipped: missing ts", "[malformed]") {
  ExpectSkipped(R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "dur": 5})",
                "missing ts");
}

TEST_CASE("Skipped: ts out of range or not a number", "[malformed]") {
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 1e400, "dur": 5})",
      "ts out of range");
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": "abc", "dur": 5})",
      "invalid ts");
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": null, "dur": 5})",
      "invalid ts");
}

TEST_CASE("Skipped: negative dur", "[malformed]") {
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 20, "dur": -5})",
      "negative dur");
}

TEST_CASE("Skipped: dur out of range, ts + dur overflow", "[malformed]") {
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 20, "dur": 1e400})",
      "dur out of range");
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 4000000000000000, "dur": 1000000000000000})",
      "ts + dur out of range");
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 9000000000000000, "dur": 1})",
      "ts out of range");
}

TEST_CASE("Skipped: invalid UTF-8 inside a name", "[malformed]") {
  ExpectSkipped(
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad\xff\xfe\xc3(\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": 20, \"dur\": 5}",
      "invalid JSON");
}

TEST_CASE("Skipped: invalid escape inside a name", "[malformed]") {
  // "\x" is not a JSON escape: the name cannot be unescaped, so the event is skipped (it must not
  // be kept under its raw token text, which is only meant for numeric names).
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad\x41", "pid": 1, "tid": 1, "ts": 20, "dur": 5})",
      "invalid name");
  // A numeric name is still kept as its text.
  auto t = LoadOk(WithBadEvent(
      R"({"ph": "X", "cat": "cpu_op", "name": 123, "pid": 1, "tid": 1, "ts": 20, "dur": 5})"));
  REQUIRE(t->events.size() == 3);
  CHECK(t->Name(1) == "123");
}

TEST_CASE("Skipped: invalid escape in cat", "[malformed]") {
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu\x_op", "name": "bad", "pid": 1, "tid": 1, "ts": 20, "dur": 5})",
      "invalid cat");
}

TEST_CASE("Skipped: elements that are not objects", "[malformed]") {
  ExpectSkipped("12345", "event is not an object");
  ExpectSkipped(R"([1, 2, {"ph": "X"}])", "event is not an object");
  ExpectSkipped(R"("a string")", "event is not an object");
  ExpectSkipped("null", "event is not an object");
}

TEST_CASE("Skipped: begin/end events", "[malformed]") {
  ExpectSkipped(R"({"ph": "B", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 20})",
                "begin/end events (unsupported phase)");
  ExpectSkipped(R"({"ph": "E", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 20})",
                "begin/end events (unsupported phase)");
}

TEST_CASE("Skipped: missing ph, invalid pid", "[malformed]") {
  ExpectSkipped(R"({"cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 20, "dur": 5})",
                "missing ph");
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": [1], "tid": 1, "ts": 20, "dur": 5})",
      "invalid pid");
}

TEST_CASE("Skipped: broken JSON inside one element", "[malformed]") {
  ExpectSkipped(
      R"({"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 20, "dur": 5,})",
      "invalid key");
}

TEST_CASE("Skipped events with several reasons are counted per reason", "[malformed]") {
  const std::string doc = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 1, "dur": -1},
    7
  ]})";
  auto t = LoadOk(doc, 2);
  CHECK(t->events.size() == 1);
  CHECK(t->stats.total_skipped() == 4);
  CHECK(t->stats.skipped.at("missing ts") == 2);
  CHECK(t->stats.skipped.at("negative dur") == 1);
  CHECK(t->stats.skipped.at("event is not an object") == 1);
  CHECK_THAT(t->stats.first_error, Catch::StartsWith("missing ts"));
  const size_t first_bad = doc.find(R"({"ph": "X", "cat": "cpu_op", "name": "a")");
  CHECK_THAT(t->stats.first_error,
             Catch::EndsWith("(event at byte " + std::to_string(first_bad) + ")"));
}

TEST_CASE("200,000 nested brackets inside one event's args", "[malformed]") {
  const size_t depth = 200000;
  std::string deep =
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"deep\", \"pid\": 1, \"tid\": 1, "
      "\"ts\": 20, \"dur\": 5, \"args\": {\"x\": ";
  deep.append(depth, '[');
  deep.append(depth, ']');
  deep += "}}";
  for (int threads : {1, 2}) {
    auto start = std::chrono::steady_clock::now();
    auto r = LoadTraceFromMemory(WithBadEvent(deep), "inline.json", Opts(threads));
    auto elapsed = std::chrono::steady_clock::now() - start;
    CHECK(elapsed < std::chrono::seconds(2));
    INFO(r.status().message());
    REQUIRE(r.ok());
    const Trace& t = **r;
    // The deep value sits in an args key the parser does not read: the event is kept.
    CHECK(t.events.size() == 3);
    CHECK(t.stats.total_skipped() == 0);
    CHECK(t.Name(0) == "good_before");
    CHECK(t.Name(t.events.size() - 1) == "good_after");
  }

  // Unbalanced: the brackets never close, which truncates the document.
  std::string open = "{\"traceEvents\": [{\"args\": ";
  open.append(depth, '[');
  CHECK_THAT(LoadError(open), Catch::Contains("unexpected end"));
  // Unbalanced the other way: the element ends early and the rest is garbage.
  std::string close = "{\"traceEvents\": [{\"args\": [1]";
  close.append(depth, ']');
  CHECK_FALSE(LoadTraceFromMemory(close, "inline.json", Opts(1)).ok());
}

TEST_CASE("Statistics survive a trace made only of bad events", "[malformed]") {
  const std::string doc = R"([{"ph": "X"}, 5, {"ph": "B", "ts": 1}])";
  auto t = LoadOk(doc, 1);
  CHECK(t->events.size() == 0);
  CHECK(t->stats.total_skipped() == 3);
  CHECK(t->windows.empty());
  CHECK(t->steps.empty());
  auto s = Summarize(*t);
  CHECK(s.device_type == "CPU");
  CHECK_FALSE(ComputeHtaFigures(*t).has_gpu_events);
}

}  // namespace
}  // namespace ttap

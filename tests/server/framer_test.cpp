// The Content-Length framer (server/lsp/framer.h) fed raw byte strings, read by read as a
// channel would hand them over: headers and bodies split across reads (at every byte boundary),
// several messages in one read, missing, invalid and duplicate Content-Length, extra headers,
// oversized bodies skipped to stay in step, and what Write puts on the wire.
#include "server/lsp/framer.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "server/lsp/channel.h"

namespace {

using ttap::lsp::Framer;
using Result = Framer::ReadResult;

// Hands out |reads| one per Read (a read larger than the caller's buffer over several), then end
// of stream; keeps what is written.
class ScriptedChannel : public ttap::lsp::ByteChannel {
 public:
  explicit ScriptedChannel(std::vector<std::string> reads) : reads_(std::move(reads)) {}
  size_t Read(char* dst, size_t max) override {
    while (next_ < reads_.size() && reads_[next_].size() == at_) {
      ++next_;
      at_ = 0;
    }
    if (next_ == reads_.size()) return 0;
    size_t n = std::min(max, reads_[next_].size() - at_);
    reads_[next_].copy(dst, n, at_);
    at_ += n;
    return n;
  }
  bool Write(const char* data, size_t size) override {
    written.append(data, size);
    return true;
  }
  void Close() override {}
  std::string written;

 private:
  std::vector<std::string> reads_;
  size_t next_ = 0, at_ = 0;
};

std::string Frame(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Every result and body (or error) the framer reads from |reads| until end of stream.
struct Read {
  Result result;
  std::string text;  // the body, or the error
};
std::vector<Read> ReadAll(std::vector<std::string> reads, size_t max_content = 1 << 20) {
  ScriptedChannel channel(std::move(reads));
  Framer framer(&channel, max_content);
  std::vector<Read> out;
  while (true) {
    std::string body, error;
    Result r = framer.Read(&body, &error);
    if (r == Result::kEof) return out;
    out.push_back({r, r == Result::kMessage ? body : error});
  }
}

const std::string kBody = R"({"jsonrpc":"2.0","id":1,"method":"x"})";

}  // namespace

TEST_CASE("framer: one message, and several in one read", "[lsp][framer]") {
  auto one = ReadAll({Frame(kBody)});
  REQUIRE(one.size() == 1);
  CHECK(one[0].result == Result::kMessage);
  CHECK(one[0].text == kBody);

  auto three = ReadAll({Frame("{}") + Frame(kBody) + Frame("[1]")});
  REQUIRE(three.size() == 3);
  CHECK(three[0].text == "{}");
  CHECK(three[1].text == kBody);
  CHECK(three[2].text == "[1]");
  for (const auto& r : three) CHECK(r.result == Result::kMessage);
}

TEST_CASE("framer: a frame split at every byte boundary reads the same", "[lsp][framer]") {
  const std::string wire = Frame(kBody) + Frame("{}");
  for (size_t cut = 1; cut < wire.size(); ++cut) {
    INFO("cut at byte " << cut);
    auto reads = ReadAll({wire.substr(0, cut), wire.substr(cut)});
    REQUIRE(reads.size() == 2);
    CHECK(reads[0].result == Result::kMessage);
    CHECK(reads[0].text == kBody);
    CHECK(reads[1].text == "{}");
  }
  // One byte per read.
  std::vector<std::string> bytes;
  for (char c : wire) bytes.emplace_back(1, c);
  auto reads = ReadAll(bytes);
  REQUIRE(reads.size() == 2);
  CHECK(reads[0].text == kBody);
}

TEST_CASE("framer: header names are case-insensitive; extra headers, bare LF, blank lines",
          "[lsp][framer]") {
  auto reads =
      ReadAll({"content-length:   2  \r\nContent-Type: application/vscode-jsonrpc; "
               "charset=utf-8\r\n\r\n{}",
               "\r\n\r\nContent-Length: 3\n\n[1]"});
  REQUIRE(reads.size() == 2);
  CHECK(reads[0].result == Result::kMessage);
  CHECK(reads[0].text == "{}");
  CHECK(reads[1].result == Result::kMessage);
  CHECK(reads[1].text == "[1]");
}

TEST_CASE("framer: missing, invalid and duplicate Content-Length are reported and skipped",
          "[lsp][framer]") {
  SECTION("missing") {
    auto reads = ReadAll({"Content-Type: application/json\r\n\r\n" + Frame("{}")});
    REQUIRE(reads.size() == 2);
    CHECK(reads[0].result == Result::kBadHeader);
    CHECK(reads[0].text == "missing Content-Length header");
    CHECK(reads[1].result == Result::kMessage);
    CHECK(reads[1].text == "{}");
  }
  SECTION("not a number") {
    for (const char* value : {"abc", "-2", "", "1e3", "12345678901234567890"}) {
      INFO(value);
      auto reads = ReadAll({std::string("Content-Length: ") + value + "\r\n\r\n" + Frame("{}")});
      REQUIRE(reads.size() == 2);
      CHECK(reads[0].result == Result::kBadHeader);
      CHECK(reads[0].text == "Content-Length is not a number");
      CHECK(reads[1].text == "{}");
    }
  }
  SECTION("duplicate: the body is read with the first and skipped") {
    auto reads = ReadAll({"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}" + Frame("[]")});
    REQUIRE(reads.size() == 2);
    CHECK(reads[0].result == Result::kBadHeader);
    CHECK(reads[0].text == "duplicate Content-Length header");
    CHECK(reads[1].result == Result::kMessage);
    CHECK(reads[1].text == "[]");
  }
  SECTION("a header line without a colon") {
    auto reads = ReadAll({std::string(10000, 'a') + "\r\n\r\n" + Frame("{}")});
    REQUIRE(reads.size() == 2);
    CHECK(reads[0].result == Result::kBadHeader);
    CHECK(reads[0].text == "malformed header line");
    CHECK(reads[1].text == "{}");
  }
}

TEST_CASE("framer: an oversized body is skipped, split across reads too", "[lsp][framer]") {
  const std::string big(100, 'x');
  auto reads =
      ReadAll({"Content-Length: 100\r\n\r\n" + big.substr(0, 30), big.substr(30), Frame("{}")},
              /*max_content=*/64);
  REQUIRE(reads.size() == 2);
  CHECK(reads[0].result == Result::kTooLarge);
  CHECK(reads[0].text == "Content-Length 100 is over the limit of 64 bytes");
  CHECK(reads[1].result == Result::kMessage);
  CHECK(reads[1].text == "{}");
}

TEST_CASE("framer: a stream that ends inside a frame is the end", "[lsp][framer]") {
  CHECK(ReadAll({"Content-Length: 10\r\n\r\n{}"}).empty());
  CHECK(ReadAll({"Content-Len"}).empty());
  CHECK(ReadAll({}).empty());
}

TEST_CASE("framer: Write frames the body with its length in bytes", "[lsp][framer]") {
  ScriptedChannel channel({});
  Framer framer(&channel);
  const std::string body = "{\"m\":\"\xc3\xa9\"}";  // two bytes for one character
  REQUIRE(framer.Write(body));
  CHECK(channel.written == "Content-Length: 10\r\n\r\n" + body);
  // What Write puts out, Read takes back.
  auto reads = ReadAll({channel.written});
  REQUIRE(reads.size() == 1);
  CHECK(reads[0].text == body);
}

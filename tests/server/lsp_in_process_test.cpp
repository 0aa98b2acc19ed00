// The language server driven in process: RunSession on a thread, over a ByteChannel (the
// transport interface the stdio, --socket and --listen channels implement) made of two in-memory
// pipes, with framing by the server's own Framer on the client side too. No binary, no fork: the
// transcript (initialize, a trace's diagnostics, hover, $/cancelRequest, shutdown, exit) runs
// against the same library the binary links. The e2e tests drive the binary; this one the core.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "fixture_traces.h"
#include "lsp_fixtures.h"
#include "server/lsp/channel.h"
#include "server/lsp/framer.h"
#include "server/lsp/lsp_server.h"
#include "test_support.h"

namespace {

using json = nlohmann::json;

// One direction of bytes: written by one side, read by the other; Close ends the stream.
class Pipe {
 public:
  void Write(const char* data, size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    bytes_.insert(bytes_.end(), data, data + size);
    cv_.notify_all();
  }
  size_t Read(char* dst, size_t max) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !bytes_.empty() || closed_; });
    size_t n = std::min(max, bytes_.size());
    std::copy(bytes_.begin(), bytes_.begin() + n, dst);
    bytes_.erase(bytes_.begin(), bytes_.begin() + n);
    return n;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<char> bytes_;
  bool closed_ = false;
};

// One end of a connection: reads from |in|, writes to |out|.
class PipeChannel : public ttap::lsp::ByteChannel {
 public:
  PipeChannel(Pipe* in, Pipe* out) : in_(in), out_(out) {}
  size_t Read(char* dst, size_t max) override { return in_->Read(dst, max); }
  bool Write(const char* data, size_t size) override {
    out_->Write(data, size);
    return true;
  }
  void Close() override { out_->Close(); }

 private:
  Pipe* in_;
  Pipe* out_;
};

// The client side: framed JSON over its end, messages read on a thread and kept.
class InProcessClient {
 public:
  explicit InProcessClient(ttap::lsp::ByteChannel* channel) : framer_(channel) {
    reader_ = std::thread([this] {
      std::string body, error;
      while (framer_.Read(&body, &error) == ttap::lsp::Framer::ReadResult::kMessage) {
        std::lock_guard<std::mutex> lock(mu_);
        inbox_.push_back(json::parse(body));
        cv_.notify_all();
      }
    });
  }
  ~InProcessClient() {
    if (reader_.joinable()) reader_.join();
  }
  void Send(const json& m) { framer_.Write(m.dump()); }
  int Request(const std::string& method, const json& params) {
    Send({{"jsonrpc", "2.0"}, {"id", next_id_}, {"method", method}, {"params", params}});
    return next_id_++;
  }
  template <typename Pred>
  json WaitFor(Pred pred, int timeout_ms = 20000) {
    std::unique_lock<std::mutex> lock(mu_);
    json found;
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
      for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
        if (pred(*it)) {
          found = *it;
          inbox_.erase(it);
          return true;
        }
      }
      return false;
    });
    return found;
  }
  json Response(int id) {
    return WaitFor(
        [&](const json& m) { return m.value("id", json()) == id && !m.contains("method"); });
  }

 private:
  ttap::lsp::Framer framer_;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<json> inbox_;
  int next_id_ = 1;
};

}  // namespace

TEST_CASE("lsp in process: a session over in-memory pipes, from initialize to exit",
          "[lsp][in-process]") {
  const std::string root = ttap_test::MakeTempDir();
  REQUIRE(ttap_test::WriteFile(root + "/train.py", ttap_test::kTrainPy));
  mkdir((root + "/log").c_str(), 0755);
  REQUIRE(ttap_test::WriteFile(root + "/log/host_1.1700000000000.pt.trace.json",
                               ttap_test::StallTrace()));
  Pipe to_server, to_client;
  PipeChannel server_end(&to_server, &to_client), client_end(&to_client, &to_server);
  int exit_code = -1;
  std::thread server([&] {
    ttap::lsp::Framer framer(&server_end);
    ttap::lsp::ServerOptions options;
    options.exit_with_client_process = false;
    exit_code = ttap::lsp::RunSession(&framer, options);
    server_end.Close();
  });
  {
    InProcessClient c(&client_end);
    json params = ttap_test::InitParams(root);
    params["initializationOptions"]["model"] = {{"enabled", false}};
    json init = c.Response(c.Request("initialize", params));
    REQUIRE(init.contains("result"));
    CHECK(init["result"]["serverInfo"]["name"] == "ttap");
    c.Send({{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}});
    const std::string uri = "file://" + root + "/train.py";
    json pub = c.WaitFor([&](const json& m) {
      return m.value("method", "") == "textDocument/publishDiagnostics" &&
             m["params"]["uri"] == uri && !m["params"]["diagnostics"].empty();
    });
    REQUIRE_FALSE(pub.is_null());
    CHECK(pub["params"]["diagnostics"][0]["code"] == "TTA001");
    c.Send({{"jsonrpc", "2.0"},
            {"method", "textDocument/didOpen"},
            {"params",
             {{"textDocument",
               {{"uri", uri},
                {"languageId", "python"},
                {"version", 1},
                {"text", ttap_test::kTrainPy}}}}}});
    json hover = c.Response(c.Request(
        "textDocument/hover",
        {{"textDocument", {{"uri", uri}}}, {"position", {{"line", 11}, {"character", 2}}}}));
    REQUIRE(hover["result"].is_object());
    CHECK(hover["result"]["contents"]["value"].get<std::string>().find("TTA001") !=
          std::string::npos);
    CHECK(c.Response(c.Request("shutdown", nullptr)).contains("result"));
    c.Send({{"jsonrpc", "2.0"}, {"method", "exit"}, {"params", nullptr}});
    server.join();
  }
  CHECK(exit_code == 0);
}

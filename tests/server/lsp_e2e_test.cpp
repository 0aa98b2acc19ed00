// End-to-end JSON-RPC transcripts against the real `ttap lsp` binary over stdio and TCP:
// lifecycle and error codes, malformed frames, the trace-to-diagnostic flow with hover, code
// actions and edits that move the squiggle, and the no-trace message.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <random>

#include "fixture_traces.h"
#include "lsp_client.h"
#include "lsp_fixtures.h"
#include "test_support.h"

using ttap_test::ExpectStallDiagnostic;
using ttap_test::InitParams;
using ttap_test::json;
using ttap_test::kTrainPy;
using ttap_test::LspClient;
using ttap_test::OpenAndHover;
using ttap_test::StallWorkspace;

TEST_CASE("lsp: lifecycle and error codes", "[lsp][e2e]") {
  LspClient c(ttap_test::Binary(), {}, /*quiet_stderr=*/true);
  // Before initialize: -32002.
  auto early = c.Call("textDocument/hover", {{"textDocument", {{"uri", "file:///x.py"}}},
                                             {"position", {{"line", 0}, {"character", 0}}}});
  REQUIRE(early.contains("error"));
  CHECK(early["error"]["code"] == -32002);
  // Invalid JSON: -32700 with a null id.
  c.SendRaw("Content-Length: 9\r\n\r\n{not json");
  auto parse =
      c.WaitFor([](const json& m) { return m.contains("error") && m["error"]["code"] == -32700; });
  REQUIRE_FALSE(parse.is_null());
  CHECK(parse["id"].is_null());
  // Headers: missing Content-Length, duplicate, not a number, over the limit.
  c.SendRaw("Content-Type: application/json\r\n\r\n");
  c.SendRaw("Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}");
  c.SendRaw("Content-Length: abc\r\n\r\n");
  c.SendRaw("Content-Length: 99999999999\r\n\r\n");
  for (int i = 0; i < 3; ++i) {
    auto bad = c.WaitFor(
        [](const json& m) { return m.contains("error") && m["error"]["code"] == -32700; });
    REQUIRE_FALSE(bad.is_null());
  }
  // The oversized body is being skipped: the server is still reading it; restart for the rest.
}

TEST_CASE("lsp: initialize, unknown methods, bad params, shutdown and exit codes", "[lsp][e2e]") {
  std::string root = ttap_test::MakeTempDir();
  {
    LspClient c(ttap_test::Binary());
    auto init = c.Call("initialize", InitParams(root));
    REQUIRE(init.contains("result"));
    const json& caps = init["result"]["capabilities"];
    CHECK(caps["positionEncoding"] == "utf-16");
    CHECK(caps["textDocumentSync"]["change"] == 2);
    CHECK(caps["hoverProvider"] == true);
    CHECK_FALSE(caps.contains("diagnosticProvider"));  // the client declared no pull support
    auto again = c.Call("initialize", InitParams(root));
    CHECK(again["error"]["code"] == -32600);
    c.Notify("initialized", json::object());
    auto unknown = c.Call("textDocument/frobnicate", json::object());
    CHECK(unknown["error"]["code"] == -32601);
    auto bad = c.Call("textDocument/hover", {{"position", 3}});
    CHECK(bad["error"]["code"] == -32602);
    // The binder names the field that did not read.
    CHECK(bad["error"]["message"] == "textDocument/hover: params.textDocument: missing");
    // A workspace without traces: one info message saying how to record one.
    auto msg = c.Notification("window/showMessage");
    REQUIRE_FALSE(msg.is_null());
    CHECK(msg["params"]["type"] == 3);
    CHECK(msg["params"]["message"].get<std::string>().find("with_stack=True") != std::string::npos);
    auto shut = c.Call("shutdown", nullptr);
    CHECK(shut.contains("result"));
    auto after = c.Call("textDocument/hover", json::object());
    CHECK(after["error"]["code"] == -32600);
    c.Notify("exit", nullptr);
    CHECK(c.WaitExit() == 0);
  }
  {
    LspClient c(ttap_test::Binary());
    c.Call("initialize", InitParams(root));
    c.Notify("exit", nullptr);  // exit without shutdown: exit code 1
    CHECK(c.WaitExit() == 1);
  }
  {
    LspClient c(ttap_test::Binary());
    auto init = c.Call("initialize", InitParams(root, /*utf8=*/true));
    CHECK(init["result"]["capabilities"]["positionEncoding"] == "utf-8");
  }
}

namespace {

// train.py and, in log/, a trace that loads (host_1.1700000000000) and one truncated mid-write
// (host_1.1800000000000). Returns the root.
std::string WorkspaceWithBrokenNewest() {
  const std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  mkdir((root + "/log").c_str(), 0755);
  WriteOrFail(root + "/log/host_1.1700000000000.pt.trace.json", ttap_test::StallTrace());
  const std::string full = ttap_test::StallTrace();
  WriteOrFail(root + "/log/host_1.1800000000000.pt.trace.json", full.substr(0, full.size() / 2));
  return root;
}

}  // namespace

TEST_CASE("lsp: a broken newest trace is reported once and the newest one that loads is shown",
          "[lsp][e2e]") {
  const std::string root = WorkspaceWithBrokenNewest();
  const std::string good = root + "/log/host_1.1700000000000.pt.trace.json";
  const std::string broken =
      root + "/log/host_1.1800000000000.pt.trace.json";  // truncated mid-write
  // The broken one is the newer.
  struct timespec times[2] = {{1700000000, 0}, {1700000000, 0}};
  REQUIRE(utimensat(AT_FDCWD, good.c_str(), times, 0) == 0);
  LspClient c(ttap_test::Binary(), {"--stdio", "--poll-ms=50"});
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  auto warn = c.WaitFor([&](const json& m) {
    return m.value("method", "") == "window/showMessage" && m["params"]["type"] == 2;
  });
  REQUIRE_FALSE(warn.is_null());
  CHECK(warn["params"]["message"].get<std::string>().find(broken) != std::string::npos);
  ExpectStallDiagnostic(&c, root);
  // Polled 20 times a second for a second: the broken trace is not loaded again, nor reported.
  c.Drain();
  c.WaitFor([](const json&) { return false; }, 1000);
  size_t reloads = 0, warnings = 0;
  for (const json& m : c.inbox()) {
    const std::string method = m.value("method", "");
    if (method == "ttap/status" && m["params"].value("state", "") == "loading" &&
        m["params"].value("detail", "") == broken) {
      ++reloads;
    }
    if (method == "window/showMessage" && m["params"]["type"] == 2) ++warnings;
  }
  CHECK(reloads == 0);
  CHECK(warnings == 0);
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp: traces behind symbolic links and deep folders are found; link loops end",
          "[lsp][e2e]") {
  // The trace lives outside the workspace, reached through `log -> <elsewhere>/run` 14 folders
  // down; the workspace also holds a link to itself.
  std::string root = ttap_test::MakeTempDir();
  std::string elsewhere = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  std::string deep = elsewhere + "/run";
  mkdir(deep.c_str(), 0755);
  for (int i = 0; i < 14; ++i) {
    deep += "/d" + std::to_string(i);
    mkdir(deep.c_str(), 0755);
  }
  WriteOrFail(deep + "/host_1.1700000000000.pt.trace.json", ttap_test::StallTrace());
  REQUIRE(symlink((elsewhere + "/run").c_str(), (root + "/log").c_str()) == 0);
  REQUIRE(symlink(root.c_str(), (root + "/loop").c_str()) == 0);
  LspClient c(ttap_test::Binary(), {"--stdio"});
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE("lsp: a deleted trace takes its diagnostics and hovers with it", "[lsp][e2e]") {
  std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  mkdir((root + "/log").c_str(), 0755);
  const std::string trace = root + "/log/host_1.1700000000000.pt.trace.json";
  WriteOrFail(trace, ttap_test::StallTrace());
  LspClient c(ttap_test::Binary(), {"--stdio", "--poll-ms=50"});
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  REQUIRE(std::remove(trace.c_str()) == 0);
  const std::string uri = "file://" + root + "/train.py";
  auto cleared = c.WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" &&
           m["params"]["uri"] == uri && m["params"]["diagnostics"].empty();
  });
  REQUIRE_FALSE(cleared.is_null());
  CHECK(OpenAndHover(&c, uri, kTrainPy, 11, 2)["result"].is_null());
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp: malformed percent-escapes in URIs keep the server up", "[lsp][e2e]") {
  std::string root = ttap_test::MakeTempDir();
  LspClient c(ttap_test::Binary());
  REQUIRE(c.Call("initialize", InitParams(root)).contains("result"));
  c.Notify("initialized", json::object());
  for (const char* uri : {"file:///tmp/50%off.py", "file:///tmp/%G1.py", "file:///tmp/x%",
                          "file:///tmp/x%4", "file:///tmp/%%%.py"}) {
    INFO(uri);
    auto hover = OpenAndHover(&c, uri, "x = 1\n", 0, 0);
    CHECK((hover.contains("result") || hover.contains("error")));
  }
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE("lsp: a trace in the workspace becomes diagnostics, hovers and quick fixes",
          "[lsp][e2e]") {
  std::string root = StallWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"});
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  const std::string uri = "file://" + root + "/train.py";
  auto pub = c.WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
  });
  REQUIRE_FALSE(pub.is_null());
  REQUIRE(pub["params"]["diagnostics"].size() >= 1);
  const json d = pub["params"]["diagnostics"][0];
  CHECK(d["code"] == "TTA001");
  CHECK(d["source"] == "ttap");
  CHECK(d["severity"] == 1);                 // over half of every step
  CHECK(d["range"]["start"]["line"] == 11);  // `for batch in loader:` (0-based)
  CHECK(d["codeDescription"]["href"].get<std::string>().find("#tta001-dataloader-stall") !=
        std::string::npos);
  // Related frames name files by absolute URIs only (the trace's relative `torch/...` frames
  // would become "file://torch/...", a host).
  for (const json& diag : pub["params"]["diagnostics"]) {
    for (const json& rel : diag.value("relatedInformation", json::array())) {
      CHECK(rel["location"]["uri"].get<std::string>().rfind("file:///", 0) == 0);
    }
  }
  // Progress and status were reported.
  auto status = c.WaitFor([](const json& m) {
    return m.value("method", "") == "ttap/status" && m["params"]["state"] == "ready";
  });
  REQUIRE_FALSE(status.is_null());
  CHECK(status["params"]["findings"].get<int>() >= 1);
  // Open the file; hover on the flagged line shows the numbers.
  auto hover = OpenAndHover(&c, uri, kTrainPy, 11, 2);
  REQUIRE(hover["result"].is_object());
  std::string md = hover["result"]["contents"]["value"];
  CHECK(md.find("TTA001 dataloader-stall") != std::string::npos);
  CHECK(md.find("ms") != std::string::npos);
  CHECK(md.find("%") != std::string::npos);
  CHECK(md.find("GPU busy") != std::string::npos);
  // Where the steps' time went (causes ranked, readable without a legend) and the replayed
  // saving, stated once; the diagnostic's sentence (shown beside the hover) is not repeated;
  // steps by number, not raw offsets.
  CHECK(md.find("Where these steps' time went (critical path): ") != std::string::npos);
  CHECK(md.find("PPP") == std::string::npos);
  CHECK(md.find("the input pipeline runs") == std::string::npos);
  CHECK(md.find("ProfilerStep ") != std::string::npos);
  CHECK(md.find("every step") != std::string::npos);
  CHECK(md.find("data loading") != std::string::npos);
  CHECK(md.find("saves per step") != std::string::npos);
  CHECK(md.find("replayed") != std::string::npos);
  CHECK(md.find("could be") != std::string::npos);
  auto nothing = c.Call("textDocument/hover", {{"textDocument", {{"uri", uri}}},
                                               {"position", {{"line", 0}, {"character", 0}}}});
  CHECK(nothing["result"].is_null());
  // Code actions: the DataLoader fix.
  auto actions = c.Call(
      "textDocument/codeAction",
      {{"textDocument", {{"uri", uri}}},
       {"range",
        {{"start", {{"line", 11}, {"character", 0}}}, {"end", {{"line", 11}, {"character", 5}}}}},
       {"context", {{"diagnostics", json::array({d})}}}});
  REQUIRE(actions["result"].is_array());
  REQUIRE_FALSE(actions["result"].empty());
  bool preferred = false;
  for (const auto& a : actions["result"]) {
    CHECK(a["kind"] == "quickfix");
    if (a.value("isPreferred", false)) preferred = true;
    REQUIRE(a.contains("edit"));
    CHECK(a["edit"]["changes"].contains(uri));
  }
  CHECK(preferred);
  // Two lines inserted above: the squiggle moves with its line.
  auto moved = InsertTwoLinesAtTop(&c, uri);
  REQUIRE_FALSE(moved.is_null());
  REQUIRE_FALSE(moved["params"]["diagnostics"].empty());
  CHECK(moved["params"]["diagnostics"][0]["range"]["start"]["line"] == 13);
  c.Call("shutdown", nullptr);
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

// One session with |model| settings: "CODE@LINE" (0-based) of every diagnostic train.py gets,
// and the `ttap/status` "ready" notification.
std::pair<std::vector<std::string>, json> ScorerSession(const json& model) {
  // The three stalled steps, then a fourth without a stall: 10 ms of matmul under
  // `loss = model(batch)` (line 13) that no rule explains.
  std::string trace = ttap_test::StallTrace();
  trace.insert(
      trace.rfind("\n]}"),
      ",\n"
      R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":31000,"dur":10000},)"
      "\n"
      R"({"ph":"X","cat":"python_function","name":"train.py(13): <module>","pid":1,"tid":1,"ts":31001,"dur":9990},)"
      "\n"
      R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":31100,"dur":9000},)"
      "\n"
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":31200,"dur":5,"args":{"correlation":1000}},)"
      "\n"
      R"({"ph":"X","cat":"kernel","name":"volta_h884gemm_128x64_nn","pid":0,"tid":7,"ts":31210,"dur":9700,"args":{"correlation":1000,"stream":7,"device":0}})");
  const std::string root = StallWorkspace(trace);
  LspClient c(ttap_test::Binary(), {"--stdio"});
  json init = InitParams(root);
  init["initializationOptions"]["model"] = model;
  c.Call("initialize", init);
  c.Notify("initialized", json::object());
  auto status = c.WaitFor([](const json& m) {
    return m.value("method", "") == "ttap/status" && m["params"]["state"] == "ready";
  });
  std::vector<std::string> codes;
  const std::string uri = "file://" + root + "/train.py";
  auto diags = c.Call("textDocument/diagnostic", {{"textDocument", {{"uri", uri}}}});
  if (diags["result"].contains("items")) {
    for (const auto& d : diags["result"]["items"]) {
      codes.push_back(d.value("code", "") + "@" +
                      std::to_string(d["range"]["start"]["line"].get<int>()));
    }
  }
  c.Call("shutdown", nullptr);
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
  return {codes, status};
}

TEST_CASE("lsp: the window scorer adds TTA900 diagnostics where no rule explains a window",
          "[lsp][e2e][model]") {
  if (!ttap_test::PathExists(ttap_test::ModelsLib())) return;
  const std::string weights = ttap_test::SourceDir() + "/models/ttap-window-scorer.pt";
  // Threshold 0 flags every window the scorer sees, so TTA900 must appear beside the rule's.
  auto [on, on_status] = ScorerSession({{"path", weights}, {"device", "cpu"}, {"threshold", 0}});
  INFO(on_status.dump());
  CAPTURE(on);
  CHECK(std::count(on.begin(), on.end(), "TTA001@11") == 1);  // `for batch in loader:`
  CHECK(std::count_if(on.begin(), on.end(),
                      [](const std::string& c) { return c.rfind("TTA900@", 0) == 0; }) >= 1);
  CHECK(on_status["params"]["model"].get<std::string>().find("ttap-window-scorer.pt (cpu)") !=
        std::string::npos);
  // Turned off, the same settings give the rules' diagnostics alone.
  auto [off, off_status] = ScorerSession({{"enabled", false}, {"path", weights}, {"threshold", 0}});
  CHECK(off == std::vector<std::string>{"TTA001@11"});
  CHECK(off_status["params"]["model"] == "off");
  // Opt-in: with no model settings at all the scorer stays off.
  auto [plain, plain_status] = ScorerSession(json::object());
  CHECK(plain == std::vector<std::string>{"TTA001@11"});
  CHECK(plain_status["params"]["model"] == "off");
  // A weights file that is not one: the rules still run, and the status says why.
  const std::string bad = ttap_test::MakeTempDir() + "/bad.pt";
  WriteOrFail(bad, "junk");
  auto [broken, broken_status] = ScorerSession({{"path", bad}, {"threshold", 0}});
  CHECK(broken == std::vector<std::string>{"TTA001@11"});
  CHECK(broken_status["params"]["model"].get<std::string>().find("unavailable") !=
        std::string::npos);
}

TEST_CASE("lsp: --listen serves sessions over TCP, exit ends one session, not the server",
          "[lsp][e2e][tcp]") {
  int port = 20000 + (getpid() % 20000);
  LspClient server(ttap_test::Binary(), {"--listen", "127.0.0.1:" + std::to_string(port)});
  auto connect = [&]() { return ttap_test::ConnectLoopback(port); };
  std::string root = ttap_test::MakeTempDir();
  for (int session = 0; session < 2; ++session) {
    int fd = connect();
    REQUIRE(fd >= 0);
    LspClient c(fd, -1);
    auto init = c.Call("initialize", InitParams(root));
    REQUIRE(init.contains("result"));
    c.Call("shutdown", nullptr);
    c.Notify("exit", nullptr);
  }
  CHECK(server.alive());
}

TEST_CASE("lsp: --listen with a token ends a session that does not give it", "[lsp][e2e][tcp]") {
  int port = 20000 + ((getpid() + 7919) % 20000);
  std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/token", "s3cret-token\n");
  LspClient server(ttap_test::Binary(), {"--listen", "127.0.0.1:" + std::to_string(port),
                                         "--token-file", root + "/token"});
  {  // No token: an error, and the connection closes.
    int fd = ttap_test::ConnectLoopback(port);
    REQUIRE(fd >= 0);
    LspClient c(fd, -1);
    auto init = c.Call("initialize", InitParams(root));
    REQUIRE(init.contains("error"));
    CHECK(init["error"]["message"].get<std::string>().find("unauthorised") != std::string::npos);
    CHECK(c.Call("shutdown", nullptr, 2000).is_null());  // nobody answers any more
  }
  {  // A wrong token: the same.
    int fd = ttap_test::ConnectLoopback(port);
    REQUIRE(fd >= 0);
    LspClient c(fd, -1);
    json params = InitParams(root);
    params["initializationOptions"]["token"] = "s3cret-tokem";
    CHECK(c.Call("initialize", params).contains("error"));
  }
  {  // The token: a session as usual.
    int fd = ttap_test::ConnectLoopback(port);
    REQUIRE(fd >= 0);
    LspClient c(fd, -1);
    json params = InitParams(root);
    params["initializationOptions"]["token"] = "s3cret-token";
    REQUIRE(c.Call("initialize", params).contains("result"));
    CHECK(c.Call("shutdown", nullptr).contains("result"));
    c.Notify("exit", nullptr);
  }
  CHECK(server.alive());
  // Off the loopback interface a token is made and printed when none is given.
  const std::string err = root + "/listen.err";
  std::system(("timeout 1 '" + ttap_test::Binary() + "' lsp --listen 0.0.0.0:" +
               std::to_string(port + 1) + " < /dev/null 2>'" + err + "'")
                  .c_str());
  CHECK(ttap_test::ReadFile(err).find("clients must send initializationOptions.token = \"") !=
        std::string::npos);
}

TEST_CASE("lsp: --socket connects to a listening client", "[lsp][e2e][tcp]") {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(listen(listener, 1) == 0);
  socklen_t len = sizeof(a);
  getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  LspClient proc(ttap_test::Binary(), {"--socket=" + std::to_string(port)});
  int fd = accept(listener, nullptr, nullptr);
  REQUIRE(fd >= 0);
  close(listener);
  LspClient c(fd, -1);
  auto init = c.Call("initialize", InitParams(ttap_test::MakeTempDir()));
  REQUIRE(init.contains("result"));
  c.Call("shutdown", nullptr);
  c.Notify("exit", nullptr);
  CHECK(proc.WaitExit() == 0);
}

TEST_CASE("lsp: thousands of random and mutated frames never bring the server down",
          "[lsp][fuzz]") {
  LspClient c(ttap_test::Binary(), {}, /*quiet_stderr=*/true);
  c.Call("initialize", InitParams(ttap_test::MakeTempDir()));
  std::mt19937 rng(1234);
  const std::vector<std::string> seeds = {
      R"({"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///a.py"},"position":{"line":0,"character":0}}})",
      R"({"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///a.py","version":1,"text":"x"}}})",
      R"({"jsonrpc":"2.0","id":"s","method":"textDocument/codeAction","params":{"textDocument":{"uri":"file:///a.py"},"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"context":{"diagnostics":[]}}})",
      R"({"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///a.py","version":2},"contentChanges":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"text":"y\n"}]}})"};
  for (int i = 0; i < 3000; ++i) {
    std::string body = seeds[rng() % seeds.size()];
    int mutations = rng() % 4;
    for (int m = 0; m < mutations && !body.empty(); ++m) {
      size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0:
          body[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          body.erase(at, 1 + rng() % 8);
          break;
        default:
          body.insert(at, std::string(1 + rng() % 4, "{}[]\":,0a\\"[rng() % 10]));
          break;
      }
    }
    if (rng() % 50 == 0) {
      c.SendRaw("Content-Length: " + std::to_string(rng() % 100) + "\r\n\r\n" + body);
    } else {
      c.SendRaw("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    }
    if (i % 50 == 0) c.Drain();
  }
  c.Drain();
  // Re-synchronise (a frame whose Content-Length overstated its body may still be open), then
  // the server must still answer.
  c.SendRaw(std::string(200, ' ') + "\r\n\r\n");
  bool answered = false;
  for (int i = 0; i < 3 && !answered; ++i) {
    auto r = c.Call("textDocument/hover",
                    {{"textDocument", {{"uri", "file:///nothing.py"}}},
                     {"position", {{"line", 0}, {"character", 0}}}},
                    10000);
    answered = r.contains("result") || r.contains("error");
  }
  CHECK(answered);
  CHECK(c.alive());
}

TEST_CASE("lsp: one diagnostic per code and line; the hover lists the others", "[lsp][e2e]") {
  std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  mkdir((root + "/log").c_str(), 0755);
  WriteOrFail(root + "/log/host_1.1700000000000.pt.trace.json",
              ttap_test::StallTraceWithTwoFp32Kernels());
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  InitializeRulesOnly(&c, root);
  const std::string uri = "file://" + root + "/train.py";
  auto pub = c.WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" &&
           m["params"]["uri"] == uri && !m["params"]["diagnostics"].empty();
  });
  REQUIRE_FALSE(pub.is_null());
  int tta009 = 0;
  for (const json& d : pub["params"]["diagnostics"]) {
    if (d["code"] != "TTA009") continue;
    ++tta009;
    CHECK(d["message"].get<std::string>().find("and 1 more TTA009 finding on this line") !=
          std::string::npos);
  }
  CHECK(tta009 == 1);  // two findings (aten::mm, aten::cudnn_convolution) on line 12
  auto hover = OpenAndHover(&c, uri, kTrainPy, 11, 2);
  REQUIRE(hover["result"].is_object());
  const std::string md = hover["result"]["contents"]["value"];
  CHECK(md.find("Also TTA009 on this line:") != std::string::npos);
  // The trace summary lists what the Problems view shows: TTA009 once for its line, not per
  // finding, and counts the rest.
  auto summary = c.Call("workspace/executeCommand", {{"command", "ttap.server.showTraceSummary"}});
  const std::string text = summary["result"].value("markdown", "");
  size_t listed = 0;
  for (size_t at = text.find("- TTA009"); at != std::string::npos;
       at = text.find("- TTA009", at + 1)) {
    ++listed;
  }
  CHECK(listed <= 1);
  CHECK(text.find("train.py:12") != std::string::npos);
  CHECK(text.find("saves 0.000 ms") == std::string::npos);
  CHECK(text.find("The fixes together save") != std::string::npos);  // the run's one story
  // Two lines inserted above: the summary names the line the Problems view now shows.
  auto moved = InsertTwoLinesAtTop(&c, uri);
  REQUIRE_FALSE(moved.is_null());
  const std::string after =
      c.Call("workspace/executeCommand", {{"command", "ttap.server.showTraceSummary"}})["result"]
          .value("markdown", "");
  CHECK(after.find("train.py:14") != std::string::npos);
  CHECK(after.find("train.py:12") == std::string::npos);
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp: plaintext hovers for clients that prefer them; server command ids of its own",
          "[lsp][e2e]") {
  std::string root = StallWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  json params = InitParams(root);
  params["capabilities"]["textDocument"]["hover"]["contentFormat"] = {"plaintext", "markdown"};
  auto init = c.Call("initialize", params);
  // vscode-languageclient registers each listed id as an editor command: they must not be the
  // extension's own (ttap.rescan, ttap.showTraceSummary), or activation fails.
  const json ids = init["result"]["capabilities"]["executeCommandProvider"]["commands"];
  CHECK(ids == json({"ttap.server.rescan", "ttap.server.showTraceSummary"}));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  auto hover = OpenAndHover(&c, "file://" + root + "/train.py", kTrainPy, 11, 2);
  REQUIRE(hover["result"].is_object());
  CHECK(hover["result"]["contents"]["kind"] == "plaintext");
  const std::string text = hover["result"]["contents"]["value"];
  CHECK(text.find("TTA001 dataloader-stall") != std::string::npos);
  CHECK(text.find("**") == std::string::npos);
  CHECK(text.find('`') == std::string::npos);
  CHECK(text.find("|---") == std::string::npos);
  CHECK(text.find("Docs: http") != std::string::npos);
  // Both the server's ids and the editor-facing ones run.
  for (const char* id : {"ttap.server.showTraceSummary", "ttap.showTraceSummary"}) {
    auto r = c.Call("workspace/executeCommand", {{"command", id}});
    CHECK(r["result"].contains("markdown"));
  }
  c.Notify("exit", nullptr);
}

TEST_CASE(
    "lsp: a broken newest trace whose mtime is ahead of the clock is reported and passed "
    "over within seconds, not when the clock catches up",
    "[lsp][e2e][clock]") {
  const std::string root = WorkspaceWithBrokenNewest();
  const std::string broken = root + "/log/host_1.1800000000000.pt.trace.json";
  // NFS skew / `rsync -t` from a machine an hour ahead.
  struct timespec ahead[2] = {{time(nullptr) + 3600, 0}, {time(nullptr) + 3600, 0}};
  REQUIRE(utimensat(AT_FDCWD, broken.c_str(), ahead, 0) == 0);
  LspClient c(ttap_test::Binary(), {"--stdio", "--poll-ms=50"});
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  auto warn = c.WaitFor(
      [&](const json& m) {
        return m.value("method", "") == "window/showMessage" && m["params"]["type"] == 2;
      },
      15000);
  REQUIRE_FALSE(warn.is_null());
  CHECK(warn["params"]["message"].get<std::string>().find(broken) != std::string::npos);
  ExpectStallDiagnostic(&c, root);
  c.Notify("exit", nullptr);
}

TEST_CASE(
    "lsp: hundreds of JSON files that match the trace glob but are no traces raise a few "
    "popups, and the real trace is shown",
    "[lsp][e2e][unreadable]") {
  std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  mkdir((root + "/log").c_str(), 0755);
  mkdir((root + "/configs").c_str(), 0755);
  const std::string good = root + "/log/host_1.1700000000000.pt.trace.json";
  WriteOrFail(good, ttap_test::StallTrace());
  struct timespec old_times[2] = {{1700000000, 0}, {1700000000, 0}};
  REQUIRE(utimensat(AT_FDCWD, good.c_str(), old_times, 0) == 0);
  // Newer than the trace: 300 JSON files named like traces (a config or metrics dump).
  for (int i = 0; i < 300; ++i) {
    WriteOrFail(root + "/configs/run_" + std::to_string(i) + "_trace.json",
                "{\"lr\": 0.1, \"note\": \"not a trace\"}");
  }
  struct timespec past[2] = {{time(nullptr) - 60, 0}, {time(nullptr) - 60, 0}};
  for (int i = 0; i < 300; ++i) {
    const std::string f = root + "/configs/run_" + std::to_string(i) + "_trace.json";
    REQUIRE(utimensat(AT_FDCWD, f.c_str(), past, 0) == 0);
  }
  LspClient c(ttap_test::Binary(), {"--stdio", "--poll-ms=50"}, /*quiet_stderr=*/true);
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  size_t popups = 0;
  for (const json& m : c.inbox()) {
    if (m.value("method", "") == "window/showMessage" && m["params"]["type"] == 2) ++popups;
  }
  CHECK(popups <= 3);
  c.Notify("exit", nullptr);
}

namespace {
// Waits for train.py's diagnostics to include |code|.
bool ShowsCode(LspClient* c, const std::string& root, const std::string& code, int timeout_ms) {
  const std::string uri = "file://" + root + "/train.py";
  auto pub = c->WaitFor(
      [&](const json& m) {
        if (m.value("method", "") != "textDocument/publishDiagnostics" || m["params"]["uri"] != uri)
          return false;
        for (const auto& d : m["params"]["diagnostics"]) {
          if (d.value("code", "") == code) return true;
        }
        return false;
      },
      timeout_ms);
  return !pub.is_null();
}
}  // namespace

TEST_CASE("lsp: a run link re-pointed with ln -sfn shows the new run's trace",
          "[lsp][e2e][relink]") {
  const std::string elsewhere = ttap_test::MakeTempDir();
  mkdir((elsewhere + "/runA").c_str(), 0755);
  mkdir((elsewhere + "/runB").c_str(), 0755);
  WriteOrFail(elsewhere + "/runA/host_1.1700000000000.pt.trace.json", ttap_test::StallTrace());
  const std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  REQUIRE(symlink((elsewhere + "/runA").c_str(), (root + "/log").c_str()) == 0);
  LspClient c(ttap_test::Binary(), {"--stdio", "--poll-ms=50"}, /*quiet_stderr=*/true);
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  WriteOrFail(elsewhere + "/runB/host_1.1800000000000.pt.trace.json",
              ttap_test::StallTraceWithTwoFp32Kernels());
  // What `ln -sfn runB log` does: a new link renamed over the old one.
  REQUIRE(symlink((elsewhere + "/runB").c_str(), (root + "/log.new").c_str()) == 0);
  REQUIRE(rename((root + "/log.new").c_str(), (root + "/log").c_str()) == 0);
  CHECK(ShowsCode(&c, root, "TTA009", 15000));
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp: a workspace root deleted and made again shows the traces written there",
          "[lsp][e2e][relink]") {
  const std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  WriteOrFail(root + "/host_1.1700000000000.pt.trace.json", ttap_test::StallTrace());
  LspClient c(ttap_test::Binary(), {"--stdio", "--poll-ms=50"}, /*quiet_stderr=*/true);
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  REQUIRE(system(("rm -rf '" + root + "'").c_str()) == 0);
  c.WaitFor([](const json&) { return false; }, 500);
  REQUIRE(mkdir(root.c_str(), 0755) == 0);
  WriteOrFail(root + "/train.py", kTrainPy);
  WriteOrFail(root + "/host_1.1800000000000.pt.trace.json",
              ttap_test::StallTraceWithTwoFp32Kernels());
  CHECK(ShowsCode(&c, root, "TTA009", 15000));
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp: the status counts what the Problems view shows; links only to files that exist",
          "[lsp][e2e]") {
  // The DataLoader frame as the recording machine named it: an absolute path not on this one.
  std::string trace = ttap_test::StallTrace();
  const std::string rel = "torch/utils/data/dataloader.py(630)";
  const std::string gone =
      "/nonexistent-recorder/site-packages/torch/utils/data/dataloader.py(630)";
  for (size_t at = trace.find(rel); at != std::string::npos; at = trace.find(rel, at + gone.size()))
    trace.replace(at, rel.size(), gone);
  const std::string root = StallWorkspace(trace);
  LspClient c(ttap_test::Binary(), {"--stdio"});
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  const std::string uri = "file://" + root + "/train.py";
  auto pub = c.WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
  });
  REQUIRE_FALSE(pub.is_null());
  int shown = 0;
  for (const json& diag : pub["params"]["diagnostics"]) {
    shown += diag["severity"].get<int>() < 4;
    for (const json& rel_info : diag.value("relatedInformation", json::array())) {
      CHECK(rel_info["location"]["uri"].get<std::string>().find("nonexistent-recorder") ==
            std::string::npos);
    }
  }
  auto status = c.WaitFor([](const json& m) {
    return m.value("method", "") == "ttap/status" && m["params"]["state"] == "ready";
  });
  REQUIRE_FALSE(status.is_null());
  CHECK(status["params"]["findings"].get<int>() == shown);
  CHECK(status["params"]["findings_total"].get<int>() >= shown);
  // The missing file is in the hover, as text.
  auto hover = OpenAndHover(&c, uri, kTrainPy, 11, 2);
  REQUIRE(hover["result"].is_object());
  const std::string md = hover["result"]["contents"]["value"];
  CHECK(md.find("/nonexistent-recorder/site-packages/torch/utils/data/dataloader.py:630") !=
        std::string::npos);
  c.Call("shutdown", nullptr);
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp and ttap scan place a finding alike on a script edited since the trace",
          "[lsp][e2e][mapping]") {
  // The StallTrace's frames name train.py line 12, the DataLoader loop when it was recorded. The
  // script changed afterwards: line 12 is a print and no loop is left to re-anchor to, so the
  // location is stale, for `ttap scan` and the editor alike.
  std::string edited = kTrainPy;
  edited.replace(edited.find("for batch in loader:\n    loss = model(batch)\n"),
                 std::string("for batch in loader:\n    loss = model(batch)\n").size(),
                 "print(model)\nloss = model(next(ds))\n");
  const std::string root = ttap_test::MakeTempDir();
  REQUIRE(ttap_test::WriteFile(root + "/train.py", edited));
  mkdir((root + "/log").c_str(), 0755);
  const std::string trace = root + "/log/host_1.1700000000000.pt.trace.json";
  REQUIRE(ttap_test::WriteFile(trace, ttap_test::StallTrace()));
  struct timespec recorded[2] = {{1700000000, 0}, {1700000000, 0}};  // before the edit
  REQUIRE(utimensat(AT_FDCWD, trace.c_str(), recorded, 0) == 0);

  auto scan = ttap_test::RunTtap("scan --no-model --format json --workspace '" + root + "' '" +
                                 trace + "'");
  const json report = json::parse(scan.out);
  json scanned;
  for (const json& f : report["findings"]) {
    if (f["code"] == "TTA001") scanned = f;
  }
  REQUIRE(scanned.is_object());
  CHECK(scanned["stale"] == true);

  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  InitializeRulesOnly(&c, root);
  const std::string uri = "file://" + root + "/train.py";
  auto pub = c.WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" &&
           m["params"]["uri"] == uri && !m["params"]["diagnostics"].empty();
  });
  REQUIRE_FALSE(pub.is_null());
  json shown;
  for (const json& d : pub["params"]["diagnostics"]) {
    if (d["code"] == "TTA001") shown = d;
  }
  REQUIRE(shown.is_object());
  CHECK(shown["range"]["start"]["line"].get<int>() + 1 == scanned["line"].get<int>());
  CHECK(shown["message"].get<std::string>().find("source changed since the trace") !=
        std::string::npos);
  c.Notify("exit", nullptr);
}

TEST_CASE(
    "lsp: a rank of a job: the late rank gets TTA018 on its cause, a waiting rank's "
    "collective hover says whose wait it is",
    "[lsp][e2e][job]") {
  const std::string root = ttap_test::MakeTempDir();
  REQUIRE(ttap_test::WriteFile(root + "/train.py", ttap_test::kJobTrainPy));
  mkdir((root + "/log").c_str(), 0755);
  for (int rank = 0; rank < 3; ++rank) {
    REQUIRE(ttap_test::WriteFile(root + "/log/host.rank" + std::to_string(rank) + ".pt.trace.json",
                                 ttap_test::JobRankTrace(rank)));
  }
  const std::string uri = "file://" + root + "/train.py";
  auto session = [&](int rank) {
    auto c = std::make_unique<LspClient>(ttap_test::Binary(), std::vector<std::string>{"--stdio"},
                                         /*quiet_stderr=*/true);
    json params = InitParams(root);
    params["initializationOptions"]["model"] = {{"enabled", false}};
    params["initializationOptions"]["rank"] = rank;
    c->Call("initialize", params);
    c->Notify("initialized", json::object());
    return c;
  };
  auto diagnostics = [&](LspClient* c) {
    auto pub = c->WaitFor([&](const json& m) {
      return m.value("method", "") == "textDocument/publishDiagnostics" &&
             m["params"]["uri"] == uri && !m["params"]["diagnostics"].empty();
    });
    REQUIRE_FALSE(pub.is_null());
    return pub["params"]["diagnostics"];
  };
  {  // Rank 1 loads its batches on the main thread: the job waits for it.
    auto c = session(1);
    json late;
    for (const json& d : diagnostics(c.get())) {
      if (d["code"] == "TTA018") late = d;
    }
    REQUIRE(late.is_object());
    CHECK(late["range"]["start"]["line"] == 7);  // `for batch in loader:`, its DataLoader
    CHECK(late["message"].get<std::string>().find(
              "the other ranks of the job wait for this one (rank 1)") != std::string::npos);
    c->Notify("exit", nullptr);
  }
  {  // Rank 0 waits in the all_reduce: its exposed communication is rank 1's wait.
    auto c = session(0);
    bool comm = false;
    for (const json& d : diagnostics(c.get())) {
      CHECK(d["code"] != "TTA018");
      comm = comm || (d["code"] == "TTA011" && d["range"]["start"]["line"] == 9);
    }
    REQUIRE(comm);
    auto hover = OpenAndHover(c.get(), uri, ttap_test::kJobTrainPy, 9, 6);
    REQUIRE(hover["result"].is_object());
    const std::string md = hover["result"]["contents"]["value"];
    CHECK(md.find("At the collectives this rank waits 5.0 ms/step for rank 1") !=
          std::string::npos);
    c->Notify("exit", nullptr);
  }
}

TEST_CASE("lsp hovers and ttap scan's SARIF and Markdown explain a finding in the same words",
          "[lsp][e2e][sarif]") {
  // One explanation, computed by the core (server/core/explain.h), rendered by both front-ends.
  const std::string root = StallWorkspace();
  const std::string trace = root + "/log/host_1.1700000000000.pt.trace.json";
  auto sarif_run = ttap_test::RunTtap("scan --no-model --format sarif --workspace '" + root +
                                      "' '" + trace + "'");
  const json sarif = json::parse(sarif_run.out);
  json result;
  for (const json& r : sarif["runs"][0]["results"]) {
    if (r["ruleId"] == "TTA001") result = r;
  }
  REQUIRE(result.is_object());
  const std::string text = result["message"]["text"];
  const std::string sarif_md = result["message"]["markdown"];
  auto md_run = ttap_test::RunTtap("scan --no-model --format markdown --workspace '" + root +
                                   "' '" + trace + "'");

  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  InitializeRulesOnly(&c, root);
  ExpectStallDiagnostic(&c, root);
  auto hover = OpenAndHover(&c, "file://" + root + "/train.py", kTrainPy, 11, 2);
  REQUIRE(hover["result"].is_object());
  const std::string hover_md = hover["result"]["contents"]["value"];
  CHECK(hover_md.find("TTA001 dataloader-stall") != std::string::npos);
  // SARIF: the diagnostic's sentence, then exactly the hover.
  CHECK(sarif_md == text + "\n\n" + hover_md);
  // Markdown: the same explanation under the finding's heading.
  CHECK(md_run.out.find("### TTA001 dataloader-stall at `train.py:12`\n\n" + text + "\n\n" +
                        hover_md) != std::string::npos);
  // The trace summary's findings list is the core's too.
  auto summary = c.Call("workspace/executeCommand", {{"command", "ttap.server.showTraceSummary"}});
  const std::string summary_md = summary["result"].is_string()
                                     ? summary["result"].get<std::string>()
                                     : summary["result"].dump();
  CHECK(summary_md.find("- TTA001 dataloader-stall (train.py:12): " + text) != std::string::npos);
  CHECK(md_run.out.find("- TTA001 dataloader-stall (train.py:12): " + text) != std::string::npos);
  c.Notify("exit", nullptr);
}

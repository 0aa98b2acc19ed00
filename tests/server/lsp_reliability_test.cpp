// Reliability of `ttap lsp` under busy and hostile clients (issue 24): requests queued behind
// slow work can be cancelled (-32800), the server exits when its client is gone (end of stream,
// or initialize's processId no longer running), incremental edits re-parse to the same
// diagnostics as a fresh open, and mutated params of every method (URIs, positions, ranges,
// ids, settings) keep every session alive over stdio and --listen.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "fixture_traces.h"
#include "lsp_client.h"
#include "lsp_fixtures.h"
#include "test_support.h"

using ttap_test::ExpectStallDiagnostic;
using ttap_test::InitParams;
using ttap_test::json;
using ttap_test::kTrainPy;
using ttap_test::LspClient;
using ttap_test::StallWorkspace;

namespace {

std::string Frame(const json& msg) {
  const std::string body = msg.dump();
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Initializes a session on |root|, waits for the StallTrace's diagnostic, opens train.py (as
// kTrainPy, version 1) and returns its URI.
std::string OpenTrainPy(LspClient* c, const std::string& root) {
  c->Call("initialize", InitParams(root));
  c->Notify("initialized", json::object());
  ExpectStallDiagnostic(c, root);
  const std::string uri = "file://" + root + "/train.py";
  ttap_test::OpenDocument(c, uri, kTrainPy);
  return uri;
}

json ChangeAt(const std::string& uri, int version, int line, int character,
              const std::string& text) {
  json pos = {{"line", line}, {"character", character}};
  return {{"textDocument", {{"uri", uri}, {"version", version}}},
          {"contentChanges", {{{"range", {{"start", pos}, {"end", pos}}}, {"text", text}}}}};
}

// The diagnostics published for |uri| at |version|.
json DiagnosticsAt(LspClient* c, const std::string& uri, int version) {
  auto pub = c->WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" &&
           m["params"]["uri"] == uri && m["params"].value("version", -1) == version;
  });
  REQUIRE_FALSE(pub.is_null());
  return pub["params"]["diagnostics"];
}

// A workspace with the bundled example (train.py and its 1 MB trace, worker0.pt.trace.json.gz):
// large enough that a request or a deletion lands while it is analysed. Returns its root.
std::string ExampleWorkspace() {
  const std::string root = ttap_test::MakeTempDir();
  const std::string example = ttap_test::SourceDir() + "/examples/resnet50_num_workers_0";
  for (const char* name : {"train.py", "worker0.pt.trace.json.gz"}) {
    REQUIRE(ttap_test::WriteFile(root + "/" + name, ttap_test::ReadFile(example + "/" + name)));
  }
  return root;
}

// The next $/progress notification of |kind| (begin, report, end); null json on timeout.
json NextProgress(LspClient* c, const std::string& kind) {
  return c->WaitFor([&](const json& m) {
    return m.value("method", "") == "$/progress" && m["params"]["value"].value("kind", "") == kind;
  });
}

}  // namespace

TEST_CASE("lsp: $/cancelRequest answers a request still queued with -32800, once",
          "[lsp][e2e][reliability]") {
  std::string root = StallWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  c.Call("initialize", InitParams(root));
  // In one write: the analysis starts, `$/sync` holds the request thread until it is published,
  // and the hover behind it is cancelled while it waits. The reader handles the cancellation
  // at once; it used to ignore it.
  c.SendRaw(Frame({{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}}) +
            Frame({{"jsonrpc", "2.0"}, {"id", 900}, {"method", "$/sync"}, {"params", nullptr}}) +
            Frame({{"jsonrpc", "2.0"},
                   {"id", 901},
                   {"method", "textDocument/hover"},
                   {"params",
                    {{"textDocument", {{"uri", "file://" + root + "/train.py"}}},
                     {"position", {{"line", 11}, {"character", 2}}}}}}) +
            Frame({{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", 901}}}}));
  auto cancelled = c.Response(901);
  REQUIRE(cancelled.contains("error"));
  CHECK(cancelled["error"]["code"] == -32800);
  CHECK(c.Response(900).contains("result"));
  // Cancelling what was already answered, or was never asked, changes nothing.
  c.Notify("$/cancelRequest", {{"id", 900}});
  c.Notify("$/cancelRequest", {{"id", "nope"}});
  auto again = c.Call("textDocument/hover", {{"textDocument", {{"uri", "file:///x.py"}}},
                                             {"position", {{"line", 0}, {"character", 0}}}});
  CHECK(again.contains("result"));
  c.Call("shutdown", nullptr);
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
  // Exactly one reply per id.
  for (const json& m : c.inbox()) CHECK_FALSE((m.contains("id") && m["id"] == 901));
}

TEST_CASE("lsp: the server exits when its client is gone", "[lsp][e2e][reliability]") {
  SECTION("end of stream while requests are in flight") {
    std::string root = StallWorkspace();
    LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
    c.Call("initialize", InitParams(root));
    c.Notify("initialized", json::object());
    for (int i = 0; i < 20; ++i)
      c.Request("workspace/executeCommand", {{"command", "ttap.showTraceSummary"}});
    c.CloseInput();
    CHECK(c.WaitExit(10000) == 1);  // no shutdown came first
  }
  SECTION("initialize's processId is no longer running, the pipe still open") {
    const pid_t gone = fork();
    if (gone == 0) _exit(0);
    REQUIRE(gone > 0);
    waitpid(gone, nullptr, 0);
    LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
    json params = InitParams(ttap_test::MakeTempDir());
    params["processId"] = gone;
    REQUIRE(c.Call("initialize", params).contains("result"));
    CHECK(c.WaitExit(8000) == 1);
  }
  SECTION("a running client process keeps it up") {
    LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
    json params = InitParams(ttap_test::MakeTempDir());
    params["processId"] = getpid();
    REQUIRE(c.Call("initialize", params).contains("result"));
    usleep(2500 * 1000);
    CHECK(c.alive());
  }
}

TEST_CASE("lsp: incremental edits re-parse to the diagnostics a fresh open gives",
          "[lsp][e2e][reliability]") {
  std::string root = StallWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  const std::string uri = OpenTrainPy(&c, root);
  DiagnosticsAt(&c, uri, 1);
  // Typing: lines above the loop, characters inside it, a statement broken and mended, a
  // non-ASCII comment; each edit is applied to the previous buffer (and its parse).
  std::string text = kTrainPy;
  int version = 1;
  auto edit = [&](int line, int character, const std::string& insert) {
    c.Notify("textDocument/didChange", ChangeAt(uri, ++version, line, character, insert));
    // Mirror the edit here (ASCII columns only) for the fresh open below.
    size_t at = 0;
    for (int l = 0; l < line; ++l) at = text.find('\n', at) + 1;
    text.insert(at + character, insert);
  };
  edit(0, 0, "# header\n");
  edit(3, 0, "import os\n");
  for (const char* ch :
       {"d", "e", "f", " ", "g", "(", ")", ":", "\n", " ", " ", "p", "a", "s", "s", "\n"})
    edit(5, std::string(ch) == "\n" ? 0 : 0, ch);
  edit(2, 0, "x = (\n");  // breaks the syntax...
  edit(3, 0, ")\n");      // ...and mends it
  edit(1, 0, "# ünïcode\n");
  const json incremental = DiagnosticsAt(&c, uri, version);
  REQUIRE_FALSE(incremental.empty());
  // The same text opened afresh.
  c.Notify("textDocument/didClose", {{"textDocument", {{"uri", uri}}}});
  ttap_test::OpenDocument(&c, uri, text, 1000);
  const json fresh = DiagnosticsAt(&c, uri, 1000);
  REQUIRE(fresh.size() == incremental.size());
  for (size_t i = 0; i < fresh.size(); ++i) {
    CHECK(fresh[i]["range"] == incremental[i]["range"]);
    CHECK(fresh[i]["code"] == incremental[i]["code"]);
  }
  c.Notify("exit", nullptr);
}

namespace {

// A random JSON value of any type, with the values that have broken servers before: malformed
// percent-escapes, relative and host URIs, negative, huge and fractional numbers.
json RandomValue(std::mt19937* rng, int depth = 0) {
  static const std::vector<json> atoms = {nullptr,
                                          true,
                                          false,
                                          0,
                                          -1,
                                          1,
                                          2147483648LL,
                                          -9223372036854775807LL,
                                          1e300,
                                          0.5,
                                          "",
                                          "file:///tmp/50%off.py",
                                          "file:///%G1",
                                          "file://torch/x.py",
                                          "file:///",
                                          "relative.py",
                                          "file:///tmp/x%",
                                          std::string(1000, 'a'),
                                          "\u00e9\U0001d6fc",
                                          "ttap.showTraceSummary",
                                          "ttap.rescan",
                                          json::array(),
                                          json::object()};
  const unsigned pick = (*rng)() % 10;
  if (depth < 2 && pick == 0) {
    json a = json::array();
    for (unsigned i = (*rng)() % 3; i > 0; --i) a.push_back(RandomValue(rng, depth + 1));
    return a;
  }
  if (depth < 2 && pick == 1) {
    json o = json::object();
    for (const char* k : {"uri", "line", "character", "start", "end", "text", "id"})
      if ((*rng)() % 3 == 0) o[k] = RandomValue(rng, depth + 1);
    return o;
  }
  return atoms[(*rng)() % atoms.size()];
}

// Replaces one value somewhere in |j| (any depth) by a random one, or deletes it.
void Mutate(json* j, std::mt19937* rng) {
  if (!j->is_structured() || j->empty() || (*rng)() % 4 == 0) {
    *j = RandomValue(rng);
    return;
  }
  if (j->is_array()) return Mutate(&(*j)[(*rng)() % j->size()], rng);
  auto it = j->begin();
  std::advance(it, (*rng)() % j->size());
  if ((*rng)() % 6 == 0) {
    j->erase(it.key());
    return;
  }
  Mutate(&it.value(), rng);
}

// Every method the server handles, with valid params to start from.
std::vector<json> Templates(const std::string& root) {
  const std::string uri = "file://" + root + "/train.py";
  const json pos = {{"line", 11}, {"character", 2}};
  const json range = {{"start", pos}, {"end", pos}};
  const json doc = {{"uri", uri}};
  auto request = [](const char* method, json params) {
    return json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
  };
  auto note = [](const char* method, json params) {
    return json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}};
  };
  return {
      request("textDocument/hover", {{"textDocument", doc}, {"position", pos}}),
      request("textDocument/codeAction",
              {{"textDocument", doc},
               {"range", range},
               {"context", {{"diagnostics", json::array()}, {"only", {"quickfix"}}}}}),
      request("codeAction/resolve",
              {{"title", "t"}, {"data", {{"uri", uri}, {"finding", 0}, {"title", "t"}}}}),
      request("textDocument/codeLens", {{"textDocument", doc}}),
      request("textDocument/diagnostic", {{"textDocument", doc}}),
      request("workspace/diagnostic", {{"previousResultIds", json::array()}}),
      request("workspace/executeCommand", {{"command", "ttap.showTraceSummary"}}),
      note("textDocument/didOpen",
           {{"textDocument",
             {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", kTrainPy}}}}),
      note("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", 2}}},
                                      {"contentChanges", {{{"range", range}, {"text", "x\n"}}}}}),
      note("textDocument/didClose", {{"textDocument", doc}}),
      note("workspace/didChangeWatchedFiles", {{"changes", {{{"uri", uri}, {"type", 2}}}}}),
      note("workspace/didChangeConfiguration",
           {{"settings", {{"ttap", {{"rank", 0}, {"traceGlobs", {"**/*.json"}}}}}}}),
      note("workspace/didChangeWorkspaceFolders",
           {{"event", {{"added", json::array()}, {"removed", json::array()}}}}),
      note("$/cancelRequest", {{"id", 1}}),
      note("$/setTrace", {{"value", "off"}}),
  };
}

// Sends |count| mutated messages of every method, then checks the session still answers.
void FuzzSession(LspClient* c, const std::string& root, unsigned seed, int count) {
  std::mt19937 rng(seed);
  const std::vector<json> templates = Templates(root);
  for (int i = 0; i < count; ++i) {
    json msg = templates[rng() % templates.size()];
    if (msg.contains("id")) msg["id"] = 10000 + i;
    for (int m = 1 + static_cast<int>(rng() % 3); m > 0; --m) Mutate(&msg["params"], &rng);
    if (rng() % 20 == 0) Mutate(&msg, &rng);  // now and then the envelope itself
    c->SendRaw(Frame(msg));
    if (i % 100 == 0) c->Drain();
  }
  // Still answering, and every request above got a reply (no -32603 "sent no reply" is needed:
  // the replies were read and dropped by Drain; here the last word).
  auto r = c->Call("textDocument/hover",
                   {{"textDocument", {{"uri", "file:///nothing.py"}}},
                    {"position", {{"line", 0}, {"character", 0}}}},
                   20000);
  CHECK((r.contains("result") || r.contains("error")));
}

}  // namespace

TEST_CASE("lsp: thousands of mutated params of every method keep the session alive (stdio)",
          "[lsp][fuzz][reliability]") {
  std::string root = StallWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"},
              /*quiet_stderr=*/getenv("TTAP_TEST_STDERR") == nullptr);
  REQUIRE(c.Call("initialize", InitParams(root)).contains("result"));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  FuzzSession(&c, root, 7, 3000);
  CHECK(c.alive());
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE("lsp: params that do not read are answered InvalidParams once, naming the field",
          "[lsp][reliability]") {
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  REQUIRE(c.Call("initialize", InitParams(ttap_test::MakeTempDir())).contains("result"));
  c.Notify("initialized", json::object());
  const json doc = {{"uri", "file:///nothing.py"}};
  const json pos = {{"line", 0}, {"character", 0}};
  // Before the binder, the first two were tolerated (a context that is no object was ignored, a
  // negative line passed through); now every handler reads its params before it runs.
  const std::vector<std::pair<std::string, json>> cases = {
      {"textDocument/codeAction",
       {{"textDocument", doc}, {"range", {{"start", pos}, {"end", pos}}}, {"context", 5}}},
      {"textDocument/hover",
       {{"textDocument", doc}, {"position", {{"line", -1}, {"character", 0}}}}},
      {"codeAction/resolve", {{"title", "t"}, {"data", {{"uri", "u"}, {"finding", "x"}}}}},
      {"workspace/executeCommand", json::object()},
      {"textDocument/codeLens", {{"textDocument", {{"uri", 3}}}}}};
  const std::vector<std::string> messages = {
      "textDocument/codeAction: params.context: expected an object",
      "textDocument/hover: params.position.line: must not be negative",
      "codeAction/resolve: params.data.finding: expected a non-negative integer",
      "workspace/executeCommand: params.command: missing",
      "textDocument/codeLens: params.textDocument.uri: expected a string"};
  std::vector<int> ids;
  for (const auto& [method, params] : cases) ids.push_back(c.Request(method, params));
  for (size_t i = 0; i < ids.size(); ++i) {
    json r = c.Response(ids[i]);
    CHECK(r["error"]["code"] == -32602);
    CHECK(r["error"]["message"] == messages[i]);
  }
  // Exactly one reply each: the session goes on, and no second reply to any of them came.
  CHECK(c.Call("$/sync", nullptr).contains("result"));
  for (int id : ids) CHECK(c.Response(id, 200).is_null());
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE("lsp: mutated params over --listen keep every session and the server alive",
          "[lsp][fuzz][reliability][tcp]") {
  const int port = 20000 + ((getpid() + 7919) % 20000);
  LspClient server(ttap_test::Binary(), {"--listen", "127.0.0.1:" + std::to_string(port)},
                   /*quiet_stderr=*/true);
  auto connect = [&]() { return ttap_test::ConnectLoopback(port); };
  std::string root = StallWorkspace();
  // Three sessions at once: one is fuzzed, one idles, one disconnects mid-stream.
  int idle_fd = connect();
  REQUIRE(idle_fd >= 0);
  LspClient idle(idle_fd, -1);
  REQUIRE(idle.Call("initialize", InitParams(root)).contains("result"));
  {
    int fd = connect();
    REQUIRE(fd >= 0);
    LspClient dropped(fd, -1);
    REQUIRE(dropped.Call("initialize", InitParams(root)).contains("result"));
    dropped.Notify("initialized", json::object());
    dropped.Request("workspace/executeCommand", {{"command", "ttap.showTraceSummary"}});
  }  // closed with a request in flight
  for (unsigned seed : {11u, 12u}) {
    int fd = connect();
    REQUIRE(fd >= 0);
    LspClient c(fd, -1);
    REQUIRE(c.Call("initialize", InitParams(root)).contains("result"));
    c.Notify("initialized", json::object());
    FuzzSession(&c, root, seed, 1500);
    c.Call("shutdown", nullptr);
    c.Notify("exit", nullptr);
  }
  auto r = idle.Call("textDocument/hover", {{"textDocument", {{"uri", "file:///nothing.py"}}},
                                            {"position", {{"line", 0}, {"character", 0}}}});
  CHECK(r.contains("result"));
  CHECK(server.alive());
}

TEST_CASE("lsp: without client watchers, a trace in a folder made after start-up is shown",
          "[lsp][e2e][reliability][watch]") {
  // The tree is watched (inotify), not walked every poll; the new folders are watched as they
  // come, and the trace is shown once its size has settled.
  std::string root = ttap_test::MakeTempDir();
  REQUIRE(ttap_test::WriteFile(root + "/train.py", kTrainPy));
  LspClient c(ttap_test::Binary(), {"--stdio", "--poll-ms=50"}, /*quiet_stderr=*/true);
  c.Call("initialize", InitParams(root));
  c.Notify("initialized", json::object());
  auto none = c.WaitFor([](const json& m) {
    return m.value("method", "") == "ttap/status" && m["params"]["state"] == "no-trace";
  });
  REQUIRE_FALSE(none.is_null());
  usleep(300 * 1000);  // settled: the watch thread now sleeps on events
  mkdir((root + "/log").c_str(), 0755);
  mkdir((root + "/log/run1").c_str(), 0755);
  const std::string trace = root + "/log/run1/host_1.1700000000000.pt.trace.json";
  REQUIRE(ttap_test::WriteFile(trace + ".part", ttap_test::StallTrace()));
  REQUIRE(rename((trace + ".part").c_str(), trace.c_str()) == 0);
  ExpectStallDiagnostic(&c, root);
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp: a trace rewritten in place is waited for; an older trace never flashes",
          "[lsp][e2e][reliability]") {
  // `prof.export_chrome_trace("b.pt.trace.json")` rewrites the file: the editor's watcher
  // reports it while it is half written. The server used to fail on it, fall back to the older
  // trace and publish that one's findings before the new ones.
  std::string root = ttap_test::MakeTempDir();
  REQUIRE(ttap_test::WriteFile(root + "/train.py", kTrainPy));
  mkdir((root + "/log").c_str(), 0755);
  const std::string older = root + "/log/a.pt.trace.json";
  const std::string newer = root + "/log/b.pt.trace.json";
  const std::string content = ttap_test::StallTrace();
  REQUIRE(ttap_test::WriteFile(older, content));
  REQUIRE(ttap_test::WriteFile(newer, content));
  struct timeval past[2] = {{1700000000, 0}, {1700000000, 0}};
  REQUIRE(utimes(older.c_str(), past) == 0);
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  json params = InitParams(root);
  params["capabilities"]["workspace"] = {
      {"didChangeWatchedFiles", {{"dynamicRegistration", true}}}};
  c.Call("initialize", params);
  c.Notify("initialized", json::object());
  auto ready = [&](const std::string& trace) {
    return c.WaitFor([&](const json& m) {
      return m.value("method", "") == "ttap/status" && m["params"]["state"] == "ready" &&
             m["params"].value("trace", "") == trace;
    });
  };
  REQUIRE_FALSE(ready(newer).is_null());
  c.AnswerServerRequests();
  c.Drain();
  const json changed = {{"changes", {{{"uri", "file://" + newer}, {"type", 2}}}}};
  REQUIRE(ttap_test::WriteFile(newer, content.substr(0, content.size() / 2)));
  c.Notify("workspace/didChangeWatchedFiles", changed);
  usleep(1200 * 1000);
  REQUIRE(ttap_test::WriteFile(newer, content));
  c.Notify("workspace/didChangeWatchedFiles", changed);
  REQUIRE_FALSE(ready(newer).is_null());
  for (const json& m : c.inbox()) {
    INFO(m.dump());
    if (m.value("method", "") == "ttap/status") {
      CHECK(m["params"].value("trace", "") != older);
      CHECK(m["params"].value("detail", "") != older);
    }
    if (m.value("method", "") == "window/showMessage")
      CHECK(m["params"]["message"].get<std::string>().find("cannot read") == std::string::npos);
  }
  c.Notify("exit", nullptr);
}

TEST_CASE("lsp: a suppression typed in the buffer applies at once; the code action writes one",
          "[lsp][e2e][suppress]") {
  std::string root = StallWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  const std::string uri = OpenTrainPy(&c, root);
  auto codes = [](const json& diags) {
    std::set<std::string> out;
    for (const json& d : diags) out.insert(d["code"].get<std::string>());
    return out;
  };
  REQUIRE(codes(DiagnosticsAt(&c, uri, 1)).count("TTA001"));
  // The code action offers the suppression; its edit is what the user would get.
  auto actions = c.Call(
      "textDocument/codeAction",
      {{"textDocument", {{"uri", uri}}},
       {"range",
        {{"start", {{"line", 11}, {"character", 0}}}, {"end", {{"line", 11}, {"character", 3}}}}},
       {"context", {{"diagnostics", json::array()}}}});
  json suppress;
  for (const json& a : actions["result"])
    if (a["title"].get<std::string>().rfind("Suppress TTA001 on this line", 0) == 0) suppress = a;
  REQUIRE_FALSE(suppress.is_null());
  const json edit = suppress["edit"]["changes"][uri][0];
  CHECK(edit["newText"] == "  # ttap: ignore[TTA001]");
  CHECK(edit["range"]["start"]["line"] == 11);
  // Typed (not saved): the squiggle goes with this version.
  c.Notify("textDocument/didChange",
           ChangeAt(uri, 2, 11, edit["range"]["start"]["character"], edit["newText"]));
  CHECK_FALSE(codes(DiagnosticsAt(&c, uri, 2)).count("TTA001"));
  auto hover = c.Call("textDocument/hover", {{"textDocument", {{"uri", uri}}},
                                             {"position", {{"line", 11}, {"character", 2}}}});
  CHECK((hover["result"].is_null() || hover["result"]["contents"]["value"].get<std::string>().find(
                                          "TTA001") == std::string::npos));
  // Deleted again: back at once.
  c.Notify("textDocument/didChange", {{"textDocument", {{"uri", uri}, {"version", 3}}},
                                      {"contentChanges", {{{"text", kTrainPy}}}}});
  CHECK(codes(DiagnosticsAt(&c, uri, 3)).count("TTA001"));
  c.Notify("exit", nullptr);
}

TEST_CASE(
    "lsp: a message nested 200,000 deep is refused with a parse error, before and after "
    "initialize, and the session goes on",
    "[lsp][reliability][nesting]") {
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  auto deep = [](size_t n) {
    const std::string body =
        "{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": \"initialize\", "
        "\"params\": " +
        std::string(n, '[') + std::string(n, ']') + "}";
    return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  c.SendRaw(deep(200000));
  auto err = c.WaitFor([](const json& m) { return m.contains("error"); });
  REQUIRE(err.contains("error"));
  CHECK(err["error"]["code"] == -32700);
  CHECK(err["error"]["message"].get<std::string>().find("nested deeper") != std::string::npos);
  // Within the limit, nesting parses as usual (the params are then the wrong shape).
  c.SendRaw(deep(100));
  auto shallow = c.WaitFor([](const json& m) { return m.value("id", json()) == 9; });
  REQUIRE_FALSE(shallow.is_null());
  std::string root = ttap_test::MakeTempDir();
  REQUIRE(c.Call("initialize", InitParams(root)).contains("result"));
  c.SendRaw(deep(150000));
  CHECK(c.WaitFor([](const json& m) {
           return m.contains("error") && m["error"]["code"] == -32700;
         }).contains("error"));
  CHECK(c.alive());
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE(
    "lsp: settings from the editor are bounded as the config file's: ttap.windows 2e9 "
    "is refused with a warning, the session goes on with the last good value",
    "[lsp][reliability][settings]") {
  std::string root = StallWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  REQUIRE(c.Call("initialize", InitParams(root)).contains("result"));
  c.Notify("initialized", json::object());
  ExpectStallDiagnostic(&c, root);
  for (json bad : {json(2000000000), json(1000000), json(0), json(-5), json("many")}) {
    INFO(bad.dump());
    c.Notify("workspace/didChangeConfiguration",
             {{"settings", {{"ttap", {{"windows", bad}, {"thresholds", {{"x", "y"}}}}}}}});
    auto warn = c.WaitFor([](const json& m) {
      return m.value("method", "") == "window/showMessage" &&
             m["params"]["message"].get<std::string>().find("ttap.windows") != std::string::npos;
    });
    REQUIRE_FALSE(warn.is_null());
    CHECK(warn["params"]["type"] == 2);
    CHECK(warn["params"]["message"].get<std::string>().find("thresholds.x") != std::string::npos);
  }
  // The analysis still runs (with the last good settings) and the session answers.
  ExpectStallDiagnostic(&c, root);
  CHECK(c.alive());
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE(
    "lsp: every $/progress begun ends, also when didChangeConfiguration right after "
    "start supersedes the first analysis",
    "[lsp][reliability][progress]") {
  const std::string root = ExampleWorkspace();
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  REQUIRE(c.Call("initialize", InitParams(root)).contains("result"));
  c.Notify("initialized", json::object());
  // As VS Code does: the settings pushed right after start, while the first analysis runs.
  auto begin = NextProgress(&c, "begin");
  REQUIRE_FALSE(begin.is_null());
  c.Notify("workspace/didChangeConfiguration", {{"settings", {{"ttap", {{"windows", 30}}}}}});
  c.Notify("workspace/didChangeConfiguration", {{"settings", {{"ttap", {{"windows", 40}}}}}});
  // Every begin has its end once the analyses settle (20 s at most).
  std::set<std::string> begun = {begin["params"]["token"].dump()}, ended;
  for (int wait = 0; wait < 100; ++wait) {
    c.WaitFor([](const json&) { return false; }, 200);  // reads what has arrived
    ended.clear();
    for (const json& m : c.inbox()) {
      if (m.value("method", "") != "$/progress") continue;
      const std::string token = m["params"]["token"].dump();
      const std::string kind = m["params"]["value"].value("kind", "");
      if (kind == "begin") begun.insert(token);
      if (kind == "end") ended.insert(token);
    }
    if (!begun.empty() && begun == ended) break;
  }
  CHECK_FALSE(begun.empty());
  CHECK(begun == ended);
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE("lsp: a trace deleted while it is analysed leaves no diagnostics behind",
          "[lsp][reliability][deleted]") {
  const std::string root = ExampleWorkspace();
  const std::string trace = root + "/worker0.pt.trace.json.gz";
  LspClient c(ttap_test::Binary(), {"--stdio"}, /*quiet_stderr=*/true);
  REQUIRE(c.Call("initialize", InitParams(root)).contains("result"));
  c.Notify("initialized", json::object());
  // Deleted once it is loaded, while the rules and the mapping run.
  auto loaded = NextProgress(&c, "report");
  REQUIRE_FALSE(loaded.is_null());
  REQUIRE(unlink(trace.c_str()) == 0);
  // The analysis ends, and whatever was published for train.py ends empty.
  auto end = NextProgress(&c, "end");
  REQUIRE_FALSE(end.is_null());
  const std::string uri = "file://" + root + "/train.py";
  json last;
  for (int wait = 0; wait < 15; ++wait) {  // 3 s for a late publish
    auto pub = c.WaitFor(
        [&](const json& m) {
          return m.value("method", "") == "textDocument/publishDiagnostics" &&
                 m["params"]["uri"] == uri;
        },
        200);
    if (!pub.is_null()) last = pub;
  }
  if (!last.is_null()) CHECK(last["params"]["diagnostics"].empty());
  // Deleted is not broken: no "cannot read" warning.
  for (const json& m : c.inbox()) {
    if (m.value("method", "") == "window/showMessage") {
      CHECK(m["params"]["message"].get<std::string>().find("cannot read") == std::string::npos);
    }
  }
  CHECK(c.Call("shutdown", nullptr).contains("result"));
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

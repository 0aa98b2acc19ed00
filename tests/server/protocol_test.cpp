// The typed LSP messages (server/lsp/protocol.h) and the binder (server/lsp/binder.h): round
// trips, the enums' wire values, fields omitted when absent, error messages that name the field,
// lenient client capabilities, and one InvalidParams reply (the handler not run) for bad params.
#include "server/lsp/protocol.h"

#include <catch2/catch.hpp>
#include <string>

#include "server/lsp/binder.h"

namespace {

using namespace ttap::lsp::proto;
using ttap::lsp::Binder;
using ttap::lsp::CancelFlag;

// Reads |j| as T; the error ("" when it read).
template <typename T>
std::string ReadAs(const json& j, T* out) {
  return Binder::Read(j, out);
}

}  // namespace

TEST_CASE("protocol: positions and ranges round trip", "[lsp][protocol]") {
  Range r{{1, 2}, {3, 4}};
  json j = r;
  CHECK(j == json::parse(R"({"start":{"line":1,"character":2},"end":{"line":3,"character":4}})"));
  Range back;
  REQUIRE(ReadAs(j, &back) == "");
  CHECK(back.start.line == 1);
  CHECK(back.start.character == 2);
  CHECK(back.end.line == 3);
  CHECK(back.end.character == 4);
  ttap::SourceRange source = {{5, 6}, {7, 8}};
  CHECK(json(Range::From(source))["end"]["character"] == 8);
}

TEST_CASE("protocol: enums have their wire values", "[lsp][protocol]") {
  CHECK(json(DiagnosticSeverity::kError) == 1);
  CHECK(json(DiagnosticSeverity::kWarning) == 2);
  CHECK(json(DiagnosticSeverity::kInformation) == 3);
  CHECK(json(DiagnosticSeverity::kHint) == 4);
  CHECK(json(DiagnosticTag::kUnnecessary) == 1);
  CHECK(json(MessageType::kError) == 1);
  CHECK(json(MessageType::kInfo) == 3);
  CHECK(json(MessageType::kLog) == 4);
  CHECK(json(MarkupKind::kMarkdown) == "markdown");
  CHECK(json(MarkupKind::kPlainText) == "plaintext");
  CHECK(json(TextDocumentSyncKind::kIncremental) == 2);
  CHECK(kWatchCreate + kWatchDelete == 5);
  FileEvent e;
  REQUIRE(ReadAs(json{{"uri", "file:///a"}, {"type", 3}}, &e) == "");
  CHECK(e.type == FileChangeType::kDeleted);
  CHECK(ReadAs(json{{"uri", "file:///a"}, {"type", 7}}, &e) == "params.type: expected 1 to 3");
}

TEST_CASE("protocol: a diagnostic omits what it does not have", "[lsp][protocol]") {
  Diagnostic d;
  d.range = {{0, 0}, {0, 1}};
  d.message = "m";
  json bare = d;
  CHECK(bare == json::parse(
                    R"({"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},
                        "message":"m"})"));
  d.severity = DiagnosticSeverity::kWarning;
  d.code = "TTA001";
  d.source = "ttap";
  d.codeDescription = CodeDescription{"https://x"};
  d.tags = {DiagnosticTag::kUnnecessary};
  d.relatedInformation = std::vector<DiagnosticRelatedInformation>{{{"file:///a.py", {}}, "r"}};
  d.data = json{{"finding", 3}};
  json full = d;
  CHECK(full["severity"] == 2);
  CHECK(full["code"] == "TTA001");
  CHECK(full["codeDescription"]["href"] == "https://x");
  CHECK(full["tags"] == json::array({1}));
  CHECK(full["relatedInformation"][0]["location"]["uri"] == "file:///a.py");
  CHECK(full["data"]["finding"] == 3);
  Diagnostic back;
  REQUIRE(ReadAs(full, &back) == "");
  CHECK(json(back) == full);
  // Another server's diagnostic in a code action's context: an integer code, a newer tag.
  full["code"] = 42;
  full["tags"] = {1, 9};
  REQUIRE(ReadAs(full, &back) == "");
  CHECK(back.code == "42");
  CHECK(json(back)["tags"] == json::array({1, 9}));
  full["severity"] = 5;
  CHECK(ReadAs(full, &back) == "params.severity: expected 1 to 4");
}

TEST_CASE("protocol: replies are written as the server always wrote them", "[lsp][protocol]") {
  Hover h{{MarkupKind::kMarkdown, "**x**"}, Range{{1, 0}, {1, 4}}};
  CHECK(json(h)["contents"] == json::parse(R"({"kind":"markdown","value":"**x**"})"));
  CHECK(json(h)["range"]["end"]["character"] == 4);
  CodeAction a;
  a.title = "t";
  a.kind = code_action_kind::kQuickFix;
  a.isPreferred = false;
  a.edit = WorkspaceEdit{{{"file:///a.py", {TextEdit{{{0, 0}, {0, 0}}, "x"}}}}};
  json aj = a;
  CHECK(aj["kind"] == "quickfix");
  CHECK(aj["edit"]["changes"]["file:///a.py"][0]["newText"] == "x");
  CHECK_FALSE(aj.contains("diagnostics"));
  CHECK_FALSE(aj.contains("data"));
  CodeLens lens{{}, Command{"title", "ttap.showTraceSummary", std::nullopt}};
  CHECK(json(lens)["command"] ==
        json::parse(R"({"title":"title","command":"ttap.showTraceSummary"})"));
  PublishDiagnosticsParams p{"file:///a.py", std::nullopt, {}};
  CHECK(json(p) == json::parse(R"({"uri":"file:///a.py","diagnostics":[]})"));
  p.version = 7;
  CHECK(json(p)["version"] == 7);
  WorkspaceFullDocumentDiagnosticReport w{"file:///a.py", std::nullopt, {}};
  CHECK(json(w) ==
        json::parse(R"({"uri":"file:///a.py","kind":"full","version":null,"items":[]})"));
  CHECK(json(FullDocumentDiagnosticReport{}) == json::parse(R"({"kind":"full","items":[]})"));
  CHECK(json(ShowMessageParams{MessageType::kWarning, "w"}) ==
        json::parse(R"({"type":2,"message":"w"})"));
}

TEST_CASE("protocol: bad params are named by their path", "[lsp][protocol]") {
  HoverParams hover;
  CHECK(ReadAs(json{{"position", 3}}, &hover) == "params.textDocument: missing");
  CHECK(ReadAs(json{{"textDocument", {{"uri", "file:///a"}}}, {"position", 3}}, &hover) ==
        "params.position: expected an object");
  CHECK(ReadAs(json{{"textDocument", {{"uri", 5}}}, {"position", {{"line", 0}}}}, &hover) ==
        "params.textDocument.uri: expected a string");
  CHECK(ReadAs(json::parse(R"({"textDocument":{"uri":"u"},"position":{"line":0.5,"character":0}})"),
               &hover) == "params.position.line: expected an integer");
  CHECK(ReadAs(json::parse(R"({"textDocument":{"uri":"u"},"position":{"line":2147483648,
                                                                      "character":0}})"),
               &hover) == "params.position.line: out of range");
  CHECK(ReadAs(json::array(), &hover) == "params: expected an object");

  DidChangeTextDocumentParams change;
  const json good = json::parse(R"({"textDocument":{"uri":"u","version":2},"contentChanges":[
      {"text":"all"},
      {"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"text":"x"}]})");
  REQUIRE(ReadAs(good, &change) == "");
  CHECK(change.textDocument.version == 2);
  REQUIRE(change.contentChanges.size() == 2);
  CHECK_FALSE(change.contentChanges[0].range);
  CHECK(change.contentChanges[1].range->end.character == 1);
  json bad = good;
  bad["contentChanges"][1]["range"]["start"]["character"] = -1;
  CHECK(ReadAs(bad, &change) ==
        "params.contentChanges[1].range.start.character: must not be "
        "negative");
  bad = good;
  bad["contentChanges"][0]["range"] = nullptr;  // null is absent
  CHECK(ReadAs(bad, &change) == "");

  CodeActionResolveParams resolve;
  CHECK(ReadAs(json{{"title", "t"}, {"data", {{"uri", "u"}, {"finding", -1}}}}, &resolve) ==
        "params.data.finding: expected a non-negative integer");
  REQUIRE(ReadAs(json{{"title", "t"}, {"x-client", 1}, {"data", {{"uri", "u"}, {"finding", 2}}}},
                 &resolve) == "");
  CHECK(resolve.data->finding == 2);
  CHECK(resolve.action["x-client"] == 1);  // the client's own fields are kept
}

TEST_CASE("protocol: initialize reads the capabilities leniently", "[lsp][protocol]") {
  InitializeParams init;
  REQUIRE(ReadAs(json::parse(R"({
      "processId": 42, "rootUri": "file:///w",
      "workspaceFolders": [{"uri": "file:///a", "name": "a"}, 3, {"name": "no uri"}],
      "initializationOptions": {"ttap": {"rank": 1}},
      "capabilities": {
        "general": {"positionEncodings": ["utf-8", 5, "utf-16"]},
        "textDocument": {"diagnostic": {}, "publishDiagnostics": {"relatedInformation": false,
                         "dataSupport": true}, "hover": {"contentFormat": ["plaintext"]},
                         "codeAction": {"resolveSupport": {"properties": ["edit"]}}},
        "workspace": {"configuration": true, "codeLens": "odd"},
        "window": {"workDoneProgress": null}}})"),
                 &init) == "");
  CHECK(init.processId == 42);
  CHECK(init.rootUri == "file:///w");
  REQUIRE(init.workspaceFolders.size() == 2);
  CHECK(init.workspaceFolders[1].uri == "");
  CHECK((*init.initializationOptions)["ttap"]["rank"] == 1);
  const ClientCapabilities& c = init.capabilities;
  CHECK(c.positionEncodings == std::vector<std::string>{"utf-8", "utf-16"});
  CHECK(c.diagnosticPull);
  CHECK_FALSE(c.relatedInformation);
  CHECK(c.dataSupport);
  CHECK(c.hoverContentFormat == std::vector<std::string>{"plaintext"});
  CHECK(c.codeActionResolveProperties == std::vector<std::string>{"edit"});
  CHECK(c.workspaceConfiguration);
  CHECK_FALSE(c.codeLensRefresh);  // "odd" is no object with refreshSupport
  CHECK_FALSE(c.workDoneProgress);
  InitializeParams odd;
  CHECK(ReadAs(json::parse(R"({"processId": "x", "rootUri": 3, "capabilities": 7})"), &odd) == "");
  CHECK_FALSE(odd.processId);
  CHECK_FALSE(odd.rootUri);
  CHECK(ReadAs(json("x"), &odd) == "params: expected an object");
}

namespace {

// Keeps what the outbox writes.
class Capture : public ttap::lsp::ByteChannel {
 public:
  size_t Read(char*, size_t) override { return 0; }
  bool Write(const char* data, size_t size) override {
    written.append(data, size);
    return true;
  }
  void Close() override {}
  std::string written;
};

struct Server {
  int hovers = 0;
  void OnHover(const HoverParams& p, ttap::lsp::Reply reply) {
    ++hovers;
    reply->Result(p.position.line);
  }
};

}  // namespace

TEST_CASE("binder: bad params answer InvalidParams once, before the handler runs",
          "[lsp][protocol]") {
  Capture channel;
  ttap::lsp::Framer framer(&channel);
  ttap::lsp::Outbox out(&framer);
  Server server;
  Binder binder;
  binder.Request("textDocument/hover", &server, &Server::OnHover);
  const CancelFlag cancelled = CancelFlag::Cancellable();
  auto body = [&] {
    const std::string w = channel.written;
    channel.written.clear();
    return json::parse(w.substr(w.find("\r\n\r\n") + 4));
  };

  REQUIRE(binder.CallRequest("textDocument/hover",
                             json::parse(R"({"textDocument":{"uri":"u"},"position":{"line":3,
                                                                                   "character":0}})"),
                             std::make_shared<ttap::lsp::ReplyOnce>(&out, 1), cancelled));
  CHECK(server.hovers == 1);
  CHECK(body()["result"] == 3);

  REQUIRE(binder.CallRequest("textDocument/hover", json{{"position", 3}},
                             std::make_shared<ttap::lsp::ReplyOnce>(&out, 2), cancelled));
  CHECK(server.hovers == 1);
  json error = body();
  CHECK(error["id"] == 2);
  CHECK(error["error"]["code"] == -32602);
  CHECK(error["error"]["message"] == "textDocument/hover: params.textDocument: missing");
  CHECK(channel.written.empty());  // one reply only

  CHECK_FALSE(binder.CallRequest("textDocument/nothing", json::object(),
                                 std::make_shared<ttap::lsp::ReplyOnce>(&out, 3), cancelled));
  body();  // the unanswered ReplyOnce's own -32603
}

TEST_CASE("protocol: ttap's settings section is read typed, out-of-bounds values refused",
          "[protocol][settings]") {
  using ttap::lsp::proto::ReadTtapSettings;
  const auto t = ReadTtapSettings(json::parse(R"({
    "traceGlobs": ["**/*.json", 3], "rank": 2, "windows": 2000000000,
    "thresholds": {"min_share": 0.01, "bad": "x"}, "pathMaps": {"/remote": "/local", "n": 1},
    "llm": {"baseUrl": "", "model": "m", "maxDrafts": 500, "authHeader": "api-key"},
    "model": {"enabled": false, "device": "tpu", "threshold": 3},
    "select": ["TTA001"], "ignore": ["NOPE"], "userFramesExclude": ["*/lib/*"]})"));
  REQUIRE(t.trace_globs);
  CHECK(*t.trace_globs == std::vector<std::string>{"**/*.json"});
  CHECK(t.rank == 2);
  CHECK_FALSE(t.windows);  // refused, not clamped
  CHECK(t.thresholds.size() == 1);
  CHECK(t.thresholds.at("min_share") == 0.01);
  REQUIRE(t.path_maps);
  CHECK(t.path_maps->size() == 1);
  REQUIRE(t.llm);
  CHECK_FALSE(t.llm->base_url);  // empty reads as absent
  CHECK(t.llm->model == std::optional<std::string>("m"));
  CHECK(t.llm->max_drafts == 100);
  CHECK(t.llm->auth_header == std::optional<std::string>("api-key"));
  REQUIRE(t.model);
  CHECK(t.model->enabled == false);
  CHECK(t.model->device == std::optional<std::string>("auto"));
  CHECK(t.model->threshold == -1.0);  // out of [0, 1]: the file's own
  CHECK(t.select == std::optional<std::vector<std::string>>({"TTA001"}));
  CHECK_FALSE(t.ignore);  // an unknown code keeps the project's list
  CHECK(t.user_frames_exclude == std::optional<std::vector<std::string>>({"*/lib/*"}));
  REQUIRE(t.refused.size() == 2);
  CHECK(t.refused[0].find("ttap.windows") == 0);
  CHECK(t.refused[1] == "ttap.thresholds.bad must be a number");
  CHECK(ReadTtapSettings(json::array()).refused.empty());
}

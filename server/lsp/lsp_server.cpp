// The language server session; see lsp_server.h and session.h. This file: the reader loop,
// dispatch (each method bound to its typed handler) and the lifecycle (initialize, initialized,
// shutdown). The request thread, settings, documents, the analysis side and each feature live in
// their own files (session.h lists them).
#include "server/lsp/lsp_server.h"

#include "analysis/base/nesting_depth.h"
#include "server/lsp/session.h"

namespace ttap::lsp {

namespace {

// Whether |msg| is `initialize` with initializationOptions.token == |token| (compared in time
// that does not depend on where they differ).
bool TokenMatches(const json& msg, const std::string& token) {
  if (!msg.is_object() || !msg.contains("method") || msg["method"] != "initialize") return false;
  const json& params = msg.contains("params") ? msg["params"] : json();
  if (!params.is_object() || !params.contains("initializationOptions")) return false;
  const json& init = params["initializationOptions"];
  if (!init.is_object() || !init.contains("token") || !init["token"].is_string()) return false;
  const std::string& given = init["token"].get_ref<const std::string&>();
  unsigned char diff = given.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < token.size(); ++i) {
    diff |= static_cast<unsigned char>(token[i] ^ (i < given.size() ? given[i] : 0));
  }
  return diff == 0;
}

}  // namespace

int Session::Run() {
  request_thread_ = std::thread([this] { RequestLoop(); });
  std::string body, error;
  while (!exit_received_) {
    auto r = framer_->Read(&body, &error);
    if (r == Framer::ReadResult::kEof) break;
    if (r != Framer::ReadResult::kMessage) {
      Log("bad frame: " + error);
      out_.ReplyError(nullptr, kParseError, error);
      continue;
    }
    // nlohmann parses (and frees) recursively: nesting deep enough to overflow the stack is
    // refused before it is parsed.
    if (NestingExceeds(body, kMaxJsonNesting, TextSyntax::kJson)) {
      out_.ReplyError(nullptr, kParseError,
                      "JSON nested deeper than " + std::to_string(kMaxJsonNesting) + " levels");
      continue;
    }
    json msg = json::parse(body, nullptr, false);
    if (msg.is_discarded()) {
      out_.ReplyError(nullptr, kParseError, "invalid JSON");
      continue;
    }
    if (!options_.token.empty() && !authorised_) {
      // --listen with a token: the connection proves it knows the token in `initialize`, first.
      if (!TokenMatches(msg, options_.token)) {
        json id = msg.is_object() && msg.contains("id") ? msg["id"] : json();
        out_.ReplyError(id, kInvalidRequest,
                        "unauthorised: this server needs initializationOptions.token in "
                        "initialize (ttap lsp --listen prints where it is)");
        Log("refused a connection without the token");
        break;
      }
      authorised_ = true;
    }
    try {
      Handle(msg);
    } catch (const std::exception& e) {  // a message no handler expected must not end the session
      Log(std::string("dropped a message: ") + e.what());
    }
  }
  // `exit`, or the client is gone (end of stream): nothing is left to answer.
  StopRequestThread();
  StopWorkers();
  return state_ == State::kShutdown && exit_received_ ? 0 : 1;
}

void Session::Handle(const json& msg) {
  if (!msg.is_object() || !msg.contains("jsonrpc") || msg["jsonrpc"] != "2.0") {
    json id = msg.is_object() && msg.contains("id") ? msg["id"] : json();
    out_.ReplyError(id, kInvalidRequest, "not a JSON-RPC 2.0 message");
    return;
  }
  if (!msg.contains("method")) {
    if (!out_.TakeReply(msg)) Log("unexpected response");
    return;
  }
  if (!msg["method"].is_string()) {
    out_.ReplyError(msg.value("id", json()), kInvalidRequest, "method must be a string");
    return;
  }
  const std::string method = msg["method"];
  const json params = msg.value("params", json::object());
  if (msg.contains("id")) {
    const json& id = msg["id"];
    if (!id.is_number_integer() && !id.is_string()) {
      out_.ReplyError(nullptr, kInvalidRequest, "id must be a number or a string");
      return;
    }
    auto reply = std::make_shared<ReplyOnce>(&out_, id);
    if (state_ == State::kUninitialized && method != "initialize") {
      reply->Error(kServerNotInitialized, "the server is not initialized");
      return;
    }
    if (state_ == State::kShutdown) {
      reply->Error(kInvalidRequest, "the server is shutting down");
      return;
    }
    if (method == "initialize") {  // on the reader: what it negotiates, the reader uses
      if (state_ != State::kUninitialized)
        return reply->Error(kInvalidRequest, "already initialized");
      binder_.CallRequest(method, params, reply, CancelToken());
      return;
    }
    if (method == "shutdown") state_ = State::kShutdown;  // answered in order, below
    const std::string key = id.dump();
    const CancelToken cancelled = CancelToken::Cancellable();
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      requests_[key] = cancelled;
    }
    Enqueue([this, method, params, reply, cancelled, key] {
      if (cancelled.cancelled()) {
        reply->Error(kRequestCancelled, "cancelled");
      } else {
        try {
          if (!binder_.CallRequest(method, params, reply, cancelled))
            reply->Error(kMethodNotFound, "unknown method " + method);
        } catch (const json::exception& e) {
          reply->Error(kInvalidParams, method + ": " + e.what());
        } catch (const std::exception& e) {  // a bug, not the client's: answered, logged
          Log(method + ": " + e.what());
          reply->Error(kInternalError, method + ": " + e.what());
        }
      }
      if (reply->done()) ForgetRequest(key);  // else a slow handler forgets it when it replies
    });
    return;
  }
  if (method == "exit") {
    exit_received_ = true;
    return;
  }
  if (state_ == State::kUninitialized) return;  // notifications before initialize are dropped
  // Cancellations and document edits are applied here, in order, so a request that follows sees
  // them; they are cheap (the parse waits until something needs the tree).
  const bool here = method == "$/cancelRequest" || method == "textDocument/didOpen" ||
                    method == "textDocument/didChange" || method == "textDocument/didClose";
  auto run = [this, method, params] {
    try {
      const std::string error = binder_.CallNotification(method, params);
      if (!error.empty()) Log(method + ": bad params: " + error);
    } catch (const std::exception& e) {
      Log(method + ": " + e.what());
    }
  };
  // Unknown notifications are ignored, as the spec asks ($/ ones silently).
  if (here)
    run();
  else
    Enqueue(run);
}

void Session::BindHandlers() {
  binder_.Request("initialize", this, &Session::OnInitialize);
  binder_.Request("shutdown", this, &Session::OnShutdown);
  binder_.Request("textDocument/hover", this, &Session::OnHover);
  binder_.Request("textDocument/codeAction", this, &Session::OnCodeAction);
  binder_.Request("codeAction/resolve", this, &Session::OnCodeActionResolve);
  binder_.Request("textDocument/codeLens", this, &Session::OnCodeLens);
  binder_.Request("workspace/executeCommand", this, &Session::OnExecuteCommand);
  binder_.Request("textDocument/diagnostic", this, &Session::OnDocumentDiagnostic);
  binder_.Request("workspace/diagnostic", this, &Session::OnWorkspaceDiagnostic);
  binder_.Request("$/sync", this, &Session::OnSync);
  binder_.Notification("$/cancelRequest", this, &Session::OnCancelRequest);
  binder_.Notification("initialized", this, &Session::OnInitialized);
  binder_.Notification("textDocument/didOpen", this, &Session::OnDidOpen);
  binder_.Notification("textDocument/didChange", this, &Session::OnDidChange);
  binder_.Notification("textDocument/didClose", this, &Session::OnDidClose);
  binder_.Notification("workspace/didChangeConfiguration", this,
                       &Session::OnDidChangeConfiguration);
  binder_.Notification("workspace/didChangeWatchedFiles", this, &Session::OnDidChangeWatchedFiles);
  binder_.Notification("workspace/didChangeWorkspaceFolders", this,
                       &Session::OnDidChangeWorkspaceFolders);
}

void Session::OnCancelRequest(const proto::CancelParams& params) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  auto it = requests_.find(params.id.dump());
  if (it != requests_.end()) it->second.Cancel();
}

void Session::ForgetRequest(const std::string& key) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  requests_.erase(key);
}

void Session::OnShutdown(const NoParams&, Reply reply) {
  StopWorkers();
  reply->Result(nullptr);
}

void Session::OnSync(const NoParams&, Reply reply) {
  scheduler_.BlockUntilIdleForTest(std::chrono::seconds(60));
  reply->Result(nullptr);
}

void Session::OnDidChangeWatchedFiles(const proto::DidChangeWatchedFilesParams& params) {
  // Python files keep the cached workspace index current; traces trigger an analysis.
  bool trace_changed = false;
  std::vector<std::string> created, deleted;
  for (const proto::FileEvent& change : params.changes) {
    std::string path = UriToPath(change.uri);
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0) {
      if (change.type == proto::FileChangeType::kCreated) created.push_back(path);
      if (change.type == proto::FileChangeType::kDeleted) deleted.push_back(path);
    } else {
      trace_changed = true;
    }
  }
  core_.FilesChanged(created, deleted);
  if (trace_changed) RequestAnalysis(false);
}

// ---- Lifecycle ----

void Session::OnInitialize(const proto::InitializeParams& params, Reply reply) {
  const proto::ClientCapabilities& caps = params.capabilities;
  if (params.processId) client_pid_ = *params.processId;
  for (const auto& e : caps.positionEncodings) {
    if (e == "utf-8") {
      caps_.encoding = PositionEncoding::kUtf8;
      encoding_name_ = "utf-8";
      break;
    }
  }
  pull_diagnostics_ = caps.diagnosticPull;
  diagnostic_refresh_ = caps.diagnosticRefresh;
  caps_.related_information = caps.relatedInformation || pull_diagnostics_;
  caps_.code_description = caps.codeDescriptionSupport || pull_diagnostics_;
  caps_.diagnostic_data = caps.dataSupport || pull_diagnostics_;
  const auto& resolvable = caps.codeActionResolveProperties;
  caps_.resolve_code_actions = std::count(resolvable.begin(), resolvable.end(), "edit") > 0;
  workspace_configuration_ = caps.workspaceConfiguration;
  // The client's preferred hover format comes first; markdown unless plaintext is preferred.
  if (!caps.hoverContentFormat.empty() && caps.hoverContentFormat[0] == "plaintext")
    caps_.hover_markdown = false;
  watch_registration_ = caps.watchedFilesDynamicRegistration;
  work_done_progress_ = caps.workDoneProgress;
  code_lens_refresh_ = caps.codeLensRefresh;

  UpdateSettings([&](SessionSettings& s) {
    for (const auto& f : params.workspaceFolders) s.roots.push_back(UriToPath(f.uri));
    if (s.roots.empty() && params.rootUri) s.roots.push_back(UriToPath(*params.rootUri));
    if (s.roots.empty() && params.rootPath) s.roots.push_back(*params.rootPath);
    s.roots.erase(std::remove(s.roots.begin(), s.roots.end(), std::string()), s.roots.end());
    if (!s.roots.empty()) {
      auto c = FindConfig(s.roots[0]);
      if (c.ok()) s.config = *c;
    }
  });
  if (params.initializationOptions && params.initializationOptions->is_object()) {
    const json& o = *params.initializationOptions;
    ApplySettings(o.contains("ttap") ? o["ttap"] : o);
  }
  json capabilities = {
      {"positionEncoding", encoding_name_},
      {"textDocumentSync",
       {{"openClose", true},
        {"change", proto::TextDocumentSyncKind::kIncremental},
        {"save", false}}},
      {"hoverProvider", true},
      {"codeActionProvider",
       {{"codeActionKinds",
         {proto::code_action_kind::kQuickFix, proto::code_action_kind::kSourceFixAllTtap}},
        {"resolveProvider", caps_.resolve_code_actions}}},
      {"codeLensProvider", {{"resolveProvider", false}}},
      // Ids of their own: vscode-languageclient registers every listed id as an editor command,
      // and the extension registers ttap.rescan / ttap.showTraceSummary itself (both are still
      // accepted here, for clients that send a code lens's command to the server).
      {"executeCommandProvider",
       {{"commands", {"ttap.server.rescan", "ttap.server.showTraceSummary"}}}},
      {"workspace", {{"workspaceFolders", {{"supported", true}, {"changeNotifications", true}}}}}};
  if (pull_diagnostics_) {
    capabilities["diagnosticProvider"] = {
        {"identifier", "ttap"}, {"interFileDependencies", true}, {"workspaceDiagnostics", true}};
  }
  state_ = State::kRunning;
  reply->Result({{"capabilities", capabilities},
                 {"serverInfo", {{"name", "ttap"}, {"version", TTAP_VERSION}}}});
}

void Session::OnInitialized(const NoParams&) {
  if (watch_registration_) {
    std::vector<proto::FileSystemWatcher> watchers;
    const auto settings = Settings();  // held: the loop reads its vector
    for (const auto& g : settings->config.trace_globs) watchers.push_back({g, std::nullopt});
    watchers.push_back({"**/*.py", proto::kWatchCreate | proto::kWatchDelete});
    proto::Registration traces{"ttap-traces", "workspace/didChangeWatchedFiles",
                               json{{"watchers", watchers}}};
    out_.Call("client/registerCapability", proto::RegistrationParams{{traces}},
              [](const json&, const json&) {});
  }
  StartWorkers();
  if (workspace_configuration_)
    PullConfiguration();
  else
    RequestAnalysis(true);
}

int RunSession(Framer* framer, const ServerOptions& options) {
  Session session(framer, options);
  return session.Run();
}

}  // namespace ttap::lsp

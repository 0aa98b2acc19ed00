// The language server session; see lsp_server.h and session.h. This file: the reader loop and the
// request thread, dispatch, lifecycle and settings, documents. The analysis side and each feature
// live in their own files (session.h lists them).
#include "server/lsp/lsp_server.h"

#include "server/lsp/session.h"

namespace ttap::lsp {

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
    json msg = json::parse(body, nullptr, false);
    if (msg.is_discarded()) {
      out_.ReplyError(nullptr, kParseError, "invalid JSON");
      continue;
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

void Session::Enqueue(std::function<void()> run) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (queue_stop_) return;
    queue_.push_back(std::move(run));
  }
  queue_cv_.notify_one();
}

void Session::RequestLoop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait_for(lock, std::chrono::seconds(1),
                         [&] { return queue_stop_ || !queue_.empty(); });
      if (queue_stop_) return;
      if (queue_.empty()) {
        if (ClientGone()) {
          // The spec: exit when the editor's process is gone (its pipe may stay open).
          Log("the client process " + std::to_string(client_pid_) + " is gone; exiting");
          std::_Exit(1);
        }
        continue;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void Session::StopRequestThread() {
  {
    std::lock_guard<std::mutex> lock(requests_mu_);
    for (auto& [id, cancelled] : requests_) cancelled.Cancel();
  }
  std::vector<SlowThread> slow;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    queue_stop_ = true;
    queue_.clear();  // their replies (ReplyOnce) answer that no reply came
    slow.swap(slow_threads_);
  }
  queue_cv_.notify_all();
  if (request_thread_.joinable()) request_thread_.join();
  for (auto& t : slow) t.thread.join();
}

void Session::RunSlow(std::function<void()> fn) {
  std::vector<SlowThread> finished;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (queue_stop_) return;
    auto done = std::make_shared<std::atomic<bool>>(false);
    // Threads that finished are joined as new ones start.
    auto last = std::partition(slow_threads_.begin(), slow_threads_.end(),
                               [](const SlowThread& t) { return !t.done->load(); });
    std::move(last, slow_threads_.end(), std::back_inserter(finished));
    slow_threads_.erase(last, slow_threads_.end());
    slow_threads_.push_back({std::thread([fn = std::move(fn), done] {
                               fn();
                               done->store(true);
                             }),
                             done});
  }
  for (auto& t : finished) t.thread.join();
}

bool Session::ClientGone() const {
  if (client_pid_ <= 0 || !options_.exit_with_client_process) return false;
  return kill(static_cast<pid_t>(client_pid_), 0) != 0 && errno == ESRCH;
}

void Session::QueuePublish(const std::string& uri) {
  if (pull_diagnostics_) return;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (!publish_queued_.insert(uri).second) return;  // the queued one will see this change
  }
  Enqueue([this, uri] {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      publish_queued_.erase(uri);
    }
    std::string path;
    int64_t version = 0;
    {
      std::lock_guard<std::mutex> lock(docs_mu_);
      auto it = docs_.find(uri);
      if (it == docs_.end()) return;  // closed since
      path = it->second.path;
      version = it->second.version;
    }
    bool has_findings = false;
    {
      std::lock_guard<std::mutex> lock(snap_mu_);
      has_findings = snapshot_ && snapshot_->by_file.count(path);
    }
    // Parsed first, so the version published is the one the ranges were computed on.
    if (has_findings) SourceFor(path, &version);
    out_.Notify("textDocument/publishDiagnostics",
                proto::PublishDiagnosticsParams{uri, version, DiagnosticsFor(path)});
  });
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
      std::lock_guard<std::mutex> lock(requests_mu_);
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
  std::lock_guard<std::mutex> lock(requests_mu_);
  auto it = requests_.find(params.id.dump());
  if (it != requests_.end()) it->second.Cancel();
}

void Session::ForgetRequest(const std::string& key) {
  std::lock_guard<std::mutex> lock(requests_mu_);
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

void Session::OnDidChangeConfiguration(const proto::DidChangeConfigurationParams& params) {
  if (params.settings && params.settings->is_object() && params.settings->contains("ttap")) {
    ApplySettings((*params.settings)["ttap"]);
    RequestAnalysis(true);
  } else if (workspace_configuration_) {
    PullConfiguration();
  }
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

void Session::OnDidChangeWorkspaceFolders(const proto::DidChangeWorkspaceFoldersParams& params) {
  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    for (const auto& f : params.event.removed) {
      std::string p = UriToPath(f.uri);
      roots_.erase(std::remove(roots_.begin(), roots_.end(), p), roots_.end());
    }
    for (const auto& f : params.event.added) roots_.push_back(UriToPath(f.uri));
  }
  RequestAnalysis(true);
}

// ---- Lifecycle ----

void Session::OnInitialize(const proto::InitializeParams& params, Reply reply) {
  const proto::ClientCapabilities& caps = params.capabilities;
  if (params.processId) client_pid_ = *params.processId;
  for (const auto& e : caps.positionEncodings) {
    if (e == "utf-8") {
      encoding_ = PositionEncoding::kUtf8;
      encoding_name_ = "utf-8";
      break;
    }
  }
  pull_diagnostics_ = caps.diagnosticPull;
  diagnostic_refresh_ = caps.diagnosticRefresh;
  related_information_ = caps.relatedInformation || pull_diagnostics_;
  code_description_ = caps.codeDescriptionSupport || pull_diagnostics_;
  diagnostic_data_ = caps.dataSupport || pull_diagnostics_;
  const auto& resolvable = caps.codeActionResolveProperties;
  resolve_code_actions_ = std::count(resolvable.begin(), resolvable.end(), "edit") > 0;
  workspace_configuration_ = caps.workspaceConfiguration;
  // The client's preferred hover format comes first; markdown unless plaintext is preferred.
  if (!caps.hoverContentFormat.empty() && caps.hoverContentFormat[0] == "plaintext")
    hover_markdown_ = false;
  watch_registration_ = caps.watchedFilesDynamicRegistration;
  work_done_progress_ = caps.workDoneProgress;
  code_lens_refresh_ = caps.codeLensRefresh;

  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    for (const auto& f : params.workspaceFolders) roots_.push_back(UriToPath(f.uri));
    if (roots_.empty() && params.rootUri) roots_.push_back(UriToPath(*params.rootUri));
    if (roots_.empty() && params.rootPath) roots_.push_back(*params.rootPath);
    roots_.erase(std::remove(roots_.begin(), roots_.end(), std::string()), roots_.end());
    if (!roots_.empty()) {
      auto c = FindConfig(roots_[0]);
      if (c.ok()) config_ = *c;
    }
  }
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
        {"resolveProvider", resolve_code_actions_}}},
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

void Session::ApplySettings(const json& s) {
  if (!s.is_object()) return;
  std::lock_guard<std::mutex> lock(settings_mu_);
  if (s.contains("traceGlobs") && s["traceGlobs"].is_array()) {
    config_.trace_globs.clear();
    for (const auto& g : s["traceGlobs"])
      if (g.is_string()) config_.trace_globs.push_back(g);
  }
  if (s.contains("rank") && s["rank"].is_number_integer()) rank_ = s["rank"];
  if (s.contains("windows") && s["windows"].is_number_integer() && s["windows"] > 0)
    config_.windows = s["windows"];
  if (s.contains("thresholds") && s["thresholds"].is_object()) {
    for (auto& [k, v] : s["thresholds"].items())
      if (v.is_number()) config_.thresholds[k] = v;
  }
  if (s.contains("pathMaps") && s["pathMaps"].is_object()) {
    config_.path_maps.clear();
    for (auto& [k, v] : s["pathMaps"].items())
      if (v.is_string()) config_.path_maps.emplace_back(k, v);
  }
  if (s.contains("llm") && s["llm"].is_object()) {
    const json& l = s["llm"];
    auto text = [&](const char* key) -> std::optional<std::string> {
      if (!l.contains(key) || !l[key].is_string() || l[key].get<std::string>().empty())
        return std::nullopt;
      return l[key].get<std::string>();
    };
    llm_editor_.base_url = text("baseUrl");
    llm_editor_.model = text("model");
    llm_editor_.api_key_env = text("apiKeyEnv");
    if (auto auth = text("authHeader"))
      config_.llm.auth_header = *auth == "api-key" ? "api-key" : "bearer";
    if (l.contains("maxDrafts") && l["maxDrafts"].is_number_integer())
      config_.llm.max_drafts = std::clamp(l["maxDrafts"].get<int>(), 0, 100);
    if (l.contains("timeoutSeconds") && l["timeoutSeconds"].is_number())
      config_.llm.timeout_s = std::clamp(l["timeoutSeconds"].get<double>(), 0.1, 3600.0);
    llm_enabled_ = l.contains("enabled") && l["enabled"].is_boolean()
                       ? l["enabled"].get<bool>()
                       : llm_editor_.base_url.has_value();
  }
  if (s.contains("model") && s["model"].is_object()) {
    const json& m = s["model"];
    if (m.contains("enabled") && m["enabled"].is_boolean()) model_enabled_ = m["enabled"];
    if (m.contains("path") && m["path"].is_string()) model_path_ = m["path"];
    if (m.contains("device") && m["device"].is_string()) {
      const std::string d = m["device"];
      model_device_ = d == "cpu" || d == "cuda" ? d : "auto";
    }
    if (m.contains("threshold")) {  // null (or out of [0, 1]): the file's own
      const double t = m["threshold"].is_number() ? m["threshold"].get<double>() : -1;
      model_threshold_ = t >= 0 && t <= 1 ? t : -1;
    }
  }
  for (const char* key : {"select", "ignore"}) {
    if (!s.contains(key) || !s[key].is_array()) continue;
    std::vector<std::string> codes;
    for (const auto& c : s[key])
      if (c.is_string()) codes.push_back(c);
    // Empty (the editor's default) keeps the project's list.
    if (!codes.empty() && CheckCodeList(codes).empty())
      (std::string(key) == "select" ? config_.select : config_.ignore) = codes;
  }
  for (const char* key : {"userFramesInclude", "userFramesExclude"}) {
    if (!s.contains(key) || !s[key].is_array()) continue;
    auto& dst = std::string(key) == "userFramesInclude" ? config_.user_frames_include
                                                        : config_.user_frames_exclude;
    dst.clear();
    for (const auto& g : s[key])
      if (g.is_string()) dst.push_back(g);
  }
}

void Session::PullConfiguration() {
  out_.Call("workspace/configuration",
            proto::ConfigurationParams{{proto::ConfigurationItem{"ttap"}}},
            [this](const json& result, const json& error) {
              if (error.is_null() && result.is_array() && !result.empty()) ApplySettings(result[0]);
              RequestAnalysis(true);
            });
}

void Session::OnInitialized(const NoParams&) {
  if (watch_registration_) {
    std::vector<proto::FileSystemWatcher> watchers;
    for (const auto& g : config_.trace_globs) watchers.push_back({g, std::nullopt});
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

// ---- Documents ----

void Session::OnDidOpen(const proto::DidOpenTextDocumentParams& params) {
  const proto::TextDocumentItem& td = params.textDocument;
  Document d;
  d.path = UriToPath(td.uri);
  d.version = td.version.value_or(0);
  d.text = td.text;
  {
    std::lock_guard<std::mutex> lock(docs_mu_);
    docs_[td.uri] = std::move(d);
  }
  QueuePublish(td.uri);
}

void Session::OnDidChange(const proto::DidChangeTextDocumentParams& params) {
  const proto::VersionedTextDocumentIdentifier& td = params.textDocument;
  std::unique_lock<std::mutex> docs_lock(docs_mu_);
  auto it = docs_.find(td.uri);
  if (it == docs_.end()) return;
  Document& d = it->second;
  for (const proto::TextDocumentContentChangeEvent& change : params.contentChanges) {
    const std::string& text = change.text;
    if (!change.range) {
      d.text = text;
      d.parsed.reset();  // parsed afresh
      d.edits_since_parse.clear();
      continue;
    }
    SourcePosition a = change.range->start.ToSource();
    SourcePosition b = change.range->end.ToSource();
    uint32_t ba = ByteOffsetInText(d.text, a, encoding_);
    uint32_t bb = std::max(ba, ByteOffsetInText(d.text, b, encoding_));
    if (d.parsed) d.edits_since_parse.push_back(DescribeEdit(d.text, ba, bb, text));
    d.text.replace(ba, bb - ba, text);
    // Findings below the edit move with their lines.
    int added = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    int delta = added - (b.line - a.line);
    if (delta != 0) {
      std::lock_guard<std::mutex> lock(snap_mu_);
      const std::vector<Placed>* analysed = nullptr;
      if (snapshot_) {
        auto f = snapshot_->by_file.find(d.path);
        if (f != snapshot_->by_file.end()) analysed = &f->second;
      }
      if (analysed) {
        std::vector<int>& lines = moved_lines_[d.path];
        if (lines.size() != analysed->size()) {
          lines.clear();
          for (const Placed& p : *analysed) lines.push_back(p.line);
        }
        for (int& line : lines) {
          if (line - 1 > b.line || (line - 1 == b.line && b.character == 0 && a.line < b.line))
            line += delta;
        }
      }
    }
  }
  d.version = td.version.value_or(d.version + 1);
  docs_lock.unlock();
  QueuePublish(td.uri);
}

void Session::OnDidClose(const proto::DidCloseTextDocumentParams& params) {
  std::lock_guard<std::mutex> lock(docs_mu_);
  auto it = docs_.find(params.textDocument.uri);
  if (it == docs_.end()) return;
  sources_.Forget(it->second.path);
  docs_.erase(it);
}

std::shared_ptr<const PythonSource> Session::SourceFor(const std::string& path, int64_t* version) {
  // The buffer's text, its last parse and the edits since, copied out so the reader thread can
  // go on applying edits while this parses.
  std::shared_ptr<const PythonSource> base;
  std::string text;
  std::vector<BufferEdit> edits;
  std::string uri;
  int64_t copied_version = 0;
  {
    std::lock_guard<std::mutex> lock(docs_mu_);
    for (const auto& [u, d] : docs_) {
      if (d.path != path) continue;
      if (version) *version = d.version;
      if (d.parsed && d.edits_since_parse.empty()) return d.parsed;
      uri = u;
      base = d.parsed;
      text = d.text;
      edits = d.edits_since_parse;
      copied_version = d.version;
      break;
    }
  }
  if (uri.empty()) {
    if (version) *version = -1;
    return sources_.GetFile(path);
  }
  auto parsed = base ? PythonSource::Reparse(*base, std::move(text), edits)
                     : PythonSource::Parse(std::move(text));
  std::lock_guard<std::mutex> lock(docs_mu_);
  auto it = docs_.find(uri);
  if (it == docs_.end()) return parsed;
  Document& d = it->second;
  // Kept as the next parse's base when the buffer did not change under it in a way the queued
  // edits do not describe; edits that arrived meanwhile stay queued for the next parse.
  if (base && d.parsed == base && d.edits_since_parse.size() >= edits.size()) {
    d.parsed = parsed;
    d.edits_since_parse.erase(d.edits_since_parse.begin(),
                              d.edits_since_parse.begin() + edits.size());
  } else if (!base && !d.parsed && d.version == copied_version) {
    d.parsed = parsed;
    d.edits_since_parse.clear();
  }
  return parsed;
}

int RunSession(Framer* framer, const ServerOptions& options) {
  Session session(framer, options);
  return session.Run();
}

}  // namespace ttap::lsp

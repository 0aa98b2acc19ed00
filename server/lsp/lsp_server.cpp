// The language server session; see lsp_server.h. Layout of this file: session state, helpers
// (URIs, positions), analysis (worker, trace discovery, snapshots), diagnostics, features
// (hover, code actions, code lens, commands), lifecycle and dispatch.
#include "server/lsp/lsp_server.h"

#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "analysis/trace_loader.h"
#include "analysis/trace_stats.h"
#include "mapping/python_source.h"
#include "mapping/quick_fixes.h"
#include "mapping/source_ranges.h"
#include "mapping/suppressions.h"
#include "mapping/syntax_util.h"
#include "mapping/workspace_index.h"
#include "server/config.h"
#include "server/llm/drafter.h"
#include "server/llm/llm_config.h"
#include "server/lsp/dir_watcher.h"
#include "server/lsp/hover_text.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/trace_discovery.h"
#include "server/lsp/uri.h"
#include "server/scan.h"
#include "server/window_model.h"
#include "version.h"

namespace ttap::lsp {

namespace {

using Clock = std::chrono::steady_clock;

void Log(const std::string& s) { std::fprintf(stderr, "ttap-lsp: %s\n", s.c_str()); }

int64_t MtimeNs(const std::string& path, int64_t* size = nullptr) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  if (size) *size = st.st_size;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

json PositionJson(const SourcePosition& p) {
  return {{"line", p.line}, {"character", p.character}};
}
json RangeJson(const SourceRange& r) {
  return {{"start", PositionJson(r.start)}, {"end", PositionJson(r.end)}};
}

}  // namespace

// ---- Session ----

class Session {
 public:
  Session(Framer* framer, const ServerOptions& options)
      : framer_(framer), out_(framer), options_(options) {}
  ~Session() { StopWorkers(); }
  int Run();

 private:
  struct Document {
    std::string path;
    int64_t version = 0;
    std::string text;
    // The buffer as last parsed, and the edits since then that turn parsed->text() into |text|:
    // the next parse is incremental (a keystroke in a 1 MB buffer costs about a millisecond).
    std::shared_ptr<const PythonSource> parsed;
    std::vector<BufferEdit> edits_since_parse;
  };
  // A request or notification handled on the request thread, in arrival order.
  struct Task {
    std::function<void()> run;
  };
  // A finding placed in a file, with its line as it moves with the user's edits.
  struct Placed {
    size_t finding;  // index into the snapshot's scan findings
    int line = 0;    // 1-based, current
    std::string function;
  };
  struct Snapshot {
    std::string trace_path;
    int64_t trace_mtime = 0;
    std::unique_ptr<ScanResult> scan;
    bool has_gpu = false;                                // the trace has GPU activity
    std::map<std::string, std::vector<Placed>> by_file;  // absolute path -> findings
    // What hovers and the summary need, computed once by the worker, so the trace's events
    // (scan->trace) can be released after the analysis (and the LLM drafts, which read them).
    int64_t span_start_ns = 0;
    std::vector<Interval> gpu_busy;                  // merged kernel/memcpy/memset intervals
    std::unordered_map<int64_t, size_t> step_index;  // step number -> rules.time.steps index
    std::string summary_head;                        // the summary's lines above the findings
    // Hover text by finding index, made on first hover (under snap_mu_).
    std::map<size_t, std::string> hover_markdown;
    // LLM drafts by finding index, filled in by the worker after publishing (under snap_mu_).
    std::map<size_t, std::shared_ptr<const llm::FindingDraft>> drafts;
  };

  // Dispatch.
  void Handle(const json& msg);
  void HandleRequest(const std::string& method, const json& params, Reply reply,
                     const std::shared_ptr<std::atomic<bool>>& cancelled);
  void ForgetRequest(const std::string& key);
  void HandleNotification(const std::string& method, const json& params);
  // Lifecycle and settings.
  void OnInitialize(const json& params, Reply reply);
  void OnInitialized();
  void ApplySettings(const json& settings);
  void PullConfiguration();
  // Documents.
  void OnDidOpen(const json& params);
  void OnDidChange(const json& params);
  void OnDidClose(const json& params);
  // The file as the editor has it (or as on disk); |version| gets the buffer's version (-1 on
  // disk). Parses incrementally from the buffer's previous parse.
  std::shared_ptr<const PythonSource> SourceFor(const std::string& path,
                                                int64_t* version = nullptr);
  // Request thread.
  void Enqueue(std::function<void()> run);
  void RequestLoop();
  void StopRequestThread();
  // Publishes |uri|'s diagnostics from the request thread (coalesced: one per queued batch).
  void QueuePublish(const std::string& uri);
  // Runs |fn| on its own thread, so a slow request (a trace summary) never holds up hovers.
  void RunSlow(std::function<void()> fn);
  // True when the editor's process (initialize's processId) is gone.
  bool ClientGone() const;
  // Analysis.
  void StartWorkers();
  void StopWorkers();
  void RequestAnalysis(bool force);
  void RequestAnalysisOf(const std::string& trace, int64_t mtime);
  void WorkerLoop();
  void WatchLoop();
  std::string NewestTrace(int64_t* mtime, int64_t* size);
  // False when the trace failed to load (recorded in failed_traces_) or is still being written.
  bool Analyse(const std::string& trace, int64_t mtime, const std::atomic<bool>* cancel);
  // A trace written in the last second may still be being written: waits until its (size,
  // mtime) hold still for 250 ms, and returns them.
  std::pair<int64_t, int64_t> WhenQuiet(const std::string& trace, const std::atomic<bool>* cancel);
  // After a failed load: true when |trace| has changed since |before| or changes before it is
  // 5 s old (a writer still at work), false when it holds still (broken).
  bool ChangesSoon(const std::string& trace, std::pair<int64_t, int64_t> before,
                   const std::atomic<bool>* cancel);
  // Waits |ms| on the worker's condition; false when the session stops or |cancel| is set.
  bool Pause(int ms, const std::atomic<bool>* cancel);
  // The window scorer the settings name, opened once per (path, device) on a helper thread that
  // runs while the trace loads; null when it is off or unusable (the rules run alone).
  std::shared_future<std::shared_ptr<const WindowModel>> WindowScorer();
  // LLM drafts for |snap|'s findings when the editor turned drafting on (worker thread).
  void DraftFindingsOf(const std::shared_ptr<Snapshot>& snap);
  std::shared_ptr<const llm::FindingDraft> DraftOf(const Snapshot& snap, size_t finding);
  void Status(const std::string& state, const std::string& detail = "");
  // A log line to stderr and to the client's log (window/logMessage, type Log).
  // Once: editors show stderr and window/logMessage in the same output channel.
  void ClientLog(const std::string& message) {
    if (!out_.alive()) return Log(message);
    out_.Notify("window/logMessage", {{"type", 4}, {"message", "ttap: " + message}});
  }
  // Diagnostics.
  json DiagnosticsFor(const std::string& path);
  // A copy of the findings placed in |path| (their lines move with edits under snap_mu_).
  std::vector<Placed> PlacedIn(const Snapshot& snap, const std::string& path);
  void PublishAll();
  // Features.
  void OnHover(const json& params, Reply reply);
  void OnCodeAction(const json& params, Reply reply);
  void OnCodeActionResolve(const json& params, Reply reply);
  void OnCodeLens(const json& params, Reply reply);
  void OnExecuteCommand(const json& params, Reply reply,
                        const std::shared_ptr<std::atomic<bool>>& cancelled);
  void OnDocumentDiagnostic(const json& params, Reply reply);
  void OnWorkspaceDiagnostic(const json& params, Reply reply);
  std::string HoverMarkdown(const Snapshot& snap, const LocatedFinding& lf);
  // HoverMarkdown cached per finding.
  std::string HoverOf(Snapshot& snap, size_t finding);
  // Fills the snapshot's hover and summary fields from its trace (worker thread).
  static void PrepareForHovers(Snapshot* snap);
  // Drops the trace's events once nothing reads them, and gives the memory back to the system.
  static void ReleaseTrace(Snapshot* snap);
  std::string SummaryMarkdown(const std::atomic<bool>* cancel);
  // False when the finding cannot be placed in |path| now, or a comment there suppresses it.
  bool RangeOf(const std::string& path, const Placed& p, const LocatedFinding& lf,
               SourceRange* range, ByteRange* bytes, std::shared_ptr<const PythonSource>* src_out,
               bool* stale);
  json FixesFor(const std::string& uri, const std::string& path, const Placed& p,
                const LocatedFinding& lf, const json& diagnostic, bool with_edits);
  // The finding's LLM-drafted fix as a code action, when it still applies to |src|.
  void AddDraftedFix(const std::string& uri, const Placed& p, const LocatedFinding& lf,
                     const PythonSource& src, const json& diagnostic, bool with_edits,
                     json* actions);

  Framer* framer_;
  Outbox out_;
  ServerOptions options_;

  // The request thread: requests and notifications other than document edits run there in the
  // order they arrived; the reader thread only decodes, applies document edits and cancels.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Task> queue_;
  bool queue_stop_ = false;
  std::set<std::string> publish_queued_;  // uris whose publish is queued (under queue_mu_)
  std::thread request_thread_;
  // Requests not yet answered, by id (dumped), with the flag $/cancelRequest sets.
  std::mutex requests_mu_;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> requests_;
  struct SlowThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<SlowThread> slow_threads_;  // under queue_mu_
  int64_t client_pid_ = 0;                // initialize's processId; 0: not watched

  enum class State { kUninitialized, kRunning, kShutdown } state_ = State::kUninitialized;
  bool exit_received_ = false;

  // Client capabilities we use.
  PositionEncoding encoding_ = PositionEncoding::kUtf16;
  std::string encoding_name_ = "utf-16";
  bool pull_diagnostics_ = false;
  bool diagnostic_refresh_ = false;
  bool related_information_ = false;
  bool code_description_ = false;
  bool diagnostic_data_ = false;
  bool resolve_code_actions_ = false;
  bool workspace_configuration_ = false;
  bool watch_registration_ = false;
  bool work_done_progress_ = false;
  bool code_lens_refresh_ = false;
  bool hover_markdown_ = true;  // false when the client asks for plaintext hovers (eglot)

  // Settings.
  std::mutex settings_mu_;
  std::vector<std::string> roots_;
  Config config_;
  int rank_ = 0;
  // LLM drafts: on only when the editor's `llm` settings give a baseUrl or enabled: true; the
  // editor's values win over TTAP_LLM_* variables, which win over [tool.ttap.llm].
  bool llm_enabled_ = false;
  llm::LlmOverrides llm_editor_;
  // The window scorer (`model` settings): on by default with the shipped weights
  // (WindowModel::DefaultPath); threshold < 0 keeps the file's flag threshold.
  bool model_enabled_ = true;
  std::string model_path_, model_device_ = "auto";
  double model_threshold_ = -1;
  // The worker's client (recreated when the settings change) and cache.
  std::unique_ptr<llm::LlmClient> llm_client_;
  std::string llm_client_key_;
  // The open window scorer (worker thread) and what it is: "path (device)", or why there is none.
  std::string model_key_;
  std::shared_future<std::shared_ptr<const WindowModel>> model_;
  std::mutex model_mu_;
  std::string model_state_ = "off";

  // Documents (reader thread only) and the parse cache (shared).
  std::mutex docs_mu_;  // docs_ is written by the reader thread, read by the worker too
  std::map<std::string, Document> docs_;
  SourceCache sources_;

  // Analysis state.
  std::mutex snap_mu_;
  std::shared_ptr<Snapshot> snapshot_;
  std::set<std::string> published_;  // files we pushed diagnostics to
  std::mutex work_mu_;
  std::condition_variable work_cv_;
  bool work_pending_ = false;
  bool work_force_ = false;
  bool stopping_ = false;
  std::shared_ptr<std::atomic<bool>> current_cancel_;
  std::string in_flight_trace_;  // the trace the worker is analysing (under work_mu_)
  int64_t in_flight_mtime_ = -1;
  std::thread worker_;
  std::thread watcher_;
  std::mutex index_mu_;
  std::shared_ptr<WorkspaceIndex> index_;
  std::string index_key_;
  std::string last_trace_;
  int64_t last_trace_mtime_ = -1;
  // Traces that failed to load, by path, as (size, mtime) when they failed (under work_mu_):
  // passed over until they change, so a broken newest trace is reported once and the newest
  // one that loads is shown instead of reloading the broken one forever.
  std::map<std::string, std::pair<int64_t, int64_t>> failed_traces_;
  std::string last_failure_;  // the latest load error, for the status
  bool told_no_trace_ = false;
  int progress_token_ = 0;
};

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
    queue_.push_back({std::move(run)});
  }
  queue_cv_.notify_one();
}

void Session::RequestLoop() {
  while (true) {
    Task task;
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
    task.run();
  }
}

void Session::StopRequestThread() {
  {
    std::lock_guard<std::mutex> lock(requests_mu_);
    for (auto& [id, cancelled] : requests_) cancelled->store(true);
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
                {{"uri", uri}, {"version", version}, {"diagnostics", DiagnosticsFor(path)}});
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
      try {
        OnInitialize(params, reply);
      } catch (const json::exception& e) {
        reply->Error(kInvalidParams, method + ": " + e.what());
      }
      return;
    }
    if (method == "shutdown") state_ = State::kShutdown;  // answered in order, below
    const std::string key = id.dump();
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    {
      std::lock_guard<std::mutex> lock(requests_mu_);
      requests_[key] = cancelled;
    }
    Enqueue([this, method, params, reply, cancelled, key] {
      if (cancelled->load()) {
        reply->Error(kRequestCancelled, "cancelled");
      } else {
        try {
          HandleRequest(method, params, reply, cancelled);
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
  if (method == "$/cancelRequest") {
    if (!params.is_object() || !params.contains("id")) return;
    const std::string key = params["id"].dump();
    std::lock_guard<std::mutex> lock(requests_mu_);
    auto it = requests_.find(key);
    if (it != requests_.end()) it->second->store(true);
    return;
  }
  // Document edits are applied here, in order, so a request that follows sees them; they are
  // cheap (the parse waits until something needs the tree).
  const bool document = method == "textDocument/didOpen" || method == "textDocument/didChange" ||
                        method == "textDocument/didClose";
  auto run = [this, method, params] {
    try {
      HandleNotification(method, params);
    } catch (const std::exception& e) {
      Log(method + ": bad params: " + e.what());
    }
  };
  if (document)
    run();
  else
    Enqueue(run);
}

void Session::ForgetRequest(const std::string& key) {
  std::lock_guard<std::mutex> lock(requests_mu_);
  requests_.erase(key);
}

void Session::HandleRequest(const std::string& method, const json& params, Reply reply,
                            const std::shared_ptr<std::atomic<bool>>& cancelled) {
  if (method == "shutdown") {
    StopWorkers();
    return reply->Result(nullptr);
  }
  if (method == "textDocument/hover") return OnHover(params, reply);
  if (method == "textDocument/codeAction") return OnCodeAction(params, reply);
  if (method == "codeAction/resolve") return OnCodeActionResolve(params, reply);
  if (method == "textDocument/codeLens") return OnCodeLens(params, reply);
  if (method == "workspace/executeCommand") return OnExecuteCommand(params, reply, cancelled);
  if (method == "textDocument/diagnostic") return OnDocumentDiagnostic(params, reply);
  if (method == "workspace/diagnostic") return OnWorkspaceDiagnostic(params, reply);
  if (method == "$/sync") {  // tests: wait until queued analysis is published
    for (int i = 0; i < 6000; ++i) {
      {
        std::lock_guard<std::mutex> lock(work_mu_);
        if (!work_pending_ && !current_cancel_) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return reply->Result(nullptr);
  }
  reply->Error(kMethodNotFound, "unknown method " + method);
}

void Session::HandleNotification(const std::string& method, const json& params) {
  if (method == "initialized") return OnInitialized();
  if (method == "textDocument/didOpen") return OnDidOpen(params);
  if (method == "textDocument/didChange") return OnDidChange(params);
  if (method == "textDocument/didClose") return OnDidClose(params);
  if (method == "textDocument/didSave") return;
  if (method == "workspace/didChangeConfiguration") {
    if (params.contains("settings") && params["settings"].is_object() &&
        params["settings"].contains("ttap")) {
      ApplySettings(params["settings"]["ttap"]);
      RequestAnalysis(true);
    } else if (workspace_configuration_) {
      PullConfiguration();
    }
    return;
  }
  if (method == "workspace/didChangeWatchedFiles") {
    // Python files keep the cached workspace index current; traces trigger an analysis.
    bool trace_changed = false;
    for (const auto& change : params.value("changes", json::array())) {
      std::string path = UriToPath(change.value("uri", ""));
      int type = change.value("type", 0);  // 1 created, 2 changed, 3 deleted
      if (path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0) {
        std::lock_guard<std::mutex> lock(index_mu_);
        if (index_ && type == 1) index_->AddFile(path);
        if (index_ && type == 3) index_->RemoveFile(path);
      } else {
        trace_changed = true;
      }
    }
    if (trace_changed) RequestAnalysis(false);
    return;
  }
  if (method == "workspace/didChangeWorkspaceFolders") {
    const json& ev = params.at("event");
    std::lock_guard<std::mutex> lock(settings_mu_);
    for (const auto& f : ev.value("removed", json::array())) {
      std::string p = UriToPath(f.value("uri", ""));
      roots_.erase(std::remove(roots_.begin(), roots_.end(), p), roots_.end());
    }
    for (const auto& f : ev.value("added", json::array()))
      roots_.push_back(UriToPath(f.value("uri", "")));
    RequestAnalysis(true);
    return;
  }
  if (method == "$/setTrace" || method == "$/progress") return;
  // Unknown notifications are ignored, as the spec asks ($/ ones silently).
}

// ---- Lifecycle ----

void Session::OnInitialize(const json& params, Reply reply) {
  const json caps = params.value("capabilities", json::object());
  if (params.contains("processId") && params["processId"].is_number_integer())
    client_pid_ = params["processId"].get<int64_t>();
  auto flag = [&](std::initializer_list<const char*> path) {
    const json* j = &caps;
    for (const char* k : path) {
      if (!j->is_object() || !j->contains(k)) return false;
      j = &(*j)[k];
    }
    return j->is_boolean() ? j->get<bool>() : !j->is_null();
  };
  const json general = caps.value("general", json::object());
  for (const auto& e : general.value("positionEncodings", json::array())) {
    if (e == "utf-8") {
      encoding_ = PositionEncoding::kUtf8;
      encoding_name_ = "utf-8";
      break;
    }
  }
  pull_diagnostics_ = flag({"textDocument", "diagnostic"});
  diagnostic_refresh_ = flag({"workspace", "diagnostics", "refreshSupport"});
  related_information_ =
      flag({"textDocument", "publishDiagnostics", "relatedInformation"}) || pull_diagnostics_;
  code_description_ =
      flag({"textDocument", "publishDiagnostics", "codeDescriptionSupport"}) || pull_diagnostics_;
  diagnostic_data_ =
      flag({"textDocument", "publishDiagnostics", "dataSupport"}) || pull_diagnostics_;
  resolve_code_actions_ = false;
  if (caps.contains("textDocument") && caps["textDocument"].contains("codeAction")) {
    for (const auto& p : caps["textDocument"]["codeAction"]
                             .value("resolveSupport", json::object())
                             .value("properties", json::array())) {
      if (p == "edit") resolve_code_actions_ = true;
    }
  }
  workspace_configuration_ = flag({"workspace", "configuration"});
  // The client's preferred hover format comes first; markdown unless plaintext is preferred.
  if (caps.contains("textDocument") && caps["textDocument"].is_object() &&
      caps["textDocument"].contains("hover") && caps["textDocument"]["hover"].is_object()) {
    const json formats = caps["textDocument"]["hover"].value("contentFormat", json::array());
    if (formats.is_array() && !formats.empty() && formats[0] == "plaintext")
      hover_markdown_ = false;
  }
  watch_registration_ = flag({"workspace", "didChangeWatchedFiles", "dynamicRegistration"});
  work_done_progress_ = flag({"window", "workDoneProgress"});
  code_lens_refresh_ = flag({"workspace", "codeLens", "refreshSupport"});

  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    for (const auto& f : params.value("workspaceFolders", json::array())) {
      if (f.is_object()) roots_.push_back(UriToPath(f.value("uri", "")));
    }
    if (roots_.empty() && params.contains("rootUri") && params["rootUri"].is_string()) {
      roots_.push_back(UriToPath(params["rootUri"]));
    }
    if (roots_.empty() && params.contains("rootPath") && params["rootPath"].is_string()) {
      roots_.push_back(params["rootPath"]);
    }
    roots_.erase(std::remove(roots_.begin(), roots_.end(), std::string()), roots_.end());
    if (!roots_.empty()) {
      auto c = FindConfig(roots_[0]);
      if (c.ok()) config_ = *c;
    }
  }
  if (params.contains("initializationOptions") && params["initializationOptions"].is_object()) {
    const json& o = params["initializationOptions"];
    ApplySettings(o.contains("ttap") ? o["ttap"] : o);
  }
  json capabilities = {
      {"positionEncoding", encoding_name_},
      {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", false}}},
      {"hoverProvider", true},
      {"codeActionProvider",
       {{"codeActionKinds", {"quickfix", "source.fixAll.ttap"}},
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
  out_.Call("workspace/configuration", {{"items", {{{"section", "ttap"}}}}},
            [this](const json& result, const json& error) {
              if (error.is_null() && result.is_array() && !result.empty()) ApplySettings(result[0]);
              RequestAnalysis(true);
            });
}

void Session::OnInitialized() {
  if (watch_registration_) {
    json watchers = json::array();
    for (const auto& g : config_.trace_globs) watchers.push_back({{"globPattern", g}});
    watchers.push_back({{"globPattern", "**/*.py"}, {"kind", 5}});  // create + delete
    out_.Call("client/registerCapability",
              {{"registrations",
                {{{"id", "ttap-traces"},
                  {"method", "workspace/didChangeWatchedFiles"},
                  {"registerOptions", {{"watchers", watchers}}}}}}},
              [](const json&, const json&) {});
  }
  StartWorkers();
  if (workspace_configuration_)
    PullConfiguration();
  else
    RequestAnalysis(true);
}

// ---- Documents ----

void Session::OnDidOpen(const json& params) {
  const json& td = params.at("textDocument");
  Document d;
  d.path = UriToPath(td.at("uri"));
  d.version = td.value("version", 0);
  d.text = td.at("text");
  const std::string uri = td.at("uri");
  {
    std::lock_guard<std::mutex> lock(docs_mu_);
    docs_[uri] = std::move(d);
  }
  QueuePublish(uri);
}

void Session::OnDidChange(const json& params) {
  const json& td = params.at("textDocument");
  std::unique_lock<std::mutex> docs_lock(docs_mu_);
  auto it = docs_.find(td.at("uri"));
  if (it == docs_.end()) return;
  Document& d = it->second;
  for (const auto& change : params.at("contentChanges")) {
    if (!change.contains("range")) {
      d.text = change.at("text");
      d.parsed.reset();  // parsed afresh
      d.edits_since_parse.clear();
      continue;
    }
    SourcePosition a{change["range"]["start"]["line"], change["range"]["start"]["character"]};
    SourcePosition b{change["range"]["end"]["line"], change["range"]["end"]["character"]};
    uint32_t ba = ByteOffsetInText(d.text, a, encoding_);
    uint32_t bb = std::max(ba, ByteOffsetInText(d.text, b, encoding_));
    const std::string text = change.at("text");
    if (d.parsed) d.edits_since_parse.push_back(DescribeEdit(d.text, ba, bb, text));
    d.text.replace(ba, bb - ba, text);
    // Findings below the edit move with their lines.
    int added = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    int delta = added - (b.line - a.line);
    if (delta != 0) {
      std::lock_guard<std::mutex> lock(snap_mu_);
      if (snapshot_) {
        auto f = snapshot_->by_file.find(d.path);
        if (f != snapshot_->by_file.end()) {
          for (Placed& p : f->second) {
            if (p.line - 1 > b.line ||
                (p.line - 1 == b.line && b.character == 0 && a.line < b.line))
              p.line += delta;
          }
        }
      }
    }
  }
  d.version = td.value("version", d.version + 1);
  docs_lock.unlock();
  QueuePublish(td.at("uri"));
}

void Session::OnDidClose(const json& params) {
  const json& td = params.at("textDocument");
  std::lock_guard<std::mutex> lock(docs_mu_);
  auto it = docs_.find(td.at("uri"));
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

// ---- Analysis ----

void Session::StartWorkers() {
  if (worker_.joinable()) return;
  worker_ = std::thread([this] { WorkerLoop(); });
  if (!watch_registration_) watcher_ = std::thread([this] { WatchLoop(); });
}

void Session::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    stopping_ = true;
    if (current_cancel_) current_cancel_->store(true);
  }
  work_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (watcher_.joinable()) watcher_.join();
}

void Session::RequestAnalysis(bool force) {
  std::lock_guard<std::mutex> lock(work_mu_);
  work_pending_ = true;
  work_force_ = work_force_ || force;
  // New settings make the analysis in flight pointless: cancel it; the worker picks up the
  // pending request next. Hovers keep reading the previous snapshot.
  if (force && current_cancel_) current_cancel_->store(true);
  work_cv_.notify_all();
}

void Session::RequestAnalysisOf(const std::string& trace, int64_t mtime) {
  std::lock_guard<std::mutex> lock(work_mu_);
  if (trace == in_flight_trace_ && mtime == in_flight_mtime_) return;  // already on it
  work_pending_ = true;
  // A newer trace than the one being analysed: that analysis is pointless now.
  if (current_cancel_ && !in_flight_trace_.empty()) current_cancel_->store(true);
  work_cv_.notify_all();
}

std::string Session::NewestTrace(int64_t* mtime, int64_t* size) {
  std::vector<std::string> roots, globs;
  int rank;
  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    roots = roots_;
    globs = config_.trace_globs;
    rank = rank_;
  }
  std::vector<std::string> found;
  size_t dirs_left = 50000;
  std::set<std::pair<dev_t, ino_t>> visited;
  for (const auto& r : roots) FindTraces(r, "", globs, 0, &found, &dirs_left, &visited);
  // Per rank: files named for another rank ("rank-3", "rank_3") are not this session's.
  std::vector<std::string> mine;
  for (const auto& f : found) {
    int r = RankFromFileName(f);
    if (r < 0 || r == rank) mine.push_back(f);
  }
  if (!mine.empty()) found.swap(mine);
  std::map<std::string, std::pair<int64_t, int64_t>> failed;
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    failed = failed_traces_;
  }
  std::string best;
  int64_t best_mtime = -1;
  for (const auto& f : found) {
    int64_t s = 0;
    int64_t m = MtimeNs(f, &s);
    auto bad = failed.find(f);
    if (bad != failed.end() && bad->second == std::make_pair(s, m)) continue;  // unchanged
    if (m > best_mtime) {
      best_mtime = m;
      best = f;
      if (size) *size = s;
    }
  }
  if (mtime) *mtime = best_mtime;
  return best;
}

void Session::WatchLoop() {
  // A new or changed trace is analysed once its size has stopped changing (two looks a poll
  // interval apart). Between changes the thread sleeps on inotify (DirWatcher); without it, or
  // past its watch budget, it polls, backing off to 30 s while nothing changes.
  int64_t seen_size = -1, seen_mtime = -1;
  std::string seen;
  std::unique_ptr<DirWatcher> watcher;
  std::vector<std::string> watched_roots;
  bool settled = false;  // the last two looks agreed: wait for an event
  int quiet_polls = 0;
  auto stopping = [&] {
    std::lock_guard<std::mutex> lock(work_mu_);
    return stopping_;
  };
  while (true) {
    std::vector<std::string> roots, globs;
    {
      std::lock_guard<std::mutex> lock(settings_mu_);
      roots = roots_;
      globs = config_.trace_globs;
    }
    if (!watcher || roots != watched_roots) {
      watcher = std::make_unique<DirWatcher>(roots, SkipDirectory);
      watched_roots = roots;
      settled = false;
      if (!watcher->ok()) ClientLog("polling for traces: " + watcher->why_not());
    }
    if (settled && watcher->ok()) {
      auto relevant = [&](const std::string& path) {
        for (const auto& r : roots) {
          if (path.rfind(r + "/", 0) != 0) continue;
          const std::string rel = path.substr(r.size() + 1);
          for (const auto& g : globs)
            if (GlobMatch(g, rel)) return true;
        }
        return false;
      };
      const bool changed = watcher->Wait(250, relevant);  // short slices: stopping is prompt
      if (stopping()) return;
      if (!changed) continue;
      settled = false;
      quiet_polls = 0;
    } else {
      const int wait_ms =
          watcher->ok() ? options_.poll_interval_ms
                        : std::min(30000, options_.poll_interval_ms << std::min(quiet_polls, 5));
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return stopping_; });
      if (stopping_) return;
    }
    int64_t mtime = -1, size = -1;
    std::string newest = NewestTrace(&mtime, &size);
    const bool stable = newest == seen && size == seen_size && mtime == seen_mtime;
    if (newest.empty()) {
      // The shown trace was deleted and none is left: the worker drops its findings.
      std::lock_guard<std::mutex> lock(work_mu_);
      if (!last_trace_.empty() && in_flight_trace_.empty()) {
        work_pending_ = true;
        work_cv_.notify_all();
      }
    } else {
      bool changed;
      {
        std::lock_guard<std::mutex> lock(work_mu_);
        changed = newest != last_trace_ || mtime != last_trace_mtime_;
      }
      if (changed && stable) RequestAnalysisOf(newest, mtime);
    }
    seen = newest;
    seen_size = size;
    seen_mtime = mtime;
    settled = stable;
    quiet_polls = stable ? quiet_polls + 1 : 0;
  }
}

void Session::WorkerLoop() {
  // The window scorer starts opening now, so the first trace waits for it as little as possible.
  WindowScorer();
  while (true) {
    bool force;
    {
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait(lock, [&] { return work_pending_ || stopping_; });
      if (stopping_) return;
      work_pending_ = false;
      force = work_force_;
      work_force_ = false;
      current_cancel_ = std::make_shared<std::atomic<bool>>(false);
    }
    int64_t mtime = -1;
    std::string trace = NewestTrace(&mtime, nullptr);
    std::string failure;
    {
      std::lock_guard<std::mutex> lock(work_mu_);
      failure = failed_traces_.empty() ? "" : last_failure_;
    }
    if (trace.empty()) {
      // No trace (left) to show: a deleted trace's diagnostics, hovers and memory go with it.
      bool dropped = false;
      {
        std::lock_guard<std::mutex> lock(snap_mu_);
        dropped = snapshot_ != nullptr;
        snapshot_.reset();
      }
      if (dropped) {
        {
          std::lock_guard<std::mutex> lock(work_mu_);
          last_trace_.clear();
          last_trace_mtime_ = -1;
        }
        PublishAll();
      }
    }
    if (trace.empty() && !failure.empty()) {
      Status("waiting", failure);  // traces exist, none loads: said once when each failed
    } else if (trace.empty()) {
      Status("no-trace");
      if (!told_no_trace_) {
        told_no_trace_ = true;
        out_.Notify(
            "window/showMessage",
            {{"type", 3},
             {"message",
              "ttap: no profiler trace in the workspace yet. Record one with "
              "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
              "with_stack=True, schedule=torch.profiler.schedule(wait=1, warmup=1, active=3), "
              "on_trace_ready=torch.profiler.tensorboard_trace_handler(\"./log\")) and call "
              "prof.step() each iteration; ttap picks it up automatically."}});
      }
    } else if (force || [&] {
                 std::lock_guard<std::mutex> lock(work_mu_);
                 return trace != last_trace_ || mtime != last_trace_mtime_;
               }()) {
      {
        std::lock_guard<std::mutex> lock(work_mu_);
        in_flight_trace_ = trace;
        in_flight_mtime_ = mtime;
      }
      if (!Analyse(trace, mtime, current_cancel_.get())) {
        // Fall back at once to the newest trace that loads (the failed one is passed over).
        std::lock_guard<std::mutex> lock(work_mu_);
        work_pending_ = true;
      }
    }
    std::lock_guard<std::mutex> lock(work_mu_);
    in_flight_trace_.clear();
    in_flight_mtime_ = -1;
    current_cancel_.reset();
  }
}

void Session::Status(const std::string& state, const std::string& detail) {
  json p = {{"state", state}, {"rank", rank_}};
  std::lock_guard<std::mutex> lock(snap_mu_);
  if (snapshot_) {
    p["trace"] = snapshot_->trace_path;
    p["findings"] = snapshot_->scan ? snapshot_->scan->findings.size() : 0;
  }
  if (!detail.empty()) p["detail"] = detail;
  {
    std::lock_guard<std::mutex> lock(model_mu_);
    p["model"] = model_state_;
  }
  out_.Notify("ttap/status", p);
}

bool Session::Analyse(const std::string& trace, int64_t mtime, const std::atomic<bool>* cancel) {
  std::string token = "ttap-analysis-" + std::to_string(++progress_token_);
  bool progress = work_done_progress_;
  if (progress) {
    out_.Call("window/workDoneProgress/create", {{"token", token}},
              [](const json&, const json&) {});
    out_.Notify("$/progress", {{"token", token},
                               {"value",
                                {{"kind", "begin"},
                                 {"title", "ttap: analysing trace"},
                                 {"message", trace},
                                 {"percentage", 0},
                                 {"cancellable", false}}}});
  }
  Status("loading", trace);
  Config config;
  std::vector<std::string> roots;
  double model_threshold;
  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    config = config_;
    roots = roots_;
    model_threshold = model_threshold_;
  }
  // The scorer opens (libtorch alone takes ~0.5 s to map, once per session) while the trace loads.
  std::shared_future<std::shared_ptr<const WindowModel>> scorer = WindowScorer();
  LoadOptions lo;
  lo.window_count = config.windows;
  lo.cancel = cancel;
  std::pair<int64_t, int64_t> before = WhenQuiet(trace, cancel);
  auto loaded = LoadTrace(trace, lo);
  if (!loaded.ok()) {
    if (cancel && cancel->load()) return true;  // cancelled, not broken
    // A trace still being written (it changes while it loads, or soon after) is loaded again
    // when it changes; falling back meanwhile would flash an older trace's findings first.
    if (ChangesSoon(trace, before, cancel)) {
      if (progress)
        out_.Notify("$/progress",
                    {{"token", token}, {"value", {{"kind", "end"}, {"message", "being written"}}}});
      return false;
    }
    // Broken: passed over until it changes; said once.
    int64_t size = -1;
    const int64_t now_mtime = MtimeNs(trace, &size);
    const std::string message = loaded.status().message();
    ClientLog(message);
    {
      std::lock_guard<std::mutex> lock(work_mu_);
      failed_traces_[trace] = {size, now_mtime};
      last_failure_ = message;
    }
    out_.Notify("window/showMessage",
                {{"type", 2},
                 {"message", "ttap: cannot read " + trace + " (" + message +
                                 "); showing the newest trace that loads until it changes"}});
    if (progress)
      out_.Notify("$/progress",
                  {{"token", token}, {"value", {{"kind", "end"}, {"message", "not readable"}}}});
    Status("waiting", message);
    return false;
  }
  if (progress)
    out_.Notify(
        "$/progress",
        {{"token", token},
         {"value",
          {{"kind", "report"},
           {"message", scorer.valid() ? "running rules and the window scorer" : "running rules"},
           {"percentage", 60}}}});
  Status("analyzing", trace);
  std::vector<PathMap> maps;
  for (const auto& [from, to] : config.path_maps) maps.push_back({from, to});
  // With several workspace folders, frames resolve in the folder that holds the trace.
  std::string root = roots.empty() ? "." : roots[0];
  size_t longest = 0;
  for (const auto& r : roots) {
    if (trace.rfind(r + "/", 0) == 0 && r.size() > longest) {
      longest = r.size();
      root = r;
    }
  }
  WorkspaceIndex index;
  {
    // The index is cached between analyses and kept current by file events (see
    // didChangeWatchedFiles); rebuilt only when the root or the path maps change.
    std::lock_guard<std::mutex> lock(index_mu_);
    std::string key = root;
    for (const auto& m : maps) key += "|" + m.from + ">" + m.to;
    if (!index_ || index_key_ != key) {
      index_ = std::make_shared<WorkspaceIndex>(WorkspaceIndex::Build(root, maps));
      index_key_ = key;
    }
    index = *index_;
  }
  FrameFilter filter;
  filter.include = config.user_frames_include;
  filter.exclude = config.user_frames_exclude;
  ScanOptions so;
  so.rules.values = config.thresholds;
  so.min_severity = Severity::kHint;
  so.select = config.select;
  so.ignore = config.ignore;
  so.apply_suppressions = false;  // applied to the buffers as typed (RangeOf)
  so.workspace = &index;
  so.frame_filter = &filter;
  std::shared_ptr<const WindowModel> model = scorer.valid() ? scorer.get() : nullptr;
  so.model = model.get();
  so.model_threshold = model_threshold;
  so.window_fusion = FindWindowFusion(config.window_fusion);
  auto snap = std::make_shared<Snapshot>();
  snap->trace_path = trace;
  snap->trace_mtime = mtime;
  snap->scan = std::make_unique<ScanResult>(ScanTrace(std::move(loaded.value()), so));
  PrepareForHovers(snap.get());
  for (size_t i = 0; i < snap->scan->findings.size(); ++i) {
    const LocatedFinding& lf = snap->scan->findings[i];
    if (lf.absolute_path.empty() || lf.line <= 0) continue;
    Placed p;
    p.finding = i;
    p.line = lf.line;
    const Finding& f = lf.finding;
    if (f.user_frame >= 0) p.function = f.frames[f.user_frame].function;
    snap->by_file[lf.absolute_path].push_back(p);
  }
  if (cancel && cancel->load()) return true;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snapshot_ = snap;
  }
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    last_trace_ = trace;
    last_trace_mtime_ = mtime;
  }
  PublishAll();
  if (progress)
    out_.Notify("$/progress",
                {{"token", token},
                 {"value",
                  {{"kind", "end"},
                   {"message", std::to_string(snap->scan->findings.size()) + " findings"}}}});
  ClientLog("analysed " + trace + ": " + std::to_string(snap->scan->findings.size()) +
            " findings (rules " + std::to_string(static_cast<int>(snap->scan->rules_ms)) +
            " ms, mapping " + std::to_string(static_cast<int>(snap->scan->mapping_ms)) + " ms)");
  Status("ready");
  DraftFindingsOf(snap);
  ReleaseTrace(snap.get());
  return true;
}

namespace {

int64_t WallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::pair<int64_t, int64_t> SizeAndMtime(const std::string& path) {
  int64_t size = -1;
  const int64_t mtime = MtimeNs(path, &size);
  return {size, mtime};
}

}  // namespace

bool Session::Pause(int ms, const std::atomic<bool>* cancel) {
  std::unique_lock<std::mutex> lock(work_mu_);
  work_cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopping_; });
  return !stopping_ && !(cancel && cancel->load());
}

std::pair<int64_t, int64_t> Session::WhenQuiet(const std::string& trace,
                                               const std::atomic<bool>* cancel) {
  auto now = SizeAndMtime(trace);
  for (int looks = 0; looks < 240 && WallNowNs() - now.second < 1000000000LL; ++looks) {
    if (!Pause(250, cancel)) break;
    auto again = SizeAndMtime(trace);
    if (again == now) break;
    now = again;
  }
  return now;
}

bool Session::ChangesSoon(const std::string& trace, std::pair<int64_t, int64_t> before,
                          const std::atomic<bool>* cancel) {
  while (true) {
    const auto now = SizeAndMtime(trace);
    if (now != before) return true;
    if (now.second < 0 || WallNowNs() - now.second >= 5000000000LL) return false;
    if (!Pause(100, cancel)) return true;  // stopping or superseded: not judged broken
  }
}

void Session::PrepareForHovers(Snapshot* snap) {
  const Trace& t = *snap->scan->trace;
  const EventTable& ev = t.events;
  snap->span_start_ns = t.span_start();
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    if (IsGpuKind(k)) snap->has_gpu = true;
    if (k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset)
      snap->gpu_busy.push_back({ev.ts[i], ev.end(i)});
  }
  MergeIntervals(&snap->gpu_busy);
  snap->gpu_busy.shrink_to_fit();
  const RuleResult& rr = snap->scan->rules;
  for (size_t k = 0; k < rr.time.step_numbers.size(); ++k)
    snap->step_index.emplace(rr.time.step_numbers[k], k);
  // The summary's head: the trace's own counts (no second replay: the rules' is reused).
  TraceSummary s = Summarize(t, 5, /*causal=*/false);
  std::string md = "**" + snap->trace_path + "** (rank " + std::to_string(t.rank) + ", " +
                   s.device_type + ", " + std::to_string(t.steps.size()) + " steps)\n\n";
  md += "GPU active " + FormatPercent(s.overall.Pct(s.overall.kernel_ns) / 100) +
        ", data movement " + FormatPercent(s.overall.Pct(s.overall.data_movement_ns) / 100) +
        ", idle " + FormatPercent(s.overall.Pct(s.overall.idle_ns) / 100) + "\n\n";
  StepAttribution all;
  for (const StepAttribution& st : rr.time.steps)
    for (int c = 0; c < kCauseCount; ++c) all.ns[c] += st.ns[c];
  if (all.total() > 0)
    md +=
        "Where the steps' time went: `" + CauseBar(all, 30) + "` " + FormatCauses(all, 5) + "\n\n";
  snap->summary_head = std::move(md);
}

void Session::ReleaseTrace(Snapshot* snap) {
  // Hovers, diagnostics, fixes and the summary read only the snapshot's own fields from here on.
  snap->scan->trace.reset();
  malloc_trim(0);
}

std::shared_future<std::shared_ptr<const WindowModel>> Session::WindowScorer() {
  std::string path, device;
  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    if (model_enabled_) {
      path = model_path_.empty() ? WindowModel::DefaultPath() : model_path_;
      device = model_device_;
    }
  }
  const std::string key = path.empty() ? "" : path + " (" + device + ")";
  if (key == model_key_ && model_.valid()) return model_;
  model_key_ = key;
  if (key.empty()) {
    model_ = {};
    std::lock_guard<std::mutex> lock(model_mu_);
    model_state_ = "off";
    return model_;
  }
  // One intra-op thread, as `ttap scan` (the windows are small matrices).
  model_ = std::async(std::launch::async, [this, path, device, key]() {
             auto opened = WindowModel::Open(path, device, 1);
             std::shared_ptr<const WindowModel> m;
             std::string state;
             if (opened.ok()) {
               m = std::move(opened.value());
               state = m->path() + " (" + m->device() + ")";
             } else {
               state = "unavailable: " + opened.status().message();
               ClientLog("window scorer " + state + "; rules only");
             }
             std::lock_guard<std::mutex> lock(model_mu_);
             model_state_ = state;
             return m;
           }).share();
  return model_;
}

void Session::DraftFindingsOf(const std::shared_ptr<Snapshot>& snap) {
  LlmConfig file;
  llm::LlmOverrides editor;
  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    if (!llm_enabled_) return;
    file = config_.llm;
    editor = llm_editor_;
  }
  auto settings = llm::ResolveLlmSettings(file, editor);
  if (!settings.ok()) {
    ClientLog("llm drafts are on but " + settings.status().message());
    return;
  }
  const std::string key = settings->base_url + "|" + settings->model + "|" + settings->api_key_env +
                          "|" + file.auth_header + "|" + std::to_string(settings->timeout_ms);
  if (!llm_client_ || llm_client_key_ != key) {
    llm_client_.reset();
    llm_client_ = std::make_unique<llm::LlmClient>(
        *settings, [this](const std::string& line) { ClientLog("llm: " + line); });
    llm_client_key_ = key;
  }
  llm::CancelFlag cancel;
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    cancel = current_cancel_;
  }
  llm::DraftCache cache(file.cache_dir, static_cast<uint64_t>(file.cache_max_mb) << 20);
  llm::DraftOptions options = llm::DraftOptionsFrom(file);
  options.log = [this](const std::string& line) { ClientLog("llm: " + line); };
  Status("drafting", settings->model);
  auto drafts = llm::DraftFindings(
      *snap->scan, llm_client_.get(), &cache,
      [this](const std::string& path) { return SourceFor(path); }, options, cancel);
  if (cancel && cancel->load()) return;
  size_t count = 0;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    for (size_t i = 0; i < drafts.size(); ++i) {
      if (!drafts[i]) continue;
      snap->drafts[i] = std::make_shared<const llm::FindingDraft>(std::move(*drafts[i]));
      ++count;
    }
  }
  Status("ready", std::to_string(count) + " drafts by " + settings->model);
}

std::shared_ptr<const llm::FindingDraft> Session::DraftOf(const Snapshot& snap, size_t finding) {
  std::lock_guard<std::mutex> lock(snap_mu_);
  auto it = snap.drafts.find(finding);
  return it == snap.drafts.end() ? nullptr : it->second;
}

// ---- Diagnostics ----

namespace {

int LspSeverity(Severity s) {
  switch (s) {
    case Severity::kError:
      return 1;
    case Severity::kWarning:
      return 2;
    case Severity::kInfo:
      return 3;
    case Severity::kHint:
      return 4;
  }
  return 3;
}

}  // namespace

bool Session::RangeOf(const std::string& path, const Placed& p, const LocatedFinding& lf,
                      SourceRange* range, ByteRange* bytes,
                      std::shared_ptr<const PythonSource>* src_out, bool* stale) {
  auto src = SourceFor(path);
  if (!src) return false;
  RangeQuery q;
  q.line = p.line;
  q.function = p.function;
  q.code = lf.finding.code;
  MappedRange m = MapToSource(*src, q);
  // `# ttap: ignore[...]` as the buffer has it now: typed or deleted, it applies at once.
  if (SuppressedAt(*src, m, p.line, lf.finding.code)) return false;
  *bytes = m.range;
  *range = src->ToRange(m.range, encoding_);
  *stale = m.stale;
  if (src_out) *src_out = src;
  return true;
}

std::vector<Session::Placed> Session::PlacedIn(const Snapshot& snap, const std::string& path) {
  std::lock_guard<std::mutex> lock(snap_mu_);
  auto it = snap.by_file.find(path);
  return it == snap.by_file.end() ? std::vector<Placed>() : it->second;
}

json Session::DiagnosticsFor(const std::string& path) {
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  json diags = json::array();
  if (!snap) return diags;
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return diags;
  // One diagnostic per code and line (a loop can hold fifteen TTA009 findings): the first
  // (findings come most severe first) stands for the others, which its hover lists.
  std::map<std::pair<std::string, int>, std::pair<size_t, int>> shown;  // -> (diag, others)
  for (const Placed& p : PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    const Finding& f = lf.finding;
    SourceRange r;
    ByteRange b;
    bool stale = false;
    if (!RangeOf(path, p, lf, &r, &b, nullptr, &stale)) continue;
    auto [slot, first] =
        shown.emplace(std::make_pair(f.code, r.start.line), std::make_pair(diags.size(), 0));
    if (!first) {
      ++slot->second.second;
      continue;
    }
    json d = {{"range", RangeJson(r)},
              {"severity", LspSeverity(f.severity)},
              {"code", f.code},
              {"source", "ttap"},
              {"message",
               f.name + ": " + f.message +
                   (stale ? " (source changed since the trace; this location may be stale)" : "") +
                   (lf.located_by_shape
                        ? " (placed by code shape: the trace has no Python stacks; record with "
                          "with_stack=True for exact lines)"
                        : "")}};
    if (code_description_) d["codeDescription"] = {{"href", RuleDocsUrl(f.code, f.name)}};
    if (related_information_) {
      json rel = json::array();
      for (size_t k = 0; k < f.frames.size() && rel.size() < 8; ++k) {
        if (static_cast<int>(k) == f.user_frame) continue;
        // A frame the trace names by a relative path (`torch/nn/modules/module.py`) has no URI:
        // "file://torch/..." would name a host.
        if (f.frames[k].file.empty() || f.frames[k].file[0] != '/') continue;
        rel.push_back({{"location",
                        {{"uri", PathToUri(f.frames[k].file)},
                         {"range", RangeJson({{std::max(0, f.frames[k].line - 1), 0},
                                              {std::max(0, f.frames[k].line - 1), 0}})}}},
                       {"message", "called from " + f.frames[k].function + " (" + f.frames[k].file +
                                       ":" + std::to_string(f.frames[k].line) + ")"}});
      }
      if (!rel.empty()) d["relatedInformation"] = rel;
    }
    if (diagnostic_data_)
      d["data"] = {{"finding", p.finding}, {"fix", f.fix}, {"trace", snap->trace_path}};
    diags.push_back(std::move(d));
  }
  for (const auto& [key, slot] : shown) {
    if (slot.second == 0) continue;
    diags[slot.first]["message"] = diags[slot.first]["message"].get<std::string>() + " (and " +
                                   std::to_string(slot.second) + " more " + key.first + " finding" +
                                   (slot.second > 1 ? "s" : "") +
                                   " on this line: the hover lists each one's saving)";
  }
  return diags;
}

void Session::PublishAll() {
  if (pull_diagnostics_) {
    if (diagnostic_refresh_)
      out_.Call("workspace/diagnostic/refresh", nullptr, [](const json&, const json&) {});
    if (code_lens_refresh_)
      out_.Call("workspace/codeLens/refresh", nullptr, [](const json&, const json&) {});
    return;
  }
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  std::set<std::string> now;
  if (snap) {
    for (const auto& [path, placed] : snap->by_file) {
      now.insert(path);
      out_.Notify("textDocument/publishDiagnostics",
                  {{"uri", PathToUri(path)}, {"diagnostics", DiagnosticsFor(path)}});
    }
  }
  // Files whose problems are gone get an empty list, so their squiggles disappear.
  for (const auto& path : published_) {
    if (!now.count(path))
      out_.Notify("textDocument/publishDiagnostics",
                  {{"uri", PathToUri(path)}, {"diagnostics", json::array()}});
  }
  published_ = now;
  if (code_lens_refresh_)
    out_.Call("workspace/codeLens/refresh", nullptr, [](const json&, const json&) {});
}

void Session::OnDocumentDiagnostic(const json& params, Reply reply) {
  std::string path = UriToPath(params.at("textDocument").at("uri"));
  reply->Result({{"kind", "full"}, {"items", DiagnosticsFor(path)}});
}

void Session::OnWorkspaceDiagnostic(const json& params, Reply reply) {
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  json items = json::array();
  if (snap) {
    for (const auto& [path, placed] : snap->by_file) {
      items.push_back({{"uri", PathToUri(path)},
                       {"kind", "full"},
                       {"version", nullptr},
                       {"items", DiagnosticsFor(path)}});
    }
  }
  reply->Result({{"items", items}});
}

// ---- Hover ----

std::string Session::HoverMarkdown(const Snapshot& snap, const LocatedFinding& lf) {
  const Finding& f = lf.finding;
  char buf[256];
  std::string md = "**" + f.code + " " + f.name + "** (" + SeverityName(f.severity) + ")\n\n" +
                   f.message + "\n\n";
  std::snprintf(buf, sizeof(buf),
                "| time lost per step | share of step | steps | window |\n|---:|---:|---|---|\n| "
                "%s | %s | %s | %.3f-%.3f ms |\n\n",
                FormatMs(f.time_lost_us_per_step).c_str(), FormatPercent(f.share_of_step).c_str(),
                f.step_ids.empty()
                    ? "-"
                    : (std::to_string(f.step_ids.front()) +
                       (f.step_ids.size() > 1 ? "-" + std::to_string(f.step_ids.back()) : ""))
                          .c_str(),
                (f.start_ns - snap.span_start_ns) / 1e6, (f.end_ns - snap.span_start_ns) / 1e6);
  md += buf;
  if (!f.top_events.empty()) {
    md += "Top events: ";
    for (size_t i = 0; i < f.top_events.size() && i < 3; ++i) {
      std::snprintf(buf, sizeof(buf), "%s`%s` x%lld (%s)", i ? ", " : "",
                    f.top_events[i].name.substr(0, 60).c_str(),
                    static_cast<long long>(f.top_events[i].count),
                    FormatMs(f.top_events[i].total_us).c_str());
      md += buf;
    }
    md += "\n\n";
  }
  // GPU busy share across the finding's extent, as a sparkline of 24 slices.
  int64_t a = f.start_ns, b = std::max(f.end_ns, f.start_ns + 1);
  std::vector<double> slices;
  for (int k = 0; k < 24; ++k) {
    int64_t s0 = a + (b - a) * k / 24, s1 = a + (b - a) * (k + 1) / 24;
    slices.push_back(s1 > s0 ? static_cast<double>(ClippedLength(snap.gpu_busy, s0, s1)) / (s1 - s0)
                             : 0);
  }
  md += "GPU busy over the finding: `" + Sparkline(slices) + "`\n\n";
  // Where the finding's steps spent their time (critical path) and what the fix would save.
  const RuleResult& rr = snap.scan->rules;
  StepAttribution steps_time;
  auto add_step = [&](size_t k) {
    for (int c = 0; c < kCauseCount; ++c) steps_time.ns[c] += rr.time.steps[k].ns[c];
  };
  if (f.step_ids.empty()) {
    for (size_t k = 0; k < rr.time.steps.size(); ++k) add_step(k);
  } else {
    for (int64_t number : std::set<int64_t>(f.step_ids.begin(), f.step_ids.end())) {
      auto it = snap.step_index.find(number);
      if (it != snap.step_index.end()) add_step(it->second);
    }
  }
  if (steps_time.total() > 0) {
    md += "Where these steps' time went: `" + CauseBar(steps_time, 30) + "` " +
          FormatCauses(steps_time, 4) + "\n\n";
  }
  if (rr.run_ns > 0) {
    std::snprintf(buf, sizeof(buf), "%.2fx", rr.speedup);
    md += "Fixing it saves " + FormatMs(f.time_lost_us_per_step) + "/step (" +
          FormatPercent(f.share_of_step) +
          " of the step, replayed); all fixes together: this run "
          "could be " +
          buf + " faster.\n\n";
  }
  if (lf.located_by_shape)
    md +=
        "Placed on the one statement of the workspace with this fix's shape: the trace has no "
        "Python stacks (record with `with_stack=True` for exact lines).\n\n";
  const RuleInfo* info = FindRule(f.code);
  if (info) md += "Why: " + std::string(info->summary) + ". ";
  if (!f.fix.empty()) md += "Fix: `" + f.fix + "` (quick fix available). ";
  md += "[Docs](" + RuleDocsUrl(f.code, f.name) + ")";
  return md;
}

std::string Session::HoverOf(Snapshot& snap, size_t finding) {
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    auto it = snap.hover_markdown.find(finding);
    if (it != snap.hover_markdown.end()) return it->second;
  }
  std::string md = HoverMarkdown(snap, snap.scan->findings[finding]);
  std::lock_guard<std::mutex> lock(snap_mu_);
  return snap.hover_markdown.emplace(finding, std::move(md)).first->second;
}

void Session::OnHover(const json& params, Reply reply) {
  std::string path = UriToPath(params.at("textDocument").at("uri"));
  SourcePosition pos{params.at("position").at("line"), params.at("position").at("character")};
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  if (!snap) return reply->Result(nullptr);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Result(nullptr);
  std::string md;
  json range;
  // A code repeated on one line (as its diagnostic is published once) is shown in full once;
  // the others follow it as one line each.
  std::map<std::pair<std::string, int>, std::string> more;  // (code, line) -> their lines
  for (const Placed& p : PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    SourceRange r;
    ByteRange b;
    bool stale;
    if (!RangeOf(path, p, lf, &r, &b, nullptr, &stale)) continue;
    bool inside =
        (pos.line > r.start.line ||
         (pos.line == r.start.line && pos.character >= r.start.character)) &&
        (pos.line < r.end.line || (pos.line == r.end.line && pos.character <= r.end.character));
    if (!inside) continue;
    const auto key = std::make_pair(lf.finding.code, r.start.line);
    auto repeated = more.find(key);
    if (repeated != more.end()) {
      repeated->second += "- " + lf.finding.message + " (saves " +
                          FormatMs(lf.finding.time_lost_us_per_step) + "/step)\n";
      continue;
    }
    more[key];
    if (!md.empty()) md += "\n\n---\n\n";
    md += HoverOf(*snap, p.finding);
    if (auto d = DraftOf(*snap, p.finding)) {
      char conf[16];
      std::snprintf(conf, sizeof(conf), "%.0f%%", 100 * d->draft.confidence);
      const RuleInfo* cat = FindRule(d->draft.category);
      md += "\n\n**Drafted by " + d->draft.model + "** (unverified; " + d->draft.category +
            (cat ? std::string(" ") + cat->name : std::string(" unusual-window")) +
            ", confidence " + conf + ")\n\n" + d->draft.explanation_markdown;
      if (d->draft.fix) md += "\n\nDrafted fix: " + d->draft.fix->description + " (code action)";
    }
    range = RangeJson(r);
  }
  for (const auto& [key, lines] : more) {
    if (!lines.empty()) md += "\n\n---\n\nAlso " + key.first + " on this line:\n\n" + lines;
  }
  if (md.empty()) return reply->Result(nullptr);
  if (!hover_markdown_) {
    return reply->Result({{"contents", {{"kind", "plaintext"}, {"value", MarkdownToPlainText(md)}}},
                          {"range", range}});
  }
  reply->Result({{"contents", {{"kind", "markdown"}, {"value", md}}}, {"range", range}});
}

// ---- Code actions ----

json Session::FixesFor(const std::string& uri, const std::string& path, const Placed& p,
                       const LocatedFinding& lf, const json& diagnostic, bool with_edits) {
  json actions = json::array();
  auto src = SourceFor(path);
  if (!src) return actions;
  AddDraftedFix(uri, p, lf, *src, diagnostic, with_edits, &actions);
  if (lf.finding.fix.empty()) return actions;
  FixRequest req;
  req.recipe = lf.finding.fix;
  req.line = p.line;
  // What the trace proves: per-parameter fill kernels under zero_grad mean set_to_none was off
  // (the default before torch 2.0); GPU activity means the step runs on a CUDA/ROCm device.
  if (lf.finding.code == "TTA005") req.facts["torch_before_2"] = "1";
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    if (snapshot_ && snapshot_->has_gpu) req.facts["device"] = "cuda";
  }
  auto fixes = ComputeFixes(*src, req);
  if (!fixes.ok()) {
    ClientLog("no mechanical fix for " + lf.finding.code + ": " + fixes.status().message());
    return actions;
  }
  json mechanical = json::array();
  for (const QuickFix& fx : *fixes) {
    json action = {{"title", fx.title}, {"kind", "quickfix"}, {"isPreferred", fx.preferred}};
    if (!diagnostic.is_null()) action["diagnostics"] = json::array({diagnostic});
    if (with_edits) {
      json edits = json::array();
      for (const TextEdit& e : fx.edits)
        edits.push_back(
            {{"range", RangeJson(src->ToRange(e.range, encoding_))}, {"newText", e.new_text}});
      action["edit"] = {{"changes", {{uri, edits}}}};
    } else {
      action["data"] = {{"uri", uri}, {"finding", p.finding}, {"title", fx.title}};
    }
    mechanical.push_back(std::move(action));
  }
  // The catalogue's fixes first, the drafted one after them.
  for (auto& a : actions) mechanical.push_back(std::move(a));
  return mechanical;
}

void Session::AddDraftedFix(const std::string& uri, const Placed& p, const LocatedFinding& lf,
                            const PythonSource& src, const json& diagnostic, bool with_edits,
                            json* actions) {
  std::shared_ptr<const llm::FindingDraft> d;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    // Only the snapshot |lf| belongs to holds its draft.
    if (!snapshot_ || p.finding >= snapshot_->scan->findings.size() ||
        &snapshot_->scan->findings[p.finding] != &lf)
      return;
    auto it = snapshot_->drafts.find(p.finding);
    if (it == snapshot_->drafts.end()) return;
    d = it->second;
  }
  if (!d->draft.fix) return;
  // The buffer may have changed since the draft: the edits move with the finding's line and
  // apply only while the lines they touch are unchanged and the result still parses.
  llm::FixCheck check;
  check.finding_line = p.line;
  check.line_shift = p.line - d->finding_line;
  check.expected_first_line = d->fix_first_line;
  check.expected_lines = &d->fix_lines;
  auto edits = llm::CheckDraftFix(src, *d->draft.fix, check);
  if (!edits.ok()) {
    ClientLog("llm: dropped the fix drafted by " + d->draft.model + " for " + lf.finding.code +
              ": " + edits.status().message());
    return;
  }
  const std::string title =
      "Apply the fix drafted by " + d->draft.model + ": " + d->draft.fix->description;
  json action = {{"title", title}, {"kind", "quickfix"}, {"isPreferred", false}};
  if (!diagnostic.is_null()) action["diagnostics"] = json::array({diagnostic});
  if (with_edits) {
    json lsp_edits = json::array();
    for (const TextEdit& e : *edits)
      lsp_edits.push_back(
          {{"range", RangeJson(src.ToRange(e.range, encoding_))}, {"newText", e.new_text}});
    action["edit"] = {{"changes", {{uri, lsp_edits}}}};
  } else {
    action["data"] = {{"uri", uri}, {"finding", p.finding}, {"title", title}};
  }
  actions->push_back(std::move(action));
}

void Session::OnCodeAction(const json& params, Reply reply) {
  const std::string uri = params.at("textDocument").at("uri");
  const std::string path = UriToPath(uri);
  const json& range = params.at("range");
  int first = range.at("start").at("line"), last = range.at("end").at("line");
  std::vector<std::string> only;
  if (params.contains("context") && params["context"].contains("only")) {
    for (const auto& k : params["context"]["only"]) only.push_back(k);
  }
  auto wants = [&](const std::string& kind) {
    if (only.empty()) return true;
    for (const auto& o : only)
      if (kind.rfind(o, 0) == 0) return true;
    return false;
  };
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  json actions = json::array();
  if (!snap) return reply->Result(actions);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Result(actions);
  json all_edits = json::array();
  std::set<std::pair<std::string, int>> suppress_offered;  // (code, line)
  json suppressions = json::array();                       // after every fix
  for (const Placed& p : PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    SourceRange r;
    ByteRange b;
    bool stale;
    std::shared_ptr<const PythonSource> src;
    if (!RangeOf(path, p, lf, &r, &b, &src, &stale) || stale) continue;
    if (wants("quickfix") && r.start.line <= last && r.end.line >= first) {
      json diag = {{"range", RangeJson(r)},
                   {"code", lf.finding.code},
                   {"source", "ttap"},
                   {"message", lf.finding.name + ": " + lf.finding.message}};
      for (auto& a : FixesFor(uri, path, p, lf, diag, !resolve_code_actions_)) actions.push_back(a);
      if (suppress_offered.insert({lf.finding.code, r.start.line}).second) {
        const TextEdit e = SuppressionEdit(*src, r.start.line, lf.finding.code);
        suppressions.push_back(
            {{"title", "Suppress " + lf.finding.code + " on this line (# ttap: ignore)"},
             {"kind", "quickfix"},
             {"isPreferred", false},
             {"diagnostics", json::array({diag})},
             {"edit",
              {{"changes",
                {{uri,
                  {{{"range", RangeJson(src->ToRange(e.range, encoding_))},
                    {"newText", e.new_text}}}}}}}}});
      }
    }
    if (wants("source.fixAll.ttap") && !only.empty()) {
      for (auto& a : FixesFor(uri, path, p, lf, nullptr, true)) {
        if (a.value("isPreferred", false))
          for (auto& e : a["edit"]["changes"][uri]) all_edits.push_back(e);
      }
    }
  }
  for (auto& a : suppressions) actions.push_back(std::move(a));
  if (!all_edits.empty()) {
    actions.push_back({{"title", "ttap: apply every safe fix in this file"},
                       {"kind", "source.fixAll.ttap"},
                       {"edit", {{"changes", {{uri, all_edits}}}}}});
  }
  reply->Result(actions);
}

void Session::OnCodeActionResolve(const json& action, Reply reply) {
  json resolved = action;
  if (!action.contains("data")) return reply->Result(resolved);
  const std::string uri = action["data"].at("uri");
  size_t index = action["data"].at("finding");
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  if (!snap || index >= snap->scan->findings.size())
    return reply->Error(kContentModified, "the analysis changed");
  const std::string path = UriToPath(uri);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Error(kContentModified, "the analysis changed");
  for (const Placed& p : PlacedIn(*snap, path)) {
    if (p.finding != index) continue;
    for (auto& a : FixesFor(uri, path, p, snap->scan->findings[index], nullptr, true)) {
      if (a["title"] == action["data"].value("title", "")) {
        resolved["edit"] = a["edit"];
        return reply->Result(resolved);
      }
    }
  }
  reply->Error(kContentModified, "the fix no longer applies to this buffer");
}

// ---- Code lens and commands ----

void Session::OnCodeLens(const json& params, Reply reply) {
  const std::string path = UriToPath(params.at("textDocument").at("uri"));
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  json lenses = json::array();
  auto src = SourceFor(path);
  if (!snap || !src) return reply->Result(lenses);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Result(lenses);
  // One lens per enclosing function (or the module's first line), summing its findings.
  std::map<uint32_t, std::pair<double, double>> per_scope;  // start byte -> (share, ms/step)
  for (const Placed& p : PlacedIn(*snap, path)) {
    const Finding& f = snap->scan->findings[p.finding].finding;
    SourceRange r;
    ByteRange b;
    bool stale;
    if (!RangeOf(path, p, snap->scan->findings[p.finding], &r, &b, nullptr, &stale)) continue;
    TSNode stmt = StatementAtLine(*src, p.line - 1);
    uint32_t at = 0;
    if (!IsNull(stmt)) {
      TSNode scope = EnclosingScope(stmt);
      if (NodeType(scope) == "function_definition") at = ts_node_start_byte(scope);
    }
    auto& acc = per_scope[at];
    acc.first += f.share_of_step;
    acc.second += f.time_lost_us_per_step / 1000.0;
  }
  for (const auto& [at, acc] : per_scope) {
    SourcePosition pos = src->ToPosition(at, encoding_);
    char title[128];
    std::snprintf(title, sizeof(title), "ttap: %s of the step lost here · %.1f ms/step",
                  FormatPercent(std::min(1.0, acc.first)).c_str(), acc.second);
    lenses.push_back({{"range", RangeJson({pos, pos})},
                      {"command", {{"title", title}, {"command", "ttap.showTraceSummary"}}}});
  }
  reply->Result(lenses);
}

std::string Session::SummaryMarkdown(const std::atomic<bool>* cancel) {
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  if (!snap) return "No trace analysed yet.";
  std::string md = snap->summary_head;
  for (const auto& lf : snap->scan->findings) {
    if (cancel && cancel->load()) break;
    md += "- " + lf.finding.code + " " + lf.finding.name + ": " + lf.finding.message + "\n";
  }
  return md;
}

void Session::OnExecuteCommand(const json& params, Reply reply,
                               const std::shared_ptr<std::atomic<bool>>& cancelled) {
  const std::string cmd = params.at("command");
  if (cmd == "ttap.rescan" || cmd == "ttap.server.rescan") {
    RequestAnalysis(true);
    return reply->Result(nullptr);
  }
  if (cmd == "ttap.showTraceSummary" || cmd == "ttap.server.showTraceSummary") {
    // On its own thread: a summary of a large trace must not hold up hovers behind it.
    const std::string key = reply->id().dump();
    // The editor plugins ask with the server's id and show the result themselves; a client that
    // sends the code lens's id (eglot, lsp-mode) gets it as a message too.
    const bool show = cmd == "ttap.showTraceSummary";
    return RunSlow([this, reply, cancelled, key, show] {
      std::string md = cancelled->load() ? "" : SummaryMarkdown(cancelled.get());
      if (cancelled->load()) {
        reply->Error(kRequestCancelled, "cancelled");
      } else {
        if (show) out_.Notify("window/showMessage", {{"type", 3}, {"message", md}});
        reply->Result({{"markdown", md}});
      }
      ForgetRequest(key);
    });
  }
  reply->Error(kInvalidParams, "unknown command " + cmd);
}

int RunSession(Framer* framer, const ServerOptions& options) {
  Session session(framer, options);
  return session.Run();
}

}  // namespace ttap::lsp

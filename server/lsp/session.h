// Session: the language server session's class, shared by the files that implement it (the
// server's internal header; nothing outside server/lsp/ includes it). lsp_server.cpp holds the
// reader loop, the binding of each method to its handler and the lifecycle; session_requests.cpp
// the request thread; session_settings.cpp the settings; session_documents.cpp the open buffers;
// session_analysis.cpp one analysis run (scheduled by scheduler.h), the watch loop and snapshots;
// session_features.cpp the feature handlers, which ask feature_diagnostics.cpp, feature_hover.cpp,
// feature_code_actions.cpp and feature_commands.cpp (one LSP feature each, functions of the view
// in feature_view.h) and reply. Ownership (as clangd's ClangdLSPServer -> ClangdServer ->
// TUScheduler): the scheduler (scheduler.h) owns what analyses leave (snapshot.h: the snapshot, the
// findings' moved lines, the trace choice) and hands the features a read-only view; the settings
// are an immutable value swapped whole (no lock). The session's two mutexes: queue_mu_ (the request
// queue, pending requests, slow threads) and docs_mu_ (open buffers). Locks held together: only
// docs_mu_ then the scheduler's state lock (OnDidChange moves the findings' lines); every other
// lock is taken alone, so no cycle can form.
#pragma once

#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
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

#include "analysis/load/trace_loader.h"
#include "analysis/model/trace_stats.h"
#include "mapping/python_source.h"
#include "mapping/quick_fixes.h"
#include "mapping/source_ranges.h"
#include "mapping/suppressions.h"
#include "mapping/syntax_util.h"
#include "mapping/workspace_index.h"
#include "server/config.h"
#include "server/core/analysis_core.h"
#include "server/core/explain.h"
#include "server/core/markdown_text.h"
#include "server/core/scan_trace.h"
#include "server/llm/drafter.h"
#include "server/llm/llm_config.h"
#include "server/lsp/binder.h"
#include "server/lsp/dir_watcher.h"
#include "server/lsp/feature_view.h"
#include "server/lsp/jsonrpc.h"
#include "server/lsp/lsp_server.h"
#include "server/lsp/protocol.h"
#include "server/lsp/scheduler.h"
#include "server/lsp/snapshot.h"
#include "server/lsp/trace_discovery.h"
#include "server/lsp/uri.h"
#include "server/window_model.h"
#include "version.h"

namespace ttap::lsp {

using Clock = std::chrono::steady_clock;

inline void Log(const std::string& s) { std::fprintf(stderr, "ttap-lsp: %s\n", s.c_str()); }

inline int64_t MtimeNs(const std::string& path, int64_t* size = nullptr) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  if (size) *size = st.st_size;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The session's settings: the workspace folders, the project's configuration as the editor's
// `ttap` settings amend it, and the editor's choices for this session.
struct SessionSettings {
  std::vector<std::string> roots;
  Config config;
  int rank = 0;
  // LLM drafts: on only when the editor's `llm` settings give a baseUrl or enabled: true; the
  // editor's values win over TTAP_LLM_* variables, which win over [tool.ttap.llm].
  bool llm_enabled = false;
  llm::LlmOverrides llm_editor;
  // The window scorer (`model` settings): opt-in (models/MODEL_CARD.md, "Opt-in"): on when the
  // editor says enabled: true (the shipped weights, WindowModel::DefaultPath, unless a path is
  // given) or names a path; threshold < 0 keeps the file's flag threshold.
  bool model_enabled = false;
  std::string model_path, model_device = "auto";
  double model_threshold = -1;
};

class Session : public FeatureView {
 public:
  Session(Framer* framer, const ServerOptions& options)
      : framer_(framer), out_(framer), options_(options) {
    BindHandlers();
  }
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
    // Where the last edit was (edits find their offsets from there), and whether the buffer
    // has a lone '\r' (then offsets are found from the start, as LSP and tree-sitter count its
    // lines differently).
    LineHint hint;
    bool lone_cr = false;
  };
  // Dispatch: the handlers by method, each with its params' struct (protocol.h).
  void BindHandlers();
  void Handle(const json& msg);
  void ForgetRequest(const std::string& key);
  void OnCancelRequest(const proto::CancelParams& params);
  // Lifecycle and settings.
  void OnInitialize(const proto::InitializeParams& params, Reply reply);
  void OnInitialized(const NoParams&);
  void OnShutdown(const NoParams&, Reply reply);
  void OnSync(const NoParams&, Reply reply);  // tests: waits until queued analysis is published
  void OnDidChangeConfiguration(const proto::DidChangeConfigurationParams& params);
  void OnDidChangeWatchedFiles(const proto::DidChangeWatchedFilesParams& params);
  void OnDidChangeWorkspaceFolders(const proto::DidChangeWorkspaceFoldersParams& params);
  // ttap's settings (the editor's "ttap" section; their own schema, read as JSON).
  void ApplySettings(const json& settings);
  void PullConfiguration();
  // Documents.
  void OnDidOpen(const proto::DidOpenTextDocumentParams& params);
  void OnDidChange(const proto::DidChangeTextDocumentParams& params);
  void OnDidClose(const proto::DidCloseTextDocumentParams& params);
  // The file as the editor has it (or as on disk); |version| gets the buffer's version (-1 on
  // disk). Parses incrementally from the buffer's previous parse. With |exact_through| >= 0 the
  // caller reads only lines up to it: when every edit since the last parse starts below that
  // line, that parse is returned as it is (a 6 MB buffer re-parses in 50-100 ms) and
  // |*edited_from| gets the first edited line (else INT_MAX).
  std::shared_ptr<const PythonSource> SourceFor(const std::string& path, int64_t* version = nullptr,
                                                int exact_through = -1,
                                                int* edited_from = nullptr) override;
  // Request thread.
  void Enqueue(std::function<void()> run);
  void RequestLoop();
  void StopRequestThread();
  // Publishes |uri|'s diagnostics from the request thread (coalesced: one per queued batch);
  // after an edit, once the buffer has been quiet for kPublishAfterEditMs (typing re-parses a
  // large buffer once per pause, not once per keystroke, and hovers are not queued behind it).
  void QueuePublish(const std::string& uri, bool after_edit = false);
  static constexpr int kPublishAfterEditMs = 150;
  // Runs |fn| on its own thread, so a slow request (a trace summary) never holds up hovers.
  void RunSlow(std::function<void()> fn);
  // True when the editor's process (initialize's processId) is gone.
  bool ClientGone() const;
  // Analysis.
  void StartWorkers();
  void StopWorkers();
  void RequestAnalysis(bool force);
  // One run of the scheduler: the newest trace analysed (when |force| or it changed), or the
  // findings dropped when none is left; true when it must run again at once.
  bool AnalyseNewest(bool force, const CancelToken& cancel);
  void WatchLoop();
  std::string NewestTrace(int64_t* mtime, int64_t* size);
  // Unreadable traces told in a popup so far (the first few; the rest go to the log).
  int told_unreadable_ = 0;
  static constexpr int kUnreadablePopups = 3;
  // False when the trace failed to load (recorded in failed_traces_) or is still being written.
  // |broken|: set when the trace could not be read (and is passed over until it changes).
  bool Analyse(const std::string& trace, int64_t mtime, const CancelToken& cancel,
               bool* broken = nullptr);
  // The workspace's traces for this rank, newest first, without those that failed unchanged.
  std::vector<std::pair<int64_t, std::string>> TraceCandidates(int64_t* newest_size);
  // A trace written in the last second may still be being written: waits until its (size,
  // mtime) hold still for 250 ms, and returns them.
  std::pair<int64_t, int64_t> WhenQuiet(const std::string& trace, const CancelToken& cancel);
  // After a failed load: true when |trace| has changed since |before| or changes before it is
  // 5 s old (a writer still at work), false when it holds still (broken).
  bool ChangesSoon(const std::string& trace, std::pair<int64_t, int64_t> before,
                   const CancelToken& cancel);
  // The window scorer the settings name, opened once per (path, device) on a helper thread that
  // runs while the trace loads; null when it is off or unusable (the rules run alone).
  WindowScorerFuture WindowScorer();
  // LLM drafts for |snap|'s findings when the editor turned drafting on (worker thread).
  void DraftFindingsOf(const std::shared_ptr<Snapshot>& snap, const CancelToken& cancel);
  std::shared_ptr<const llm::FindingDraft> DraftOf(const Snapshot& snap, size_t finding) override;
  void Status(const std::string& state, const std::string& detail = "");
  // A log line to the client's log (window/logMessage, type Log), or to stderr when the client
  // is gone: never both, since editors show the two in the same output channel.
  void ClientLog(const std::string& message) override {
    if (!out_.alive()) return Log(message);
    out_.Notify("window/logMessage",
                proto::LogMessageParams{proto::MessageType::kLog, "ttap: " + message});
  }
  // The FeatureView the features read (feature_view.h; session_features.cpp).
  std::shared_ptr<const Snapshot> View() override { return scheduler_.View(); }
  // A copy of the findings placed in |path| (their lines move with edits, in the scheduler's
  // state).
  std::vector<Placed> PlacedIn(const Snapshot& snap, const std::string& path) override;
  // The finding's explanation (FindingMarkdown, server/core/explain.h), cached per finding.
  std::string Explanation(const Snapshot& snap, size_t finding) override;
  const ClientCaps& client() const override { return caps_; }
  // Diagnostics pushed for every file of the snapshot (or a refresh asked for).
  void PublishAll();
  // LSP feature handlers: each asks its feature function (feature_view.h) and replies.
  void OnHover(const proto::HoverParams& params, Reply reply);
  void OnCodeAction(const proto::CodeActionParams& params, Reply reply);
  void OnCodeActionResolve(const proto::CodeActionResolveParams& params, Reply reply);
  void OnCodeLens(const proto::CodeLensParams& params, Reply reply);
  void OnExecuteCommand(const proto::ExecuteCommandParams& params, Reply reply,
                        const CancelFlag& cancelled);
  void OnDocumentDiagnostic(const proto::DocumentDiagnosticParams& params, Reply reply);
  void OnWorkspaceDiagnostic(const proto::WorkspaceDiagnosticParams& params, Reply reply);
  // Drops the trace's events once nothing reads them, and gives the memory back to the system.
  static void ReleaseTrace(Snapshot* snap);

  Framer* framer_;
  Outbox out_;
  ServerOptions options_;
  bool authorised_ = false;  // the token was given (reader thread only)
  Binder binder_;

  // The request thread: requests and notifications other than document edits run there in the
  // order they arrived; the reader thread only decodes, applies document edits and cancels.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::function<void()>> queue_;  // requests and notifications, in arrival order
  bool queue_stop_ = false;
  std::set<std::string> publish_queued_;  // uris whose publish is queued (under queue_mu_)
  // Publishes waiting for their buffer to be quiet: uri -> when (under queue_mu_).
  std::map<std::string, std::chrono::steady_clock::time_point> publish_due_;
  std::thread request_thread_;
  // Requests not yet answered, by id (dumped), with the flag $/cancelRequest sets (under
  // queue_mu_).
  std::map<std::string, CancelToken> requests_;
  struct SlowThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<SlowThread> slow_threads_;  // under queue_mu_
  int64_t client_pid_ = 0;                // initialize's processId; 0: not watched

  enum class State { kUninitialized, kRunning, kShutdown } state_ = State::kUninitialized;
  bool exit_received_ = false;

  // Client capabilities we use.
  std::string encoding_name_ = "utf-16";
  bool pull_diagnostics_ = false;
  bool diagnostic_refresh_ = false;
  bool workspace_configuration_ = false;
  bool watch_registration_ = false;
  bool work_done_progress_ = false;
  bool code_lens_refresh_ = false;
  ClientCaps caps_;  // what the features read (feature_view.h)

  // Settings: an immutable value, replaced whole (UpdateSettings) and read by any thread
  // (Settings()) without a lock.
  std::shared_ptr<const SessionSettings> settings_ = std::make_shared<const SessionSettings>();
  std::shared_ptr<const SessionSettings> Settings() const { return std::atomic_load(&settings_); }
  // Applies |edit| to a copy of the settings and publishes it; retried on a concurrent update
  // (|edit| may run more than once: it only edits its argument).
  template <typename Edit>
  void UpdateSettings(Edit&& edit) {
    std::shared_ptr<const SessionSettings> current = Settings();
    while (true) {
      auto next = std::make_shared<SessionSettings>(*current);
      edit(*next);
      std::shared_ptr<const SessionSettings> published = std::move(next);
      if (std::atomic_compare_exchange_weak(&settings_, &current, published)) return;
    }
  }
  // The worker's client (recreated when the settings change) and cache.
  std::unique_ptr<llm::LlmClient> llm_client_;
  std::string llm_client_key_;
  // What `ttap scan` does with a trace, shared (server/core/analysis_core.h): the window scorer
  // and workspace index caches, load + scan.
  AnalysisCore core_{
      [this](const std::string& message) { ClientLog("window scorer unavailable: " + message); }};

  // Documents (reader thread only) and the parse cache (shared).
  std::mutex docs_mu_;  // docs_ is written by the reader thread, read by the worker too
  std::map<std::string, Document> docs_;
  SourceCache sources_;

  std::set<std::string> published_;  // files we pushed diagnostics to
  // What the Problems view shows of the snapshot: diagnostics at information and above, one per
  // code and line, in files (hints and findings without a file are not there). Set with each
  // publish; the status's count.
  std::atomic<size_t> problems_shown_{0};
  // When analyses run (the worker and watch threads, requests, cancellation): scheduler.h.
  AnalysisScheduler scheduler_;
  bool told_no_trace_ = false;
  int progress_token_ = 0;
  // The sibling ranks' timelines, reused while their files hold still (worker thread only).
  SiblingTimelineCache sibling_timelines_;
};

}  // namespace ttap::lsp

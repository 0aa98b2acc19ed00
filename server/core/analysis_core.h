// AnalysisCore: what `ttap scan` and the language server both do with a trace, in one LSP-free
// object (as clangd's ClangdServer sits under ClangdLSPServer): turn the configuration and the
// caller's choices into scan options, keep the workspace index and the window scorer between
// analyses, load and scan a trace. No JSON, no protocol: RunScanCommand (server/scan.cpp) and the
// language server's worker (server/lsp/session_analysis.cpp) are its callers, so the two can
// never drift apart. Thread-safe: the index and scorer caches have their own locks.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "analysis/base/cancel.h"
#include "analysis/base/status.h"
#include "mapping/workspace_index.h"
#include "server/config.h"
#include "server/core/scan_trace.h"
#include "server/window_model.h"

namespace ttap {

// One scan's settings besides the trace: the configuration (thresholds, select/ignore, user
// frames, path maps, window fusion, window count) and what the caller decides (CLI flags or the
// editor's settings).
struct ScanRequest {
  Config config;
  std::string workspace_root;   // frames resolve here
  bool index_workspace = true;  // false: no workspace, frames stay as recorded (eval)
  Severity min_severity = Severity::kInfo;
  // `--select` / `--ignore` (scan) override the configuration's lists when set.
  std::optional<std::vector<std::string>> select, ignore;
  // `# ttap: ignore[...]` of the files on disk; the language server applies its buffers' instead.
  bool apply_suppressions = true;
  int load_threads = 0;            // 0: the loader's default
  int windows = -1;                // < 0: config.windows
  double model_threshold = -1;     // < 0: the weights file's own flag threshold
  SourceCache* sources = nullptr;  // parsed workspace files; a process-wide cache when null
  CancelToken cancel;
  std::function<void()> on_loaded;  // called once the trace has loaded, before the scan
};

using WindowScorerFuture = std::shared_future<std::shared_ptr<const WindowModel>>;

class AnalysisCore {
 public:
  // |log| receives the core's warnings (a scorer that cannot open); stderr when empty.
  explicit AnalysisCore(std::function<void(const std::string&)> log = {});

  // The window scorer of weights |path| on |device|, opened once per (path, device) on its own
  // thread (libtorch takes ~0.5 s to map) while traces load; |path| "" turns it off. A scorer
  // that cannot open resolves to null (rules only) and is logged once.
  WindowScorerFuture Scorer(const std::string& path, const std::string& device);
  // "off", "PATH (DEVICE)" once open, or "unavailable: why".
  std::string ScorerState() const;

  // The workspace index of |root| with |maps|: built once and shared by every scan until either
  // changes. It is never edited in place: a file event replaces it with an edited copy, so a
  // scan that holds it reads a consistent index.
  std::shared_ptr<const WorkspaceIndex> Index(const std::string& root,
                                              const std::vector<PathMap>& maps);
  // File events keep the cached index current (didChangeWatchedFiles): one edited copy per
  // batch of events.
  void FilesChanged(const std::vector<std::string>& created,
                    const std::vector<std::string>& deleted);

  // Loads |trace| and scans it as |request| says, with |scorer| when valid (waited for after
  // the load). |load_ms| gets the load's time when not null. Errors: the trace does not load
  // (or the request was cancelled while it loaded).
  StatusOr<ScanResult> LoadAndScan(const std::string& trace, const ScanRequest& request,
                                   const WindowScorerFuture& scorer, double* load_ms = nullptr);

  // The workspace folder among |roots| that holds |trace| (the longest); the first when none
  // does, "." when there are none.
  static std::string RootOf(const std::string& trace, const std::vector<std::string>& roots);

 private:
  void Log(const std::string& message) const;

  std::function<void(const std::string&)> log_;
  mutable std::mutex scorer_mu_;
  std::string scorer_key_;
  WindowScorerFuture scorer_;
  std::string scorer_state_ = "off";
  std::mutex index_mu_;
  std::shared_ptr<const WorkspaceIndex> index_;
  std::string index_key_;
};

}  // namespace ttap

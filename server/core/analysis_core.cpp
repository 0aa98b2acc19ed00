// AnalysisCore (analysis_core.h): options, the index and scorer caches, load + scan.
#include "server/core/analysis_core.h"

#include <chrono>
#include <cstdio>

#include "analysis/load/trace_loader.h"

namespace ttap {

namespace {

std::vector<PathMap> PathMapsOf(const Config& config) {
  std::vector<PathMap> maps;
  for (const auto& [from, to] : config.path_maps) maps.push_back({from, to});
  return maps;
}

}  // namespace

AnalysisCore::AnalysisCore(std::function<void(const std::string&)> log) : log_(std::move(log)) {}

void AnalysisCore::Log(const std::string& message) const {
  if (log_) return log_(message);
  std::fprintf(stderr, "ttap: warning: %s\n", message.c_str());
}

WindowScorerFuture AnalysisCore::Scorer(const std::string& path, const std::string& device) {
  std::lock_guard<std::mutex> lock(scorer_mu_);
  const std::string key = path.empty() ? "" : path + " (" + device + ")";
  if (key == scorer_key_ && (scorer_.valid() || key.empty())) return scorer_;
  scorer_key_ = key;
  if (key.empty()) {
    scorer_ = {};
    scorer_state_ = "off";
    return scorer_;
  }
  // One intra-op thread: measured faster than two (bench/bench_score.sh), the windows being
  // small matrices.
  scorer_ = std::async(std::launch::async, [this, path, device, key]() {
              auto opened = WindowModel::Open(path, device, 1);
              std::shared_ptr<const WindowModel> m;
              std::string state;
              if (opened.ok()) {
                m = std::move(opened.value());
                state = m->path() + " (" + m->device() + ")";
              } else {
                state = "unavailable: " + opened.status().message();
                Log(opened.status().message() + "; rules only");
              }
              std::lock_guard<std::mutex> lock(scorer_mu_);
              if (scorer_key_ == key) scorer_state_ = state;
              return m;
            }).share();
  return scorer_;
}

std::string AnalysisCore::ScorerState() const {
  std::lock_guard<std::mutex> lock(scorer_mu_);
  return scorer_state_;
}

std::shared_ptr<const WorkspaceIndex> AnalysisCore::Index(const std::string& root,
                                                          const std::vector<PathMap>& maps) {
  std::lock_guard<std::mutex> lock(index_mu_);
  std::string key = root;
  for (const auto& m : maps) key += "|" + m.from + ">" + m.to;
  if (!index_ || index_key_ != key) {
    index_ = std::make_shared<WorkspaceIndex>(WorkspaceIndex::Build(root, maps));
    index_key_ = key;
  }
  return index_;
}

void AnalysisCore::FilesChanged(const std::vector<std::string>& created,
                                const std::vector<std::string>& deleted) {
  std::lock_guard<std::mutex> lock(index_mu_);
  if (!index_ || (created.empty() && deleted.empty())) return;
  auto edited = std::make_shared<WorkspaceIndex>(*index_);
  bool changed = false;
  for (const std::string& path : created) changed = edited->AddFile(path) || changed;
  for (const std::string& path : deleted) changed = edited->RemoveFile(path) || changed;
  if (changed) index_ = std::move(edited);
}

StatusOr<ScanResult> AnalysisCore::LoadAndScan(const std::string& trace, const ScanRequest& request,
                                               const WindowScorerFuture& scorer, double* load_ms) {
  const Config& config = request.config;
  LoadOptions lo;
  if (request.load_threads > 0) lo.threads = request.load_threads;
  lo.window_count = request.windows > 0 ? request.windows : config.windows;
  lo.cancel = request.cancel;
  lo.keep_rewrite_columns = false;  // nothing here rewrites the trace
  const auto load_start = std::chrono::steady_clock::now();
  TTAP_ASSIGN_OR_RETURN(std::unique_ptr<Trace> loaded, LoadTrace(trace, lo));
  if (load_ms) {
    *load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start)
            .count();
  }
  if (request.on_loaded) request.on_loaded();
  const std::shared_ptr<const WorkspaceIndex> index =
      request.index_workspace ? Index(request.workspace_root, PathMapsOf(config)) : nullptr;
  const FrameFilter filter{config.user_frames_include, config.user_frames_exclude};
  ScanOptions so;
  so.rules.values = config.thresholds;
  so.min_severity = request.min_severity;
  so.select = request.select.value_or(config.select);
  so.ignore = request.ignore.value_or(config.ignore);
  so.apply_suppressions = request.apply_suppressions;
  so.workspace = index.get();
  so.frame_filter = &filter;
  so.sources = request.sources;
  // The scorer opened while the trace loaded; null when it is off or cannot be used.
  const std::shared_ptr<const WindowModel> model = scorer.valid() ? scorer.get() : nullptr;
  if (model) {
    so.model = model.get();
    so.model_threshold = request.model_threshold;
    so.window_fusion = FindWindowFusion(config.window_fusion);
  }
  return ScanTrace(std::move(loaded), so);
}

std::string AnalysisCore::RootOf(const std::string& trace, const std::vector<std::string>& roots) {
  std::string root = roots.empty() ? "." : roots[0];
  size_t longest = 0;
  for (const auto& r : roots) {
    if (trace.rfind(r + "/", 0) == 0 && r.size() > longest) {
      longest = r.size();
      root = r;
    }
  }
  return root;
}

}  // namespace ttap

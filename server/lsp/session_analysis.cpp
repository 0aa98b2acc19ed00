// The session's analysis side (see session.h): what one run of the scheduler (scheduler.h) does
// (find the newest trace, load and scan it through the core, publish), the watch loop, snapshots
// prepared for hovers, the window scorer and LLM drafts.
#include "server/lsp/session.h"

namespace ttap::lsp {

// ---- Analysis ----

void Session::StartWorkers() {
  // The window scorer starts opening now, so the first trace waits for it as little as possible.
  WindowScorer();
  AnalysisScheduler::WatchFn watch;
  if (!watch_registration_) watch = [this] { WatchLoop(); };
  scheduler_.Start(
      [this](bool force, const CancelToken& cancel) { return AnalyseNewest(force, cancel); },
      std::move(watch));
}

void Session::StopWorkers() { scheduler_.Stop(); }

void Session::RequestAnalysis(bool force) { scheduler_.Request(force); }

std::vector<std::pair<int64_t, std::string>> Session::TraceCandidates(int64_t* newest_size) {
  std::vector<std::string> roots, globs;
  int rank;
  {
    const auto settings = Settings();
    roots = settings->roots;
    globs = settings->config.trace_globs;
    rank = settings->rank;
  }
  std::vector<std::string> found;
  size_t dirs_left = 50000;
  std::set<std::pair<dev_t, ino_t>> visited;
  for (const auto& r : roots) FindTraces(r, globs, &found, &dirs_left, &visited);
  // Per rank: files named for another rank ("rank-3", "rank_3") are not this session's.
  std::vector<std::string> mine;
  for (const auto& f : found) {
    int r = RankFromFileName(f);
    if (r < 0 || r == rank) mine.push_back(f);
  }
  if (!mine.empty()) found.swap(mine);
  std::map<std::string, std::pair<int64_t, int64_t>> failed;
  {
    auto locked = scheduler_.LockState();
    failed = locked->failed_traces;
  }
  std::vector<std::pair<int64_t, std::string>> out;
  int64_t best_mtime = -1;
  for (const auto& f : found) {
    int64_t s = 0;
    int64_t m = MtimeNs(f, &s);
    auto bad = failed.find(f);
    if (bad != failed.end() && bad->second == std::make_pair(s, m)) continue;  // unchanged
    if (m > best_mtime) {
      best_mtime = m;
      if (newest_size) *newest_size = s;
    }
    out.emplace_back(m, f);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

std::string Session::NewestTrace(int64_t* mtime, int64_t* size) {
  auto candidates = TraceCandidates(size);
  if (mtime) *mtime = candidates.empty() ? -1 : candidates.front().first;
  return candidates.empty() ? std::string() : candidates.front().second;
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
  while (true) {
    std::vector<std::string> roots, globs;
    {
      const auto settings = Settings();
      roots = settings->roots;
      globs = settings->config.trace_globs;
    }
    if (!watcher || roots != watched_roots || watcher->RootsMoved()) {
      watcher = std::make_unique<DirWatcher>(roots, SkipDirectory);
      watched_roots = roots;
      settled = false;
      if (!watcher->ok()) ClientLog("polling for traces: " + watcher->why_not());
    }
    if (settled && watcher->ok()) {
      auto relevant = [&](const std::string& path) {
        for (const auto& r : roots) {
          if (path.rfind(r + "/", 0) == 0 && MatchesAnyGlob(globs, path.substr(r.size() + 1)))
            return true;
        }
        return false;
      };
      const bool changed = watcher->Wait(250, relevant);  // short slices: stopping is prompt
      if (scheduler_.stopping()) return;
      if (!changed) continue;
      settled = false;
      quiet_polls = 0;
    } else {
      const int wait_ms =
          watcher->ok() ? options_.poll_interval_ms
                        : std::min(30000, options_.poll_interval_ms << std::min(quiet_polls, 5));
      if (!scheduler_.Pause(wait_ms, CancelToken())) return;
    }
    int64_t mtime = -1, size = -1;
    std::string newest = NewestTrace(&mtime, &size);
    const bool stable = newest == seen && size == seen_size && mtime == seen_mtime;
    if (newest.empty()) {
      // The shown trace was deleted and none is left: the worker drops its findings.
      bool shown;
      {
        auto locked = scheduler_.LockState();
        shown = !locked->last_trace.empty();
      }
      if (shown && !scheduler_.AnalysingTrace()) scheduler_.Request(false);
    } else {
      bool changed;
      {
        auto locked = scheduler_.LockState();
        changed = newest != locked->last_trace || mtime != locked->last_trace_mtime;
      }
      if (changed && stable) scheduler_.RequestTrace(newest, mtime);
    }
    seen = newest;
    seen_size = size;
    seen_mtime = mtime;
    settled = stable;
    quiet_polls = stable ? quiet_polls + 1 : 0;
  }
}

bool Session::AnalyseNewest(bool force, const CancelToken& cancel) {
  // One listing serves the newest trace and, when it is broken, the ones after it.
  const std::vector<std::pair<int64_t, std::string>> candidates = TraceCandidates(nullptr);
  const int64_t mtime = candidates.empty() ? -1 : candidates.front().first;
  const std::string trace = candidates.empty() ? std::string() : candidates.front().second;
  std::string failure;
  {
    auto locked = scheduler_.LockState();
    failure = locked->failed_traces.empty() ? "" : locked->last_failure;
  }
  if (trace.empty()) {
    // No trace (left) to show: a deleted trace's diagnostics, hovers and memory go with it.
    bool dropped = false;
    {
      auto locked = scheduler_.LockState();
      dropped = locked->snapshot != nullptr;
      locked->snapshot.reset();
      locked->moved_lines.clear();
      locked->hover_markdown.clear();
      locked->drafts.clear();
      if (dropped) {
        locked->last_trace.clear();
        locked->last_trace_mtime = -1;
      }
    }
    if (dropped) PublishAll();
  }
  if (trace.empty() && !failure.empty()) {
    Status("waiting", failure);  // traces exist, none loads: said once when each failed
  } else if (trace.empty()) {
    Status("no-trace");
    if (!told_no_trace_) {
      told_no_trace_ = true;
      out_.Notify(
          "window/showMessage",
          proto::ShowMessageParams{
              proto::MessageType::kInfo,
              "ttap: no profiler trace in the workspace yet. Record one with "
              "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
              "with_stack=True, schedule=torch.profiler.schedule(wait=1, warmup=1, active=3), "
              "on_trace_ready=torch.profiler.tensorboard_trace_handler(\"./log\")) and call "
              "prof.step() each iteration; ttap picks it up automatically."});
    }
  } else if (force || [&] {
               auto locked = scheduler_.LockState();
               return trace != locked->last_trace || mtime != locked->last_trace_mtime;
             }()) {
    scheduler_.SetInFlight(trace, mtime);
    bool broken = false;
    if (Analyse(trace, mtime, cancel, &broken)) return false;
    if (!broken || cancel.cancelled()) return true;  // being written, deleted: look again
    // Broken: the next newest, from the same listing (a folder of 10,000 JSON files that are
    // not traces is walked once, not once per file), until one loads or the shown one is next.
    for (size_t k = 1; k < candidates.size(); ++k) {
      const auto& [m, next] = candidates[k];
      if (cancel.cancelled()) return true;
      {
        auto locked = scheduler_.LockState();
        if (next == locked->last_trace && m == locked->last_trace_mtime)
          return false;  // still shown
      }
      scheduler_.SetInFlight(next, m);
      broken = false;
      if (Analyse(next, m, cancel, &broken)) return false;
      if (!broken) return true;
    }
    return false;
  }
  return false;
}

void Session::Status(const std::string& state, const std::string& detail) {
  // Nothing held while sending.
  const int rank = Settings()->rank;
  proto::TtapStatusParams p;
  p.state = state;
  p.rank = rank;
  {
    auto locked = scheduler_.LockState();
    if (locked->snapshot) {
      p.trace = locked->snapshot->trace_path;
      // What the Problems view shows (one per code and line, information and above, in files);
      // every finding, hints and findings without a line included, apart.
      p.findings = problems_shown_.load();
      p.findings_total = locked->snapshot->scan ? locked->snapshot->scan->findings.size() : 0;
    }
  }
  if (!detail.empty()) p.detail = detail;
  p.model = core_.ScorerState();
  out_.Notify("ttap/status", p);
}

bool Session::Analyse(const std::string& trace, int64_t mtime, const CancelToken& cancel,
                      bool* broken) {
  std::string token = "ttap-analysis-" + std::to_string(++progress_token_);
  bool progress = work_done_progress_;
  if (progress) {
    out_.Call("window/workDoneProgress/create", proto::WorkDoneProgressCreateParams{token},
              [](const json&, const json&) {});
    out_.Notify("$/progress", proto::ProgressParams{token,
                                                    {proto::ProgressKind::kBegin,
                                                     "ttap: analysing trace", trace, 0, false}});
  }
  // Every begun progress ends, however the analysis ends (cancelled by a newer request, the trace
  // deleted meanwhile): a client's spinner otherwise never clears.
  auto end_progress = [&](const std::string& message) {
    if (progress)
      out_.Notify("$/progress", proto::ProgressParams{token,
                                                      {proto::ProgressKind::kEnd, std::nullopt,
                                                       message, std::nullopt, std::nullopt}});
  };
  Status("loading", trace);
  // The same load + scan as `ttap scan` (server/core/analysis_core.h), with the editor's
  // settings: every severity (the client filters), suppressions from the buffers as typed
  // (RangeOf), frames resolved in the workspace folder that holds the trace.
  // The scorer opens (libtorch alone takes ~0.5 s to map, once per session) while the trace loads.
  const WindowScorerFuture scorer = WindowScorer();
  ScanRequest request;
  {
    const auto settings = Settings();
    request.config = settings->config;
    request.workspace_root = AnalysisCore::RootOf(trace, settings->roots);
    request.model_threshold = settings->model_threshold;
  }
  request.min_severity = Severity::kHint;
  request.apply_suppressions = false;
  request.cancel = cancel;
  request.on_loaded = [&] {
    if (progress)
      out_.Notify(
          "$/progress",
          proto::ProgressParams{token,
                                {proto::ProgressKind::kReport, std::nullopt,
                                 std::string(scorer.valid() ? "running rules and the window scorer"
                                                            : "running rules"),
                                 60, std::nullopt}});
    Status("analyzing", trace);
  };
  std::pair<int64_t, int64_t> before = WhenQuiet(trace, cancel);
  auto loaded = core_.LoadAndScan(trace, request, scorer);
  if (!loaded.ok()) {
    if (cancel.cancelled()) {  // cancelled, not broken
      end_progress("cancelled");
      return true;
    }
    // A trace still being written (it changes while it loads, or soon after) is loaded again
    // when it changes; falling back meanwhile would flash an older trace's findings first.
    if (ChangesSoon(trace, before, cancel)) {
      end_progress("being written");
      return false;
    }
    // Deleted before it could be read: gone, not broken (the newest left is looked for).
    {
      struct stat st;
      if (stat(trace.c_str(), &st) != 0 && errno == ENOENT) {
        end_progress("deleted");
        return false;
      }
    }
    // Broken: passed over until it changes; said once.
    int64_t size = -1;
    const int64_t now_mtime = MtimeNs(trace, &size);
    const std::string message = loaded.status().message();
    ClientLog(message);
    {
      auto locked = scheduler_.LockState();
      locked->failed_traces[trace] = {size, now_mtime};
      locked->last_failure = message;
    }
    if (broken) *broken = true;
    // A popup for the first few; a workspace of JSON files that match the globs but are no
    // traces must not raise one per file.
    if (told_unreadable_ < kUnreadablePopups) {
      ++told_unreadable_;
      out_.Notify("window/showMessage",
                  proto::ShowMessageParams{
                      proto::MessageType::kWarning,
                      "ttap: cannot read " + trace + " (" + message +
                          "); showing the newest trace that loads until it changes" +
                          (told_unreadable_ == kUnreadablePopups
                               ? ". Further unreadable files are listed in the ttap output "
                                 "log only; narrow ttap.traceGlobs to skip them"
                               : "")});
    }
    end_progress("not readable");
    Status("waiting", message);
    return false;
  }
  // Deleted while it was analysed: its findings are not shown; the newest trace left (or none)
  // is looked for at once.
  {
    struct stat st;
    if (stat(trace.c_str(), &st) != 0) {
      end_progress("deleted");
      ClientLog(trace + " was deleted while it was analysed");
      return false;
    }
  }
  auto snap = std::make_shared<Snapshot>();
  snap->trace_path = trace;
  snap->trace_mtime = mtime;
  snap->scan = std::make_unique<ScanResult>(std::move(loaded.value()));
  // The ranks beside it in its directory, read as one job: this rank may be the one the others
  // wait for (TTA018 placed on its own top cause), or its collective waits may be theirs.
  snap->job = AnalyseSiblingRanks(
      *snap->scan, [&] { return cancel.cancelled(); }, &sibling_timelines_);
  if (snap->job.ok) {
    snap->rank = snap->scan->trace->rank;
    AddStragglerFinding(snap->job, snap->scan.get());
  }
  // What hovers and the summary need of the events (server/core/explain.h), before they go.
  snap->facts = RunFactsOf(*snap->scan);
  snap->summary_head = SummaryHead(*snap->scan, snap->job, snap->rank);
  for (size_t i = 0; i < snap->scan->findings.size(); ++i) {
    const LocatedFinding& lf = snap->scan->findings[i];
    if (lf.absolute_path.empty() || lf.line <= 0) continue;
    Placed p;
    p.finding = i;
    p.line = lf.line;
    // Mapped as `ttap scan` mapped it: in the same function, with the same view of whether the
    // file changed since the trace (the buffer's edits since then move it:
    // AnalysisState::moved_lines).
    p.function = lf.function;
    p.source_newer_than_trace = lf.source_newer_than_trace;
    snap->by_file[lf.absolute_path].push_back(p);
  }
  if (cancel.cancelled()) {
    end_progress("cancelled");
    return true;
  }
  {
    auto locked = scheduler_.LockState();
    locked->snapshot = snap;
    locked->moved_lines.clear();
    locked->hover_markdown.clear();
    locked->drafts.clear();
    locked->last_trace = trace;
    locked->last_trace_mtime = mtime;
  }
  PublishAll();
  end_progress(std::to_string(problems_shown_.load()) + " problems shown (" +
               std::to_string(snap->scan->findings.size()) + " findings)");
  ClientLog("analysed " + trace + ": " + std::to_string(snap->scan->findings.size()) +
            " findings (rules " + std::to_string(static_cast<int>(snap->scan->rules_ms)) +
            " ms, mapping " + std::to_string(static_cast<int>(snap->scan->mapping_ms)) + " ms)");
  Status("ready");
  DraftFindingsOf(snap, cancel);
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

std::pair<int64_t, int64_t> Session::WhenQuiet(const std::string& trace,
                                               const CancelToken& cancel) {
  auto now = SizeAndMtime(trace);
  for (int looks = 0; looks < 240 && WallNowNs() - now.second < 1000000000LL; ++looks) {
    if (!scheduler_.Pause(250, cancel)) break;
    auto again = SizeAndMtime(trace);
    if (again == now) break;
    now = again;
  }
  return now;
}

bool Session::ChangesSoon(const std::string& trace, std::pair<int64_t, int64_t> before,
                          const CancelToken& cancel) {
  // A writer is done once the file has not changed for 5 s: since its mtime, or, when the mtime
  // lies ahead of this machine's clock (NFS skew, `rsync -t` from a machine ahead), since we
  // started looking: the wall clock catching up is no signal.
  constexpr int64_t kQuietNs = 5000000000LL;
  const auto started = std::chrono::steady_clock::now();
  while (true) {
    const auto now = SizeAndMtime(trace);
    if (now != before) return true;
    if (now.second < 0) return false;
    const int64_t since_mtime = WallNowNs() - now.second;
    const int64_t looked = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - started)
                               .count();
    if (since_mtime >= kQuietNs || (since_mtime < 0 && looked >= kQuietNs)) return false;
    if (!scheduler_.Pause(100, cancel)) return true;  // stopping or superseded: not judged broken
  }
}

void Session::ReleaseTrace(Snapshot* snap) {
  // Hovers, diagnostics, fixes and the summary read only the snapshot's own fields from here on.
  snap->scan->trace.reset();
  malloc_trim(0);
}

WindowScorerFuture Session::WindowScorer() {
  std::string path, device;
  {
    const auto settings = Settings();
    if (settings->model_enabled) {
      path = settings->model_path.empty() ? WindowModel::DefaultPath() : settings->model_path;
      device = settings->model_device;
    }
  }
  return core_.Scorer(path, device);
}

void Session::DraftFindingsOf(const std::shared_ptr<Snapshot>& snap, const CancelToken& cancel) {
  LlmConfig file;
  llm::LlmOverrides editor;
  {
    const auto settings = Settings();
    if (!settings->llm_enabled) return;
    file = settings->config.llm;
    editor = settings->llm_editor;
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
  llm::DraftCache cache(file.cache_dir, static_cast<uint64_t>(file.cache_max_mb) << 20);
  llm::DraftOptions options = llm::DraftOptionsFrom(file);
  options.log = [this](const std::string& line) { ClientLog("llm: " + line); };
  Status("drafting", settings->model);
  auto drafts = llm::DraftFindings(
      *snap->scan, llm_client_.get(), &cache,
      [this](const std::string& path) { return SourceFor(path); }, options, cancel);
  if (cancel.cancelled()) return;
  size_t count = 0;
  {
    auto locked = scheduler_.LockState();
    if (locked->snapshot != snap) return;  // a newer analysis replaced it meanwhile
    for (size_t i = 0; i < drafts.size(); ++i) {
      if (!drafts[i]) continue;
      locked->drafts[i] = std::make_shared<const llm::FindingDraft>(std::move(*drafts[i]));
      ++count;
    }
  }
  Status("ready", std::to_string(count) + " drafts by " + settings->model);
}

std::shared_ptr<const llm::FindingDraft> Session::DraftOf(const Snapshot& snap, size_t finding) {
  auto locked = scheduler_.LockState();
  if (locked->snapshot.get() != &snap) return nullptr;
  auto it = locked->drafts.find(finding);
  return it == locked->drafts.end() ? nullptr : it->second;
}

}  // namespace ttap::lsp

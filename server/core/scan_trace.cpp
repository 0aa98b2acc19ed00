// The core's scan of one loaded trace; see scan_trace.h.
#include "server/core/scan_trace.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "analysis/load/trace_loader.h"
#include "analysis/rules/rule_registry.h"
#include "mapping/python_frames.h"
#include "mapping/python_source.h"
#include "mapping/shape_locator.h"
#include "mapping/source_ranges.h"
#include "mapping/suppressions.h"
#include "server/window_model.h"

namespace ttap {

namespace {

constexpr const char* kDocsBase =
    "https://github.com/torchtraceap/ttap/blob/main/docs/antipatterns.md#";

bool ModifiedTime(const std::string& path, struct timespec* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  *out = st.st_mtim;
  return true;
}

bool Later(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

std::string Relative(const std::string& path, const std::string& root) {
  if (!root.empty() && path.rfind(root + "/", 0) == 0) return path.substr(root.size() + 1);
  return path;
}

}  // namespace

int SeverityRank(Severity s) {
  switch (s) {
    case Severity::kError:
      return 3;
    case Severity::kWarning:
      return 2;
    case Severity::kInfo:
      return 1;
    case Severity::kHint:
      return 0;
  }
  return 0;
}

SourceCache& ProcessSourceCache() {
  static SourceCache cache;
  return cache;
}

// "a", "a and b", "a, b and c".
std::string JoinAnd(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  }
  return out;
}

Severity JobSeverity(double share) { return share >= 0.05 ? Severity::kWarning : Severity::kInfo; }

std::string RuleDocsUrl(const std::string& code, const std::string& name) {
  return std::string(kDocsBase) + RuleDocsAnchor({code.c_str(), name.c_str(), "", ""});
}

// The learned scorer's view of a trace: each window's prediction and the flagged windows
// (score >= the threshold), which RunRules turns into TTA900 findings where no rule finding
// overlaps them. Empty for a trace without GPU activity: the scorer
// learned GPU runs only (models/MODEL_CARD.md), so it is not asked.
struct UnusualWindows {
  std::vector<WindowPrediction> preds;
  std::vector<std::pair<int64_t, int64_t>> flagged;
  double threshold = 0;
};

std::optional<UnusualWindows> ScoreWindows(const Trace& trace, const WindowModel& model,
                                           double threshold) {
  if (!HasGpuActivity(trace)) return std::nullopt;
  UnusualWindows u;
  u.threshold = threshold < 0 ? model.flag_threshold() : threshold;
  auto preds = model.Score(trace);
  if (!preds.ok()) {
    std::fprintf(stderr, "ttap: warning: model: %s; rules only\n",
                 preds.status().message().c_str());
    return std::nullopt;
  }
  u.preds = std::move(preds.value());
  for (size_t w = 0; w < u.preds.size() && w < trace.windows.size(); ++w) {
    if (u.preds[w].score < u.threshold) continue;
    u.flagged.emplace_back(trace.windows[w].start_ns, trace.windows[w].end_ns);
  }
  return u;
}

// The window scores fused (rules and model, as `ttap eval`'s fused method scores), and each
// TTA900 finding RunRules costed given the scorer's evidence, its anchor (the longest CPU op of
// its windows with frames, else their longest event with frames, so the frames locate it) and
// its message. A TTA900 whose replay saves nothing, or only a hint's share, is dropped: a window
// the scorer finds unusual but whose idle time costs nothing is no finding.
void DescribeUnusualWindows(const Trace& trace, const WindowModel& model, const UnusualWindows& u,
                            const WindowFusion& fusion, ScanResult* result) {
  RuleResult* rules = &result->rules;
  const std::vector<WindowPrediction>& preds = u.preds;
  result->window_fusion = fusion.name;
  for (size_t w = 0; w < rules->windows.size(); ++w) {
    const double r = rules->windows[w].score;
    const double m = w < preds.size() ? preds[w].score : 0.0;
    result->rule_window_scores.push_back(r);
    result->model_window_scores.push_back(m);
    rules->windows[w].score = fusion.combine(r, m);
    if (rules->windows[w].category.empty() && m >= u.threshold) {
      rules->windows[w].category =
          preds[w].category.empty() ? UnusualWindowRule().code : preds[w].category;
    }
  }
  const EventTable& ev = trace.events;
  const std::string code = UnusualWindowRule().code;
  std::vector<Finding> kept;
  for (Finding& f : rules->findings) {
    if (f.code != code) {
      kept.push_back(std::move(f));
      continue;
    }
    // The replay says it costs nothing worth saying (a hint's share or less).
    if (f.time_lost_us_per_step < 1.0 || f.severity == Severity::kHint) continue;
    // Its flagged windows: the highest-scored one gives the evidence.
    int best = -1;
    f.window_indices.clear();
    for (size_t w = 0; w < preds.size() && w < trace.windows.size(); ++w) {
      const Window& win = trace.windows[w];
      if (preds[w].score < u.threshold || win.end_ns <= f.start_ns || win.start_ns >= f.end_ns) {
        continue;
      }
      f.window_indices.push_back(static_cast<int>(w));
      if (best < 0 || preds[w].score > preds[best].score) best = static_cast<int>(w);
    }
    if (best < 0) continue;
    const WindowPrediction& p = preds[best];
    f.evidence["score"] = {true, p.score, ""};
    f.evidence["category"] = {false, 0, p.category};
    f.evidence["category_confidence"] = {true, p.confidence, ""};
    f.evidence["model"] = {false, 0, model.path()};
    f.evidence["flag_threshold"] = {true, u.threshold, ""};
    // The parts of the score (the model's score_parts name those that count).
    f.evidence["mil"] = {true, p.mil, ""};
    f.evidence["cat"] = {true, p.cat, ""};
    f.evidence["unusual"] = {true, p.unusual, ""};
    f.anchor_row = -1;
    for (const bool cpu_ops_only : {true, false}) {
      int64_t longest = -1;
      for (int w : f.window_indices) {
        const Window& win = trace.windows[w];
        for (uint32_t i = win.begin; i < win.end; ++i) {
          if ((!cpu_ops_only || ev.kind[i] == EventKind::kCpuOp) && ev.Frame(i) >= 0 &&
              ev.dur[i] > longest) {
            longest = ev.dur[i];
            f.anchor_row = static_cast<int32_t>(i);
          }
        }
      }
      if (f.anchor_row >= 0) break;
    }
    const std::string& cat = p.category;
    const RuleInfo* guess = cat.empty() ? nullptr : FindRule(cat);
    char score[64];  // three decimals: flag thresholds sit near 1
    std::snprintf(score, sizeof(score), "%.3f", p.score);
    char threshold_text[32];
    std::snprintf(threshold_text, sizeof(threshold_text), "flag threshold %.3f", u.threshold);
    // Which parts of the score made it: those the model combines, strongest first.
    std::vector<std::pair<double, std::string>> parts;
    const std::array<bool, 3> use = ScorePartsMask(model.score_parts());
    if (use[0]) parts.push_back({p.mil, "anti-pattern head"});
    if (use[1]) parts.push_back({p.cat, "some catalogue category"});
    if (use[2]) parts.push_back({p.unusual, "unlike clean training windows"});
    std::sort(parts.rbegin(), parts.rend());
    std::string why = std::string(" (") + threshold_text;
    for (size_t i = 0; i < parts.size(); ++i) {
      char num[16];
      std::snprintf(num, sizeof(num), "%.2f", parts[i].first);
      why += (i == 0 ? "; " : ", ") + parts[i].second + " " + num;
    }
    why += ")";
    char saving[160];
    std::snprintf(saving, sizeof(saving),
                  "; moving the CPU work out of its idle GPU time saves %.1f ms/step (%.1f%% of "
                  "the step)",
                  f.time_lost_us_per_step / 1000.0, 100.0 * f.share_of_step);
    f.message = std::string("unusual window: the window scorer gives it ") + score + why +
                " and no rule explains it" +
                (guess ? "; closest category " + cat + " " + guess->name + " (" +
                             FormatPercent(f.evidence["category_confidence"].number) + ")"
                       : "") +
                saving;
    kept.push_back(std::move(f));
  }
  rules->findings = std::move(kept);
}

ScanResult ScanTrace(std::unique_ptr<Trace> trace, const ScanOptions& options) {
  ScanResult r;
  r.trace_path = trace->path;
  auto t0 = std::chrono::steady_clock::now();
  std::optional<UnusualWindows> unusual;
  if (options.model) unusual = ScoreWindows(*trace, *options.model, options.model_threshold);
  if (unusual && !unusual->flagged.empty()) {
    RuleOptions with_windows = options.rules;
    with_windows.unusual_windows = unusual->flagged;
    r.rules = RunRulesSteadyFirst(*trace, with_windows);
  } else {
    r.rules = RunRulesSteadyFirst(*trace, options.rules);
  }
  if (unusual) {
    const WindowFusion* fusion =
        options.window_fusion ? options.window_fusion : FindWindowFusion(kDefaultWindowFusion);
    DescribeUnusualWindows(*trace, *options.model, *unusual, *fusion, &r);
  }
  auto t1 = std::chrono::steady_clock::now();
  r.rules_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  SourceCache& sources = options.sources ? *options.sources : ProcessSourceCache();
  struct timespec trace_mtime {};
  const bool have_trace_mtime = ModifiedTime(trace->path, &trace_mtime);
  std::vector<std::string> shape_files;  // the workspace's files, listed on first use
  std::map<SourceShape, std::optional<ShapeLocation>> shapes;
  for (Finding& f : r.rules.findings) {
    if (SeverityRank(f.severity) < SeverityRank(options.min_severity)) continue;
    if (!CodeSelected(f.code, options.select, options.ignore)) continue;
    LocatedFinding lf;
    const bool frames_of_anchor = f.frames.empty() && f.anchor_row >= 0;
    if (f.anchor_row >= 0) {
      for (auto& pf : FramesOf(*trace, static_cast<size_t>(f.anchor_row))) {
        f.frames.push_back({pf.file, pf.line, pf.function});
      }
    }
    ResolvedPath resolved;
    f.user_frame = SelectUserFrame(f.frames, options.workspace, &resolved, options.frame_filter);
    int where_line = 0;  // the frame's line, or the shape's
    std::string where_function;
    // The workspace's one statement of the shape, cached per shape (listed on first use).
    auto locate = [&](SourceShape shape) -> const std::optional<ShapeLocation>& {
      auto cached = shapes.find(shape);
      if (cached == shapes.end()) {
        if (shape_files.empty()) shape_files = options.workspace->AbsoluteFiles(5000);
        cached = shapes.emplace(shape, LocateByShape(shape_files, &sources, shape)).first;
      }
      return cached->second;
    };
    auto place_at = [&](const ShapeLocation& at) {
      lf.absolute_path = at.path;
      lf.file = Relative(lf.absolute_path, options.workspace->root());
      lf.line = where_line = at.line;
      where_function = at.function;
    };
    // A setting that is the cause itself (cudnn.benchmark, anomaly mode): placed on it, when
    // the workspace has exactly one, whatever ops the stack points at.
    const ShapeLocation* setting = nullptr;
    if (options.workspace && options.locate_by_shape && IsSettingShape(ShapeOf(f))) {
      const std::optional<ShapeLocation>& found = locate(ShapeOf(f));
      if (found) setting = &*found;
    }
    if (setting) {
      place_at(*setting);
      lf.located_at_setting = true;
    } else if (f.user_frame >= 0) {
      const FindingFrame& uf = f.frames[f.user_frame];
      lf.line = where_line = uf.line;
      where_function = uf.function;
      if (resolved.status == Resolution::kResolved) {
        lf.absolute_path = resolved.path;
        lf.file = Relative(resolved.path, options.workspace ? options.workspace->root() : "");
      } else {
        lf.file = uf.file;
        lf.ambiguous = resolved.candidates;
      }
    } else if (f.frames.empty() && options.workspace && options.locate_by_shape &&
               IsLocatableShape(ShapeOf(f))) {
      // No Python stack in the trace for it: the workspace's one statement with the shape its
      // fix edits, when there is exactly one (said so wherever the finding is shown).
      const std::optional<ShapeLocation>& found = locate(ShapeOf(f));
      if (found) {
        place_at(*found);
        lf.located_by_shape = true;
      }
    }
    {
      std::shared_ptr<const PythonSource> src;
      if (!lf.absolute_path.empty() && where_line > 0) src = sources.GetFile(lf.absolute_path);
      if (src) {
        RangeQuery q;
        q.line = where_line;
        q.function = where_function;
        q.code = f.code;
        if (frames_of_anchor && f.user_frame >= 0 && !lf.located_by_shape &&
            !lf.located_at_setting) {
          q.callee = CalleeOfFrame(*trace, static_cast<size_t>(f.anchor_row), f.user_frame);
        }
        struct timespec file_mtime {};
        q.file_newer_than_trace = have_trace_mtime && ModifiedTime(lf.absolute_path, &file_mtime) &&
                                  Later(file_mtime, trace_mtime);
        lf.source_newer_than_trace = q.file_newer_than_trace;
        lf.function = where_function;
        MappedRange m = MapToSource(*src, q);
        if (options.apply_suppressions && SuppressedAt(*src, m, where_line, f.code)) {
          ++r.suppressed;
          continue;
        }
        lf.stale = m.stale;
        lf.stale_reason = m.stale_reason;
        if (!m.past_end) {
          SourcePosition a = src->ToPosition(m.range.start, PositionEncoding::kUtf32);
          SourcePosition b = src->ToPosition(m.range.end, PositionEncoding::kUtf32);
          lf.line = a.line + 1;
          lf.column = a.character + 1;
          lf.end_line = b.line + 1;
          lf.end_column = b.character + 1;
        }
      }
    }
    lf.finding = f;
    r.findings.push_back(std::move(lf));
  }
  r.mapping_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  r.trace = std::move(trace);
  return r;
}

FixRequest FixRequestFor(const LocatedFinding& lf, bool trace_has_gpu) {
  FixRequest req;
  req.recipe = lf.finding.fix;
  req.line = lf.line;
  if (req.recipe == "zero-grad-set-to-none") req.facts["torch_before_2"] = "1";
  if (trace_has_gpu) req.facts["device"] = "cuda";
  return req;
}

bool HasGpuActivity(const Trace& trace) {
  const EventTable& ev = trace.events;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (IsGpuKind(ev.kind[i])) return true;
  }
  return false;
}

JobAnalysis AnalyseSiblingRanks(const ScanResult& r, const std::function<bool()>& cancelled,
                                SiblingTimelineCache* cache) {
  JobAnalysis none;
  if (!r.trace || r.trace->rank_source == "default") return none;
  const std::string& path = r.trace_path;
  const size_t slash = path.rfind('/');
  const std::vector<std::string> files =
      ListTraceFiles(slash == std::string::npos ? "." : path.substr(0, slash));
  constexpr size_t kMaxSiblings = 64;
  constexpr int64_t kMaxSiblingBytes = int64_t{4} << 30;
  if (files.size() < 2 || files.size() > kMaxSiblings) return none;
  int64_t bytes = 0;
  for (const std::string& f : files) {
    struct stat st;
    if (stat(f.c_str(), &st) == 0) bytes += st.st_size;
  }
  if (bytes > kMaxSiblingBytes) return none;
  std::vector<RankTimeline> timelines = {ExtractRankTimeline(*r.trace)};
  std::set<int> ranks = {r.trace->rank};
  for (const std::string& f : files) {
    if (cancelled()) return none;
    if (f == path || (slash == std::string::npos && "./" + path == f)) continue;
    struct stat st;
    if (stat(f.c_str(), &st) != 0) continue;
    const int64_t mtime_ns =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    SiblingTimeline fresh;
    SiblingTimeline* sibling = &fresh;
    if (cache) {
      SiblingTimeline& cached = (*cache)[f];
      if (cached.size != st.st_size || cached.mtime_ns != mtime_ns) cached = SiblingTimeline{};
      sibling = &cached;
    }
    if (sibling->size < 0) {
      // Only the other ranks of its job are loaded: their distributedInfo, read from the file's
      // head, names another rank of the same world size.
      const TraceRankHint hint = PeekTraceRank(f);
      sibling->size = st.st_size;
      sibling->mtime_ns = mtime_ns;
      sibling->hint_rank = hint.rank;
      sibling->hint_world_size = hint.world_size;
    }
    if (sibling->hint_rank < 0 || ranks.count(sibling->hint_rank) > 0 ||
        (r.trace->world_size > 0 && sibling->hint_world_size != r.trace->world_size)) {
      continue;
    }
    if (!sibling->loaded) {
      LoadOptions options;
      options.threads = 1;
      auto t = LoadTrace(f, options);
      sibling->loaded = true;
      sibling->usable = t.ok() && (*t)->rank_source != "default";
      if (sibling->usable) {
        sibling->rank = (*t)->rank;
        sibling->timeline = ExtractRankTimeline(**t);
      }
    }
    if (!sibling->usable || !ranks.insert(sibling->rank).second) continue;
    timelines.push_back(sibling->timeline);
  }
  if (cache) {  // files gone from this folder (or of other folders) are forgotten
    const std::set<std::string> listed(files.begin(), files.end());
    for (auto it = cache->begin(); it != cache->end();) {
      it = listed.count(it->first) ? std::next(it) : cache->erase(it);
    }
  }
  return AnalyseJob(timelines);
}

void AddStragglerFinding(const JobAnalysis& job, ScanResult* r) {
  if (!job.ok || !r->trace || r->findings.empty()) return;
  const int rank = r->trace->rank;
  if (!job.IsLate(rank)) return;
  const RankLateness& mine = *job.Of(rank);  // a late rank is one of per_rank
  const RankLateness& waits_most = *job.WaitsLongest();
  const LocatedFinding& top = r->findings.front();
  LocatedFinding lf = top;  // placed where this rank's own top cause is
  Finding& f = lf.finding;
  const RuleInfo* info = FindRule("TTA018");
  f = Finding{};
  f.code = "TTA018";
  f.name = info ? info->name : "straggler-rank";
  f.time_lost_us_per_step = job.saving_us_per_step;
  f.share_of_step = job.job_step_us > 0 ? job.saving_us_per_step / job.job_step_us : 0;
  f.severity = JobSeverity(f.share_of_step);
  f.frames = top.finding.frames;
  f.user_frame = top.finding.user_frame;
  f.start_ns = top.finding.start_ns;
  f.end_ns = top.finding.end_ns;
  f.step_ids = top.finding.step_ids;
  char speedup[32];
  std::snprintf(speedup, sizeof(speedup), "%.2f", job.speedup());
  f.message = "the other ranks of the job wait for this one (rank " + std::to_string(rank) +
              ") at the collectives: it arrives " + FormatMs(mine.late_us_per_step) +
              "/step after the median rank (rank " + std::to_string(waits_most.rank) + " waits " +
              FormatMs(waits_most.wait_us_per_step) + "/step); its own top cause here, " +
              top.finding.code + " " + top.finding.name +
              ", is the whole job's cost: if the late ranks arrived with the median rank the job " +
              "would save " + FormatMs(job.saving_us_per_step) + "/step (" +
              FormatPercent(f.share_of_step) + " of its step, " + speedup + "x)";
  r->findings.insert(r->findings.begin(), std::move(lf));
}

std::string JobNoteFor(const JobAnalysis& job, int rank, const Finding& f) {
  const RuleSpec* spec = FindRuleSpec(f.code);
  if (!job.ok || !spec || !spec->may_wait_for_peers || job.late_ranks.empty()) return "";
  if (job.IsLate(rank)) {
    return "This rank is one the job's other ranks wait for at the collectives (TTA018): its "
           "own causes come first.";
  }
  const RankLateness* mine = job.Of(rank);
  const double wait = mine ? mine->wait_us_per_step : 0;
  std::vector<std::string> late;
  for (int r : job.late_ranks) late.push_back(std::to_string(r));
  return "At the collectives this rank waits " + FormatMs(wait) + "/step for rank" +
         (job.late_ranks.size() == 1 ? " " : "s ") + JoinAnd(late) +
         ", late ones of its job (TTA018): that wait is theirs, not this rank's communication; "
         "fix them first.";
}

}  // namespace ttap

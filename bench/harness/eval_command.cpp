// `ttap eval`: the benchmark over a labelled dataset; see eval_command.h. Called by cli.cpp.
#include "bench/harness/eval_command.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "analysis/base/parallel.h"
#include "analysis/base/string_util.h"
#include "analysis/load/trace_loader.h"
#include "analysis/model/window_features.h"
#include "analysis/rules/rules.h"
#include "bench/harness/eval_baselines.h"
#include "bench/harness/eval_metrics.h"
#include "mapping/python_frames.h"
#include "mapping/workspace_index.h"
#include "server/cli_util.h"
#include "server/core/analysis_core.h"
#include "server/llm/drafter.h"
#include "server/llm/llm_config.h"
#include "server/scan.h"
#include "server/window_fusion.h"
#include "server/window_model.h"

namespace ttap {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kWindows = 100;  // the paper's N, as `ttap scan` uses by default

// ---- small helpers ----

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool MakeDirs(const std::string& path) {
  if (path.empty() || IsDirectory(path)) return !path.empty();
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0 && !MakeDirs(path.substr(0, slash))) return false;
  return mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
}

// Two recorded paths name the same file when one is a suffix of the other at a '/' boundary
// ("train.py" and "/home/u/proj/train.py").
bool SamePathSuffix(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  const std::string& shorter = a.size() <= b.size() ? a : b;
  const std::string& longer = a.size() <= b.size() ? b : a;
  if (!EndsWith(longer, shorter)) return false;
  return longer.size() == shorter.size() || longer[longer.size() - shorter.size() - 1] == '/' ||
         shorter[0] == '/';
}

int64_t Overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  const int64_t lo = std::max(a0, b0), hi = std::min(a1, b1);
  return hi > lo ? hi - lo : 0;
}

std::string Fixed(double v, int digits = 3) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string WithCi(const Interval95& i) {
  if (!std::isfinite(i.estimate)) return "n/a";
  if (!std::isfinite(i.low)) return Fixed(i.estimate);
  return Fixed(i.estimate) + " [" + Fixed(i.low) + ", " + Fixed(i.high) + "]";
}

nlohmann::json Num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json IntervalJson(const Interval95& i) {
  return {{"estimate", Num(i.estimate)}, {"low", Num(i.low)}, {"high", Num(i.high)}};
}

// ---- methods ----

// The rule catalogue with default thresholds: window scores and categories from RunRules, and
// every finding (all severities) with the responsible user frame as `ttap scan` picks it without
// a workspace (the innermost non-library .py frame), one EvalFinding per step it occurs in.
// The fixes are costed in recorded time: the injector's events carry no profiler cost and its
// truth is its own timeline, so the profiler's own cost per recorded op is not taken out here
// (what it does on real runs is scored against measured runs: bench/record/score.py).
class RulesMethod : public EvalMethod {
 public:
  std::string Name() const override { return "rules"; }
  bool ProducesFindings() const override { return true; }
  bool ProducesCategories() const override { return true; }
  bool ReadsTraces() const override { return true; }
  MethodTraceOutput AnalyseTrace(const Trace& trace) const override {
    RuleOptions recorded_time;
    recorded_time.values["profiler_op_us"] = 0;
    recorded_time.values["profiler_frame_us"] = 0;
    const RuleResult rr = RunRules(trace, recorded_time);
    MethodTraceOutput out;
    out.trace_score = rr.trace_score;
    for (const WindowScore& w : rr.windows) {
      out.window_scores.push_back(w.score);
      out.window_categories.push_back(w.category);
    }
    for (const Finding& f : rr.findings) {
      out.cost_us_per_step[f.code] += f.time_lost_us_per_step;
      out.cost_claims.push_back(
          {f.code, f.time_lost_us_per_step, f.occurrences, static_cast<int>(f.severity)});
      if (out.cost_claims.back().occurrences.empty()) {
        out.cost_claims.back().occurrences.emplace_back(f.start_ns, f.end_ns);
      }
      auto sev = out.top_severity.find(f.code);
      const int level = static_cast<int>(f.severity);
      if (sev == out.top_severity.end() || level < sev->second) out.top_severity[f.code] = level;
      EvalFinding ef{f.code, f.start_ns, f.end_ns, "", 0};
      if (f.anchor_row >= 0 && static_cast<size_t>(f.anchor_row) < trace.events.size()) {
        std::vector<FindingFrame> frames;
        for (auto& pf : FramesOf(trace, static_cast<size_t>(f.anchor_row))) {
          frames.push_back({pf.file, pf.line, pf.function});
        }
        const int uf = SelectUserFrame(frames, nullptr, nullptr, nullptr);
        if (uf >= 0) {
          ef.file = frames[uf].file;
          ef.line = frames[uf].line;
        }
      }
      // Labels name one occurrence per step; a finding merged across steps is split back into
      // its steps (its extent clipped to each step it names) so that both count alike.
      bool split = false;
      for (int64_t id : f.step_ids) {
        for (const Step& st : trace.steps) {
          if (st.number != id) continue;
          const int64_t lo = std::max(f.start_ns, st.start()), hi = std::min(f.end_ns, st.end());
          if (hi <= lo) continue;
          EvalFinding piece = ef;
          piece.start_ns = lo;
          piece.end_ns = hi;
          out.findings.push_back(std::move(piece));
          split = true;
        }
      }
      if (!split) out.findings.push_back(std::move(ef));
    }
    // One occurrence per code and time: a detector may report several causes (e.g. fprop and
    // wgrad kernels) in one step; overlapping same-code pieces merge, keeping a located frame.
    std::sort(out.findings.begin(), out.findings.end(),
              [](const EvalFinding& a, const EvalFinding& b) {
                return a.code != b.code ? a.code < b.code : a.start_ns < b.start_ns;
              });
    std::vector<EvalFinding> merged;
    for (EvalFinding& f : out.findings) {
      if (!merged.empty() && merged.back().code == f.code && f.start_ns < merged.back().end_ns) {
        EvalFinding& m = merged.back();
        m.end_ns = std::max(m.end_ns, f.end_ns);
        if (m.file.empty() && !f.file.empty()) {
          m.file = f.file;
          m.line = f.line;
        }
      } else {
        merged.push_back(std::move(f));
      }
    }
    out.findings = std::move(merged);
    return out;
  }
  MethodTraceOutput Score(const EvalTrace& trace, size_t index) const override {
    return index < trace.trace_outputs.size() ? trace.trace_outputs[index] : MethodTraceOutput{};
  }
};

MethodTraceOutput FromWindowScores(std::vector<double> scores) {
  MethodTraceOutput out;
  out.trace_score = MeanScore(scores);
  out.window_scores = std::move(scores);
  return out;
}

class ClusteringMethod : public EvalMethod {
 public:
  explicit ClusteringMethod(uint64_t seed) { options_.seed = seed; }
  std::string Name() const override { return "clustering"; }
  bool NeedsFit() const override { return true; }
  Status Fit(const std::vector<const EvalTrace*>& train, const std::vector<bool>&) override {
    FeatureRows rows;
    for (const EvalTrace* t : train)
      rows.insert(rows.end(), t->features.begin(), t->features.end());
    if (rows.empty()) return Status::Error("no train-split windows to fit on");
    model_ = FitKMeans(rows, options_);
    return model_.ok() ? Status::Ok() : Status::Error("k-means fit failed");
  }
  MethodTraceOutput Score(const EvalTrace& trace, size_t) const override {
    return FromWindowScores(KMeansScores(model_, trace.features));
  }

 private:
  KMeansOptions options_;
  KMeansModel model_;
};

class ZScoreMethod : public EvalMethod {
 public:
  std::string Name() const override { return "zscore"; }
  bool NeedsFit() const override { return true; }
  Status Fit(const std::vector<const EvalTrace*>& train, const std::vector<bool>& clean) override {
    FeatureRows rows;
    for (size_t i = 0; i < train.size(); ++i) {
      if (clean[i]) rows.insert(rows.end(), train[i]->features.begin(), train[i]->features.end());
    }
    if (rows.empty()) return Status::Error("no clean train-split traces to fit on");
    model_ = FitZScore(rows);
    return Status::Ok();
  }
  MethodTraceOutput Score(const EvalTrace& trace, size_t) const override {
    return FromWindowScores(ZScoreScores(model_, trace.features));
  }

 private:
  ZScoreModel model_;
};

class RandomMethod : public EvalMethod {
 public:
  explicit RandomMethod(uint64_t seed) : seed_(seed) {}
  std::string Name() const override { return "random"; }
  MethodTraceOutput Score(const EvalTrace& trace, size_t) const override {
    return FromWindowScores(
        RandomScores(trace.windows.size(), StableHash(trace.labels.stem, seed_)));
  }

 private:
  uint64_t seed_;
};

// The learned window scorer: window scores and category-head guesses; flagged windows
// (score >= 0.5) become findings of the guessed code, TTA900 ("unusual window") when the head
// names none; adjacent flagged windows of one code merge.
MethodTraceOutput ModelOutput(const WindowModel& model, const Trace& trace) {
  MethodTraceOutput out;
  auto preds = model.Score(trace);
  if (!preds.ok()) {
    std::fprintf(stderr, "ttap: warning: eval: model on %s: %s\n", trace.path.c_str(),
                 preds.status().message().c_str());
    out.window_scores.assign(trace.windows.size(), kNaN);
    out.window_categories.assign(trace.windows.size(), "");
    return out;
  }
  for (size_t w = 0; w < preds->size(); ++w) {
    const WindowPrediction& p = (*preds)[w];
    out.window_scores.push_back(p.score);
    out.model_parts.push_back({p.mil, p.cat, p.unusual});
    const bool flagged = p.score >= 0.5;
    out.window_categories.push_back(flagged ? (p.category.empty() ? "TTA900" : p.category) : "");
    if (!flagged) continue;
    const Window& win = trace.windows[w];
    const std::string& code = out.window_categories.back();
    if (!out.findings.empty() && out.findings.back().code == code &&
        out.findings.back().end_ns >= win.start_ns) {
      out.findings.back().end_ns = win.end_ns;
    } else {
      out.findings.push_back({code, win.start_ns, win.end_ns, "", 0});
    }
  }
  out.trace_score = MeanScore(out.window_scores);
  return out;
}

class ModelMethod : public EvalMethod {
 public:
  explicit ModelMethod(std::shared_ptr<const WindowModel> model) : model_(std::move(model)) {}
  std::string Name() const override { return "model"; }
  bool ProducesFindings() const override { return true; }
  bool ProducesCategories() const override { return true; }
  bool ReadsTraces() const override { return true; }
  MethodTraceOutput AnalyseTrace(const Trace& trace) const override {
    return ModelOutput(*model_, trace);
  }
  MethodTraceOutput Score(const EvalTrace& trace, size_t index) const override {
    return index < trace.trace_outputs.size() ? trace.trace_outputs[index] : MethodTraceOutput{};
  }

 private:
  std::shared_ptr<const WindowModel> model_;
};

// Rules and model together, as `ttap scan` publishes them. Window score: one of the combinations
// of server/window_fusion.h of the rule score r and the model score m, the one with the best
// window AUC on the validation split, the earlier on ties (measured per run, reported as the
// method's note). Trace score: the rules' (the share of the run the fixes save).
// Categories: the rule's where a rule fired, else the model's. Findings: every rule finding, plus
// the model's flagged windows that no rule finding overlaps (TTA900 or the category head's code).
class FusedMethod : public EvalMethod {
 public:
  explicit FusedMethod(std::shared_ptr<const WindowModel> model) : model_(std::move(model)) {}
  std::string Name() const override { return "fused"; }
  bool ProducesFindings() const override { return true; }
  bool ProducesCategories() const override { return true; }
  bool ReadsTraces() const override { return true; }
  bool NeedsValidation() const override { return true; }
  MethodTraceOutput AnalyseTrace(const Trace& trace) const override {
    MethodTraceOutput out = rules_.AnalyseTrace(trace);
    MethodTraceOutput m = ModelOutput(*model_, trace);
    out.aux_scores = std::move(m.window_scores);
    out.aux_categories = std::move(m.window_categories);
    out.model_parts = std::move(m.model_parts);
    // Model findings where no rule finding overlaps.
    for (const EvalFinding& f : m.findings) {
      bool explained = false;
      for (const EvalFinding& r : out.findings) {
        explained = explained || (r.start_ns < f.end_ns && f.start_ns < r.end_ns);
      }
      if (!explained) out.findings.push_back(f);
    }
    return out;
  }
  Status Tune(const std::vector<const EvalTrace*>& val, size_t index) override {
    // The traces' labels once; each candidate then only recombines the window scores.
    std::vector<const MethodTraceOutput*> outputs;
    std::vector<int> tl, wl;
    for (const EvalTrace* t : val) {
      if (index >= t->trace_outputs.size()) continue;
      outputs.push_back(&t->trace_outputs[index]);
      tl.push_back(t->labels.anti_pattern ? 1 : 0);
      std::vector<LabeledInterval> li;
      for (const EvalLabel& l : t->labels.labels) li.push_back({l.code, l.start_ns, l.end_ns});
      const std::vector<int> labels = WindowLabels(t->windows, li);
      wl.insert(wl.end(), labels.begin(), labels.end());
    }
    double best = -1;
    std::string report;
    for (size_t c = 0; c < WindowFusions().size(); ++c) {
      std::vector<double> ts, ws;
      for (const MethodTraceOutput* o : outputs) {
        const std::vector<double> w = Combined(*o, c);
        ts.push_back(o->trace_score);  // the rules' (what the fixes save): the same for every c
        ws.insert(ws.end(), w.begin(), w.end());
      }
      const double ta = AucRoc(ts, tl), wa = AucRoc(ws, wl);
      const double q = (std::isfinite(ta) ? ta : 0) + (std::isfinite(wa) ? wa : 0);
      report += std::string(report.empty() ? "" : ", ") + WindowFusions()[c].name + " " +
                Fixed(ta) + "/" + Fixed(wa);
      if (q > best + 1e-9) {
        best = q;
        combine_ = c;
      }
    }
    note_ = "fusion chosen on the validation split (" + std::to_string(val.size()) +
            " traces; trace/window AUC): " + report + " -> " + WindowFusions()[combine_].name +
            " (ttap scan and the language server use window_fusion, by default " +
            kDefaultWindowFusion + ")";
    return Status::Ok();
  }
  std::string Note() const override { return note_; }
  MethodTraceOutput Score(const EvalTrace& trace, size_t index) const override {
    if (index >= trace.trace_outputs.size()) return {};
    MethodTraceOutput out = trace.trace_outputs[index];
    out.window_scores = Combined(out, combine_);
    for (size_t w = 0; w < out.window_categories.size() && w < out.aux_categories.size(); ++w) {
      if (out.window_categories[w].empty()) out.window_categories[w] = out.aux_categories[w];
    }
    // The trace score stays the rules': the share of the run the fixes save.
    return out;
  }

 private:
  static std::vector<double> Combined(const MethodTraceOutput& o, size_t c) {
    const WindowFusion& fusion = WindowFusions()[c];
    std::vector<double> out(o.window_scores.size(), 0);
    for (size_t w = 0; w < out.size(); ++w) {
      const double r = std::isfinite(o.window_scores[w]) ? o.window_scores[w] : 0;
      const double m =
          w < o.aux_scores.size() && std::isfinite(o.aux_scores[w]) ? o.aux_scores[w] : 0;
      out[w] = fusion.combine(r, m);
    }
    return out;
  }
  std::shared_ptr<const WindowModel> model_;
  RulesMethod rules_;
  size_t combine_ = 0;  // index into WindowFusions()
  std::string note_;
};

// The rules with LLM drafts (`--llm`): the rules' scores and findings; the category of
// every window a drafted finding covers is the draft's. Reported next to the category head's
// accuracy (method "model"). Traces are reloaded for ScanTrace, and drafting is serialised.
class LlmMethod : public EvalMethod {
 public:
  explicit LlmMethod(const llm::LlmSettings& settings)
      : client_(std::make_unique<llm::LlmClient>(settings)),
        cache_(std::make_unique<llm::DraftCache>()) {}
  std::string Name() const override { return "llm"; }
  bool ProducesFindings() const override { return true; }
  bool ProducesCategories() const override { return true; }
  bool ReadsTraces() const override { return true; }
  MethodTraceOutput AnalyseTrace(const Trace& trace) const override {
    MethodTraceOutput out = rules_.AnalyseTrace(trace);
    // Through the core, as `ttap scan` and the editor scan (no workspace: frames as recorded).
    ScanRequest request;
    request.index_workspace = false;
    request.min_severity = Severity::kHint;
    request.load_threads = 1;
    request.windows = static_cast<int>(trace.windows.size());
    auto scanned = core_.LoadAndScan(trace.path, request, WindowScorerFuture());
    if (!scanned.ok()) return out;
    ScanResult& scan = scanned.value();
    llm::SourceProvider sources = [](const std::string&) {
      return std::shared_ptr<const PythonSource>();
    };
    std::lock_guard<std::mutex> lock(mu_);
    const auto drafts = llm::DraftFindings(scan, client_.get(), cache_.get(), sources, options_);
    for (size_t i = 0; i < drafts.size() && i < scan.findings.size(); ++i) {
      if (!drafts[i] || drafts[i]->draft.category.empty()) continue;
      const Finding& f = scan.findings[i].finding;
      for (size_t w = 0; w < trace.windows.size() && w < out.window_categories.size(); ++w) {
        if (trace.windows[w].start_ns < f.end_ns && f.start_ns < trace.windows[w].end_ns) {
          out.window_categories[w] = drafts[i]->draft.category;
        }
      }
    }
    return out;
  }
  MethodTraceOutput Score(const EvalTrace& trace, size_t index) const override {
    return index < trace.trace_outputs.size() ? trace.trace_outputs[index] : MethodTraceOutput{};
  }

 private:
  RulesMethod rules_;
  std::unique_ptr<llm::LlmClient> client_;
  std::unique_ptr<llm::DraftCache> cache_;
  mutable AnalysisCore core_;
  llm::DraftOptions options_;
  mutable std::mutex mu_;
};

// ---- metrics ----

struct CodeCounts {
  int labels = 0, findings = 0, tp = 0;
};

struct MethodMetrics {
  std::string method;
  std::string note;  // why numbers are missing
  Interval95 trace_auc{kNaN, kNaN, kNaN};
  Interval95 window_auc{kNaN, kNaN, kNaN};
  bool has_categories = false, has_findings = false;
  int flagged = 0, flagged_labelled = 0, category_correct = 0;
  Interval95 category{kNaN, kNaN, kNaN};
  int source_n = 0, source_correct = 0;
  Interval95 source{kNaN, kNaN, kNaN};
  std::map<std::string, CodeCounts> per_code;
  // Per trace: (stem, label, trace score), for eval.json.
  std::vector<std::tuple<std::string, int, double>> trace_scores;
};

struct Section {
  std::string name;         // seen, unseen, overall
  std::string description;  // which label splits
  std::vector<const EvalTrace*> traces;
  std::vector<std::vector<int>> window_labels;  // per trace
  std::vector<std::vector<std::string>>
      window_truth;  // per trace: code of the label overlapped most
  int positives = 0, windows = 0, positive_windows = 0;
  std::vector<MethodMetrics> methods;
};

struct EvalSettings {
  bool with_pre_existing = false;
  int bootstrap = 1000;
  uint64_t seed = 1;
};

// The labelled intervals a trace is scored against.
std::vector<const EvalLabel*> TruthOf(const EvalTrace& t, bool with_pre_existing) {
  std::vector<const EvalLabel*> out;
  for (const auto& l : t.labels.labels) out.push_back(&l);
  if (with_pre_existing) {
    for (const auto& l : t.labels.pre_existing) out.push_back(&l);
  }
  return out;
}

bool PositiveTrace(const EvalTrace& t, bool with_pre_existing) {
  return t.labels.anti_pattern || (with_pre_existing && !t.labels.pre_existing.empty());
}

void PrepareSection(Section* s, bool with_pre_existing) {
  for (const EvalTrace* t : s->traces) {
    std::vector<LabeledInterval> truth;
    const auto labels = TruthOf(*t, with_pre_existing);
    for (const EvalLabel* l : labels) truth.push_back({l->code, l->start_ns, l->end_ns});
    s->window_labels.push_back(WindowLabels(t->windows, truth));
    std::vector<std::string> codes(t->windows.size());
    for (size_t w = 0; w < t->windows.size(); ++w) {
      int64_t best = 0;
      for (const EvalLabel* l : labels) {
        const int64_t ov =
            Overlap(t->windows[w].first, t->windows[w].second, l->start_ns, l->end_ns);
        if (ov > best) {
          best = ov;
          codes[w] = l->code;
        }
      }
    }
    s->window_truth.push_back(std::move(codes));
    s->positives += PositiveTrace(*t, with_pre_existing) ? 1 : 0;
    s->windows += static_cast<int>(t->windows.size());
    for (int v : s->window_labels.back()) s->positive_windows += v;
  }
}

MethodMetrics Measure(const Section& s, const EvalMethod& method, size_t method_index,
                      const std::string& fit_error, const EvalSettings& settings) {
  MethodMetrics m;
  m.method = method.Name();
  m.has_categories = method.ProducesCategories();
  m.has_findings = method.ProducesFindings();
  if (!fit_error.empty()) {
    m.note = fit_error;
    m.has_categories = m.has_findings = false;
    return m;
  }
  std::vector<double> trace_scores, window_scores;
  std::vector<int> trace_labels, window_labels;
  for (size_t ti = 0; ti < s.traces.size(); ++ti) {
    const EvalTrace& t = *s.traces[ti];
    const MethodTraceOutput out = method.Score(t, method_index);
    trace_scores.push_back(out.trace_score);
    trace_labels.push_back(PositiveTrace(t, settings.with_pre_existing) ? 1 : 0);
    m.trace_scores.emplace_back(t.labels.stem, trace_labels.back(), out.trace_score);
    const auto& wl = s.window_labels[ti];
    const auto& truth = s.window_truth[ti];
    for (size_t w = 0; w < wl.size(); ++w) {
      const double score = w < out.window_scores.size() ? out.window_scores[w] : kNaN;
      window_scores.push_back(score);
      window_labels.push_back(wl[w]);
      const std::string category =
          w < out.window_categories.size() ? out.window_categories[w] : std::string();
      const bool flagged = m.has_categories ? !category.empty() : (score >= 0.5);
      if (!flagged) continue;
      ++m.flagged;
      if (truth[w].empty()) continue;
      ++m.flagged_labelled;
      m.category_correct += category == truth[w] ? 1 : 0;
    }
    if (!m.has_findings) continue;
    const auto labels = TruthOf(t, settings.with_pre_existing);
    // Per-code precision/recall (each code matched on its own, within the trace).
    std::set<std::string> codes;
    for (const EvalLabel* l : labels) codes.insert(l->code);
    for (const EvalFinding& f : out.findings) codes.insert(f.code);
    for (const std::string& code : codes) {
      std::vector<LabeledInterval> fs, ls;
      for (const EvalFinding& f : out.findings) {
        if (f.code == code) fs.push_back({f.code, f.start_ns, f.end_ns});
      }
      for (const EvalLabel* l : labels) {
        if (l->code == code) ls.push_back({l->code, l->start_ns, l->end_ns});
      }
      const PrecisionRecall pr = MatchFindings(fs, ls);
      CodeCounts& c = m.per_code[code];
      c.labels += static_cast<int>(ls.size());
      c.findings += static_cast<int>(fs.size());
      c.tp += pr.true_positives;
    }
    // Source-line top-1: the same-code finding overlapping the label most.
    for (const EvalLabel* l : labels) {
      if (l->file.empty() || l->line <= 0) continue;
      ++m.source_n;
      const EvalFinding* best = nullptr;
      int64_t best_ov = 0;
      for (const EvalFinding& f : out.findings) {
        if (f.code != l->code) continue;
        const int64_t ov = Overlap(f.start_ns, f.end_ns, l->start_ns, l->end_ns);
        if (ov > best_ov) {
          best_ov = ov;
          best = &f;
        }
      }
      if (best && best->line == l->line && SamePathSuffix(best->file, l->file)) ++m.source_correct;
    }
  }
  m.trace_auc = BootstrapAucRoc(trace_scores, trace_labels, settings.bootstrap, settings.seed);
  m.window_auc = BootstrapAucRoc(window_scores, window_labels, settings.bootstrap, settings.seed);
  if (m.has_categories)
    m.category = BootstrapProportion(m.category_correct, m.flagged_labelled, settings.bootstrap,
                                     settings.seed);
  if (m.has_findings)
    m.source =
        BootstrapProportion(m.source_correct, m.source_n, settings.bootstrap, settings.seed + 1);
  return m;
}

// ---- report ----

struct RunInfo {
  std::string command_line, dataset, split, out_dir;
  std::vector<std::string> methods;
  EvalSettings settings;
  int label_files = 0, unreadable_labels = 0, excluded_pre_existing = 0, failed_to_load = 0;
  int train_traces = 0, train_clean = 0, train_windows = 0, skipped_val = 0, skipped_other = 0;
  std::vector<std::pair<std::string, std::string>> failures;  // (file, reason)
  std::map<std::string, std::string> fit_errors;              // method -> why it has no scores
  std::map<std::string, std::string> notes;                   // method -> note (fusion chosen)
  std::string model;                                          // weights file (device)
  nlohmann::json model_trained_on;
  double seconds = 0;
};

nlohmann::json TraceScoresJson(const MethodMetrics& m) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [stem, label, score] : m.trace_scores) {
    a.push_back({{"trace", stem}, {"label", label}, {"score", Num(score)}});
  }
  return a;
}

std::string Markdown(const RunInfo& info, const std::vector<Section>& sections) {
  std::ostringstream md;
  md << "# ttap eval\n\n";
  md << "- dataset: `" << info.dataset << "`\n";
  md << "- split: " << info.split
     << " (seen = label split \"test\", held-out workload groups of seen tasks; unseen = split "
        "\"unseen\")\n";
  md << "- pre-existing anti-patterns: "
     << (info.settings.with_pre_existing
             ? "included (--with-pre-existing): their intervals count as positives"
             : "excluded: " + std::to_string(info.excluded_pre_existing) +
                   " trace(s) whose base trace already had anti-patterns were left out")
     << "\n";
  md << "- traces: " << info.label_files << " label files; " << info.train_traces
     << " train traces (" << info.train_clean << " clean, " << info.train_windows
     << " windows) used only to fit the baselines; " << info.skipped_val << " val traces not used; "
     << info.failed_to_load << " failed to load; " << info.unreadable_labels
     << " unreadable label files\n";
  if (!info.model.empty()) md << "- model: `" << info.model << "`\n";
  for (const auto& [method, note] : info.notes) md << "- " << method << ": " << note << "\n";
  md << "- bootstrap: " << info.settings.bootstrap << " resamples, seed " << info.settings.seed
     << "\n";
  for (const auto& [method, why] : info.fit_errors) {
    md << "- " << method << ": n/a (" << why << ")\n";
  }
  for (const Section& s : sections) {
    md << "\n## " << s.name << " (" << s.description << "): " << s.traces.size() << " traces, "
       << s.positives << " with anti-patterns; " << s.windows << " windows, " << s.positive_windows
       << " labelled\n\n";
    md << "| method | trace AUC [95% CI] | window AUC [95% CI] | category acc. [95% CI] (n) | "
          "source top-1 [95% CI] (n) |\n";
    md << "|---|---|---|---|---|\n";
    for (const MethodMetrics& m : s.methods) {
      md << "| " << m.method << " | " << WithCi(m.trace_auc) << " | " << WithCi(m.window_auc)
         << " | "
         << (m.has_categories ? WithCi(m.category) + " (" + std::to_string(m.flagged_labelled) + ")"
                              : "n/a")
         << " | "
         << (m.has_findings ? WithCi(m.source) + " (" + std::to_string(m.source_n) + ")" : "n/a")
         << " |\n";
    }
    bool any_findings = false;
    for (const MethodMetrics& m : s.methods) any_findings |= m.has_findings && !m.per_code.empty();
    if (!any_findings) continue;
    md << "\n| method | code | labels | findings | TP | precision | recall | F1 |\n";
    md << "|---|---|---|---|---|---|---|---|\n";
    for (const MethodMetrics& m : s.methods) {
      if (!m.has_findings) continue;
      for (const auto& [code, c] : m.per_code) {
        const double p = c.findings ? static_cast<double>(c.tp) / c.findings : kNaN;
        const double r = c.labels ? static_cast<double>(c.tp) / c.labels : kNaN;
        const double f1 = std::isfinite(p) && std::isfinite(r) && p + r > 0 ? 2 * p * r / (p + r)
                          : std::isfinite(p) && std::isfinite(r)            ? 0.0
                                                                            : kNaN;
        const RuleInfo* rule = FindRule(code);
        md << "| " << m.method << " | " << code << (rule ? std::string(" ") + rule->name : "")
           << " | " << c.labels << " | " << c.findings << " | " << c.tp << " | " << Fixed(p)
           << " | " << Fixed(r) << " | " << Fixed(f1) << " |\n";
      }
    }
  }
  md << "\nTrace AUC ranks traces by the method's trace score (rules and fused: the share of the "
        "run the findings account for, as ttap scan publishes it; the others: the mean window "
        "score) against "
        "the trace label; window AUC ranks all windows of the section against whether they overlap "
        "a "
        "labelled interval (percentile bootstrap over traces resp. windows). Category accuracy: "
        "share of flagged windows (rules: a window with a category; others: score >= 0.5) that "
        "overlap a label and name its code (percentile bootstrap). Source top-1: share of labelled "
        "intervals with a file/line whose best-overlapping same-code finding points at that line "
        "(percentile bootstrap). Per-code rows match findings to labels one to one by code and "
        "overlapping interval (a finding counts once per step it occurs in, as labels do; rules "
        "findings of every severity).\n";
  return md.str();
}

nlohmann::json Json(const RunInfo& info, const std::vector<Section>& sections) {
  nlohmann::json j;
  j["command"] = info.command_line;
  j["dataset"] = info.dataset;
  j["split"] = info.split;
  j["methods"] = info.methods;
  j["with_pre_existing"] = info.settings.with_pre_existing;
  j["bootstrap"] = info.settings.bootstrap;
  if (!info.model.empty()) {
    j["model"] = info.model;
    j["model_trained_on"] = info.model_trained_on;
  }
  j["notes"] = info.notes;
  j["seed"] = info.settings.seed;
  j["windows_per_trace"] = kWindows;
  j["feature_names"] = WindowFeatureNames();
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& [file, why] : info.failures)
    failures.push_back({{"file", file}, {"error", why}});
  j["traces"] = {{"label_files", info.label_files},
                 {"unreadable_labels", info.unreadable_labels},
                 {"excluded_pre_existing", info.excluded_pre_existing},
                 {"failed_to_load", info.failed_to_load},
                 {"train", info.train_traces},
                 {"train_clean", info.train_clean},
                 {"train_windows", info.train_windows},
                 {"val_unused", info.skipped_val},
                 {"other_split_unused", info.skipped_other},
                 {"failures", failures}};
  j["fit_errors"] = info.fit_errors;
  j["seconds"] = info.seconds;
  nlohmann::json secs = nlohmann::json::array();
  for (const Section& s : sections) {
    nlohmann::json methods = nlohmann::json::array();
    for (const MethodMetrics& m : s.methods) {
      nlohmann::json mj = {{"method", m.method},
                           {"trace_auc", IntervalJson(m.trace_auc)},
                           {"window_auc", IntervalJson(m.window_auc)},
                           {"traces", TraceScoresJson(m)},
                           {"flagged_windows", m.flagged}};
      if (!m.note.empty()) mj["note"] = m.note;
      if (m.has_categories) {
        mj["category_accuracy"] = IntervalJson(m.category);
        mj["category_accuracy"]["n"] = m.flagged_labelled;
        mj["category_accuracy"]["correct"] = m.category_correct;
      } else {
        mj["category_accuracy"] = nullptr;
      }
      if (m.has_findings) {
        mj["source_top1"] = IntervalJson(m.source);
        mj["source_top1"]["n"] = m.source_n;
        mj["source_top1"]["correct"] = m.source_correct;
        nlohmann::json codes = nlohmann::json::array();
        for (const auto& [code, c] : m.per_code) {
          const double p = c.findings ? static_cast<double>(c.tp) / c.findings : kNaN;
          const double r = c.labels ? static_cast<double>(c.tp) / c.labels : kNaN;
          const double f1 =
              std::isfinite(p) && std::isfinite(r) ? (p + r > 0 ? 2 * p * r / (p + r) : 0.0) : kNaN;
          codes.push_back({{"code", code},
                           {"labels", c.labels},
                           {"findings", c.findings},
                           {"tp", c.tp},
                           {"fp", c.findings - c.tp},
                           {"fn", c.labels - c.tp},
                           {"precision", Num(p)},
                           {"recall", Num(r)},
                           {"f1", Num(f1)}});
        }
        mj["per_code"] = codes;
      } else {
        mj["source_top1"] = nullptr;
        mj["per_code"] = nullptr;
      }
      methods.push_back(std::move(mj));
    }
    secs.push_back({{"name", s.name},
                    {"description", s.description},
                    {"n_traces", s.traces.size()},
                    {"n_positive_traces", s.positives},
                    {"n_windows", s.windows},
                    {"n_positive_windows", s.positive_windows},
                    {"methods", methods}});
  }
  j["sections"] = secs;
  return j;
}

// `--windows-tsv`: one row per window of the validation and evaluated traces -- trace, split,
// trace label, window, window label (as the metrics count them), each method's window score (NaN
// where it did not run) and the learned scorer's parts (mil, cat, unusual) and the rules' score
// inside the fused method -- for analysis outside ttap (e.g. choosing a fusion on the validation
// rows).
bool WriteWindowsTsv(const std::string& path,
                     const std::vector<std::unique_ptr<EvalMethod>>& methods,
                     const std::vector<const EvalTrace*>& traces, bool with_pre_existing) {
  std::ofstream f(path, std::ios::binary);
  f << std::setprecision(9);
  f << "trace\tsplit\ttrace_label\twindow\twindow_label";
  for (const auto& m : methods) f << "\t" << m->Name();
  f << "\tmil\tcat\tunusual\trules_in_fused";
  for (const std::string& name : WindowFeatureNames()) f << "\tf." << name;
  f << "\n";
  for (const EvalTrace* t : traces) {
    std::vector<LabeledInterval> li;
    for (const EvalLabel* l : TruthOf(*t, with_pre_existing)) {
      li.push_back({l->code, l->start_ns, l->end_ns});
    }
    const std::vector<int> labels = WindowLabels(t->windows, li);
    std::vector<std::vector<double>> scores(methods.size());
    const std::vector<std::array<double, 3>>* parts = nullptr;
    const std::vector<double>* rules_in_fused = nullptr;
    for (size_t m = 0; m < methods.size(); ++m) {
      const bool ran = !methods[m]->ReadsTraces() ||
                       (m < t->trace_outputs.size() && !t->trace_outputs[m].window_scores.empty());
      if (!ran) continue;
      scores[m] = methods[m]->Score(*t, m).window_scores;
      if (m < t->trace_outputs.size() && !t->trace_outputs[m].model_parts.empty()) {
        parts = &t->trace_outputs[m].model_parts;
        if (methods[m]->Name() == "fused") rules_in_fused = &t->trace_outputs[m].window_scores;
      }
    }
    for (size_t w = 0; w < t->windows.size(); ++w) {
      f << t->labels.stem << "\t" << t->labels.split << "\t"
        << (PositiveTrace(*t, with_pre_existing) ? 1 : 0) << "\t" << w << "\t"
        << (w < labels.size() ? labels[w] : 0);
      auto num = [&](const std::vector<double>* v, size_t i) {
        if (v && i < v->size() && std::isfinite((*v)[i])) {
          f << "\t" << (*v)[i];
        } else {
          f << "\tnan";
        }
      };
      for (size_t m = 0; m < methods.size(); ++m) num(&scores[m], w);
      for (int k = 0; k < 3; ++k) {
        if (parts && w < parts->size()) {
          f << "\t" << (*parts)[w][static_cast<size_t>(k)];
        } else {
          f << "\tnan";
        }
      }
      num(rules_in_fused, w);
      for (size_t k = 0; k < WindowFeatureNames().size(); ++k) {
        const bool have = w < t->features.size() && k < t->features[w].size();
        f << "\t" << (have ? t->features[w][k] : kNaN);
      }
      f << "\n";
    }
  }
  f.close();
  return static_cast<bool>(f);
}

}  // namespace

StatusOr<std::unique_ptr<EvalMethod>> MakeEvalMethod(const std::string& name, uint64_t seed,
                                                     std::shared_ptr<const WindowModel> model) {
  if (name == "rules") return std::unique_ptr<EvalMethod>(new RulesMethod());
  if (name == "clustering") return std::unique_ptr<EvalMethod>(new ClusteringMethod(seed));
  if (name == "zscore") return std::unique_ptr<EvalMethod>(new ZScoreMethod());
  if (name == "random") return std::unique_ptr<EvalMethod>(new RandomMethod(seed));
  if (name == "model" || name == "fused") {
    if (!model) return Status::Error(name + ": needs a window-scorer model (--model FILE)");
    if (name == "model") return std::unique_ptr<EvalMethod>(new ModelMethod(std::move(model)));
    return std::unique_ptr<EvalMethod>(new FusedMethod(std::move(model)));
  }
  return Status::Error("unknown method '" + name +
                       "' (rules, clustering, zscore, random, model, fused)");
}

// Accuracy of the findings' costs (time lost per step, what_if.h) against the truth `ttap gen`
// records for injected real-base copies: the injector's own timing, not ttap's replay.
struct CostAccuracy {
  struct Code {
    int costly = 0;              // injections that cost >= 1% of the run
    int within = 0;              // ... whose estimate is within x1.5 of the truth
    int harmless = 0;            // injections that cost < 1% of the run
    int harmless_flagged = 0;    // ... reported at warning or above all the same
    std::vector<double> ratios;  // estimate / truth of the costly ones
    // Costly injections left out of the ratio: the base already had the code (the finding's
    // cost covers both, the truth only the injection).
    int base_has_code = 0;
  };
  std::map<std::string, Code> by_code;
  struct Injection {
    std::string stem, code;
    double truth_us = 0, estimate_us = 0, run_us = 0;  // per step
    std::string excluded;                              // "" or "base has the code"
    double trace_score = 0;
  };
  std::vector<Injection> costly;  // every costly injection, for reading case by case
  std::vector<std::pair<std::string, double>> clean;  // the clean copies and their trace scores
  int positives = 0, negatives = 0;
  Interval95 auc{kNaN, kNaN, kNaN};  // costly injections vs clean copies of the same bases
};

CostAccuracy MeasureCost(const std::vector<const EvalTrace*>& evaluated, size_t rules_index,
                         const EvalSettings& settings) {
  CostAccuracy acc;
  std::set<std::string> groups;
  std::vector<double> scores;
  std::vector<int> labels;
  for (const EvalTrace* t : evaluated) {
    const EvalLabels& l = t->labels;
    if (!l.anti_pattern || l.time_lost_us_per_step < 0 || l.run_us_per_step <= 0 ||
        l.labels.empty() || rules_index >= t->trace_outputs.size()) {
      continue;
    }
    const MethodTraceOutput& out = t->trace_outputs[rules_index];
    const std::string& code = l.labels.front().code;
    CostAccuracy::Code& c = acc.by_code[code];
    const double truth = l.time_lost_us_per_step;
    auto overlaps_injection = [&](const std::pair<int64_t, int64_t>& o) {
      for (const EvalLabel& lab : l.labels) {
        if (lab.code == code && o.first < lab.end_ns && lab.start_ns < o.second) return true;
      }
      return false;
    };
    const bool base_has_code =
        std::count(l.pre_existing_codes.begin(), l.pre_existing_codes.end(), code) > 0;
    // An occurrence that reaches beyond the injection (by more than a tenth of it) covers some of
    // the base's own pattern too.
    auto beyond_injection = [&](const std::pair<int64_t, int64_t>& o) {
      for (const EvalLabel& lab : l.labels) {
        const int64_t slack = (lab.end_ns - lab.start_ns) / 10;
        if (lab.code == code && o.first >= lab.start_ns - slack && o.second <= lab.end_ns + slack)
          return false;
      }
      return true;
    };
    // A finding of a base that has the code speaks of the base's pattern too when it occurs
    // outside the injection, or reaches beyond it.
    auto mixes_base = [&](const MethodTraceOutput::CostClaim& claim) {
      return base_has_code &&
             std::any_of(claim.occurrences.begin(), claim.occurrences.end(), beyond_injection);
    };
    if (truth < 0.01 * l.run_us_per_step) {
      // Reported at warning or above where it was injected. A finding that also occurs outside
      // the injection in a base that has the code speaks of the base's pattern too: not counted.
      ++c.harmless;
      for (const MethodTraceOutput::CostClaim& claim : out.cost_claims) {
        if (claim.code != code || claim.severity > static_cast<int>(Severity::kWarning)) continue;
        const size_t inside = static_cast<size_t>(
            std::count_if(claim.occurrences.begin(), claim.occurrences.end(), overlaps_injection));
        if (inside == 0 || mixes_base(claim)) continue;
        ++c.harmless_flagged;
        break;
      }
      continue;
    }
    // The estimate: the findings of the code that occur where it was injected. One that also
    // occurs elsewhere in a base that has the code claims the base's share too: left out.
    double e = 0;
    std::string excluded;
    for (const MethodTraceOutput::CostClaim& claim : out.cost_claims) {
      if (claim.code != code) continue;
      const size_t inside = static_cast<size_t>(
          std::count_if(claim.occurrences.begin(), claim.occurrences.end(), overlaps_injection));
      if (inside == 0) continue;
      e += claim.us_per_step;
      if (mixes_base(claim)) excluded = "base has the code";
    }
    acc.costly.push_back({l.stem, code, truth, e, l.run_us_per_step, excluded, out.trace_score});
    // Every costly injection counts for the trace AUC; the ratio only where the truth is all of it.
    groups.insert(l.workload_group);
    scores.push_back(out.trace_score);
    labels.push_back(1);
    if (!excluded.empty()) {
      ++c.base_has_code;
      continue;
    }
    ++c.costly;
    c.ratios.push_back(e / truth);
    if (e >= truth / 1.5 && e <= truth * 1.5) ++c.within;
  }
  for (const EvalTrace* t : evaluated) {
    const EvalLabels& l = t->labels;
    if (l.anti_pattern || l.source != "injected" || !l.pre_existing.empty() ||
        !groups.count(l.workload_group) || rules_index >= t->trace_outputs.size()) {
      continue;
    }
    scores.push_back(t->trace_outputs[rules_index].trace_score);
    labels.push_back(0);
    acc.clean.emplace_back(l.stem, scores.back());
  }
  for (int y : labels) (y ? acc.positives : acc.negatives)++;
  acc.auc = BootstrapAucRoc(scores, labels, settings.bootstrap, settings.seed);
  return acc;
}

std::string CostMarkdown(const CostAccuracy& acc) {
  std::string md =
      "\n## Cost accuracy (rules: time lost per step against the injector's own timing)\n\n"
      "| code | costly injections | estimate within x1.5 | median estimate/truth | harmless "
      "| harmless at warning+ | left out: base has the code |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const auto& [code, c] : acc.by_code) {
    std::vector<double> r = c.ratios;
    std::sort(r.begin(), r.end());
    md += "| " + code + " | " + std::to_string(c.costly) + " | " +
          (c.costly ? Fixed(100.0 * c.within / c.costly, 1) + "%" : "-") + " | " +
          (r.empty() ? "-" : Fixed(r[r.size() / 2], 2)) + " | " + std::to_string(c.harmless) +
          " | " + std::to_string(c.harmless_flagged) + " | " + std::to_string(c.base_has_code) +
          " |\n";
  }
  md +=
      "\nEstimate: the time lost of the findings of the code that occur where it was injected "
      "(0 when none does). Left out of the ratio: injections whose finding also occurs outside "
      "the injection, or reaches beyond it, in a base that already has the code (its time lost "
      "covers the base's share "
      "too; the truth only the injection). Harmless: the injection costs under 1% of the run; "
      "at warning+: a finding of the code at warning or above occurs where it was injected "
      "(not counted when that finding also occurs outside it, or reaches beyond it, in a base "
      "that has the code). "
      "eval.json lists every costly injection with its truth and estimate.\n";
  md += "\nTrace AUC, costly injections (" + std::to_string(acc.positives) +
        ") vs clean copies of the same bases (" + std::to_string(acc.negatives) +
        "), by the trace score (share of the run the findings account for): " + WithCi(acc.auc) +
        "\n";
  return md;
}

nlohmann::json CostJson(const CostAccuracy& acc) {
  nlohmann::json codes = nlohmann::json::object();
  for (const auto& [code, c] : acc.by_code) {
    codes[code] = {{"costly", c.costly},
                   {"within_1_5x", c.within},
                   {"left_out_base_has_code", c.base_has_code},
                   {"harmless", c.harmless},
                   {"harmless_at_warning_or_above", c.harmless_flagged}};
  }
  nlohmann::json injections = nlohmann::json::array();
  for (const auto& i : acc.costly) {
    injections.push_back(
        {{"trace", i.stem},
         {"code", i.code},
         {"truth_us_per_step", i.truth_us},
         {"estimate_us_per_step", i.estimate_us},
         {"run_us_per_step", i.run_us},
         {"trace_score", i.trace_score},
         {"left_out", i.excluded.empty() ? nlohmann::json() : nlohmann::json(i.excluded)}});
  }
  nlohmann::json clean = nlohmann::json::array();
  for (const auto& [stem, score] : acc.clean)
    clean.push_back({{"trace", stem}, {"trace_score", score}});
  return {{"codes", codes},
          {"injections", injections},
          {"clean_copies", clean},
          {"positives", acc.positives},
          {"negatives", acc.negatives},
          {"trace_auc", IntervalJson(acc.auc)}};
}

namespace {

// ---- RunEvalCommand's stages: parsing, methods, loading, scoring, reporting ----

// What the command line asks for.
struct EvalRequest {
  RunInfo info;
  std::string methods_arg = "rules,clustering,zscore,random";
  bool use_llm = false;      // `--llm`: adds the "llm" method (rules with LLM-drafted categories)
  bool windows_tsv = false;  // `--windows-tsv`: every window's scores into OUT/windows.tsv
  SharedFlags shared;        // --model, --device, --llm-*
};

// Parses |args| into |req|; returns 0, or the exit code of a usage error (already printed).
int ParseEvalArgs(const std::vector<std::string>& args, EvalRequest* req) {
  RunInfo& info = req->info;
  info.split = "all";
  info.command_line = "ttap eval";
  for (const auto& a : args) info.command_line += " " + a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    long long v = 0;
    if (a == "--methods" && has_value) {
      req->methods_arg = args[++i];
    } else if (a == "--split" && has_value) {
      info.split = args[++i];
    } else if (a == "--out" && has_value) {
      info.out_dir = args[++i];
    } else if (a == "--windows-tsv") {
      req->windows_tsv = true;
    } else if (a == "--bootstrap" && has_value) {
      if (!ParseInteger(args[++i], &v) || v < 0 || v > 100000) {
        return UsageError("--bootstrap needs a number of resamples (0..100000)");
      }
      info.settings.bootstrap = static_cast<int>(v);
    } else if (a == "--seed" && has_value) {
      if (!ParseInteger(args[++i], &v) || v < 0) return UsageError("--seed needs a number >= 0");
      info.settings.seed = static_cast<uint64_t>(v);
    } else if (a == "--with-pre-existing") {
      info.settings.with_pre_existing = true;
    } else if (int taken = TakeSharedFlag(args, &i, &req->shared)) {
      if (taken != 1) return taken;
    } else if (a == "--llm") {
      req->use_llm = true;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError("eval: unknown or incomplete option '" + a + "'");
    } else if (info.dataset.empty()) {
      info.dataset = a;
    } else {
      return UsageError("eval: one dataset directory, got a second: " + a);
    }
  }
  if (info.dataset.empty()) return UsageError("eval: missing DATASET_DIR");
  if (info.split == "train" || info.split == "val") {
    std::fprintf(stderr,
                 "ttap: error: eval: --split %s is refused: the train split is used to fit the "
                 "baselines and the val split to tune them; report on seen, unseen or all\n",
                 info.split.c_str());
    return 2;
  }
  if (info.split != "seen" && info.split != "unseen" && info.split != "all") {
    return UsageError("--split is seen, unseen or all");
  }
  return 0;
}

// The methods under evaluation, and the learned scorer they share with the workload groups it
// was trained or validated on.
struct EvalMethods {
  std::vector<std::unique_ptr<EvalMethod>> methods;
  std::shared_ptr<const WindowModel> model;
  std::set<std::string> trained_groups;
};

// Makes the methods |req| names (opening the learned scorer once when one needs it); returns 0
// or an exit code (the error printed).
int MakeMethods(EvalRequest* req, EvalMethods* out) {
  RunInfo& info = req->info;
  std::stringstream ss(req->methods_arg);
  std::string name;
  std::set<std::string> seen_names;
  while (std::getline(ss, name, ',')) {
    if (name.empty() || !seen_names.insert(name).second) continue;
    if ((name == "model" || name == "fused") && !out->model) {
      const std::string& named = req->shared.model_path;
      const std::string path =
          named.empty() || named == "shipped" ? WindowModel::DefaultPath() : named;
      auto opened = WindowModel::Open(path, req->shared.device, 2);
      if (!opened.ok()) {
        std::fprintf(stderr, "ttap: error: eval: %s\n", opened.status().message().c_str());
        return 2;
      }
      out->model = std::shared_ptr<const WindowModel>(std::move(opened.value()));
      const WindowModel& model = *out->model;
      info.model =
          model.path() + " (" + model.device() + ", score parts " + model.score_parts() + ")";
      try {
        const auto on = nlohmann::json::parse(model.trained_on());
        for (const auto& g : on.value("groups", nlohmann::json::array())) {
          out->trained_groups.insert(g.get<std::string>());
        }
        info.model_trained_on = on;
      } catch (const std::exception&) {
        std::fprintf(stderr, "ttap: error: eval: %s does not say what it was trained on\n",
                     model.path().c_str());
        return 2;
      }
    }
    auto m = MakeEvalMethod(name, info.settings.seed, out->model);
    if (!m.ok()) {
      std::fprintf(stderr, "ttap: error: eval: %s\n", m.status().message().c_str());
      return 2;
    }
    info.methods.push_back(name);
    out->methods.push_back(std::move(m.value()));
  }
  if (req->use_llm) {
    auto resolved = llm::ResolveLlmSettings(LlmConfig{}, req->shared.llm);
    if (!resolved.ok()) return UsageError(resolved.status().message());
    info.methods.push_back("llm");
    out->methods.push_back(std::make_unique<LlmMethod>(resolved.value()));
  }
  if (out->methods.empty()) return UsageError("--methods needs at least one method");
  return 0;
}

// The dataset's traces by role: fitted on (train), tuned on (val), evaluated.
struct EvalDataset {
  std::vector<EvalTrace> traces;
  std::vector<bool> is_train, is_val;
  std::vector<const EvalTrace*> train, val, evaluated;
  std::vector<bool> train_clean;
};

// Reads the labels files and keeps the traces the methods and the split need; returns 0 or an
// exit code (the error printed).
int SelectTraces(const EvalMethods& em, RunInfo* info, EvalDataset* data) {
  while (info->dataset.size() > 1 && info->dataset.back() == '/') info->dataset.pop_back();
  if (!IsDirectory(info->dataset)) {
    std::fprintf(stderr, "ttap: error: eval: %s is not a directory\n", info->dataset.c_str());
    return 2;
  }
  const std::string label_dir = info->dataset + "/labels";
  const std::vector<std::string> label_files = ListLabelFiles(label_dir);
  info->label_files = static_cast<int>(label_files.size());
  if (label_files.empty()) {
    std::fprintf(stderr, "ttap: error: eval: no label files (%s/*%s)\n", label_dir.c_str(),
                 kLabelsSuffix);
    return 2;
  }
  if (info->out_dir.empty()) info->out_dir = info->dataset + "/eval";

  // Which traces to load: the evaluated splits, and the train split when a method is fitted.
  bool need_train = false, need_val = false;
  for (const auto& m : em.methods) {
    need_train |= m->NeedsFit();
    need_val |= m->NeedsValidation();
  }
  std::set<std::string> refused_groups;
  for (const std::string& file : label_files) {
    auto labels = ReadEvalLabels(label_dir, file);
    if (!labels.ok()) {
      ++info->unreadable_labels;
      info->failures.push_back({"labels/" + file, labels.status().message()});
      std::fprintf(stderr, "ttap: warning: eval: %s/%s: %s; skipped\n", label_dir.c_str(),
                   file.c_str(), labels.status().message().c_str());
      continue;
    }
    const std::string split = labels->split;
    const bool evaluated = (split == "test" && info->split != "unseen") ||
                           (split == "unseen" && info->split != "seen");
    if (split == "train") {
      if (!need_train) continue;
    } else if (split == "val") {
      if (!need_val || !labels->pre_existing.empty()) {
        ++info->skipped_val;
        continue;
      }
    } else if (!evaluated) {
      if (split != "test" && split != "unseen") ++info->skipped_other;
      continue;
    } else if (!labels->pre_existing.empty() && !info->settings.with_pre_existing) {
      ++info->excluded_pre_existing;
      continue;
    }
    if (evaluated && em.trained_groups.count(labels->workload_group)) {
      refused_groups.insert(labels->workload_group);
    }
    EvalTrace t;
    t.labels = std::move(labels.value());
    t.path = info->dataset + "/" + t.labels.trace;
    data->is_train.push_back(split == "train");
    data->is_val.push_back(split == "val");
    data->traces.push_back(std::move(t));
  }
  if (!refused_groups.empty()) {
    std::string list;
    for (const std::string& g : refused_groups) list += " " + g;
    std::fprintf(stderr,
                 "ttap: error: eval: the model %s was trained or validated on workload groups that "
                 "split %s contains:%s; refusing to report on them\n",
                 em.model ? em.model->path().c_str() : "", info->split.c_str(), list.c_str());
    return 2;
  }
  return 0;
}

// Loads the selected traces (two workers, one parse thread each), keeping windows, features and
// the outputs of the methods that read the trace; sorts them into train, val and evaluated.
// Returns 0 or an exit code (the error printed).
int LoadTraces(const EvalMethods& em, RunInfo* info, EvalDataset* data) {
  std::vector<EvalTrace>& traces = data->traces;
  const auto& methods = em.methods;
  std::vector<std::string> load_errors(traces.size());
  std::atomic<size_t> done{0};
  std::mutex progress_mu;
  ParallelFor(traces.size(), std::min<size_t>(2, HardwareThreads()), [&](size_t k) {
    EvalTrace& et = traces[k];
    LoadOptions lo;
    lo.threads = 1;
    lo.window_count = kWindows;
    auto loaded = LoadTrace(et.path, lo);
    if (!loaded.ok()) {
      load_errors[k] = loaded.status().message();
    } else {
      const Trace& trace = **loaded;
      for (const Window& w : trace.windows) et.windows.emplace_back(w.start_ns, w.end_ns);
      et.features = WindowFeatures(trace);
      et.trace_outputs.resize(methods.size());
      for (size_t m = 0; m < methods.size(); ++m) {
        const bool wanted = data->is_val[k] ? methods[m]->NeedsValidation() : !data->is_train[k];
        if (wanted && methods[m]->ReadsTraces()) {
          et.trace_outputs[m] = methods[m]->AnalyseTrace(trace);
        }
      }
    }
    const size_t n = done.fetch_add(1) + 1;
    if (n % 50 == 0 || n == traces.size()) {
      std::lock_guard<std::mutex> lock(progress_mu);
      std::fprintf(stderr, "ttap eval: loaded %zu/%zu traces\n", n, traces.size());
    }
  });

  for (size_t k = 0; k < traces.size(); ++k) {
    if (!load_errors[k].empty()) {
      ++info->failed_to_load;
      info->failures.push_back({traces[k].labels.trace, load_errors[k]});
      std::fprintf(stderr, "ttap: warning: eval: %s; skipped\n", load_errors[k].c_str());
      continue;
    }
    if (data->is_val[k]) {
      data->val.push_back(&traces[k]);
    } else if (data->is_train[k]) {
      data->train.push_back(&traces[k]);
      // A trace whose base already had anti-patterns is never clean.
      const bool clean = !traces[k].labels.anti_pattern && traces[k].labels.pre_existing.empty();
      data->train_clean.push_back(clean);
      info->train_clean += clean ? 1 : 0;
      info->train_windows += static_cast<int>(traces[k].windows.size());
    } else {
      data->evaluated.push_back(&traces[k]);
    }
  }
  info->train_traces = static_cast<int>(data->train.size());
  if (data->evaluated.empty()) {
    std::fprintf(stderr,
                 "ttap: error: eval: no usable traces to evaluate in %s (split %s: %d label files, "
                 "%d failed to load, %d excluded for pre-existing anti-patterns)\n",
                 info->dataset.c_str(), info->split.c_str(), info->label_files,
                 info->failed_to_load, info->excluded_pre_existing);
    return 2;
  }
  return 0;
}

// Fits the methods that need the train split and tunes those that need val; returns each
// method's error ("" when it has scores).
std::vector<std::string> FitAndTune(const EvalMethods& em, const EvalDataset& data, RunInfo* info) {
  const auto& methods = em.methods;
  std::vector<std::string> fit_errors(methods.size());
  for (size_t m = 0; m < methods.size(); ++m) {
    if (!methods[m]->NeedsFit()) continue;
    Status s = methods[m]->Fit(data.train, data.train_clean);
    if (!s.ok()) {
      fit_errors[m] = s.message();
      info->fit_errors[methods[m]->Name()] = s.message();
    }
  }
  for (size_t m = 0; m < methods.size(); ++m) {
    if (!methods[m]->NeedsValidation()) continue;
    Status s = methods[m]->Tune(data.val, m);
    if (!s.ok()) {
      fit_errors[m] = s.message();
      info->fit_errors[methods[m]->Name()] = s.message();
    }
    if (!methods[m]->Note().empty()) info->notes[methods[m]->Name()] = methods[m]->Note();
  }
  return fit_errors;
}

// The report's sections (seen, unseen, overall, the no-rule and zero-shot families), each with
// every method measured on it: (section, method) pairs on two threads (the window bootstrap
// dominates).
std::vector<Section> ScoreSections(const EvalMethods& em, const EvalDataset& data,
                                   const std::vector<std::string>& fit_errors,
                                   const RunInfo& info) {
  std::vector<Section> sections;
  auto add_section = [&](const std::string& name, const std::string& description, bool take_test,
                         bool take_unseen) {
    Section s;
    s.name = name;
    s.description = description;
    for (const EvalTrace* t : data.evaluated) {
      if ((take_test && t->labels.split == "test") || (take_unseen && t->labels.split == "unseen"))
        s.traces.push_back(t);
    }
    PrepareSection(&s, info.settings.with_pre_existing);
    sections.push_back(std::move(s));
  };
  if (info.split != "unseen") add_section("seen", "split \"test\"", true, false);
  if (info.split != "seen") add_section("unseen", "split \"unseen\"", false, true);
  if (info.split == "all") add_section("overall", "seen and unseen", true, true);
  // Where rules cannot help: the clean traces and those whose only anti-patterns are families
  // no rule covers ("no-rule", which training may see with trace labels only, and "unseen",
  // which appear only in held-out splits), then those of the zero-shot families alone. Each is
  // reported when the evaluated splits hold any such trace.
  auto add_family_section = [&](const char* name, const char* description, bool zero_shot_only) {
    Section s;
    s.name = name;
    s.description = description;
    int with_family = 0;
    for (const EvalTrace* t : data.evaluated) {
      bool only = !t->labels.labels.empty();
      for (const EvalLabel& l : t->labels.labels) {
        only = only && (zero_shot_only ? l.family == "unseen" : l.family != "catalogue");
      }
      if (!t->labels.anti_pattern || only) s.traces.push_back(t);
      with_family += only ? 1 : 0;
    }
    if (with_family > 0) {
      PrepareSection(&s, info.settings.with_pre_existing);
      sections.push_back(std::move(s));
    }
  };
  add_family_section("no-rule families",
                     "clean traces and traces with only families no rule covers", false);
  add_family_section("zero-shot families",
                     "clean traces and traces with only families no rule covers that appear "
                     "in no train or val group",
                     true);

  std::vector<std::pair<size_t, size_t>> jobs;
  for (size_t s = 0; s < sections.size(); ++s) {
    sections[s].methods.resize(em.methods.size());
    for (size_t m = 0; m < em.methods.size(); ++m) jobs.emplace_back(s, m);
  }
  const size_t threads = std::min<size_t>({2, data.traces.size(), HardwareThreads()});
  ParallelFor(jobs.size(), threads, [&](size_t k) {
    const auto [s, m] = jobs[k];
    sections[s].methods[m] = Measure(sections[s], *em.methods[m], m, fit_errors[m], info.settings);
  });
  return sections;
}

// Prints the Markdown report and writes OUT/eval.md, OUT/eval.json (and OUT/windows.tsv when
// asked); returns 0 or an exit code (the error printed).
int WriteReports(const EvalRequest& req, const EvalMethods& em, const EvalDataset& data,
                 const std::vector<Section>& sections) {
  const RunInfo& info = req.info;
  const auto& methods = em.methods;
  size_t rules_index = methods.size();
  for (size_t m = 0; m < methods.size(); ++m) {
    if (methods[m]->Name() == "rules") rules_index = m;
  }
  const CostAccuracy cost = MeasureCost(data.evaluated, rules_index, info.settings);
  const bool report_cost = rules_index < methods.size() && cost.positives + cost.negatives > 0;
  const std::string md = Markdown(info, sections) + (report_cost ? CostMarkdown(cost) : "");
  std::cout << md;
  if (!MakeDirs(info.out_dir)) {
    std::fprintf(stderr, "ttap: error: eval: cannot create %s: %s\n", info.out_dir.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::ofstream md_out(info.out_dir + "/eval.md", std::ios::binary);
  md_out << md;
  std::ofstream json_out(info.out_dir + "/eval.json", std::ios::binary);
  nlohmann::json doc = Json(info, sections);
  if (report_cost) doc["cost_accuracy"] = CostJson(cost);
  json_out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!md_out || !json_out) {
    std::fprintf(stderr, "ttap: error: eval: cannot write %s/eval.md or eval.json\n",
                 info.out_dir.c_str());
    return 2;
  }
  if (req.windows_tsv) {
    const std::string path = info.out_dir + "/windows.tsv";
    std::vector<const EvalTrace*> all = data.val;
    all.insert(all.end(), data.evaluated.begin(), data.evaluated.end());
    if (!WriteWindowsTsv(path, methods, all, info.settings.with_pre_existing)) {
      std::fprintf(stderr, "ttap: error: eval: cannot write %s\n", path.c_str());
      return 2;
    }
  }
  std::fprintf(stderr, "ttap eval: wrote %s/eval.md and %s/eval.json (%.1f s)\n",
               info.out_dir.c_str(), info.out_dir.c_str(), info.seconds);
  return 0;
}

}  // namespace

int RunEvalCommand(const std::vector<std::string>& args) {
  const auto started = std::chrono::steady_clock::now();
  EvalRequest req;
  EvalMethods em;
  EvalDataset data;
  if (int rc = ParseEvalArgs(args, &req)) return rc;
  if (int rc = MakeMethods(&req, &em)) return rc;
  if (int rc = SelectTraces(em, &req.info, &data)) return rc;
  if (int rc = LoadTraces(em, &req.info, &data)) return rc;
  const std::vector<std::string> fit_errors = FitAndTune(em, data, &req.info);
  const std::vector<Section> sections = ScoreSections(em, data, fit_errors, req.info);
  req.info.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return WriteReports(req, em, data, sections);
}

}  // namespace ttap

// `ttap eval DATASET_DIR`: the benchmark. Reads a labelled dataset written by `ttap gen`
// (DIR/*.pt.trace.json.gz with DIR/labels/<stem>.labels.json), runs each method (the rules, the
// unsupervised baselines of bench/harness/eval_baselines.h, the learned window scorer) on the
// held-out traces, and reports trace- and window-level AUC-ROC with bootstrap CIs, per-code
// precision/recall of findings, category accuracy of flagged windows and source-line top-1
// accuracy (bench/harness/eval_metrics.h), per split, as Markdown (stdout, OUT/eval.md) and JSON
// (OUT/eval.json). Dispatched by server/cli.cpp; the types below are the seam where new methods
// plug in.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/base/status.h"
#include "analysis/model/trace.h"
#include "bench/harness/labels.h"

namespace ttap {

// A finding as eval sees it: code, extent and the responsible user frame.
struct EvalFinding {
  std::string code;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::string file;  // the user frame's file as recorded, "" when none
  int line = 0;
};

// What a method says about one trace.
struct MethodTraceOutput {
  std::vector<double> window_scores;           // 0..1 (NaN = no opinion), one per window
  double trace_score = 0;                      // 0..1
  std::vector<std::string> window_categories;  // code per window, "" = none (may be empty)
  std::vector<EvalFinding> findings;
  // A second opinion kept for methods that combine two (fused: the model's window scores and
  // categories beside the rules' ones).
  std::vector<double> aux_scores;
  std::vector<std::string> aux_categories;
  // The learned scorer's score parts per window (MIL head, P(category != none), unusual), where
  // the method ran it.
  std::vector<std::array<double, 3>> model_parts;
  // Methods with findings: per code, the time lost per step the findings claim (what the fix
  // saves, replayed) and their highest severity (0 error .. 3 hint).
  std::map<std::string, double> cost_us_per_step;
  std::map<std::string, int> top_severity;
  // Methods with findings: each finding's claim with where it occurs, so that a cost is compared
  // with the injection it found rather than with every finding of the code.
  struct CostClaim {
    std::string code;
    double us_per_step = 0;
    std::vector<std::pair<int64_t, int64_t>> occurrences;  // ns
    int severity = 0;                                      // Severity as int (0 = error)
  };
  std::vector<CostClaim> cost_claims;
};

// What eval keeps of a loaded trace (the Trace itself is dropped after loading).
struct EvalTrace {
  EvalLabels labels;
  std::string path;
  std::vector<std::pair<int64_t, int64_t>> windows;  // Trace::windows as [start_ns, end_ns)
  std::vector<std::vector<double>> features;         // WindowFeatures, one row per window
  // Outputs of the methods that read the trace itself (EvalMethod::ReadsTraces), by method index.
  std::vector<MethodTraceOutput> trace_outputs;
};

// A scoring method under evaluation. Methods that read the trace (the rules, the learned scorer)
// compute their output in AnalyseTrace while the trace is loaded; the others are fitted on the
// train split's EvalTraces and score an EvalTrace's window features.
class EvalMethod {
 public:
  virtual ~EvalMethod() = default;
  virtual std::string Name() const = 0;
  virtual bool ProducesFindings() const { return false; }
  virtual bool ProducesCategories() const { return false; }
  virtual bool ReadsTraces() const { return false; }
  virtual bool NeedsFit() const { return false; }
  // Worker threads, concurrently for different traces: must only read |trace|.
  virtual MethodTraceOutput AnalyseTrace(const Trace& trace) const {
    (void)trace;
    return {};
  }
  // Once, after loading. |clean| marks the train traces whose clean label can be trusted. An
  // error leaves the method without scores (reported as n/a with the message).
  virtual Status Fit(const std::vector<const EvalTrace*>& train, const std::vector<bool>& clean) {
    (void)train;
    (void)clean;
    return Status::Ok();
  }
  // Methods tuned on the validation split (fused: how to combine) get its traces here, with
  // their AnalyseTrace outputs at |index|.
  virtual bool NeedsValidation() const { return false; }
  virtual Status Tune(const std::vector<const EvalTrace*>& val, size_t index) {
    (void)val;
    (void)index;
    return Status::Ok();
  }
  // A line for the report (e.g. the fusion chosen on the validation split), "" for none.
  virtual std::string Note() const { return ""; }
  // |index|: this method's index into EvalTrace::trace_outputs.
  virtual MethodTraceOutput Score(const EvalTrace& trace, size_t index) const = 0;
};

class WindowModel;
// The method called |name| ("rules", "clustering", "zscore", "random", "model", "fused"), or an
// error; "model" and "fused" need |model| (opened once by the caller).
StatusOr<std::unique_ptr<EvalMethod>> MakeEvalMethod(
    const std::string& name, uint64_t seed, std::shared_ptr<const WindowModel> model = nullptr);

// ttap eval DATASET_DIR [--methods LIST] [--split seen|unseen|all] [--out DIR] [--bootstrap N]
// [--seed S] [--with-pre-existing] [--model FILE] [--device D]; returns the exit code (0 ok, 2
// unusable input or usage).
int RunEvalCommand(const std::vector<std::string>& args);

}  // namespace ttap

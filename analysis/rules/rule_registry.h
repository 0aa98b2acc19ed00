// The one home of every anti-pattern code: its name and one-line summary, the detector that finds
// it, the fix plan that costs it on the causal graph (causal/fix_plan.h), the source shape its
// finding is placed on, its fix recipe and its docs anchor. RunRules, the costing, the source
// mapping (mapping/) and both front-ends ask the registry what a code is; none compares code
// strings. Adding a code with a fix: its file analysis/rules/tta0NN_<name>.cpp (the detector,
// declared in rules.h), one RuleSpec line here, its recipe file mapping/fixes/<id>.cpp and one
// line in mapping/quick_fix_registry.cpp, its section in docs/antipatterns.md, and (for the
// benchmark) one injector line in bench/harness/trace_inject.cpp; a new kind of fix adds a
// FixModel (fix_plan.h) and its what-if function (causal/what_if.cpp).
// tests/analysis/rules/rule_registry_test.cpp fails when a part is missing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/causal/fix_plan.h"
#include "analysis/rules/rules.h"

namespace ttap {

// Where in the source a finding of the code is placed when its stack names a statement (the
// call it narrows to) or when the trace has no stacks (the workspace's only statement of that
// shape): mapping/source_ranges.cpp and mapping/shape_locator.cpp implement each.
enum class SourceShape : uint8_t {
  kNone,            // the statement its stack names, as it is
  kDataLoaderLoop,  // a `for` loop over a DataLoader
  kHostReadCall,    // .item() / .cpu() / .tolist() / .numpy() / synchronize()
  kTransferCall,    // .to() / .cuda() / .cpu()
  kTensorCreation,  // torch.tensor() / as_tensor() / from_numpy() / .to() / .cuda()
  kZeroGradCall,    // zero_grad()
  kOptimizerStep,   // an optimizer's .step()
  kModelCall,       // the model called on a batch
  kEmptyCacheCall,  // torch.cuda.empty_cache()
  kBackwardCall,    // loss.backward()
  kByRegion,        // the region the finding names (evidence "region"): ShapeOf()
  // Settings that are the cause themselves: a finding is placed on the workspace's one such
  // statement even when the trace has stacks (they point at the ops the setting slows down).
  kCudnnBenchmarkOn,    // `torch.backends.cudnn.benchmark = True`
  kAnomalyDetectionOn,  // `torch.autograd.set_detect_anomaly(True)`, `detect_anomaly()`
};
// Whether |shape| is a setting (placed on it even when the trace has stacks).
inline bool IsSettingShape(SourceShape shape) {
  return shape == SourceShape::kCudnnBenchmarkOn || shape == SourceShape::kAnomalyDetectionOn;
}

struct RuleSpec {
  RuleInfo info;                           // code, name, summary, fix recipe id ("" for none)
  Detector detect = nullptr;               // per-step detector (tta0NN_*.cpp), or nullptr
  CausalDetector detect_causal = nullptr;  // detector over the causal graph, or nullptr
  FixPlan plan;  // how its fix is costed: the graph change and the claim's role (fix_plan.h)
  SourceShape shape = SourceShape::kNone;
  MessageFn message = nullptr;  // its own wording of a finding, or the summary and detail
  // It happens once per process, never in steady state (TTA015 cold start).
  bool one_time = false;
  // Added by the learned window scorer, not by a detector (TTA900).
  bool from_window_scorer = false;
  // Its time on one rank may be a wait for other ranks at the collectives (TTA011): a job's
  // report says whose.
  bool may_wait_for_peers = false;
  // Found by reading a job's ranks together (analysis/model/job_analysis.h), not one trace
  // (TTA018).
  bool from_job_analysis = false;
  // The learned scorer's category head knows it (RuleCatalogue(), TTA001..TTA014).
  bool learned_category = false;
  // Its rows are kernels of launch bursts, which the CPU-overhead region leaves out (TTA007).
  bool launch_burst_rows = false;
  // Its rows are per-parameter regions another cause owns, which the CPU-overhead region
  // leaves out (TTA005 zero_grad, TTA006 the optimizer step).
  bool per_parameter_rows = false;
  // A cause of its own finding is dropped when the trace lacks its GPU activity (TTA016):
  // idle GPU time and launch-bound regions say nothing then.
  bool needs_gpu_activity = false;
  // It makes the trace unjudgeable: the findings that need GPU activity go (TTA016); it is
  // reported even when its own share is tiny.
  bool marks_trace_incomplete = false;
  // detect_causal runs only when detect found nothing (TTA013's allocator calls on the critical
  // path, for traces whose steps the per-step detector cannot judge).
  bool causal_only_if_absent = false;
};

// Every code in code order: the catalogue (TTA001..TTA014), the causal-model codes, TTA900.
const std::vector<RuleSpec>& RuleRegistry();
// The code's entry, nullptr for unknown codes.
const RuleSpec* FindRuleSpec(std::string_view code);
// The shape a finding is placed on: its code's, or for kByRegion the region it names
// (loss.backward(), the optimizer's step, zero_grad, else the training loop); kNone for none.
SourceShape ShapeOf(const Finding& f);
// The docs anchor of a code's section in docs/antipatterns.md ("tta001-dataloader-stall").
std::string RuleDocsAnchor(const RuleInfo& info);

}  // namespace ttap

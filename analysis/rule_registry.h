// The one home of every anti-pattern code: its name and one-line summary, the detector that finds
// it, the fix model that costs it on the causal graph, the role its claim plays when fixes are
// replayed together, the source shape its finding is placed on, its fix recipe and its docs
// anchor. RunRules, the costing (what_if.cpp), the source mapping (mapping/) and the language
// server ask the registry what a code is; none compares code strings. Adding a code is one
// RuleSpec line here, its detector (rules_*.cpp), its fix model (what_if.cpp) when it has a new
// one, its recipe (server/lsp/fixes/) and its docs section; tests/analysis/rule_registry_test.cpp
// fails when a part is missing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/rules.h"

namespace ttap {

// How a code's fix changes the causal graph (what_if.cpp builds each; docs/causal_model.md).
enum class FixModel : uint8_t {
  kNone,                  // nothing to replay (an incomplete trace, a window no rule explains)
  kDataLoaderWorkers,     // the batch load becomes a hand-over from worker processes
  kDeferHostSync,         // the sync no longer waits; the statement reading the value leaves
  kPinnedNonBlocking,     // pinned memory: faster copies, the call returns at once
  kBatchCopies,           // small copies launched together go in one
  kRemoveConversions,     // the conversions go with their launches and the ops that made them
  kKeepOnDevice,          // the round trip's copies go, and the host work between them
  kSetToNone,             // zero_grad launches nothing
  kForeachOptimizer,      // one multi-tensor kernel per kernel kind
  kGraphBursts,           // each burst of short launches captured as a CUDA graph
  kGraphRegion,           // the region's dispatch and launches captured as a CUDA graph
  kWarmStart,             // profiled after warm-up: each first call costs a usual one
  kIdleWorkMovedOut,      // no fix: the CPU work inside the GPU's idle gaps moved out
  kTensorCores,           // each fp32 matrix kernel at its time on tensor cores
  kOverlapCommunication,  // collectives hidden behind the step's earlier compute
  kBucketCollectives,     // small collectives merged into buckets
  kCachingAllocator,      // the allocator keeps the memory: the calls go
};

// What a finding claims when every fix is replayed together (CostFindings).
enum class CostRole : uint8_t {
  kCause,        // a cause with a fix: it claims what its fix alone saves
  kLaunchBound,  // a launch-bound region: another cause's symptom when that cause's fix changes
                 // most of the same nodes (zero_grad's or the optimizer's per-parameter kernels)
  kIdleTime,     // idle time: claims only what no fix explains, costed after every fix
};

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
};

struct RuleSpec {
  RuleInfo info;                           // code, name, summary, fix recipe id ("" for none)
  Detector detect = nullptr;               // per-step detector (rules_*.cpp), or nullptr
  CausalDetector detect_causal = nullptr;  // detector over the causal graph, or nullptr
  FixModel fix_model = FixModel::kNone;
  CostRole role = CostRole::kCause;
  SourceShape shape = SourceShape::kNone;
  MessageFn message = nullptr;  // its own wording of a finding, or the summary and detail
  // It happens once per process, never in steady state (TTA015 cold start).
  bool one_time = false;
  // Added by the learned window scorer, not by a detector (TTA900).
  bool from_window_scorer = false;
  // Its time on one rank may be a wait for other ranks at the collectives (TTA011): a job's
  // report says whose.
  bool may_wait_for_peers = false;
  // Found by reading a job's ranks together (analysis/job_analysis.h), not one trace (TTA018).
  bool from_job_analysis = false;
  // The learned scorer's category head knows it (RuleCatalogue(), TTA001..TTA014).
  bool learned_category = false;
  // Its finding is the pinned-copy fix's symptom when most of its waits are copies that fix
  // makes non-blocking (TTA002, a host sync, of TTA003's pinned memory).
  bool symptom_of_pinned_copies = false;
  // Its fix makes blocking pageable copies non-blocking (TTA003).
  bool pins_copies = false;
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

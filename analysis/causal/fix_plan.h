// FixPlan: how a finding's fix is costed on the causal graph: the graph change that expresses
// it and the part its claim plays when every fix is replayed together. The rule registry
// (rules/rule_registry.h) gives each code its plan; the causal model (what_if.h) takes plans,
// never codes, so it knows nothing of the rules.
#pragma once

#include <cstdint>

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
  kNoAlgorithmSearch,     // each searching convolution at a warm one's cost, without its syncs
  kRemoveDebugWork,       // a debugging aid's work goes (anomaly mode's captures and checks)
  kPeersOnTime,           // each collective that waited for a peer at its fastest run's cost
};

// What a finding claims when every fix is replayed together (CostFindings).
enum class CostRole : uint8_t {
  kCause,        // a cause with a fix: it claims what its fix alone saves
  kLaunchBound,  // a launch-bound region: another cause's symptom when that cause's fix changes
                 // most of the same nodes (zero_grad's or the optimizer's per-parameter kernels)
  kIdleTime,     // idle time: claims only what no fix explains, costed after every fix
};

// What a convolution op costs when cuDNN does not search for its algorithm, where the trace has
// no warm one to measure (TTA020's detector and kNoAlgorithmSearch): a cudnn_convolution's
// dispatch measured 128 us on an H200 (bench/record/zeroshot, cudnnbench-cnn-fix).
constexpr int64_t kWarmConvolutionNs = 150000;

struct FixPlan {
  FixModel model = FixModel::kNone;
  CostRole role = CostRole::kCause;
  // Its finding is another fix's symptom when most of its waits are ones that fix removes
  // (TTA002, a host sync, of TTA003's pinned copies, TTA014's copies out or TTA021's anomaly
  // checks).
  bool symptom_of_removed_waits = false;
  // Its fix removes waits a host sync reports: blocking pageable copies made non-blocking
  // (TTA003), data kept on the device instead of copied out (TTA014), anomaly mode's gradient
  // checks gone (TTA021).
  bool removes_waits = false;
};

}  // namespace ttap

// The registry of anti-pattern codes (see rule_registry.h).
#include "analysis/rules/rule_registry.h"

#include <cctype>

namespace ttap {

namespace {

RuleSpec Spec(RuleInfo info, Detector detect, CausalDetector detect_causal, FixModel fix_model,
              SourceShape shape) {
  RuleSpec s;
  s.info = info;
  s.detect = detect;
  s.detect_causal = detect_causal;
  s.plan.model = fix_model;
  s.shape = shape;
  return s;
}

std::vector<RuleSpec> Build() {
  std::vector<RuleSpec> r;
  using FM = FixModel;
  using SS = SourceShape;
  // The catalogue: per-step detectors, the learned scorer's categories.
  r.push_back(Spec(
      {"TTA001", "dataloader-stall", "the input pipeline keeps the GPU idle", "dataloader-workers"},
      DetectDataloaderStall, nullptr, FM::kDataLoaderWorkers, SS::kDataLoaderLoop));
  r.back().message = DataLoaderStallMessage;
  r.push_back(
      Spec({"TTA002", "host-sync", "the CPU waits for the GPU inside the step, then the GPU drains",
            "defer-host-sync"},
           DetectHostSync, nullptr, FM::kDeferHostSync, SS::kHostReadCall));
  r.back().plan.symptom_of_removed_waits = true;
  r.back().message = HostSyncMessage;
  r.push_back(Spec({"TTA003", "pageable-memcpy", "copies between pageable host memory and the GPU",
                    "pin-memory-non-blocking"},
                   DetectPageableMemcpy, nullptr, FM::kPinnedNonBlocking, SS::kTransferCall));
  r.back().plan.removes_waits = true;
  r.push_back(Spec({"TTA004", "small-h2d-copies", "many small host-to-device copies per step",
                    "create-on-device"},
                   DetectSmallH2DCopies, nullptr, FM::kBatchCopies, SS::kTensorCreation));
  r.push_back(Spec({"TTA005", "zero-grad-per-parameter",
                    "zero_grad launches one kernel per parameter", "zero-grad-set-to-none"},
                   DetectZeroGradPerParam, nullptr, FM::kSetToNone, SS::kZeroGradCall));
  r.back().per_parameter_rows = true;
  r.push_back(Spec({"TTA006", "unfused-optimizer",
                    "the optimizer step launches per-parameter kernels", "optimizer-foreach"},
                   DetectUnfusedOptimizer, nullptr, FM::kForeachOptimizer, SS::kOptimizerStep));
  r.back().per_parameter_rows = true;
  r.push_back(Spec(
      {"TTA007", "launch-bound", "kernels shorter than their launches, the GPU idle between them",
       "cuda-graphs-or-compile"},
      DetectLaunchBound, nullptr, FM::kGraphBursts, SS::kNone));
  r.back().message = LaunchBoundMessage;
  r.back().plan.role = CostRole::kLaunchBound;
  r.back().launch_burst_rows = true;
  r.back().needs_gpu_activity = true;
  r.push_back(Spec({"TTA008", "gpu-idle", "the GPU idles inside the step while the CPU works", ""},
                   DetectGpuIdle, nullptr, FM::kIdleWorkMovedOut, SS::kNone));
  r.back().plan.role = CostRole::kIdleTime;
  r.back().needs_gpu_activity = true;
  r.back().message = GpuIdleMessage;
  r.push_back(Spec({"TTA009", "no-tensor-cores", "fp32 matrix kernels where tensor cores exist",
                    "enable-tf32-or-amp"},
                   DetectNoTensorCores, nullptr, FM::kTensorCores, SS::kNone));
  r.push_back(Spec({"TTA010", "layout-conversion", "NCHW<->NHWC conversions around convolutions",
                    "channels-last"},
                   DetectLayoutConversion, nullptr, FM::kRemoveConversions, SS::kModelCall));
  r.push_back(Spec({"TTA011", "comm-not-overlapped",
                    "collectives run with little concurrent compute", "overlap-communication"},
                   DetectCommNotOverlapped, nullptr, FM::kOverlapCommunication, SS::kNone));
  r.back().may_wait_for_peers = true;
  r.back().message = CommNotOverlappedMessage;
  r.push_back(Spec(
      {"TTA012", "comm-per-parameter", "many small collectives per step", "bucket-collectives"},
      DetectCommPerParameter, nullptr, FM::kBucketCollectives, SS::kNone));
  r.push_back(Spec({"TTA013", "allocator-churn", "cudaMalloc/cudaFree in steady-state steps",
                    "avoid-empty-cache"},
                   DetectAllocatorChurn, DetectAllocatorPath, FM::kCachingAllocator,
                   SS::kEmptyCacheCall));
  r.back().causal_only_if_absent = true;
  r.push_back(Spec({"TTA014", "device-ping-pong",
                    "the same data copied to the host and back every step", "keep-on-device"},
                   DetectDevicePingPong, nullptr, FM::kKeepOnDevice, SS::kTransferCall));
  r.back().plan.removes_waits = true;  // the copy out, and its wait, go
  for (RuleSpec& s : r) s.learned_category = true;
  // Causes decided from the causal model (tta013, tta015-tta017_*.cpp).
  r.push_back(
      Spec({"TTA015", "cold-start", "lazy kernel loading and first calls inside the profiled steps",
            "profile-after-warmup"},
           nullptr, DetectColdStart, FM::kWarmStart, SS::kNone));
  r.back().one_time = true;
  r.push_back(Spec(
      {"TTA016", "trace-incomplete", "GPU activity missing from the trace", "record-gpu-activity"},
      nullptr, DetectTraceIncomplete, FM::kNone, SS::kNone));
  r.back().marks_trace_incomplete = true;
  r.push_back(Spec({"TTA017", "cpu-overhead-bound",
                    "the CPU's per-op dispatch and launches bound the step while the GPU waits",
                    "cuda-graphs-or-compile"},
                   nullptr, DetectCpuOverheadPath, FM::kGraphRegion, SS::kByRegion));
  r.back().plan.role = CostRole::kLaunchBound;
  r.back().needs_gpu_activity = true;
  // Read from a job's ranks together (analysis/model/job_analysis.cpp, `ttap scan DIR`).
  r.push_back(Spec({"TTA018", "straggler-rank",
                    "some ranks arrive late at the collectives and the others wait for them", ""},
                   nullptr, nullptr, FM::kNone, SS::kNone));
  r.back().from_job_analysis = true;
  r.push_back(Spec({"TTA019", "load-imbalance",
                    "the same work takes longer on some ranks of a job than on the others", ""},
                   nullptr, nullptr, FM::kNone, SS::kNone));
  r.back().from_job_analysis = true;
  r.push_back(Spec({"TTA020", "conv-algorithm-search",
                    "convolutions search for their algorithm in every step (cudnn.benchmark with "
                    "changing shapes)",
                    "fixed-shapes-or-no-benchmark"},
                   nullptr, DetectConvAlgorithmSearch, FM::kNoAlgorithmSearch,
                   SS::kCudnnBenchmarkOn));
  r.push_back(Spec({"TTA021", "anomaly-detection",
                    "autograd's anomaly detection is left on: every op captures its traceback, "
                    "every gradient is checked with a sync",
                    "disable-anomaly-detection"},
                   nullptr, DetectAnomalyDetection, FM::kRemoveDebugWork, SS::kAnomalyDetectionOn));
  r.back().plan.removes_waits = true;
  r.push_back(Spec({"TTA022", "peer-wait",
                    "collectives wait for a late peer rank: the same message took far longer "
                    "than its fastest run",
                    "balance-ranks"},
                   nullptr, DetectPeerWait, FM::kPeersOnTime, SS::kNone));
  r.back().message = PeerWaitMessage;
  // Windows the learned scorer flags and no rule explains (server/scan.cpp adds them).
  r.push_back(Spec(
      {"TTA900", "unusual-window", "the window scorer flags a window that no rule explains", ""},
      nullptr, nullptr, FM::kIdleWorkMovedOut, SS::kNone));
  r.back().from_window_scorer = true;
  // Costed as idle time no fix explains, like TTA008: what moving the CPU work out of the
  // window's idle GPU time would save, after every fix.
  r.back().plan.role = CostRole::kIdleTime;
  r.back().needs_gpu_activity = true;
  return r;
}

}  // namespace

const std::vector<RuleSpec>& RuleRegistry() {
  static const std::vector<RuleSpec> kRegistry = Build();
  return kRegistry;
}

const RuleSpec* FindRuleSpec(std::string_view code) {
  for (const RuleSpec& s : RuleRegistry()) {
    if (code == s.info.code) return &s;
  }
  return nullptr;
}

SourceShape ShapeOf(const Finding& f) {
  const RuleSpec* spec = FindRuleSpec(f.code);
  if (!spec) return SourceShape::kNone;
  if (spec->shape != SourceShape::kByRegion) return spec->shape;
  // A CPU-overhead-bound region sits where the region is written: loss.backward(), the
  // optimizer's step, zero_grad, else the training loop whose step it is.
  auto it = f.evidence.find("region");
  const std::string region = it == f.evidence.end() ? "" : it->second.text;
  if (region == "backward") return SourceShape::kBackwardCall;
  if (region == "the optimizer step") return SourceShape::kOptimizerStep;
  if (region == "zero_grad") return SourceShape::kZeroGradCall;
  if (region == "the step's eager ops") return SourceShape::kDataLoaderLoop;
  return SourceShape::kNone;
}

std::string RuleDocsAnchor(const RuleInfo& info) {
  std::string anchor = std::string(info.code) + "-" + info.name;
  for (char& c : anchor) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return anchor;
}

}  // namespace ttap

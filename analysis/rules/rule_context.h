// RuleContext: what every detector needs, computed once per trace: the analysed steps (the
// ProfilerStep# steps, or one span for a trace without them), the merged GPU busy intervals,
// and small helpers (GPU idle time in a range, ancestors of a row, the launching CPU op of a GPU
// activity, the windows a time range touches). Built by RunRules; read-only afterwards.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/causal/causal_graph.h"
#include "analysis/model/runtime_calls.h"
#include "analysis/model/trace.h"
#include "analysis/model/trace_queries.h"
#include "analysis/model/trace_stats.h"

namespace ttap {

struct AnalysedStep {
  int64_t number = -1;  // ProfilerStep number; -1 for the whole-trace span
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration() const { return end_ns - start_ns; }
};

class RuleContext {
 public:
  // |cut|: AnalysedSteps'.
  explicit RuleContext(const Trace& trace, ColdStartCut cut = {});

  const Trace& trace() const { return trace_; }
  const EventTable& ev() const { return trace_.events; }
  std::string_view Name(size_t row) const { return trace_.Name(row); }
  const std::vector<AnalysedStep>& steps() const { return steps_; }
  bool has_gpu() const { return has_gpu_; }
  bool amd() const { return amd_; }
  // Compute capability of the device that ran most kernels ({-1,-1} when unknown).
  int compute_major() const { return compute_major_; }
  int compute_minor() const { return compute_minor_; }
  // Compute capability x10 (sm_90: 90), -1 when the trace does not say.
  int compute_capability() const {
    return compute_major_ >= 0 ? compute_major_ * 10 + std::max(0, compute_minor_) : -1;
  }
  // deviceProperties name of that device ("NVIDIA H200", "Tesla T4"), empty when unknown.
  const std::string& device_name() const { return device_name_; }
  // The bandwidth of the trace's pinned host<->device copies of 1 MiB or more
  // (kBandwidthCopyMinBytes) in GB/s, 0 when it has none: what pinning reaches on this machine.
  double measured_pinned_gbps() const { return measured_pinned_gbps_; }

  // Merged intervals of GPU activity (kernels, memcpy, memset) over all devices.
  const std::vector<Interval>& gpu_busy() const { return gpu_busy_; }
  const std::vector<Interval>& kernel_busy() const { return kernel_busy_; }
  int64_t GpuIdle(int64_t lo, int64_t hi) const {
    return hi > lo ? (hi - lo) - ClippedLength(gpu_busy_, lo, hi) : 0;
  }
  // GPU busy time within [lo, hi).
  int64_t GpuBusy(int64_t lo, int64_t hi) const { return (hi - lo) - GpuIdle(lo, hi); }
  // Start of the first GPU activity at or after |t| (clamped to [t, limit]), or |limit|.
  int64_t NextGpuStart(int64_t t, int64_t limit) const;
  // How long a wait over [ts, end) went on after the GPU's last recorded activity ended (0 when
  // the GPU still works at |end|): a sync returns within microseconds of the work it waits for,
  // so a long tail waited for activity the trace does not hold (TTA016's blind waits).
  int64_t WaitAfterLastGpuActivity(int64_t ts, int64_t end) const;
  // Index into steps() of the step containing |ts| (by start), or -1.
  int StepOf(int64_t ts) const;
  // Rows whose ts is in [lo, hi).
  std::pair<uint32_t, uint32_t> RowsIn(int64_t lo, int64_t hi) const;
  // Nearest ancestor (or the row itself) whose name starts with |prefix|, or -1.
  int32_t AncestorWithPrefix(int32_t row, std::string_view prefix) const;
  // The CPU row that launched a GPU activity (its runtime call), or -1.
  int32_t LaunchOf(size_t gpu_row) const { return trace_.events.link[gpu_row]; }
  // Whether |row| is a collective kernel (IsCollectiveKernel, tested once per distinct name).
  bool IsCollective(size_t row) const { return collective_name_[trace_.events.name[row]] != 0; }
  // |row|'s runtime call flags (runtime_calls.h: RuntimeCallFlags of its name, looked up once
  // per distinct name), 0 for anything but a runtime call.
  uint32_t RuntimeFlags(size_t row) const { return runtime_flags_[trace_.events.name[row]]; }
  bool IsSyncCall(size_t row) const { return (RuntimeFlags(row) & kRuntimeSync) != 0; }
  // Whether |row| (a launch) runs under a framework op that synchronizes with the host inside (a
  // sparse coalesce reading back its size, nonzero, a boolean mask): a sync is illegal during a
  // CUDA graph capture and torch.compile breaks the graph there, so such an op's launches are
  // not what a graph would capture.
  bool UnderSyncingOp(int32_t row) const;
  // The outermost cpu_op / user_annotation ancestor of |row| below the step annotation: the
  // "user-level" op (e.g. aten::item, Optimizer.step#SGD.step), or -1.
  int32_t TopOp(int32_t row) const;
  // Window indices that intersect [lo, hi).
  std::vector<int> WindowsOf(int64_t lo, int64_t hi) const;
  bool IsDataLoaderName(std::string_view name) const;
  // One-time first calls of ops (causal_graph.h): cold start, not steady-state work.
  const std::vector<FirstCall>& first_calls() const { return first_calls_; }
  bool InFirstCall(int32_t row) const { return EnclosingFirstCall(trace_, first_calls_, row) >= 0; }
  // Inside the model's construction or placement (OneTimeFirstCalls' Python frames: its
  // constructors, parameter initialisation, Module.to).
  bool InModelSetup(int32_t row) const {
    const int32_t call = EnclosingFirstCall(trace_, first_calls_, row);
    return call >= 0 && trace_.events.kind[call] == EventKind::kPythonFunction;
  }
  // Whether the run launched with CUDA_LAUNCH_BLOCKING=1 (BlockingLaunchTally, causal_graph.h),
  // and whether |row| is one of its launches that waited for its kernel.
  bool BlockingLaunch(uint32_t row) const {
    return launches_block_ && LaunchBlocksOnKernel(trace_.events, row);
  }
  // Whether the trace records framework ops and none of them is autograd's backward or an
  // optimizer's (inference: a serving engine's decode, a forward pass). Its collectives are the
  // forward's (tensor / expert parallel), each waiting for its layer's output: nothing to bucket.
  bool forward_only() const { return forward_only_; }
  // Whether the run launches CUDA / HIP graphs (a cudaGraphLaunch or hipGraphLaunch call).
  bool replays_graphs() const { return replays_graphs_; }
  // A run without steps whose cold start is left out (ColdStartCut::prefix_ns): its one
  // analysed span is its warm part.
  bool warm_part_only() const { return warm_part_only_; }
  // Whether steps()[step] begins a CUDA graph capture that other steps replay (more graph
  // launches than captures), while such steps are under half of them: it runs the captured ops
  // eagerly first (vLLM's warm-up before a lazy capture), one-time work (TTA015's), not the
  // steady state's dispatch or launches.
  bool CaptureStep(int step) const {
    return step >= 0 && static_cast<size_t>(step) < capture_step_.size() && capture_step_[step];
  }

 private:
  const Trace& trace_;
  std::vector<AnalysedStep> steps_;
  std::vector<Interval> gpu_busy_;
  std::vector<Interval> kernel_busy_;
  bool has_gpu_ = false;
  bool amd_ = false;
  int compute_major_ = -1;
  int compute_minor_ = -1;
  std::string device_name_;
  double measured_pinned_gbps_ = 0;
  std::vector<FirstCall> first_calls_;
  bool launches_block_ = false;
  bool forward_only_ = false;
  bool replays_graphs_ = false;
  bool warm_part_only_ = false;
  std::vector<uint8_t> capture_step_;     // per steps() entry
  std::vector<uint8_t> collective_name_;  // per string id
  std::vector<uint32_t> runtime_flags_;   // per string id
  std::vector<uint8_t> hash_name_;        // per string id: the name holds '#' (a region's)
  std::vector<uint8_t> syncing_op_;       // per row: a framework op with a sync call under it
  // A cpu_op that is no region ("## forward ##", which the 2021 profiler wrote as an op).
  bool FrameworkOp(int32_t row) const {
    return trace_.events.kind[row] == EventKind::kCpuOp && !hash_name_[trace_.events.name[row]];
  }
};

}  // namespace ttap

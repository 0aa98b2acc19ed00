// TTA016 trace-incomplete: GPU activity missing from the trace, which cannot be judged. Its
// detector; registered in rule_registry.cpp, documented in
// docs/antipatterns.md#tta016-trace-incomplete.
#include <cstdio>

#include "analysis/rules/causal_detectors.h"

namespace ttap {

// The causal family's helpers it uses (causal_detectors.h).
using causal_detail::DetectBlindWaits;

namespace {

// Ops and Python calls that run only when the process uses a GPU: NCCL/RCCL collectives, cuDNN
// and MIOpen ops, the fused CUDA attention kernels' ops, torch.cuda.synchronize(). (Not
// torch.cuda.is_available() or current_device(): CPU-only runs call those too.)
bool UsesGpu(std::string_view name) {
  return StartsWith(name, "nccl:") || StartsWith(name, "rccl:") || Contains(name, "cudnn_") ||
         Contains(name, "miopen_") || Contains(name, "_efficient_attention") ||
         (Contains(name, "_flash_attention") && !Contains(name, "_for_cpu")) ||
         Contains(name, "_cuda_synchronize") ||
         (StartsWith(name, "torch/cuda/__init__.py(") && EndsWith(name, "): synchronize"));
}

// The trace-incomplete finding, anchored at |first| (its first evidence): over the analysed
// steps, or the evidence itself in a trace without steps.
Finding IncompleteTraceFinding(const RuleContext& ctx, int32_t first) {
  const EventTable& ev = ctx.ev();
  const auto& steps = ctx.steps();
  return MakeRawFinding(
      ctx, "TTA016", steps.empty() ? -1 : 0, steps.empty() ? ev.ts[first] : steps.front().start_ns,
      steps.empty() ? ev.end(first) : steps.back().end_ns, 0, first, "trace-incomplete");
}

// No GPU activity and no launch call recorded, yet .item() reads that wait: a scalar read of a
// CPU tensor (aten::_local_scalar_dense) takes microseconds, one that takes milliseconds
// (trace_incomplete_min_wait_us) with no op under it waits for a device whose work the trace
// does not hold (Apple MPS, whose activity the profiler does not record; an accelerator
// profiled with activities=[CPU]). At least trace_incomplete_min_device_waits such reads, and
// trace_incomplete_device_wait_share of the run together: a few reads of a preempted CPU are not.
void DetectUnrecordedDeviceWaits(const RuleContext& ctx, const RuleOptions& o,
                                 std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  const StringId scalar_read = ctx.trace().strings.Find("aten::_local_scalar_dense");
  if (scalar_read == kEmptyString) return;
  const int64_t min_wait =
      static_cast<int64_t>(o.Get("trace_incomplete_min_wait_us", kBlindSyncTailNs / 1000.0) * 1000);
  std::vector<int32_t> reads;  // candidate rows, in row order
  for (size_t i = 0; i < ev.size(); ++i) {
    // (kOther: the legacy profiler's export names no category.)
    if (ev.name[i] == scalar_read &&
        (ev.kind[i] == EventKind::kCpuOp || ev.kind[i] == EventKind::kOther) &&
        ev.dur[i] >= min_wait) {
      reads.push_back(static_cast<int32_t>(i));
    }
  }
  if (reads.empty()) return;
  // Time of the ops under each read: a read that runs ops of its own is no wait.
  std::vector<int64_t> under(reads.size(), 0);
  for (size_t i = 0; i < ev.size(); ++i) {
    const int32_t p = ev.parent[i];
    if (p < 0 || ev.name[p] != scalar_read) continue;
    auto it = std::lower_bound(reads.begin(), reads.end(), p);
    if (it != reads.end() && *it == p) under[it - reads.begin()] += ev.dur[i];
  }
  int64_t waits = 0, wait_ns = 0, longest = 0;
  int32_t first = -1;
  for (size_t k = 0; k < reads.size(); ++k) {
    const int64_t d = ev.dur[reads[k]];
    if (2 * under[k] >= d) continue;
    ++waits;
    wait_ns += d;
    longest = std::max(longest, d);
    if (first < 0) first = reads[k];
  }
  const int64_t run = StepsNs(ctx);
  if (waits < o.Get("trace_incomplete_min_device_waits", 3) ||
      static_cast<double>(wait_ns) <
          o.Get("trace_incomplete_device_wait_share", 0.05) * static_cast<double>(run)) {
    return;
  }
  Finding f = IncompleteTraceFinding(ctx, first);
  AddNumber(&f, "launches", 0);
  AddNumber(&f, "gpu_activities", 0);
  AddNumber(&f, "device_waits", static_cast<double>(waits));
  AddNumber(&f, "device_wait_ms", wait_ns / 1e6);
  char ms[64];
  std::snprintf(ms, sizeof ms, "%.1f ms in all, the longest %.1f ms", wait_ns / 1e6, longest / 1e6);
  AddText(&f, "detail",
          "the CPU waited for a device: " + std::to_string(waits) +
              " .item() reads (aten::_local_scalar_dense) took a millisecond or more with no op "
              "under them (" +
              ms +
              "), as reads of a device tensor do, but the trace records no launch call and no "
              "device activity, so what the device did cannot be judged (an accelerator whose work "
              "the profiler does not record, such as Apple MPS; on CUDA, record with "
              "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])");
  out->push_back(std::move(f));
}

// No GPU activity and no launch call recorded, yet the CPU's ops say the run used a GPU: the
// profile holds the CPU's side only (activities=[ProfilerActivity.CPU], a PyTorch built without
// Kineto, CUPTI missing under WSL). Nothing on the GPU side can be judged.
void DetectUnrecordedGpu(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  std::vector<int8_t> uses_gpu(ctx.trace().strings.size(), -1);  // per name: -1 not yet known
  int64_t evidence = 0;
  int32_t first = -1;
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    // (kOther: the legacy profiler's export names no category.)
    if (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation &&
        k != EventKind::kPythonFunction && k != EventKind::kOther) {
      continue;
    }
    int8_t& known = uses_gpu[ev.name[i]];
    if (known < 0) known = UsesGpu(ctx.Name(i)) ? 1 : 0;
    if (!known) continue;
    ++evidence;
    if (first < 0) first = static_cast<int32_t>(i);
  }
  if (evidence < o.Get("trace_incomplete_min_gpu_ops", 3)) {
    DetectUnrecordedDeviceWaits(ctx, o, out);
    return;
  }
  Finding f = IncompleteTraceFinding(ctx, first);
  AddNumber(&f, "launches", 0);
  AddNumber(&f, "gpu_activities", 0);
  AddNumber(&f, "ops_that_use_a_gpu", static_cast<double>(evidence));
  AddText(&f, "detail",
          "the run used a GPU (" + std::to_string(evidence) + " ops such as " +
              std::string(ctx.Name(first)) +
              "), but the trace records no launch call and no GPU activity: only the CPU's side "
              "was profiled, so nothing on the GPU side can be judged; record with "
              "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] (CUPTI must be available: "
              "not under WSL without it, nor in a PyTorch built without Kineto)");
  out->push_back(std::move(f));
}

}  // namespace

void DetectTraceIncomplete(const RuleContext& ctx, const CausalGraph&, const TimeBreakdown&,
                           const RuleOptions& o, std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  int64_t launches = 0, unmatched = 0, gpu = 0;
  int32_t first = -1;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (IsGpuKind(ev.kind[i]) && ev.kind[i] != EventKind::kGpuSync) ++gpu;
    // The launch calls that start GPU work (IsWorkLaunchCall), by the row's cached flags.
    constexpr uint32_t kStartsWork = kRuntimeKernelLaunch | kRuntimeCopy | kRuntimeMemset;
    if (!IsLaunchKind(ev.kind[i]) || !(ctx.RuntimeFlags(i) & kStartsWork)) continue;
    ++launches;
    if (ev.link[i] < 0) {
      ++unmatched;
      if (first < 0) first = static_cast<int32_t>(i);
    }
  }
  // Launches without their activity at a buffer's edges are noise; where the trace holds no
  // GPU activity at all, a few launches (a toy's copies and one kernel) say it all.
  const double min_launches = gpu == 0 ? o.Get("trace_incomplete_min_launches_without_gpu", 3)
                                       : o.Get("trace_incomplete_min_launches", 10);
  const double min_share = o.Get("trace_incomplete_share", 0.5);
  if (gpu == 0 && launches == 0) {
    DetectUnrecordedGpu(ctx, o, out);
    return;
  }
  if (launches < min_launches || unmatched < min_share * launches) {
    DetectBlindWaits(ctx, o, out);
    return;
  }
  Finding f = IncompleteTraceFinding(ctx, first);
  AddNumber(&f, "launches", static_cast<double>(launches));
  AddNumber(&f, "launches_without_gpu_activity", static_cast<double>(unmatched));
  AddNumber(&f, "gpu_activities", static_cast<double>(gpu));
  AddText(&f, "detail",
          std::to_string(unmatched) + " of " + std::to_string(launches) +
              " launches have no GPU activity in the trace" +
              (gpu == 0 ? " (none was recorded at all)" : "") +
              ": the GPU side of this run cannot be judged; " +
              (gpu == 0
                   // Nothing at all: the device's activity was not collected (CUPTI missing or
                   // unsupported, as under WSL, or CUDA left out of the activities).
                   ? "record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] on a "
                     "machine where CUPTI records the device (not under WSL)"
                   // Some: the activity buffers overflowed on a long active window.
                   : "record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] and a "
                     "shorter active window (schedule(wait=1, warmup=1, active=3)) so the "
                     "activity buffers do not overflow"));
  out->push_back(std::move(f));
}

}  // namespace ttap

// TTA016 trace-incomplete: launches without GPU activity: the trace cannot be judged. Its detector;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta016-trace-incomplete.
#include "analysis/rules/causal_detectors.h"

namespace ttap {

// The causal family's helpers it uses (causal_detectors.h).
using causal_detail::DetectBlindWaits;

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
  const double min_launches = o.Get("trace_incomplete_min_launches", 10);
  const double min_share = o.Get("trace_incomplete_share", 0.5);
  const auto& steps = ctx.steps();
  if (launches < min_launches || unmatched < min_share * launches) {
    DetectBlindWaits(ctx, o, out);
    return;
  }
  Finding f = MakeRawFinding(
      ctx, "TTA016", steps.empty() ? -1 : 0, steps.empty() ? ev.ts[first] : steps.front().start_ns,
      steps.empty() ? ev.end(first) : steps.back().end_ns, 0, first, "trace-incomplete");
  AddNumber(&f, "launches", static_cast<double>(launches));
  AddNumber(&f, "launches_without_gpu_activity", static_cast<double>(unmatched));
  AddNumber(&f, "gpu_activities", static_cast<double>(gpu));
  AddText(&f, "detail",
          std::to_string(unmatched) + " of " + std::to_string(launches) +
              " launches have no GPU activity in the trace" +
              (gpu == 0 ? " (none was recorded at all)" : "") +
              ": the GPU side of this run cannot be judged; record with "
              "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] and a shorter active "
              "window (schedule(wait=1, warmup=1, active=3)) so the activity buffers do not "
              "overflow");
  out->push_back(std::move(f));
}

}  // namespace ttap

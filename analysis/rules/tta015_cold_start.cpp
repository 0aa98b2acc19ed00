// TTA015 cold-start: lazy kernel loading and first calls inside the profiled steps. Its detector;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta015-cold-start.
#include "analysis/rules/causal_detectors.h"

namespace ttap {

// The causal family's helpers it uses (causal_detectors.h).
using causal_detail::CallsByStep;
using causal_detail::Share;

void DetectColdStart(const RuleContext& ctx, const CausalGraph& g, const TimeBreakdown& time,
                     const RuleOptions& o, std::vector<Finding>* out) {
  const int64_t total = time.overall.total();
  // Cold calls on the critical path, by step.
  if (total <= 0 ||
      Share(time.overall, Cause::kColdStart) < o.Get("cold_start_share", 0.01) * total) {
    return;
  }
  for (auto& [step, f] : CallsByStep(ctx, g, Cause::kColdStart, "TTA015", "cold-start")) {
    AddText(&f, "detail",
            "one-time: " + FormatNumber("%.0f", f.evidence["calls"].number) +
                " call(s) load kernels lazily, create the CUDA context or a library's "
                "workspace, or run an op for the first time (" +
                FormatNumber("%.1f ms", f.evidence["call_us"].number / 1000.0) + ", longest " +
                f.top_events.front().name +
                "); they happen once per process, not every step: profile after a warm-up, "
                "e.g. schedule(wait=1, warmup=1, active=3)");
    out->push_back(std::move(f));
  }
}

}  // namespace ttap

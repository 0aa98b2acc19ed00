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
  // Merging keeps one step's text: the detail counts the calls of every step.
  std::map<int, Finding> by_step = CallsByStep(ctx, g, Cause::kColdStart, "TTA015", "cold-start");
  double calls = 0, call_us = 0, longest_us = -1;
  int captures = 0;           // one-time CUDA/HIP graph captures (their begin calls)
  int loader_starts = 0;      // a DataLoader iterator's first batch (its workers start)
  double model_setup_us = 0;  // Python frames that build the model or move it to the device
  int model_setups = 0;
  double compile_us = 0;  // torch.compile's compilation phases among the calls
  std::string longest;
  // A run with GPU activity, a GPU's properties or runtime calls (a trace whose kernels were not
  // recorded) has a context and kernels to load; a CPU-only one does not.
  bool uses_gpu = ctx.has_gpu() || !ctx.device_name().empty();
  for (size_t i = 0; i < ctx.ev().size() && !uses_gpu; ++i)
    uses_gpu = IsLaunchKind(ctx.ev().kind[i]);
  for (auto& [step, f] : by_step) {
    for (int32_t r : f.rows) {
      captures += (ctx.RuntimeFlags(r) & kRuntimeCaptureBegin) != 0;
      loader_starts += ctx.IsDataLoaderName(ctx.Name(r));
      if (IsCompilePhaseName(ctx.Name(r))) compile_us += ctx.ev().dur[r] / 1000.0;
      if (ctx.ev().kind[r] == EventKind::kPythonFunction) {
        model_setup_us += ctx.ev().dur[r] / 1000.0;
        ++model_setups;
      }
    }
    calls += f.evidence["calls"].number;
    call_us += f.evidence["call_us"].number;
    if (f.top_events.front().total_us > longest_us) {
      longest_us = f.top_events.front().total_us;
      longest = f.top_events.front().name;
    }
  }
  // A trace whose first step is ProfilerStep#N, N > 0, was recorded after a schedule's wait and
  // warm-up steps: advising one says nothing new, the warm-up was too short for these.
  int64_t first_step = -1;
  for (const Step& s : ctx.trace().steps) {
    if (first_step < 0 || s.number < first_step) first_step = s.number;
  }
  const std::string warm_up =
      first_step > 0
          ? "the profiler's schedule skipped " + std::to_string(first_step) +
                " step(s) already (the trace starts at ProfilerStep#" + std::to_string(first_step) +
                "): warm up for longer (a larger wait or warmup), or run each input "
                "shape once before profiling"
          : "profile after a warm-up, e.g. schedule(wait=1, warmup=1, active=3)";
  for (auto& [step, f] : by_step) {
    const std::string what =
        captures > 0
            ? std::to_string(captures) +
                  " CUDA graph capture(s), replayed in other steps, with the ops they capture "
                  "and any lazy loads or first calls"
        : uses_gpu ? FormatNumber("%.0f", calls) +
                         " call(s) load kernels lazily, create the CUDA context or a library's "
                         "workspace, or run an op for the first time"
                   // A CPU-only run has no context or kernels to load: its first calls set up.
                   : FormatNumber("%.0f", calls) +
                         " op(s) run for the first time (a library's set-up, first allocations)";
    const std::string loader =
        loader_starts > 0 ? "; a DataLoader's first batch starts its worker processes "
                            "(persistent_workers=True keeps them from one epoch to the next)"
                          : "";
    const std::string compile =
        compile_us > 0
            ? "; torch.compile compiles for " + FormatNumber("%.1f ms", compile_us / 1000.0) +
                  " (once per function and input shapes; a later call with new shapes "
                  "or guards compiles again)"
            : "";
    // Model construction alone (OneTimeFirstCalls' model set-up frames): said as such.
    const bool only_model = model_setups > 0 && model_setups == static_cast<int>(calls);
    const std::string model = model_setup_us > 0 && !only_model
                                  ? "; building the model or moving it to the device takes " +
                                        FormatNumber("%.1f ms", model_setup_us / 1000.0) +
                                        " (its constructors, parameter initialisation, .to())"
                                  : "";
    AddText(
        &f, "detail",
        "one-time: " +
            (only_model ? "the model is built and moved to the device (its constructors, "
                          "parameter initialisation, .to())"
                        : what) +
            " (" + FormatNumber("%.1f ms", call_us / 1000.0) + ", longest " + longest + ")" +
            loader + compile + model + "; they happen once per process, not every step: " +
            (only_model
                 // A warm-up does not move a model's construction out of the profile.
                 ? std::string("build the model and move it to the device before the "
                               "profiler starts")
                 : std::string(captures > 0 ? "capture the graphs before serving or profiling, or "
                                            : "") +
                       (model_setup_us > 0 ? "build the model before the profiler starts, and "
                                           : "") +
                       warm_up));
    out->push_back(std::move(f));
  }
}

}  // namespace ttap

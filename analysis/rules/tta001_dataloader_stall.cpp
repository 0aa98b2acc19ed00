// TTA001 dataloader-stall: the input pipeline keeps the GPU idle. Its detector and message;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta001-dataloader-stall.
#include "analysis/rules/host_detectors.h"

namespace ttap {

// The host family's helpers it uses (host_detectors.h).
using host_detail::IsCpuSide;

void DetectDataloaderStall(const RuleContext& ctx, const RuleOptions& o,
                           std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("dataloader_share", 0.05);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    // Per data-loading call site in this step.
    std::map<std::string, Finding> by_cause;
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsCpuSide(ev.kind[i]) || !ctx.IsDataLoaderName(ctx.Name(i))) continue;
      // Count the outermost data-loading event only.
      int32_t p = ev.parent[i];
      bool nested = false;
      for (int g = 0; p >= 0 && g < 256; ++g, p = ev.parent[p]) {
        if (ctx.IsDataLoaderName(ctx.Name(p))) nested = true;
      }
      // An iterator's first batch, far slower than the next ones, started its workers: one-time
      // (TTA015's), not the input pipeline's steady pace.
      if (nested || ctx.InFirstCall(static_cast<int32_t>(i))) continue;
      const int64_t a = ev.ts[i], b = std::min(ev.end(i), step.end_ns);
      const double load_us = (b - a) / 1000.0;
      const double idle_us = ctx.has_gpu() ? ctx.GpuIdle(a, b) / 1000.0 : load_us;
      std::string key = CauseKey(ctx, static_cast<int32_t>(i));
      Finding& f = CauseFinding(&by_cause, ctx, "TTA001", static_cast<int>(s), a, b,
                                static_cast<int32_t>(i), key);
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += idle_us;
      AccumulateNumber(&f, "dataloader_us", load_us);
      AccumulateNumber(&f, "gpu_idle_during_load_us", idle_us);
      AccumulateNumber(&f, "calls", 1);
      // A loader with worker processes already: they do not keep up with the loop.
      if (Contains(ctx.Name(i), "MultiProcessing")) AddText(&f, "workers", "yes");
      // One that loads in the main process (num_workers=0), by its iterator's name.
      if (Contains(ctx.Name(i), "SingleProcess")) AddText(&f, "main_process", "yes");
      AddEvent(&f, std::string(ctx.Name(i)), 1, load_us);
    }
    for (auto& [key, f] : by_cause) {
      if (step.duration() <= 0 || f.per_step[0].second * 1000.0 < min_share * step.duration())
        continue;
      AddNumber(&f, "step_us", step.duration() / 1000.0);
      if (!ctx.has_gpu()) AddNumber(&f, "no_gpu_activity", 1);  // a CPU-only trace
      out->push_back(std::move(f));
    }
  }
}

std::string DataLoaderStallMessage(const Finding& f, const std::string& detected,
                                   const std::string& saving) {
  const double step_us = Num(f, "step_us");
  const bool whole_run = OfWholeRun(f);
  // The share is of the steps it stalls in (a loader that keeps up in some steps, as a few
  // workers do, stalls in the others): said so where that is not every step.
  const std::string occurs = TextOf(f, "occurs");
  const bool every_step = occurs.empty() || occurs == "every step";
  std::string runs =
      step_us > 0
          ? "the input pipeline runs " + FormatPercent(Num(f, "dataloader_us") / step_us) +
                (whole_run                   ? " of " + TheRun(f)
                 : every_step                ? " of each step"
                 : StartsWith(occurs, "in ") ? " of the " + occurs.substr(3) + " it stalls in"
                                             : " of the steps it stalls in")
          : "the input pipeline keeps the GPU idle";
  // A trace without GPU activity (a CPU-only run, or one profiled without the CUDA activity): the
  // loop itself waits.
  const bool cpu_only = Num(f, "no_gpu_activity") > 0;
  // The fix in the message too, not only in the hover and the quick fix: the scan's reader has
  // the message alone.
  const std::string workers =
      !TextOf(f, "workers").empty()
          ? "; its worker processes do not keep up: more workers (num_workers), or cheaper "
            "per-sample work (transforms vectorised over the batch, data decoded once)"
      : !TextOf(f, "main_process").empty()
          ? std::string("; it loads in the main process (num_workers=0): ") +
                (cpu_only ? "DataLoader(num_workers=N)"
                          : "DataLoader(num_workers=N, pin_memory=True)") +
                " loads the next batches in worker processes while the " +
                (cpu_only ? "loop computes" : "GPU runs")
          : "";
  return runs + (cpu_only ? " (the loop waits " : " (GPU idle ") + detected + ")" + workers +
         saving;
}

}  // namespace ttap

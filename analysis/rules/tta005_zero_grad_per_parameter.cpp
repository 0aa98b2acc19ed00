// TTA005 zero-grad-per-parameter: zero_grad launches one kernel per parameter. Its detector;
// registered in rule_registry.cpp, documented in
// docs/antipatterns.md#tta005-zero-grad-per-parameter.
#include "analysis/rules/optimizer_detectors.h"

namespace ttap {

// The optimizer family's helpers it uses (optimizer_detectors.h).
using optimizer_detail::AddKernelEvents;
using optimizer_detail::HasAncestorWithPrefix;
using optimizer_detail::IsCpuRegionKind;
using optimizer_detail::RegionStats;
using optimizer_detail::ScanRegion;

// TTA005. optimizer.zero_grad() with set_to_none=False (the default before PyTorch 2.0), or a
// manual `for p in params: p.grad.zero_()` loop, launches one fill kernel per parameter. With
// set_to_none=True it launches nothing: the gradients are dropped and the backward pass writes
// fresh ones. Found two ways:
//   - an "Optimizer.zero_grad#..." region that launches >= zero_grad_min_kernels (8) kernels or
//     memsets in a step;
//   - >= zero_grad_min_kernels aten::zero_ ops called directly from Python (no cpu_op above
//     them, outside any optimizer region), each launching GPU work, in one step.
// Time lost = the fill kernels' GPU time (the GPU would not run them) + the GPU idle time while
// the CPU was in the region (its launches on the critical path). When the CPU is ahead that is
// just the kernels; when the step is CPU-bound it approaches the region's CPU duration.
void DetectZeroGradPerParam(const RuleContext& ctx, const RuleOptions& o,
                            std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_kernels = o.Get("zero_grad_min_kernels", 8);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<std::string, Finding> by_cause;
    // Manual loops: per call site, the zero_ ops and what they launched.
    struct Loop {
      int32_t first = -1;
      std::vector<int32_t> rows;
      int64_t ops = 0, kernels = 0, kernel_ns = 0, idle_ns = 0, start = 0, end = 0;
      RegionStats names;
    };
    std::map<std::string, Loop> loops;
    for (uint32_t i = lo; i < hi; ++i) {
      const std::string_view name = ctx.Name(i);
      const int32_t row = static_cast<int32_t>(i);
      if (IsCpuRegionKind(ev.kind[i]) && StartsWith(name, "Optimizer.zero_grad#")) {
        if (HasAncestorWithPrefix(ctx, row, "Optimizer.zero_grad#")) continue;
        RegionStats st = ScanRegion(ctx, row, /*with_memsets=*/true);
        if (st.kernels < min_kernels) continue;
        const int64_t idle = ctx.GpuIdle(ev.ts[i], ev.end(i));
        std::string key = CauseKey(ctx, row);
        Finding& f = CauseFinding(&by_cause, ctx, "TTA005", static_cast<int>(s), ev.ts[i],
                                  st.gpu_end, row, key);
        f.rows.push_back(row);
        f.per_step[0].second += Us(st.kernel_ns + idle);
        AccumulateNumber(&f, "kernels", static_cast<double>(st.kernels));
        AccumulateNumber(&f, "kernel_us", Us(st.kernel_ns));
        AccumulateNumber(&f, "region_us", Us(ev.dur[i]));
        AddText(&f, "region", std::string(name));
        AddKernelEvents(&f, st);
        continue;
      }
      if (ev.kind[i] != EventKind::kCpuOp || name != "aten::zero_") continue;
      bool nested = false;
      for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 4096; p = ev.parent[p], ++g) {
        if (IsOperator(ctx, p) || StartsWith(ctx.Name(p), "Optimizer.")) {
          nested = true;
          break;
        }
      }
      if (nested) continue;
      RegionStats st = ScanRegion(ctx, row, /*with_memsets=*/true);
      if (st.kernels == 0) continue;
      Loop& l = loops[CauseKey(ctx, row)];
      if (l.first < 0) {
        l.first = row;
        l.start = ev.ts[i];
      }
      l.ops++;
      l.rows.push_back(row);
      l.kernels += st.kernels;
      l.kernel_ns += st.kernel_ns;
      l.idle_ns += ctx.GpuIdle(ev.ts[i], ev.end(i));
      l.end = std::max(l.end, st.gpu_end);
      for (auto& [kname, c] : st.kernel_names) {
        auto& kn = l.names.kernel_names[kname];
        kn.first += c.first;
        kn.second += c.second;
      }
    }
    for (auto& [key, l] : loops) {
      if (l.ops < min_kernels) continue;
      Finding f = MakeRawFinding(ctx, "TTA005", static_cast<int>(s), l.start, l.end,
                                 Us(l.kernel_ns + l.idle_ns), l.first, "loop|" + key);
      f.rows = l.rows;
      AddNumber(&f, "kernels", static_cast<double>(l.kernels));
      AddNumber(&f, "kernel_us", Us(l.kernel_ns));
      AddNumber(&f, "zero_ops", static_cast<double>(l.ops));
      AddText(&f, "region", "aten::zero_ loop");
      AddKernelEvents(&f, l.names);
      AddText(&f, "detail",
              std::to_string(l.ops) + " aten::zero_ calls from Python" +
                  std::string(InTheStep(ctx)) + ", " + std::to_string(l.kernels) + " kernels (" +
                  Dur(Us(l.kernel_ns)) + " on the GPU); set the gradients to None instead");
      out->push_back(std::move(f));
    }
    for (auto& [key, f] : by_cause) {
      AddText(&f, "detail",
              f.evidence["region"].text + " launches " +
                  FormatNumber("%.0f", f.evidence["kernels"].number) + " kernels" +
                  std::string(InTheStep(ctx)) + " (" + Dur(f.evidence["kernel_us"].number) +
                  " on the GPU, " + Dur(f.evidence["region_us"].number) +
                  " on the CPU); zero_grad(set_to_none=True) launches none");
      out->push_back(std::move(f));
    }
  }
}

}  // namespace ttap

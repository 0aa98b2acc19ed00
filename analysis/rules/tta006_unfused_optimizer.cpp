// TTA006 unfused-optimizer: the optimizer step launches per-parameter kernels. Its detector;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta006-unfused-optimizer.
#include "analysis/base/median.h"
#include "analysis/rules/optimizer_detectors.h"

namespace ttap {

// The optimizer family's helpers it uses (optimizer_detectors.h).
using optimizer_detail::AddKernelEvents;
using optimizer_detail::HasAncestorWithPrefix;
using optimizer_detail::IsCpuRegionKind;
using optimizer_detail::RegionStats;
using optimizer_detail::ScanRegion;

// TTA006. A single-tensor ("for-loop") optimizer step: every parameter gets its own few
// element-wise kernels (SGD: add_/mul_; Adam: lerp_/mul_/addcmul_/sqrt/addcdiv_; Adagrad:
// addcmul_/sqrt/addcdiv_), each paying a dispatcher pass and a launch, where foreach=True (or
// fused=True) does the same work in a handful of multi_tensor_apply kernels. Found:
//   - under an "Optimizer.step#..." region (the outermost one): no _foreach_/multi_tensor/fused
//     op or kernel, and either >= optimizer_min_kernels (32) kernels launched in the step or
//     >= optimizer_min_ops (32) per-parameter update ops that launched kernels;
//   - by structure, for steps that torch.optim did not annotate: a cpu_op/user_annotation region
//     whose name contains "optimizer" or "step" (not ProfilerStep, not around or inside an
//     Optimizer.step# region) that launches >= optimizer_min_kernels kernels, no fused ones, with
//     a median kernel time < optimizer_tiny_kernel_us (20 us), from ops that are mostly
//     per-parameter updates and no model compute (GEMM, convolution, autograd).
// Time lost (launch-bound estimate): a foreach/fused step does the same memory traffic in a few
// kernels, so its duration approaches the kernels' GPU time; what it saves is the rest of the
// region's CPU duration: max(0, region duration - kernels' GPU time). Only the part during which
// the GPU actually idled is charged (capped by the GPU idle time from the region's start to the
// end of its last kernel): per-parameter launches hidden behind queued GPU work cost nothing.
void DetectUnfusedOptimizer(const RuleContext& ctx, const RuleOptions& o,
                            std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_kernels = o.Get("optimizer_min_kernels", 32);
  const double min_ops = o.Get("optimizer_min_ops", 32);
  const int64_t tiny_ns = static_cast<int64_t>(o.Get("optimizer_tiny_kernel_us", 20) * 1000);
  // Each distinct name classified once (a 1 GB trace has millions of CPU rows, a few thousand
  // names): 1 an Optimizer.step# annotation, 2 another step or optimizer annotation, 3 a name
  // that says optimizer or step (a structural candidate), 4 none.
  std::vector<uint8_t> name_class(ctx.trace().strings.size(), 0);
  auto class_of = [&](uint32_t i) {
    uint8_t& c = name_class[ev.name[i]];
    if (c == 0) {
      const std::string_view name = ctx.Name(i);
      if (StartsWith(name, "Optimizer.step#")) {
        c = 1;
      } else if (StartsWith(name, "ProfilerStep#") || StartsWith(name, "Optimizer.")) {
        c = 2;
      } else {
        const std::string lower = Lower(name);
        c = Contains(lower, "optimizer") || Contains(lower, "step") ? 3 : 4;
      }
    }
    return c;
  };
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    // Annotated optimizer steps in this step, to keep the structural search away from them.
    std::vector<int32_t> named;
    std::vector<int32_t> fallback;
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsCpuRegionKind(ev.kind[i])) continue;
      const int32_t row = static_cast<int32_t>(i);
      const uint8_t c = class_of(i);
      if (c == 1) {
        if (!HasAncestorWithPrefix(ctx, row, "Optimizer.step#")) named.push_back(row);
        continue;
      }
      if (c != 3) continue;
      // The annotation that marks the (inferred) step itself, e.g. a decode loop's
      // "decode_step", is the whole step, not its optimizer.
      const bool is_step = ev.ts[i] == step.start_ns && ev.dur[i] * 10 >= step.duration() * 9;
      if (!is_step) fallback.push_back(row);
    }
    std::map<std::string, Finding> by_cause;
    auto report = [&](int32_t row, const RegionStats& st, bool structural) {
      const int64_t region_ns = ev.dur[row];
      const int64_t overhead = std::max<int64_t>(0, region_ns - st.kernel_ns);
      const int64_t idle = ctx.GpuIdle(ev.ts[row], std::max(ev.end(row), st.gpu_end));
      const int64_t lost = std::min(overhead, idle);
      std::string key = CauseKey(ctx, row);
      Finding& f = CauseFinding(&by_cause, ctx, "TTA006", static_cast<int>(s), ev.ts[row],
                                st.gpu_end, row, key);
      f.rows.push_back(row);
      f.per_step[0].second += Us(lost);
      auto num = [&](const char* k) { return f.evidence.count(k) ? f.evidence[k].number : 0.0; };
      AddNumber(&f, "kernels", num("kernels") + static_cast<double>(st.kernels));
      AddNumber(&f, "update_ops", num("update_ops") + static_cast<double>(st.update_ops));
      AddNumber(&f, "kernel_us", num("kernel_us") + Us(st.kernel_ns));
      AddNumber(&f, "region_us", num("region_us") + Us(region_ns));
      AddText(&f, "region", std::string(ctx.Name(row)));
      AddText(&f, "found_by", structural ? "structure" : "Optimizer.step# region");
      AddKernelEvents(&f, st);
    };
    for (int32_t row : named) {
      RegionStats st = ScanRegion(ctx, row, /*with_memsets=*/false);
      if (st.fused || st.kernels == 0) continue;
      if (st.kernels < min_kernels && st.update_ops < min_ops) continue;
      report(row, st, false);
    }
    // Structural candidates: skip those around or inside an annotated step, report the passing
    // ones that have no passing ancestor.
    std::vector<int32_t> passing;
    for (int32_t row : fallback) {
      bool overlaps_named = false;
      for (int32_t n : named) {
        if (ev.track[n] == ev.track[row] && ev.ts[n] < ev.end(row) && ev.ts[row] < ev.end(n)) {
          overlaps_named = true;
        }
      }
      if (overlaps_named) continue;
      RegionStats st = ScanRegion(ctx, row, /*with_memsets=*/false);
      if (st.fused || st.kernels < min_kernels || st.heavy_ops > 0) continue;
      if (st.update_ops * 2 < static_cast<int64_t>(st.launching_ops.size())) continue;
      if (Median(st.kernel_durs) >= tiny_ns) continue;
      bool inside_passing = false;
      for (int32_t p : passing) {
        if (ev.track[p] == ev.track[row] && ev.ts[p] <= ev.ts[row] && ev.end(row) <= ev.end(p)) {
          inside_passing = true;
        }
      }
      if (inside_passing) continue;
      passing.push_back(row);
      report(row, st, true);
    }
    for (auto& [key, f] : by_cause) {
      AddText(&f, "detail",
              f.evidence["region"].text + " launches " +
                  FormatNumber("%.0f", f.evidence["kernels"].number) + " kernels" +
                  std::string(InTheStep(ctx)) + " from " +
                  FormatNumber("%.0f", f.evidence["update_ops"].number) +
                  " per-parameter update ops, none of them foreach/fused (" +
                  Dur(f.evidence["region_us"].number) + " on the CPU for " +
                  Dur(f.evidence["kernel_us"].number) + " of GPU work)");
      out->push_back(std::move(f));
    }
  }
}

}  // namespace ttap

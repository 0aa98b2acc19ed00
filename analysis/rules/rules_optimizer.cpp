// Detectors for the optimizer's per-parameter work: TTA005 zero-grad-per-parameter and TTA006
// unfused-optimizer. Both look inside the record_function regions that torch.optim writes
// ("Optimizer.zero_grad#SGD.zero_grad", "Optimizer.step#Adam.step"), count the GPU kernels
// launched from them (through the launch rows' links) and compare the region's CPU time with
// the GPU work it produced.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/base/string_util.h"
#include "analysis/rules/rule_util.h"

namespace ttap {

namespace {

double Us(int64_t ns) { return ns / 1000.0; }

// A duration given in us, as "12.3 us" or "4.56 ms".
std::string Dur(double us) {
  return us >= 1000 ? FormatNumber("%.2f ms", us / 1000.0) : FormatNumber("%.1f us", us);
}

// A cpu_op that is an operator, not a record_function label: 2021 traces write ProfilerStep#N,
// Optimizer.step#... and the like as cpu_op ("Operator") too.
bool IsOperator(const RuleContext& ctx, int32_t row) {
  return ctx.ev().kind[row] == EventKind::kCpuOp && !Contains(ctx.Name(row), "#");
}

// Names that show a multi-tensor (foreach) or fused implementation.
bool IsFusedName(std::string_view name) {
  if (Contains(name, "_foreach_") || Contains(name, "multi_tensor") || Contains(name, "_fused_")) {
    return true;
  }
  return Contains(Lower(name), "fused");
}

// Per-parameter element-wise update ops of the single-tensor optimizers (SGD, Adam, AdamW,
// Adagrad, RMSprop, ...).
bool IsUpdateOp(std::string_view n) {
  static const char* kOps[] = {
      "aten::add_",     "aten::add",     "aten::mul_", "aten::mul",      "aten::sub_",
      "aten::sub",      "aten::div_",    "aten::div",  "aten::addcdiv_", "aten::addcdiv",
      "aten::addcmul_", "aten::addcmul", "aten::sqrt", "aten::sqrt_",    "aten::rsqrt",
      "aten::lerp_",    "aten::lerp",    "aten::pow",  "aten::neg",      "aten::maximum",
      "aten::clamp_",   "aten::copy_",   "aten::sign", "aten::abs",      "aten::exp_",
  };
  for (const char* op : kOps) {
    if (n == op) return true;
  }
  return false;
}

// Ops that mean a region holds model compute, not an optimizer step.
bool IsHeavyOp(std::string_view n) {
  return Contains(n, "mm") || Contains(n, "conv") || Contains(n, "linear") ||
         Contains(n, "matmul") || Contains(n, "Backward") || Contains(n, "autograd::") ||
         Contains(n, "embedding") || Contains(n, "attention") || Contains(n, "softmax");
}

// What a CPU region launched: its descendants on the same thread, the kernels (and memsets)
// their launch calls started, and the outermost cpu_op below the region that issued each launch.
struct RegionStats {
  int64_t kernels = 0;    // GPU activities launched (kernels, plus memsets when asked)
  int64_t kernel_ns = 0;  // their total GPU time
  int64_t gpu_end = 0;    // end of the last one
  bool fused = false;     // a foreach / multi_tensor_apply / fused op or kernel
  std::map<int32_t, int64_t> launching_ops;  // top op below the region -> launches
  std::map<std::string, std::pair<int64_t, int64_t>> kernel_names;  // name -> (count, ns)
  std::vector<int64_t> kernel_durs;
  int64_t update_ops = 0;  // launching ops that are per-parameter updates
  int64_t heavy_ops = 0;   // launching ops that are model compute
};

RegionStats ScanRegion(const RuleContext& ctx, int32_t region, bool with_memsets) {
  const EventTable& ev = ctx.ev();
  RegionStats st;
  st.gpu_end = ev.end(region);
  if (IsFusedName(ctx.Name(region))) st.fused = true;
  for (size_t j = region + 1; j < ev.size() && ev.ts[j] < ev.end(region); ++j) {
    if (ev.track[j] != ev.track[region] || ev.end(j) > ev.end(region)) continue;
    const std::string_view name = ctx.Name(j);
    if ((ev.kind[j] == EventKind::kCpuOp || ev.kind[j] == EventKind::kUserAnnotation) &&
        IsFusedName(name)) {
      st.fused = true;
    }
    if (!IsLaunchKind(ev.kind[j]) || ev.link[j] < 0) continue;
    const int32_t gpu = ev.link[j];
    const EventKind gk = ev.kind[gpu];
    if (!(gk == EventKind::kKernel || (with_memsets && gk == EventKind::kMemset))) continue;
    ++st.kernels;
    st.kernel_ns += ev.dur[gpu];
    st.gpu_end = std::max(st.gpu_end, ev.end(gpu));
    st.kernel_durs.push_back(ev.dur[gpu]);
    const std::string_view kname = ctx.Name(gpu);
    if (IsFusedName(kname)) st.fused = true;
    auto& kn = st.kernel_names[std::string(kname.substr(0, 160))];
    kn.first++;
    kn.second += ev.dur[gpu];
    int32_t top = -1;
    for (int32_t p = ev.parent[j], g = 0; p >= 0 && p != region && g < 4096;
         p = ev.parent[p], ++g) {
      if (IsOperator(ctx, p)) top = p;
    }
    if (top >= 0) st.launching_ops[top]++;
  }
  for (auto& [op, n] : st.launching_ops) {
    const std::string_view name = ctx.Name(op);
    if (IsUpdateOp(name)) ++st.update_ops;
    if (IsHeavyOp(name)) ++st.heavy_ops;
  }
  return st;
}

void AddKernelEvents(Finding* f, const RegionStats& st) {
  for (auto& [name, c] : st.kernel_names) AddEvent(f, name, c.first, Us(c.second));
}

bool IsCpuRegionKind(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation;
}

// Whether any ancestor of |row| starts with |prefix| (the row itself excluded).
bool HasAncestorWithPrefix(const RuleContext& ctx, int32_t row, std::string_view prefix) {
  int32_t p = ctx.ev().parent[row];
  return p >= 0 && ctx.AncestorWithPrefix(p, prefix) >= 0;
}

}  // namespace

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
        AddNumber(&f, "kernels",
                  (f.evidence.count("kernels") ? f.evidence["kernels"].number : 0) +
                      static_cast<double>(st.kernels));
        AddNumber(&f, "kernel_us",
                  (f.evidence.count("kernel_us") ? f.evidence["kernel_us"].number : 0) +
                      Us(st.kernel_ns));
        AddNumber(
            &f, "region_us",
            (f.evidence.count("region_us") ? f.evidence["region_us"].number : 0) + Us(ev.dur[i]));
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
              std::to_string(l.ops) + " aten::zero_ calls from Python in the step, " +
                  std::to_string(l.kernels) + " kernels (" + Dur(Us(l.kernel_ns)) +
                  " on the GPU); set the gradients to None instead");
      out->push_back(std::move(f));
    }
    for (auto& [key, f] : by_cause) {
      AddText(&f, "detail",
              f.evidence["region"].text + " launches " +
                  FormatNumber("%.0f", f.evidence["kernels"].number) + " kernels in the step (" +
                  Dur(f.evidence["kernel_us"].number) + " on the GPU, " +
                  Dur(f.evidence["region_us"].number) +
                  " on the CPU); zero_grad(set_to_none=True) launches none");
      out->push_back(std::move(f));
    }
  }
}

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
      std::vector<int64_t> d = st.kernel_durs;
      std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
      if (d[d.size() / 2] >= tiny_ns) continue;
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
                  FormatNumber("%.0f", f.evidence["kernels"].number) +
                  " kernels in the step from " +
                  FormatNumber("%.0f", f.evidence["update_ops"].number) +
                  " per-parameter update ops, none of them foreach/fused (" +
                  Dur(f.evidence["region_us"].number) + " on the CPU for " +
                  Dur(f.evidence["kernel_us"].number) + " of GPU work)");
      out->push_back(std::move(f));
    }
  }
}

}  // namespace ttap

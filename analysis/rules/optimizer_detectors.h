// The helpers shared by the optimizer family of detectors (detectors for the optimizer's
// per-parameter work), one file per code (tta0NN_<name>.cpp), in namespace optimizer_detail.
// Internal to analysis/rules/.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/base/string_util.h"
#include "analysis/rules/rule_util.h"

namespace ttap::optimizer_detail {

// Names that show a multi-tensor (foreach) or fused implementation.
inline bool IsFusedName(std::string_view name) {
  if (Contains(name, "_foreach_") || Contains(name, "multi_tensor") || Contains(name, "_fused_")) {
    return true;
  }
  return Contains(Lower(name), "fused");
}

// Per-parameter element-wise update ops of the single-tensor optimizers (SGD, Adam, AdamW,
// Adagrad, RMSprop, ...).
inline bool IsUpdateOp(std::string_view n) {
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
inline bool IsHeavyOp(std::string_view n) {
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

inline RegionStats ScanRegion(const RuleContext& ctx, int32_t region, bool with_memsets) {
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

inline void AddKernelEvents(Finding* f, const RegionStats& st) {
  for (auto& [name, c] : st.kernel_names) AddEvent(f, name, c.first, Us(c.second));
}

inline bool IsCpuRegionKind(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation;
}

// Whether any ancestor of |row| starts with |prefix| (the row itself excluded).
inline bool HasAncestorWithPrefix(const RuleContext& ctx, int32_t row, std::string_view prefix) {
  int32_t p = ctx.ev().parent[row];
  return p >= 0 && ctx.AncestorWithPrefix(p, prefix) >= 0;
}

}  // namespace ttap::optimizer_detail

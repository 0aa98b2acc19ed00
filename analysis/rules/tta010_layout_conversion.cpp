// TTA010 layout-conversion: NCHW<->NHWC conversions around convolutions. Its detector; registered
// in rule_registry.cpp, documented in docs/antipatterns.md#tta010-layout-conversion.
#include "analysis/rules/gpu_detectors.h"

namespace ttap {

// The gpu family's helpers it uses (gpu_detectors.h).
using gpu_detail::AncestryOf;
using gpu_detail::IsLayoutConversionName;
using gpu_detail::IsTransposeName;
using gpu_detail::LaunchAncestry;
using gpu_detail::LaunchingOp;
using gpu_detail::ShortKernelName;
using gpu_detail::StepFindings;

// TTA010: NCHW<->NHWC conversion kernels (cuDNN's nchwToNhwc/nhwcToNchw, convertTensor, and
// transposes launched by a convolution). Lost: their GPU time.
void DetectLayoutConversion(const RuleContext& ctx, const RuleOptions& o,
                            std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("layout_conversion_share", 0.01);
  // 1: always a conversion; 2: a conversion when a convolution launched it; 3: a copy kernel,
  // a conversion when a layout-converting contiguous() / clone() launched it.
  std::unordered_map<StringId, char> kind;
  std::vector<int8_t> is_conv(ctx.trace().strings.size(), -1);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    StepFindings sf;
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kKernel) continue;
      auto [it, fresh] = kind.emplace(ev.name[i], 0);
      if (fresh) {
        std::string n = Lower(ctx.Name(i));
        it->second = IsLayoutConversionName(n)             ? 1
                     : IsTransposeName(n)                  ? 2
                     : n.find("copy") != std::string::npos ? 3
                                                           : 0;
      }
      if (it->second == 0) continue;
      const LaunchAncestry up = AncestryOf(ctx, i, &is_conv);
      const int32_t copy = it->second >= 2 ? up.layout_copy : -1;
      if (it->second >= 2 && copy < 0 && (it->second == 3 || up.conv < 0)) continue;
      // Named by the convolution that converts, else by the contiguous() / clone() that does
      // (a hook's), else by the launching op.
      const int32_t op = up.conv >= 0 ? up.conv : copy >= 0 ? copy : LaunchingOp(ctx, i);
      const double us = ev.dur[i] / 1000.0;
      Finding& f = sf.For(ctx, "TTA010", static_cast<int>(s), ev.ts[i], ev.end(i), op);
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += us;
      sf.lost_us += us;
      AccumulateNumber(&f, "conversions", 1);
      AccumulateNumber(&f, "conversion_us", us);
      AddEvent(&f, ShortKernelName(ctx.Name(i)), 1, us);
    }
    for (auto& [key, f] : sf.by_cause) {
      std::string op = f.anchor_row >= 0 ? std::string(ctx.Name(f.anchor_row)) : "";
      if (!op.empty()) AddText(&f, "op", op);
      AddText(&f, "detail",
              std::to_string(static_cast<int>(f.evidence["conversions"].number)) +
                  " layout conversion kernel(s) (" + f.top_events.front().name + ")" +
                  (op.empty() ? "" : " around " + op) + InTheStep(ctx) +
                  std::string(": the tensors are NCHW while the kernels want NHWC"));
    }
    sf.Flush(step, min_share, out);
  }
}

}  // namespace ttap

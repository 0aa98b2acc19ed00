// TTA020 conv-algorithm-search: cuDNN's (MIOpen's) benchmark mode searching for convolution
// algorithms in every step, because the input shapes keep changing. Its detector; registered in
// rule_registry.cpp, documented in docs/antipatterns.md#tta020-conv-algorithm-search.
#include <algorithm>
#include <cstdlib>

#include "analysis/base/median.h"
#include "analysis/rules/causal_detectors.h"

namespace ttap {

namespace {

// The ops under which cuDNN / MIOpen run a convolution (and so its algorithm search).
bool IsConvolutionLibraryOp(std::string_view n) {
  return n == "aten::cudnn_convolution" || n == "aten::cudnn_convolution_transpose" ||
         n == "aten::convolution_backward" || n == "aten::miopen_convolution" ||
         n == "aten::miopen_convolution_transpose" || n == "aten::miopen_depthwise_convolution";
}

}  // namespace

// A convolution op that synchronises with the device at least conv_search_min_syncs times is
// timing candidate algorithms (cudnnFind / MIOpen's find: each candidate timed with events and a
// device sync); a warm convolution never waits for the device. Such searches in two or more
// steps mean they come back every step: torch.backends.cudnn.benchmark=True searches once per
// new input shape, and the shapes change. A search in one step only is a first call (TTA015).
// Its cost: each searching op at what a convolution costs without the search, the median of the
// trace's non-searching ones of the same name when there are three, else kWarmConvolutionNs.
void DetectConvAlgorithmSearch(const RuleContext& ctx, const CausalGraph& g,
                               const TimeBreakdown& time, const RuleOptions& o,
                               std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const int64_t min_syncs = static_cast<int64_t>(o.Get("conv_search_min_syncs", 2));
  struct Searched {
    size_t step;
    int32_t row;
    int64_t syncs;
  };
  std::vector<Searched> searched;
  std::map<StringId, std::vector<int64_t>> warm;  // durations of non-searching ones, by name
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kCpuOp || !IsConvolutionLibraryOp(ctx.Name(i))) continue;
      int64_t syncs = 0;
      for (uint32_t j = i + 1; j < hi && ev.ts[j] < ev.end(i); ++j) {
        if (ev.track[j] == ev.track[i] && IsLaunchKind(ev.kind[j]) && ctx.IsSyncCall(j)) ++syncs;
      }
      if (syncs < min_syncs) {
        warm[ev.name[i]].push_back(ev.dur[i]);
      } else if (!ctx.InFirstCall(static_cast<int32_t>(i))) {
        searched.push_back({s, static_cast<int32_t>(i), syncs});
      }
    }
  }
  std::set<size_t> steps;
  for (const Searched& c : searched) steps.insert(c.step);
  if (steps.size() < 2) return;
  const double min_share = o.Get("conv_search_share", 0.01);
  std::map<size_t, Finding> by_step;
  for (const Searched& c : searched) {
    const auto it = warm.find(ev.name[c.row]);
    const int64_t typical =
        it != warm.end() && it->second.size() >= 3 ? Median(it->second) : kWarmConvolutionNs;
    const int64_t lost = std::max<int64_t>(0, ev.dur[c.row] - typical);
    auto f = by_step.find(c.step);
    if (f == by_step.end()) {
      f = by_step
              .emplace(c.step, MakeRawFinding(ctx, "TTA020", static_cast<int>(c.step), ev.ts[c.row],
                                              ev.end(c.row), 0, c.row, "conv-algorithm-search"))
              .first;
      AddText(&f->second, "warm_convolution_ns", std::to_string(typical));
    }
    Finding& x = f->second;
    x.start_ns = std::min(x.start_ns, ev.ts[c.row]);
    x.end_ns = std::max(x.end_ns, ev.end(c.row));
    x.occurrences.emplace_back(ev.ts[c.row], ev.end(c.row));
    x.rows.push_back(c.row);
    x.per_step[0].second += Us(lost);
    AccumulateNumber(&x, "searching_convolutions", 1);
    AccumulateNumber(&x, "device_syncs", static_cast<double>(c.syncs));
    AddEvent(&x, std::string(ctx.Name(c.row)), 1, Us(ev.dur[c.row]));
  }
  for (auto& [s, f] : by_step) {
    const AnalysedStep& step = ctx.steps()[s];
    if (step.duration() <= 0 || f.per_step[0].second * 1000.0 < min_share * step.duration()) {
      continue;
    }
    AddText(&f, "detail",
            FormatNumber("%.0f", f.evidence["searching_convolutions"].number) + " convolution(s)" +
                std::string(InTheStep(ctx)) + " search for their algorithm (" +
                FormatNumber("%.0f", f.evidence["device_syncs"].number) +
                " device syncs timing candidates), in " + std::to_string(steps.size()) +
                " steps: torch.backends.cudnn.benchmark=True searches again for every new input "
                "shape, and the shapes change from step to step; keep them fixed (pad or bucket "
                "the sizes) or set torch.backends.cudnn.benchmark = False");
    out->push_back(std::move(f));
  }
}

}  // namespace ttap

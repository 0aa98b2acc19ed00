// TTA004 small-h2d-copies: many small host-to-device copies per step. Its detector; registered in
// rule_registry.cpp, documented in docs/antipatterns.md#tta004-small-h2d-copies.
#include "analysis/rules/memory_detectors.h"

namespace ttap {

// The memory family's helpers it uses (memory_detectors.h).
using memory_detail::Count;
using memory_detail::IsH2D;
using memory_detail::LaunchingOp;

// TTA004. Many small host-to-device copies per step: each pays a runtime call (several us of
// CPU) and a DMA setup for a few bytes; creating the tensors on the device, or batching them into
// one buffer copied once, removes nearly all of it. A copy is small when args.bytes <
// small_h2d_max_bytes (64 KiB), or, without a size, when it runs < small_h2d_max_us (10 us).
// Flagged when a step holds >= small_h2d_min_copies (16). Time lost = the launching calls'
// durations (CPU) + the copies' durations (GPU), summed over the small copies.
void DetectSmallH2DCopies(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const int64_t max_bytes = static_cast<int64_t>(o.Get("small_h2d_max_bytes", 64 * 1024));
  const int64_t max_ns = static_cast<int64_t>(o.Get("small_h2d_max_us", 10) * 1000);
  const double min_copies = o.Get("small_h2d_min_copies", 16);
  struct StepCopies {
    std::vector<uint32_t> rows;
  };
  std::vector<StepCopies> per_step(ctx.steps().size());
  std::map<std::string, std::pair<int64_t, int32_t>> op_counts;  // cause key -> (count, row)
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kMemcpy || !IsH2D(ctx.Name(i))) continue;
      const bool small = ev.bytes[i] >= 0 ? ev.bytes[i] < max_bytes : ev.dur[i] < max_ns;
      if (small) per_step[s].rows.push_back(i);
    }
    if (per_step[s].rows.size() < min_copies) continue;
    for (uint32_t i : per_step[s].rows) {
      int32_t op = LaunchingOp(ctx, ev.link[i]);
      if (op < 0) continue;
      auto& c = op_counts[CauseKey(ctx, op)];
      if (c.first++ == 0) c.second = op;
    }
  }
  // The anchor: the op that launched most of the small copies over the whole trace.
  int32_t anchor = -1;
  int64_t most = 0;
  for (auto& [key, c] : op_counts) {
    if (c.first > most) {
      most = c.first;
      anchor = c.second;
    }
  }
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const auto& rows = per_step[s].rows;
    if (rows.size() < min_copies) continue;
    Finding f = MakeRawFinding(ctx, "TTA004", static_cast<int>(s), ev.ts[rows.front()],
                               ev.end(rows.back()), 0, anchor, "small-h2d-copies");
    int64_t lost = 0, bytes = 0, launch_ns = 0, copy_ns = 0;
    for (uint32_t i : rows) {
      f.rows.push_back(static_cast<int32_t>(i));
      const int32_t launch = ev.link[i];
      if (launch >= 0) {
        launch_ns += ev.dur[launch];
        f.start_ns = std::min(f.start_ns, ev.ts[launch]);
      }
      copy_ns += ev.dur[i];
      f.end_ns = std::max(f.end_ns, ev.end(i));
      if (ev.bytes[i] > 0) bytes += ev.bytes[i];
      int32_t op = LaunchingOp(ctx, launch);
      AddEvent(&f, op >= 0 ? std::string(ctx.Name(op)) : std::string(ctx.Name(i)), 1,
               Us(ev.dur[i] + (launch >= 0 ? ev.dur[launch] : 0)));
    }
    lost = launch_ns + copy_ns;
    f.per_step[0].second = Us(lost);
    AddNumber(&f, "copies", static_cast<double>(rows.size()));
    AddNumber(&f, "bytes", static_cast<double>(bytes));
    AddNumber(&f, "launch_us", Us(launch_ns));
    AddNumber(&f, "copy_us", Us(copy_ns));
    if (anchor >= 0) AddText(&f, "op", std::string(ctx.Name(anchor)));
    AddText(&f, "detail",
            Count(static_cast<double>(rows.size())) + " host-to-device copies under " +
                Bytes(static_cast<double>(max_bytes)) + InTheStep(ctx) + std::string(" (") +
                Bytes(static_cast<double>(bytes)) + " in all; " + Dur(Us(launch_ns)) +
                " of launch calls, " + Dur(Us(copy_ns)) + " of copies)" +
                (anchor >= 0 ? ", mostly from " + std::string(ctx.Name(anchor)) : ""));
    out->push_back(std::move(f));
  }
}

}  // namespace ttap

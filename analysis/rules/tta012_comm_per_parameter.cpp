// TTA012 comm-per-parameter: many small collectives per step. Its detector; registered in
// rule_registry.cpp, documented in docs/antipatterns.md#tta012-comm-per-parameter.
#include "analysis/rules/comm_detectors.h"

namespace ttap {

// The comm family's helpers it uses (comm_detectors.h).
using comm_detail::CollectiveOp;
using comm_detail::CollectStep;
using comm_detail::ShortName;
using comm_detail::StepComm;

// TTA012: per step and issuing op, many collectives (>= comm_min_per_step, e.g. one all_reduce
// per parameter) or collectives on a stream that also runs compute kernels. Lost: the launch
// overhead (collectives x mean launch duration, i.e. their launch calls' total time) plus their
// exposed (compute-free) GPU time, which bucketing amortises (see docs/antipatterns.md).
void DetectCommPerParameter(const RuleContext& ctx, const RuleOptions& o,
                            std::vector<Finding>* out) {
  // A forward-only run's collectives (tensor / expert parallel inference) each carry one layer's
  // output to the next: none can wait for another to be bucketed with it. Their exposed time is
  // TTA011's.
  if (!ctx.has_gpu() || ctx.forward_only()) return;
  const EventTable& ev = ctx.ev();
  const double min_count = o.Get("comm_min_per_step", 64);
  const double min_share = o.Get("comm_per_parameter_share", 0.01);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    StepComm sc = CollectStep(ctx, step);
    if (sc.comm_rows.empty() || step.duration() <= 0) continue;
    struct Group {
      int32_t op = -1;
      std::vector<size_t> idx;
      int64_t launch_ns = 0, launches = 0, exposed_ns = 0, same_stream = 0, graph_launched = 0;
    };
    std::map<std::string, Group> groups;
    for (size_t k = 0; k < sc.comm_rows.size(); ++k) {
      const uint32_t r = sc.comm_rows[k];
      const int32_t op = CollectiveOp(ctx, r);
      Group& g = groups[op >= 0 ? CauseKey(ctx, op) : "(launch not traced)"];
      if (g.idx.empty()) g.op = op;
      g.idx.push_back(k);
      const int32_t launch = ctx.LaunchOf(r);
      // A CUDA graph's one launch starts all its kernels: no collective pays it alone.
      if (launch >= 0 && (ctx.RuntimeFlags(launch) & kRuntimeGraphLaunch)) {
        ++g.graph_launched;
      } else if (launch >= 0) {
        g.launch_ns += ev.dur[launch];
        ++g.launches;
      }
      g.exposed_ns += sc.exposed_ns[k];
      const int32_t device = ctx.trace().tracks[ev.track[r]].device;
      if (sc.compute_streams.count({device, ev.stream[r]})) ++g.same_stream;
    }
    for (auto& [key, g] : groups) {
      const double n = static_cast<double>(g.idx.size());
      const bool many = n >= min_count;
      if (!many && g.same_stream == 0) continue;
      const double mean_launch_us = g.launches > 0 ? g.launch_ns / 1000.0 / g.launches : 0.0;
      const double lost_us = n * mean_launch_us + g.exposed_ns / 1000.0;
      if (lost_us * 1000.0 < min_share * step.duration()) continue;
      const uint32_t first = sc.comm_rows[g.idx.front()];
      Finding f = MakeRawFinding(ctx, "TTA012", static_cast<int>(s), ev.ts[first], ev.end(first),
                                 lost_us, g.op, key);
      for (size_t k : g.idx) {
        const uint32_t r = sc.comm_rows[k];
        f.rows.push_back(static_cast<int32_t>(r));
        f.start_ns = std::min(f.start_ns, ev.ts[r]);
        f.end_ns = std::max(f.end_ns, ev.end(r));
        AddEvent(&f, ShortName(ctx.Name(r)), 1, ev.dur[r] / 1000.0);
      }
      std::string op = g.op >= 0 ? std::string(ctx.Name(g.op)) : "";
      AddNumber(&f, "collectives", n);
      AddNumber(&f, "same_stream_collectives", static_cast<double>(g.same_stream));
      AddNumber(&f, "launch_overhead_us", n * mean_launch_us);
      AddNumber(&f, "exposed_us", g.exposed_ns / 1000.0);
      if (!op.empty()) AddText(&f, "op", op);
      std::string why;
      if (many) {
        why = std::to_string(g.idx.size()) + " collectives" +
              (op.empty() ? std::string() : " from " + op) + InTheStep(ctx) + std::string(" (") +
              (g.launches == 0 && g.graph_launched > 0
                   ? std::string("graph-launched: no launch call of their own")
                   : "mean " + FormatNumber("%.1f", mean_launch_us) + " us to launch each") +
              ")";
      }
      if (g.same_stream > 0) {
        why += (why.empty() ? "" : "; ") + std::to_string(g.same_stream) + " collective(s)" +
               (many || op.empty() ? std::string() : " from " + op) +
               " on the compute stream, so they cannot overlap compute";
      }
      AddText(&f, "detail", why);
      out->push_back(std::move(f));
    }
  }
}

}  // namespace ttap

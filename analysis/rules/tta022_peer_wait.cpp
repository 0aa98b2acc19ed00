// TTA022 peer-wait: this rank's collectives wait for a late peer rank. Its detector; registered
// in rule_registry.cpp, documented in docs/antipatterns.md#tta022-peer-wait.
#include "analysis/model/trace_queries.h"
#include "analysis/rules/causal_detectors.h"
#include "analysis/rules/comm_detectors.h"

namespace ttap {

// The comm family's helpers it uses (comm_detectors.h).
using comm_detail::CollectiveOp;
using comm_detail::ShortName;

// A collective kernel ends when every rank has arrived: one far slower than the fastest run of
// the same message (FastestCollectives: the same kernel and bytes, >= 3 runs in the trace)
// spent the difference waiting for a peer (PeerWaitNs: >= 4x the fastest and >= 100 us more).
// One rank's trace cannot say which peer; `ttap scan DIR` over all ranks names it (TTA018).
// Per step and issuing op, reported when the waits make up peer_wait_share (2%) of the step;
// costed by kPeersOnTime (each such collective at its fastest run's cost).
void DetectPeerWait(const RuleContext& ctx, const CausalGraph&, const TimeBreakdown&,
                    const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const auto fastest = FastestCollectives(ctx.trace());
  if (fastest.empty()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("peer_wait_share", 0.02);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    if (step.duration() <= 0) continue;
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<std::string, Finding> by_cause;
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kKernel || ev.bytes[i] < 0) continue;
      auto it = fastest.find({ev.name[i], ev.bytes[i]});
      if (it == fastest.end()) continue;
      const int64_t wait = PeerWaitNs(ev.dur[i], it->second);
      if (wait <= 0) continue;
      const int32_t op = CollectiveOp(ctx, i);
      Finding& f = CauseFinding(&by_cause, ctx, "TTA022", static_cast<int>(s), ev.ts[i], ev.end(i),
                                op >= 0 ? op : static_cast<int32_t>(i),
                                op >= 0 ? CauseKey(ctx, op) : "(launch not traced)");
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += wait / 1000.0;
      AccumulateNumber(&f, "waiting_collectives", 1);
      AccumulateNumber(&f, "wait_us", wait / 1000.0);
      AccumulateNumber(&f, "fastest_us", it->second / 1000.0);
      AccumulateNumber(&f, "message_bytes", static_cast<double>(ev.bytes[i]));
      AddEvent(&f, ShortName(ctx.Name(i)), 1, ev.dur[i] / 1000.0);
    }
    for (auto& [key, f] : by_cause) {
      if (f.per_step[0].second * 1000.0 < min_share * step.duration()) continue;
      out->push_back(std::move(f));
    }
  }
}

// "4 all_to_allv collectives (8.0 KiB each) took 2.0-4.5 ms against 13 us for the same message
// elsewhere: ..." from the merged evidence.
std::string PeerWaitMessage(const Finding& f, const std::string& detected,
                            const std::string& saving) {
  const double n = Num(f, "waiting_collectives");
  const double wait_us = Num(f, "wait_us");
  const double fastest_us = n > 0 ? Num(f, "fastest_us") / n : 0;
  const double bytes = n > 0 ? Num(f, "message_bytes") / n : 0;
  const std::string kernel = f.top_events.empty() ? "collective" : f.top_events.front().name;
  return "collectives wait for a late peer rank: " + FormatNumber("%.0f", n) + " run(s) of " +
         kernel + " (" + Bytes(bytes) + " on average) took " +
         FormatNumber("%.1f ms", (wait_us + fastest_us * n) / 1000.0) + " where the same message " +
         "ran in " + FormatNumber("%.0f us", fastest_us) + "; this rank waited " + detected +
         " for a peer that arrived late (a straggler, uneven work, or collectives issued in a "
         "different order on another rank): scan all ranks' traces together (ttap scan DIR) to "
         "see which" +
         saving;
}

}  // namespace ttap

// The helpers shared by the causal family of detectors (detectors that read the causal model
// (causal_graph.h) rather than the raw events), one file per code (tta0NN_<name>.cpp), in namespace
// causal_detail. Internal to analysis/rules/.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/rules/rule_registry.h"
#include "analysis/rules/rule_util.h"

namespace ttap::causal_detail {

inline int64_t Share(const StepAttribution& a, Cause c) { return a.ns[static_cast<int>(c)]; }

// The other face of an incomplete trace: the CPU waits in synchronisation calls while the trace
// records no GPU activity at all (the kernels of a replayed graph or a full activity buffer were
// dropped, or the device clock is far off): what the syncs wait for is missing, so nothing about
// the GPU side can be judged. Counted inside the analysed steps: the part of each sync call
// after the last recorded GPU activity ended, when at least trace_incomplete_min_wait_us.
inline void DetectBlindWaits(const RuleContext& ctx, const RuleOptions& o,
                             std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const int64_t min_wait =
      static_cast<int64_t>(o.Get("trace_incomplete_min_wait_us", kBlindSyncTailNs / 1000.0) * 1000);
  const int64_t run = StepsNs(ctx);
  if (run <= 0) return;
  int64_t blind = 0, calls = 0;
  int32_t first = -1;
  for (const AnalysedStep& s : ctx.steps()) {
    auto [lo, hi] = ctx.RowsIn(s.start_ns, s.end_ns);
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsLaunchKind(ev.kind[i]) || ev.dur[i] < min_wait || !ctx.IsSyncCall(i)) continue;
      // A sync returns within microseconds of the work it waits for: the time from the end of
      // the last GPU activity (or the call's start) to the call's return waited for nothing the
      // trace holds.
      const int64_t idle = ctx.WaitAfterLastGpuActivity(ev.ts[i], std::min(ev.end(i), s.end_ns));
      if (idle < min_wait) continue;
      blind += idle;
      ++calls;
      if (first < 0) first = static_cast<int32_t>(i);
    }
  }
  if (blind < o.Get("trace_incomplete_blind_wait_share", 0.2) * run) return;
  // The trace records GPU activity (else this is no blind wait): CUDA was among the activities.
  // What it lacks is a replayed graph's kernels where the run launches graphs, else what a full
  // activity buffer dropped.
  const bool graphs = ctx.replays_graphs();
  const auto& steps = ctx.steps();
  Finding f = MakeRawFinding(ctx, "TTA016", 0, steps.front().start_ns, steps.back().end_ns, 0,
                             first, "trace-incomplete");
  AddNumber(&f, "blind_sync_calls", static_cast<double>(calls));
  AddNumber(&f, "blind_wait_us", blind / 1000.0);
  AddText(&f, "detail",
          FormatNumber("%.0f", static_cast<double>(calls)) + " synchronisation call(s) wait " +
              FormatNumber("%.1f ms", blind / 1e6) + " (" +
              FormatNumber("%.0f%%", 100.0 * blind / run) +
              " of the run) while the trace records no GPU activity: the work they wait for is "
              "missing (kernels of replayed CUDA/HIP graphs, a full activity buffer, or a device "
              "clock far off), so the GPU side of this run cannot be judged; " +
              // (A trace with GPU activity recorded some of the graphs' kernels, not these.)
              (graphs ? std::string(ctx.has_gpu() ? "the run replays graphs, some of whose kernels "
                                                    "this profiler did not record: "
                                                  : "the run replays graphs, whose kernels this "
                                                    "profiler did not record: ") +
                            "read the GPU side from an eager run of the same code, or a profiler "
                            "version that records graph kernels"
                      : std::string("record a shorter active window (schedule(wait=1, warmup=1, "
                                    "active=3)) so the activity buffers do not overflow")));
  out->push_back(std::move(f));
}

// One raw finding per step for the calls of |cause| (cold start, allocator): each call a row and
// an occurrence, its duration the step's measure, `calls` / `call_us` counted, top events by name.
inline std::map<int, Finding> CallsByStep(const RuleContext& ctx, const CausalGraph& g, Cause cause,
                                          const char* code, const char* key) {
  const EventTable& ev = ctx.ev();
  std::map<int, Finding> by_step;
  std::set<int32_t> seen;  // CPU regions already counted (a first call is many slices)
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.cause[n] != cause || g.row[n] < 0) continue;
    int32_t row = g.row[n];
    if (g.role[n] == NodeRole::kCpuWork) {
      // CPU work of a one-time first call: the call stands for all of it. Otherwise (work
      // during a one-time graph capture) the step-level op that runs it does.
      int32_t region = EnclosingFirstCall(ctx.trace(), g.first_calls, row);
      if (region < 0) {
        const int32_t top = ctx.TopOp(row);
        region = top >= 0 ? top : row;
      }
      if (!seen.insert(region).second) continue;
      row = region;
    }
    const int step = ctx.StepOf(ev.ts[row]);
    if (step < 0) continue;
    auto it = by_step.find(step);
    if (it == by_step.end()) {
      const int32_t op = ctx.TopOp(row);
      it = by_step
               .emplace(step, MakeRawFinding(ctx, code, step, ev.ts[row], ev.end(row), 0,
                                             op >= 0 ? op : row, key))
               .first;
    }
    Finding& f = it->second;
    f.rows.push_back(row);
    f.occurrences.emplace_back(ev.ts[row], ev.end(row));
    f.start_ns = std::min(f.start_ns, ev.ts[row]);
    f.end_ns = std::max(f.end_ns, ev.end(row));
  }
  // The counts and times: each call once, a call inside another of the step's (a first call's
  // lazy launch) with it.
  for (auto& [step, f] : by_step) {
    const std::set<int32_t> rows(f.rows.begin(), f.rows.end());
    for (int32_t row : f.rows) {
      if (UnderAnyOf(ev, row, rows)) continue;
      f.per_step[0].second += ev.dur[row] / 1000.0;
      AccumulateNumber(&f, "calls", 1);
      AccumulateNumber(&f, "call_us", ev.dur[row] / 1000.0);
      AddEvent(&f, std::string(ctx.Name(row)), 1, ev.dur[row] / 1000.0);
    }
  }
  for (auto& [step, f] : by_step) {
    std::sort(
        f.top_events.begin(), f.top_events.end(),
        [](const EvidenceEvent& a, const EvidenceEvent& b) { return a.total_us > b.total_us; });
  }
  return by_step;
}

}  // namespace ttap::causal_detail

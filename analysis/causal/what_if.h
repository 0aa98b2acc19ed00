// What-ifs: for each catalogue code, the change to the causal graph (causal_graph.h) that
// expresses its fix, and the costing of a trace's findings by replaying the graph with and
// without those changes. A finding's time lost is what its fix alone saves on this run, against
// the unchanged replay; TTA008 (a symptom, no fix) claims only the idle time that remains once
// every fix is applied (largest first). Claims that would add up to more than the run are scaled
// to what all the fixes save together, so they never exceed it. Called by RunRules; pure
// functions, any thread.
// The fix models and their assumptions: docs/causal_model.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/causal/causal_graph.h"
#include "analysis/causal/fix_plan.h"
#include "analysis/model/findings.h"
#include "analysis/model/trace.h"

namespace ttap {

// The graph change that expresses |finding|'s fix under |model| (empty for kNone). A change of
// durations or launch latencies that names at least |dense_min_changes| nodes, and more than one
// node in 12, is held as a column (WhatIf::dense_dur / dense_cross_gap): on a 10M-event trace
// that is hundreds of MB less; below a million changes the lists cost little and replay faster.
constexpr size_t kDenseWhatIfMinChanges = size_t{1} << 20;
WhatIf FixWhatIf(const Trace& trace, const CausalGraph& g, const Finding& finding, FixModel model,
                 size_t dense_min_changes = kDenseWhatIfMinChanges);

// The profiler's own CPU cost on the thread that runs a recorded event: per op (a cpu_op event)
// and per Python frame (a python_function event, recorded with with_stack=True). Nine CPU-bound
// loops timed with and without the profiler (H200 host, PyTorch 2.11, bench/record) fit 3.4 us
// per op and 2.3 us per frame (least squares; calibration runs alone gave 2.5-5.1 us per op and
// 0.3-2.2 us per frame). A tight Python loop of tiny ops costs more (a 2 us `p.grad.zero_()`
// iteration was recorded as 27 us). RunRules takes them from the options profiler_op_us /
// profiler_frame_us (0: off).
constexpr int64_t kProfiledOpNs = 3500;
constexpr int64_t kProfiledFrameNs = 2000;
struct ProfilerCost {
  int64_t per_op_ns = kProfiledOpNs;
  int64_t per_frame_ns = kProfiledFrameNs;
};
// The run without the profiler: each CPU slice of |graph| loses the profiler's cost of the events
// that start in it, in place (keeping a tenth of its time; what it cannot give up carries to the
// lane's next slices: docs/causal_model.md). Nothing changes for traces without GPU activity.
struct ProfilerCostTaken {
  size_t ops = 0;      // the recorded ops counted
  int64_t cut_ns = 0;  // CPU time taken out of the slices, in all
};
ProfilerCostTaken TakeOutProfilerCost(const Trace& trace, CausalGraph* graph,
                                      const ProfilerCost& cost);

struct FixCosting {
  int64_t traced_run_ns = 0;         // the analysed steps' wall time as recorded (replayed)
  int64_t profiler_overhead_ns = 0;  // what the profiler's own cost added to it
  size_t profiled_ops = 0;           // the recorded ops that cost it
  int64_t run_ns = 0;                // the analysed steps' wall time without the profiler's cost
  int64_t safe_saving_ns = 0;  // what all the fixes save together (TTA008 has no fix: excluded)
  // What every finding accounts for together: the fixes, then the idle time TTA008 finds that no
  // fix explains (>= safe_saving_ns).
  int64_t joint_saving_ns = 0;
  size_t steps = 0;
  // The run's "could be N x faster": what every finding it shows saves together (the idle
  // time TTA008 would recover included), never less than any one finding's claim.
  double speedup() const {
    return run_ns > joint_saving_ns && run_ns > 0
               ? static_cast<double>(run_ns) / (run_ns - joint_saving_ns)
               : 1.0;
  }
};

// Sets each finding's time_lost_us_per_step, share_of_step and per_step to its replayed saving,
// and adds evidence: saving_alone_us_per_step, saving_after_larger_fixes_us_per_step (what it
// adds once the fixes that save more are in) and detected_us_per_step (the detector's own
// measure). |base| is RunReplay(g); it is consumed (its memory serves every what-if's replay, so
// costing the fixes faults in no new per-node memory).
// Every saving is against the run without the profiler's own cost (|profiler_cost|): |graph|'s
// durations are changed to that run's first (TakeOutProfilerCost), and stay so.
// |plans|: each finding's FixPlan (the rule registry's for its code), one per finding.
FixCosting CostFindings(const Trace& trace, CausalGraph* graph, Replay base,
                        const TimeBreakdown& time, std::vector<Finding>* findings,
                        const std::vector<FixPlan>& plans, const ProfilerCost& profiler_cost = {});

}  // namespace ttap

// The helpers shared by the comm family of detectors (detectors for collective communication), one
// file per code (tta0NN_<name>.cpp), in namespace comm_detail. Internal to analysis/rules/.
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/rules/rule_util.h"

namespace ttap::comm_detail {

// The op that issued a collective: the nearest "nccl:*" / "gloo:*" annotation around its launch
// (nccl:all_reduce), else the nearest c10d:: op (c10d::allreduce_), else record_param_comms,
// else the innermost cpu_op; -1 when the launch is not in the trace.
inline int32_t CollectiveOp(const RuleContext& ctx, size_t gpu_row) {
  const int32_t launch = ctx.LaunchOf(gpu_row);
  if (launch < 0) return -1;
  const EventTable& ev = ctx.ev();
  int32_t c10d = -1, record = -1, innermost = -1;
  for (int32_t p = ev.parent[launch], g = 0; p >= 0 && g < 256; p = ev.parent[p], ++g) {
    std::string_view n = ctx.Name(p);
    if (StartsWith(n, "nccl:") || StartsWith(n, "rccl:") || StartsWith(n, "gloo:")) return p;
    if (c10d < 0 && StartsWith(n, "c10d::")) c10d = p;
    if (record < 0 && n == "record_param_comms") record = p;
    if (innermost < 0 && ev.kind[p] == EventKind::kCpuOp) innermost = p;
  }
  if (c10d >= 0) return c10d;
  if (record >= 0) return record;
  if (innermost >= 0) return innermost;
  int32_t top = ctx.TopOp(launch);
  return top >= 0 ? top : launch;
}

// One step's collectives and compute, with each collective's exposed (compute-free) time.
struct StepComm {
  std::vector<uint32_t> comm_rows;
  std::vector<int64_t> exposed_ns;      // per comm row: its time with no compute kernel running,
                                        // counting time shared by concurrent collectives once
  std::vector<Interval> comm, compute;  // merged, clipped to the step
  std::set<std::pair<int32_t, int32_t>> compute_streams;  // (device, stream)
  int64_t comm_ns = 0, overlap_ns = 0;
  // The same of the collectives the step launched (comm_rows), wherever they ran: their time
  // (time shared by concurrent ones once) and its exposed part (the sum of exposed_ns).
  int64_t launched_comm_ns = 0, launched_exposed_ns = 0;
};

inline StepComm CollectStep(const RuleContext& ctx, const AnalysedStep& step) {
  const EventTable& ev = ctx.ev();
  StepComm sc;
  auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
  // A collective belongs to the step that launched it: one still queued when the step ends (a
  // comm stream far behind its launches) is this step's, and one an earlier step launched is
  // that step's (its time here still counts in the step's intervals).
  auto launched_before = [&](uint32_t r) {
    const int32_t l = ev.link[r];
    return l >= 0 && ev.ts[l] < step.start_ns;
  };
  std::vector<uint32_t> queued_past_end;
  std::vector<int32_t> graphs;  // the step's graph launches (a replay may run past its end)
  for (uint32_t i = lo; i < hi; ++i) {
    if (IsLaunchKind(ev.kind[i]) && ev.link[i] >= 0) {
      const uint32_t k = static_cast<uint32_t>(ev.link[i]);
      if (ev.kind[k] == EventKind::kKernel && ev.ts[k] >= step.end_ns && ctx.IsCollective(k)) {
        queued_past_end.push_back(k);
      }
      if (ctx.RuntimeFlags(i) & kRuntimeGraphLaunch) graphs.push_back(static_cast<int32_t>(i));
    }
    if (ev.kind[i] != EventKind::kKernel) continue;
    const int64_t a = std::max(ev.ts[i], step.start_ns), b = std::min(ev.end(i), step.end_ns);
    const int32_t device = ctx.trace().tracks[ev.track[i]].device;
    if (ctx.IsCollective(i)) {
      if (!launched_before(i)) sc.comm_rows.push_back(i);
      if (b > a) sc.comm.push_back({a, b});
    } else {
      if (b > a) sc.compute.push_back({a, b});
      sc.compute_streams.insert({device, ev.stream[i]});
    }
  }
  // A replayed graph's kernels all link to its one launch call: those of a replay that runs
  // past the step's end (the GPU a step behind, as in a CUDA-graph decode loop) are found in the
  // next steps' rows, with the compute beside them there for their exposed time.
  std::vector<Interval> later_compute;
  if (!graphs.empty()) {
    auto [lo2, hi2] = ctx.RowsIn(step.end_ns, step.end_ns + 2 * step.duration());
    for (uint32_t k = std::max(lo2, hi); k < hi2; ++k) {
      if (ev.kind[k] != EventKind::kKernel) continue;
      if (!ctx.IsCollective(k)) {
        later_compute.push_back({ev.ts[k], ev.end(k)});
      } else if (std::binary_search(graphs.begin(), graphs.end(), ev.link[k])) {
        queued_past_end.push_back(k);
      }
    }
    MergeIntervals(&later_compute);
  }
  std::sort(queued_past_end.begin(), queued_past_end.end());
  queued_past_end.erase(std::unique(queued_past_end.begin(), queued_past_end.end()),
                        queued_past_end.end());
  const size_t in_step_rows = sc.comm_rows.size();
  sc.comm_rows.insert(sc.comm_rows.end(), queued_past_end.begin(), queued_past_end.end());
  if (sc.comm_rows.empty()) return sc;
  MergeIntervals(&sc.comm);
  MergeIntervals(&sc.compute);
  sc.comm_ns = TotalLength(sc.comm);
  sc.overlap_ns = IntersectionLength(sc.comm, sc.compute);
  int64_t cursor = INT64_MIN;
  for (size_t k = 0; k < sc.comm_rows.size(); ++k) {
    const uint32_t r = sc.comm_rows[k];
    // A graph replay's collective after the step: its time there, beside that time's compute
    // (fully exposed when no compute runs there).
    const bool later = k >= in_step_rows && !graphs.empty() && ev.ts[r] >= step.end_ns;
    const int64_t a = std::max({ev.ts[r], cursor, step.start_ns});
    const int64_t b = later ? ev.end(r) : std::min(ev.end(r), step.end_ns);
    int64_t exposed = 0;
    if (b > a) exposed = (b - a) - ClippedLength(later ? later_compute : sc.compute, a, b);
    sc.exposed_ns.push_back(exposed);
    sc.launched_comm_ns += std::max<int64_t>(0, b - a);
    sc.launched_exposed_ns += exposed;
    cursor = std::max(cursor, b);
  }
  return sc;
}

inline std::string ShortName(std::string_view n) {
  size_t cut = n.find('(');
  if (cut != std::string_view::npos) n = n.substr(0, cut);
  return CutWithEllipsis(n, 100);
}

}  // namespace ttap::comm_detail

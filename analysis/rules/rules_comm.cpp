// Detectors for collective communication: TTA011 comm-not-overlapped, TTA012 comm-per-parameter
// (docs/antipatterns.md).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "analysis/rules/rule_util.h"

namespace ttap {

namespace {

// The op that issued a collective: the nearest "nccl:*" / "gloo:*" annotation around its launch
// (nccl:all_reduce), else the nearest c10d:: op (c10d::allreduce_), else record_param_comms,
// else the innermost cpu_op; -1 when the launch is not in the trace.
int32_t CollectiveOp(const RuleContext& ctx, size_t gpu_row) {
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
};

StepComm CollectStep(const RuleContext& ctx, const AnalysedStep& step) {
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
  for (uint32_t i = lo; i < hi; ++i) {
    if (IsLaunchKind(ev.kind[i]) && ev.link[i] >= 0) {
      const uint32_t k = static_cast<uint32_t>(ev.link[i]);
      if (ev.kind[k] == EventKind::kKernel && ev.ts[k] >= step.end_ns && ctx.IsCollective(k)) {
        queued_past_end.push_back(k);
      }
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
  std::sort(queued_past_end.begin(), queued_past_end.end());
  sc.comm_rows.insert(sc.comm_rows.end(), queued_past_end.begin(), queued_past_end.end());
  if (sc.comm_rows.empty()) return sc;
  MergeIntervals(&sc.comm);
  MergeIntervals(&sc.compute);
  sc.comm_ns = TotalLength(sc.comm);
  sc.overlap_ns = IntersectionLength(sc.comm, sc.compute);
  int64_t cursor = INT64_MIN;
  for (uint32_t r : sc.comm_rows) {
    const int64_t a = std::max({ev.ts[r], cursor, step.start_ns});
    const int64_t b = std::min(ev.end(r), step.end_ns);
    int64_t exposed = 0;
    if (b > a) exposed = (b - a) - ClippedLength(sc.compute, a, b);
    sc.exposed_ns.push_back(exposed);
    cursor = std::max(cursor, b);
  }
  return sc;
}

std::string ShortName(std::string_view n) {
  size_t cut = n.find('(');
  if (cut != std::string_view::npos) n = n.substr(0, cut);
  if (n.size() > 80) n = n.substr(0, 80);
  return std::string(n);
}

}  // namespace

// TTA011: per step, overlap ratio = |comm ∩ compute| / |comm| over the merged intervals of
// collective kernels and of the other kernels; flagged when the ratio is below comm_overlap_min
// and the exposed (compute-free) collective time is at least comm_exposed_share of the step.
// Lost: the exposed time, attributed to the op that issued each collective.
void DetectCommNotOverlapped(const RuleContext& ctx, const RuleOptions& o,
                             std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_overlap = o.Get("comm_overlap_min", 0.70);
  const double min_share = o.Get("comm_exposed_share", 0.02);
  const size_t first_out = out->size();
  // The fix (overlapping the collectives with backward) applies to every step: the collectives
  // of steps below the thresholds join the finding of their call site, for its what-if only
  // (the detector's figures stay those of the flagged steps; the replay decides what they
  // cost: one that overlaps compute may still hold the stream that waits for it).
  std::map<std::string, std::vector<int32_t>> unflagged_rows;
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    StepComm sc = CollectStep(ctx, step);
    // Without compute in the step there is nothing to overlap with.
    if (sc.comm_ns <= 0 || sc.compute.empty() || step.duration() <= 0) continue;
    const double ratio = static_cast<double>(sc.overlap_ns) / sc.comm_ns;
    const int64_t exposed = sc.comm_ns - sc.overlap_ns;
    if (ratio >= min_overlap || exposed < min_share * static_cast<double>(step.duration())) {
      for (size_t k = 0; k < sc.comm_rows.size(); ++k) {
        const int32_t op = CollectiveOp(ctx, sc.comm_rows[k]);
        unflagged_rows[op >= 0 ? CauseKey(ctx, op) : "(launch not traced)"].push_back(
            static_cast<int32_t>(sc.comm_rows[k]));
      }
      continue;
    }
    std::map<std::string, Finding> by_cause;
    for (size_t k = 0; k < sc.comm_rows.size(); ++k) {
      const uint32_t r = sc.comm_rows[k];
      const int32_t op = CollectiveOp(ctx, r);
      std::string key = op >= 0 ? CauseKey(ctx, op) : "(launch not traced)";
      Finding& f =
          CauseFinding(&by_cause, ctx, "TTA011", static_cast<int>(s), ev.ts[r], ev.end(r), op, key);
      f.rows.push_back(static_cast<int32_t>(r));
      f.per_step[0].second += sc.exposed_ns[k] / 1000.0;
      AccumulateNumber(&f, "collectives", 1);
      AccumulateNumber(&f, "comm_us", ev.dur[r] / 1000.0);
      AccumulateNumber(&f, "exposed_us", sc.exposed_ns[k] / 1000.0);
      AddEvent(&f, ShortName(ctx.Name(r)), 1, ev.dur[r] / 1000.0);
    }
    for (auto& [key, f] : by_cause) {
      if (f.per_step[0].second <= 0) {  // exposed in the next step: its fix still moves them
        auto& rows = unflagged_rows[key];
        rows.insert(rows.end(), f.rows.begin(), f.rows.end());
        continue;
      }
      std::string op = f.anchor_row >= 0 ? std::string(ctx.Name(f.anchor_row)) : "";
      if (!op.empty()) AddText(&f, "op", op);
      AddText(&f, "overlap", FormatNumber("%.1f%%", 100.0 * ratio));
      AddText(&f, "detail",
              "collectives" + (op.empty() ? std::string() : " from " + op) + " overlap compute " +
                  FormatNumber("%.0f%%", 100.0 * ratio) + " of their time (below " +
                  FormatNumber("%.0f%%", 100.0 * min_overlap) + "); " +
                  FormatNumber("%.3f", exposed / 1e6) + " ms of " +
                  FormatNumber("%.3f", sc.comm_ns / 1e6) +
                  " ms of communication in the step is exposed");
      out->push_back(std::move(f));
    }
  }
  for (size_t i = first_out; i < out->size(); ++i) {
    auto it = unflagged_rows.find((*out)[i].cause_key);
    if (it == unflagged_rows.end()) continue;
    auto& rows = (*out)[i].rows;
    rows.insert(rows.end(), it->second.begin(), it->second.end());
    unflagged_rows.erase(it);
  }
}

// TTA012: per step and issuing op, many collectives (>= comm_min_per_step, e.g. one all_reduce
// per parameter) or collectives on a stream that also runs compute kernels. Lost: the launch
// overhead (collectives x mean launch duration, i.e. their launch calls' total time) plus their
// exposed (compute-free) GPU time, which bucketing amortises (see docs/antipatterns.md).
void DetectCommPerParameter(const RuleContext& ctx, const RuleOptions& o,
                            std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
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
      int64_t launch_ns = 0, launches = 0, exposed_ns = 0, same_stream = 0;
    };
    std::map<std::string, Group> groups;
    for (size_t k = 0; k < sc.comm_rows.size(); ++k) {
      const uint32_t r = sc.comm_rows[k];
      const int32_t op = CollectiveOp(ctx, r);
      Group& g = groups[op >= 0 ? CauseKey(ctx, op) : "(launch not traced)"];
      if (g.idx.empty()) g.op = op;
      g.idx.push_back(k);
      const int32_t launch = ctx.LaunchOf(r);
      if (launch >= 0) {
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
              (op.empty() ? std::string() : " from " + op) + " in the step (mean " +
              FormatNumber("%.1f", mean_launch_us) + " us to launch each)";
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

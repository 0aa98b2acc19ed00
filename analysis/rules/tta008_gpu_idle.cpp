// TTA008 gpu-idle: the GPU idles inside the step while the CPU works. Its detector and message;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta008-gpu-idle.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "analysis/base/median.h"
#include "analysis/rules/host_detectors.h"

namespace ttap {

namespace {

// The Python call |n| names, as the message says it: "collect()", "log_metrics()"; "" for
// names that call nothing nameable (PythonCallOf).
std::string PythonCallName(std::string_view n) {
  const std::string_view name = PythonCallOf(n);
  return name.empty() ? std::string() : std::string(name) + "()";
}

}  // namespace

void DetectGpuIdle(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("gpu_idle_share", 0.05);
  const int64_t min_gap_ns = static_cast<int64_t>(o.Get("gpu_idle_min_gap_us", 200) * 1000);
  const auto& busy = ctx.gpu_busy();
  // Each Python call name's usual duration (median of up to 64 runs) and run count, made on
  // first use: an always-tiny call that takes a thousand times longer than usual is a stall
  // inside it (a garbage-collection pause, the OS), not its own work.
  std::unordered_map<StringId, std::pair<int64_t, size_t>> usual;
  auto usual_of = [&](StringId name) {
    if (usual.empty()) {
      std::unordered_map<StringId, std::vector<int64_t>> runs;
      std::unordered_map<StringId, size_t> counts;
      for (size_t i = 0; i < ev.size(); ++i) {
        if (ev.kind[i] != EventKind::kPythonFunction) continue;
        ++counts[ev.name[i]];
        auto& r = runs[ev.name[i]];
        if (r.size() < 64) r.push_back(ev.dur[i]);
      }
      for (auto& [id, r] : runs) usual[id] = {Median(std::move(r)), counts[id]};
    }
    auto it = usual.find(name);
    return it == usual.end() ? std::pair<int64_t, size_t>{0, 0} : it->second;
  };
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    // Gaps between GPU activity inside the step (including before the first and after the last).
    std::vector<Interval> gaps;
    int64_t cursor = step.start_ns;
    auto it =
        std::lower_bound(busy.begin(), busy.end(), Interval{step.start_ns, INT64_MIN},
                         [](const Interval& a, const Interval& b) { return a.second < b.first; });
    for (; it != busy.end() && it->first < step.end_ns; ++it) {
      if (it->first > cursor) gaps.push_back({cursor, it->first});
      cursor = std::max(cursor, it->second);
    }
    if (cursor < step.end_ns) gaps.push_back({cursor, step.end_ns});
    std::map<std::string, Finding> by_cause;
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    // One pass over the step: the user-level CPU ops (sorted by start; on one thread they do not
    // overlap) and the data-loading / synchronisation intervals that explain gaps elsewhere.
    struct Op {
      int64_t start, end;
      int32_t row;
    };
    std::vector<Op> ops;
    // The ops right inside a wrapper, an annotation that spans half the step or more (a compiled
    // region, a record_function around the whole forward): naming it says nothing, so a gap it
    // covers is named by the op inside it that the gap overlaps most. (A framework op that long,
    // torch.randn on the CPU, is the statement itself.)
    std::vector<Op> inner_ops;
    std::vector<int32_t> python_calls;  // the step's Python calls (with_stack traces)
    std::vector<Interval> explaining;
    int64_t longest_op = 0, longest_inner = 0;
    auto is_wrapper = [&](int32_t row) {
      return 2 * ev.dur[row] >= step.duration() &&
             (ev.kind[row] == EventKind::kUserAnnotation || Contains(ctx.Name(row), "#"));
    };
    for (uint32_t i = lo; i < hi; ++i) {
      std::string_view n = ctx.Name(i);
      // (The profiler's own buffer requests too: no run without the profiler has them.)
      if (ctx.IsDataLoaderName(n) || ctx.IsSyncCall(i) || IsProfilerOverhead(ctx.trace(), i)) {
        explaining.push_back({ev.ts[i], ev.end(i)});
      }
      if (ev.kind[i] == EventKind::kPythonFunction) python_calls.push_back(static_cast<int32_t>(i));
      if (ev.kind[i] != EventKind::kCpuOp && ev.kind[i] != EventKind::kUserAnnotation) continue;
      if (StartsWith(n, "ProfilerStep#")) continue;
      int32_t top = ctx.TopOp(static_cast<int32_t>(i));
      // Its nearest op or annotation ancestor (Python frames skipped), when it is not the top.
      int32_t p = -1;
      if (top != static_cast<int32_t>(i)) {
        p = ev.parent[i];
        while (p >= 0 && ev.kind[p] == EventKind::kPythonFunction) p = ev.parent[p];
      }
      // An op whose user-level op began before the analysed span (a warm part inside a
      // benchmark's record_function around the whole run): the outermost one inside it is.
      if (top >= 0 && top != static_cast<int32_t>(i) && ev.ts[top] < step.start_ns &&
          (p < 0 || ev.ts[p] < step.start_ns)) {
        top = static_cast<int32_t>(i);
      }
      if (top != static_cast<int32_t>(i)) {
        // Right inside a wrapper: its nearest op or annotation ancestor is the wrapper.
        if (p == top && top >= 0 && is_wrapper(top)) {
          inner_ops.push_back({ev.ts[i], ev.end(i), static_cast<int32_t>(i)});
          longest_inner = std::max(longest_inner, ev.dur[i]);
        }
        continue;
      }
      ops.push_back({ev.ts[i], ev.end(i), static_cast<int32_t>(i)});
      longest_op = std::max(longest_op, ev.dur[i]);
    }
    // One-time first runs of ops explain the gaps they cover: cold start, not idle time.
    for (const FirstCall& c : ctx.first_calls()) {
      if (ev.ts[c.row] < step.end_ns && ev.end(c.row) > step.start_ns) {
        explaining.push_back({ev.ts[c.row], ev.end(c.row)});
      }
    }
    MergeIntervals(&explaining);
    for (const auto& [ga, gb] : gaps) {
      if (gb - ga < min_gap_ns) continue;
      // The CPU work during the gap: the user-level op with the most overlap; data loading and
      // synchronisation are other rules' business.
      const bool explained = ClippedLength(explaining, ga, gb) * 2 >= gb - ga;
      int32_t best = -1;
      int64_t best_overlap = 0, op_time = 0;
      // (The gap's ends as plain values: a lambda may not capture structured bindings.)
      auto overlapping = [](const std::vector<Op>& list, int64_t longest, int64_t from, int64_t to,
                            int32_t* row, int64_t* most, int64_t* total) {
        auto first = std::lower_bound(list.begin(), list.end(), from - longest,
                                      [](const Op& op, int64_t t) { return op.start < t; });
        for (auto op = first; op != list.end() && op->start < to; ++op) {
          const int64_t ov = std::min(op->end, to) - std::max(op->start, from);
          *total += std::max<int64_t>(ov, 0);
          if (ov > *most) {
            *most = ov;
            *row = op->row;
          }
        }
      };
      overlapping(ops, longest_op, ga, gb, &best, &best_overlap, &op_time);
      if (best >= 0 && is_wrapper(best)) {
        int32_t inner = -1;
        int64_t inner_overlap = 0, inner_time = 0;
        overlapping(inner_ops, longest_inner, ga, gb, &inner, &inner_overlap, &inner_time);
        // (Another wrapper inside, a compiled region in a record_function: the outer one, which
        // the user named, stays.)
        if (inner >= 0 && !is_wrapper(inner) && UnderAnyOf(ev, inner, {best})) {
          best = inner;
          best_overlap = inner_overlap;
          op_time = inner_time;
        }
      }
      if (explained) continue;
      // An op's one-time first run (context creation, a library's start-up) is cold start.
      if (best >= 0 && ctx.InFirstCall(best)) continue;
      // Torch ops cover less than half of the gap, all of them together: the Python call that
      // covers most of it, the innermost (shortest) one, is the work to name (a gc.collect(),
      // logging, a file write: the tracer records them, the ops do not).
      int32_t python = -1;
      if (op_time * 2 < gb - ga) {
        for (int32_t p : python_calls) {
          const int64_t ov = std::min(ev.end(p), gb) - std::max(ev.ts[p], ga);
          if (ov * 2 < gb - ga || ov <= best_overlap) continue;
          if (PythonCallName(ctx.Name(p)).empty()) continue;
          if (python < 0 || ev.dur[p] < ev.dur[python]) python = p;
        }
      }
      if (python >= 0) {
        best = python;
        best_overlap = std::min(ev.end(python), gb) - std::max(ev.ts[python], ga);
      }
      std::string key = best >= 0 ? CauseKey(ctx, best) : "(no CPU op)";
      Finding& f = CauseFinding(&by_cause, ctx, "TTA008", static_cast<int>(s), ga, gb, best, key);
      f.per_step[0].second += (gb - ga) / 1000.0;
      AccumulateNumber(&f, "gaps", 1);
      AddMax(&f, "longest_gap_us", std::max(Num(f, "longest_gap_us"), (gb - ga) / 1000.0));
      if (python >= 0) {
        const int32_t caller = ev.Frame(python);
        const std::string from = caller >= 0 ? PythonCallName(ctx.Name(caller)) : "";
        const auto [typical, runs] = usual_of(ev.name[python]);
        // Only for calls that are always tiny (an attribute lookup, a small built-in): those
        // whose work grows with their arguments (a file write, a module call) vary for real.
        // A blocking wait (a lock, a queue, a socket) is the thread waiting for another thread
        // or process to hand it work, however tiny its usual runs.
        const bool waits = IsIdleWaitName(ctx.Name(python));
        const bool stall = !waits && runs >= 5 && typical < 10000 && ev.dur[python] >= 1000000 &&
                           ev.dur[python] >= 1000 * std::max<int64_t>(typical, 1);
        AddText(&f, "cpu_op",
                "Python outside any torch op: " +
                    (stall ? "a stall inside " + PythonCallName(ctx.Name(python)) + " (its " +
                                 std::to_string(runs) + " runs usually take " +
                                 FormatNumber("%.1f us", typical / 1000.0) +
                                 ": a garbage-collection pause or the OS)"
                     : waits ? "a wait in " + PythonCallName(ctx.Name(python)) +
                                   " for another thread or process to hand over work"
                             : PythonCallName(ctx.Name(python))) +
                    (from.empty() ? "" : ", called from " + from));
        AddText(&f, "python_call", PythonCallName(ctx.Name(python)));
        AddEvent(&f, std::string(ctx.Name(best)), 1, best_overlap / 1000.0);
      } else if (best >= 0 && op_time * 2 < gb - ga) {
        // The ops cover less than half of the gap and no recorded Python call does: the time is
        // outside any torch op (Python, unrecorded without with_stack=True); the op is only
        // where it happens.
        AddText(
            &f, "cpu_op",
            "work outside any torch op, around " + std::string(ctx.Name(best)) +
                (python_calls.empty() ? " (record with with_stack=True to see its Python)" : ""));
        AddEvent(&f, std::string(ctx.Name(best)), 1, best_overlap / 1000.0);
      } else if (best >= 0) {
        AddText(&f, "cpu_op",
                std::string(ctx.Name(best)) +
                    (HostRandomOp(ctx, best)
                         ? std::string(" (random numbers drawn on the CPU: ") + kDrawOnGpu + ")"
                         : ""));
        AddEvent(&f, std::string(ctx.Name(best)), 1, best_overlap / 1000.0);
      }
    }
    for (auto& [key, f] : by_cause) {
      if (step.duration() <= 0 || f.per_step[0].second * 1000.0 < min_share * step.duration())
        continue;
      // Recorded without CPU activity: no op could be named.
      if (ops.empty() && python_calls.empty()) AddNumber(&f, "no_cpu_ops", 1);
      out->push_back(std::move(f));
    }
  }
}

std::string GpuIdleMessage(const Finding& f, const std::string& detected,
                           const std::string& saving) {
  std::string op = TextOf(f, "cpu_op");
  const std::string untraced =
      Num(f, "no_cpu_ops") > 0
          ? "untraced work (the trace records no CPU op: profile with ProfilerActivity.CPU to "
            "see what it is)"
          : "untraced work";
  return "the GPU idles " + detected + " while the CPU runs " + (op.empty() ? untraced : op) +
         saving;
}

}  // namespace ttap

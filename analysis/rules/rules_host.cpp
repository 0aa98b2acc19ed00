// Detectors for host-side stalls: TTA001 dataloader-stall, TTA002 host-sync, TTA008 gpu-idle.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/rules/rule_util.h"

namespace ttap {

namespace {

bool IsCpuSide(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
         k == EventKind::kPythonFunction;
}

// True when |row| runs inside torch.profiler's own code (`profile.step()` starting or stopping
// a recording synchronises the device): measurement overhead the user's code did not ask for and
// cannot remove, so TTA002 does not report it. Python frames are named "path/file.py(line): fn",
// the path relative or absolute.
bool IssuedByProfiler(const RuleContext& ctx, uint32_t row) {
  // From the innermost Python frame outwards: profiler code before any code outside torch (the
  // user's, a library's). A profiler that runs the whole step inside one of its own frames (a
  // record_function __enter__ enclosing the model) does not issue the syncs the model's code does.
  const EventTable& ev = ctx.ev();
  for (int32_t p = ev.parent[row], g = 0; p >= 0 && g < 64; p = ev.parent[p], ++g) {
    if (ev.kind[p] != EventKind::kPythonFunction) continue;
    std::string_view n = ctx.Name(p);
    if (Contains(n, "torch/profiler/") || Contains(n, "torch/autograd/profiler.py(")) return true;
    if (!Contains(n, "torch/")) return false;  // torch.cuda.synchronize etc. keep looking
  }
  return false;
}

// Without Python stacks: torch.profiler's stop synchronises the device once, outside any operator,
// after the last work the profiled code launched. A device-wide sync that no operator or Python
// frame encloses (a ProfilerStep# annotation may) and after which its thread launches nothing.
bool ProfilerStopSync(const RuleContext& ctx, uint32_t row,
                      const std::vector<int64_t>& last_launch) {
  const EventTable& ev = ctx.ev();
  const std::string_view n = ctx.Name(row);
  if (!HasRuntimeFlag(n, kRuntimeDeviceWideSync)) return false;
  for (int32_t p = ev.parent[row], g = 0; p >= 0 && g < 64; p = ev.parent[p], ++g) {
    if (!StartsWith(ctx.Name(p), "ProfilerStep#")) return false;
  }
  return last_launch[ev.track[row]] <= ev.ts[row];
}

bool IsPageableD2H(std::string_view n) {
  return StartsWith(n, "Memcpy DtoH") && Contains(n, "Pageable");
}

}  // namespace

void DetectDataloaderStall(const RuleContext& ctx, const RuleOptions& o,
                           std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("dataloader_share", 0.05);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    // Per data-loading call site in this step.
    std::map<std::string, Finding> by_cause;
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsCpuSide(ev.kind[i]) || !ctx.IsDataLoaderName(ctx.Name(i))) continue;
      // Count the outermost data-loading event only.
      int32_t p = ev.parent[i];
      bool nested = false;
      for (int g = 0; p >= 0 && g < 256; ++g, p = ev.parent[p]) {
        if (ctx.IsDataLoaderName(ctx.Name(p))) nested = true;
      }
      if (nested) continue;
      const int64_t a = ev.ts[i], b = std::min(ev.end(i), step.end_ns);
      const double load_us = (b - a) / 1000.0;
      const double idle_us = ctx.has_gpu() ? ctx.GpuIdle(a, b) / 1000.0 : load_us;
      std::string key = CauseKey(ctx, static_cast<int32_t>(i));
      Finding& f = CauseFinding(&by_cause, ctx, "TTA001", static_cast<int>(s), a, b,
                                static_cast<int32_t>(i), key);
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += idle_us;
      AddNumber(
          &f, "dataloader_us",
          (f.evidence.count("dataloader_us") ? f.evidence["dataloader_us"].number : 0) + load_us);
      AddNumber(&f, "gpu_idle_during_load_us",
                (f.evidence.count("gpu_idle_during_load_us")
                     ? f.evidence["gpu_idle_during_load_us"].number
                     : 0) +
                    idle_us);
      AddNumber(&f, "calls", (f.evidence.count("calls") ? f.evidence["calls"].number : 0) + 1);
      AddEvent(&f, std::string(ctx.Name(i)), 1, load_us);
    }
    for (auto& [key, f] : by_cause) {
      if (step.duration() <= 0 || f.per_step[0].second * 1000.0 < min_share * step.duration())
        continue;
      AddNumber(&f, "step_us", step.duration() / 1000.0);
      out->push_back(std::move(f));
    }
  }
}

void DetectHostSync(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("host_sync_share", 0.01);
  const int64_t min_drain_ns = static_cast<int64_t>(o.Get("host_sync_min_drain_us", 10) * 1000);
  // Launch rows of pageable device-to-host copies block the CPU like a synchronize.
  std::vector<char> pageable_launch(ev.size(), 0);
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] == EventKind::kMemcpy && ev.link[i] >= 0 && IsPageableD2H(ctx.Name(i))) {
      pageable_launch[ev.link[i]] = 1;
    }
  }
  // The last GPU launch of each thread (for the profiler's own stop sync).
  std::vector<int64_t> last_launch(ctx.trace().tracks.size(), INT64_MIN);
  for (size_t i = 0; i < ev.size(); ++i) {
    if (IsLaunchKind(ev.kind[i]) && ev.link[i] >= 0) {
      last_launch[ev.track[i]] = std::max(last_launch[ev.track[i]], ev.ts[i]);
    }
  }
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<std::string, Finding> by_cause;
    std::map<std::string, std::set<int32_t>> statements_of;  // per cause, counted once each
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsLaunchKind(ev.kind[i])) continue;
      if (!ctx.IsSyncCall(i) && !pageable_launch[i]) continue;
      const std::string_view name = ctx.Name(i);
      if (IssuedByProfiler(ctx, i) || ProfilerStopSync(ctx, i, last_launch)) continue;
      const int64_t sync_end = ev.end(i);
      const int64_t resume = ctx.NextGpuStart(sync_end, step.end_ns);
      // The drain: GPU idle from the moment the CPU started waiting until new work arrives.
      const int64_t drain = ctx.GpuIdle(ev.ts[i], resume);
      // The host work of the statement that reads the value (logging, a metric): the fix (read
      // it every N steps) takes it out of the step too, even where the GPU has nothing to drain.
      const int32_t statement = HostStatementOf(ctx.trace(), static_cast<int32_t>(i));
      const int64_t statement_ns =
          statement >= 0 ? std::max<int64_t>(0, ev.dur[statement] - ev.dur[i]) : 0;
      if (drain < min_drain_ns && statement_ns < min_drain_ns) continue;
      int32_t op = ctx.TopOp(static_cast<int32_t>(i));
      int32_t anchor = op >= 0 ? op : static_cast<int32_t>(i);
      // Prefer the innermost op that explains the sync (aten::item, aten::nonzero, ...).
      for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 64; p = ev.parent[p], ++g) {
        std::string_view pn = ctx.Name(p);
        if (pn == "aten::item" || pn == "aten::_local_scalar_dense" || pn == "aten::nonzero" ||
            pn == "aten::to" || pn == "aten::cpu" || pn == "aten::copy_" || ctx.IsSyncCall(p)) {
          anchor = p;
        }
      }
      std::string key = CauseKey(ctx, anchor);
      Finding& f = CauseFinding(&by_cause, ctx, "TTA002", static_cast<int>(s), ev.ts[i], resume,
                                anchor, key);
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += drain / 1000.0;
      if (statement >= 0 && statements_of[key].insert(statement).second) {
        AccumulateNumber(&f, "host_statement_us", statement_ns / 1000.0);
      }
      AccumulateNumber(&f, "syncs", 1);
      AccumulateNumber(&f, "gpu_drain_us", drain / 1000.0);
      AddText(&f, "sync_call", std::string(name));
      AddText(&f, "op", std::string(ctx.Name(anchor)));
      AddEvent(&f, std::string(name), 1, ev.dur[i] / 1000.0);
    }
    for (auto& [key, f] : by_cause) {
      if (step.duration() <= 0 || (f.per_step[0].second + Num(f, "host_statement_us")) * 1000.0 <
                                      min_share * step.duration())
        continue;
      out->push_back(std::move(f));
    }
  }
}

void DetectGpuIdle(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("gpu_idle_share", 0.05);
  const int64_t min_gap_ns = static_cast<int64_t>(o.Get("gpu_idle_min_gap_us", 200) * 1000);
  const auto& busy = ctx.gpu_busy();
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
    std::vector<Interval> explaining;
    int64_t longest_op = 0;
    for (uint32_t i = lo; i < hi; ++i) {
      std::string_view n = ctx.Name(i);
      if (ctx.IsDataLoaderName(n) || ctx.IsSyncCall(i)) explaining.push_back({ev.ts[i], ev.end(i)});
      if (ev.kind[i] != EventKind::kCpuOp && ev.kind[i] != EventKind::kUserAnnotation) continue;
      if (StartsWith(n, "ProfilerStep#")) continue;
      if (ctx.TopOp(static_cast<int32_t>(i)) != static_cast<int32_t>(i)) continue;
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
      int64_t best_overlap = 0;
      auto first = std::lower_bound(ops.begin(), ops.end(), ga - longest_op,
                                    [](const Op& op, int64_t t) { return op.start < t; });
      for (auto op = first; op != ops.end() && op->start < gb; ++op) {
        int64_t ov = std::min(op->end, gb) - std::max(op->start, ga);
        if (ov > best_overlap) {
          best_overlap = ov;
          best = op->row;
        }
      }
      if (explained) continue;
      // An op's one-time first run (context creation, a library's start-up) is cold start.
      if (best >= 0 && ctx.InFirstCall(best)) continue;
      std::string key = best >= 0 ? CauseKey(ctx, best) : "(no CPU op)";
      Finding& f = CauseFinding(&by_cause, ctx, "TTA008", static_cast<int>(s), ga, gb, best, key);
      f.per_step[0].second += (gb - ga) / 1000.0;
      AddNumber(&f, "gaps", (f.evidence.count("gaps") ? f.evidence["gaps"].number : 0) + 1);
      AddNumber(
          &f, "longest_gap_us",
          std::max(f.evidence.count("longest_gap_us") ? f.evidence["longest_gap_us"].number : 0,
                   (gb - ga) / 1000.0));
      if (best >= 0) {
        AddText(&f, "cpu_op", std::string(ctx.Name(best)));
        AddEvent(&f, std::string(ctx.Name(best)), 1, best_overlap / 1000.0);
      }
    }
    for (auto& [key, f] : by_cause) {
      if (step.duration() <= 0 || f.per_step[0].second * 1000.0 < min_share * step.duration())
        continue;
      out->push_back(std::move(f));
    }
  }
}

std::string DataLoaderStallMessage(const Finding& f, const std::string& detected,
                                   const std::string& saving) {
  const double step_us = Num(f, "step_us");
  std::string runs = step_us > 0
                         ? "the input pipeline runs " +
                               FormatPercent(Num(f, "dataloader_us") / step_us) + " of each step"
                         : "the input pipeline keeps the GPU idle";
  return runs + " (GPU idle " + detected + ")" + saving;
}

std::string HostSyncMessage(const Finding& f, const std::string& detected,
                            const std::string& saving) {
  const double steps = std::max(1.0, Num(f, "steps_affected"));
  std::string op = TextOf(f, "op");
  return std::string("host synchronisation") + (op.empty() ? "" : " in " + op) + " (" +
         TextOf(f, "sync_call") + ", " + std::to_string(static_cast<int>(Num(f, "syncs") / steps)) +
         "x per step) drains the GPU for " + detected +
         (Num(f, "host_statement_us") / steps >= 10
              ? "; the statement that reads it runs " +
                    FormatMs(Num(f, "host_statement_us") / steps) + "/step on the host"
              : "") +
         saving;
}

std::string GpuIdleMessage(const Finding& f, const std::string& detected,
                           const std::string& saving) {
  std::string op = TextOf(f, "cpu_op");
  return "the GPU idles " + detected + " while the CPU runs " +
         (op.empty() ? std::string("untraced work") : op) + saving;
}

}  // namespace ttap

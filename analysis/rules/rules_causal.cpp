// Detectors that read the causal model (causal_graph.h) rather than the raw events: allocator
// churn decided from the critical path (TTA013), cold-start (TTA015), trace-incomplete (TTA016)
// and CPU-overhead-bound regions (TTA017).
// RunRules calls them after the graph is built; they append raw findings merged like the others.
#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/rules/rule_registry.h"
#include "analysis/rules/rule_util.h"

namespace ttap {

namespace {

int64_t Share(const StepAttribution& a, Cause c) { return a.ns[static_cast<int>(c)]; }

}  // namespace

namespace {

// The other face of an incomplete trace: the CPU waits in synchronisation calls while the trace
// records no GPU activity at all (the kernels of a replayed graph or a full activity buffer were
// dropped, or the device clock is far off): what the syncs wait for is missing, so nothing about
// the GPU side can be judged. Counted inside the analysed steps: the part of each sync call
// after the last recorded GPU activity ended, when at least trace_incomplete_min_wait_us.
void DetectBlindWaits(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const int64_t min_wait = static_cast<int64_t>(o.Get("trace_incomplete_min_wait_us", 1000) * 1000);
  int64_t run = 0;
  for (const AnalysedStep& s : ctx.steps()) run += s.duration();
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
      const int64_t end = std::min(ev.end(i), s.end_ns);
      const auto& busy = ctx.gpu_busy();  // merged: sorted by start and by end
      auto after = std::upper_bound(busy.begin(), busy.end(), end,
                                    [](int64_t t, const Interval& x) { return t < x.first; });
      int64_t last_end = ev.ts[i];
      if (after != busy.begin()) {
        if (std::prev(after)->second >= end) continue;  // the GPU still works when it returns
        last_end = std::max(last_end, std::prev(after)->second);
      }
      const int64_t idle = end - last_end;
      if (idle < min_wait) continue;
      blind += idle;
      ++calls;
      if (first < 0) first = static_cast<int32_t>(i);
    }
  }
  if (blind < o.Get("trace_incomplete_blind_wait_share", 0.2) * run) return;
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
              "clock far off), so the GPU side of this run cannot be judged; record with "
              "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] and a shorter active "
              "window");
  out->push_back(std::move(f));
}

}  // namespace

void DetectTraceIncomplete(const RuleContext& ctx, const CausalGraph&, const TimeBreakdown&,
                           const RuleOptions& o, std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  int64_t launches = 0, unmatched = 0, gpu = 0;
  int32_t first = -1;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (IsGpuKind(ev.kind[i]) && ev.kind[i] != EventKind::kGpuSync) ++gpu;
    // The launch calls that start GPU work (IsWorkLaunchCall), by the row's cached flags.
    constexpr uint32_t kStartsWork = kRuntimeKernelLaunch | kRuntimeCopy | kRuntimeMemset;
    if (!IsLaunchKind(ev.kind[i]) || !(ctx.RuntimeFlags(i) & kStartsWork)) continue;
    ++launches;
    if (ev.link[i] < 0) {
      ++unmatched;
      if (first < 0) first = static_cast<int32_t>(i);
    }
  }
  const double min_launches = o.Get("trace_incomplete_min_launches", 10);
  const double min_share = o.Get("trace_incomplete_share", 0.5);
  const auto& steps = ctx.steps();
  if (launches < min_launches || unmatched < min_share * launches) {
    DetectBlindWaits(ctx, o, out);
    return;
  }
  Finding f = MakeRawFinding(
      ctx, "TTA016", steps.empty() ? -1 : 0, steps.empty() ? ev.ts[first] : steps.front().start_ns,
      steps.empty() ? ev.end(first) : steps.back().end_ns, 0, first, "trace-incomplete");
  AddNumber(&f, "launches", static_cast<double>(launches));
  AddNumber(&f, "launches_without_gpu_activity", static_cast<double>(unmatched));
  AddNumber(&f, "gpu_activities", static_cast<double>(gpu));
  AddText(&f, "detail",
          std::to_string(unmatched) + " of " + std::to_string(launches) +
              " launches have no GPU activity in the trace" +
              (gpu == 0 ? " (none was recorded at all)" : "") +
              ": the GPU side of this run cannot be judged; record with "
              "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] and a shorter active "
              "window (schedule(wait=1, warmup=1, active=3)) so the activity buffers do not "
              "overflow");
  out->push_back(std::move(f));
}

// One raw finding per step for the calls of |cause| (cold start, allocator): each call a row and
// an occurrence, its duration the step's measure, `calls` / `call_us` counted, top events by name.
std::map<int, Finding> CallsByStep(const RuleContext& ctx, const CausalGraph& g, Cause cause,
                                   const char* code, const char* key) {
  const EventTable& ev = ctx.ev();
  std::map<int, Finding> by_step;
  std::set<int32_t> seen;  // CPU regions already counted (a first call is many slices)
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.cause[n] != cause || g.row[n] < 0) continue;
    int32_t row = g.row[n];
    if (g.role[n] == NodeRole::kCpuWork) {
      // CPU work of a one-time first call: the call stands for all of it.
      const int32_t first = EnclosingFirstCall(ctx.trace(), g.first_calls, row);
      if (first < 0 || !seen.insert(first).second) continue;
      row = first;
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
    f.per_step[0].second += ev.dur[row] / 1000.0;
    AccumulateNumber(&f, "calls", 1);
    AccumulateNumber(&f, "call_us", ev.dur[row] / 1000.0);
    AddEvent(&f, std::string(ctx.Name(row)), 1, ev.dur[row] / 1000.0);
  }
  for (auto& [step, f] : by_step) {
    std::sort(
        f.top_events.begin(), f.top_events.end(),
        [](const EvidenceEvent& a, const EvidenceEvent& b) { return a.total_us > b.total_us; });
  }
  return by_step;
}

void DetectColdStart(const RuleContext& ctx, const CausalGraph& g, const TimeBreakdown& time,
                     const RuleOptions& o, std::vector<Finding>* out) {
  const int64_t total = time.overall.total();
  // Cold calls on the critical path, by step.
  if (total <= 0 ||
      Share(time.overall, Cause::kColdStart) < o.Get("cold_start_share", 0.01) * total) {
    return;
  }
  for (auto& [step, f] : CallsByStep(ctx, g, Cause::kColdStart, "TTA015", "cold-start")) {
    AddText(&f, "detail",
            "one-time: " + FormatNumber("%.0f", f.evidence["calls"].number) +
                " call(s) load kernels lazily, create the CUDA context or a library's "
                "workspace, or run an op for the first time (" +
                FormatNumber("%.1f ms", f.evidence["call_us"].number / 1000.0) + ", longest " +
                f.top_events.front().name +
                "); they happen once per process, not every step: profile after a warm-up, "
                "e.g. schedule(wait=1, warmup=1, active=3)");
    out->push_back(std::move(f));
  }
}

void DetectAllocatorPath(const RuleContext& ctx, const CausalGraph& g, const TimeBreakdown& time,
                         const RuleOptions& o, std::vector<Finding>* out) {
  const int64_t total = time.overall.total();
  const int64_t on_path = Share(time.overall, Cause::kAllocator);
  if (total <= 0 || !ctx.has_gpu() || on_path < o.Get("allocator_path_share", 0.01) * total) {
    return;
  }
  // A few calls are warm-up (first allocations); churn repeats.
  int64_t calls = 0;
  for (size_t n = 0; n < g.size(); ++n) calls += g.cause[n] == Cause::kAllocator ? 1 : 0;
  if (calls < o.Get("allocator_path_min_calls", 8)) return;
  // Every allocator call of the analysed steps: with the caching allocator (or without
  // empty_cache) none of them would run.
  for (auto& [step, f] : CallsByStep(ctx, g, Cause::kAllocator, "TTA013", "critical-path")) {
    AddText(&f, "detail",
            FormatNumber("%.0f", f.evidence["calls"].number) +
                " allocator call(s) on the critical path (" +
                FormatNumber("%.1f%%", 100.0 * on_path / total) +
                " of it): keep PyTorch's caching allocator (no PYTORCH_NO_CUDA_MEMORY_CACHING, "
                "no torch.cuda.empty_cache() in the loop)");
    out->push_back(std::move(f));
  }
}

// TTA017: the CPU's per-op work (Python, the dispatcher, autocast casts, autograd, the launch
// calls) bounds the step while the GPU waits for it: CPU work and launches hold a large share of
// the critical path, GPU work a small one, and the kernels are short. One finding per region
// (forward / backward / optimizer / an annotated block / the step's eager ops), its rows the
// region's kernels; its what-if (what_if.cpp) is the region captured as a CUDA graph.
void DetectCpuOverheadPath(const RuleContext& ctx, const CausalGraph& g, const TimeBreakdown& time,
                           const RuleOptions& o, std::vector<Finding>* out) {
  const StepAttribution& all = time.overall;
  const int64_t total = all.total();
  if (total <= 0 || !ctx.has_gpu()) return;
  const int64_t launch = Share(all, Cause::kLaunch);
  const int64_t cpu = Share(all, Cause::kCpuWork);
  const int64_t gpu = all.gpu_ns();
  if (launch + cpu < o.Get("cpu_overhead_path_share", 0.3) * total) return;
  if (gpu > o.Get("cpu_overhead_max_gpu_share", 0.6) * total) return;
  const EventTable& ev = ctx.ev();
  // Bursts of kernels shorter than their launches are TTA007's (found before this runs): the
  // region's finding is the rest of its dispatch.
  // So are the optimizer step's and zero_grad's per-parameter kernels that TTA006 and TTA005
  // report (their regions' rows): their fixes come first.
  std::vector<uint8_t> in_bursts(ev.size(), 0), claimed_region(ev.size(), 0);
  for (const Finding& f : *out) {
    const RuleSpec* spec = FindRuleSpec(f.code);
    if (spec && spec->launch_burst_rows) {
      for (int32_t r : f.rows) in_bursts[r] = 1;
    } else if (spec && spec->per_parameter_rows) {
      for (int32_t r : f.rows) claimed_region[r] = 1;
    }
  }
  // Name classes, once per distinct name (the loops below visit every kernel).
  enum : uint8_t { kStep = 1, kOptimizer = 2, kHash = 4, kGraph = 8 };
  std::vector<uint8_t> cls(ctx.trace().strings.size(), 0);
  for (size_t id = 0; id < cls.size(); ++id) {
    const std::string_view n = ctx.trace().strings.Get(static_cast<StringId>(id));
    cls[id] = (StartsWith(n, "ProfilerStep#") ? kStep : 0) |
              (StartsWith(n, "Optimizer.") ? kOptimizer : 0) | (Contains(n, "#") ? kHash : 0) |
              (HasRuntimeFlag(n, kRuntimeGraphLaunch) ? kGraph : 0);
  }
  auto eligible = [&](size_t n) {  // a kernel a captured region would replay
    if (g.role[n] != NodeRole::kGpu || ev.kind[g.row[n]] != EventKind::kKernel) return false;
    const int32_t launch_row = ev.link[g.row[n]];
    return launch_row >= 0 && !(cls[ev.name[launch_row]] & kGraph) &&
           g.cause[n] != Cause::kCommunication;
  };
  std::vector<int64_t> durs;
  for (size_t n = 0; n < g.size(); ++n) {
    if (eligible(n)) durs.push_back(ev.dur[g.row[n]]);
  }
  if (durs.size() < o.Get("cpu_overhead_min_kernels", 16)) return;
  std::nth_element(durs.begin(), durs.begin() + durs.size() / 2, durs.end());
  const int64_t median = durs[durs.size() / 2];
  if (median > o.Get("cpu_overhead_max_median_kernel_us", 50) * 1000) return;
  // The region of a launch: the outermost annotation (or Optimizer.* op) around it below the
  // step, as its name id; else kBackward on a thread other than the steps', else kEager.
  constexpr int64_t kBackward = -1, kEager = -2;
  constexpr int64_t kClaimed = -3;  // inside a region TTA005 / TTA006 report
  auto region_of = [&](int32_t launch_row, int32_t launch_node) -> int64_t {
    int64_t annotation = kEager;
    for (int32_t p = ev.parent[launch_row], depth = 0; p >= 0 && depth < 4096;
         p = ev.parent[p], ++depth) {
      const uint8_t c = cls[ev.name[p]];
      if (c & kStep) break;
      if (claimed_region[p]) return kClaimed;
      if (ev.kind[p] == EventKind::kUserAnnotation || (c & kOptimizer)) annotation = ev.name[p];
    }
    if (annotation != kEager) return annotation;
    return launch_node >= 0 && !g.lanes[g.lane[launch_node]].main ? kBackward : kEager;
  };
  auto region_name = [&](int64_t key) -> std::string {
    if (key == kBackward) return "backward";
    if (key == kEager) return "the step's eager ops";
    const std::string_view n = ctx.trace().strings.Get(static_cast<StringId>(key));
    if (StartsWith(n, "Optimizer.step")) return "the optimizer step";
    if (StartsWith(n, "Optimizer.zero_grad")) return "zero_grad";
    return std::string(n);
  };
  // Per region and step: the raw finding and plain tallies (set as evidence at the end).
  struct StepTally {
    Finding f;
    int64_t kernels = 0, kernel_ns = 0, op_ns = 0;
    std::map<StringId, std::pair<int64_t, int64_t>> ops;  // op name -> (runs, CPU ns)
  };
  std::map<int64_t, std::map<int, StepTally>> regions;
  std::vector<uint8_t> op_seen(ev.size(), 0);
  for (size_t n = 0; n < g.size(); ++n) {
    if (!eligible(n) || in_bursts[g.row[n]]) continue;
    const int32_t launch_row = ev.link[g.row[n]];
    const int step = ctx.StepOf(ev.ts[launch_row]);
    if (step < 0) continue;
    const int32_t launch_node =
        static_cast<size_t>(launch_row) < g.node_of_row.size() ? g.node_of_row[launch_row] : -1;
    const int64_t key = region_of(launch_row, launch_node);
    if (key == kClaimed) continue;
    auto& by_step = regions[key];
    auto it = by_step.find(step);
    if (it == by_step.end()) {
      StepTally t;
      t.f = MakeRawFinding(ctx, "TTA017", step, ev.ts[launch_row], ev.end(g.row[n]), 0,
                           ctx.TopOp(launch_row), region_name(key));
      it = by_step.emplace(step, std::move(t)).first;
    }
    StepTally& t = it->second;
    t.f.rows.push_back(g.row[n]);
    t.f.start_ns = std::min(t.f.start_ns, ev.ts[launch_row]);
    t.f.end_ns = std::max(t.f.end_ns, ev.end(g.row[n]));
    // The detector's measure: the CPU time of the launch calls (the replay costs the rest).
    t.f.per_step[0].second += ev.dur[launch_row] / 1000.0;
    ++t.kernels;
    t.kernel_ns += ev.dur[g.row[n]];
    // The outermost framework op around the launch below any annotation or Python frame: the
    // op a user wrote (aten::linear rather than the aten::addmm inside it).
    int32_t op = -1;
    for (int32_t p = ev.parent[launch_row], depth = 0; p >= 0 && depth < 4096;
         p = ev.parent[p], ++depth) {
      if (ev.kind[p] != EventKind::kCpuOp || (cls[ev.name[p]] & kHash)) break;
      op = p;
    }
    if (op >= 0 && !op_seen[op]) {
      op_seen[op] = 1;
      auto& [runs, ns] = t.ops[ev.name[op]];
      ++runs;
      ns += ev.dur[op];
      t.op_ns += ev.dur[op];
    }
  }
  for (auto& [key, by_step] : regions) {
    const std::string name = region_name(key);
    for (auto& [step, t] : by_step) {
      Finding& f = t.f;
      for (const auto& [id, v] : t.ops) {
        AddEvent(&f, std::string(ctx.trace().strings.Get(id)), v.first, v.second / 1000.0);
      }
      std::sort(
          f.top_events.begin(), f.top_events.end(),
          [](const EvidenceEvent& a, const EvidenceEvent& b) { return a.total_us > b.total_us; });
      if (f.top_events.size() > 5) f.top_events.resize(5);
      std::string ops;
      for (size_t k = 0; k < f.top_events.size() && k < 3; ++k) {
        ops += (k ? ", " : "") + f.top_events[k].name +
               FormatNumber(" %.2f ms", f.top_events[k].total_us / 1000.0);
      }
      AddNumber(&f, "kernels", static_cast<double>(t.kernels));
      AddNumber(&f, "kernel_us", t.kernel_ns / 1000.0);
      AddNumber(&f, "op_cpu_us", t.op_ns / 1000.0);
      AddText(&f, "region", name);
      AddNumber(&f, "median_kernel_us", median / 1000.0);
      AddText(&f, "detail",
              "in " + name + ", " + FormatNumber("%.0f", static_cast<double>(t.kernels)) +
                  " kernels (" + FormatNumber("%.2f ms", t.kernel_ns / 1e6) +
                  " of GPU work, median kernel " + FormatNumber("%.1f us", median / 1000.0) +
                  ") wait for the CPU's per-op dispatch and launches; CPU work and launches are " +
                  FormatNumber("%.0f%%", 100.0 * (launch + cpu) / total) +
                  " of the critical path, GPU work " + FormatNumber("%.0f%%", 100.0 * gpu / total) +
                  (ops.empty() ? "" : "; most CPU time in " + ops) +
                  ". Capture it with CUDA graphs or torch.compile(mode=\"reduce-overhead\"), "
                  "use fewer, larger ops, or a bigger batch");
      out->push_back(std::move(f));
    }
  }
}

}  // namespace ttap

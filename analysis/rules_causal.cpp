// Detectors that read the causal model (causal_graph.h) rather than the raw events: launch-bound
// and allocator churn decided from the critical path (TTA007, TTA013), cold-start (TTA015) and
// trace-incomplete (TTA016).
// RunRules calls them after the graph is built; they append raw findings merged like the others.
#include <algorithm>
#include <map>

#include "analysis/rule_util.h"

namespace ttap {

namespace {

bool IsGraphLaunch(std::string_view n) { return Contains(n, "Graph"); }

// The launch calls that start GPU work (kernels, copies, memsets) by name, as HTA counts them.
bool IsWorkLaunchName(std::string_view n) {
  return Contains(n, "LaunchKernel") || Contains(n, "LaunchCooperativeKernel") ||
         n == "cuLaunchKernel" || n == "cuLaunchKernelEx" || n == "cudaMemcpyAsync" ||
         n == "cudaMemsetAsync" || n == "hipMemcpyAsync" || n == "hipMemsetAsync" ||
         n == "hipExtModuleLaunchKernel" || n == "hipModuleLaunchKernel";
}

int64_t Share(const StepAttribution& a, Cause c) { return a.ns[static_cast<int>(c)]; }

}  // namespace

void DetectTraceIncomplete(const RuleContext& ctx, const CausalGraph&, const TimeBreakdown&,
                           const RuleOptions& o, std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  int64_t launches = 0, unmatched = 0, gpu = 0;
  int32_t first = -1;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (IsGpuKind(ev.kind[i]) && ev.kind[i] != EventKind::kGpuSync) ++gpu;
    if (!IsLaunchKind(ev.kind[i]) || !IsWorkLaunchName(ctx.Name(i))) continue;
    ++launches;
    if (ev.link[i] < 0) {
      ++unmatched;
      if (first < 0) first = static_cast<int32_t>(i);
    }
  }
  const double min_launches = o.Get("trace_incomplete_min_launches", 20);
  const double min_share = o.Get("trace_incomplete_share", 0.5);
  if (launches < min_launches || unmatched < min_share * launches) return;
  const auto& steps = ctx.steps();
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
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.cause[n] != cause || g.row[n] < 0) continue;
    const int32_t row = g.row[n];
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
            FormatNumber("%.0f", f.evidence["calls"].number) +
                " runtime call(s) load kernels lazily or run for the first time (" +
                FormatNumber("%.1f ms", f.evidence["call_us"].number / 1000.0) + ", longest " +
                f.top_events.front().name +
                "): the first iterations are not representative; profile after a warm-up, e.g. "
                "schedule(wait=1, warmup=1, active=3)");
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

void DetectLaunchBoundPath(const RuleContext& ctx, const CausalGraph& g, const TimeBreakdown& time,
                           const RuleOptions& o, std::vector<Finding>* out) {
  const StepAttribution& all = time.overall;
  const int64_t total = all.total();
  if (total <= 0 || !ctx.has_gpu()) return;
  // The critical path runs through launch calls (and the dispatch around them) while the GPU
  // waits: launches a large share, GPU work a small one, kernels short.
  const int64_t launch = Share(all, Cause::kLaunch);
  const int64_t gpu = all.gpu_ns();
  if (launch < o.Get("launch_path_share", 0.2) * total) return;
  if (gpu > o.Get("launch_path_max_gpu_share", 0.5) * total) return;
  const EventTable& ev = ctx.ev();
  std::vector<int64_t> durs;
  std::vector<int32_t> rows;
  for (size_t n = 0; n < g.size(); ++n) {
    if (g.role[n] != NodeRole::kGpu || ev.kind[g.row[n]] != EventKind::kKernel) continue;
    const int32_t launch_row = ev.link[g.row[n]];
    if (launch_row < 0 || IsGraphLaunch(ctx.Name(launch_row))) continue;
    durs.push_back(ev.dur[g.row[n]]);
    rows.push_back(g.row[n]);
  }
  if (rows.size() < 16) return;
  std::nth_element(durs.begin(), durs.begin() + durs.size() / 2, durs.end());
  const int64_t median = durs[durs.size() / 2];
  if (median > o.Get("launch_path_max_median_kernel_us", 50) * 1000) return;
  const auto& steps = ctx.steps();
  Finding f = MakeRawFinding(ctx, "TTA007", steps.empty() ? -1 : 0, ev.ts[rows.front()],
                             ev.end(rows.back()), launch / 1000.0, -1, "critical-path");
  f.rows = std::move(rows);
  for (size_t s = 1; s < steps.size(); ++s) f.per_step.emplace_back(steps[s].number, 0.0);
  AddNumber(&f, "kernels", static_cast<double>(f.rows.size()));
  AddNumber(&f, "median_kernel_us", median / 1000.0);
  AddNumber(&f, "launch_share", static_cast<double>(launch) / total);
  AddText(&f, "detail",
          "the critical path runs through kernel launches for " +
              FormatNumber("%.0f%%", 100.0 * launch / total) + " of the run while GPU work is " +
              FormatNumber("%.0f%%", 100.0 * gpu / total) + " (" +
              FormatNumber("%.0f", static_cast<double>(f.rows.size())) + " kernels, median " +
              FormatNumber("%.1f us", median / 1000.0) +
              "); capture the loop with CUDA graphs or torch.compile(mode=\"reduce-overhead\")");
  out->push_back(std::move(f));
}

}  // namespace ttap

// TTA017 cpu-overhead-bound: the CPU's per-op dispatch and launches bound the step while the GPU
// waits. Its detector; registered in rule_registry.cpp, documented in
// docs/antipatterns.md#tta017-cpu-overhead-bound.
#include "analysis/base/median.h"
#include "analysis/rules/causal_detectors.h"

namespace ttap {

// The causal family's helpers it uses (causal_detectors.h).
using causal_detail::Share;

// The op torch.compile writes around each compiled frame it runs ("Torch-Compiled Region: 0/0":
// frame 0, its first compilation); a frame resumed after a graph break is a region nested in it.
constexpr std::string_view kCompiledRegionPrefix = "Torch-Compiled Region";

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
  enum : uint8_t { kStep = 1, kOptimizer = 2, kHash = 4, kGraph = 8, kCompiled = 16 };
  std::vector<uint8_t> cls(ctx.trace().strings.size(), 0);
  for (size_t id = 0; id < cls.size(); ++id) {
    const std::string_view n = ctx.trace().strings.Get(static_cast<StringId>(id));
    cls[id] = (StartsWith(n, "ProfilerStep#") ? kStep : 0) |
              (StartsWith(n, "Optimizer.") ? kOptimizer : 0) | (Contains(n, "#") ? kHash : 0) |
              (HasRuntimeFlag(n, kRuntimeGraphLaunch) ? kGraph : 0) |
              (StartsWith(n, kCompiledRegionPrefix) ? kCompiled : 0);
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
  const int64_t median = Median(std::move(durs));
  if (median > o.Get("cpu_overhead_max_median_kernel_us", 50) * 1000) return;
  // A compiled function that replays CUDA graphs (mode="reduce-overhead") is captured already:
  // its eager launches (between its graphs) are regions of their own, not the function's.
  std::vector<uint8_t> replays_graph(ev.size(), 0);
  for (size_t r = 0; r < ev.size(); ++r) {
    if (!(cls[ev.name[r]] & kGraph) || ev.kind[r] == EventKind::kKernel) continue;
    for (int32_t p = ev.parent[r], depth = 0; p >= 0 && depth < 4096; p = ev.parent[p], ++depth) {
      if (cls[ev.name[p]] & kCompiled) replays_graph[p] = 1;
    }
  }
  // The region of a launch: the outermost annotation (or Optimizer.* op, or compiled function
  // that replays no graph) around it below the step, as its name id; else kBackward on a thread
  // other than the steps', else kEager. A compiled function is one region with its graph breaks:
  // the fix (no breaks, reduce-overhead) captures it whole, the Python between its graphs too.
  constexpr int64_t kBackward = -1, kEager = -2;
  constexpr int64_t kClaimed = -3;  // inside a region TTA005 / TTA006 report
  // *annotation_row: that annotation's row (-1 for backward and eager ops).
  auto region_of = [&](int32_t launch_row, int32_t launch_node,
                       int32_t* annotation_row) -> int64_t {
    int64_t annotation = kEager;
    *annotation_row = -1;
    for (int32_t p = ev.parent[launch_row], depth = 0; p >= 0 && depth < 4096;
         p = ev.parent[p], ++depth) {
      const uint8_t c = cls[ev.name[p]];
      if (c & kStep) break;
      if (claimed_region[p]) return kClaimed;
      if (ev.kind[p] == EventKind::kUserAnnotation || (c & kOptimizer) ||
          ((c & kCompiled) && !replays_graph[p])) {
        annotation = ev.name[p];
        *annotation_row = p;
      }
    }
    if (annotation != kEager) return annotation;
    return launch_node >= 0 && !g.lanes[g.LaneOf(launch_node)].main ? kBackward : kEager;
  };
  auto region_name = [&](int64_t key) -> std::string {
    if (key == kBackward) return "backward";
    if (key == kEager) return "the step's eager ops";
    const std::string_view n = ctx.trace().strings.Get(static_cast<StringId>(key));
    if (StartsWith(n, "Optimizer.step")) return "the optimizer step";
    if (StartsWith(n, "Optimizer.zero_grad")) return "zero_grad";
    if (StartsWith(n, kCompiledRegionPrefix))
      return "the compiled function (" + std::string(n) + ")";
    return std::string(n);
  };
  // Graph breaks: each compiled frame resumed inside an outer one (Dynamo's resume function after
  // a break runs as a region nested in the frame it broke), counted at the outermost.
  std::map<int32_t, int> breaks_in;  // outermost compiled region's row -> regions nested in it
  for (size_t r = 0; r < ev.size(); ++r) {
    if (ev.kind[r] != EventKind::kCpuOp || !(cls[ev.name[r]] & kCompiled)) continue;
    int32_t outer = -1;
    for (int32_t p = ev.parent[r], depth = 0; p >= 0 && depth < 4096; p = ev.parent[p], ++depth) {
      if (cls[ev.name[p]] & kStep) break;
      if (cls[ev.name[p]] & kCompiled) outer = p;
    }
    if (outer >= 0) ++breaks_in[outer];
  }
  // Per region and step: the raw finding and plain tallies (set as evidence at the end).
  struct StepTally {
    Finding f;
    int64_t kernel_ns = 0, op_ns = 0;
    std::set<int32_t> annotations;  // the region's annotation rows in this step
    std::map<StringId, std::pair<int64_t, int64_t>> ops;  // op name -> (runs, CPU ns)
    std::vector<int64_t> kernel_durs;                     // its kernels' durations
  };
  std::map<int64_t, std::map<int, StepTally>> regions;
  std::vector<uint8_t> op_seen(ev.size(), 0);
  // Every kernel's launch with its region, in the order of the launching threads: a region's
  // runs (occurrences) are its launches with no other region's launch between them. A step
  // that runs the loop body many times (ten iterations in one ProfilerStep) runs each region
  // many times; the what-if captures each run, not what lies between two of them.
  struct LaunchOfRegion {
    uint32_t lane;
    int step;
    int64_t ts, end, key;
  };
  std::vector<LaunchOfRegion> launches;
  for (size_t n = 0; n < g.size(); ++n) {
    if (!eligible(n)) continue;
    const int32_t launch_row = ev.link[g.row[n]];
    const int step = ctx.StepOf(ev.ts[launch_row]);
    if (step < 0) continue;
    const int32_t launch_node =
        static_cast<size_t>(launch_row) < g.node_of_row.size() ? g.node_of_row[launch_row] : -1;
    int32_t annotation_row = -1;
    const int64_t key = region_of(launch_row, launch_node, &annotation_row);
    if (launch_node >= 0) {
      launches.push_back({g.LaneOf(launch_node), step, ev.ts[launch_row], ev.end(launch_row), key});
    }
    if (in_bursts[g.row[n]]) continue;
    // An op that synchronizes inside cannot be captured: its launches are the sync's (TTA002).
    // A step that captures a CUDA graph replayed in other steps runs the captured ops eagerly
    // first: one-time work (RuleContext::CaptureStep).
    if (ctx.CaptureStep(step) || ctx.UnderSyncingOp(launch_row)) continue;
    // A one-time first call (its set-up, TTA015's) is not the steady state's dispatch: its
    // launches and CPU time stay out of the region's tally.
    if (!ctx.first_calls().empty() && ctx.InFirstCall(launch_row)) continue;
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
    // An annotated region (an Optimizer.step, a record_function block) is captured whole: its
    // row tells the what-if to take its CPU work before the first launch and after the last.
    if (annotation_row >= 0 && !t.annotations.count(annotation_row)) {
      t.annotations.insert(annotation_row);
      t.f.rows.push_back(annotation_row);
    }
    t.f.start_ns = std::min(t.f.start_ns, ev.ts[launch_row]);
    t.f.end_ns = std::max(t.f.end_ns, ev.end(g.row[n]));
    // The detector's measure: the CPU time of the launch calls (the replay costs the rest).
    t.f.per_step[0].second += ev.dur[launch_row] / 1000.0;
    t.kernel_ns += ev.dur[g.row[n]];
    t.kernel_durs.push_back(ev.dur[g.row[n]]);
    // The outermost framework op around the launch below any annotation or Python frame: the
    // op a user wrote (aten::linear rather than the aten::addmm inside it).
    int32_t op = -1;
    for (int32_t p = ev.parent[launch_row], depth = 0; p >= 0 && depth < 4096;
         p = ev.parent[p], ++depth) {
      if (ev.kind[p] != EventKind::kCpuOp || (cls[ev.name[p]] & (kHash | kCompiled))) break;
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
  std::sort(launches.begin(), launches.end(), [](const LaunchOfRegion& a, const LaunchOfRegion& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.ts < b.ts;
  });
  for (size_t i = 0; i < launches.size();) {
    size_t j = i + 1;
    int64_t end = launches[i].end;
    while (j < launches.size() && launches[j].lane == launches[i].lane &&
           launches[j].step == launches[i].step && launches[j].key == launches[i].key) {
      end = std::max(end, launches[j].end);
      ++j;
    }
    auto region = regions.find(launches[i].key);
    if (region != regions.end()) {
      auto tally = region->second.find(launches[i].step);
      if (tally != region->second.end())
        tally->second.f.occurrences.emplace_back(launches[i].ts, end);
    }
    i = j;
  }
  for (auto& [key, by_step] : regions) {
    const std::string name = region_name(key);
    // The detail describes the region over the steps it runs in (the merged finding keeps one
    // step's text): per step where there are several.
    const double n_steps = static_cast<double>(by_step.size());
    const char* a_step = by_step.size() > 1 ? " a step" : "";
    std::map<StringId, std::pair<int64_t, int64_t>> all_ops;
    std::map<StringId, size_t> steps_of_op;
    std::vector<int64_t> all_durs;
    int64_t all_kernel_ns = 0;
    for (const auto& [step, t] : by_step) {
      for (const auto& [id, v] : t.ops) {
        all_ops[id].first += v.first;
        all_ops[id].second += v.second;
        ++steps_of_op[id];
      }
      all_durs.insert(all_durs.end(), t.kernel_durs.begin(), t.kernel_durs.end());
      all_kernel_ns += t.kernel_ns;
    }
    // The ops of most of its steps: over three steps or more, one that runs in a minority of
    // them is no step's dispatch (Adam's first step creating its state: 40 zeros_like calls of
    // 1.1 ms that were "most CPU time a step" of five).
    std::vector<std::pair<int64_t, StringId>> by_cpu;
    for (const auto& [id, v] : all_ops) {
      if (by_step.size() >= 3 && 2 * steps_of_op[id] <= by_step.size()) continue;
      by_cpu.emplace_back(v.second, id);
    }
    std::sort(by_cpu.begin(), by_cpu.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string ops;
    for (size_t k = 0; k < by_cpu.size() && k < 3; ++k) {
      ops += (k ? ", " : "") + std::string(ctx.trace().strings.Get(by_cpu[k].second)) +
             FormatNumber(" %.2f ms", by_cpu[k].first / 1e6 / n_steps);
    }
    // A compiled function's graph breaks, a run: each splits it into graphs launched op by op,
    // and keeps reduce-overhead's CUDA graphs from capturing it whole.
    int runs = 0, breaks = 0;
    for (const auto& [step, t] : by_step) {
      for (int32_t a : t.annotations) {
        if (!(cls[ev.name[a]] & kCompiled)) continue;
        ++runs;
        auto it = breaks_in.find(a);
        if (it != breaks_in.end()) breaks += it->second;
      }
    }
    const double breaks_per_run = runs ? static_cast<double>(breaks) / runs : 0.0;
    const double kernels = static_cast<double>(all_durs.size()) / n_steps;
    const int64_t region_median = Median(std::move(all_durs));
    const bool one = kernels < 1.5;
    const std::string detail =
        "in " + name + ", " + FormatNumber("%.0f", kernels) + (one ? " kernel" : " kernels") +
        a_step + " (" + FormatNumber("%.2f ms", all_kernel_ns / 1e6 / n_steps) + " of GPU work" +
        (one ? "" : ", median kernel " + FormatNumber("%.1f us", region_median / 1000.0)) +
        (one ? ") waits" : ") wait") + " for the CPU's per-op dispatch and launches; " +
        (ctx.warm_part_only() ? "the warm part's" : "the run's") + " critical path is " +
        FormatNumber("%.0f%%", 100.0 * (launch + cpu) / total) + " CPU work and launches, " +
        FormatNumber("%.0f%%", 100.0 * gpu / total) + " GPU work" +
        (ops.empty() ? "" : "; most CPU time" + std::string(a_step) + " in " + ops) +
        (breaks_per_run >= 0.5
             ? FormatNumber("; %.0f graph break", breaks_per_run) +
                   (breaks_per_run >= 1.5 ? "s" : "") +
                   " a call split it into graphs launched one by one, with Python between them. "
                   "Remove the graph breaks (torch._dynamo.explain lists them; fullgraph=True "
                   "makes each an error) and compile with mode=\"reduce-overhead\" so that one "
                   "CUDA graph replays it, or use a bigger batch"
         : ctx.replays_graphs()  // the advice is not "capture CUDA graphs"
             ? ". The run replays CUDA graphs already, but these ops run eagerly outside them: "
               "capture them too (a full rather than piecewise capture, the region without "
               "graph breaks), use fewer, larger ops, or a bigger batch"
             : ". Capture it with CUDA graphs or torch.compile(mode=\"reduce-overhead\"), "
               "use fewer, larger ops, or a bigger batch");
    for (auto& [step, t] : by_step) {
      Finding& f = t.f;
      std::sort(f.occurrences.begin(), f.occurrences.end());
      for (const auto& [id, v] : t.ops) {
        AddEvent(&f, std::string(ctx.trace().strings.Get(id)), v.first, v.second / 1000.0);
      }
      std::sort(
          f.top_events.begin(), f.top_events.end(),
          [](const EvidenceEvent& a, const EvidenceEvent& b) { return a.total_us > b.total_us; });
      if (f.top_events.size() > 5) f.top_events.resize(5);
      AddNumber(&f, "kernels", static_cast<double>(t.kernel_durs.size()));
      AddNumber(&f, "kernel_us", t.kernel_ns / 1000.0);
      AddNumber(&f, "op_cpu_us", t.op_ns / 1000.0);
      AddText(&f, "region", name);
      if (breaks_per_run >= 0.5) AddMean(&f, "graph_breaks_per_call", breaks_per_run);
      AddMean(&f, "median_kernel_us", Median(std::move(t.kernel_durs)) / 1000.0);
      AddText(&f, "detail", detail);
      out->push_back(std::move(f));
    }
  }
}

}  // namespace ttap

// TTA007 launch-bound: kernels shorter than their launches, the GPU idle between them. Its
// detector; registered in rule_registry.cpp, documented in
// docs/antipatterns.md#tta007-launch-bound.
#include "analysis/rules/gpu_detectors.h"

namespace ttap {

// The gpu family's helpers it uses (gpu_detectors.h).
using gpu_detail::IsKernelLaunch;
using gpu_detail::ShortKernelName;

// TTA007: bursts of >= launch_bound_min_burst consecutive kernels, each shorter than its own
// launch call (HTA's short kernel), with the GPU idle between them. Lost: the GPU idle gaps
// between consecutive kernels of such bursts (gaps above launch_bound_max_gap_us end a burst:
// longer stalls are another rule's business).
void DetectLaunchBound(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("launch_bound_share", 0.05);
  // Bursts whose launching takes this share of the step on the CPU are candidates too: the
  // replay decides what CUDA graphs would save (under 1% of the run: a hint).
  const double min_cpu_share = o.Get("launch_bound_cpu_share", 0.01);
  const size_t min_burst = static_cast<size_t>(std::max(2.0, o.Get("launch_bound_min_burst", 8)));
  const int64_t max_gap_ns = static_cast<int64_t>(o.Get("launch_bound_max_gap_us", 200) * 1000);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    // A step that captures a CUDA graph the others replay runs its ops eagerly once first.
    if (ctx.CaptureStep(static_cast<int>(s))) continue;
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    struct Burst {
      std::vector<uint32_t> rows;
      int64_t idle_ns = 0;
      int64_t last_end = 0;
    };
    // The bursts of one step, grouped by the user-level op that launched most of each burst's
    // kernels: zero_grad's, the optimizer's and the model's own bursts are separate findings, so
    // one that is another finding's symptom is costed as such and the others on their own.
    struct Group {
      int64_t lost_ns = 0, kernels = 0, bursts = 0, kernel_ns = 0, launch_ns = 0;
      int64_t cpu_span_ns = 0;  // the CPU time from each burst's first launch to its last
      int64_t first = INT64_MAX, last = INT64_MIN;
      int32_t op = -1;
      std::vector<int32_t> rows;
      std::map<std::string, std::pair<int64_t, double>> kernel_names;  // name -> (count, us)
    };
    std::map<std::string, Group> groups;
    std::map<int32_t, Burst> open;  // per device
    auto close = [&](Burst& b) {
      if (b.rows.size() >= min_burst) {
        std::map<std::string, std::pair<int64_t, int32_t>> ops;  // cause -> (kernels, op row)
        for (uint32_t r : b.rows) {
          const int32_t launch = ctx.LaunchOf(r);
          const int32_t top = ctx.TopOp(launch);
          const int32_t op = top >= 0 ? top : launch;
          auto& e = ops[CauseKey(ctx, op)];
          if (e.first++ == 0) e.second = op;
        }
        auto most = std::max_element(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
          return a.second.first < b.second.first;
        });
        Group& g = groups[most->first];
        if (g.op < 0) g.op = most->second.second;
        ++g.bursts;
        g.lost_ns += b.idle_ns;
        const int32_t first_launch = ctx.LaunchOf(b.rows.front());
        const int32_t last_launch = ctx.LaunchOf(b.rows.back());
        if (first_launch >= 0 && last_launch >= 0) {
          g.cpu_span_ns += std::max<int64_t>(0, ev.end(last_launch) - ev.ts[first_launch]);
        }
        g.first = std::min(g.first, ev.ts[b.rows.front()]);
        g.last = std::max(g.last, b.last_end);
        for (uint32_t r : b.rows) {
          g.rows.push_back(static_cast<int32_t>(r));
          ++g.kernels;
          g.kernel_ns += ev.dur[r];
          g.launch_ns += ev.dur[ctx.LaunchOf(r)];
          auto& k = g.kernel_names[ShortKernelName(ctx.Name(r))];
          k.first++;
          k.second += ev.dur[r] / 1000.0;
        }
      }
      b.rows.clear();
      b.idle_ns = 0;
    };
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kKernel) continue;
      const int32_t device = ctx.trace().tracks[ev.track[i]].device;
      Burst& b = open[device];
      const int32_t launch = ctx.LaunchOf(i);
      // A kernel of an op that synchronizes inside is not what a graph would capture (TTA002's);
      // under CUDA_LAUNCH_BLOCKING=1 every launch outlasts its kernel by waiting for it (TTA002).
      const bool is_short = launch >= 0 && IsKernelLaunch(ctx.RuntimeFlags(launch)) &&
                            ev.dur[i] < ev.dur[launch] && !ctx.UnderSyncingOp(launch) &&
                            !ctx.BlockingLaunch(static_cast<uint32_t>(launch));
      if (!is_short) {
        close(b);
        continue;
      }
      if (!b.rows.empty()) {
        if (ev.ts[i] - b.last_end > max_gap_ns) {
          close(b);
        } else if (ev.ts[i] > b.last_end) {
          b.idle_ns += ctx.GpuIdle(b.last_end, ev.ts[i]);
        }
      }
      if (b.rows.empty()) b.last_end = ev.end(i);
      b.rows.push_back(i);
      b.last_end = std::max(b.last_end, ev.end(i));
    }
    for (auto& [d, b] : open) close(b);
    // The bursts cost the step their GPU idle time where the GPU waits for them, or the CPU
    // time that launches them where queued GPU work hides that wait but the CPU's path runs
    // through them (the replay decides which, and how much CUDA graphs would save).
    for (auto& [key, g] : groups) {
      if (g.kernels == 0 || step.duration() <= 0 ||
          (g.lost_ns < min_share * static_cast<double>(step.duration()) &&
           g.cpu_span_ns < min_cpu_share * static_cast<double>(step.duration()))) {
        continue;
      }
      Finding f = MakeRawFinding(ctx, "TTA007", static_cast<int>(s), g.first, g.last,
                                 g.lost_ns / 1000.0, g.op, "launch-bound " + key);
      f.rows = std::move(g.rows);
      AddNumber(&f, "short_kernels", static_cast<double>(g.kernels));
      AddNumber(&f, "bursts", static_cast<double>(g.bursts));
      AddNumber(&f, "gpu_idle_between_us", g.lost_ns / 1000.0);
      AddNumber(&f, "kernel_us", g.kernel_ns / 1000.0);
      AddNumber(&f, "launch_us", g.launch_ns / 1000.0);
      const std::string op_name = g.op >= 0 ? std::string(ctx.Name(g.op)) : "";
      if (!op_name.empty()) AddText(&f, "op", op_name);
      for (auto& [name, e] : g.kernel_names) AddEvent(&f, name, e.first, e.second);
      out->push_back(std::move(f));
    }
  }
}

// From the merged counts (every step's bursts, not one step's): per step where it occurs.
std::string LaunchBoundMessage(const Finding& f, const std::string& /*detected*/,
                               const std::string& saving) {
  const double kernels = Num(f, "short_kernels");
  const double steps = std::max(1.0, Num(f, "steps_affected"));
  const bool whole_run = OfWholeRun(f);
  const std::string per = whole_run ? " in " + TheRun(f) : steps > 1 ? " a step" : " in its step";
  const double n = std::max(1.0, kernels);
  const std::string op = TextOf(f, "op");
  return std::string("kernels shorter than their launches, the GPU idle between them: ") +
         FormatNumber("%.0f", kernels / steps) + " kernels in " +
         FormatNumber("%.0f", Num(f, "bursts") / steps) + " burst(s)" + per + ", average " +
         FormatNumber("%.1f", Num(f, "kernel_us") / n) + " us on the GPU but " +
         FormatNumber("%.1f", Num(f, "launch_us") / n) + " us to launch; the GPU idles " +
         FormatNumber("%.1f", Num(f, "gpu_idle_between_us") / n) + " us after each, " +
         FormatMs(Num(f, "gpu_idle_between_us") / steps) + per +
         (op.empty() ? "" : " (launched by " + op + ")") + saving;
}

}  // namespace ttap

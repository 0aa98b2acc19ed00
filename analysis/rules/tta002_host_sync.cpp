// TTA002 host-sync: the CPU waits for the GPU inside the step, then the GPU drains. Its detector
// and message; registered in rule_registry.cpp, documented in
// docs/antipatterns.md#tta002-host-sync.
#include "analysis/rules/host_detectors.h"

namespace ttap {

// The host family's helpers it uses (host_detectors.h).
using host_detail::IsPageableD2H;
using host_detail::IssuedByProfiler;
using host_detail::ProfilerStopSync;

void DetectHostSync(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("host_sync_share", 0.01);
  const int64_t min_drain_ns = static_cast<int64_t>(o.Get("host_sync_min_drain_us", 10) * 1000);
  const int64_t blind_wait_ns =
      static_cast<int64_t>(o.Get("trace_incomplete_min_wait_us", kBlindSyncTailNs / 1000.0) * 1000);
  // Launch rows of device-to-host copies that block the CPU like a synchronize: into pageable
  // memory, or by a call that returns only once its copy is done (cudaMemcpy; ROCm's
  // hipMemcpyWithStream, which is how `.item()` reads a value there).
  std::vector<char> pageable_launch(ev.size(), 0);
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::kMemcpy || ev.link[i] < 0) continue;
    const std::string_view name = ctx.Name(i);
    const bool blocking_call =
        (ctx.RuntimeFlags(ev.link[i]) & (kRuntimeSyncCopy | kRuntimeAnyHostCopy)) != 0;
    if (IsPageableD2H(name) || (IsD2H(name) && blocking_call)) {
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
    std::set<int32_t> synced_in;                             // ops with a synchronize call counted
    std::set<int32_t> copy_waits;       // ops whose blocking copy counts for want of a synchronize
    int64_t drained_until = INT64_MIN;  // GPU idle counted so far (a read's calls share it)
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsLaunchKind(ev.kind[i])) continue;
      // Under CUDA_LAUNCH_BLOCKING=1 every launch is a synchronize: the CPU prepares the next
      // kernel only once the last one ended, so the GPU idles for all of the CPU's work.
      const bool blocking_launch = ctx.BlockingLaunch(i);
      if (!ctx.IsSyncCall(i) && !pageable_launch[i] && !blocking_launch) continue;
      // A sync that goes on waiting a millisecond or more after the GPU's last recorded activity
      // waited for activity the trace lacks (a replayed graph's dropped kernels): TTA016's, whose
      // time nothing here can judge.
      if (ctx.IsSyncCall(i) && ctx.WaitAfterLastGpuActivity(
                                   ev.ts[i], std::min(ev.end(i), step.end_ns)) >= blind_wait_ns) {
        continue;
      }
      const std::string_view name = ctx.Name(i);
      if (IssuedByProfiler(ctx, i) || ProfilerStopSync(ctx, i, last_launch)) continue;
      const int64_t sync_end = ev.end(i);
      // A sync at the step's end drains into the next step: the GPU waits there for the CPU's
      // first launches, which it would otherwise have queued while the GPU finished.
      const int64_t resume_limit =
          s + 1 < ctx.steps().size() ? ctx.steps()[s + 1].end_ns : step.end_ns;
      // In a run without steps, no GPU work after the wait is the run's tail (a server polling
      // for requests after its last batch), not a drain the wait caused: only the wait counts.
      // (A step's last sync drains into the next step, recorded or not.)
      const bool gpu_after = step.number >= 0 || ctx.GpuBusy(sync_end, resume_limit) > 0;
      const int64_t resume = gpu_after ? ctx.NextGpuStart(sync_end, resume_limit) : sync_end;
      // The drain: GPU idle from the moment the CPU started waiting until new work arrives; in
      // the next step, at most the GPU work the wait let finish first (without the sync, the
      // next step's CPU work overlaps only that, not its own data loading).
      const int64_t in_step_end = std::min(resume, step.end_ns);
      const int64_t waited_busy = ctx.GpuBusy(ev.ts[i], sync_end);
      const int64_t next_step_part =
          resume > in_step_end
              ? std::min(ctx.GpuIdle(in_step_end, resume), std::max<int64_t>(0, waited_busy))
              : 0;
      // After the call returns, the GPU idles until the CPU launches again; without the wait the
      // CPU would have done that work while the GPU ran what was queued, so the drain counts at
      // most that queued work after the return: a sync on a GPU already idle costs its own call,
      // not the Python that follows it (nor a compile of seconds before the next kernel).
      const int64_t wait_idle = ctx.GpuIdle(ev.ts[i], std::min(sync_end, in_step_end));
      const int64_t drain_cap = wait_idle + std::max<int64_t>(0, waited_busy);
      const int64_t drain =
          std::min(drain_cap, ctx.GpuIdle(ev.ts[i], in_step_end) + next_step_part);
      // What it adds to the step's drain: a read's copy and its sync (an .item()), or syncs
      // before the GPU resumed, share one idle stretch, counted once.
      const int64_t drain_from = std::max(ev.ts[i], drained_until);
      const int64_t new_drain =
          std::min(drain, ctx.GpuIdle(drain_from, std::max(drain_from, in_step_end)) +
                              (drain_from <= ev.ts[i] ? next_step_part : 0));
      // The host work of the statement that reads the value (logging, a metric): the fix (read
      // it every N steps) takes it out of the step too, even where the GPU has nothing to drain.
      // (A frame beyond the step is the loop around it, not a statement in it: a serving
      // engine's busy loop holds every step's syncs.)
      int32_t statement = HostStatementOf(ctx.trace(), static_cast<int32_t>(i));
      if (statement >= 0 && (ev.ts[statement] < step.start_ns || ev.end(statement) > step.end_ns)) {
        statement = -1;
      }
      const int64_t statement_ns =
          statement >= 0 ? std::max<int64_t>(0, ev.dur[statement] - ev.dur[i]) : 0;
      if (blocking_launch) {
        // One cause for the run's every launch, whatever op launched it: the setting.
        const int32_t top = ctx.TopOp(static_cast<int32_t>(i));
        Finding& f = CauseFinding(&by_cause, ctx, "TTA002", static_cast<int>(s), ev.ts[i], resume,
                                  top >= 0 ? top : static_cast<int32_t>(i), "launch-blocking");
        if (f.rows.empty()) {
          f.fix.clear();  // an environment variable, not an edit of the code
          AddText(&f, "blocking_launches", "yes");
        }
        f.rows.push_back(static_cast<int32_t>(i));
        drained_until = std::max(drained_until, in_step_end);
        f.per_step[0].second += new_drain / 1000.0;
        AccumulateNumber(&f, "syncs", 1);
        AccumulateNumber(&f, "gpu_drain_us", new_drain / 1000.0);
        AddText(&f, "sync_call", std::string(name));
        AddEvent(&f, std::string(name), 1, ev.dur[i] / 1000.0);
        continue;
      }
      if (drain < min_drain_ns && statement_ns < min_drain_ns) continue;
      int32_t op = ctx.TopOp(static_cast<int32_t>(i));
      int32_t anchor = op >= 0 ? op : static_cast<int32_t>(i);
      // Prefer the innermost op that explains the sync (aten::item, aten::nonzero, ...).
      auto explains = [&](int32_t p) {
        std::string_view pn = ctx.Name(p);
        return pn == "aten::item" || pn == "aten::_local_scalar_dense" || pn == "aten::nonzero" ||
               pn == "aten::to" || pn == "aten::cpu" || pn == "aten::copy_" ||
               pn == "aten::is_nonzero" || ctx.IsSyncCall(p);
      };
      for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 64; p = ev.parent[p], ++g) {
        if (explains(p)) anchor = p;
      }
      std::string key = CauseKey(ctx, anchor);
      Finding& f = CauseFinding(&by_cause, ctx, "TTA002", static_cast<int>(s), ev.ts[i], resume,
                                anchor, key);
      f.rows.push_back(static_cast<int32_t>(i));
      drained_until = std::max(drained_until, in_step_end);
      f.per_step[0].second += new_drain / 1000.0;
      if (statement >= 0 && statements_of[key].insert(statement).second) {
        AccumulateNumber(&f, "host_statement_us", statement_ns / 1000.0);
      }
      // The op the sync happens in, where it is not the anchor itself (a sparse matmul's
      // aten::_coalesce reading back its size): named beside the anchor.
      int32_t inner = ev.parent[i];
      while (inner >= 0 && ev.kind[inner] != EventKind::kCpuOp) inner = ev.parent[inner];
      if (inner >= 0 && inner != anchor && !explains(inner) && !UnderAnyOf(ev, anchor, {inner}) &&
          TextOf(f, "inner_op").empty()) {
        AddText(&f, "inner_op", std::string(ctx.Name(inner)));
      }
      // Counted per wait: each synchronize call, and a blocking copy that no synchronize in the
      // same op follows (an .item() is its copy and its sync: one read).
      const int32_t owner = inner >= 0 ? inner : anchor;
      if (ctx.IsSyncCall(i)) {
        if (copy_waits.erase(owner)) AccumulateNumber(&f, "syncs", -1);
        synced_in.insert(owner);
        AccumulateNumber(&f, "syncs", 1);
      } else if (!synced_in.count(owner) && copy_waits.insert(owner).second) {
        AccumulateNumber(&f, "syncs", 1);
      }
      AccumulateNumber(&f, "gpu_drain_us", new_drain / 1000.0);
      // The call named is the one that waited longest (a read's blocking copy, not the 30 us
      // synchronize after it).
      if (ev.dur[i] / 1000.0 >= Num(f, "sync_call_us")) {
        AddText(&f, "sync_call", std::string(name));
        AddNumber(&f, "sync_call_us", ev.dur[i] / 1000.0);
      }
      AddText(&f, "op", std::string(ctx.Name(anchor)));
      // A read (.item(), .cpu(), nonzero) hands the statement a value; a bare synchronize()
      // only waits.
      if (!ctx.IsSyncCall(anchor)) AddText(&f, "reads_value", "yes");
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

std::string HostSyncMessage(const Finding& f, const std::string& detected,
                            const std::string& saving) {
  const double steps = std::max(1.0, Num(f, "steps_affected"));
  const bool whole_run = OfWholeRun(f);
  if (!TextOf(f, "blocking_launches").empty()) {
    return "every kernel launch waits for its kernel to finish (" +
           std::to_string(static_cast<int>(Num(f, "syncs") / steps)) +
           (whole_run ? " launches in " + TheRun(f) : std::string(" launches per step")) +
           " return only at their kernel's end: CUDA_LAUNCH_BLOCKING=1 in the environment, or a "
           "tool that serialises launches), so the GPU idles for all of the CPU's work between "
           "kernels: " +
           detected +
           " of GPU idle; unset CUDA_LAUNCH_BLOCKING (a debugging setting) and the CPU queues "
           "work ahead" +
           saving;
  }
  std::string op = TextOf(f, "op");
  // aten::is_nonzero is Python's truth test of a one-element tensor: the code branches on a
  // value still on the GPU (the .item() inside it is not the user's).
  if (op == "aten::is_nonzero") op += " (an if / while / bool() on a GPU tensor)";
  const std::string inner = TextOf(f, "inner_op");
  return std::string("host synchronisation") + (op.empty() ? "" : " in " + op) + " (" +
         (inner.empty() ? "" : "inside " + inner + ": ") + TextOf(f, "sync_call") + ", " +
         std::to_string(static_cast<int>(Num(f, "syncs") / steps)) +
         (whole_run ? "x in " + TheRun(f) : std::string("x per step")) + ") drains the GPU for " +
         detected +
         (Num(f, "host_statement_us") / steps >= 10
              ? std::string(TextOf(f, "reads_value").empty()
                                ? "; the statement around it runs "
                                : "; the statement that reads it runs ") +
                    FormatMs(Num(f, "host_statement_us") / steps) +
                    (whole_run ? " on the host" : "/step on the host")
              : "") +
         saving;
}

}  // namespace ttap

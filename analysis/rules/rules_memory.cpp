// Detectors for memory traffic and allocation: TTA003 pageable-memcpy, TTA004 small-h2d-copies,
// TTA013 allocator-churn, TTA014 device-ping-pong. Each reads the GPU memcpy rows (their names
// say the direction and, on CUDA, whether the host side is pageable or pinned; args.bytes gives
// the size) and the runtime calls that launched them, and appends raw per-step findings.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/rules/rule_util.h"

namespace ttap {

namespace {

bool IsH2D(std::string_view n) { return StartsWith(n, "Memcpy HtoD"); }
bool IsD2H(std::string_view n) { return StartsWith(n, "Memcpy DtoH"); }
// Only CUDA names the host side ("Pageable", "Pinned"); ROCm writes "Host", which says nothing.
bool IsPageable(std::string_view n) { return (IsH2D(n) || IsD2H(n)) && Contains(n, "Pageable"); }
// The host side of a copy as CUDA names it; ROCm's "Host" says nothing.
enum class HostMemory { kUnknown, kPageable, kPinned };
HostMemory HostMemoryOf(std::string_view n) {
  if (Contains(n, "Pageable")) return HostMemory::kPageable;
  if (Contains(n, "Pinned")) return HostMemory::kPinned;
  return HostMemory::kUnknown;
}

// Synchronous copy calls: the CPU blocks until the copy is done, whatever the host memory.
// A copy call (|call|: its runtime flags) that blocks until its copy is done, whatever host
// memory it copies (ROCm's hipMemcpyWithStream blocks for pinned buffers too: it counts only
// when it blocked long).
bool IsSyncCopyCall(uint32_t call) {
  return (call & kRuntimeSyncCopy) && !(call & kRuntimeAnyHostCopy);
}

// A synchronous device malloc or free (|call|: its runtime flags), what the caching allocator
// avoids.
bool IsAllocatorCall(uint32_t call) { return (call & kRuntimeDeviceMalloc) != 0; }

bool IsEmptyCache(std::string_view n) {
  return Contains(n, "empty_cache") || Contains(n, "emptyCache");
}

double Us(int64_t ns) { return ns / 1000.0; }

void Bump(Finding* f, const std::string& key, double delta) {
  AddNumber(f, key, Num(*f, key) + delta);
}

// A duration given in us, as "12.3 us" or "4.56 ms".
std::string Dur(double us) {
  return us >= 1000 ? FormatNumber("%.2f ms", us / 1000.0) : FormatNumber("%.1f us", us);
}
std::string Bytes(double b) {
  if (b >= 1024.0 * 1024.0) return FormatNumber("%.1f MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return FormatNumber("%.1f KiB", b / 1024.0);
  return FormatNumber("%.0f B", b);
}
std::string Count(double n) { return FormatNumber("%.0f", n); }

// A cpu_op that is an operator, not a record_function label: 2021 traces write ProfilerStep#N,
// Optimizer.step#... and the like as cpu_op ("Operator") too.
bool IsOperator(const RuleContext& ctx, int32_t row) {
  if (ctx.ev().kind[row] != EventKind::kCpuOp) return false;
  const std::string_view n = ctx.Name(row);
  return !Contains(n, "#");
}

// The CPU op that issued a runtime call: the outermost of the unbroken chain of cpu_op ancestors
// (aten::to above aten::_to_copy above aten::copy_), so that record_function regions such as
// "## forward ##" or ProfilerStep#N do not swallow it; TopOp when the call has no cpu_op parent;
// else the call.
int32_t LaunchingOp(const RuleContext& ctx, int32_t row) {
  if (row < 0) return -1;
  const EventTable& ev = ctx.ev();
  int32_t best = -1;
  for (int32_t p = ev.parent[row], g = 0; p >= 0 && g < 4096; p = ev.parent[p], ++g) {
    if (!IsOperator(ctx, p)) break;
    best = p;
  }
  if (best >= 0) return best;
  int32_t top = ctx.TopOp(row);
  return top >= 0 ? top : row;
}

}  // namespace

// TTA003. A copy from or to pageable host memory cannot overlap with compute: the driver stages
// it through a pinned bounce buffer, the CPU thread blocks while it does, and the copy runs at
// reduced bandwidth serialised on its stream. Time lost, per copy:
//   - the copy's GPU duration: with pinned memory and non_blocking=True it would overlap with
//     kernels (on a side stream or behind queued work) instead of occupying the stream;
//   - for host-to-device copies, also the GPU idle time while the CPU was blocked in the launching
//     call (staging the pageable buffer): with a pinned source the call returns at once and the
//     CPU goes on launching work. Device-to-host copies are not charged for their call: that call
//     mostly waits for the queued kernels, which is TTA002's drain, counted there.
// Synchronous cudaMemcpy/hipMemcpy calls block the CPU whatever the memory: charged the GPU idle
// during the call plus the copy's duration (the call's duration when no GPU copy is linked).
// This is an upper bound on what pinning saves: overlap is not guaranteed when the consumer of
// the copy is the very next kernel.
void DetectPageableMemcpy(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_us = o.Get("pageable_min_us", 0);
  std::vector<char> counted(ev.size(), 0);  // launch rows already charged through their copy
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<std::string, Finding> by_cause;
    auto charge = [&](int32_t row, int32_t launch, int64_t a, int64_t b, int64_t lost_ns,
                      int64_t bytes, int64_t copy_ns, std::string_view what) {
      int32_t anchor = launch >= 0 ? LaunchingOp(ctx, launch) : -1;
      std::string key = anchor >= 0 ? CauseKey(ctx, anchor) : "(no launch)";
      Finding& f = CauseFinding(&by_cause, ctx, "TTA003", static_cast<int>(s), a, b, anchor, key);
      f.rows.push_back(row);
      f.per_step[0].second += Us(lost_ns);
      Bump(&f, "copies", 1);
      if (bytes > 0) Bump(&f, "bytes", static_cast<double>(bytes));
      Bump(&f, "copy_us", Us(copy_ns));
      if (anchor >= 0) AddText(&f, "op", std::string(ctx.Name(anchor)));
      AddEvent(&f, std::string(what), 1, Us(copy_ns));
    };
    for (uint32_t i = lo; i < hi; ++i) {
      const std::string_view name = ctx.Name(i);
      if (ev.kind[i] == EventKind::kMemcpy && IsPageable(name)) {
        const int32_t launch = ev.link[i];
        int64_t lost = ev.dur[i];
        int64_t a = ev.ts[i];
        if (launch >= 0) {
          counted[launch] = 1;
          a = std::min(a, ev.ts[launch]);
          if (IsH2D(name) || IsSyncCopyCall(ctx.RuntimeFlags(launch))) {
            lost += ctx.GpuIdle(ev.ts[launch], ev.end(launch));
          }
        }
        charge(static_cast<int32_t>(i), launch, a, ev.end(i), lost, ev.bytes[i], ev.dur[i], name);
      }
    }
    // Synchronous copy calls whose copy was not pageable (or is not in the trace).
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsLaunchKind(ev.kind[i]) || counted[i]) continue;
      const int32_t gpu = ev.link[i];
      // ROCm copies every host buffer with hipMemcpyWithStream, pinned or not: it counts only
      // when the call blocked well beyond its copy (waiting for the stream).
      const bool blocked_rocm_copy = ctx.Name(i) == "hipMemcpyWithStream" &&
                                     ev.dur[i] > 2 * (gpu >= 0 ? ev.dur[gpu] : 0) + 50000;
      if (!IsSyncCopyCall(ctx.RuntimeFlags(i)) && !blocked_rocm_copy) continue;
      if (gpu >= 0 && !(IsH2D(ctx.Name(gpu)) || IsD2H(ctx.Name(gpu)))) continue;  // DtoD
      const int64_t copy_ns = gpu >= 0 ? ev.dur[gpu] : 0;
      const int64_t lost = gpu >= 0 ? ctx.GpuIdle(ev.ts[i], ev.end(i)) + copy_ns : ev.dur[i];
      const int64_t b = gpu >= 0 ? std::max(ev.end(i), ev.end(gpu)) : ev.end(i);
      charge(static_cast<int32_t>(i), static_cast<int32_t>(i), ev.ts[i], b, lost,
             gpu >= 0 ? ev.bytes[gpu] : -1, copy_ns, ctx.Name(i));
    }
    for (auto& [key, f] : by_cause) {
      if (f.per_step[0].second < min_us) continue;
      const double n = Num(f, "copies");
      std::string op = f.evidence.count("op") ? f.evidence["op"].text : "";
      AddText(&f, "detail",
              Count(n) + " pageable/synchronous cop" + (n == 1 ? "y" : "ies") + " in the step (" +
                  Bytes(Num(f, "bytes")) + ", " + Dur(Num(f, "copy_us")) + " on the GPU)" +
                  (op.empty() ? "" : " from " + op) +
                  "; pin the host buffer and copy with non_blocking=True");
      out->push_back(std::move(f));
    }
  }
}

// TTA004. Many small host-to-device copies per step: each pays a runtime call (several us of
// CPU) and a DMA setup for a few bytes; creating the tensors on the device, or batching them into
// one buffer copied once, removes nearly all of it. A copy is small when args.bytes <
// small_h2d_max_bytes (64 KiB), or, without a size, when it runs < small_h2d_max_us (10 us).
// Flagged when a step holds >= small_h2d_min_copies (16). Time lost = the launching calls'
// durations (CPU) + the copies' durations (GPU), summed over the small copies.
void DetectSmallH2DCopies(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const int64_t max_bytes = static_cast<int64_t>(o.Get("small_h2d_max_bytes", 64 * 1024));
  const int64_t max_ns = static_cast<int64_t>(o.Get("small_h2d_max_us", 10) * 1000);
  const double min_copies = o.Get("small_h2d_min_copies", 16);
  struct StepCopies {
    std::vector<uint32_t> rows;
  };
  std::vector<StepCopies> per_step(ctx.steps().size());
  std::map<std::string, std::pair<int64_t, int32_t>> op_counts;  // cause key -> (count, row)
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kMemcpy || !IsH2D(ctx.Name(i))) continue;
      const bool small = ev.bytes[i] >= 0 ? ev.bytes[i] < max_bytes : ev.dur[i] < max_ns;
      if (small) per_step[s].rows.push_back(i);
    }
    if (per_step[s].rows.size() < min_copies) continue;
    for (uint32_t i : per_step[s].rows) {
      int32_t op = LaunchingOp(ctx, ev.link[i]);
      if (op < 0) continue;
      auto& c = op_counts[CauseKey(ctx, op)];
      if (c.first++ == 0) c.second = op;
    }
  }
  // The anchor: the op that launched most of the small copies over the whole trace.
  int32_t anchor = -1;
  int64_t most = 0;
  for (auto& [key, c] : op_counts) {
    if (c.first > most) {
      most = c.first;
      anchor = c.second;
    }
  }
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const auto& rows = per_step[s].rows;
    if (rows.size() < min_copies) continue;
    Finding f = MakeRawFinding(ctx, "TTA004", static_cast<int>(s), ev.ts[rows.front()],
                               ev.end(rows.back()), 0, anchor, "small-h2d-copies");
    int64_t lost = 0, bytes = 0, launch_ns = 0, copy_ns = 0;
    for (uint32_t i : rows) {
      f.rows.push_back(static_cast<int32_t>(i));
      const int32_t launch = ev.link[i];
      if (launch >= 0) {
        launch_ns += ev.dur[launch];
        f.start_ns = std::min(f.start_ns, ev.ts[launch]);
      }
      copy_ns += ev.dur[i];
      f.end_ns = std::max(f.end_ns, ev.end(i));
      if (ev.bytes[i] > 0) bytes += ev.bytes[i];
      int32_t op = LaunchingOp(ctx, launch);
      AddEvent(&f, op >= 0 ? std::string(ctx.Name(op)) : std::string(ctx.Name(i)), 1,
               Us(ev.dur[i] + (launch >= 0 ? ev.dur[launch] : 0)));
    }
    lost = launch_ns + copy_ns;
    f.per_step[0].second = Us(lost);
    AddNumber(&f, "copies", static_cast<double>(rows.size()));
    AddNumber(&f, "bytes", static_cast<double>(bytes));
    AddNumber(&f, "launch_us", Us(launch_ns));
    AddNumber(&f, "copy_us", Us(copy_ns));
    if (anchor >= 0) AddText(&f, "op", std::string(ctx.Name(anchor)));
    AddText(&f, "detail",
            Count(static_cast<double>(rows.size())) + " host-to-device copies under " +
                Bytes(static_cast<double>(max_bytes)) + " in the step (" +
                Bytes(static_cast<double>(bytes)) + " in all; " + Dur(Us(launch_ns)) +
                " of launch calls, " + Dur(Us(copy_ns)) + " of copies)" +
                (anchor >= 0 ? ", mostly from " + std::string(ctx.Name(anchor)) : ""));
    out->push_back(std::move(f));
  }
}

// TTA013. cudaMalloc/cudaFree (hipMalloc/hipFree, cuMemAlloc/cuMemFree) calls in steady-state
// steps, i.e. every analysed step but the first (the caching allocator warms up in the first
// step; afterwards it should serve every request from its cache), and torch.cuda.empty_cache()
// in any step (it is never warm-up). Both are slow and cudaFree synchronises the device. Time lost
// per call: its duration (the CPU is blocked) plus the drain it causes: the GPU idle after the call
// until new work arrives, at most the GPU work that was still running during the call (without the
// synchronisation that work would have overlapped with the CPU's next launches).
// An empty_cache region counts once, with the allocator calls inside it.
void DetectAllocatorChurn(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("allocator_churn_share", 0.005);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<std::string, Finding> by_cause;
    int32_t emptied_by = -1;  // the empty_cache() that ran earlier in the step, -1
    for (uint32_t i = lo; i < hi; ++i) {
      const std::string_view name = ctx.Name(i);
      const EventKind k = ev.kind[i];
      const bool empty_cache = (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
                                k == EventKind::kPythonFunction) &&
                               IsEmptyCache(name);
      const bool alloc = IsLaunchKind(ev.kind[i]) && IsAllocatorCall(ctx.RuntimeFlags(i));
      if (!empty_cache && !alloc) continue;
      // The first step's allocations warm the cache up, except those that refill it after an
      // explicit empty_cache(), which is never warm-up.
      if (s == 0 && !empty_cache && emptied_by < 0) continue;
      // Start-up calls (context creation, a library's first workspace, an op's first run) are
      // one-time cold start, never churn.
      if (alloc && ctx.InFirstCall(static_cast<int32_t>(i))) continue;
      // Skip anything inside an empty_cache region: the region is charged as a whole.
      int32_t region = -1;
      for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 4096; p = ev.parent[p], ++g) {
        if (IsEmptyCache(ctx.Name(p))) region = p;
      }
      if (region >= 0) continue;
      if (empty_cache) emptied_by = static_cast<int32_t>(i);
      const int64_t a = ev.ts[i], b = std::min(ev.end(i), step.end_ns);
      const int64_t busy_during = (b - a) - ctx.GpuIdle(a, b);
      const int64_t resume = ctx.NextGpuStart(b, step.end_ns);
      const int64_t drain = std::min(ctx.GpuIdle(b, resume), busy_during);
      const int64_t lost = (b - a) + std::max<int64_t>(0, drain);
      // Allocations after an empty_cache() refill what it emptied: they are its cost too.
      int32_t anchor = empty_cache       ? static_cast<int32_t>(i)
                       : emptied_by >= 0 ? emptied_by
                                         : LaunchingOp(ctx, i);
      std::string key = CauseKey(ctx, anchor);
      Finding& f = CauseFinding(&by_cause, ctx, "TTA013", static_cast<int>(s), a,
                                std::max(b, resume), anchor, key);
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += Us(lost);
      // Allocator calls inside the empty_cache region.
      int64_t calls = alloc ? 1 : 0;
      if (empty_cache) {
        for (uint32_t j = i + 1; j < hi && ev.ts[j] < ev.end(i); ++j) {
          if (ev.track[j] == ev.track[i] && IsLaunchKind(ev.kind[j]) &&
              IsAllocatorCall(ctx.RuntimeFlags(j))) {
            ++calls;
            AddEvent(&f, std::string(ctx.Name(j)), 1, Us(ev.dur[j]));
          }
        }
        Bump(&f, "empty_cache_calls", 1);
      } else {
        AddEvent(&f, std::string(name), 1, Us(ev.dur[i]));
      }
      Bump(&f, "allocator_calls", static_cast<double>(calls));
      Bump(&f, "call_us", Us(b - a));
      Bump(&f, "drain_us", Us(std::max<int64_t>(0, drain)));
      AddText(&f, "op", std::string(ctx.Name(anchor)));
    }
    for (auto& [key, f] : by_cause) {
      if (step.duration() <= 0 || f.per_step[0].second * 1000.0 < min_share * step.duration()) {
        continue;
      }
      const double ec = Num(f, "empty_cache_calls");
      AddText(&f, "detail",
              Count(Num(f, "allocator_calls")) + " allocator calls" +
                  (ec > 0 ? " and " + Count(ec) + " empty_cache()" : std::string()) +
                  (s == 0 ? " in the step (" : " in a steady-state step (") +
                  Dur(Num(f, "call_us")) + " blocked, " + Dur(Num(f, "drain_us")) +
                  " of GPU drain); keep the caching allocator warm");
      out->push_back(std::move(f));
    }
  }
}

// TTA014. The same tensors moved to the host and back within a step (CPU offload, .cpu() then
// .cuda(), numpy round trips): a device-to-host copy followed, later in the step, by a
// host-to-device copy of exactly the same size and the same host memory (pinned or pageable,
// where CUDA names it: a copy into pinned memory and one from pageable memory are different
// tensors). Each host-to-device copy is paired with the earliest such unpaired device-to-host copy.
// A copy belongs to the step that launched it (its GPU time may fall in a later step where the
// stream runs far behind its launches). Flagged when the paired bytes reach ping_pong_min_bytes (1
// MiB) in a step, so that a few scalars read back do not count. Time lost = the durations of both
// copies of every pair (keeping the data on the device removes them; the synchronisation of the
// device-to-host copy is TTA002's business).
void DetectDevicePingPong(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_bytes = o.Get("ping_pong_min_bytes", 1024.0 * 1024.0);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<int64_t, std::vector<uint32_t>> pending;  // bytes -> unpaired D2H rows, in order
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t r = lo; r < hi; ++r) {
      // The copies the step launched, in launch order (and those without a launch call, where
      // they ran).
      uint32_t i = r;
      if (IsLaunchKind(ev.kind[r]) && ev.link[r] >= 0) {
        i = static_cast<uint32_t>(ev.link[r]);
      } else if (ev.link[r] >= 0) {
        continue;
      }
      if (ev.kind[i] != EventKind::kMemcpy || ev.bytes[i] <= 0) continue;
      const std::string_view name = ctx.Name(i);
      if (IsD2H(name)) {
        pending[ev.bytes[i]].push_back(i);
      } else if (IsH2D(name)) {
        auto it = pending.find(ev.bytes[i]);
        if (it == pending.end() || it->second.empty()) continue;
        // A buffer that goes out and comes back is one host buffer: a copy into pinned memory
        // and one from pageable memory are different tensors of the same size.
        const HostMemory back = HostMemoryOf(name);
        auto out_it = std::find_if(it->second.begin(), it->second.end(), [&](uint32_t d) {
          const HostMemory out = HostMemoryOf(ctx.Name(d));
          return out == HostMemory::kUnknown || back == HostMemory::kUnknown || out == back;
        });
        if (out_it == it->second.end()) continue;
        pairs.emplace_back(*out_it, i);
        it->second.erase(out_it);
      }
    }
    if (pairs.empty()) continue;
    double bytes = 0;
    int64_t d2h_ns = 0, h2d_ns = 0;
    for (auto& [d, h] : pairs) {
      bytes += static_cast<double>(ev.bytes[h]);
      d2h_ns += ev.dur[d];
      h2d_ns += ev.dur[h];
    }
    if (bytes < min_bytes) continue;
    const int32_t anchor = LaunchingOp(ctx, ev.link[pairs.front().first]);
    std::string key = anchor >= 0 ? CauseKey(ctx, anchor) : "(no launch)";
    Finding f = MakeRawFinding(ctx, "TTA014", static_cast<int>(s), ev.ts[pairs.front().first],
                               ev.end(pairs.back().second), Us(d2h_ns + h2d_ns), anchor, key);
    for (auto& [d, h] : pairs) {
      f.rows.push_back(static_cast<int32_t>(d));
      f.rows.push_back(static_cast<int32_t>(h));
      f.start_ns = std::min(f.start_ns, ev.ts[d]);
      f.end_ns = std::max(f.end_ns, ev.end(h));
      AddEvent(&f, std::string(ctx.Name(d)), 1, Us(ev.dur[d]));
      AddEvent(&f, std::string(ctx.Name(h)), 1, Us(ev.dur[h]));
    }
    AddNumber(&f, "round_trips", static_cast<double>(pairs.size()));
    AddNumber(&f, "bytes", bytes);
    AddNumber(&f, "d2h_us", Us(d2h_ns));
    AddNumber(&f, "h2d_us", Us(h2d_ns));
    if (anchor >= 0) AddText(&f, "op", std::string(ctx.Name(anchor)));
    AddText(&f, "detail",
            Count(static_cast<double>(pairs.size())) + " tensor" + (pairs.size() == 1 ? "" : "s") +
                " (" + Bytes(bytes) + ") copied to the host and back in the step (" +
                Dur(Us(d2h_ns)) + " out, " + Dur(Us(h2d_ns)) + " back)" +
                (anchor >= 0 ? ", out via " + std::string(ctx.Name(anchor)) : ""));
    out->push_back(std::move(f));
  }
}

}  // namespace ttap

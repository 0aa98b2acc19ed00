// TTA013 allocator-churn: cudaMalloc/cudaFree in steady-state steps. Its two detectors (per step,
// and on the causal model's critical path for traces whose steps the first cannot judge);
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta013-allocator-churn.
#include "analysis/model/runtime_calls.h"
#include "analysis/rules/causal_detectors.h"
#include "analysis/rules/memory_detectors.h"

namespace ttap {

// The memory family's helpers it uses (memory_detectors.h).
using memory_detail::Count;
using memory_detail::IsAllocatorCall;
using memory_detail::IsEmptyCache;
using memory_detail::LaunchingOp;

// TTA013. cudaMalloc/cudaFree (hipMalloc/hipFree, cuMemAlloc/cuMemFree) calls in steady-state
// steps, i.e. every analysed step but the first (the caching allocator warms up in the first
// step; afterwards it should serve every request from its cache), and torch.cuda.empty_cache()
// in any step (it is never warm-up). Both are slow and cudaFree synchronises the device. Time lost
// per call: its duration (the CPU is blocked) plus the drain it causes: the GPU idle after the call
// until new work arrives, at most the GPU work that was still running during the call (without the
// synchronisation that work would have overlapped with the CPU's next launches).
// An empty_cache region counts once, with the allocator calls inside it.
// At most this many allocator calls in a step: the caching allocator is on and warm but for a
// few refills (an empty_cache() each step makes two or three).
constexpr int kFewAllocatorCalls = 16;

void DetectAllocatorChurn(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("allocator_churn_share", 0.005);
  int32_t emptied_last_step = -1;  // the previous step's last empty_cache(), -1
  // A runtime call of the device allocator (cudaMalloc, cudaFree, hipMalloc, ...).
  auto is_allocator_call = [&](size_t i) {
    return IsLaunchKind(ev.kind[i]) && IsAllocatorCall(ctx.RuntimeFlags(i));
  };
  // A device free outside any op (user annotations aside).
  auto is_bare_free = [&](size_t i) {
    const std::string_view name = ctx.Name(i);
    if (!IsDeviceFreeName(name)) return false;
    if (ctx.InFirstCall(static_cast<int32_t>(i))) return false;
    for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 4096; p = ev.parent[p], ++g) {
      if (ev.kind[p] == EventKind::kCpuOp) return false;
    }
    return true;
  };
  // Steps with a few allocator calls: with many (the caching allocator off, every tensor freed
  // where Python drops it) a free outside any op says nothing of empty_cache(). The first step's
  // bare frees are start-up (a cudaFree(0) that creates the context) unless later steps with few
  // calls free outside any op too.
  std::vector<char> few_calls(ctx.steps().size(), 0);
  // Steps that free device memory more than kFewAllocatorCalls times outside the run's first
  // calls: the caching allocator frees only on empty_cache() or to retry a failed allocation, so
  // frees all through the step say it is off (PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor
  // Python drops goes back to the driver). One cause, the setting, whatever op frees.
  std::vector<char> caching_off(ctx.steps().size(), 0);
  bool later_bare_frees = false;
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    auto [lo, hi] = ctx.RowsIn(ctx.steps()[s].start_ns, ctx.steps()[s].end_ns);
    int calls = 0, frees = 0;
    bool bare = false;
    for (uint32_t i = lo; i < hi; ++i) {
      if (!is_allocator_call(i)) continue;
      ++calls;
      bare = bare || (s > 0 && is_bare_free(i));
      frees += IsDeviceFreeName(ctx.Name(i)) && !ctx.InFirstCall(static_cast<int32_t>(i));
    }
    few_calls[s] = calls <= kFewAllocatorCalls;
    caching_off[s] = frees > kFewAllocatorCalls;
    later_bare_frees = later_bare_frees || (few_calls[s] && bare);
  }
  // Recorded without Python frames, torch.cuda.empty_cache() leaves only its cudaFree, outside
  // any op. In a steady-state step the caching allocator frees device memory nowhere else (but
  // when an allocation fails and it releases its cache to retry), so such a free stands for it,
  // and the allocations that refill the cache are its cost too.
  auto bare_free_at = [&](uint32_t i, size_t step) {
    return is_allocator_call(i) && few_calls[step] && is_bare_free(i) &&
           (step > 0 || later_bare_frees);
  };
  auto empty_cache_at = [&](uint32_t i, size_t step) {
    return (IsCpuSide(ev.kind[i]) && IsEmptyCache(ctx.Name(i))) || bare_free_at(i, step);
  };
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<std::string, Finding> by_cause;
    // The empty_cache() that ran earlier in the step, else in the step before (called once a
    // step, after the step's allocations: the next step's allocations refill what it emptied).
    int32_t emptied_by = emptied_last_step;
    emptied_last_step = -1;
    // The first step calls empty_cache() as the next one does, which then allocates again: the
    // step before it (warm-up, unprofiled) ran the same code, so the allocations before that call
    // refill what it emptied, as in later steps.
    if (s == 0 && ctx.steps().size() > 1) {
      int32_t first = -1;
      for (uint32_t i = lo; i < hi && first < 0; ++i) {
        if (empty_cache_at(i, 0)) first = static_cast<int32_t>(i);
      }
      const AnalysedStep& next = ctx.steps()[1];
      auto [next_lo, next_hi] = ctx.RowsIn(next.start_ns, next.end_ns);
      bool next_empties = false, next_allocates = false;
      for (uint32_t i = next_lo; i < next_hi && first >= 0; ++i) {
        next_empties = next_empties || empty_cache_at(i, 1);
        next_allocates = next_allocates || (is_allocator_call(i) && !Contains(ctx.Name(i), "Free"));
      }
      if (next_empties && next_allocates) emptied_by = first;
    }
    for (uint32_t i = lo; i < hi; ++i) {
      const std::string_view name = ctx.Name(i);
      const bool alloc = is_allocator_call(i);
      const bool bare_free = bare_free_at(i, s);
      const bool empty_cache = empty_cache_at(i, s);
      if (!empty_cache && !alloc) continue;
      // The first step's allocations warm the cache up, except those that refill it after an
      // explicit empty_cache(), which is never warm-up, and those of a cache that is off.
      if (s == 0 && !empty_cache && emptied_by < 0 && !caching_off[0]) continue;
      // Start-up calls (context creation, a library's first workspace, an op's first run) are
      // one-time cold start, never churn.
      if (alloc && ctx.InFirstCall(static_cast<int32_t>(i))) continue;
      // Skip anything inside an empty_cache region: the region is charged as a whole.
      int32_t region = -1;
      for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 4096; p = ev.parent[p], ++g) {
        if (IsEmptyCache(ctx.Name(p))) region = p;
      }
      if (region >= 0) continue;
      if (empty_cache) emptied_by = emptied_last_step = static_cast<int32_t>(i);
      const int64_t a = ev.ts[i], b = std::min(ev.end(i), step.end_ns);
      const int64_t busy_during = ctx.GpuBusy(a, b);
      const int64_t resume = ctx.NextGpuStart(b, step.end_ns);
      const int64_t drain = std::min(ctx.GpuIdle(b, resume), busy_during);
      const int64_t lost = (b - a) + std::max<int64_t>(0, drain);
      // Allocations after an empty_cache() refill what it emptied: they are its cost too.
      int32_t anchor = empty_cache       ? static_cast<int32_t>(i)
                       : emptied_by >= 0 ? emptied_by
                                         : LaunchingOp(ctx, i);
      // With the caching allocator off, every call is the setting's (placed at the step's first).
      const bool off = caching_off[s] && !empty_cache && emptied_by < 0;
      std::string key = off ? "caching-allocator-off" : CauseKey(ctx, anchor);
      Finding& f = CauseFinding(&by_cause, ctx, "TTA013", static_cast<int>(s), a,
                                std::max(b, resume), anchor, key);
      if (off && f.rows.empty()) f.fix.clear();  // an environment variable, not an edit
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += Us(lost);
      // Allocator calls inside the empty_cache region.
      int64_t calls = alloc ? 1 : 0;
      if (bare_free) {
        AddEvent(&f, std::string(name), 1, Us(ev.dur[i]));
        AccumulateNumber(&f, "bare_frees", 1);
      } else if (empty_cache) {
        for (uint32_t j = i + 1; j < hi && ev.ts[j] < ev.end(i); ++j) {
          if (ev.track[j] == ev.track[i] && is_allocator_call(j)) {
            ++calls;
            AddEvent(&f, std::string(ctx.Name(j)), 1, Us(ev.dur[j]));
          }
        }
        AccumulateNumber(&f, "empty_cache_calls", 1);
      } else {
        AddEvent(&f, std::string(name), 1, Us(ev.dur[i]));
      }
      AccumulateNumber(&f, "allocator_calls", static_cast<double>(calls));
      if (off) {
        AccumulateNumber(&f, "device_frees", IsDeviceFreeName(name) ? 1 : 0);
        AddText(&f, "caching_off", "yes");
      }
      AccumulateNumber(&f, "call_us", Us(b - a));
      AccumulateNumber(&f, "drain_us", Us(std::max<int64_t>(0, drain)));
      if (!off || f.rows.size() == 1) AddText(&f, "op", std::string(ctx.Name(anchor)));
    }
    for (auto& [key, f] : by_cause) {
      if (step.duration() <= 0 || f.per_step[0].second * 1000.0 < min_share * step.duration()) {
        continue;
      }
      const double ec = Num(f, "empty_cache_calls");
      const double bare = Num(f, "bare_frees");
      if (!TextOf(f, "caching_off").empty()) {
        AddText(&f, "detail",
                Count(Num(f, "allocator_calls")) + " allocator calls in " +
                    (s == 0 ? "the step" : "a steady-state step") + ", " +
                    Count(Num(f, "device_frees")) + " of them frees (" + Dur(Num(f, "call_us")) +
                    " blocked, " + Dur(Num(f, "drain_us")) +
                    " of GPU drain): the caching allocator frees device memory only for "
                    "empty_cache() or to retry a failed allocation, so frees all through the "
                    "step say it is off (PYTORCH_NO_CUDA_MEMORY_CACHING=1 in the environment, "
                    "a debugging setting): unset it and the cache serves these");
        out->push_back(std::move(f));
        continue;
      }
      AddText(&f, "detail",
              Count(Num(f, "allocator_calls")) + " allocator calls" +
                  (ec > 0 ? " and " + Count(ec) + " empty_cache()" : std::string()) +
                  (bare > 0 ? ", " + Count(bare) +
                                  " of them a free outside any op (torch.cuda.empty_cache(), "
                                  "or the allocator releasing its cache to retry an allocation)"
                            : std::string()) +
                  (s == 0 ? " in the step (" : " in a steady-state step (") +
                  Dur(Num(f, "call_us")) + " blocked, " + Dur(Num(f, "drain_us")) +
                  " of GPU drain); keep the caching allocator warm");
      out->push_back(std::move(f));
    }
  }
}

// The causal family's helpers it uses (causal_detectors.h).
using causal_detail::CallsByStep;
using causal_detail::Share;

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

}  // namespace ttap

// The helpers shared by the memory family of detectors (detectors for memory traffic and
// allocation), one file per code (tta0NN_<name>.cpp), in namespace memory_detail. Internal to
// analysis/rules/.
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/model/host_copies.h"
#include "analysis/rules/rule_util.h"

namespace ttap::memory_detail {

using ttap::IsD2H;  // host_copies.h
using ttap::IsH2D;
// Only CUDA names the host side ("Pageable", "Pinned"); ROCm writes "Host", which says nothing.
inline bool IsPageable(std::string_view n) {
  return IsHostCopy(n) && HostMemoryOf(n) == HostMemory::kPageable;
}

// A call that returned this long or more before its copy ended did not wait for it (async).
constexpr int64_t kAsyncCopyReturnNs = 20000;

// The bandwidth pinned copies reach on this machine (GB/s, 0 when unknown) and where it comes
// from: the trace's own pinned copies of 1 MiB or more, else the GPU's host link.
inline std::pair<double, const char*> PinnedBandwidth(const RuleContext& ctx) {
  if (ctx.measured_pinned_gbps() > 0) return {ctx.measured_pinned_gbps(), "measured in this trace"};
  const double known = KnownPinnedCopyGBps(ctx.compute_capability(), ctx.device_name());
  return {known, known > 0 ? "this GPU's host link" : ""};
}

// The host side of copy row |i|: as CUDA names it, else (ROCm writes "Host") as its timing says.
// A call that returned before its copy was done was asynchronous, and only pinned memory lets it
// be; a copy far slower than the link's pinned bandwidth |pinned_gbps| allows was staged from
// pageable memory (SlowerThanPinned).
inline HostMemory HostMemoryOfCopy(const RuleContext& ctx, uint32_t i, double pinned_gbps) {
  const HostMemory named = HostMemoryOf(ctx.Name(i));
  if (named != HostMemory::kUnknown) return named;
  const EventTable& ev = ctx.ev();
  const int32_t call = ev.link[i];
  // (Before its copy's midpoint too: a blocking call that returns as its copy ends may be
  // recorded a little before that end, the GPU's clock against the CPU's.)
  if (call >= 0 && IsLaunchKind(ev.kind[call]) && ev.end(call) + kAsyncCopyReturnNs < ev.end(i) &&
      ev.end(call) < ev.ts[i] + ev.dur[i] / 2) {
    return HostMemory::kPinned;
  }
  if (SlowerThanPinned(ev.bytes[i], ev.dur[i], pinned_gbps)) return HostMemory::kPageable;
  return HostMemory::kUnknown;
}

// Synchronous copy calls: the CPU blocks until the copy is done, whatever the host memory.
// A copy call (|call|: its runtime flags) that blocks until its copy is done, whatever host
// memory it copies (ROCm's hipMemcpyWithStream blocks for pinned buffers too: it counts only
// when it blocked long).
inline bool IsSyncCopyCall(uint32_t call) {
  return (call & kRuntimeSyncCopy) && !(call & kRuntimeAnyHostCopy);
}

// A synchronous device malloc or free (|call|: its runtime flags), what the caching allocator
// avoids.
inline bool IsAllocatorCall(uint32_t call) { return (call & kRuntimeDeviceMalloc) != 0; }

inline bool IsEmptyCache(std::string_view n) {
  return Contains(n, "empty_cache") || Contains(n, "emptyCache");
}

inline std::string Count(double n) { return FormatNumber("%.0f", n); }

// The CPU op that issued a runtime call: the outermost of the unbroken chain of cpu_op ancestors
// (aten::to above aten::_to_copy above aten::copy_), so that record_function regions such as
// "## forward ##" or ProfilerStep#N do not swallow it; TopOp when the call has no cpu_op parent;
// else the call.
inline int32_t LaunchingOp(const RuleContext& ctx, int32_t row) {
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

}  // namespace ttap::memory_detail

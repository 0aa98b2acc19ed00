// The helpers shared by the memory family of detectors (detectors for memory traffic and
// allocation), one file per code (tta0NN_<name>.cpp), in namespace memory_detail. Internal to
// analysis/rules/.
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/rules/rule_util.h"

namespace ttap::memory_detail {

inline bool IsH2D(std::string_view n) { return StartsWith(n, "Memcpy HtoD"); }
inline bool IsD2H(std::string_view n) { return StartsWith(n, "Memcpy DtoH"); }
// Only CUDA names the host side ("Pageable", "Pinned"); ROCm writes "Host", which says nothing.
inline bool IsPageable(std::string_view n) {
  return (IsH2D(n) || IsD2H(n)) && Contains(n, "Pageable");
}
// The host side of a copy as CUDA names it; ROCm's "Host" says nothing.
enum class HostMemory { kUnknown, kPageable, kPinned };
inline HostMemory HostMemoryOf(std::string_view n) {
  if (Contains(n, "Pageable")) return HostMemory::kPageable;
  if (Contains(n, "Pinned")) return HostMemory::kPinned;
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

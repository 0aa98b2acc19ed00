// The helpers shared by the host family of detectors (detectors for host-side stalls), one file per
// code (tta0NN_<name>.cpp), in namespace host_detail. Internal to analysis/rules/.
#pragma once

#include <algorithm>
#include <map>
#include <set>

#include "analysis/model/host_copies.h"
#include "analysis/rules/rule_util.h"

namespace ttap::host_detail {

using ttap::IsCpuSide;  // rule_util.h

// True when |row| runs inside torch.profiler's own code (`profile.step()` starting or stopping
// a recording synchronises the device): measurement overhead the user's code did not ask for and
// cannot remove, so TTA002 does not report it. Python frames are named "path/file.py(line): fn",
// the path relative or absolute.
inline bool IssuedByProfiler(const RuleContext& ctx, uint32_t row) {
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
inline bool ProfilerStopSync(const RuleContext& ctx, uint32_t row,
                             const std::vector<int64_t>& last_launch) {
  const EventTable& ev = ctx.ev();
  const std::string_view n = ctx.Name(row);
  if (!HasRuntimeFlag(n, kRuntimeDeviceWideSync)) return false;
  for (int32_t p = ev.parent[row], g = 0; p >= 0 && g < 64; p = ev.parent[p], ++g) {
    if (!StartsWith(ctx.Name(p), "ProfilerStep#")) return false;
  }
  return last_launch[ev.track[row]] <= ev.ts[row];
}

inline bool IsPageableD2H(std::string_view n) {
  return IsD2H(n) && HostMemoryOf(n) == HostMemory::kPageable;
}

}  // namespace ttap::host_detail

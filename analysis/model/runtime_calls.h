// One table of the accelerator runtimes' API calls (CUDA runtime and driver, HIP) by what each
// does to the host and the device: waits for it, copies, launches, allocates, starts up. The
// rules, the causal graph, the window features and the harness's trace editor ask it, so a
// call is a sync (or an allocator, or a launch) in one place only. Names are compared without
// the per-thread-stream and version suffixes the profiler records (`_ptsz`, `_ptds`, `_spt`,
// `_v2`): cudaLaunchKernel_ptsz is cudaLaunchKernel.
#pragma once

#include <cstdint>
#include <string_view>

namespace ttap {

enum RuntimeCallFlag : uint32_t {
  kRuntimeSync = 1u << 0,               // waits for device work: stream, event, device, context
  kRuntimeDeviceWideSync = 1u << 1,     // ... for all of the device's work
  kRuntimeCopy = 1u << 2,               // queues or makes a copy between host and device memory
  kRuntimeSyncCopy = 1u << 3,           // ... and returns only once it is done (cudaMemcpy)
  kRuntimeAnyHostCopy = 1u << 4,        // ROCm's hipMemcpyWithStream: blocks for pinned and
                                        // pageable host buffers alike
  kRuntimeMemset = 1u << 5,             // fills device memory
  kRuntimeKernelLaunch = 1u << 6,       // launches one kernel
  kRuntimeGraphLaunch = 1u << 7,        // replays a captured CUDA/HIP graph
  kRuntimeAllocator = 1u << 8,          // allocates or frees device or pinned host memory
  kRuntimeDeviceMalloc = 1u << 9,       // ... device memory synchronously, what PyTorch's caching
                                        // allocator exists to avoid (not the stream-ordered pool)
  kRuntimeImplicitSync = 1u << 10,      // waits for the device before it returns (cudaFree)
  kRuntimeColdStart = 1u << 11,         // loads modules or libraries, looks up functions: once
  kRuntimeCaptureBegin = 1u << 12,      // begins capturing a stream's work into a graph
  kRuntimeCaptureEnd = 1u << 13,        // ends the capture
  kRuntimeGraphInstantiate = 1u << 14,  // makes a captured graph launchable
};

// The call's flags; 0 for a name the table does not know (an operator, a Python frame).
uint32_t RuntimeCallFlags(std::string_view name);

inline bool HasRuntimeFlag(std::string_view name, uint32_t flags) {
  return (RuntimeCallFlags(name) & flags) != 0;
}
// An allocator call that frees device memory (cudaFree, hipFree, cuMemFree), not host memory.
inline bool IsDeviceFreeName(std::string_view name) {
  return name.find("Free") != std::string_view::npos && name.find("Host") == std::string_view::npos;
}
// The calls that synchronise the host with the device (stream, device, event, context).
inline bool IsSyncCall(std::string_view n) { return HasRuntimeFlag(n, kRuntimeSync); }
// The calls that block the host until device work is done: the synchronisations and the
// synchronous copies (which return once their copy, queued behind their stream, is done).
inline bool IsBlockingCall(std::string_view n) {
  return HasRuntimeFlag(n, kRuntimeSync | kRuntimeSyncCopy);
}
// The launch calls that start GPU work (kernels, copies, memsets), as HTA counts them.
inline bool IsWorkLaunchCall(std::string_view n) {
  return HasRuntimeFlag(n, kRuntimeKernelLaunch | kRuntimeCopy | kRuntimeMemset);
}

}  // namespace ttap

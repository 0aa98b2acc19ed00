// The runtime call table (see runtime_calls.h).
#include "analysis/model/runtime_calls.h"

#include <string>
#include <unordered_map>

#include "analysis/base/string_util.h"

namespace ttap {

namespace {

constexpr uint32_t kSync = kRuntimeSync;
constexpr uint32_t kDeviceSync = kRuntimeSync | kRuntimeDeviceWideSync;
constexpr uint32_t kAsyncCopy = kRuntimeCopy;
constexpr uint32_t kSyncCopy = kRuntimeCopy | kRuntimeSyncCopy;
constexpr uint32_t kMemset = kRuntimeMemset;
constexpr uint32_t kPoolAlloc = kRuntimeAllocator;  // stream-ordered, pinned host or managed
constexpr uint32_t kDeviceAlloc = kRuntimeAllocator | kRuntimeDeviceMalloc;
constexpr uint32_t kCold = kRuntimeColdStart;

// Exact names (suffixes taken off).
const std::unordered_map<std::string_view, uint32_t>& Table() {
  static const auto* table = new std::unordered_map<std::string_view, uint32_t>{
      // Synchronisation.
      {"cudaStreamSynchronize", kSync},
      {"cudaEventSynchronize", kSync},
      {"cudaDeviceSynchronize", kDeviceSync},
      {"cudaThreadSynchronize", kDeviceSync},
      {"cuStreamSynchronize", kSync},
      {"cuEventSynchronize", kSync},
      {"cuCtxSynchronize", kDeviceSync},
      {"hipStreamSynchronize", kSync},
      {"hipEventSynchronize", kSync},
      {"hipDeviceSynchronize", kDeviceSync},
      // Copies: synchronous ones block until their copy is done.
      {"cudaMemcpy", kSyncCopy},
      {"cudaMemcpy2D", kSyncCopy},
      {"cuMemcpyHtoD", kSyncCopy},
      {"cuMemcpyDtoH", kSyncCopy},
      {"hipMemcpy", kSyncCopy},
      {"hipMemcpy2D", kSyncCopy},
      {"hipMemcpyWithStream", kSyncCopy | kRuntimeAnyHostCopy},
      {"cudaMemcpyAsync", kAsyncCopy},
      {"cudaMemcpy2DAsync", kAsyncCopy},
      {"cudaMemcpyPeerAsync", kAsyncCopy},
      {"cuMemcpyAsync", kAsyncCopy},
      {"cuMemcpyHtoDAsync", kAsyncCopy},
      {"cuMemcpyDtoHAsync", kAsyncCopy},
      {"cuMemcpyDtoDAsync", kAsyncCopy},
      {"hipMemcpyAsync", kAsyncCopy},
      {"hipMemcpy2DAsync", kAsyncCopy},
      {"cudaMemset", kMemset},
      {"cudaMemsetAsync", kMemset},
      {"hipMemset", kMemset},
      {"hipMemsetAsync", kMemset},
      // Allocators.
      {"cudaMalloc", kDeviceAlloc},
      {"cudaFree", kDeviceAlloc | kRuntimeImplicitSync},
      {"cuMemAlloc", kDeviceAlloc},
      {"cuMemFree", kDeviceAlloc},
      {"hipMalloc", kDeviceAlloc},
      {"hipFree", kDeviceAlloc | kRuntimeImplicitSync},
      {"cudaMallocAsync", kPoolAlloc},
      {"cudaFreeAsync", kPoolAlloc},
      {"cudaHostAlloc", kPoolAlloc},
      {"cudaFreeHost", kPoolAlloc},
      {"hipHostMalloc", kPoolAlloc},
      {"hipHostFree", kPoolAlloc},
      {"hipExtMallocWithFlags", kPoolAlloc},
      // One-time lookups (module and library loads match by pattern below).
      {"cuModuleGetFunction", kCold},
      {"cudaGetFuncBySymbol", kCold},
      {"cuLibraryGetKernel", kCold},
      {"hipModuleGetFunction", kCold},
  };
  return *table;
}

// Per-thread-stream and API-version suffixes, as the profiler records them.
std::string_view WithoutSuffixes(std::string_view n) {
  for (bool again = true; again;) {
    again = false;
    for (std::string_view s : {"_ptsz", "_ptds", "_spt", "_v2", "_v3"}) {
      if (EndsWith(n, s)) {
        n.remove_suffix(s.size());
        again = true;
      }
    }
  }
  return n;
}

}  // namespace

uint32_t RuntimeCallFlags(std::string_view name) {
  const std::string_view n = WithoutSuffixes(name);
  uint32_t flags = 0;
  // Every call in the table starts "cu" (CUDA runtime and driver) or "hip"; the patterns below
  // hold for any runtime's names.
  if (StartsWith(n, "cu") || StartsWith(n, "hip")) {
    const auto& table = Table();
    if (auto it = table.find(n); it != table.end()) flags = it->second;
    if (Contains(n, "StreamBeginCapture")) flags |= kRuntimeCaptureBegin;
    if (Contains(n, "StreamEndCapture")) flags |= kRuntimeCaptureEnd;
    if (Contains(n, "GraphInstantiate")) flags |= kRuntimeGraphInstantiate;
  }
  if (Contains(n, "LaunchKernel") || Contains(n, "LaunchCooperativeKernel")) {
    flags |= kRuntimeKernelLaunch;
  }
  if (Contains(n, "GraphLaunch")) flags |= kRuntimeGraphLaunch;
  if (Contains(n, "ModuleLoad") || Contains(n, "LibraryLoad") || Contains(n, "FuncGetAttributes")) {
    flags |= kRuntimeColdStart;
  }
  return flags;
}

}  // namespace ttap

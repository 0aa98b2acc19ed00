// The runtime call table (analysis/model/runtime_calls.h): each call's class, the per-thread-stream
// and version suffixes the profiler records, and names that are not runtime calls.
#include "analysis/model/runtime_calls.h"

#include <catch2/catch.hpp>

using namespace ttap;

TEST_CASE("runtime calls: syncs, blocking copies, launches, allocators, start-up",
          "[runtime_calls]") {
  for (const char* n : {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                        "cuCtxSynchronize", "hipStreamSynchronize", "hipDeviceSynchronize",
                        "cudaStreamSynchronize_ptsz"}) {
    INFO(n);
    CHECK(IsSyncCall(n));
    CHECK(IsBlockingCall(n));
    CHECK_FALSE(IsWorkLaunchCall(n));
  }
  CHECK(HasRuntimeFlag("cudaDeviceSynchronize", kRuntimeDeviceWideSync));
  CHECK(HasRuntimeFlag("cuCtxSynchronize", kRuntimeDeviceWideSync));
  CHECK_FALSE(HasRuntimeFlag("cudaStreamSynchronize", kRuntimeDeviceWideSync));
  // Copies: synchronous ones block, async ones and memsets only launch.
  for (const char* n : {"cudaMemcpy", "hipMemcpy", "hipMemcpyWithStream", "cuMemcpyHtoD_v2",
                        "cudaMemcpy2D", "cudaMemcpy_ptds"}) {
    INFO(n);
    CHECK(IsBlockingCall(n));
    CHECK_FALSE(IsSyncCall(n));
    CHECK(IsWorkLaunchCall(n));
  }
  CHECK(HasRuntimeFlag("hipMemcpyWithStream", kRuntimeAnyHostCopy));
  for (const char* n : {"cudaMemcpyAsync", "cudaMemcpyAsync_ptsz", "hipMemcpyAsync",
                        "cuMemcpyHtoDAsync_v2", "cudaMemsetAsync", "hipMemset"}) {
    INFO(n);
    CHECK_FALSE(IsBlockingCall(n));
    CHECK(IsWorkLaunchCall(n));
  }
  for (const char* n :
       {"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cuLaunchKernel",
        "hipExtModuleLaunchKernel", "hipModuleLaunchKernel", "cudaLaunchCooperativeKernel"}) {
    INFO(n);
    CHECK(HasRuntimeFlag(n, kRuntimeKernelLaunch));
    CHECK_FALSE(HasRuntimeFlag(n, kRuntimeGraphLaunch));
  }
  CHECK(HasRuntimeFlag("cudaGraphLaunch", kRuntimeGraphLaunch));
  CHECK(HasRuntimeFlag("hipGraphLaunch", kRuntimeGraphLaunch));
  // A graph's capture and instantiation (one-time when the graph is replayed more often).
  CHECK(HasRuntimeFlag("cudaStreamBeginCapture", kRuntimeCaptureBegin));
  CHECK(HasRuntimeFlag("hipStreamBeginCapture", kRuntimeCaptureBegin));
  CHECK(HasRuntimeFlag("cudaStreamEndCapture", kRuntimeCaptureEnd));
  CHECK(HasRuntimeFlag("cudaGraphInstantiateWithFlags", kRuntimeGraphInstantiate));
  CHECK(HasRuntimeFlag("hipGraphInstantiate", kRuntimeGraphInstantiate));
  CHECK_FALSE(HasRuntimeFlag("cudaStreamIsCapturing", kRuntimeCaptureBegin | kRuntimeCaptureEnd));
  CHECK_FALSE(HasRuntimeFlag("torch/cuda/graphs.py(74): capture_begin", kRuntimeCaptureBegin));
  // Allocators: the synchronous device ones are what the caching allocator saves; cudaFree
  // waits for the device; the stream-ordered pool and pinned host memory are allocators only.
  for (const char* n :
       {"cudaMalloc", "cudaFree", "hipMalloc", "hipFree", "cuMemAlloc_v2", "cuMemFree_v2"}) {
    INFO(n);
    CHECK(HasRuntimeFlag(n, kRuntimeDeviceMalloc));
    CHECK(HasRuntimeFlag(n, kRuntimeAllocator));
  }
  CHECK(HasRuntimeFlag("cudaFree", kRuntimeImplicitSync));
  CHECK_FALSE(HasRuntimeFlag("cudaMalloc", kRuntimeImplicitSync));
  for (const char* n : {"cudaMallocAsync", "cudaFreeAsync", "cudaHostAlloc", "hipHostMalloc"}) {
    INFO(n);
    CHECK(HasRuntimeFlag(n, kRuntimeAllocator));
    CHECK_FALSE(HasRuntimeFlag(n, kRuntimeDeviceMalloc));
  }
  for (const char* n : {"cuModuleLoadData", "hipModuleLoadData", "cuLibraryLoadData",
                        "cudaFuncGetAttributes", "cuModuleGetFunction"}) {
    INFO(n);
    CHECK(HasRuntimeFlag(n, kRuntimeColdStart));
  }
  // Not runtime calls: operators, kernels, Python frames.
  for (const char* n : {"aten::copy_", "cutlass_80_tensorop_s1688gemm", "cudnn::bn_fw_tr",
                        "Memcpy HtoD (Pageable -> Device)", "train.py(12): <module>", ""}) {
    INFO(n);
    CHECK(RuntimeCallFlags(n) == 0);
  }
}

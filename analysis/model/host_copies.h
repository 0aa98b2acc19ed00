// What a copy from pinned host memory would take: the bandwidth of pinned host<->GPU copies,
// measured in the trace or known for its GPU's host link, and the host side of a copy as CUDA names
// it. The memory detectors (rules/memory_detectors.h) find them and TTA003's what-if
// (causal/what_if.cpp, PinCopies) uses them.
#pragma once

#include <cstdint>
#include <string_view>

#include "analysis/base/string_util.h"

namespace ttap {

// Pinned host<->device bandwidth of a GPU's host link in GB/s, 0 when unknown: PCIe 3 (V100,
// T4) 12, PCIe 4 (A100, RTX 30/40, L4, MI250) 24, PCIe 5 (H100, H200, B200, MI300) 50, NVLink-C2C
// (GH200, GB200) 200. |arch| is compute capability x10 (AMD reports gfx9xx as 9.x, so AMD parts
// are told by name). Measured on an H200 (bench/record: pageable 6-10 GB/s, pinned 55 GB/s).
double KnownPinnedCopyGBps(int arch, std::string_view device_name);

// A pageable copy of |bytes| that took |pageable_ns|, from pinned memory: at the faster of twice
// its own bandwidth and |pinned_gbps| (0: unknown), never slower than it was.
int64_t PinnedCopyNs(int64_t pageable_ns, int64_t bytes, double pinned_gbps);

// Copies this size or larger measure bandwidth (smaller ones measure their latency).
constexpr int64_t kBandwidthCopyMinBytes = 1 << 20;

// Whether a host<->device copy of |bytes| (1 MiB or more) that took |dur_ns| was staged through
// pageable memory: it took over kStagedCopySlowdown x what the link's pinned bandwidth
// |pinned_gbps| and a copy's fixed latency (kCopyLatencyNs) would. An H100's pageable 20 MiB
// upload runs at 25 GB/s, half its 57 GB/s pinned twin (bench/realworld pinmem traces); a
// pinned 1 MiB copy at 50 GB/s takes 21 us of transfer and ~10 us of latency.
constexpr double kStagedCopySlowdown = 1.6;
constexpr int64_t kCopyLatencyNs = 10000;
bool SlowerThanPinned(int64_t bytes, int64_t dur_ns, double pinned_gbps);

// The direction of a host<->device copy as its name says ("Memcpy HtoD (...)").
inline bool IsH2D(std::string_view copy_name) { return StartsWith(copy_name, "Memcpy HtoD"); }
inline bool IsD2H(std::string_view copy_name) { return StartsWith(copy_name, "Memcpy DtoH"); }
// Either direction: a copy between host and device (not device to device).
inline bool IsHostCopy(std::string_view copy_name) { return IsH2D(copy_name) || IsD2H(copy_name); }

// The host side of a copy as CUDA names it ("Memcpy HtoD (Pageable -> Device)"); ROCm's "Host"
// says nothing.
enum class HostMemory { kUnknown, kPageable, kPinned };
inline HostMemory HostMemoryOf(std::string_view copy_name) {
  if (copy_name.find("Pageable") != std::string_view::npos) return HostMemory::kPageable;
  if (copy_name.find("Pinned") != std::string_view::npos) return HostMemory::kPinned;
  return HostMemory::kUnknown;
}

}  // namespace ttap

// Pinned host copy bandwidth; see host_copies.h.
#include "analysis/model/host_copies.h"

#include <algorithm>

namespace ttap {

namespace {
bool Has(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
}  // namespace

double KnownPinnedCopyGBps(int arch, std::string_view device_name) {
  if (Has(device_name, "GH200") || Has(device_name, "GB200") || Has(device_name, "GB300")) {
    return 200.0;
  }
  if (Has(device_name, "AMD") || Has(device_name, "Instinct") || Has(device_name, "Radeon")) {
    if (Has(device_name, "MI3")) return 50.0;
    if (Has(device_name, "MI2")) return 24.0;
    return 0.0;
  }
  if (arch >= 90) return 50.0;
  if (arch >= 80) return 24.0;
  if (arch >= 70) return 12.0;
  return 0.0;
}

bool SlowerThanPinned(int64_t bytes, int64_t dur_ns, double pinned_gbps) {
  if (pinned_gbps <= 0 || bytes < kBandwidthCopyMinBytes || dur_ns <= 0) return false;
  const double pinned_ns = static_cast<double>(bytes) / pinned_gbps + kCopyLatencyNs;
  return static_cast<double>(dur_ns) > kStagedCopySlowdown * pinned_ns;
}

int64_t PinnedCopyNs(int64_t pageable_ns, int64_t bytes, double pinned_gbps) {
  int64_t ns = pageable_ns / 2;
  if (bytes > 0 && pinned_gbps > 0) {
    ns = std::min(ns, static_cast<int64_t>(static_cast<double>(bytes) / pinned_gbps));
  }
  return std::max<int64_t>(0, ns);
}

}  // namespace ttap

// Window features for the `ttap eval` baselines; see window_features.h.
#include "analysis/model/window_features.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/model/runtime_calls.h"

namespace ttap {
namespace {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;  // disjoint, sorted

// Adds [start, end) to |out|, built from intervals given in increasing start order.
void AddSorted(Intervals* out, int64_t start, int64_t end) {
  if (end <= start) return;
  if (!out->empty() && start <= out->back().second) {
    out->back().second = std::max(out->back().second, end);
  } else {
    out->emplace_back(start, end);
  }
}

// Length of the union |merged| clipped to [start, end).
int64_t ClippedLength(const Intervals& merged, int64_t start, int64_t end) {
  auto it = std::upper_bound(merged.begin(), merged.end(), start,
                             [](int64_t v, const auto& iv) { return v < iv.second; });
  int64_t total = 0;
  for (; it != merged.end() && it->first < end; ++it) {
    int64_t lo = std::max(it->first, start);
    int64_t hi = std::min(it->second, end);
    if (hi > lo) total += hi - lo;
  }
  return total;
}

double Share(const Intervals& merged, const Window& w) {
  int64_t len = w.end_ns - w.start_ns;
  if (len <= 0) return 0;
  return std::clamp(static_cast<double>(ClippedLength(merged, w.start_ns, w.end_ns)) / len, 0.0,
                    1.0);
}

double Log1pUs(int64_t ns) { return std::log1p(std::max<int64_t>(ns, 0) / 1000.0); }

}  // namespace

const std::vector<std::string>& WindowFeatureNames() {
  static const std::vector<std::string> kNames = {
      "log_events",        "gpu_busy_share",      "log_kernels",        "mean_log_kernel_us",
      "max_log_kernel_us", "log_launch_delay_us", "runtime_share",      "log_memcpys",
      "log_memcpy_bytes",  "sync_share",          "log_distinct_names", "python_share",
      "log_cpu_ops",       "gpu_overlap_share"};
  return kNames;
}

std::vector<std::vector<double>> WindowFeatures(const Trace& trace) {
  const EventTable& ev = trace.events;
  // Unions over the whole trace, built once (rows are sorted by ts).
  Intervals gpu, runtime, sync, python;
  std::unordered_map<uint32_t, Intervals> gpu_by_track;     // per GPU stream (one track each)
  std::vector<int8_t> sync_name(trace.strings.size(), -1);  // per name id: -1 unknown, 0, 1
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    const int64_t s = ev.ts[i];
    const int64_t e = ev.end(i);
    if (k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset) {
      AddSorted(&gpu, s, e);
      AddSorted(&gpu_by_track[ev.track[i]], s, e);
    } else if (IsLaunchKind(k)) {
      AddSorted(&runtime, s, e);
      const StringId id = ev.name[i];
      if (id >= sync_name.size()) continue;
      if (sync_name[id] < 0) sync_name[id] = IsSyncCall(trace.strings.Get(id)) ? 1 : 0;
      if (sync_name[id] == 1) AddSorted(&sync, s, e);
    } else if (k == EventKind::kPythonFunction) {
      AddSorted(&python, s, e);
    }
  }

  std::vector<std::vector<double>> out;
  out.reserve(trace.windows.size());
  std::vector<double> kernel_logs, delays;
  std::unordered_set<StringId> names;
  for (const Window& w : trace.windows) {
    std::vector<double> f(kWindowFeatureCount, 0.0);
    const uint32_t begin = std::min<uint32_t>(w.begin, static_cast<uint32_t>(ev.size()));
    const uint32_t end = std::min<uint32_t>(w.end, static_cast<uint32_t>(ev.size()));
    kernel_logs.clear();
    delays.clear();
    names.clear();
    double memcpys = 0, memcpy_bytes = 0, cpu_ops = 0;
    for (uint32_t i = begin; i < end; ++i) {
      const EventKind k = ev.kind[i];
      names.insert(ev.name[i]);
      if (k == EventKind::kKernel) kernel_logs.push_back(Log1pUs(ev.dur[i]));
      if (k == EventKind::kMemcpy) {
        memcpys += 1;
        if (ev.bytes[i] > 0) memcpy_bytes += static_cast<double>(ev.bytes[i]);
      }
      if (k == EventKind::kCpuOp) cpu_ops += 1;
      if (IsGpuKind(k)) {
        const int32_t launch = ev.link[i];
        if (launch >= 0 && static_cast<size_t>(launch) < ev.size() &&
            IsLaunchKind(ev.kind[launch])) {
          delays.push_back(static_cast<double>(std::max<int64_t>(ev.ts[i] - ev.ts[launch], 0)));
        }
      }
    }
    f[0] = std::log1p(static_cast<double>(end > begin ? end - begin : 0));
    f[1] = Share(gpu, w);
    f[2] = std::log1p(static_cast<double>(kernel_logs.size()));
    if (!kernel_logs.empty()) {
      double sum = 0, mx = 0;
      for (double v : kernel_logs) {
        sum += v;
        mx = std::max(mx, v);
      }
      f[3] = sum / kernel_logs.size();
      f[4] = mx;
    }
    if (!delays.empty()) {
      auto mid = delays.begin() + delays.size() / 2;
      std::nth_element(delays.begin(), mid, delays.end());
      f[5] = std::log1p(*mid / 1000.0);
    }
    f[6] = Share(runtime, w);
    f[7] = std::log1p(memcpys);
    f[8] = std::log1p(memcpy_bytes);
    f[9] = Share(sync, w);
    f[10] = std::log1p(static_cast<double>(names.size()));
    f[11] = Share(python, w);
    f[12] = std::log1p(cpu_ops);
    // Concurrency: the busy time of the streams one by one beyond that of their union (with
    // two streams, the time both are busy).
    if (gpu_by_track.size() > 1 && w.end_ns > w.start_ns) {
      int64_t per_stream = 0;
      for (const auto& [track, busy] : gpu_by_track) {
        per_stream += ClippedLength(busy, w.start_ns, w.end_ns);
      }
      const int64_t excess = per_stream - ClippedLength(gpu, w.start_ns, w.end_ns);
      f[13] = std::clamp(static_cast<double>(excess) / static_cast<double>(w.end_ns - w.start_ns),
                         0.0, 1.0);
    }
    for (double& v : f) {
      if (!std::isfinite(v)) v = 0;
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ttap

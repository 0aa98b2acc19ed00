// RuleContext implementation; see rule_context.h.
#include "analysis/rule_context.h"

#include <algorithm>
#include <map>

#include "analysis/causal_graph.h"
#include "analysis/string_util.h"

namespace ttap {

namespace {}  // namespace

RuleContext::RuleContext(const Trace& trace) : trace_(trace) {
  const EventTable& ev = trace.events;
  for (const StepSpan& s : AnalysedSteps(trace)) steps_.push_back({s.number, s.start_ns, s.end_ns});
  std::map<int32_t, int64_t> kernels_per_device;
  for (size_t i = 0; i < ev.size(); ++i) {
    EventKind k = ev.kind[i];
    if (k != EventKind::kKernel && k != EventKind::kMemcpy && k != EventKind::kMemset) continue;
    has_gpu_ = true;
    gpu_busy_.push_back({ev.ts[i], ev.end(i)});
    if (k == EventKind::kKernel) {
      kernel_busy_.push_back({ev.ts[i], ev.end(i)});
      kernels_per_device[trace.tracks[ev.track[i]].device]++;
    }
  }
  MergeIntervals(&gpu_busy_);
  first_calls_ = OneTimeFirstCalls(trace, gpu_busy_);
  collective_name_.assign(trace.strings.size(), 0);
  runtime_flags_.assign(trace.strings.size(), 0);
  for (size_t id = 0; id < collective_name_.size(); ++id) {
    const std::string_view name = trace.strings.Get(static_cast<StringId>(id));
    collective_name_[id] = IsCollectiveKernel(name) ? 1 : 0;
    runtime_flags_[id] = RuntimeCallFlags(name);
  }
  MergeIntervals(&kernel_busy_);
  int32_t main_device = -1;
  int64_t most = -1;
  for (auto& [d, n] : kernels_per_device) {
    if (n > most) {
      most = n;
      main_device = d;
    }
  }
  for (const DeviceInfo& d : trace.devices) {
    bool is_amd = d.name.find("AMD") != std::string::npos ||
                  d.name.find("Instinct") != std::string::npos ||
                  d.name.find("Radeon") != std::string::npos;
    if (d.used && is_amd) amd_ = true;
    if (d.id == main_device && d.compute_major >= 0) {
      compute_major_ = d.compute_major;
      compute_minor_ = d.compute_minor;
    }
    if (d.id == main_device) device_name_ = d.name;
  }
  for (size_t i = 0; i < ev.size() && !amd_; ++i) {
    if (IsLaunchKind(ev.kind[i]) && StartsWith(trace.Name(i), "hip")) amd_ = true;
  }
}

int64_t RuleContext::NextGpuStart(int64_t t, int64_t limit) const {
  auto it =
      std::lower_bound(gpu_busy_.begin(), gpu_busy_.end(), Interval{t, INT64_MIN},
                       [](const Interval& a, const Interval& b) { return a.second < b.first; });
  for (; it != gpu_busy_.end(); ++it) {
    if (it->second > t) return std::min(std::max(it->first, t), limit);
  }
  return limit;
}

int RuleContext::StepOf(int64_t ts) const {
  auto it = std::upper_bound(steps_.begin(), steps_.end(), ts,
                             [](int64_t t, const AnalysedStep& s) { return t < s.start_ns; });
  if (it == steps_.begin()) return -1;
  --it;
  return ts < it->end_ns ? static_cast<int>(it - steps_.begin()) : -1;
}

std::pair<uint32_t, uint32_t> RuleContext::RowsIn(int64_t lo, int64_t hi) const {
  Window w = MakeWindow(trace_, lo, hi);
  return {w.begin, w.end};
}

int32_t RuleContext::AncestorWithPrefix(int32_t row, std::string_view prefix) const {
  for (int guard = 0; row >= 0 && guard < 4096; ++guard) {
    if (StartsWith(trace_.Name(row), prefix)) return row;
    row = trace_.events.parent[row];
  }
  return -1;
}

namespace {

// True when a launch on |row|'s thread inside its span sends work to the device (anything but a
// device-to-host copy). Rows are in time order: scans until the first such launch.
bool LaunchesDeviceWork(const Trace& trace, int32_t row) {
  const EventTable& ev = trace.events;
  const Window w = MakeWindow(trace, ev.ts[row], ev.end(row));
  for (uint32_t i = std::max<uint32_t>(w.begin, static_cast<uint32_t>(row)); i < w.end; ++i) {
    if (ev.track[i] != ev.track[row] || !IsLaunchKind(ev.kind[i]) || ev.link[i] < 0) continue;
    const int32_t g = ev.link[i];
    if (!IsGpuKind(ev.kind[g])) continue;
    if (ev.kind[g] != EventKind::kMemcpy || trace.Name(g).find("DtoH") == std::string_view::npos)
      return true;
  }
  return false;
}

}  // namespace

int32_t HostStatementOf(const Trace& trace, int32_t sync_row) {
  const EventTable& ev = trace.events;
  int32_t best = -1;
  for (int32_t p = ev.parent[sync_row], depth = 0; p >= 0 && depth < 64;
       p = ev.parent[p], ++depth) {
    const EventKind k = ev.kind[p];
    if (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation &&
        k != EventKind::kPythonFunction) {
      break;
    }
    if (StartsWith(trace.Name(p), "ProfilerStep#") || LaunchesDeviceWork(trace, p)) break;
    best = p;
  }
  return best;
}

int32_t TopOpOf(const Trace& trace, int32_t row) {
  int32_t best = -1;
  for (int guard = 0; row >= 0 && guard < 4096; ++guard) {
    EventKind k = trace.events.kind[row];
    if ((k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) &&
        !StartsWith(trace.Name(row), "ProfilerStep#")) {
      best = row;
    }
    row = trace.events.parent[row];
  }
  return best;
}

int32_t RuleContext::TopOp(int32_t row) const { return TopOpOf(trace_, row); }

std::vector<int> RuleContext::WindowsOf(int64_t lo, int64_t hi) const {
  // Windows are equal, sorted and back to back (analysis/trace.h): start at the first one that
  // ends after |lo|.
  std::vector<int> out;
  const auto& w = trace_.windows;
  auto it = std::upper_bound(w.begin(), w.end(), lo,
                             [](int64_t t, const Window& x) { return t < x.end_ns; });
  for (size_t i = static_cast<size_t>(it - w.begin()); i < w.size(); ++i) {
    const bool touches = lo == hi ? (w[i].start_ns <= lo && lo < w[i].end_ns)
                                  : (w[i].start_ns < hi && lo < w[i].end_ns);
    if (touches) {
      out.push_back(static_cast<int>(i));
    } else if (w[i].start_ns >= std::max(lo, hi)) {
      break;
    }
  }
  return out;
}

bool IsDataLoaderName(std::string_view name) {
  return StartsWith(name, "enumerate(DataLoader)#") || StartsWith(name, "enumerate(DataPipe)#") ||
         (name.find("DataLoader") != std::string_view::npos &&
          name.find("__next__") != std::string_view::npos);
}

bool RuleContext::IsDataLoaderName(std::string_view name) const {
  return ttap::IsDataLoaderName(name);
}

}  // namespace ttap

// RuleContext implementation; see rule_context.h.
#include "analysis/rules/rule_context.h"

#include <algorithm>
#include <map>

#include "analysis/base/string_util.h"
#include "analysis/causal/causal_graph.h"
#include "analysis/model/host_copies.h"
#include "analysis/model/trace_queries.h"

namespace ttap {

RuleContext::RuleContext(const Trace& trace, ColdStartCut cut) : trace_(trace) {
  const EventTable& ev = trace.events;
  for (const StepSpan& s : AnalysedSteps(trace, cut)) {
    steps_.push_back({s.number, s.start_ns, s.end_ns});
  }
  warm_part_only_ = cut.prefix_ns > 0 && steps_.size() == 1 && steps_[0].number < 0;
  std::map<int32_t, int64_t> kernels_per_device, copies_per_device;
  double pinned_bytes = 0, pinned_ns = 0;
  BlockingLaunchTally blocking;  // CUDA_LAUNCH_BLOCKING=1 (causal_graph.h)
  for (size_t i = 0; i < ev.size(); ++i) {
    blocking.Add(ev, static_cast<uint32_t>(i));
    EventKind k = ev.kind[i];
    if (k != EventKind::kKernel && k != EventKind::kMemcpy && k != EventKind::kMemset) continue;
    has_gpu_ = true;
    gpu_busy_.push_back({ev.ts[i], ev.end(i)});
    if (k == EventKind::kKernel) {
      kernel_busy_.push_back({ev.ts[i], ev.end(i)});
      kernels_per_device[trace.tracks[ev.track[i]].device]++;
      continue;
    }
    // (A run of copies alone, no kernel, still names its GPU by them.)
    copies_per_device[trace.tracks[ev.track[i]].device]++;
    if (k == EventKind::kMemcpy && ev.bytes[i] >= kBandwidthCopyMinBytes) {
      const std::string_view name = trace.Name(i);
      if (IsHostCopy(name) && HostMemoryOf(name) == HostMemory::kPinned) {
        pinned_bytes += static_cast<double>(ev.bytes[i]);
        pinned_ns += static_cast<double>(ev.dur[i]);
      }
    }
  }
  if (pinned_ns > 0) measured_pinned_gbps_ = pinned_bytes / pinned_ns;
  MergeIntervals(&gpu_busy_);
  first_calls_ = OneTimeFirstCalls(trace, gpu_busy_);
  launches_block_ = blocking.RunBlocks();
  collective_name_.assign(trace.strings.size(), 0);
  runtime_flags_.assign(trace.strings.size(), 0);
  hash_name_.assign(trace.strings.size(), 0);
  // forward_only: names of backward's or an optimizer's ops (autograd::engine::evaluate_function,
  // MmBackward0 / the 2021 profiler's AddmmBackward, Optimizer.step#Adam.step, ...).
  std::vector<uint8_t> trains(trace.strings.size(), 0);
  for (size_t id = 0; id < collective_name_.size(); ++id) {
    const std::string_view name = trace.strings.Get(static_cast<StringId>(id));
    collective_name_[id] = IsCollectiveKernel(name) ? 1 : 0;
    runtime_flags_[id] = RuntimeCallFlags(name);
    hash_name_[id] = Contains(name, "#") ? 1 : 0;
    trains[id] = StartsWith(name, "autograd::engine") || Contains(name, "Backward") ||
                 StartsWith(name, "Optimizer.");
  }
  MergeIntervals(&kernel_busy_);
  // One pass over the ops and runtime calls: whether any op trains, the graph captures and
  // launches, and the framework ops (outside annotations) with a synchronize call under them.
  bool ops = false, training_op = false;
  std::vector<int32_t> capture_begins;
  int64_t graph_launches = 0;
  syncing_op_.assign(ev.size(), 0);
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] == EventKind::kCpuOp) {
      ops = true;
      training_op = training_op || trains[ev.name[i]];
      continue;
    }
    if (!IsLaunchKind(ev.kind[i])) continue;
    if (RuntimeFlags(i) & kRuntimeCaptureBegin) capture_begins.push_back(static_cast<int32_t>(i));
    if (RuntimeFlags(i) & kRuntimeGraphLaunch) ++graph_launches;
    if (!IsSyncCall(i)) continue;
    for (int32_t p = ev.parent[i], depth = 0; p >= 0 && depth < 4096 && !syncing_op_[p];
         p = ev.parent[p], ++depth) {
      if (!FrameworkOp(p)) break;
      syncing_op_[p] = 1;
    }
  }
  forward_only_ = ops && !training_op;
  replays_graphs_ = graph_launches > 0;
  capture_step_.assign(steps_.size(), 0);
  if (CapturesAreOneTime(capture_begins.size(), graph_launches)) {
    size_t n = 0;
    for (int32_t r : capture_begins) {
      const int s = StepOf(ev.ts[r]);
      if (s >= 0 && !capture_step_[s]) capture_step_[s] = 1, ++n;
    }
    if (2 * n >= steps_.size()) capture_step_.assign(steps_.size(), 0);
  }
  int32_t main_device = -1;
  int64_t most = -1;
  if (kernels_per_device.empty()) kernels_per_device = copies_per_device;
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

int64_t RuleContext::WaitAfterLastGpuActivity(int64_t ts, int64_t end) const {
  // Merged intervals: sorted by start and by end.
  auto after = std::upper_bound(gpu_busy_.begin(), gpu_busy_.end(), end,
                                [](int64_t t, const Interval& x) { return t < x.first; });
  int64_t last_end = ts;
  if (after != gpu_busy_.begin()) {
    if (std::prev(after)->second >= end) return 0;  // the GPU still works when it returns
    last_end = std::max(last_end, std::prev(after)->second);
  }
  return std::max<int64_t>(0, end - last_end);
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

int32_t RuleContext::TopOp(int32_t row) const { return TopOpOf(trace_, row); }

std::vector<int> RuleContext::WindowsOf(int64_t lo, int64_t hi) const {
  // Windows are equal, sorted and back to back (analysis/model/trace.h): start at the first one
  // that ends after |lo|.
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

bool RuleContext::IsDataLoaderName(std::string_view name) const {
  return ttap::IsDataLoaderName(name);
}

bool RuleContext::UnderSyncingOp(int32_t row) const {
  const EventTable& ev = trace_.events;
  for (int32_t p = ev.parent[row], depth = 0; p >= 0 && depth < 4096; p = ev.parent[p], ++depth) {
    if (syncing_op_[p]) return true;
    if (!FrameworkOp(p)) return false;
  }
  return false;
}

}  // namespace ttap

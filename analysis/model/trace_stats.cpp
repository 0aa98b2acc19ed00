// Trace statistics; see trace_stats.h.
#include "analysis/model/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analysis/base/string_util.h"

namespace ttap {

void MergeIntervals(std::vector<Interval>* v) {
  if (v->empty()) return;
  // Intervals gathered in the event table's order come sorted by start already (a trace's 2.5M
  // kernels sorted again cost more than the merge): the merge needs only that order.
  auto by_start = [](const Interval& a, const Interval& b) { return a.first < b.first; };
  if (!std::is_sorted(v->begin(), v->end(), by_start)) std::sort(v->begin(), v->end());
  size_t out = 0;
  for (size_t i = 1; i < v->size(); ++i) {
    if ((*v)[i].first <= (*v)[out].second) {
      (*v)[out].second = std::max((*v)[out].second, (*v)[i].second);
    } else {
      (*v)[++out] = (*v)[i];
    }
  }
  v->resize(out + 1);
}

int64_t TotalLength(const std::vector<Interval>& merged) {
  int64_t t = 0;
  for (auto& [a, b] : merged) t += b - a;
  return t;
}

int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  size_t i = 0, j = 0;
  int64_t t = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].first, b[j].first);
    int64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) t += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return t;
}

int64_t ClippedLength(const std::vector<Interval>& merged, int64_t lo, int64_t hi) {
  auto it =
      std::lower_bound(merged.begin(), merged.end(), Interval{lo, INT64_MIN},
                       [](const Interval& x, const Interval& y) { return x.second < y.first; });
  int64_t t = 0;
  for (; it != merged.end() && it->first < hi; ++it) {
    int64_t a = std::max(it->first, lo), b = std::min(it->second, hi);
    if (b > a) t += b - a;
  }
  return t;
}

namespace {

Breakdown BreakdownOver(const std::vector<Interval>& kernels, const std::vector<Interval>& all_gpu,
                        int64_t lo, int64_t hi) {
  Breakdown b;
  b.span_ns = std::max<int64_t>(0, hi - lo);
  b.kernel_ns = ClippedLength(kernels, lo, hi);
  int64_t busy = ClippedLength(all_gpu, lo, hi);
  b.data_movement_ns = busy - b.kernel_ns;
  b.idle_ns = b.span_ns - busy;
  return b;
}

}  // namespace

HtaKernelType ClassifyHtaKernel(std::string_view n) {
  if (StartsWith(n, "nccl") || StartsWith(n, "hip") || StartsWith(n, "hccl") ||
      Contains(n, "ncclKernel")) {
    return HtaKernelType::kCommunication;
  }
  if (StartsWith(n, "Memcpy") || StartsWith(n, "Memset") || StartsWith(n, "dma")) {
    return HtaKernelType::kMemory;
  }
  bool excluded = StartsWith(n, "nccl") || Contains(n, "Memcpy") || Contains(n, "Memset") ||
                  Contains(n, "dma") || Contains(n, "Sync") || StartsWith(n, "Stream Wait Event") ||
                  StartsWith(n, "runFunction") || StartsWith(n, "hip") ||
                  StartsWith(n, "job_exe") || StartsWith(n, "packet") || StartsWith(n, "pe_exe") ||
                  StartsWith(n, "cpum_exe_subgraph") || StartsWith(n, "hccl") ||
                  StartsWith(n, "collective_subgraph_execution");
  if (!excluded && StartsWith(n, "cuda")) {
    size_t k = n.find("LaunchKernel");
    excluded = k != std::string_view::npos;
  }
  return excluded ? HtaKernelType::kOther : HtaKernelType::kComputation;
}

HtaFigures ComputeHtaFigures(const Trace& trace) {
  const EventTable& ev = trace.events;
  const size_t n = ev.size();
  HtaFigures h;
  // Rows HTA keeps: with dur and cat, not cat "Trace".
  auto kept_row = [&](size_t i) {
    return (ev.flags[i] & kHasDur) && (ev.flags[i] & kHasCat) &&
           ev.kind[i] != EventKind::kTraceSpan;
  };
  auto is_gpu_row = [&](size_t i) {
    if (ev.stream[i] >= 0 && ev.correlation[i] >= 0) return true;
    std::string_view name = trace.Name(i);
    return name == "Event Sync" || name == "Context Sync";
  };
  std::set<StringId> step_names;
  for (size_t i = 0; i < n; ++i) {
    if (kept_row(i) && StartsWith(trace.Name(i), "ProfilerStep#")) step_names.insert(ev.name[i]);
  }
  std::vector<char> keep(n, 0);
  h.last_step_filter_applied = step_names.size() >= 2;
  if (!h.last_step_filter_applied) {
    for (size_t i = 0; i < n; ++i) keep[i] = kept_row(i);
  } else {
    int64_t last_start = INT64_MIN;
    for (size_t i = 0; i < n; ++i) {
      if (kept_row(i) && !is_gpu_row(i) && StartsWith(trace.Name(i), "ProfilerStep")) {
        last_start = std::max(last_start, ev.ts[i]);
      }
    }
    std::unordered_set<int64_t> cpu_corr;
    for (size_t i = 0; i < n; ++i) {
      if (kept_row(i) && !is_gpu_row(i) && ev.ts[i] < last_start) {
        keep[i] = 1;
        cpu_corr.insert(ev.correlation[i]);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (kept_row(i) && is_gpu_row(i) && cpu_corr.count(ev.correlation[i])) keep[i] = 1;
    }
  }
  // Iteration numbers as digit strings without leading zeros: Python's int() has no size limit.
  std::set<std::string_view> iterations;
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    std::string_view name = trace.Name(i);
    if (!StartsWith(name, "ProfilerStep#") || name.size() == 13) continue;
    std::string_view digits = name.substr(13);
    bool ok =
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!ok) continue;
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    iterations.insert(digits);
  }
  h.iterations = static_cast<int64_t>(iterations.size());

  std::vector<Interval> all, comp, comm;
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i] || ev.stream[i] == -1) continue;
    Interval iv{ev.ts[i], ev.end(i)};
    all.push_back(iv);
    HtaKernelType type = ClassifyHtaKernel(trace.Name(i));
    if (type == HtaKernelType::kComputation) comp.push_back(iv);
    if (type == HtaKernelType::kCommunication) comm.push_back(iv);
  }
  h.gpu_events_considered = static_cast<int64_t>(all.size());
  if (all.empty()) return h;
  h.has_gpu_events = true;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (auto& [a, b] : all) {
    first = std::min(first, a);
    last = std::max(last, b);
  }
  MergeIntervals(&all);
  MergeIntervals(&comp);
  MergeIntervals(&comm);
  int64_t kernel_time = last - first;
  int64_t idle = kernel_time - TotalLength(all);
  int64_t compute = TotalLength(comp);
  h.kernel_time_us = kernel_time / 1000.0;
  h.idle_time_us = idle / 1000.0;
  h.compute_time_us = compute / 1000.0;
  h.non_compute_time_us = (kernel_time - compute - idle) / 1000.0;
  int64_t comm_total = TotalLength(comm);
  if (comm_total > 0) {
    double pct = 100.0 * IntersectionLength(comm, comp) / comm_total;
    h.comm_comp_overlap_pct = std::round(pct * 100.0) / 100.0;
  }
  return h;
}

TraceSummary Summarize(const Trace& trace, size_t top_n, bool hta) {
  const EventTable& ev = trace.events;
  const size_t n = ev.size();
  TraceSummary s;

  // Device type.
  bool amd = false, nvidia = false, mtia = false;
  for (const auto& d : trace.devices) {
    if (!d.used && !d.name.empty()) continue;
    if (Contains(d.name, "AMD") || Contains(d.name, "Instinct") || Contains(d.name, "Radeon"))
      amd = true;
    else if (Contains(d.name, "NVIDIA") || Contains(d.name, "Tesla") ||
             Contains(d.name, "Quadro") || Contains(d.name, "GeForce"))
      nvidia = true;
    else if (Contains(d.name, "ARTEMIS") || Contains(d.name, "MTIA"))
      mtia = true;
  }
  std::map<EventKind, int64_t> counts;
  bool any_gpu = false, hip = false, cuda = false;
  std::vector<Interval> kernels, all_gpu;
  std::map<std::pair<int32_t, int32_t>, StreamSummary> streams;
  std::map<std::pair<int32_t, int32_t>, std::vector<Interval>> stream_busy;
  std::unordered_map<StringId, NameSummary> kernel_names;
  for (size_t i = 0; i < n; ++i) {
    EventKind k = ev.kind[i];
    counts[k]++;
    if (IsLaunchKind(k)) {
      std::string_view name = trace.Name(i);
      if (StartsWith(name, "hip")) hip = true;
      if (StartsWith(name, "cuda") || StartsWith(name, "cu")) cuda = true;
    }
    if (k != EventKind::kKernel && k != EventKind::kMemcpy && k != EventKind::kMemset) continue;
    any_gpu = true;
    Interval iv{ev.ts[i], ev.end(i)};
    all_gpu.push_back(iv);
    const Track& tr = trace.tracks[ev.track[i]];
    auto key = std::make_pair(tr.device, ev.stream[i]);
    StreamSummary& ss = streams[key];
    ss.device = tr.device;
    ss.stream = ev.stream[i];
    ss.count++;
    stream_busy[key].push_back(iv);
    if (k == EventKind::kKernel) {
      kernels.push_back(iv);
      ss.kernel_ns += ev.dur[i];
      s.total_kernel_ns += ev.dur[i];
      NameSummary& ks = kernel_names[ev.name[i]];
      ks.name = ev.name[i];
      ks.count++;
      ks.total_ns += ev.dur[i];
      ks.max_ns = std::max(ks.max_ns, ev.dur[i]);
    } else if (k == EventKind::kMemcpy) {
      ss.memcpy_ns += ev.dur[i];
    } else {
      ss.memset_ns += ev.dur[i];
    }
  }
  // MTIA traces without deviceProperties still carry their device category.
  if (trace.strings.Find("mtia_ccp_events") != kEmptyString) mtia = true;
  if (amd || hip)
    s.device_type = "AMD GPU";
  else if (nvidia || (cuda && any_gpu))
    s.device_type = "NVIDIA GPU";
  else if (mtia)
    s.device_type = "MTIA";
  else
    s.device_type = any_gpu ? "GPU" : "CPU";
  for (auto& [k, v] : counts) s.counts.emplace_back(k, v);

  for (auto& [key, ss] : streams) {
    auto& busy = stream_busy[key];
    MergeIntervals(&busy);
    ss.busy_ns = TotalLength(busy);
    ss.span_ns = busy.empty() ? 0 : busy.back().second - busy.front().first;
    s.streams.push_back(ss);
  }
  MergeIntervals(&kernels);
  MergeIntervals(&all_gpu);

  for (const Step& st : trace.steps) {
    StepSummary ss;
    ss.number = st.number;
    ss.start_ns = st.start();
    ss.end_ns = st.end();
    ss.cpu_ns = st.cpu_end - st.cpu_start;
    ss.breakdown = BreakdownOver(kernels, all_gpu, ss.start_ns, ss.end_ns);
    s.steps.push_back(ss);
  }
  // Each GPU activity counts for the first step (by CPU start) whose CPU span holds its launch:
  // a binary search, then back over the steps that may still hold it (the running maximum of
  // their ends), not a scan of every step per activity (100k steps). An activity without a
  // recorded launch (a TensorRT engine's kernels, enqueued inside the library) counts for the
  // step whose span holds its own start.
  const std::vector<Step>& steps = trace.steps;
  std::vector<int64_t> max_end(steps.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    max_end[k] = std::max({k ? max_end[k - 1] : INT64_MIN, steps[k].cpu_end, steps[k].end()});
  }
  for (size_t i = 0; i < n && !steps.empty(); ++i) {
    if (!IsGpuKind(ev.kind[i])) continue;
    const bool launched = ev.link[i] >= 0;
    const int64_t t = launched ? ev.ts[ev.link[i]] : ev.ts[i];
    auto after = std::upper_bound(steps.begin(), steps.end(), t,
                                  [](int64_t x, const Step& st) { return x < st.cpu_start; });
    int64_t found = -1;
    for (int64_t k = (after - steps.begin()) - 1; k >= 0 && max_end[k] > t; --k) {
      const int64_t end = launched ? steps[k].cpu_end : steps[k].end();
      if (t >= steps[k].cpu_start && t < end) found = k;
    }
    if (found >= 0) s.steps[found].kernels++;
  }
  if (!s.steps.empty()) {
    for (const auto& st : s.steps) {
      s.overall.span_ns += st.breakdown.span_ns;
      s.overall.kernel_ns += st.breakdown.kernel_ns;
      s.overall.data_movement_ns += st.breakdown.data_movement_ns;
      s.overall.idle_ns += st.breakdown.idle_ns;
    }
  } else if (n > 0) {
    s.overall = BreakdownOver(kernels, all_gpu, trace.span_start(), trace.span_end());
  }

  for (auto& [id, ks] : kernel_names) s.top_kernels.push_back(ks);
  auto by_total = [](const NameSummary& a, const NameSummary& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  };
  std::sort(s.top_kernels.begin(), s.top_kernels.end(), by_total);
  if (s.top_kernels.size() > top_n) s.top_kernels.resize(top_n);

  // Self time of CPU ops: a per-thread stack over the sorted rows (no per-row scratch column).
  std::unordered_map<StringId, NameSummary> ops;
  struct OpenOp {
    int64_t end;
    uint32_t row;
    int64_t child_ns;
  };
  std::vector<std::vector<OpenOp>> stacks(trace.tracks.size());
  auto close = [&](const OpenOp& o) {
    if (ev.kind[o.row] != EventKind::kCpuOp || StartsWith(trace.Name(o.row), "ProfilerStep#"))
      return;
    NameSummary& op = ops[ev.name[o.row]];
    op.name = ev.name[o.row];
    op.count++;
    op.total_ns += std::max<int64_t>(0, ev.dur[o.row] - o.child_ns);
    op.max_ns = std::max(op.max_ns, ev.dur[o.row]);
  };
  for (size_t i = 0; i < n; ++i) {
    auto& st = stacks[ev.track[i]];
    while (!st.empty() && st.back().end <= ev.ts[i]) {
      close(st.back());
      st.pop_back();
    }
    if (ev.kind[i] == EventKind::kInstant) continue;
    if (!st.empty()) st.back().child_ns += ev.dur[i];
    if (ev.dur[i] > 0) {
      st.push_back({ev.end(i), static_cast<uint32_t>(i), 0});
    } else {
      close({ev.end(i), static_cast<uint32_t>(i), 0});
    }
  }
  for (auto& st : stacks) {
    for (auto it = st.rbegin(); it != st.rend(); ++it) close(*it);
  }
  for (auto& [id, o] : ops) s.top_cpu_ops.push_back(o);
  std::sort(s.top_cpu_ops.begin(), s.top_cpu_ops.end(), by_total);
  if (s.top_cpu_ops.size() > top_n) s.top_cpu_ops.resize(top_n);

  if (hta) s.hta = ComputeHtaFigures(trace);
  return s;
}

}  // namespace ttap

// EventTable helpers, kind names, span and windows; see trace.h.
#include "analysis/model/trace.h"

#include <algorithm>

namespace ttap {

const char* EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kCpuOp:
      return "cpu_op";
    case EventKind::kPythonFunction:
      return "python_function";
    case EventKind::kUserAnnotation:
      return "user_annotation";
    case EventKind::kGpuUserAnnotation:
      return "gpu_user_annotation";
    case EventKind::kRuntime:
      return "runtime";
    case EventKind::kDriver:
      return "driver";
    case EventKind::kKernel:
      return "kernel";
    case EventKind::kMemcpy:
      return "memcpy";
    case EventKind::kMemset:
      return "memset";
    case EventKind::kGpuSync:
      return "gpu_sync";
    case EventKind::kInstant:
      return "instant";
    case EventKind::kTraceSpan:
      return "trace";
    case EventKind::kOther:
      return "other";
  }
  return "other";
}

void EventTable::Reserve(size_t n) {
  ts.reserve(n);
  dur.reserve(n);
  name.reserve(n);
  cat.reserve(n);
  kind.reserve(n);
  flags.reserve(n);
  track.reserve(n);
  stream.reserve(n);
  correlation.reserve(n);
  external_id.reserve(n);
  call_stack.reserve(n);
  python_id.reserve(n);
  python_parent.reserve(n);
  bytes.reserve(n);
  device.reserve(n);
}

void EventTable::ReleaseDefaultColumns() {
  if (std::all_of(call_stack.begin(), call_stack.end(),
                  [](StringId v) { return v == kEmptyString; })) {
    std::vector<StringId>().swap(call_stack);
  }
  if (std::all_of(python_id.begin(), python_id.end(), [](int32_t v) { return v == -1; })) {
    std::vector<int32_t>().swap(python_id);
  }
  if (std::all_of(frame.begin(), frame.end(), [](int32_t v) { return v == -1; })) {
    std::vector<int32_t>().swap(frame);
  }
}

void EventTable::ReleaseColumnsStatsSkips() {
  std::vector<StringId>().swap(cat);
  std::vector<uint16_t>().swap(depth);
  std::vector<int64_t>().swap(external_id);
  std::vector<int32_t>().swap(python_parent);
  std::vector<StringId>().swap(call_stack);
  std::vector<int32_t>().swap(frame);
}

namespace {
// Rows that take time: not the profiler's own window (Trace) nor instants ("Record Window End"
// can lie seconds after the last work).
bool IsWork(EventKind k) { return k != EventKind::kTraceSpan && k != EventKind::kInstant; }
}  // namespace

int64_t Trace::span_start() const {
  if (!steps.empty()) return steps.front().start();
  int64_t s = INT64_MAX;
  for (size_t i = 0; i < events.size(); ++i) {
    if (!IsWork(events.kind[i])) continue;
    return events.ts[i];  // rows are sorted by ts
  }
  return s == INT64_MAX ? 0 : s;
}

int64_t Trace::span_end() const {
  if (!steps.empty()) {
    int64_t e = steps.front().end();
    for (const Step& s : steps) e = std::max({e, s.end(), s.gpu_work_end});
    return e;
  }
  int64_t e = 0;
  bool any = false;
  for (size_t i = 0; i < events.size(); ++i) {
    if (!IsWork(events.kind[i])) continue;
    e = any ? std::max(e, events.end(i)) : events.end(i);
    any = true;
  }
  return e;
}

std::vector<int64_t> EndsOfLaunchedGpuWork(const EventTable& ev, const std::vector<int64_t>& starts,
                                           const std::vector<int64_t>& cpu_ends) {
  std::vector<int64_t> gpu_end = cpu_ends;
  if (starts.empty()) return gpu_end;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (!IsGpuKind(ev.kind[i]) || ev.link[i] < 0) continue;
    const int64_t launch_ts = ev.ts[ev.link[i]];
    auto it = std::upper_bound(starts.begin(), starts.end(), launch_ts);
    if (it == starts.begin()) continue;
    const size_t k = static_cast<size_t>(it - starts.begin()) - 1;
    if (launch_ts < cpu_ends[k]) gpu_end[k] = std::max(gpu_end[k], ev.end(i));
  }
  return gpu_end;
}

Window MakeWindow(const Trace& trace, int64_t start_ns, int64_t end_ns) {
  const auto& ts = trace.events.ts;
  Window w;
  w.start_ns = start_ns;
  w.end_ns = end_ns;
  w.begin = static_cast<uint32_t>(std::lower_bound(ts.begin(), ts.end(), start_ns) - ts.begin());
  w.end = static_cast<uint32_t>(std::lower_bound(ts.begin(), ts.end(), end_ns) - ts.begin());
  return w;
}

void BuildWindows(Trace* trace, int count) {
  trace->windows.clear();
  trace->step_windows.clear();
  for (size_t s = 0; s < trace->steps.size(); ++s) {
    Window w = MakeWindow(*trace, trace->steps[s].start(), trace->steps[s].end());
    w.step = static_cast<int32_t>(s);
    trace->step_windows.push_back(w);
  }
  if (trace->events.size() == 0 || count <= 0) return;
  const int64_t start = trace->span_start();
  const int64_t end = std::max(trace->span_end(), start + 1);
  const int64_t span = end - start;
  for (int k = 0; k < count; ++k) {
    int64_t a = start + static_cast<int64_t>(static_cast<__int128>(span) * k / count);
    int64_t b = start + static_cast<int64_t>(static_cast<__int128>(span) * (k + 1) / count);
    // The last window also takes rows that start exactly at the span's end (instants).
    Window w = MakeWindow(*trace, a, k + 1 == count ? b + 1 : b);
    w.end_ns = b;
    // The step that contains the window's midpoint.
    int64_t mid = a + (b - a) / 2;
    for (size_t s = 0; s < trace->steps.size(); ++s) {
      if (mid >= trace->steps[s].start() && mid < trace->steps[s].end()) {
        w.step = static_cast<int32_t>(s);
        break;
      }
    }
    trace->windows.push_back(w);
  }
}

}  // namespace ttap

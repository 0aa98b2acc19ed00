// Row queries shared by the rules and the causal model; see trace_queries.h.
#include "analysis/model/trace_queries.h"

#include <algorithm>

#include "analysis/base/string_util.h"

namespace ttap {

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

bool IsDataLoaderName(std::string_view name) {
  return StartsWith(name, "enumerate(DataLoader)#") || StartsWith(name, "enumerate(DataPipe)#") ||
         (name.find("DataLoader") != std::string_view::npos &&
          name.find("__next__") != std::string_view::npos);
}

}  // namespace ttap

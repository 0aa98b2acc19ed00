// Row queries shared by the rules and the causal model; see trace_queries.h.
#include "analysis/model/trace_queries.h"

#include <algorithm>
#include <vector>

#include "analysis/base/string_util.h"
#include "analysis/model/host_copies.h"

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
    if (ev.kind[g] != EventKind::kMemcpy || !IsD2H(trace.Name(g))) return true;
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

bool IsProfilerOverhead(const Trace& trace, size_t row) {
  if (trace.events.kind[row] != EventKind::kOther) return false;
  const std::string_view n = trace.Name(row);
  return n == "Activity Buffer Request" || n == "Buffer Flush" || n == "Instrumentation" ||
         n == "Resource";
}

std::string_view PythonCallOf(std::string_view n) {
  std::string_view name;
  if (StartsWith(n, "<built-in function ")) {
    name = n.substr(19);
    name = name.substr(0, name.find('>'));
  } else if (StartsWith(n, "<built-in method ")) {
    name = n.substr(17);
    name = name.substr(0, name.find(' '));
  } else {
    // "file.py(42): func": the first "): " after a parenthesised line number.
    for (size_t close = n.find("): "); close != std::string_view::npos;
         close = n.find("): ", close + 1)) {
      const size_t open = n.rfind('(', close);
      if (open == std::string_view::npos || open == 0 || open + 1 == close || close - open > 10) {
        continue;
      }
      const std::string_view digits = n.substr(open + 1, close - open - 1);
      if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        name = n.substr(close + 3);
        break;
      }
    }
  }
  if (name.empty() || name.front() == '<') return {};
  return name;
}

std::map<std::pair<StringId, int64_t>, int64_t> FastestCollectives(const Trace& trace) {
  const EventTable& ev = trace.events;
  std::vector<int8_t> collective(trace.strings.size(), -1);  // per name id, -1 not yet known
  std::map<std::pair<StringId, int64_t>, std::pair<int64_t, size_t>> runs;  // fastest, count
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::kKernel || ev.bytes[i] < 0) continue;
    int8_t& known = collective[ev.name[i]];
    if (known < 0) known = IsCollectiveKernel(trace.Name(i)) ? 1 : 0;
    if (!known) continue;
    auto [it, added] = runs.try_emplace({ev.name[i], ev.bytes[i]}, ev.dur[i], 0);
    it->second.first = std::min(it->second.first, ev.dur[i]);
    ++it->second.second;
  }
  std::map<std::pair<StringId, int64_t>, int64_t> out;
  for (const auto& [key, fastest] : runs) {
    if (fastest.second >= kPeerWaitMinRuns) out[key] = fastest.first;
  }
  return out;
}

std::vector<HostStall> OneOffHostStalls(const Trace& trace) {
  const EventTable& ev = trace.events;
  // Names with a long call (rare): only their calls are tallied.
  std::vector<uint8_t> candidate(trace.strings.size(), 0);
  bool any = false;
  // Ops that move data take as long as their tensors are large (a 400 MB upload beside 4 kB
  // ones) or wait for the device (.item()): no stall by their length alone.
  auto moves_data = [](std::string_view n) {
    return Contains(n, "copy") || n == "aten::to" || Contains(n, "clone") ||
           Contains(n, "contiguous") || n == "aten::cat" || n == "aten::stack" ||
           Contains(n, "pin_memory") || Contains(n, "item") || Contains(n, "scalar_dense");
  };
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] == EventKind::kCpuOp && ev.dur[i] >= kHostStallMinNs && !candidate[ev.name[i]] &&
        !moves_data(trace.Name(i))) {
      candidate[ev.name[i]] = 1;
      any = true;
    }
  }
  if (!any) return {};
  // Per candidate name: its first call, its longest, the longest of the others, how many.
  struct Calls {
    int32_t first = -1, longest = -1;
    int64_t second_ns = 0;
    size_t count = 0;
    int64_t under_longest_ns = 0;  // the longest call's time in what is recorded under it
  };
  std::map<StringId, Calls> calls;
  std::vector<int32_t> longest_of(trace.strings.size(), -1);
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::kCpuOp || !candidate[ev.name[i]]) continue;
    Calls& c = calls[ev.name[i]];
    const int32_t r = static_cast<int32_t>(i);
    ++c.count;
    if (c.first < 0 || ev.ts[r] < ev.ts[c.first]) c.first = r;
    if (c.longest < 0 || ev.dur[r] > ev.dur[c.longest]) {
      if (c.longest >= 0) c.second_ns = std::max(c.second_ns, ev.dur[c.longest]);
      c.longest = r;
    } else {
      c.second_ns = std::max(c.second_ns, ev.dur[r]);
    }
    longest_of[ev.name[i]] = c.longest;
  }
  // The stall is the call's own time: what is recorded under the longest calls comes off.
  for (size_t i = 0; i < ev.size(); ++i) {
    const int32_t p = ev.parent[i];
    if (p >= 0 && longest_of[ev.name[p]] == p) calls[ev.name[p]].under_longest_ns += ev.dur[i];
  }
  std::vector<HostStall> out;
  for (const auto& [name, c] : calls) {
    if (c.count < kHostStallMinOthers + 1) continue;
    const int64_t own = ev.dur[c.longest] - c.under_longest_ns;
    if (c.longest == c.first || own < kHostStallMinNs || own < kHostStallRatio * c.second_ns) {
      continue;
    }
    out.push_back({c.longest, c.count - 1, c.second_ns});
  }
  std::sort(out.begin(), out.end(),
            [](const HostStall& a, const HostStall& b) { return a.row < b.row; });
  return out;
}

}  // namespace ttap

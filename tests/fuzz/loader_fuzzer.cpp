// libFuzzer target: LoadTraceFromMemory on any bytes, then stats, frames and Trace invariants.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "analysis/causal/causal_graph.h"
#include "analysis/load/trace_loader.h"
#include "analysis/model/trace.h"
#include "analysis/model/trace_stats.h"
#include "mapping/python_frames.h"

namespace {

constexpr int kWindows = 8;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

void CheckInvariants(const ttap::Trace& t) {
  const ttap::EventTable& ev = t.events;
  const size_t n = ev.size();
  Check(ev.dur.size() == n && ev.depth.size() == n && ev.parent.size() == n &&
            ev.link.size() == n && (ev.frame.empty() || ev.frame.size() == n) &&
            ev.track.size() == n,
        "columns of equal length");
  for (size_t i = 0; i < n; ++i) {
    Check(ev.dur[i] >= 0, "dur >= 0");
    if (i > 0) Check(ev.ts[i - 1] <= ev.ts[i], "rows sorted by ts");
    Check(ev.track[i] < t.tracks.size(), "track in range");
    Check(ev.parent[i] < static_cast<int32_t>(i), "parent precedes its child");
    Check(ev.Frame(i) < static_cast<int32_t>(i), "frame precedes the row");
    Check(ev.link[i] >= -1 && ev.link[i] < static_cast<int32_t>(n), "link in range");
    Check(ev.name[i] < t.strings.size(), "name interned");
  }
  Check(n == 0 || t.windows.size() == kWindows, "exactly N windows");
  for (size_t w = 0; w < t.windows.size(); ++w) {
    const ttap::Window& win = t.windows[w];
    Check(win.begin <= win.end && win.end <= n, "window index range");
    if (w > 0) Check(win.begin == t.windows[w - 1].end, "windows are contiguous");
  }
  for (const ttap::Step& s : t.steps) {
    Check(s.event >= 0 && static_cast<size_t>(s.event) < n, "step event in range");
    Check(s.gpu_end >= s.cpu_end && s.cpu_end >= s.cpu_start, "step ends ordered");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ttap::LoadOptions opts;
  opts.threads = 1;
  opts.chunk_bytes = 4096;  // the loader's minimum: chunk boundaries fall inside small inputs
  opts.window_count = kWindows;
  auto loaded = ttap::LoadTraceFromMemory(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json", opts);
  if (!loaded.ok()) {
    Check(!loaded.status().message().empty(), "errors have a message");
    return 0;
  }
  const ttap::Trace& trace = **loaded;
  CheckInvariants(trace);
  ttap::TraceSummary summary = ttap::Summarize(trace);
  // The causal model too (graph, replay, attribution): what `ttap stats` adds to the summary.
  const ttap::TimeBreakdown time = ttap::WhereTimeWent(trace);
  Check(time.step_numbers.size() == time.steps.size(), "a breakdown per step");
  ttap::HtaFigures hta = ttap::ComputeHtaFigures(trace);
  Check(hta.idle_time_us <= hta.kernel_time_us, "HTA idle <= kernel time");
  Check(summary.hta.gpu_events_considered == hta.gpu_events_considered, "HTA figures agree");
  for (size_t i = 0; i < trace.events.size() && i < 4096; ++i) {
    (void)ttap::FramesOf(trace, i);
  }
  return 0;
}

// What a run's findings mean, in words and numbers: a finding's explanation (the editor's hover,
// SARIF's message.markdown, `ttap scan --format markdown`) and the run's summary (the editor's
// "ttap: Show trace summary", the Markdown report). Computed here once for both front-ends, from
// the core's scan (scan_trace.h); Markdown, no JSON or LSP. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/base/cancel.h"
#include "analysis/model/job_analysis.h"
#include "analysis/model/trace_stats.h"
#include "server/core/scan_trace.h"

namespace ttap {

// What the explanations need of the trace's events, taken before they are released.
struct RunFacts {
  int64_t span_start_ns = 0;
  bool has_gpu = false;                            // the trace has GPU activity
  std::vector<Interval> gpu_busy;                  // merged kernel/memcpy/memset intervals
  std::unordered_map<int64_t, size_t> step_index;  // step number -> rules.time.steps index
};
// |scan|'s facts; its trace must still hold its events.
RunFacts RunFactsOf(const ScanResult& scan);

// The summary's lines above the findings: the trace, GPU activity, where the steps' time went,
// what the fixes save together, the job |rank| belongs to. |scan|'s trace must hold its events.
std::string SummaryHead(const ScanResult& scan, const JobAnalysis& job, int rank);
// The summary: |head| and the findings at info and above, one per code and line, each on the
// line |line_now| gives for its index (the line it has moved to in an edited buffer), else its
// own; the rest counted.
std::string SummaryMarkdown(const std::string& head, const ScanResult& scan,
                            const std::map<size_t, int>& line_now, const CancelToken& cancel);

// A finding's explanation: its numbers, top events, the GPU's busy share over it, where its
// steps' time went, what its fix saves and how that is known, its stack, whose wait it is in a
// job, and the fix and docs. The diagnostic's own sentence is not repeated.
std::string FindingMarkdown(const ScanResult& scan, const RunFacts& facts, const JobAnalysis& job,
                            int rank, const LocatedFinding& lf);

}  // namespace ttap

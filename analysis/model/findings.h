// Finding: what a rule reports about a trace (the catalogue in docs/antipatterns.md), and the
// rule options that tune the detectors. Produced by RunRules (rules.h), enriched with source
// locations by mapping/, rendered by the server (scan text/JSON/SARIF, LSP diagnostics).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ttap {

enum class Severity { kError, kWarning, kInfo, kHint };
const char* SeverityName(Severity s);  // "error", "warning", "info", "hint"
bool ParseSeverity(const std::string& text, Severity* out);
// "12.3%" for a share of 0.123; "41.2 ms" / "0.14 ms" / "0.052 ms" for microseconds.
std::string FormatPercent(double share);
std::string FormatMs(double us);

struct FindingFrame {
  std::string file;  // as recorded in the trace
  int line = 0;      // 1-based
  std::string function;
};

// How a number of a finding's evidence combines when RunRules merges the per-step findings of
// one cause: a count or a duration adds up; a rate or a ratio (GB/s, a speedup) is the steps'
// mean; an extreme (the longest gap) is their maximum.
enum class EvidenceMerge { kSum, kMean, kMax };

// One value of a finding's evidence: a number or a text.
struct EvidenceValue {
  bool is_number = true;
  double number = 0;
  std::string text;
  EvidenceMerge merge = EvidenceMerge::kSum;
};

struct EvidenceEvent {
  std::string name;
  int64_t count = 0;
  double total_us = 0;
};

struct Finding {
  std::string code;  // "TTA001"
  std::string name;  // "dataloader-stall"
  Severity severity = Severity::kInfo;
  std::string message;   // one line, with the numbers
  int64_t start_ns = 0;  // extent in the trace's clock
  int64_t end_ns = 0;
  // Detectors: the [start, end) of each occurrence the raw finding stands for (e.g. each sync of
  // one call site in a step); RunRules marks only the windows these touch, not every window of
  // the extent between them. Empty means the extent is one occurrence.
  std::vector<std::pair<int64_t, int64_t>> occurrences;
  // Detectors: the trace rows the cause is made of, which its fix changes
  // (analysis/causal/what_if.h): a CPU region (DataLoader __next__, zero_grad, optimizer step,
  // empty_cache) stands for everything under it; a runtime call or GPU activity for itself.
  std::vector<int32_t> rows;
  double time_lost_us_per_step = 0;  // mean over the steps where it occurs... see rules.cpp
  double share_of_step = 0;          // 0..1
  std::vector<int64_t> step_ids;     // ProfilerStep numbers
  std::vector<int> window_indices;   // 0-based, into Trace::windows
  std::vector<std::pair<int64_t, double>> per_step;  // (step, time lost us)
  std::map<std::string, EvidenceValue> evidence;
  std::vector<EvidenceEvent> top_events;
  int32_t anchor_row = -1;  // the CPU row whose python frames locate the cause
  std::string cause_key;    // detectors: raw findings with equal code and key merge across steps
  std::vector<FindingFrame> frames;  // innermost first
  std::string fix;                   // fix recipe id, empty when none
  // Set by the mapping layer: the responsible user frame (index into frames) or -1.
  int user_frame = -1;
};

// Rule thresholds, with documented defaults (docs/antipatterns.md); `[tool.ttap.thresholds]`
// overrides them by name.
struct RuleOptions {
  std::map<std::string, double> values;
  // Windows the learned scorer flagged ([start, end) ns, in order; server/core/scan_trace.cpp):
  // RunRules makes those that no rule finding overlaps TTA900 findings (adjacent ones merged),
  // costed like any other (their idle GPU time with the CPU work in it moved out, after every
  // fix).
  std::vector<std::pair<int64_t, int64_t>> unusual_windows;
  double Get(const std::string& key, double fallback) const {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
};

}  // namespace ttap

// Snapshot: what one analysis of the newest trace leaves for the editor's features (the scan with
// its located findings, their placement per file, the facts hovers and the summary read, the job,
// the LLM drafts), and AnalysisState: the snapshot shown with the findings' lines as edits moved
// them and the trace choice. The scheduler (scheduler.h) owns the state; the session's features
// read the snapshot as a read-only view.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/core/explain.h"
#include "server/core/scan_trace.h"
#include "server/llm/drafter.h"

namespace ttap::lsp {

// A finding placed in a file: its line as analysed in the snapshot; PlacedIn gives it as it
// has moved with the user's edits since (AnalysisState::moved_lines).
struct Placed {
  size_t finding;  // index into the snapshot's scan findings
  int line = 0;    // 1-based
  std::string function;
  bool source_newer_than_trace = false;  // as `ttap scan` found it: map the line the same way
};
struct Snapshot {
  std::string trace_path;
  int64_t trace_mtime = 0;
  std::unique_ptr<ScanResult> scan;
  std::map<std::string, std::vector<Placed>> by_file;  // absolute path -> findings
  // What hovers and the summary need, computed once by the worker, so the trace's events
  // (scan->trace) can be released after the analysis (and the LLM drafts, which read them).
  RunFacts facts;            // GPU activity, busy intervals, step index (server/core/explain.h)
  std::string summary_head;  // the summary's lines above the findings
  // The job this rank belongs to (its siblings in the trace's directory), when it is one:
  // TTA018 on this rank, and whose wait a collective finding's time is.
  JobAnalysis job;
  int rank = 0;
};

// What the analyses leave, owned by the scheduler and read or written under its state lock.
struct AnalysisState {
  // Replaced whole by the worker; features read it as a const view (the worker alone drops its
  // trace's events once drafted, which no feature reads).
  std::shared_ptr<Snapshot> snapshot;
  // The findings' lines as they move with the user's edits, per file, parallel to snapshot's
  // by_file[path] (cleared when snapshot is replaced): kept apart from the snapshot, which keeps
  // the lines as analysed.
  std::map<std::string, std::vector<int>> moved_lines;
  // Of the snapshot shown (cleared with it): hover text by finding index, made on first hover;
  // LLM drafts by finding index, filled in by the worker after publishing.
  std::map<size_t, std::string> hover_markdown;
  std::map<size_t, std::shared_ptr<const llm::FindingDraft>> drafts;
  // The trace shown and the traces passed over.
  std::string last_trace;
  int64_t last_trace_mtime = -1;
  // Traces that failed to load, by path, as (size, mtime) when they failed: passed over until
  // they change, so a broken newest trace is reported once and the newest one that loads is
  // shown instead of reloading the broken one forever.
  std::map<std::string, std::pair<int64_t, int64_t>> failed_traces;
  std::string last_failure;  // the latest load error, for the status
};

}  // namespace ttap::lsp

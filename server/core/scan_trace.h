// The core's scan of one loaded trace, what both front-ends show: the rules run, each finding
// located in the workspace (its responsible user frame, narrowed to the call or loop header by
// mapping/source_ranges.h, re-anchored or marked stale when the file changed after the trace,
// or placed by its fix's shape when the trace has no stacks), `# ttap: ignore[...]` honoured, the
// learned scorer's unusual windows added, the job the trace's rank belongs to, and the fix request
// of each finding. No JSON, no LSP: `ttap scan` (server/scan.h) and the language server
// (server/lsp/) render what this computes; server/core/analysis_core.h adds the caches.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/model/findings.h"
#include "analysis/model/job_analysis.h"
#include "analysis/model/trace.h"
#include "analysis/rules/rules.h"
#include "mapping/quick_fixes.h"
#include "mapping/workspace_index.h"
#include "server/window_fusion.h"

namespace ttap {

class SourceCache;
class WindowModel;

struct LocatedFinding {
  Finding finding;
  std::string file;           // workspace-relative when resolved, as recorded otherwise; "" = none
  std::string absolute_path;  // resolved file, "" when not resolved
  int line = 0;               // 1-based; 0 = none
  std::string function;       // the function its line was mapped in (frame's or shape's), or ""
  int column = 0;             // 1-based in Unicode code points; 0 = none
  int end_line = 0;           // end of the narrowed range, 1-based; 0 = none
  int end_column = 0;         // 1-based code points, exclusive (the column just past the range)
  bool stale = false;  // the file changed after the trace and the line could not be re-anchored
  std::string stale_reason;
  // The file was modified after the trace: its line is verified against the code's shape, and
  // re-anchored when it does not match (the language server maps the buffer the same way).
  bool source_newer_than_trace = false;
  std::vector<std::string> ambiguous;  // candidate files when the frame path was ambiguous
  // No Python stack: placed on the workspace's one statement with the code's shape
  // (mapping/shape_locator.h), not by a frame.
  bool located_by_shape = false;
  // Its cause is a setting (cudnn.benchmark, anomaly mode): placed on the workspace's one
  // statement that sets it, not on the ops the stack names (IsSettingShape).
  bool located_at_setting = false;
};

struct ScanResult {
  std::string trace_path;
  std::unique_ptr<Trace> trace;
  // rules.windows holds the published window scores: the rules' alone, or fused with the learned
  // scorer's (server/window_fusion.h) when it ran; then the two parts are kept here, per window.
  RuleResult rules;
  std::vector<double> rule_window_scores, model_window_scores;
  std::string window_fusion;             // the combination used, "" when the model did not run
  std::vector<LocatedFinding> findings;  // after suppressions and the severity threshold
  size_t suppressed = 0;
  double rules_ms = 0;    // RunRules
  double mapping_ms = 0;  // frames, workspace resolution, parsing and range narrowing
};

struct ScanOptions {
  RuleOptions rules;
  Severity min_severity = Severity::kInfo;
  const WorkspaceIndex* workspace = nullptr;
  SourceCache* sources = nullptr;  // parsed workspace files; a process-wide cache when null
  const FrameFilter* frame_filter = nullptr;  // user-frame include/exclude globs
  const WindowModel* model = nullptr;         // adds TTA900 unusual windows when set
  double model_threshold = -1;  // window score that flags a window; < 0: the file's own
  // How window scores combine rules and model (config `window_fusion`); null: the default.
  const WindowFusion* window_fusion = nullptr;
  // Codes reported (config `select` / `ignore`, mapping/suppressions.h); empty select: all.
  std::vector<std::string> select, ignore;
  // `# ttap: ignore[...]` comments in the files on disk drop findings; the language server
  // turns this off and applies the comments of the buffers as they are typed.
  bool apply_suppressions = true;
  // Findings without Python frames go to the workspace's one statement with their fix's shape.
  bool locate_by_shape = true;
};

// Runs the rules on a loaded trace and locates the findings.
ScanResult ScanTrace(std::unique_ptr<Trace> trace, const ScanOptions& options);

// The catalogue entry's documentation (docs/antipatterns.md, GitHub heading anchor).
std::string RuleDocsUrl(const std::string& code, const std::string& name);

// 0 hint, 1 info, 2 warning, 3 error.
int SeverityRank(Severity s);
// The parsed workspace files of this process (ScanOptions::sources when none is given).
SourceCache& ProcessSourceCache();
// Whether the trace has GPU activity (kernels, copies, memsets); RunFacts::has_gpu for a scan.
bool HasGpuActivity(const Trace& trace);
// "a, b and c".
std::string JoinAnd(const std::vector<std::string>& items);
// A job finding's severity: warning from 5% of the job's step.
Severity JobSeverity(double share);

// The job |r|'s trace belongs to: the other ranks' traces in its directory (at most 64 files and
// 4 GB; those whose distributedInfo names another rank of the same world size are loaded, not
// scanned) read with it (analysis/model/job_analysis.h). Not ok for a trace alone, one
// that names no rank, or siblings of other jobs. Used by the language server, which shows one
// rank; |cancelled| is polled between files.
// |cache| (optional, one caller's): the siblings' timelines by file, reused while a file's size
// and mtime hold (the language server re-analyses on every change of the shown trace).
struct SiblingTimeline {
  int64_t size = -1, mtime_ns = -1;         // the file when it was read
  int hint_rank = -1, hint_world_size = 0;  // its head's distributedInfo (PeekTraceRank)
  bool loaded = false;  // loaded once (a sibling of another world size or rank never is)
  bool usable = false;  // it loaded and names its rank
  int rank = -1;
  RankTimeline timeline;
};
using SiblingTimelineCache = std::map<std::string, SiblingTimeline>;
JobAnalysis AnalyseSiblingRanks(const ScanResult& r, const std::function<bool()>& cancelled,
                                SiblingTimelineCache* cache = nullptr);
// When |r|'s rank is one the job waits for: a TTA018 finding placed where its own top finding is
// (its cause is the job's cost), saving what the job saves without the late ranks' lateness.
void AddStragglerFinding(const JobAnalysis& job, ScanResult* r);
// A hover's line on |f| when its time may be a wait for other ranks (TTA011): whose wait it is.
std::string JobNoteFor(const JobAnalysis& job, int rank, const Finding& f);

// The quick fix request for a located finding (its recipe and line) with what the trace proves:
// per-parameter fill kernels under zero_grad mean set_to_none was off (torch < 2.0), GPU activity
// means the step runs on CUDA/ROCm. The language server's code actions and `ttap scan --format
// sarif`'s fixes both start from it.
FixRequest FixRequestFor(const LocatedFinding& lf, bool trace_has_gpu);

}  // namespace ttap

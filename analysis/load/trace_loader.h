// LoadTrace: the entry point of the trace engine. Streams a trace file (plain or gzip) in chunks:
// a reader thread decompresses and splits the event array (JsonSplitter), worker threads parse
// events (EventParser) into partial tables, and the builder (trace_builder.h) folds them into one
// columnar Trace with hierarchy, CPU->GPU links, steps and windows. Memory stays bounded: the
// document is never held whole. Called by the CLI commands, the language server and the tests.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/base/cancel.h"
#include "analysis/base/status.h"
#include "analysis/model/trace.h"

namespace ttap {

struct LoadOptions {
  int threads = 0;                // parse workers; 0 = hardware concurrency, 1 = inline
  size_t chunk_bytes = 4u << 20;  // bytes read per chunk
  int window_count = 100;         // windows over the profiled span (the paper's N)
  CancelToken cancel;             // polled once per chunk
  // Keep Trace::flows after they linked launches and GPU work (tests that inspect them); by
  // default they are released: nothing reads them after, and a launch-heavy trace holds two per
  // launch, 32 bytes each.
  bool keep_flows = false;
  // Keep the columns only rewriting a trace reads (categories as written, External ids, Python
  // parent ids once the frames are built: bench/harness's trace editor, the loader's tests).
  // `ttap scan` and the language server, which analyse without rewriting, release them: 16
  // bytes an event.
  bool keep_rewrite_columns = true;
};

// Loads one trace file. Errors name the file and the byte offset or the reason.
StatusOr<std::unique_ptr<Trace>> LoadTrace(const std::string& path,
                                           const LoadOptions& options = {});
// Loads a trace held in memory (tests, fuzzing); |name| is used in messages.
StatusOr<std::unique_ptr<Trace>> LoadTraceFromMemory(std::string_view data, const std::string& name,
                                                     const LoadOptions& options = {});

// Trace files in a directory (*.json, *.json.gz, not recursive), sorted by name.
std::vector<std::string> ListTraceFiles(const std::string& dir);
// The rank and world size a trace's distributedInfo names, read cheaply from its first
// |max_bytes| (Kineto writes distributedInfo before traceEvents); -1 when not found there. A
// hint for choosing which files to load (a job's ranks), not a substitute for loading.
struct TraceRankHint {
  int rank = -1;
  int world_size = -1;
};
TraceRankHint PeekTraceRank(const std::string& path, size_t max_bytes = 1 << 20);
// Rank from a file name as HTA and tensorboard_trace_handler users name them ("rank-3", "rank_3",
// "rank3"); -1 when the name says nothing.
int RankFromFileName(std::string_view path);

}  // namespace ttap

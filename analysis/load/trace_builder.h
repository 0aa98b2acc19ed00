// BuildTrace: folds the loader's partial tables (batch-local strings and tracks, locally sorted
// rows) into one Trace: k-way merge by (ts, longer first), string and track remapping, per-thread
// call hierarchy (depth, parent, enclosing python frame), CPU launch <-> GPU activity links,
// ProfilerStep# steps, devices and windows. Internal to the loader; exposed for tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/base/status.h"
#include "analysis/load/event_parser.h"
#include "analysis/model/trace.h"

namespace ttap {

// Top-level keys of a Kineto JSON object the builder reads (raw JSON text per key).
using TopLevelValues = std::map<std::string, std::string>;

// Sorts a partial table's rows by (ts, longer first, file order). Run by the workers.
void SortPartial(PartialTable* part);

// Consumes |parts| (freed column by column to bound peak memory).
// |threads| > 1 lets the column gathering use a second thread.
Status BuildTrace(std::vector<PartialTable>* parts, const TopLevelValues& top, int window_count,
                  int threads, Trace* trace);

}  // namespace ttap

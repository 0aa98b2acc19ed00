// EventParser: turns the byte ranges of trace events (found by JsonSplitter) into rows of a
// PartialTable with simdjson's on-demand API, one reused parser per worker thread. A bad event is
// skipped and counted with its reason and byte offset; it never stops the import.
// Called by the loader's worker threads; each PartialTable is later folded into the Trace by the
// builder (trace_builder.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/load/json_splitter.h"
#include "analysis/model/trace.h"

namespace ttap {

// Metadata event (ph "M"): process_name, thread_name, process_labels, ...
struct MetadataRecord {
  uint32_t track;
  std::string name;
  std::string value;
};

// The rows parsed from one batch of events, with batch-local string and track ids.
struct PartialTable {
  EventTable events;  // loaded columns only; derived columns stay empty
  StringPool strings;
  std::vector<std::pair<std::string, std::string>> track_keys;  // local track id -> (pid, tid)
  std::unordered_map<std::string, uint32_t> track_index;        // "pid\x1ftid" -> local id
  std::vector<FlowEvent> flows;
  std::vector<MetadataRecord> metadata;
  ImportStats stats;
  uint64_t first_error_offset = UINT64_MAX;
};

class EventParser {
 public:
  EventParser();
  ~EventParser();
  // Parses |ranges| of |buf| (which stays readable for at least |capacity| bytes from its start,
  // so simdjson's padding requirement holds). |base| is the document offset of buf[0].
  void ParseBatch(const char* buf, size_t capacity, const std::vector<JsonSplitter::Range>& ranges,
                  uint64_t base, PartialTable* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Category name -> kind (both Kineto generations); unknown names give kOther.
EventKind KindFromCategory(std::string_view cat);

// Whether an event of the 2021 profiler's "Operator" category is a record_function marker (which
// later profilers write as user_annotation): ProfilerStep#5, Optimizer.step#SGD.step,
// enumerate(DataLoader)#..., "## forward ##". Ops carry "::" (aten::add, autograd::engine::...)
// or no '#' (the 2021 autograd nodes: AddBackward0); other names with spaces stay ops, as later
// profilers write them ("AOTDispatcher Runtime Wrapper Prologue").
bool IsLegacyAnnotationName(std::string_view name);

}  // namespace ttap

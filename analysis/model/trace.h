// The in-memory model of one rank's profiler trace, produced by LoadTrace() (trace_loader.h) and
// read by the stats, the rules, the mapping and the models. Columnar: one vector per field, all of
// the same length, rows sorted by (ts, longer first). Strings are interned in |strings|.
// Windows and steps are index/time ranges over the table, never copies. Immutable once built, so
// any number of threads may read it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/base/narrow_column.h"
#include "analysis/base/string_pool.h"

namespace ttap {

// What an event is, derived from its category (both the 2021 and the current Kineto spellings).
enum class EventKind : uint8_t {
  kCpuOp,              // cpu_op, Operator
  kPythonFunction,     // python_function
  kUserAnnotation,     // user_annotation (ProfilerStep#N, record_function)
  kGpuUserAnnotation,  // gpu_user_annotation
  kRuntime,            // cuda_runtime, Runtime (also hip* on ROCm)
  kDriver,             // cuda_driver
  kKernel,             // kernel, Kernel, mtia_ccp_events
  kMemcpy,             // gpu_memcpy, Memcpy
  kMemset,             // gpu_memset, Memset
  kGpuSync,            // cuda_sync
  kInstant,            // ph "i"/"I"
  kTraceSpan,          // Trace
  kOther,              // any other category, kept and counted
};
const char* EventKindName(EventKind kind);
inline bool IsGpuKind(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset ||
         k == EventKind::kGpuSync;
}
inline bool IsLaunchKind(EventKind k) {
  return k == EventKind::kRuntime || k == EventKind::kDriver;
}

// Row flags.
enum EventFlags : uint8_t {
  kHasDur = 1,  // "dur" present in the file
  kHasCat = 2,  // "cat" present in the file
  kFracTs = 4,  // ts or dur had a fractional part
  // aten::contiguous / aten::clone whose recorded input strides and memory format say it
  // converts between NCHW and channels_last (record_shapes: "Input Strides", "Concrete Inputs").
  kLayoutCopy = 8,
};

constexpr int64_t kNone = -1;
// Accepted timestamp range (ns). Wide enough for any clock (2^62 ns is 146 years) and narrow
// enough that spans, ends and window bounds never overflow int64.
constexpr int64_t kMaxTimestampNs = int64_t{1} << 62;
constexpr int64_t kMinTimestampNs = -(int64_t{1} << 61);

struct EventTable {
  std::vector<int64_t> ts;  // ns in the trace's own clock (µs * 1000, exact)
  NarrowInt64Column dur;    // ns, >= 0
  std::vector<StringId> name;
  std::vector<StringId> cat;  // empty unless LoadOptions::keep_rewrite_columns
  std::vector<EventKind> kind;
  std::vector<uint8_t> flags;
  std::vector<uint32_t> track;       // index into Trace::tracks
  std::vector<int32_t> stream;       // args.stream, -1 when absent or not a number; values
                                     // beyond int32 (e.g. 4294967295) clamp to INT32_MAX
  NarrowInt64Column correlation;     // args.correlation, -1
  std::vector<int64_t> external_id;  // args["External id"] / args["external id"], -1 (empty
                                     // unless LoadOptions::keep_rewrite_columns)
  // Read these two through CallStack() / PythonId(): a loaded trace holds them empty where no
  // event has one (most traces have no 2021-format stacks; traces without Python frames or
  // stream waits have no ids).
  std::vector<StringId> call_stack;    // args["Call stack"] (2021 format), kEmptyString if none
  std::vector<int32_t> python_id;      // args["Python id"], -1; cuda_sync: args.wait_on_stream
  std::vector<int32_t> python_parent;  // args["Python parent id"], -1 (empty unless
                                       // LoadOptions::keep_rewrite_columns)
  NarrowInt64Column bytes;             // args.bytes for memcpy/memset; a collective kernel's
                                       // message ("In/Out msg nelems" x "dtype"), -1; cuda_sync:
                                       // args.wait_on_cuda_event_record_corr_id (the
                                       // cudaEventRecord call waited on), -1
  std::vector<int16_t> device;         // args.device, -1
  // Derived by the builder:
  std::vector<uint16_t> depth;  // nesting depth on its thread (0 = top level)
  std::vector<int32_t> parent;  // enclosing event on the same thread, -1
  std::vector<int32_t> link;    // GPU event -> launching runtime call; launch -> first GPU event
  std::vector<int32_t> frame;   // innermost enclosing python_function event on the thread, -1
                                // (read through Frame(): empty when no event has one)

  size_t size() const { return ts.size(); }
  int64_t end(size_t i) const { return ts[i] + dur[i]; }
  StringId CallStack(size_t i) const { return call_stack.empty() ? kEmptyString : call_stack[i]; }
  int32_t PythonId(size_t i) const { return python_id.empty() ? -1 : python_id[i]; }
  int32_t Frame(size_t i) const { return frame.empty() ? -1 : frame[i]; }
  // Empties call_stack, python_id and frame where every value is the default (4 bytes an event
  // each; a trace without Python frames has no enclosing frame either).
  void ReleaseDefaultColumns();
  void Resize(size_t n);
  void Reserve(size_t n);
  // Frees the columns `ttap stats` does not read, before its causal breakdown: those only the
  // placing of findings on source lines reads (external ids, Python parents, call stacks,
  // enclosing frames) and those only the rules and the window scorer read (categories,
  // depths); 26 bytes an event. The rules and the scorer must not run afterwards.
  void ReleaseColumnsStatsSkips();
};

struct Track {
  std::string pid;  // as written: 67844, "Traces", ...
  std::string tid;  // as written: "stream 7", 4093687616, ...
  int64_t pid_num = kNone;
  int64_t tid_num = kNone;
  std::string name;     // thread_name / process_name metadata
  bool gpu = false;     // holds device activity (kernels, memcpy, memset)
  int32_t device = -1;  // GPU index for device tracks
};

struct DeviceInfo {
  int32_t id = -1;
  std::string name;
  int32_t compute_major = -1;
  int32_t compute_minor = -1;
  int64_t total_memory = -1;
  int32_t num_sms = -1;
  bool used = false;  // has activity in this trace
};

// One ProfilerStep#N: the CPU annotation, extended to the end of the GPU work it launched.
struct Step {
  int64_t number = 0;
  int32_t event = -1;     // the ProfilerStep row
  int64_t cpu_start = 0;  // ns
  int64_t cpu_end = 0;
  int64_t gpu_end = 0;       // end of the last GPU event launched inside the step (or cpu_end)
  int64_t gpu_work_end = 0;  // gpu_end before clipping: where the step's GPU work really ends
  int64_t start() const { return cpu_start; }
  int64_t end() const { return gpu_end > cpu_end ? gpu_end : cpu_end; }
};

// A window: a time range and the index range [begin, end) of rows whose ts falls in it.
struct Window {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  int32_t step = -1;  // index into Trace::steps for step-aligned windows
};

// Flow event (ph s/f/t): kept for CPU->GPU linking.
struct FlowEvent {
  int64_t id;
  int64_t ts;
  uint32_t track;
  char phase;
  StringId cat;
};

// Import statistics: counters with a reason, never fatal (Perfetto's stats idea).
struct ImportStats {
  uint64_t json_bytes = 0;  // uncompressed bytes read
  uint64_t elements = 0;    // elements of traceEvents
  uint64_t events = 0;      // rows in the table
  uint64_t metadata = 0;
  uint64_t flows = 0;
  uint64_t counters = 0;
  uint64_t gpu_without_launch = 0;    // GPU activity whose launch call is not in the trace
  uint64_t step_markers_ignored = 0;  // ProfilerStep markers covering almost none of the CPU's work
  std::map<std::string, uint64_t> skipped;  // reason -> count
  // Category -> count, for at most kMaxUnknownCategories distinct categories; events of further
  // ones are counted in unknown_categories_other (hostile traces name millions).
  std::map<std::string, uint64_t> unknown_categories;
  uint64_t unknown_categories_other = 0;
  static constexpr size_t kMaxUnknownCategories = 256;
  void CountUnknownCategory(std::string_view cat, uint64_t n = 1) {
    auto it = unknown_categories.find(std::string(cat));
    if (it != unknown_categories.end()) {
      it->second += n;
    } else if (unknown_categories.size() < kMaxUnknownCategories) {
      unknown_categories.emplace(std::string(cat), n);
    } else {
      unknown_categories_other += n;
    }
  }
  std::string first_error;  // first skipped event: reason and byte offset
  uint64_t total_skipped() const {
    uint64_t n = 0;
    for (auto& [k, v] : skipped) n += v;
    return n;
  }
};

struct Trace {
  std::string path;
  int32_t rank = 0;
  std::string rank_source;  // "distributedInfo", "file name", "default"
  int32_t world_size = -1;
  std::string backend;
  int64_t base_time_ns = kNone;
  bool bare_array = false;  // legacy top-level array format

  StringPool strings;
  EventTable events;
  std::vector<Track> tracks;
  std::vector<FlowEvent> flows;  // empty once loaded unless LoadOptions::keep_flows
  std::vector<DeviceInfo> devices;
  std::vector<Step> steps;
  std::vector<Window> windows;       // the profiled span cut into N equal windows
  std::vector<Window> step_windows;  // one per step
  ImportStats stats;
  // Wall time of each loading phase in ms (read+parse, then the builder's steps), for --timing
  // and the benchmarks.
  std::vector<std::pair<std::string, double>> load_phases;

  std::string_view Name(size_t row) const { return strings.Get(events.name[row]); }
  int64_t span_start() const;  // first step start, or first event that takes time (no instant)
  int64_t span_end() const;
};

// Cuts [span_start, span_end) into |count| equal windows (index ranges) and one per step.
void BuildWindows(Trace* trace, int count);
// Index range of rows with ts in [start, end).
Window MakeWindow(const Trace& trace, int64_t start_ns, int64_t end_ns);
// Steps' GPU ends: for CPU spans [starts[k], cpu_ends[k]) sorted by start, the latest end of the
// GPU work launched inside each (cpu_ends[k] where none ends later). The trace builder and the
// steps inferred without ProfilerStep (causal_graph.h) end their steps there.
std::vector<int64_t> EndsOfLaunchedGpuWork(const EventTable& ev, const std::vector<int64_t>& starts,
                                           const std::vector<int64_t>& cpu_ends);

}  // namespace ttap

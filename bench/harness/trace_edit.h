// Trace surgery for the benchmark (`ttap gen`, bench/harness/gen_command.cpp; injectors in
// trace_inject.h): an editable row copy of a loaded Trace, time insertion on a CPU thread with
// consistent GPU reflow (a GPU event never starts before its launch, never overlaps its
// predecessor on the stream, and a synchronize call never returns before the work it waits for),
// a builder for inserted CPU blocks with launches, a Kineto JSON writer, a validator and a
// realism profile. Pure, no I/O, no exceptions.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/model/trace.h"

namespace ttap {

struct EditEvent {
  int64_t ts = 0, dur = 0;
  std::string name, cat;
  EventKind kind = EventKind::kOther;
  uint32_t track = 0;
  int32_t stream = -1;
  int64_t correlation = -1, external_id = -1;
  int32_t python_id = -1, python_parent = -1;
  int64_t bytes = -1;
  int16_t device = -1;
  std::string call_stack;
  bool instant = false;
  int64_t orig_ts = 0;     // ts before any GPU reflow (lower bound of the reflow)
  int64_t orig_dur = 0;    // GPU-track annotations: dur before any reflow
  int64_t launch_lat = 0;  // GPU events: minimum delay after the launch call
  int64_t sync_slack = 0;  // synchronize calls: how far the GPU already overran the call
  // Synchronize calls that waited for the GPU in the unedited trace: how long after the awaited
  // work ended they returned (-1: did not wait, or added by an edit). A reflow that ends the
  // awaited work earlier than the shifted call expects shortens the call to that.
  int64_t sync_return = -1;
  // An async copy call of the unedited trace that blocks: its copy is pageable, so it returns
  // once that copy, queued behind the work launched before it, is done (a synchronize call).
  bool blocking_copy = false;
  bool added = false;  // inserted by an edit (has no original placement)
};

// A compute stream that must wait for |until_event| before running work launched at or after
// |launch_ts| (cudaStreamWaitEvent on a collective).
struct StreamBarrier {
  uint32_t track;
  int64_t launch_ts;
  size_t until_event;
};

struct EditableTrace {
  int32_t rank = 0, world_size = -1;
  std::string backend;
  std::vector<Track> tracks;
  std::vector<DeviceInfo> devices;
  std::vector<EditEvent> events;
  std::vector<StreamBarrier> barriers;
  // GPU tracks of streams made non-blocking (NCCL's, for injected collectives): a stream
  // synchronize or blocking copy does not wait for them; only a device synchronize does.
  std::vector<uint32_t> nonblocking_tracks;
  bool amd = false;     // ROCm names (hipLaunchKernel ...)
  bool legacy = false;  // 2021 categories (Operator, Runtime, Kernel ...)
  int64_t next_correlation = 1, next_external_id = 1;
  int32_t next_python_id = 1;
  std::map<EventKind, std::string> cat_names;  // first spelling seen per kind
  std::map<uint32_t, int32_t> track_stream;    // GPU track -> args.stream of its events
  // GPU track -> the stream's own gap between queued activities in the unedited trace (the
  // median gap after an activity whose launch call started before the previous one ended): what
  // a backlogged stream leaves between kernels. Tracks without such pairs use 1 us.
  std::map<uint32_t, int64_t> queue_gap;
  // Reflows whose synchronize fixing did not settle (a sync whose awaited GPU work moves with
  // every fix: a dependency cycle an edit created). The trace's timing is then no truth.
  int unsettled_reflows = 0;

  // The category string this trace uses for |kind| (its own spelling when it has one).
  std::string CatFor(EventKind kind) const;
  // The args.stream of GPU |track|'s events.
  int32_t StreamOf(uint32_t track) const;
  // The GPU track of |device| and |stream|, created when missing.
  uint32_t GpuTrack(int32_t device, int32_t stream);
};

EditableTrace ToEditable(const Trace& trace);
// Kineto JSON (schemaVersion, deviceProperties, distributedInfo with `"rank": N`, traceEvents
// with process/thread metadata and ac2g flows for every launch->GPU pair).
std::string WriteKineto(const EditableTrace& trace);

// Inserts |dur_ns| of CPU time at |at_ns| in the process of CPU |track|: its later CPU events
// shift, the events that span |at_ns| grow. Then reflows the GPU (ReflowGpu).
void InsertCpuTime(EditableTrace* trace, uint32_t track, int64_t at_ns, int64_t dur_ns);
// Recomputes GPU start times: per GPU track in launch order, start = max(current start, launch +
// latency, previous end, barrier), then extends synchronize calls that would return before the
// GPU work launched earlier has finished. A sync that needs fixing again and again (its awaited
// work moves with it) stops the fixing and counts in |unsettled_reflows|.
void ReflowGpu(EditableTrace* trace);

// CPU work to insert at one point of one thread: python frames, ops, runtime calls and the GPU
// work they launch. Times are offsets from the insertion point; Commit() splices it in.
class CpuBlock {
 public:
  CpuBlock(EditableTrace* trace, uint32_t cpu_track, int64_t at_ns);
  void Py(const std::string& file, int line, const std::string& function);
  void Op(const std::string& name, EventKind kind = EventKind::kCpuOp);
  void End();
  void Cpu(int64_t ns) { cursor_ += ns; }
  // A runtime call of |call_ns| that launches |gpu_name| (kernel or memcpy per |gpu_kind|) of
  // |gpu_ns| on |gpu_track|; returns the index the GPU event will have after Commit().
  size_t Launch(const std::string& runtime, int64_t call_ns, EventKind gpu_kind,
                const std::string& gpu_name, int64_t gpu_ns, uint32_t gpu_track,
                int64_t bytes = -1);
  // A runtime call without GPU work (cudaMalloc, cudaStreamSynchronize ...).
  void Runtime(const std::string& name, int64_t call_ns);
  int64_t now() const { return at_ + cursor_; }
  // Splices the block in (and reflows the GPU unless |reflow| is false: callers that commit many
  // blocks reflow once at the end); returns the [start, end) of the CPU block in the trace clock.
  std::pair<int64_t, int64_t> Commit(bool reflow = true);
  // After Commit(): the trace index of the GPU event that Launch() numbered |local|, the number
  // of GPU events, and the index of the block's first CPU event (its outermost frame or op).
  size_t gpu_index(size_t local) const { return commit_base_ + local; }
  size_t gpu_count() const { return gpu_committed_; }
  size_t root_index() const { return commit_base_ + gpu_committed_; }

 private:
  // A runtime call of |call_ns| at the cursor (which the caller advances); its correlation.
  int64_t AddRuntimeCall(const std::string& name, int64_t call_ns);

  EditableTrace* trace_;
  uint32_t track_;
  int64_t at_, cursor_ = 0;
  std::vector<EditEvent> cpu_, gpu_;
  std::vector<size_t> open_;
  std::vector<int32_t> py_stack_;
  std::vector<int64_t> ext_stack_;
  size_t commit_base_ = 0, gpu_committed_ = 0;
};

// Clean variation of a base: kernel durations scaled by 1 +- |amount|, a few short CPU delays,
// and a shifted time base.
void Jitter(EditableTrace* trace, std::mt19937_64* rng, double amount);

// What `ttap gen` checks in every trace it writes.
struct ValidationReport {
  uint64_t skipped_events = 0;      // the loader refused them
  uint64_t negative_durations = 0;  // never expected: the loader refuses them
  uint64_t before_launch = 0;       // GPU events starting before their launch call
  uint64_t stream_overlaps = 0;     // GPU events starting before the previous one on the stream
  uint64_t missing_cat_or_dur = 0;  // complete events HTA would drop
  uint64_t gpu_without_ids = 0;     // GPU events without stream or correlation
  bool rank_ok = false;             // a rank HTA's regex finds
  bool ok_against(const ValidationReport& base) const;
  std::string Describe() const;
};
ValidationReport ValidateTrace(const Trace& trace, const std::string& json_text);

// Realism profile of one trace: category mix, kernel durations, launch delays, events per step.
struct TraceProfile {
  std::map<std::string, double> kind_share;  // event kind name -> share of events
  double kernel_us_p10 = 0, kernel_us_p50 = 0, kernel_us_p90 = 0;
  double launch_delay_us_p50 = 0, launch_delay_us_p90 = 0;
  double events_per_step = 0;
  double gpu_busy_share = 0;
};
TraceProfile ProfileTrace(const Trace& trace);

}  // namespace ttap

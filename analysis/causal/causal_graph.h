// The causal model of one rank's run: a dependency graph built from the trace (CPU threads as
// chains of segments, GPU streams as chains of activities, launch edges with their observed
// latency, synchronisation edges), a replay that recomputes every start and end from the
// dependencies (with nothing changed it reproduces the trace), and the attribution of each step's
// wall time to one cause per microsecond along the critical path. What-ifs
// (analysis/causal/what_if.h) replay the same graph with some durations or waits changed. Built by
// RunRules and `ttap stats`; pure data plus functions, any thread. Model, assumptions and limits:
// docs/causal_model.md.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/base/narrow_column.h"
#include "analysis/model/trace.h"

namespace ttap {

// Where a microsecond of a step went: the cause a critical-path interval is attributed to.
enum class Cause : uint8_t {
  kGpuMatmul,      // GEMM / convolution kernels
  kGpuKernel,      // other kernels
  kCommunication,  // collective kernels (nccl, rccl)
  kMemcpy,
  kMemset,
  kGpuGap,       // between back-to-back activities on one stream
  kLaunch,       // CPU launch calls and the launch-to-start latency while the GPU waits
  kHostSync,     // synchronisation calls after the awaited GPU work ended
  kDataLoading,  // CPU work under a DataLoader __next__
  kAllocator,    // cudaMalloc / cudaFree / hipMalloc / hipFree
  kCpuWork,      // other CPU (Python / framework) work under a traced op
  kColdStart,    // lazy module loading, first-call launches of milliseconds
  kUntraced,     // time no traced event covers
  // A GPU activity held far beyond its launch and its stream's previous work, by nothing the
  // trace records (a cross-stream or peer dependency without a record, or offset clocks).
  kGpuWait,
  kCount
};
constexpr int kCauseCount = static_cast<int>(Cause::kCount);
const char* CauseName(Cause c);         // "gpu-matmul", "launch", ...
const char* CauseDescription(Cause c);  // "GPU compute (matmul/conv)", ...

// Role of a node in the graph.
enum class NodeRole : uint8_t {
  kCpuWork,  // a slice of a CPU thread between event boundaries
  kLaunch,   // a runtime call that starts GPU work (or any other runtime call)
  kSync,     // a runtime call that waits for GPU work (synchronize, blocking copy, cudaFree)
  kGpu,      // a kernel / memcpy / memset
  kJoin,     // a main-thread slice that ends when a secondary thread's work ends (it waited)
};

// The analysed steps of a trace (the list RuleContext uses too): its ProfilerStep# steps; else
// steps inferred from a marker the loop repeats on one thread (the ends of Optimizer.step#, or
// the starts of a top-level annotation seen at least three times); else one span.
// |cut| leaves a cold start out (analysed apart: RunRulesSteadyFirst): its leading steps
// (ProfilerStep# or inferred; at least one stays), or, in a run without steps, what precedes
// its warm part.
struct StepSpan {
  int64_t number = -1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t cpu_end_ns = 0;
  int32_t marker_track = -1;  // the thread whose annotations bound the steps, -1 for one span
  bool inferred = false;
  bool optimizer_marked = false;  // inferred from Optimizer.step# (a training loop's iterations)
};
struct ColdStartCut {
  size_t leading_steps = 0;  // steps left out
  int64_t prefix_ns = 0;     // a run without steps: the time from its start left out
};
std::vector<StepSpan> AnalysedSteps(const Trace& trace, ColdStartCut cut = {});

// One-time first calls: the first run of a framework op (cpu_op) on its thread that costs what
// later runs do not (CUDA context creation under the first aten::zeros, cuBLAS / cuDNN workspaces
// and handles made by the first aten::mm, a first index_select's stall): at least
// kFirstCallMinNs (less in a short run, below) and at least kFirstCallRatio x the median of the
// op's later runs (or, the allocator calls inside each left out, its own work that ratio of
// theirs and longer by the floor: later runs that allocate a new output too; never a view op,
// which sets nothing up), with no later run in a later step costing half as much or more (a cost
// that repeats is steady-state); an op that never runs again counts from kFirstCallAloneNs when it
// launches GPU work. What runs under one is cold start (Cause::kColdStart), never steady-state
// work, allocator churn or GPU idle time. A math library's op (convolution, matmul) that never runs
// again counts from kLibraryFirstCallNs when it launches GPU work and the GPU idles through it
// (cuDNN / MIOpen algorithm search, a cuBLAS handle); so does one from kFirstCallMinNs that runs
// again at half its first run's cost or less (a cold forward's later layers are slow too, each
// setting up its own shape). Runtime allocator calls of at least kOneTimeAllocatorCallNs while the
// GPU is (nearly) idle are listed too: start-up, not churn (a cudaFree waiting for running work is
// not one), unless such calls recur in two steps or more (the allocator churning every step with
// caching off: a ROCm DDP run's hipFree calls of 5-50 ms in steps 3, 4 and 5); so are kernel launch
// calls of at least kFirstCallMinNs with the GPU idle (a lazy module load: a launch only takes that
// long on a full queue, which a busy GPU would show), or in a short run from its floor (below)
// when kFirstCallRatio x the run's median launch. An op that encloses many ops is a region (a
// record_function written as an op: the 2021 profiler's "Operator" category, model_inference): only
// its ops' first calls count. With Python frames, the model's construction and placement are
// listed too (their frame rows: an nn.Module's constructor with the user's __init__ around it,
// torch/nn/init.py, an optimizer's constructor, Module.to), outside any forward and in one step
// at most per name. Sorted by row; only the outermost of nested ones is kept. Whether a
// run's CUDA / HIP graph captures are one-time work (their ops run eagerly once, then the graph is
// instantiated: cold start): it launches more graphs than it captures. The causal graph's capture
// calls and RuleContext::CaptureStep read captures by it.
inline bool CapturesAreOneTime(size_t captures, int64_t graph_launches) {
  return captures > 0 && graph_launches > static_cast<int64_t>(captures);
}

struct FirstCall {
  int32_t row = -1;
  int64_t typical_ns = 0;  // what a later run of the op costs (median), or a warm call's cost
};
std::vector<FirstCall> OneTimeFirstCalls(const Trace& trace);
// The same with the trace's GPU activity (kernels, memcpy, memset) already merged into
// |gpu_busy| (RuleContext has it).
std::vector<FirstCall> OneTimeFirstCalls(const Trace& trace,
                                         const std::vector<std::pair<int64_t, int64_t>>& gpu_busy);
// torch.compile's compilation phases: Dynamo's dynamo_timed record_function ("<phase>
// (dynamo_timed)": _compile.compile_inner, GraphLowering.run, autotuning; recent releases also
// write "dynamo", "entire_frame_compile", "backend_compile" and "inductor_compile"). Each
// of a millisecond or more is a first call, unless compilation recurs in kRecompileMinSteps steps
// or more and in most steps (recompiling every step is steady-state work).
bool IsCompilePhaseName(std::string_view n);
constexpr size_t kRecompileMinSteps = 3;
constexpr int64_t kFirstCallMinNs = 1000000;
// In a run shorter than kFirstCallMinNs / kShortRunFirstCallShare, an op's first run counts from
// that share of the run, at least kShortRunFirstCallNs (a 1 ms run of 20 Linear calls: the first
// takes 0.56 ms, the others 24 us).
constexpr double kShortRunFirstCallShare = 0.1;
constexpr int64_t kShortRunFirstCallNs = 200000;
constexpr double kFirstCallRatio = 10.0;
constexpr int64_t kFirstCallAloneNs = 50000000;
constexpr int64_t kLibraryFirstCallNs = 5000000;
constexpr int64_t kOneTimeAllocatorCallNs = 20000000;
// A Python frame that blocks without working: a thread waiting on a condition, a lock, a sleep,
// a selector, a socket or a pipe (the wait itself is C code the tracer leaves out).
bool IsIdleWaitName(std::string_view n);
// An op enclosing this many ops, or this many different ones, is a region (a record_function
// written as an op), never a first call itself.
constexpr int kRegionMinChildOps = 16;
constexpr int kRegionMinDistinctOps = 10;
// The entry of |calls| for |row| itself, nullptr when none.
const FirstCall* FirstCallAt(const std::vector<FirstCall>& calls, int32_t row);
// The outermost first call enclosing |row| (or |row| itself), -1 when none: walks the parents.
int32_t EnclosingFirstCall(const Trace& trace, const std::vector<FirstCall>& calls, int32_t row);

// CUDA_LAUNCH_BLOCKING=1 (or a tool that serialises launches): a launch call that ran its kernel
// to the end before returning (the kernel started inside the call, which returned within
// kBlockingReturnNs of its end), and whether the run launched that way: at least
// kBlockingLaunchShare of the launches of kernels of kBlockingKernelMinNs or longer, and at least
// kBlockingLaunchMin of them. The causal graph reads such a launch as a wait for its kernel;
// TTA002 names the setting, TTA007 leaves these launches alone.
constexpr int64_t kBlockingReturnNs = 50000;
constexpr int64_t kBlockingKernelMinNs = 20000;
constexpr double kBlockingLaunchShare = 0.8;
constexpr int64_t kBlockingLaunchMin = 20;
bool LaunchBlocksOnKernel(const EventTable& ev, uint32_t launch_row);
// The count over a run's rows, added in the caller's own pass over them (the graph builder's,
// RuleContext's).
struct BlockingLaunchTally {
  int64_t long_kernels = 0, blocked = 0;
  void Add(const EventTable& ev, uint32_t row);  // any row; only kernel launches count
  bool RunBlocks() const;
};

// A column of time gaps (ns): 4 bytes a node, the rare gap beyond +-2.1 s kept aside, exactly.
using GapColumn = NarrowInt64Column;

// Per node, a range of entries of another array (the waits of the few nodes that wait), held for
// the nodes that have any: a bit a node and a rank every 64, not an offset a node.
class NodeRanges {
 public:
  // |owners|: for each entry of the other array in order, its node (ascending).
  void Build(size_t nodes, const std::vector<int32_t>& owners) {
    bits_.assign((nodes + 63) / 64, 0);
    first_.clear();
    for (size_t i = 0; i < owners.size(); ++i) {
      const auto v = static_cast<uint32_t>(owners[i]);
      if (i > 0 && owners[i - 1] == owners[i]) continue;
      bits_[v / 64] |= uint64_t{1} << (v % 64);
      first_.push_back(static_cast<uint32_t>(i));
    }
    first_.push_back(static_cast<uint32_t>(owners.size()));
    rank_.assign(bits_.size(), 0);
    uint32_t rank = 0;
    for (size_t w = 0; w < bits_.size(); ++w) {
      rank_[w] = rank;
      rank += static_cast<uint32_t>(__builtin_popcountll(bits_[w]));
    }
  }
  std::pair<uint32_t, uint32_t> Of(int32_t v) const {
    const auto u = static_cast<uint32_t>(v);
    const uint64_t word = bits_[u / 64], bit = uint64_t{1} << (u % 64);
    if (!(word & bit)) return {0, 0};
    const uint32_t slot =
        rank_[u / 64] + static_cast<uint32_t>(__builtin_popcountll(word & (bit - 1)));
    return {first_[slot], first_[slot + 1]};
  }

 private:
  std::vector<uint64_t> bits_;   // per node: whether it has entries
  std::vector<uint32_t> rank_;   // per 64 nodes: nodes with entries before them
  std::vector<uint32_t> first_;  // per node with entries, its first entry; then the end
};

// The graph, columnar. A node's replayed start is the latest of: its lane predecessor's end plus
// |lane_gap|, and its |cross| predecessor's start plus |cross_gap| (GPU: the launch call; CPU: the
// main thread's segment running when a secondary thread resumed; measured from its end when
// |cross_from_end|, e.g. a blocking copy's copy follows the call's lane predecessor, since the
// call itself waits for the copy); a GPU node also no earlier than each awaited node's end plus
// |wait_tail| (a recorded cudaStreamWaitEvent). A node with none of these starts at its observed
// time. A sync node ends at the later of start + |dur| and its awaited GPU nodes' latest end
// plus |wait_tail|; every other node ends at start + |dur|.
struct CausalGraph {
  // Nodes.
  std::vector<int64_t> obs_start;  // ns, as recorded
  NarrowInt64Column obs_len;       // the recorded end minus the start (ObsEnd)
  NarrowInt64Column dur;           // own duration (sync: the call's cost when nothing is awaited)
  std::vector<int32_t> row;        // the trace row (innermost event of a CPU slice), -1 for none
  std::vector<NodeRole> role;
  std::vector<Cause> cause;  // what the node's own time is
  // A lane's nodes are consecutive: a node's lane predecessor is the node before it, unless it
  // starts its lane or a cycle was broken there (LanePrev). One bit a node.
  std::vector<bool> has_lane_prev;
  GapColumn lane_gap;
  std::vector<int32_t> cross;  // -1
  GapColumn cross_gap;
  std::vector<uint8_t> cross_from_end;  // 1: the cross term is the predecessor's end + cross_gap
  NodeRanges wait_ranges;  // sync, join and GPU nodes: their awaited nodes' entries (WaitsOf)
  std::vector<int32_t> waits;
  // Per entry of waits: sync and join nodes: their end minus the awaited work's end; GPU nodes
  // with a recorded stream wait: their start minus it (one value per waiting node).
  std::vector<int64_t> wait_tail;
  std::vector<int32_t> order;   // a topological order of all nodes
  int64_t typical_latency = 0;  // median launch-to-start latency on an idle stream, ns

  struct Lane {
    uint32_t track = 0;
    bool gpu = false;
    bool main = false;  // the thread that runs the steps
    // In a trace without steps, whether the lane's work bounds the run: the main thread, the
    // GPU streams and threads whose work another lane follows or waits for (a launching
    // thread, autograd's). A thread nothing depends on (a runtime's housekeeping thread that
    // wakes every 100 ms) may run past the work and must not hold the run's end.
    bool bounds_run = true;
    int32_t first_node = 0, end_node = 0;  // the lane's nodes: [first_node, end_node), by start
    // In a trace without steps, the lane's nodes that bound the run end here (-1: end_node). A
    // CPU thread's calls after its last recorded op that launch nothing (a final synchronize,
    // the profiler's own at exit) and its untraced tail do not: they wait for the GPU work that
    // bounds the run anyway, and removing a sync must not let them run beside it.
    int32_t bound_end_node = -1;
    int32_t BoundEnd() const { return bound_end_node < 0 ? end_node : bound_end_node; }
  };
  std::vector<Lane> lanes;
  std::vector<int32_t> lane_of_track;  // -1 for tracks without nodes
  // Trace row -> first node of that CPU runtime call (launch / sync), -1.
  std::vector<int32_t> node_of_row;

  struct StepNodes {
    int32_t start_node = -1;                   // main-thread node starting at the step's CPU start
    int32_t end_node = -1;                     // main-thread node ending at the step's CPU end
    int64_t start_offset = 0, end_offset = 0;  // step times minus those nodes' start / end
    std::vector<int32_t> gpu;                  // GPU nodes launched inside the step
  };
  std::vector<FirstCall> first_calls;  // OneTimeFirstCalls(trace): their work is cold start
  // Per trace row: 1 when the row is, or encloses on its thread, a launch of GPU work the trace
  // holds (the ops and frames whose CPU time is dispatch; TTA017's what-if keeps the rest).
  std::vector<uint8_t> launches_gpu;
  std::vector<StepSpan> spans;   // AnalysedSteps(trace), as the graph was built for them
  std::vector<StepNodes> steps;  // one per spans entry
  // A run without steps whose cold start is analysed apart (ColdStartCut::prefix_ns): its warm
  // part's start; nodes observed before it bound no step. INT64_MIN otherwise.
  int64_t warm_from_ns = std::numeric_limits<int64_t>::min();

  // Import-stats style counters of what the model could not represent.
  struct Stats {
    uint64_t gpu_without_launch = 0;  // GPU activity anchored at its recorded start
    uint64_t negative_latency = 0;    // GPU activity recorded before its launch call started
    uint64_t cycles_broken = 0;       // dependencies dropped to keep the graph acyclic
    uint64_t syncs = 0;
    uint64_t stream_waits = 0;           // recorded cudaStreamWaitEvent edges between streams
    uint64_t inferred_stream_waits = 0;  // unexplained stream starts right after another's end
    uint64_t cold_calls = 0;
  } stats;

  size_t size() const { return obs_start.size(); }
  // The entries of waits (and wait_tail) of node |v|: [first, last).
  std::pair<uint32_t, uint32_t> WaitsOf(int32_t v) const { return wait_ranges.Of(v); }
  int64_t ObsEnd(int32_t v) const { return obs_start[v] + obs_len[v]; }  // ns, as recorded
  void SetObsEnd(int32_t v, int64_t end) { obs_len.Set(v, end - obs_start[v]); }
  // The first node in [first, last) whose recorded end is after |t|, |last| for none; the
  // nodes' ends must be in order (one lane's are).
  int32_t FirstEndingAfter(int32_t first, int32_t last, int64_t t) const {
    while (first < last) {
      const int32_t mid = first + (last - first) / 2;
      if (ObsEnd(mid) <= t) {
        first = mid + 1;
      } else {
        last = mid;
      }
    }
    return first;
  }
  void Reserve(size_t nodes);
  // A node at the end of the current (last) lane.
  int32_t AddNode(int64_t s, int64_t e, int32_t r, NodeRole ro, Cause c);
  // The node before |v| on its lane, -1 for none.
  int32_t LanePrev(int32_t v) const { return has_lane_prev[v] ? v - 1 : -1; }
  // Index into lanes of the lane holding |v| (lanes hold consecutive node ranges, in order).
  uint32_t LaneOf(int32_t v) const;
};

// Consecutive slices of CPU work on one thread with the same cause under the same step-level op
// are one node (a few per op instead of one per event boundary: the graph stays small), except
// across the start or end of a ProfilerStep, of a runtime call, of a row in |keep_rows| (the
// CPU regions a what-if rescales: their time stays exactly theirs), and beyond
// kMergedSliceMaxNs (a longer slice may be a wait, and where another thread's work ends decides
// what a wait waited for: see the joins in docs/causal_model.md).
// |first_calls|: OneTimeFirstCalls(trace) when the caller has it already (else computed here).
// |cut|: AnalysedSteps'.
CausalGraph BuildCausalGraph(const Trace& trace, const std::vector<int32_t>& keep_rows = {},
                             const std::vector<FirstCall>* first_calls = nullptr,
                             ColdStartCut cut = {});
constexpr int64_t kMergedSliceMaxNs = 20000;

// A synchronize returns within microseconds of the work it waits for: one that goes on this
// long after it (or waits this long for nothing recorded) waited for work the trace lacks. The
// graph's attribution uses it; the rules' trace_incomplete_min_wait_us option defaults to it
// (TTA002 leaves such syncs to TTA016, which counts them).
constexpr int64_t kBlindSyncTailNs = 1000000;

// A what-if's new values of one graph column for the nodes it changes, one slot a node (4 bytes;
// a value beyond int32 kept aside, exactly): what a fix that changes most of the graph (CUDA
// graphs over a whole region) holds instead of a list of 16-byte pairs. Empty until Init.
class ChangeColumn {
 public:
  bool empty() const { return slots_.empty(); }
  void Init(size_t nodes) {  // every node without a value
    slots_.assign(nodes, kNone);
    aside_.clear();
    count_ = 0;
  }
  size_t count() const { return count_; }  // nodes with a value
  bool Has(size_t i) const { return slots_[i] != kNone; }
  int64_t Get(size_t i) const {  // requires Has(i)
    const int32_t v = slots_[i];
    return v != kAside ? v : aside_.at(static_cast<int32_t>(i));
  }
  // Where a node already has a value, the smaller one holds.
  void SetMin(size_t i, int64_t v) {
    if (Has(i)) {
      if (Get(i) <= v) return;
      if (slots_[i] == kAside) aside_.erase(static_cast<int32_t>(i));
    } else {
      ++count_;
    }
    if (v > kAside && v <= std::numeric_limits<int32_t>::max()) {
      slots_[i] = static_cast<int32_t>(v);
    } else {
      slots_[i] = kAside;
      aside_[static_cast<int32_t>(i)] = v;
    }
  }
  template <typename Fn>
  void ForEach(Fn&& fn) const {  // fn(node, value) in node order
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (Has(i)) fn(static_cast<int32_t>(i), Get(i));
    }
  }

 private:
  static constexpr int32_t kNone = std::numeric_limits<int32_t>::min();
  static constexpr int32_t kAside = kNone + 1;
  std::vector<int32_t> slots_;
  std::unordered_map<int32_t, int64_t> aside_;
  size_t count_ = 0;
};

// Changes to replay: new own durations, sync nodes that no longer wait, new launch latencies.
// Where two changes name one node, the smaller value holds. A duration may also grow: work a fix
// moves onto one node (copies batched into one). A fix that changes many durations or launch
// latencies keeps them in dense_dur / dense_cross_gap instead of the lists (FixWhatIf decides).
struct WhatIf {
  std::vector<std::pair<int32_t, int64_t>> dur;
  std::vector<int32_t> no_wait;
  std::vector<std::pair<int32_t, int64_t>> cross_gap;
  std::vector<std::pair<int32_t, int64_t>> lane_gap;
  ChangeColumn dense_dur, dense_cross_gap;
  bool empty() const {
    return dur.empty() && no_wait.empty() && cross_gap.empty() && lane_gap.empty() &&
           dense_dur.count() == 0 && dense_cross_gap.count() == 0;
  }
  size_t DurCount() const { return dur.size() + dense_dur.count(); }
  template <typename Fn>
  void ForEachDur(Fn&& fn) const {  // fn(node, new duration) for every changed duration
    for (const auto& [n, d] : dur) fn(n, d);
    dense_dur.ForEach(fn);
  }
};

struct Replay {
  std::vector<int64_t> end;                   // per node, ns
  NarrowInt64Column len;                      // per node, its end minus its start (Start)
  std::vector<int64_t> step_start, step_end;  // per step
  int64_t total_step_ns() const;              // sum of the steps' durations
  int64_t Start(int32_t v) const { return end[v] - len[v]; }
  // A what-if's changes merged per node, and per node the index of its change (-1: none, reset
  // after each replay); a what-if that changes many durations gets a copy of the duration column
  // instead. Replaying into the same object again allocates (and faults in) no new memory.
  struct Change {
    int32_t node;
    bool no_wait;
    int64_t dur, cross_gap, lane_gap;  // upper bounds on the graph's values
  };
  std::vector<Change> scratch_changes;
  std::vector<int32_t> scratch_change_of;
  std::vector<int64_t> scratch_dur;  // the graph's durations with many changed ones, or empty
};
Replay RunReplay(const CausalGraph& g, const WhatIf* what_if = nullptr);
// The same into |out|, reusing its memory (the what-ifs replay many times).
void RunReplay(const CausalGraph& g, const WhatIf* what_if, Replay* out);
// Several what-ifs applied together (the fixes so far, without copying their changes).
void RunReplay(const CausalGraph& g, const std::vector<const WhatIf*>& what_ifs, Replay* out);

// Where one step's wall time went: ns per cause, and the CPU work split by its top-level op.
struct StepAttribution {
  std::array<int64_t, kCauseCount> ns{};
  std::vector<std::pair<StringId, int64_t>> cpu_ops;  // (name of the step-level op, ns), most first
  int64_t total() const;
  int64_t gpu_ns() const;  // GPU work on the path: compute, communication, memcpy, memset
};
// Walks the critical path of each step of |replay| back from the step's end.
std::vector<StepAttribution> AttributeSteps(const Trace& trace, const CausalGraph& g,
                                            const Replay& replay);

// Where the time went, for `ttap stats` and hovers: the attribution of every analysed step and
// of all of them together, and how far the unchanged replay is from the trace's own step times.
struct TimeBreakdown {
  std::vector<int64_t> step_numbers;  // -1 for the whole span of a trace without steps
  std::vector<StepAttribution> steps;
  StepAttribution overall;      // the steps added up (cpu_ops: the top 10)
  double replay_max_error = 0;  // largest |replayed - recorded| / recorded step time
};
TimeBreakdown WhereTimeWent(const Trace& trace);
TimeBreakdown WhereTimeWent(const Trace& trace, const CausalGraph& g, const Replay& replay);
// "GPU compute (matmul/conv) 41%, data loading 30%, ..." (causes of at least 1%, largest first).
std::string FormatCauses(const StepAttribution& a, size_t max_causes = 6);
// A one-line bar of |width| characters, one letter per cause in proportion (G GPU compute, C
// communication, M memcpy/memset, L launch, S sync, D data loading, A allocator, P CPU work, W
// cold start, U GPU waits the trace does not explain, . untraced / gaps), largest first.
std::string CauseBar(const StepAttribution& a, int width);

}  // namespace ttap

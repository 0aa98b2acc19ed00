// FixWhatIf and CostFindings; see what_if.h. The constants below are the fix models' assumptions,
// documented in docs/causal_model.md.
#include "analysis/causal/what_if.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "analysis/base/parallel.h"
#include "analysis/base/string_util.h"
#include "analysis/model/host_copies.h"
#include "analysis/model/runtime_calls.h"
#include "analysis/model/tensor_cores.h"
#include "analysis/model/trace_queries.h"

namespace ttap {

namespace {

// A DataLoader fed by workers hands a ready batch over: at least this, or this share of the
// single-process load.
constexpr int64_t kWorkerFetchNs = 50000;
constexpr double kWorkerFetchShare = 0.02;
// An async launch call's cost once a copy no longer blocks.
constexpr int64_t kAsyncCallNs = 10000;
// FP32 matrix kernels on tensor cores when a finding does not say (TensorCoreRatio, rules.h).
constexpr double kTensorCoreRatio = 2.0;
// Under CUDA graphs / torch.compile(mode="reduce-overhead") a region's launches and per-op CPU
// dispatch mostly disappear: what is left of them.
constexpr double kGraphedCpuFactor = 0.05;
// A stretch of the launching thread this long without a launch call is host work (Python logic,
// guards, data preparation), not the dispatch of the ops around it: a graph keeps it.
constexpr int64_t kLaunchFreeStretchNs = 1000000;
// Launches further apart than this belong to different captured regions.
constexpr int64_t kBurstGapNs = 100000;
// A runtime call once its module is loaded.
constexpr int64_t kWarmCallNs = 10000;
// A multi-tensor (foreach / fused) kernel pays the fixed cost of a launch on the device once:
// each further per-parameter kernel of the same kind loses this share of the shortest one.
constexpr double kFusedFixedShare = 0.8;
// zero_grad(set_to_none=True): what is left of the region.
constexpr int64_t kSetToNoneNs = 10000;
// A collective's fixed (latency) cost at most: NCCL/RCCL's small-message latency is 10-50 us
// within a node and tens of us more across nodes; a longer call moves data.
constexpr int64_t kCollectiveLatencyCapNs = 100000;
// Taking the profiler's cost out (ProfilerCost, what_if.h): a CPU slice keeps at least this share
// of its time, and what slices cannot give up carries on at most this far.
constexpr double kProfiledMinShare = 0.1;
constexpr int64_t kProfiledCarryMaxNs = 100000;

struct Builder {
  const Trace& trace;
  const CausalGraph& g;
  size_t dense_min_changes;  // FixWhatIf's
  WhatIf w;
  std::vector<bool> touched;  // nodes whose duration was set (first change wins)

  void SetDur(int32_t n, int64_t d) {
    if (n < 0) return;
    if (touched.empty()) touched.assign(g.size(), false);
    if (touched[n]) return;
    touched[n] = true;
    d = std::max<int64_t>(0, d);
    if (!w.dense_dur.empty()) return w.dense_dur.SetMin(n, d);
    w.dur.emplace_back(n, d);
    if (Dense(w.dur.size(), 12)) {  // a 4-byte column from here on, not 16-byte pairs
      w.dense_dur.Init(g.size());
      for (const auto& [node, value] : w.dur) w.dense_dur.SetMin(node, value);
      std::vector<std::pair<int32_t, int64_t>>().swap(w.dur);
    }
  }
  // A new launch latency (the smaller of two holds).
  void SetCrossGap(int32_t n, int64_t gap) {
    if (!w.dense_cross_gap.empty()) return w.dense_cross_gap.SetMin(n, gap);
    w.cross_gap.emplace_back(n, gap);
    if (Dense(w.cross_gap.size(), 12)) {
      w.dense_cross_gap.Init(g.size());
      for (const auto& [node, value] : w.cross_gap) w.dense_cross_gap.SetMin(node, value);
      std::vector<std::pair<int32_t, int64_t>>().swap(w.cross_gap);
    }
  }
  // Whether |changes| listed changes of one column should be a column of the graph's size, 4
  // bytes a node (and are enough to matter): a listed change costs 16 bytes here, and a launch
  // latency 36 more in each replay's change list (Replay::Change and its index); both columns
  // turn dense from one node in 12 (|ratio|), where the lists and their replay copies outweigh
  // them.
  bool Dense(size_t changes, size_t ratio) const {
    return changes >= dense_min_changes && ratio * changes > g.size();
  }
  void NoWait(int32_t n) {
    if (n >= 0 && (g.role[n] == NodeRole::kSync || g.role[n] == NodeRole::kJoin)) {
      w.no_wait.push_back(n);
    }
  }
  int32_t NodeOfRow(int32_t row) const {
    return row >= 0 && static_cast<size_t>(row) < g.node_of_row.size() ? g.node_of_row[row] : -1;
  }
  // The launch call node of a GPU node, -1.
  int32_t LaunchOf(int32_t gpu_node) const {
    const int32_t r = g.row[gpu_node];
    return r >= 0 ? NodeOfRow(trace.events.link[r]) : -1;
  }
  // The nodes of |lane| that start in [lo, hi), as a node index range.
  std::pair<int32_t, int32_t> NodesIn(int32_t lane, int64_t lo, int64_t hi) const {
    const auto& l = g.lanes[lane];
    auto first = g.obs_start.begin() + l.first_node, last = g.obs_start.begin() + l.end_node;
    auto a = std::lower_bound(first, last, lo);
    auto b = std::lower_bound(a, last, hi);
    return {static_cast<int32_t>(a - g.obs_start.begin()),
            static_cast<int32_t>(b - g.obs_start.begin())};
  }
  // CPU nodes of |row|'s lane inside the row's time span: the row and everything under it.
  std::pair<int32_t, int32_t> NodesUnder(int32_t row) const {
    const EventTable& ev = trace.events;
    const int32_t lane = g.lane_of_track[ev.track[row]];
    if (lane < 0) return {0, 0};
    return NodesIn(lane, ev.ts[row], ev.end(row));
  }
  // GPU nodes launched by calls under |row|.
  std::vector<int32_t> GpuUnder(int32_t row) const {
    std::vector<int32_t> out;
    auto [a, b] = NodesUnder(row);
    for (int32_t n = a; n < b; ++n) {
      if (g.role[n] == NodeRole::kCpuWork || g.row[n] < 0) continue;
      const int32_t gpu_row = trace.events.link[g.row[n]];
      const int32_t gn = NodeOfRow(gpu_row);
      if (gn >= 0 && g.role[gn] == NodeRole::kGpu) out.push_back(gn);
    }
    return out;
  }
  // Scales the CPU time under |row| (slices, launch calls, syncs' own cost) by |factor|.
  // |keep_one_time|: one-time work under the row (a first call's set-up, Cause::kColdStart)
  // keeps its time: a steady-state fix (foreach, set_to_none) does not remove it.
  void ScaleUnder(int32_t row, double factor, bool keep_one_time = false) {
    auto [a, b] = NodesUnder(row);
    for (int32_t n = a; n < b; ++n) {
      if (keep_one_time && g.cause[n] == Cause::kColdStart) continue;
      SetDur(n, static_cast<int64_t>(g.dur[n] * factor));
    }
  }
  int64_t CpuUnder(int32_t row) const {
    auto [a, b] = NodesUnder(row);
    int64_t t = 0;
    for (int32_t n = a; n < b; ++n) t += g.dur[n];
    return t;
  }
  void SetLaneGap(int32_t n, int64_t gap) {
    if (n >= 0) w.lane_gap.emplace_back(n, std::max<int64_t>(0, gap));
  }
  // A GPU activity that no longer runs: no time, and no gap of its own on its stream (a backlog
  // closes up behind it).
  void DropGpu(int32_t gn) {
    if (gn < 0 || g.role[gn] != NodeRole::kGpu) return;
    SetDur(gn, 0);
    SetLaneGap(gn, 0);
  }
  // Removes a GPU activity with its launch (and any wait on it by that call).
  void RemoveGpu(int32_t gn) {
    if (gn < 0 || g.role[gn] != NodeRole::kGpu) return;
    DropGpu(gn);
    const int32_t l = LaunchOf(gn);
    SetDur(l, 0);
    NoWait(l);
  }
  // The outermost framework op around launch call |launch_row| that launches nothing else (the
  // aten::to -> _to_copy -> copy_ chain of one `.cuda()`), -1. Stops at Python frames and
  // annotations: the user's statement may do more than this one call.
  int32_t OpChainOf(int32_t launch_row) const {
    const EventTable& ev = trace.events;
    int32_t best = -1;
    for (int32_t p = ev.parent[launch_row], depth = 0;
         p >= 0 && depth < 16 && ev.kind[p] == EventKind::kCpuOp; p = ev.parent[p], ++depth) {
      auto [a, e] = NodesUnder(p);
      bool other = false;
      for (int32_t n = a; n < e && !other; ++n) {
        other = g.role[n] != NodeRole::kCpuWork && g.row[n] >= 0 && g.row[n] != launch_row &&
                ev.link[g.row[n]] >= 0;
      }
      if (other) break;
      best = p;
    }
    return best;
  }
  // Removes a GPU activity, its launch and the op chain that only made that launch.
  void RemoveGpuAndOps(int32_t gn) {
    if (gn < 0 || g.role[gn] != NodeRole::kGpu) return;
    RemoveLaunchAndOps(gn);
    DropGpu(gn);
  }
  // Removes the launch of GPU activity |gn| and the op chain that only made that launch; with
  // |keep_wait| a blocking launch still waits for the GPU (a batched copy from pageable memory
  // blocks too).
  void RemoveLaunchAndOps(int32_t gn, bool keep_wait = false) {
    const int32_t launch_row = g.row[gn] >= 0 ? trace.events.link[g.row[gn]] : -1;
    if (launch_row >= 0) {
      const int32_t chain = OpChainOf(launch_row);
      if (chain >= 0) {
        auto [a, e] = NodesUnder(chain);
        for (int32_t n = a; n < e; ++n) {
          SetDur(n, 0);
          if (!keep_wait) NoWait(n);
        }
      }
    }
    const int32_t l = LaunchOf(gn);
    SetDur(l, 0);
    if (!keep_wait) NoWait(l);
  }
  // The fixed cost of one activity on the device among |nodes| (kFusedFixedShare of the shortest
  // of them), which a merged activity pays once.
  int64_t FixedCostOf(const std::vector<int32_t>& nodes) const {
    int64_t shortest = -1;
    for (int32_t gn : nodes) shortest = shortest < 0 ? g.dur[gn] : std::min(shortest, g.dur[gn]);
    return static_cast<int64_t>(kFusedFixedShare *
                                static_cast<double>(std::max<int64_t>(0, shortest)));
  }
  // GPU activities of one kind that a fix merges into one multi-tensor kernel: they keep their
  // work and run back to back, each after the first without the fixed cost.
  void FuseGpu(const std::vector<int32_t>& nodes) {
    const int64_t fixed = FixedCostOf(nodes);
    for (size_t k = 1; k < nodes.size(); ++k) {
      SetDur(nodes[k], g.dur[nodes[k]] - fixed);
      SetLaneGap(nodes[k], 0);
    }
  }
  // Copies that a fix batches into one, sent once every tensor is made: the last launch stays
  // (a copy that blocked still blocks) and its copy moves every copy's bytes, each but one
  // without the fixed cost; the others and the op chains that made them go.
  void BatchIntoLast(const std::vector<int32_t>& copies) {
    if (copies.empty()) return;
    int64_t total = 0;
    for (int32_t gn : copies) total += g.dur[gn];
    const int64_t fixed = FixedCostOf(copies);
    // The copies folded into the last one go with their calls and their waits: the batched copy
    // (which still blocks when its memory is pageable) waits for what they waited for.
    for (size_t k = 0; k + 1 < copies.size(); ++k) {
      RemoveLaunchAndOps(copies[k]);
      DropGpu(copies[k]);
    }
    SetDur(copies.back(), total - fixed * static_cast<int64_t>(copies.size() - 1));
  }
  // Index into g.spans of the analysed step that |t| falls in (the first one before any).
  size_t StepIndexOf(int64_t t) const {
    auto after = std::upper_bound(g.spans.begin(), g.spans.end(), t,
                                  [](int64_t x, const StepSpan& sp) { return x < sp.start_ns; });
    return after == g.spans.begin() ? size_t{0} : static_cast<size_t>(after - g.spans.begin()) - 1;
  }
  bool IsCpuRegion(int32_t row) const {
    const EventKind k = trace.events.kind[row];
    return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
           k == EventKind::kPythonFunction;
  }
};

// DataLoader workers: the load becomes a hand-over
void WorkersLoadBatches(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  for (int32_t r : rows) {
    const int64_t cpu = b.CpuUnder(r);
    if (cpu <= 0) continue;
    const int64_t target =
        std::min(cpu, std::max(kWorkerFetchNs, static_cast<int64_t>(cpu * kWorkerFetchShare)));
    b.ScaleUnder(r, static_cast<double>(target) / cpu);
  }
}

// The stream sync that follows launch call node |call| under the same op, with no other launch
// between them (copy_ with non_blocking=False: cudaMemcpyAsync, then cudaStreamSynchronize); -1.
int32_t SyncAfterCall(const Trace& trace, const CausalGraph& g, int32_t call) {
  const EventTable& ev = trace.events;
  const int32_t call_row = g.row[call];
  const int32_t op = call_row >= 0 ? ev.parent[call_row] : -1;
  if (op < 0) return -1;
  const int32_t lane = g.LaneOf(call);
  for (int32_t n = call + 1; n < g.lanes[lane].end_node && g.obs_start[n] < ev.end(op); ++n) {
    const int32_t r = g.row[n];
    if (r < 0 || g.role[n] == NodeRole::kCpuWork) continue;
    if (g.role[n] == NodeRole::kSync && ev.parent[r] == op &&
        HasRuntimeFlag(trace.Name(r), kRuntimeSync)) {
      return n;
    }
    if (ev.link[r] >= 0) return -1;  // another launch
  }
  return -1;
}

void DeferHostSync(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const Trace& trace = b.trace;
  const CausalGraph& g = b.g;
  const EventTable& ev = b.trace.events;
  // The value read every N steps or kept on the device: the sync no longer waits, and the
  // statement that consumes it on the host (the outermost region around the sync that launches
  // no kernel: `pbar.set_postfix(loss=loss.item())`, a metrics print) leaves the step with it.
  std::set<int32_t> deferred;
  for (int32_t r : rows) {
    const int32_t call = b.NodeOfRow(r);
    b.NoWait(call);
    // A read-back's copy to the host and the stream sync after it under the same op
    // (aten::nonzero reading its count: cudaMemcpyAsync, then cudaStreamSynchronize) are one
    // wait: left to the sync, it would only move there. (Only a copy's: a launch that waits under
    // CUDA_LAUNCH_BLOCKING is no read, and a sync after it waits for other work.)
    const int32_t copy = ev.link[r];
    const int32_t sync_after =
        call >= 0 && copy >= 0 && IsD2H(trace.Name(copy)) ? SyncAfterCall(trace, g, call) : -1;
    if (sync_after >= 0) b.NoWait(sync_after);
    const int32_t stmt = HostStatementOf(trace, r);
    if (stmt < 0 || !deferred.insert(stmt).second) continue;
    auto [a, e] = b.NodesUnder(stmt);
    for (int32_t n = a; n < e; ++n) {
      b.NoWait(n);
      if (g.role[n] != NodeRole::kCpuWork && g.row[n] >= 0) {
        b.DropGpu(b.NodeOfRow(ev.link[g.row[n]]));
      }
    }
    b.ScaleUnder(stmt, 0.0);
  }
}

// A number a detector put in a finding's evidence, 0 when absent (a rate is already the mean of
// the steps the finding merges: EvidenceMerge::kMean).
double Evidence(const Finding& f, const std::string& key) {
  auto it = f.evidence.find(key);
  return it == f.evidence.end() ? 0.0 : it->second.number;
}

// pinned memory, non_blocking=True: the copy at pinned bandwidth (host_copies.h), the call async
void PinCopies(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const CausalGraph& g = b.g;
  const EventTable& ev = b.trace.events;
  const double pinned_gbps = Evidence(f, "pinned_gbps");
  for (int32_t r : rows) {
    int32_t gpu = -1, call = -1;
    if (IsGpuKind(ev.kind[r])) {
      gpu = b.NodeOfRow(r);
      call = gpu >= 0 ? b.LaunchOf(gpu) : -1;
    } else {
      call = b.NodeOfRow(r);
      gpu = b.NodeOfRow(ev.link[r]);
    }
    // A synchronous copy from memory that is pinned already only stops blocking.
    const int32_t gpu_row = gpu >= 0 ? g.row[gpu] : -1;
    if (gpu_row >= 0 && HostMemoryOf(b.trace.Name(gpu_row)) != HostMemory::kPinned) {
      b.SetDur(gpu, PinnedCopyNs(g.dur[gpu], ev.bytes[gpu_row], pinned_gbps));
    }
    if (call >= 0) {
      b.SetDur(call, std::min(g.dur[call], kAsyncCallNs));
      b.NoWait(call);
      // copy_ with non_blocking=False queues a host-to-device copy and then waits for its stream
      // under the same op: non_blocking=True from pinned memory drops that wait. A copy to the
      // host keeps its wait: the host reads what it copied.
      if (gpu_row >= 0 && IsH2D(b.trace.Name(gpu_row))) b.NoWait(SyncAfterCall(b.trace, g, call));
    }
  }
}

void RemoveOrBatchCopies(Builder& b, const std::vector<int32_t>& rows, const Finding& f,
                         FixModel model) {
  const CausalGraph& g = b.g;
  const EventTable& ev = b.trace.events;
  // channels_last / data kept on the device: the conversions or copies disappear with their
  // launches and the ops that only made them. TTA004 (the tensors batched into one copy, or
  // made on the device): one launch is left, and the bytes still move.
  std::vector<int32_t> copies;
  for (int32_t r : rows) {
    if (!IsGpuKind(ev.kind[r])) continue;
    const int32_t gn = b.NodeOfRow(r);
    if (gn < 0 || g.role[gn] != NodeRole::kGpu) continue;
    if (model != FixModel::kBatchCopies) {
      b.RemoveGpuAndOps(gn);
      continue;
    }
    copies.push_back(gn);
  }
  // Batched where they were made: copies launched one after another (in one step, each within
  // kBurstGapNs of the previous one) go in one copy; copies elsewhere in the step (the batch's
  // own inputs and labels) and in other steps stay apart (batching every copy of the finding
  // into the last one queued six steps of bytes behind one blocking copy).
  std::vector<std::pair<int64_t, int32_t>> timed;  // (launch start, GPU node)
  for (int32_t gn : copies) {
    const int32_t l = b.LaunchOf(gn);
    timed.emplace_back(l >= 0 ? g.obs_start[l] : g.obs_start[gn], gn);
  }
  std::sort(timed.begin(), timed.end());
  std::vector<int32_t> group;
  int64_t last_t = 0;
  for (size_t k = 0; k < timed.size(); ++k) {
    const auto [t, gn] = timed[k];
    if (!group.empty() && (t - last_t > kBurstGapNs || b.StepIndexOf(t) != b.StepIndexOf(last_t))) {
      b.BatchIntoLast(group);
      group.clear();
    }
    group.push_back(gn);
    last_t = t;
  }
  b.BatchIntoLast(group);
  if (model == FixModel::kKeepOnDevice) {
    // The host work on the data between a copy out and its copy back (rows come in pairs)
    // becomes device work, when nothing else is launched in between (the finding's own copies
    // of other tensors aside: two tensors out, worked on, and back): CPU slices and waits go.
    std::set<int32_t> own_calls;
    for (int32_t r : rows) {
      const int32_t gn = b.NodeOfRow(r);
      const int32_t call = gn >= 0 ? b.LaunchOf(gn) : -1;
      if (call >= 0) own_calls.insert(call);
    }
    for (size_t k = 0; k + 1 < rows.size(); k += 2) {
      const int32_t out_gpu = b.NodeOfRow(rows[k]), back_gpu = b.NodeOfRow(rows[k + 1]);
      const int32_t out_call = out_gpu >= 0 ? b.LaunchOf(out_gpu) : -1;
      const int32_t back_call = back_gpu >= 0 ? b.LaunchOf(back_gpu) : -1;
      if (out_call < 0 || back_call <= out_call || g.LaneOf(out_call) != g.LaneOf(back_call)) {
        continue;
      }
      bool other_launch = false;
      for (int32_t n = out_call + 1; n < back_call && !other_launch; ++n) {
        other_launch = g.role[n] != NodeRole::kCpuWork && g.row[n] >= 0 && ev.link[g.row[n]] >= 0 &&
                       !own_calls.count(n);
      }
      if (other_launch) continue;
      for (int32_t n = out_call + 1; n < back_call; ++n) {
        b.NoWait(n);
        b.SetDur(n, 0);
      }
    }
  }
}

// zero_grad(set_to_none=True): no kernels, little CPU
void SetGradsToNone(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  int64_t cpu = 0;
  for (int32_t r : rows) cpu += b.IsCpuRegion(r) ? b.CpuUnder(r) : 0;
  for (int32_t r : rows) {
    if (!b.IsCpuRegion(r)) continue;
    for (int32_t gn : b.GpuUnder(r)) b.DropGpu(gn);
    const double factor = cpu > 0 ? std::min(1.0, static_cast<double>(kSetToNoneNs) / cpu) : 0.0;
    b.ScaleUnder(r, factor, /*keep_one_time=*/true);
  }
}

// foreach / fused optimizer: one launch per kernel kind
void ForeachOptimizer(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const CausalGraph& g = b.g;
  const EventTable& ev = b.trace.events;
  for (int32_t r : rows) {
    if (!b.IsCpuRegion(r)) continue;
    std::vector<int32_t> gpu = b.GpuUnder(r);
    if (gpu.empty()) continue;
    std::set<StringId> kinds;
    for (int32_t gn : gpu) kinds.insert(ev.name[g.row[gn]]);
    b.ScaleUnder(r, static_cast<double>(kinds.size()) / gpu.size(), /*keep_one_time=*/true);
    // The kernels of one kind become one multi-tensor kernel.
    std::map<StringId, std::vector<int32_t>> by_kind;
    for (int32_t gn : gpu) by_kind[ev.name[g.row[gn]]].push_back(gn);
    for (const auto& [kind, nodes] : by_kind) b.FuseGpu(nodes);
  }
}

// CUDA graphs / torch.compile(mode="reduce-overhead")
void GraphBursts(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const CausalGraph& g = b.g;
  // The launch calls of the bursts, cut into spans where consecutive launches are close: the
  // regions a graph would capture.
  std::vector<int32_t> launches;
  for (int32_t r : rows) {
    const int32_t gn = b.NodeOfRow(r);
    if (gn < 0 || g.role[gn] != NodeRole::kGpu) continue;
    const int32_t l = b.LaunchOf(gn);
    if (l < 0) continue;
    launches.push_back(l);
    // The graph's kernels follow each other on the stream instead of their launches.
    b.SetCrossGap(gn, std::min<int64_t>(g.cross_gap[gn], 0));
  }
  std::sort(launches.begin(), launches.end());               // one lane's nodes are in time order
  std::vector<std::tuple<int32_t, int64_t, int64_t>> spans;  // (lane, start, end)
  for (int32_t l : launches) {
    const int32_t lane = static_cast<int32_t>(g.LaneOf(l));
    if (!spans.empty() && std::get<0>(spans.back()) == lane &&
        g.obs_start[l] - std::get<2>(spans.back()) <= kBurstGapNs) {
      std::get<2>(spans.back()) = std::max(std::get<2>(spans.back()), g.ObsEnd(l));
    } else {
      spans.emplace_back(lane, g.obs_start[l], g.ObsEnd(l));
    }
  }
  for (const auto& [lane, start, end] : spans) {
    auto [a, e] = b.NodesIn(lane, start, end);
    for (int32_t n = a; n < e; ++n) {
      if (g.role[n] == NodeRole::kSync || g.role[n] == NodeRole::kJoin) continue;
      b.SetDur(n, static_cast<int64_t>(g.dur[n] * kGraphedCpuFactor));
    }
  }
}

void GraphRegion(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const Trace& trace = b.trace;
  const CausalGraph& g = b.g;
  // The region captured as a CUDA graph (or compiled with mode="reduce-overhead"): in each run
  // of the region, the launching thread's dispatch and launch work from the run's first launch
  // to its last becomes one graph launch (kGraphedCpuFactor of it is left), and its kernels run
  // back to back at the GPU's pace. Syncs, data loading, allocator and cold-start calls stay.
  // The region's launch calls, in node order (one lane's nodes are in time order).
  std::vector<int32_t> launches;
  for (int32_t r : rows) {
    const int32_t gn = b.NodeOfRow(r);
    if (gn < 0 || g.role[gn] != NodeRole::kGpu) continue;
    const int32_t l = b.LaunchOf(gn);
    if (l < 0) continue;
    launches.push_back(l);
    if (g.cross_gap[gn] > 0) b.SetCrossGap(gn, 0);
    if (g.lane_gap[gn] > 0) b.SetLaneGap(gn, 0);
  }
  std::sort(launches.begin(), launches.end());
  launches.erase(std::unique(launches.begin(), launches.end()), launches.end());
  // Each run of the region: its launches on one lane in one step inside one of the finding's
  // occurrences (the detector's runs of the region, with no other region's launch between
  // them). A step that runs the loop body many times (ten iterations in one ProfilerStep) runs
  // the region many times; what lies between two of its runs (the rest of the iteration) is
  // not captured with it. Without occurrences, a step's launches are one run.
  const auto& occ = f.occurrences;  // sorted by start
  auto occurrence_of = [&](int64_t t) -> int64_t {
    auto it = std::upper_bound(occ.begin(), occ.end(), std::make_pair(t, INT64_MAX));
    for (int k = 0; k < 8 && it != occ.begin(); ++k) {
      --it;
      if (it->first <= t && t < it->second) return it - occ.begin();
    }
    return -1;
  };
  struct Span {
    uint32_t lane;
    size_t step;
    int64_t occurrence;
    int64_t first, second;  // the span of its launches (first start, last end)
  };
  std::vector<Span> spans;
  for (int32_t l : launches) {
    const uint32_t lane = g.LaneOf(l);
    const size_t step = b.StepIndexOf(g.obs_start[l]);
    const int64_t occurrence = occ.empty() ? -1 : occurrence_of(g.obs_start[l]);
    if (!spans.empty() && spans.back().lane == lane && spans.back().step == step &&
        spans.back().occurrence == occurrence) {
      spans.back().second = std::max(spans.back().second, g.ObsEnd(l));
      continue;
    }
    spans.push_back({lane, step, occurrence, g.obs_start[l], g.ObsEnd(l)});
  }
  // An annotated region's rows (an Optimizer.step, a record_function block) widen the spans of
  // the launches inside them to the whole annotation: a graph or a compiled region replays none
  // of its Python before the first launch or after the last.
  for (int32_t r : rows) {
    if (!b.IsCpuRegion(r)) continue;  // the region's kernels, above
    const int64_t lo = trace.events.ts[r], hi = trace.events.end(r);
    for (Span& span : spans) {
      if (span.first < hi && span.second > lo) {
        span.first = std::min(span.first, lo);
        span.second = std::max(span.second, hi);
      }
    }
  }
  // Dispatch is the CPU work of ops (and Python frames) that launch GPU work: a graph replays
  // their kernels without them. Host work that launches nothing (metrics on CPU tensors, data
  // preparation), the loop's own glue between ops, and any stretch of kLaunchFreeStretchNs or
  // more between two launch calls (Python logic inside a frame that launches elsewhere: the
  // same time, without Python frames in the trace, has no op to call dispatch) stay.
  for (const Span& span : spans) {
    auto [a, e] = b.NodesIn(static_cast<int32_t>(span.lane), span.first, span.second);
    int64_t prev_launch_end = span.first;  // a launch call or its annotation starts the span
    int32_t next_launch = a;               // the first launch node at or after n
    for (int32_t n = a; n < e; ++n) {
      if (g.role[n] == NodeRole::kLaunch) {
        prev_launch_end = std::max(prev_launch_end, g.ObsEnd(n));
      } else {
        if (next_launch <= n) {
          next_launch = n + 1;
          while (next_launch < e && g.role[next_launch] != NodeRole::kLaunch) ++next_launch;
        }
        const int64_t next_start = next_launch < e ? g.obs_start[next_launch] : span.second;
        if (next_start - prev_launch_end >= kLaunchFreeStretchNs) continue;
      }
      const int32_t r = g.row[n];
      const bool dispatch =
          (g.role[n] == NodeRole::kCpuWork && g.cause[n] == Cause::kCpuWork && r >= 0 &&
           g.launches_gpu[r] && !StartsWith(trace.Name(r), "ProfilerStep#")) ||
          (g.role[n] == NodeRole::kLaunch && g.cause[n] == Cause::kLaunch);
      if (dispatch) b.SetDur(n, static_cast<int64_t>(g.dur[n] * kGraphedCpuFactor));
    }
  }
}

// profiled after warm-up: each first call costs a usual one
void WarmStart(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const CausalGraph& g = b.g;
  const EventTable& ev = b.trace.events;
  for (int32_t r : rows) {
    if (b.IsCpuRegion(r)) {  // a one-time first call of an op: it costs what later runs do
      const FirstCall* first = FirstCallAt(g.first_calls, r);
      const int64_t typical = first ? first->typical_ns : 0;
      const int64_t cpu = b.CpuUnder(r);
      if (cpu > 0) b.ScaleUnder(r, std::min(1.0, static_cast<double>(typical) / cpu));
      // Its kernels start a usual latency after their launch calls, not after the device
      // loads their module or wakes (a T4's first conv ran 5.5 ms after its launch).
      for (int32_t gn : b.GpuUnder(r)) {
        b.SetCrossGap(gn, std::min(g.cross_gap[gn], kWarmCallNs + g.typical_latency));
      }
      continue;
    }
    const int32_t n = b.NodeOfRow(r);
    if (n >= 0) b.SetDur(n, std::min<int64_t>(g.dur[n], kWarmCallNs));
    b.NoWait(n);  // a one-time call that synchronises (a first cudaFree): its wait goes too
    // Its kernel starts a usual latency after the call, not after the lazy load.
    const int32_t gn = b.NodeOfRow(ev.link[r]);
    if (gn >= 0 && g.role[gn] == NodeRole::kGpu && g.cross[gn] == n) {
      b.SetCrossGap(gn, std::min(g.cross_gap[gn], kWarmCallNs + g.typical_latency));
    }
  }
}

void MoveIdleWorkOut(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const CausalGraph& g = b.g;
  // No catalogue fix: the hypothetical "this CPU work moved out of the step" (the CPU time
  // of the main thread inside the idle gaps), costed after every real fix.
  for (const auto& [lo, hi] : f.occurrences) {
    for (const auto& l : g.lanes) {
      if (!l.main) continue;
      // Nodes of a lane are ordered by start and do not overlap, so also by end.
      for (int32_t n = g.FirstEndingAfter(l.first_node, l.end_node, lo); n < l.end_node; ++n) {
        if (g.obs_start[n] >= hi) break;
        if (g.role[n] != NodeRole::kCpuWork) continue;
        const int64_t overlap = std::min(hi, g.ObsEnd(n)) - std::max(lo, g.obs_start[n]);
        b.SetDur(n, g.dur[n] - std::max<int64_t>(0, overlap));
      }
    }
  }
}

// TF32 / AMP: each kernel at its time on tensor cores
void UseTensorCores(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const CausalGraph& g = b.g;
  const double ratio = Evidence(f, "tensor_core_ratio");
  for (int32_t r : rows) {
    const int32_t gn = b.NodeOfRow(r);
    if (gn >= 0) b.SetDur(gn, TensorCoreNs(g.dur[gn], ratio > 1.0 ? ratio : kTensorCoreRatio));
  }
}

void OverlapCommunication(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const Trace& trace = b.trace;
  const CausalGraph& g = b.g;
  const EventTable& ev = b.trace.events;
  // Collectives the CPU runs (gloo) that last over twice the step's computing: no overlap
  // covers them, and the fix the finding gives first that saves is fewer bytes (a DDP comm
  // hook compressing the gradients to fp16 or bf16: half the bytes, half a bandwidth-bound
  // all-reduce's time).
  auto cpu = f.evidence.find("cpu_collectives");
  if (cpu != f.evidence.end() && cpu->second.text == "yes" &&
      Evidence(f, "step_compute_us") < 0.5 * Evidence(f, "step_comm_us")) {
    for (int32_t r : rows) b.ScaleUnder(r, 0.5);
    return;
  }
  // Communication overlapped with the step's earlier work (DDP's buckets during backward):
  // each step's collectives hide behind the wall time from the start of its backward (else
  // of the step) to their start; what exceeds that stays on the path.
  std::vector<int64_t> hide_from(g.spans.size(), 0);
  std::vector<uint8_t> has_backward(g.spans.size(), 0);
  for (size_t s = 0; s < g.spans.size(); ++s) hide_from[s] = g.spans[s].start_ns;
  std::vector<int8_t> backward_name(trace.strings.size(), -1);
  for (size_t i = 0, s = 0; i < ev.size() && s < g.spans.size(); ++i) {
    if (ev.kind[i] != EventKind::kCpuOp && ev.kind[i] != EventKind::kUserAnnotation) continue;
    while (s < g.spans.size() && ev.ts[i] >= g.spans[s].end_ns) ++s;
    if (s >= g.spans.size() || ev.ts[i] < g.spans[s].start_ns || has_backward[s]) continue;
    int8_t& known = backward_name[ev.name[i]];
    if (known < 0) known = ContainsIgnoreCase(trace.Name(i), "backward") ? 1 : 0;
    if (known == 1) {  // rows are sorted by start: the step's first backward row
      hide_from[s] = ev.ts[i];
      has_backward[s] = 1;
    }
  }
  // The gradients are ready once backward's GPU work runs: the first activity launched after
  // the backward began (the step's first, without a backward) is where hiding can start.
  {
    std::vector<int64_t> first_gpu(g.spans.size(), std::numeric_limits<int64_t>::max());
    for (size_t n = 0; n < g.size(); ++n) {
      const int32_t c = g.cross[n];
      if (g.role[n] != NodeRole::kGpu || c < 0) continue;
      auto it = std::upper_bound(g.spans.begin(), g.spans.end(), g.obs_start[c],
                                 [](int64_t t, const StepSpan& sp) { return t < sp.start_ns; });
      if (it == g.spans.begin()) continue;
      const size_t s = static_cast<size_t>(it - g.spans.begin()) - 1;
      if (g.obs_start[c] >= g.spans[s].end_ns || g.obs_start[c] < hide_from[s]) continue;
      first_gpu[s] = std::min(first_gpu[s], g.obs_start[n]);
    }
    for (size_t s = 0; s < g.spans.size(); ++s) {
      if (first_gpu[s] != std::numeric_limits<int64_t>::max()) {
        hide_from[s] = std::max(hide_from[s], first_gpu[s]);
      }
    }
  }
  // Each collective belongs to the step that issued it (its launch call's), even when it runs
  // into the next one.
  std::vector<std::pair<int64_t, int32_t>> nodes;  // (issued at, node)
  for (int32_t r : rows) {
    const int32_t n = b.NodeOfRow(r);
    if (n < 0) continue;
    nodes.emplace_back(g.cross[n] >= 0 ? g.obs_start[g.cross[n]] : g.obs_start[n], n);
  }
  std::sort(nodes.begin(), nodes.end());
  size_t s = 0;
  // The time a collective can hide behind grows with the work before it since the step's
  // hiding began or the previous collective ended (tensor parallelism's all-reduces between
  // layers hide behind each layer), and what a collective hides uses it up (DDP's buckets
  // back to back after backward share backward's time).
  int64_t budget = 0, budget_step = -1, covered_to = 0;
  for (const auto& [issued, n] : nodes) {
    const int64_t start = g.obs_start[n];
    while (s + 1 < g.spans.size() && issued >= g.spans[s].end_ns) ++s;
    const bool in_step =
        s < g.spans.size() && issued >= g.spans[s].start_ns && issued < g.spans[s].end_ns;
    if (!in_step) {  // outside the analysed steps: nothing bounds it
      b.SetDur(n, 0);
      continue;
    }
    if (static_cast<int64_t>(s) != budget_step) {
      budget_step = static_cast<int64_t>(s);
      budget = 0;
      covered_to = hide_from[s];
    }
    budget += std::max<int64_t>(0, start - covered_to);
    covered_to = std::max(covered_to, g.ObsEnd(n));
    const int64_t hidden = std::min(g.dur[n], budget);
    budget -= hidden;
    b.SetDur(n, g.dur[n] - hidden);
  }
}

void BucketCollectives(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const Trace& trace = b.trace;
  const CausalGraph& g = b.g;
  // Bucketed collectives: one launch, and each call's fixed latency (estimated as most of the
  // shortest call) paid once.
  int64_t shortest = -1;
  std::vector<int32_t> nodes;
  for (int32_t r : rows) {
    const int32_t gn = b.NodeOfRow(r);
    if (gn < 0) continue;
    nodes.push_back(gn);
    shortest = shortest < 0 ? g.dur[gn] : std::min(shortest, g.dur[gn]);
  }
  // A collective's fixed cost is its latency, not its transfer: most of the shortest call when
  // that is latency-bound, at most kCollectiveLatencyCapNs (four 6 ms all-reduces bucketed into
  // one still move the same bytes).
  const int64_t fixed_ns =
      std::min(static_cast<int64_t>(0.8 * static_cast<double>(shortest)), kCollectiveLatencyCapNs);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == 0) continue;
    b.SetDur(nodes[i], g.dur[nodes[i]] - fixed_ns);
    const int32_t l = b.LaunchOf(nodes[i]);
    // The call's CPU side (c10d::allreduce_ and what it encloses) is paid once per bucket.
    const int32_t top = l >= 0 && g.row[l] >= 0 ? TopOpOf(trace, g.row[l]) : -1;
    if (top >= 0) b.ScaleUnder(top, 0.0);
    b.SetDur(l, 0);
    // Part of the first bucket: it follows the previous collective, not its own launch.
    b.SetCrossGap(nodes[i], std::min<int64_t>(g.cross_gap[nodes[i]], 0));
  }
}

// The rows' work goes, with its waits: the caching allocator keeps the memory (the allocator
// calls go), a debugging aid is turned off (anomaly mode's captures and checks go).
void RemoveRows(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  for (int32_t r : rows) {
    if (b.IsCpuRegion(r)) {
      auto [a, e] = b.NodesUnder(r);
      for (int32_t n = a; n < e; ++n) {
        b.SetDur(n, 0);
        b.NoWait(n);
      }
    } else {
      const int32_t n = b.NodeOfRow(r);
      b.SetDur(n, 0);
      b.NoWait(n);
    }
  }
}

// cudnn.benchmark without a new search each step: each searching convolution costs what a warm
// one does (the finding's warm_convolution_ns) and waits for none of its candidates.
void SkipAlgorithmSearch(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  int64_t warm = kWarmConvolutionNs;
  if (auto it = f.evidence.find("warm_convolution_ns"); it != f.evidence.end()) {
    warm = std::max<int64_t>(0, std::atoll(it->second.text.c_str()));
  }
  for (int32_t r : rows) {
    if (!b.IsCpuRegion(r)) continue;
    auto [a, e] = b.NodesUnder(r);
    for (int32_t n = a; n < e; ++n) b.NoWait(n);
    const int64_t cpu = b.CpuUnder(r);
    if (cpu > 0) b.ScaleUnder(r, std::min(1.0, static_cast<double>(warm) / cpu));
  }
}

// The peers on time: each collective that waited for one runs as its fastest run of the same
// message did (FastestCollectives, trace_queries.h).
void PeersOnTime(Builder& b, const std::vector<int32_t>& rows, const Finding& f) {
  const EventTable& ev = b.trace.events;
  const auto fastest = FastestCollectives(b.trace);
  for (int32_t r : rows) {
    auto it = fastest.find({ev.name[r], ev.bytes[r]});
    const int32_t n = b.NodeOfRow(r);
    if (it == fastest.end() || n < 0) continue;
    b.SetDur(n, std::min(b.g.dur[n], it->second));
  }
}

}  // namespace

WhatIf FixWhatIf(const Trace& trace, const CausalGraph& g, const Finding& f, FixModel model,
                 size_t dense_min_changes) {
  Builder b{trace, g, dense_min_changes, {}, {}};
  const EventTable& ev = trace.events;
  std::vector<int32_t> rows;
  for (int32_t r : f.rows) {
    if (r >= 0 && static_cast<size_t>(r) < ev.size()) rows.push_back(r);
  }
  switch (model) {
    case FixModel::kDataLoaderWorkers:
      WorkersLoadBatches(b, rows, f);
      break;
    case FixModel::kDeferHostSync:
      DeferHostSync(b, rows, f);
      break;
    case FixModel::kPinnedNonBlocking:
      PinCopies(b, rows, f);
      break;
    case FixModel::kBatchCopies:
    case FixModel::kRemoveConversions:
    case FixModel::kKeepOnDevice:
      RemoveOrBatchCopies(b, rows, f, model);
      break;
    case FixModel::kSetToNone:
      SetGradsToNone(b, rows, f);
      break;
    case FixModel::kForeachOptimizer:
      ForeachOptimizer(b, rows, f);
      break;
    case FixModel::kGraphBursts:
      GraphBursts(b, rows, f);
      break;
    case FixModel::kGraphRegion:
      GraphRegion(b, rows, f);
      break;
    case FixModel::kWarmStart:
      WarmStart(b, rows, f);
      break;
    case FixModel::kIdleWorkMovedOut:
      MoveIdleWorkOut(b, rows, f);
      break;
    case FixModel::kTensorCores:
      UseTensorCores(b, rows, f);
      break;
    case FixModel::kOverlapCommunication:
      OverlapCommunication(b, rows, f);
      break;
    case FixModel::kBucketCollectives:
      BucketCollectives(b, rows, f);
      break;
    case FixModel::kCachingAllocator:
    case FixModel::kRemoveDebugWork:
      RemoveRows(b, rows, f);
      break;
    case FixModel::kNoAlgorithmSearch:
      SkipAlgorithmSearch(b, rows, f);
      break;
    case FixModel::kPeersOnTime:
      PeersOnTime(b, rows, f);
      break;
    case FixModel::kNone:  // nothing to replay
      break;
  }
  return std::move(b.w);  // a member: not moved by itself (10M changes are 160 MB)
}

ProfilerCostTaken TakeOutProfilerCost(const Trace& trace, CausalGraph* graph,
                                      const ProfilerCost& cost) {
  ProfilerCostTaken out;
  const CausalGraph& g = *graph;
  const bool gpu = std::any_of(g.lanes.begin(), g.lanes.end(), [](const auto& l) { return l.gpu; });
  if (!gpu || g.size() == 0 || (cost.per_op_ns <= 0 && cost.per_frame_ns <= 0)) return out;
  const EventTable& ev = trace.events;
  // CUPTI's own work (buffer requests and flushes: IsProfilerOverhead) leaves the CPU
  // slices it overlaps on the thread whose CPU work covers most of it (the event names none).
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.dur[i] <= 0 || !IsProfilerOverhead(trace, i)) continue;
    const int64_t a = ev.ts[i], b = ev.end(i);
    auto for_each_overlap = [&](const CausalGraph::Lane& l, auto&& visit) {
      for (int32_t n = g.FirstEndingAfter(l.first_node, l.end_node, a);
           n < l.end_node && g.obs_start[n] < b; ++n) {
        if (g.role[n] == NodeRole::kCpuWork) {
          visit(n, std::min(b, g.ObsEnd(n)) - std::max(a, g.obs_start[n]));
        }
      }
    };
    const CausalGraph::Lane* lane = nullptr;
    int64_t most = 0;
    for (const auto& l : g.lanes) {
      if (l.gpu) continue;
      int64_t covered = 0;
      for_each_overlap(l, [&](int32_t, int64_t o) { covered += o; });
      if (covered > most) {
        most = covered;
        lane = &l;
      }
    }
    if (lane == nullptr || 2 * most < ev.dur[i]) continue;
    for_each_overlap(*lane, [&](int32_t n, int64_t o) {
      const int64_t cut = std::min(o, static_cast<int64_t>(g.dur[n] * (1.0 - kProfiledMinShare)));
      if (cut <= 0) return;
      graph->dur.Set(n, graph->dur[n] - cut);
      out.cut_ns += cut;
    });
  }
  // Rows are in start order, so each lane's containing node only moves forward.
  std::vector<int32_t> cursor(g.lanes.size());
  for (size_t l = 0; l < g.lanes.size(); ++l) cursor[l] = g.lanes[l].first_node;
  std::vector<uint32_t> count;  // per node, ns of profiler work, allocated on the first op
  for (size_t i = 0; i < ev.size(); ++i) {
    const bool op = ev.kind[i] == EventKind::kCpuOp;
    if (!op && ev.kind[i] != EventKind::kPythonFunction) continue;
    const int32_t lane = ev.track[i] < g.lane_of_track.size() ? g.lane_of_track[ev.track[i]] : -1;
    if (lane < 0 || g.lanes[lane].gpu) continue;
    const auto& l = g.lanes[lane];
    int32_t& n = cursor[lane];
    while (n + 1 < l.end_node && g.obs_start[n + 1] <= ev.ts[i]) ++n;
    if (n >= l.end_node || g.obs_start[n] > ev.ts[i] || ev.ts[i] >= g.ObsEnd(n)) continue;
    if (g.role[n] != NodeRole::kCpuWork) continue;
    if (count.empty()) count.assign(g.size(), 0);
    count[n] +=
        static_cast<uint32_t>(std::max<int64_t>(0, op ? cost.per_op_ns : cost.per_frame_ns));
    out.ops += op;
  }
  if (count.empty()) return out;
  // What a slice cannot give up (it keeps kProfiledMinShare) carries on to the lane's next CPU
  // slices: the profiler's work around an op falls between events as much as inside them.
  for (const auto& l : g.lanes) {
    if (l.gpu) continue;
    int64_t carry = 0;
    for (int32_t n = l.first_node; n < l.end_node; ++n) {
      carry += count[n];
      if (carry == 0 || g.role[n] != NodeRole::kCpuWork) continue;
      const int64_t cut =
          std::min(carry, static_cast<int64_t>(g.dur[n] * (1.0 - kProfiledMinShare)));
      if (cut <= 0) continue;
      graph->dur.Set(n, graph->dur[n] - cut);
      out.cut_ns += cut;
      carry = std::min(carry - cut, kProfiledCarryMaxNs);
    }
  }
  return out;
}

namespace {

// Of the nodes |for_each_node| visits, how many |owner| gives to an entry, and the entry that
// owns the most of them (the first such entry; -1 for none).
template <typename ForEachNode>
std::pair<int32_t, size_t> OwnedOf(const std::vector<int32_t>& owner, ForEachNode&& for_each_node) {
  std::map<int32_t, size_t> shared;
  for_each_node([&](int32_t n) {
    if (owner[n] >= 0) ++shared[owner[n]];
  });
  size_t total = 0, most = 0;
  int32_t cause = -1;
  for (const auto& [i, n] : shared) {
    total += n;
    if (n > most) {
      most = n;
      cause = i;
    }
  }
  return std::make_pair(cause, total);
}

// CostFindings' steps over shared state (in the order CostFindings runs them): the baseline without
// the profiler's cost, each fix alone, the symptoms, the fixes chained largest first, the claims,
// and the findings' numbers.
struct FixCoster {
  FixCoster(const Trace& trace, CausalGraph* graph, Replay* base, const TimeBreakdown& time,
            std::vector<Finding>* findings, const std::vector<FixPlan>& plans)
      : trace(trace),
        g(*graph),
        graph(graph),
        work(*base),
        time(time),
        findings(findings),
        plans(plans) {}

  // Every saving is the run's without the profiler: the graph's CPU slices lose the profiler's
  // own cost per recorded op, the replay of that is the baseline, and each fix is replayed on it.
  void Baseline(const ProfilerCost& profiler_cost) {
    out.traced_run_ns = work.total_step_ns();
    const ProfilerCostTaken taken = TakeOutProfilerCost(trace, graph, profiler_cost);
    out.profiled_ops = taken.ops;
    if (taken.cut_ns > 0) RunReplay(g, nullptr, &work);
    out.run_ns = work.total_step_ns();
    out.profiler_overhead_ns = std::max<int64_t>(0, out.traced_run_ns - out.run_ns);
    out.steps = work.step_start.size();
    base_start = work.step_start;
    base_end = work.step_end;
    n_steps = static_cast<double>(std::max<size_t>(1, out.steps));
    for (size_t k = 0; k < out.steps && k < time.step_numbers.size(); ++k) {
      step_index[time.step_numbers[k]] = k;
    }
    threads = g.size() >= kParallelNodes ? std::min<size_t>(2, HardwareThreads()) : 1;
    for (size_t i = 0; i < findings->size(); ++i) {
      entries.push_back({i, {}, 0, 0, 0, {}, false, 0, {}, {}});
      entries.back().symptom = IdleTime(entries.back());
      entries.back().steps.assign(out.steps, 0);
    }
  }

  void ReplayEachAlone() {
    // 1. Each fix alone, against the unchanged run.
    ReplayEach(entries.size(), [&](size_t i, Replay* into) {
      Entry& e = entries[i];
      e.what_if = FixWhatIf(trace, g, (*findings)[e.finding], plans[e.finding].model);
      if (e.what_if.empty()) return;
      RunReplay(g, &e.what_if, into);
      e.alone_total = into->total_step_ns();
      e.alone_start = into->step_start;
      e.alone_end = into->step_end;
      e.alone_ns = std::max<int64_t>(0, out.run_ns - e.alone_total);
      if (!e.symptom) e.steps = StepDeltas(base_start, base_end, into->step_start, into->step_end);
    });
  }

  void MarkLaunchBoundSymptoms() {
    // A launch-bound finding whose fix changes mostly the nodes another finding's fix changes
    // (zero_grad's or the optimizer's per-parameter kernels) is that cause's symptom: it claims
    // only what it adds once that cause is fixed, instead of the same time twice.
    const bool any_launch_bound = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) {
      return LaunchBound(e) && e.what_if.DurCount() > 0;
    });
    const bool any_owner = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) {
      return !e.symptom && !LaunchBound(e) && e.what_if.DurCount() > 0;
    });
    if (any_launch_bound && any_owner) {  // (a node-sized index only when it can name a cause)
      std::vector<int32_t> owner(g.size(), -1);  // the entry whose fix changes the node
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].symptom || LaunchBound(entries[i])) continue;
        entries[i].what_if.ForEachDur([&](int32_t n, int64_t) {
          if (owner[n] < 0) owner[n] = static_cast<int32_t>(i);
        });
      }
      for (Entry& e : entries) {
        Finding& f = (*findings)[e.finding];
        if (!LaunchBound(e) || e.what_if.DurCount() == 0) continue;
        const auto [cause, total] = OwnedOf(owner, [&](auto&& visit) {
          e.what_if.ForEachDur([&](int32_t n, int64_t) { visit(n); });
        });
        if (2 * total < e.what_if.DurCount()) continue;
        e.symptom = true;
        f.evidence["symptom_of"] = {false, 0, (*findings)[entries[cause].finding].code};
      }
    }
  }

  void MarkRemovedWaitSymptoms() {
    // A host sync whose waits another fix mostly removes is that fix's symptom: blocking
    // pageable copies that TTA003 pins and makes non-blocking, anomaly mode's gradient checks
    // that TTA021 turns off. The sync goes with that fix.
    const bool any_pinned = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) {
      return PlanOf(e).removes_waits && !e.what_if.no_wait.empty();
    });
    if (any_pinned) {
      std::vector<int32_t> pinned_by(g.size(), -1);  // a TTA003 entry that stops the node's wait
      for (size_t i = 0; i < entries.size(); ++i) {
        if (!PlanOf(entries[i]).removes_waits) continue;
        for (int32_t n : entries[i].what_if.no_wait) {
          // A copy to the host that a stream sync follows (the host reads the data) only moves
          // its wait to that sync.
          const int32_t r = g.row[n];
          const int32_t copy = r >= 0 ? trace.events.link[r] : -1;
          if (copy >= 0 && IsD2H(trace.Name(copy)) && SyncAfterCall(trace, g, n) >= 0) continue;
          if (pinned_by[n] < 0) pinned_by[n] = static_cast<int32_t>(i);
        }
      }
      for (Entry& e : entries) {
        Finding& f = (*findings)[e.finding];
        if (!PlanOf(e).symptom_of_removed_waits || e.symptom || e.what_if.no_wait.empty()) continue;
        // Weighed by how long each call waited in the trace: a sync after a tiny pinned upload
        // waits microseconds, the read-back beside it the whole queue.
        std::map<int32_t, int64_t> waited_for;  // pinning entry -> time its waits took
        int64_t waited = 0;
        for (int32_t n : e.what_if.no_wait) {
          waited += g.dur[n];
          if (pinned_by[n] >= 0) waited_for[pinned_by[n]] += g.dur[n];
        }
        int32_t pinning = -1;
        int64_t pinned = 0, most = 0;
        for (const auto& [i, d] : waited_for) {
          pinned += d;
          if (pinning < 0 || d > most) {
            most = d;
            pinning = i;
          }
        }
        if (pinning < 0 || 2 * pinned < waited) continue;
        e.symptom = true;
        f.evidence["symptom_of"] = {false, 0, (*findings)[entries[pinning].finding].code};
      }
    }
  }

  void ReplayChain() {
    // 2. The fixes one after another, largest first and the symptoms (TTA008, a launch-bound
    // region another cause explains) last: what they save together, and what each adds to the
    // ones before it.
    std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
      if (Rank(a) != Rank(b)) return Rank(a) < Rank(b);
      return a.alone_ns > b.alone_ns;
    });
    // Each prefix of the chain is replayed on its own, then the chain is walked in order.
    std::vector<size_t> chain;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].alone_ns > 0) chain.push_back(i);
    }
    std::vector<Prefix> prefixes(chain.size());
    // The first prefix is the first fix alone, replayed already; the longest prefixes go first.
    if (!chain.empty()) {
      const Entry& e = entries[chain[0]];
      prefixes[0] = {e.alone_total, e.alone_start, e.alone_end};
    }
    ReplayEach(chain.empty() ? 0 : chain.size() - 1, [&](size_t i, Replay* into) {
      const size_t k = chain.size() - 1 - i;
      std::vector<const WhatIf*> parts;
      for (size_t j = 0; j <= k; ++j) parts.push_back(&entries[chain[j]].what_if);
      RunReplay(g, parts, into);
      prefixes[k] = {into->total_step_ns(), into->step_start, into->step_end};
    });
    std::vector<int64_t> prev_start = base_start, prev_end = base_end;
    int64_t prev_total = out.run_ns;
    for (size_t k = 0; k < chain.size(); ++k) {
      Entry& e = entries[chain[k]];
      const Prefix& p = prefixes[k];
      e.marginal_ns = std::max<int64_t>(0, prev_total - p.total);
      if (e.symptom) e.steps = StepDeltas(prev_start, prev_end, p.step_start, p.step_end);
      prev_total = std::min(prev_total, p.total);
      if (Rank(e) < 2) out.safe_saving_ns = out.run_ns - prev_total;  // a real fix, not TTA008
      prev_start = p.step_start;
      prev_end = p.step_end;
    }
    out.safe_saving_ns = std::max<int64_t>(0, out.safe_saving_ns);
    joint_ns = out.run_ns - prev_total;
    out.joint_saving_ns = std::max(out.safe_saving_ns, joint_ns);
  }

  void Claim() {
    // 3. A fix's claim is what it saves alone; the symptom claims only the idle time no fix
    // explains. Claims that together exceed the run (fixes recovering the same time) are scaled
    // down to what all of them save together.
    // TTA008's CPU work that no fix changes (host work that launches nothing, a metrics pass) is
    // idle time no cause explains whatever else is fixed: it claims what removing it saves alone.
    // Where the fixes change most of its nodes (dispatch that CUDA graphs remove), it claims only
    // what is left after them.
    std::vector<uint8_t> fixed_node;
    for (const Entry& e : entries) {
      if (IdleTime(e) || e.what_if.DurCount() == 0) continue;
      if (fixed_node.empty()) fixed_node.assign(g.size(), 0);
      e.what_if.ForEachDur([&](int32_t n, int64_t) { fixed_node[n] = 1; });
    }
    auto independent_idle = [&](const Entry& e) {
      if (!IdleTime(e) || e.what_if.DurCount() == 0) return false;
      size_t shared = 0;
      e.what_if.ForEachDur(
          [&](int32_t n, int64_t) { shared += !fixed_node.empty() && fixed_node[n]; });
      return 2 * shared < e.what_if.DurCount();
    };
    // A fix that changes mostly the nodes a larger fix already changes is another way to fix the
    // same work (pinning a copy that keeping the tensor on the device removes): the user picks
    // one, so its claim does not count towards the claims that must fit in the run.
    std::vector<uint8_t> changed_by_larger;
    int64_t claimed = 0;
    for (Entry& e : entries) {  // chain order: rank, then what each saves alone
      // (never more than it saves alone: the cause's fix leaves it less to do, not more)
      e.claim_ns =
          e.symptom && !independent_idle(e) ? std::min(e.marginal_ns, e.alone_ns) : e.alone_ns;
      bool alternative = false;
      if (!IdleTime(e) && e.what_if.DurCount() > 0) {
        if (changed_by_larger.empty()) changed_by_larger.assign(g.size(), 0);
        size_t shared = 0;
        e.what_if.ForEachDur([&](int32_t n, int64_t) { shared += changed_by_larger[n]; });
        alternative = 2 * shared >= e.what_if.DurCount();
        e.what_if.ForEachDur([&](int32_t n, int64_t) { changed_by_larger[n] = 1; });
      }
      if (!alternative) claimed += e.claim_ns;
    }
    scale = claimed > out.run_ns && claimed > 0
                ? static_cast<double>(joint_ns) / static_cast<double>(claimed)
                : 1.0;
    // One story: what the findings save together is never less than what any one of them claims
    // (replays of fixes that interact need not add up exactly).
    for (const Entry& e : entries) {
      const int64_t claim = static_cast<int64_t>(e.claim_ns * scale);
      if (Rank(e) < 2) out.safe_saving_ns = std::max(out.safe_saving_ns, claim);
      out.joint_saving_ns = std::max({out.joint_saving_ns, out.safe_saving_ns, claim});
    }
  }

  FixCosting WriteBack() {
    for (Entry& e : entries) {
      Finding& f = (*findings)[e.finding];
      const double claim = e.claim_ns * scale;
      f.evidence["detected_us_per_step"] = {true, f.time_lost_us_per_step, ""};
      f.evidence["saving_alone_us_per_step"] = {true, e.alone_ns / 1000.0 / n_steps, ""};
      f.evidence["saving_after_larger_fixes_us_per_step"] = {true, e.marginal_ns / 1000.0 / n_steps,
                                                             ""};
      f.time_lost_us_per_step = claim / 1000.0 / n_steps;
      f.share_of_step = out.run_ns > 0 ? claim / out.run_ns : 0.0;
      // Per step, the claim shared out as the replay shortened each step. A fix that lets the
      // CPU run ahead (a sync removed) shortens every step's CPU side while the last step holds
      // the GPU's tail: the steps' own shortening then adds up to more than the run saves, so
      // the shares are scaled to the claim (they add up to it wherever they are positive).
      double shortened_ns = 0;
      for (auto& [step, lost] : f.per_step) {
        auto it = step_index.find(step);
        lost = it != step_index.end()
                   ? static_cast<double>(std::max<int64_t>(0, e.steps[it->second]))
                   : 0.0;
        shortened_ns += lost;
      }
      const double to_claim = shortened_ns > 0 ? claim / shortened_ns : 0.0;
      for (auto& [step, lost] : f.per_step) lost = lost * to_claim / 1000.0;
    }
    return out;
  }

  struct Entry {
    size_t finding;
    WhatIf what_if;
    int64_t alone_ns = 0, marginal_ns = 0, claim_ns = 0;
    std::vector<int64_t> steps;  // per-step saving of the claim
    bool symptom = false;
    // Its replay alone: the chain's first prefix is this replay again.
    int64_t alone_total = 0;
    std::vector<int64_t> alone_start, alone_end;
  };
  struct Prefix {
    int64_t total = 0;
    std::vector<int64_t> step_start, step_end;
  };
  static constexpr size_t kParallelNodes = 200000;  // a second thread pays off from here

  // What each finding is to the costing (its code's plan, from the rule registry).
  const FixPlan& PlanOf(const Entry& e) const { return plans[e.finding]; }
  bool IdleTime(const Entry& e) const { return PlanOf(e).role == CostRole::kIdleTime; }
  bool LaunchBound(const Entry& e) const { return PlanOf(e).role == CostRole::kLaunchBound; }
  // Causes, then symptoms of a cause, then idle time (TTA008).
  int Rank(const Entry& e) const { return !e.symptom ? 0 : IdleTime(e) ? 2 : 1; }
  // Per step, how much shorter |after| is than the steps |before_start| / |before_end|.
  std::vector<int64_t> StepDeltas(const std::vector<int64_t>& before_start,
                                  const std::vector<int64_t>& before_end,
                                  const std::vector<int64_t>& after_start,
                                  const std::vector<int64_t>& after_end) const {
    std::vector<int64_t> d(out.steps);
    for (size_t k = 0; k < out.steps; ++k) {
      d[k] = (before_end[k] - before_start[k]) - (after_end[k] - after_start[k]);
    }
    return d;
  }
  // The replays run on up to two threads (each replay streams the whole graph: more threads
  // would mostly share the memory bus, and each keeps its own copy of the replay's columns),
  // each taking the next replay when it is done. The base's memory serves the first thread.
  template <typename ReplayOne>
  void ReplayEach(size_t count, ReplayOne&& replay_one) {
    std::atomic<size_t> next{0};
    ParallelFor(std::min(threads, count), threads, [&](size_t thread) {
      Replay* into = thread == 0 ? &work : &second;
      for (size_t i; (i = next.fetch_add(1)) < count;) replay_one(i, into);
    });
  }

  const Trace& trace;
  const CausalGraph& g;
  CausalGraph* graph;
  Replay& work;   // the baseline's replay, then the first thread's memory
  Replay second;  // the second thread's memory, kept for both rounds of replays
  const TimeBreakdown& time;
  std::vector<Finding>* findings;
  const std::vector<FixPlan>& plans;
  FixCosting out;
  std::vector<int64_t> base_start, base_end;  // the baseline's steps
  double n_steps = 1;
  std::map<int64_t, size_t> step_index;  // step number -> index
  size_t threads = 1;
  std::vector<Entry> entries;
  int64_t joint_ns = 0;  // what the whole chain saves
  double scale = 1.0;    // claims scaled to the joint saving
};

}  // namespace

FixCosting CostFindings(const Trace& trace, CausalGraph* graph, Replay base,
                        const TimeBreakdown& time, std::vector<Finding>* findings,
                        const std::vector<FixPlan>& plans, const ProfilerCost& profiler_cost) {
  assert(plans.size() == findings->size());
  FixCoster coster(trace, graph, &base, time, findings, plans);
  coster.Baseline(profiler_cost);
  // 1. Each fix alone, against the unchanged run.
  coster.ReplayEachAlone();
  // Symptoms claim only what they add once their cause is fixed.
  coster.MarkLaunchBoundSymptoms();
  coster.MarkRemovedWaitSymptoms();
  // 2. The fixes one after another, largest first.
  coster.ReplayChain();
  // 3. Each finding's claim, scaled so they never exceed the run.
  coster.Claim();
  return coster.WriteBack();
}

}  // namespace ttap

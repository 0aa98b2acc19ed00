// Questions about a trace's rows that the rules, the causal model and the what-ifs all ask: the
// user-level op around a row, the host statement that reads a synchronised value, whether a
// region is the input pipeline. Pure functions of an immutable Trace; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/model/trace.h"

namespace ttap {

// The outermost cpu_op / user_annotation ancestor of |row| (or |row| itself) below the step
// annotation: the "user-level" op (e.g. aten::item, Optimizer.step#SGD.step), or -1. Shared by
// RuleContext::TopOp, the causal attribution and the what-ifs.
int32_t TopOpOf(const Trace& trace, int32_t row);
// The statement that reads a synchronised value on the host: the outermost CPU region (op,
// annotation or Python frame) around |sync_row| below the step annotation that sends nothing to
// the device (it launches device-to-host copies at most), e.g. `pbar.set_postfix(loss=
// loss.item())`; -1 when even the innermost one launches other work. TTA002's detector and its
// fix (what_if.cpp) share it.
int32_t HostStatementOf(const Trace& trace, int32_t sync_row);
// A DataLoader / DataPipe __next__: the input pipeline.
bool IsDataLoaderName(std::string_view name);
// Whether |row| is the profiler's own work that CUPTI records (category "overhead", pid -1):
// requesting and flushing its activity buffers, its instrumentation. It exists only while
// profiling (a 1.79 ms "Activity Buffer Request" inside a decode's first aten::gather). Not
// "Lazy Function Loading" or "Runtime Triggered Module Loading": CUDA's lazy loading, which
// runs without the profiler too. The first-call finder, TTA008 and the profiler-cost model read it.
bool IsProfilerOverhead(const Trace& trace, size_t row);
// What a python_function event (|event_name|) calls: "<built-in function collect>" -> "collect",
// "<built-in method write of _io.TextIOWrapper object at 0x...>" -> "write", "train.py(42):
// log_metrics" -> "log_metrics"; "" for other shapes ("nn.Module: Linear_0") and for names
// like "<lambda>". TTA008 names the Python work of an idle gap by it; the source mapping
// narrows a def to the call of it (mapping/python_frames.h, CalleeOfFrame).
std::string_view PythonCallOf(std::string_view event_name);
// What each collective kernel costs when no rank keeps it waiting: per (kernel name, message
// bytes), the fastest of at least kPeerWaitMinRuns runs, for the collectives whose message size
// the trace records ("In msg nelems"). A run far slower than the fastest one of the same size
// waited for a peer rank. TTA022's detector and its what-if share it.
constexpr size_t kPeerWaitMinRuns = 3;
std::map<std::pair<StringId, int64_t>, int64_t> FastestCollectives(const Trace& trace);
// The part of a run of |dur| ns that waited for a peer, given the fastest run: 0 unless the run
// took kPeerWaitFactor times the fastest and kPeerWaitMinNs more.
constexpr int64_t kPeerWaitFactor = 4;
constexpr int64_t kPeerWaitMinNs = 100000;
inline int64_t PeerWaitNs(int64_t dur, int64_t fastest) {
  return dur >= kPeerWaitFactor * fastest && dur - fastest >= kPeerWaitMinNs ? dur - fastest : 0;
}

// A call of an op whose own time (beside what is recorded under it) is at least kHostStallMinNs
// and kHostStallRatio x the longest other call of its name (at least
// kHostStallMinOthers of them), not the name's first call (TTA015's), nor an op that moves data
// (copies, .to(), .item(): as long as their tensors are large or the device is busy): the host
// stalled there (paging, CPU throttling, another process), not the code. A CPU ResNet-18's stem
// convolution took 7,842 ms once where its 199 other calls took at most 192 ms. The run's figures
// include the stall: `ttap scan` and the editor's summary say so. Rows in start order.
constexpr int64_t kHostStallMinNs = 100000000;
constexpr int64_t kHostStallRatio = 10;
constexpr size_t kHostStallMinOthers = 4;
struct HostStall {
  int32_t row = -1;
  size_t others = 0;             // the name's other calls
  int64_t longest_other_ns = 0;  // the longest of them
};
std::vector<HostStall> OneOffHostStalls(const Trace& trace);

}  // namespace ttap

// BuildCausalGraph, RunReplay, AttributeSteps; see causal_graph.h and docs/causal_model.md.
#include "analysis/causal/causal_graph.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "analysis/base/median.h"
#include "analysis/base/string_util.h"
#include "analysis/model/host_copies.h"
#include "analysis/model/runtime_calls.h"
#include "analysis/model/trace_queries.h"
#include "analysis/model/trace_stats.h"

namespace ttap {

namespace {

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
// Latencies and durations used as multiples are capped here (an hour) against hostile input.
constexpr int64_t kLatencyCapNs = int64_t{3600} * 1000000000;
// The usual launch latency a run of fewer than three samples is taken to have at most.
constexpr int64_t kFewLatenciesCapNs = 100000;
// A stream gap longer than this is not the GPU's own spacing between queued work.
constexpr int64_t kLongStreamGapNs = 50000;
// An async copy call without its copy in the trace that lasts this long blocked on the copy.
constexpr int64_t kBlockingCopyCallNs = 50000;
// A secondary thread's pause longer than this is a wait for the main thread (see the lanes).
constexpr int64_t kSecondaryResumeGapNs = 50000;
// An activity that starts this long after its stream's previous activity and its launch call
// ended, this close after another stream's activity ended, waited for that activity.
constexpr int64_t kInferredWaitMinNs = 20000;
constexpr int64_t kInferredWaitTailNs = 10000;
// A synchronising call returns this soon after the work it waited for ends (the driver's
// wake-up and return).
constexpr int64_t kSyncReturnTailNs = 50000;
// What a synchronisation call costs when the awaited work has already finished.
constexpr int64_t kSyncCostNs = 5000;
// GPU activity without a launch call follows the main thread after its stream sat idle this
// long (a host-side wait: a one-time call, a stall); after a shorter gap it keeps its gap.
constexpr int64_t kLaunchlessFollowGapNs = 1000000;
// A synchronize after the last recorded op of a run without steps costs about this much of its
// own once the recorded GPU work is done (a final torch.cuda.synchronize(), the profiler's at
// exit); a longer wait is for GPU work the trace lacks.
constexpr int64_t kTrailingSyncOwnCostNs = 200000;

Cause GpuCause(EventKind k, std::string_view n) {
  if (k == EventKind::kMemcpy) return Cause::kMemcpy;
  if (k == EventKind::kMemset) return Cause::kMemset;
  if (IsCollectiveKernel(n)) return Cause::kCommunication;
  // cuDNN's and MIOpen's memory-bound kernels (batch norm, layout transposes, pooling,
  // softmax) carry the library's name but no matrix math.
  if (Contains(n, "bn_fw") || Contains(n, "bn_bw") || Contains(n, "BatchNorm") ||
      Contains(n, "batch_norm") || Contains(n, "batchnorm") || Contains(n, "nchwToNhwc") ||
      Contains(n, "nhwcToNchw") || Contains(n, "pooling") || Contains(n, "Pooling") ||
      Contains(n, "softmax") || Contains(n, "Softmax") || Contains(n, "convert")) {
    return Cause::kGpuKernel;
  }
  if (Contains(n, "gemm") || Contains(n, "GEMM") || Contains(n, "Gemm") || Contains(n, "matmul") ||
      Contains(n, "conv") || Contains(n, "Conv") || Contains(n, "cutlass") || Contains(n, "xmma") ||
      Contains(n, "cudnn") || Contains(n, "fprop") || Contains(n, "dgrad") ||
      Contains(n, "wgrad") || StartsWith(n, "Cijk_") || Contains(n, "_mma") ||
      Contains(n, "sm90_") || Contains(n, "sm80_") || Contains(n, "nvjet") ||
      Contains(n, "marlin") || Contains(n, "Marlin") || Contains(n, "gemv") ||
      Contains(n, "Gemv") || Contains(n, "wgmma")) {
    return Cause::kGpuMatmul;
  }
  return Cause::kGpuKernel;
}

bool IsCpuKind(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kPythonFunction ||
         k == EventKind::kUserAnnotation || k == EventKind::kRuntime || k == EventKind::kDriver;
}

// Index of the last span of |spans| (in start order) starting at or before |t|, -1.
int32_t SpanStartingBy(const std::vector<StepSpan>& spans, int64_t t) {
  auto it = std::upper_bound(spans.begin(), spans.end(), t,
                             [](int64_t x, const StepSpan& s) { return x < s.start_ns; });
  return static_cast<int32_t>(it - spans.begin()) - 1;
}

// The number of the step of |spans| that holds time |t|, -1 when none does (before the first,
// in a gap between two, or a span without a number).
int64_t StepNumberAt(const std::vector<StepSpan>& spans, int64_t t) {
  const int32_t k = SpanStartingBy(spans, t);
  return k >= 0 && t < spans[k].end_ns ? spans[k].number : -1;
}

// Index of the last node in |nodes| (sorted by observed start) starting at or before |t|.
int32_t NodeAt(const CausalGraph& g, const std::vector<int32_t>& nodes, int64_t t) {
  auto it = std::upper_bound(nodes.begin(), nodes.end(), t,
                             [&](int64_t x, int32_t n) { return x < g.obs_start[n]; });
  if (it == nodes.begin()) return -1;
  return *(it - 1);
}

// The last node of |lane| that ends at or before |t| (a lane's nodes end in order), -1.
int32_t LastEndingBy(const CausalGraph& g, const CausalGraph::Lane& lane, int64_t t) {
  const int32_t it = g.FirstEndingAfter(lane.first_node, lane.end_node, t);
  return it == lane.first_node ? -1 : it - 1;
}

}  // namespace

bool LaunchBlocksOnKernel(const EventTable& ev, uint32_t r) {
  const int32_t k = ev.link[r];
  if (k < 0 || ev.kind[k] != EventKind::kKernel) return false;
  return ev.ts[k] >= ev.ts[r] && ev.end(k) <= ev.end(r) &&
         ev.end(r) - ev.end(k) <= kBlockingReturnNs;
}

void BlockingLaunchTally::Add(const EventTable& ev, uint32_t r) {
  if (!IsLaunchKind(ev.kind[r])) return;
  const int32_t k = ev.link[r];
  if (k < 0 || ev.kind[k] != EventKind::kKernel || ev.dur[k] < kBlockingKernelMinNs) return;
  ++long_kernels;
  blocked += LaunchBlocksOnKernel(ev, r);
}

bool BlockingLaunchTally::RunBlocks() const {
  return blocked >= kBlockingLaunchMin && blocked >= kBlockingLaunchShare * long_kernels;
}

// A Python frame that blocks without working: a thread waiting on a condition, a lock, a
// sleep or a selector (tqdm's monitor thread sleeps in threading.py's wait for the whole run).
bool IsIdleWaitName(std::string_view n) {
  const bool stdlib_wait =
      (Contains(n, "threading.py(") || Contains(n, "queue.py(") || Contains(n, "selectors.py(")) &&
      (EndsWith(n, ": wait") || EndsWith(n, ": _wait_for_tstate_lock") || EndsWith(n, ": select") ||
       EndsWith(n, ": get"));
  // A serving engine's I/O threads block in ZeroMQ or a pipe (vLLM's input and output socket
  // threads): the blocking call is C code under the Python frame, which the tracer leaves out.
  const bool ipc_wait =
      (Contains(n, "zmq/sugar/poll.py(") || Contains(n, "zmq/sugar/socket.py(") ||
       Contains(n, "multiprocessing/connection.py(")) &&
      (EndsWith(n, ": poll") || EndsWith(n, ": _poll") || EndsWith(n, ": wait") ||
       EndsWith(n, ": recv") || EndsWith(n, ": recv_multipart") || EndsWith(n, ": _recv") ||
       EndsWith(n, ": recv_bytes") || EndsWith(n, ": _recv_bytes"));
  return stdlib_wait || ipc_wait || n == "<built-in function sleep>" ||
         StartsWith(n, "<built-in method acquire of") ||
         StartsWith(n, "<built-in method poll of") || StartsWith(n, "<built-in method select of");
}

const char* CauseName(Cause c) {
  static const char* kNames[] = {"gpu-matmul",   "gpu-kernel", "communication", "memcpy",
                                 "memset",       "gpu-gap",    "launch",        "host-sync",
                                 "data-loading", "allocator",  "cpu-work",      "cold-start",
                                 "untraced",     "gpu-wait"};
  return kNames[static_cast<int>(c)];
}

const char* CauseDescription(Cause c) {
  static const char* kText[] = {"GPU compute (matmul/conv)",
                                "GPU compute (other kernels)",
                                "exposed communication",
                                "memcpy",
                                "memset",
                                "GPU gaps between queued work",
                                "CPU launch overhead",
                                "host synchronisation",
                                "data loading",
                                "allocator calls",
                                "CPU work",
                                "one-time start-up (first calls, lazy loading)",
                                "untraced time",
                                "GPU waits the trace does not explain"};
  return kText[static_cast<int>(c)];
}

void CausalGraph::Reserve(size_t n) {
  obs_start.reserve(n);
  obs_len.reserve(n);
  dur.reserve(n);
  lane_gap.reserve(n);
  cross_gap.reserve(n);
  for (auto* v : {&row, &cross}) v->reserve(n);
  role.reserve(n);
  cause.reserve(n);
  has_lane_prev.reserve(n);
  cross_from_end.reserve(n);
}

int32_t CausalGraph::AddNode(int64_t s, int64_t e, int32_t r, NodeRole ro, Cause c) {
  obs_start.push_back(s);
  obs_len.push_back(e - s);
  dur.push_back(e - s);
  row.push_back(r);
  role.push_back(ro);
  cause.push_back(c);
  has_lane_prev.push_back(false);
  lane_gap.push_back(0);
  cross.push_back(-1);
  cross_gap.push_back(0);
  cross_from_end.push_back(0);
  return static_cast<int32_t>(obs_start.size() - 1);
}

uint32_t CausalGraph::LaneOf(int32_t v) const {
  assert(v >= 0 && static_cast<size_t>(v) < size() && !lanes.empty());
  // The last lane starting at or before v (an empty lane shares the next one's first node).
  auto it = std::upper_bound(lanes.begin(), lanes.end(), v,
                             [](int32_t x, const Lane& l) { return x < l.first_node; });
  return static_cast<uint32_t>(it - lanes.begin() - 1);
}

namespace {

// Whether row |i| opens a loop's level: nothing above it but Python frames (with_stack=True puts
// the loop's own function frames above its record_function blocks).
bool UnderPythonFramesOnly(const EventTable& ev, size_t i) {
  int guard = 0;
  for (int32_t p = ev.parent[i]; p >= 0 && guard < 256; p = ev.parent[p], ++guard) {
    if (ev.kind[p] != EventKind::kPythonFunction) return false;
  }
  return true;
}

// An annotation's name as a loop marker: its digit runs read as one, so that vLLM's
// "execute_new_2_cached_0" and "execute_new_0_cached_4", or "step 9" and "step 10", mark the same
// loop.
std::string LoopMarkerName(std::string_view n) {
  std::string out;
  out.reserve(n.size());
  for (size_t c = 0; c < n.size(); ++c) {
    const bool digit = n[c] >= '0' && n[c] <= '9';
    if (!digit) {
      out.push_back(n[c]);
    } else if (out.empty() || out.back() != '#') {
      out.push_back('#');
    }
  }
  return out;
}

// Steps of a trace without ProfilerStep#: between the ends of consecutive outermost
// Optimizer.step# regions, or between the starts of the most repeated top-level annotation of a
// thread (three or more, not overlapping, from the first to the last over half the run; Python
// frames above it do not count, and its digits do not tell its runs apart). Empty when neither
// marks a loop.
std::vector<StepSpan> InferSteps(const Trace& trace) {
  const EventTable& ev = trace.events;
  std::vector<std::pair<int64_t, int64_t>> optimizer;
  int32_t optimizer_track = -1;
  std::map<std::pair<uint32_t, std::string>, std::vector<std::pair<int64_t, int64_t>>> top;
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    if (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation) continue;
    const std::string_view n = trace.Name(i);
    if (StartsWith(n, "Optimizer.step#")) {
      bool nested = false;
      for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 64; p = ev.parent[p], ++g) {
        nested = nested || StartsWith(trace.Name(p), "Optimizer.step#");
      }
      if (!nested &&
          (optimizer_track < 0 || ev.track[i] == static_cast<uint32_t>(optimizer_track))) {
        optimizer_track = static_cast<int32_t>(ev.track[i]);
        optimizer.emplace_back(ev.ts[i], ev.end(i));
      }
    }
    if (k == EventKind::kUserAnnotation && !StartsWith(n, "Optimizer.") &&
        UnderPythonFramesOnly(ev, i)) {
      top[{ev.track[i], LoopMarkerName(n)}].emplace_back(ev.ts[i], ev.end(i));
    }
  }
  std::vector<StepSpan> out;
  if (optimizer.size() >= 3) {
    // The first iteration ends with the first optimizer step: from the thread's first event to
    // that end is a step too when it launches GPU work (a run profiled from its first iteration,
    // whose lazy loading had been left out of every figure: 150 ms of a 156 ms DDP run).
    int64_t first_start = optimizer[0].first;
    bool launches = false;
    for (size_t i = 0; i < ev.size() && ev.ts[i] < optimizer[0].second; ++i) {
      if (ev.track[i] != static_cast<uint32_t>(optimizer_track)) continue;
      first_start = std::min(first_start, ev.ts[i]);
      launches = launches || (IsLaunchKind(ev.kind[i]) && ev.link[i] >= 0);
    }
    if (launches) {
      out.push_back(
          {1, first_start, optimizer[0].second, optimizer[0].second, optimizer_track, true, true});
    }
    for (size_t k = 1; k < optimizer.size(); ++k) {
      out.push_back({static_cast<int64_t>(out.size() + 1), optimizer[k - 1].second,
                     optimizer[k].second, optimizer[k].second, optimizer_track, true, true});
    }
    return out;
  }
  const std::vector<std::pair<int64_t, int64_t>>* best = nullptr;
  uint32_t best_track = 0;
  for (const auto& [key, spans] : top) {
    bool disjoint = true;
    for (size_t k = 1; k < spans.size(); ++k)
      disjoint = disjoint && spans[k].first >= spans[k - 1].second;
    // A loop's marker repeats across the run; a benchmark's blocks, each run a few times in
    // turn, cover a part of it each.
    const bool spread =
        spans.size() >= 3 &&
        2 * (static_cast<double>(spans.back().second) - static_cast<double>(spans.front().first)) >=
            static_cast<double>(trace.span_end()) - static_cast<double>(trace.span_start());
    if (spread && disjoint && (!best || spans.size() > best->size())) {
      best = &spans;
      best_track = key.first;
    }
  }
  if (!best) return out;
  for (size_t k = 0; k < best->size(); ++k) {
    const int64_t start = (*best)[k].first;
    const int64_t end = k + 1 < best->size() ? (*best)[k + 1].first : (*best)[k].second;
    out.push_back(
        {static_cast<int64_t>(k + 1), start, end, end, static_cast<int32_t>(best_track), true});
  }
  return out;
}

}  // namespace

// Whether the last of |steps| is the stub a final prof.step() opens just before the profiler
// stops: it launches nothing and lasts under a tenth of the steps before it (median). Averaged
// in, it halves a one-step trace's "per step" figures.
bool TrailingStubStep(const Trace& trace, const std::vector<StepSpan>& steps) {
  if (steps.size() < 2) return false;
  // (In doubles: a fuzzed clock's spans overflow int64 arithmetic.)
  auto length = [](const StepSpan& s) {
    return static_cast<double>(s.end_ns) - static_cast<double>(s.start_ns);
  };
  std::vector<double> durs;
  for (size_t k = 0; k + 1 < steps.size(); ++k) durs.push_back(length(steps[k]));
  std::nth_element(durs.begin(), durs.begin() + durs.size() / 2, durs.end());
  const StepSpan& last = steps.back();
  if (10 * length(last) >= durs[durs.size() / 2]) return false;
  const EventTable& ev = trace.events;
  auto first = std::lower_bound(ev.ts.begin(), ev.ts.end(), last.start_ns);
  for (size_t i = first - ev.ts.begin(); i < ev.size() && ev.ts[i] < last.cpu_end_ns; ++i) {
    if (IsLaunchKind(ev.kind[i])) return false;
  }
  return true;
}

std::vector<StepSpan> AnalysedSteps(const Trace& trace, ColdStartCut cut) {
  std::vector<StepSpan> out;
  for (const Step& s : trace.steps) {
    out.push_back({s.number, s.start(), s.end(), s.cpu_end,
                   s.event >= 0 ? static_cast<int32_t>(trace.events.track[s.event]) : -1, false});
  }
  if (TrailingStubStep(trace, out)) out.pop_back();
  // One recorded step whose cold start is analysed apart (a ProfilerStep around the model's
  // construction and ten iterations): its warm part is the one span, as in a run without steps.
  if (out.size() == 1 && cut.prefix_ns > 0) {
    StepSpan& only = out.front();
    only.number = -1;
    only.start_ns =
        std::min(std::max(only.start_ns, trace.span_start() + cut.prefix_ns), only.end_ns);
    return out;
  }
  if (out.empty()) {
    out = InferSteps(trace);
    // As the trace builder ends ProfilerStep# steps: at the later of the CPU end and the end of
    // the GPU work launched inside the step, clipped at the next step's start (the last step's
    // tail, e.g. a collective still running after the loop, is its time too).
    std::vector<int64_t> starts, cpu_ends;
    for (const StepSpan& s : out) {
      starts.push_back(s.start_ns);
      cpu_ends.push_back(s.cpu_end_ns);
    }
    const std::vector<int64_t> gpu_end = EndsOfLaunchedGpuWork(trace.events, starts, cpu_ends);
    for (size_t k = 0; k < out.size(); ++k) {
      int64_t ge = gpu_end[k];
      if (k + 1 < out.size()) ge = std::min(ge, std::max(out[k].cpu_end_ns, out[k + 1].start_ns));
      out[k].end_ns = std::max(out[k].cpu_end_ns, ge);
    }
    // A serving engine's last marks are often empty (vLLM's execute_context_0(0)_generation_0(0)
    // once the requests are done): stubs, not steps.
    for (int k = 0; k < 3 && TrailingStubStep(trace, out); ++k) out.pop_back();
  }
  // The cold leading steps analysed apart, ProfilerStep#'s or inferred ones.
  if (cut.leading_steps > 0 && out.size() > 1) {
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(
                                             std::min(cut.leading_steps, out.size() - 1)));
  }
  if (out.empty() && trace.events.size() > 0) {
    const int64_t start =
        std::min(trace.span_start() + std::max<int64_t>(0, cut.prefix_ns), trace.span_end());
    out.push_back({-1, start, trace.span_end(), trace.span_end(), -1, false});
  }
  return out;
}

std::vector<FirstCall> OneTimeFirstCalls(const Trace& trace) {
  const EventTable& ev = trace.events;
  std::vector<Interval> gpu_busy;
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    if (k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset) {
      gpu_busy.push_back({ev.ts[i], ev.end(i)});
    }
  }
  MergeIntervals(&gpu_busy);
  return OneTimeFirstCalls(trace, gpu_busy);
}

bool IsCompilePhaseName(std::string_view n) {
  // Recent releases also write the outer phases without the suffix.
  return EndsWith(n, " (dynamo_timed)") || n == "dynamo" || n == "entire_frame_compile" ||
         n == "backend_compile" || n == "inductor_compile";
}

// Ops that return a view of their input without touching its data.
bool IsViewOpName(std::string_view n) {
  static constexpr std::string_view kViews[] = {
      "aten::view",      "aten::flatten",    "aten::_unsafe_view", "aten::transpose",
      "aten::t",         "aten::permute",    "aten::expand",       "aten::squeeze",
      "aten::unsqueeze", "aten::as_strided", "aten::slice",        "aten::select",
      "aten::detach",    "aten::alias",      "aten::narrow",       "aten::unflatten",
      "aten::split",     "aten::chunk",      "aten::unbind"};
  return std::find(std::begin(kViews), std::end(kViews), n) != std::end(kViews);
}

// Ops whose first call sets up a math library: convolutions and matrix products.
bool IsMathLibraryOp(std::string_view n) {
  return Contains(n, "convolution") || Contains(n, "conv2d") || Contains(n, "conv1d") ||
         Contains(n, "conv3d") || n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm" ||
         n == "aten::baddbmm" || n == "aten::matmul" || n == "aten::linear";
}

// A Python frame (with_stack) that builds or places a model: an nn.Module's constructor
// (torch/nn/modules/<file>.py(N): __init__), torch/nn/init.py's initialisers (kaiming_uniform_),
// an optimizer's constructor, and Module.to / cuda / _apply moving the parameters to the device.
bool IsModelSetupFrame(std::string_view n) {
  const std::string_view call = PythonCallOf(n);
  if (call.empty()) return false;
  if (Contains(n, "torch/nn/init.py(")) return true;
  if (Contains(n, "torch/nn/modules/")) {
    return call == "__init__" || call == "to" || call == "cuda" || call == "_apply" ||
           call == "to_empty" || call == "load_state_dict";
  }
  return Contains(n, "torch/optim/") && call == "__init__";
}

// A module's forward (a module made inside forward is made every call, not once).
bool IsForwardFrame(std::string_view n) {
  if (StartsWith(n, "nn.Module: ")) return true;
  const std::string_view call = PythonCallOf(n);
  return call == "forward" || call == "_call_impl" || call == "_wrapped_call_impl";
}

// Model construction and placement (with_stack): the outermost model-set-up frame
// (IsModelSetupFrame) and the constructors around it (the user's nn.Module subclass's __init__
// that builds its layers), outside any module's forward, per name in one step at most (a model
// built every step is the steady state's). ncompass's SimpleNet: 2.8 ms of __init__ drawing its
// weights with aten::uniform_ on the host and 0.5 ms of .to(device), then ten 1.7 ms iterations.
void AddModelSetupFrames(const Trace& trace, std::vector<FirstCall>* out) {
  const EventTable& ev = trace.events;
  std::vector<uint8_t> setup(trace.strings.size(), 0), forward(trace.strings.size(), 0);
  bool any = false;
  for (size_t id = 0; id < setup.size(); ++id) {
    const std::string_view n = trace.strings.Get(static_cast<StringId>(id));
    setup[id] = IsModelSetupFrame(n);
    forward[id] = IsForwardFrame(n);
    any = any || setup[id];
  }
  if (!any) return;
  std::set<int32_t> rows;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::kPythonFunction || !setup[ev.name[i]]) continue;
    int32_t top = static_cast<int32_t>(i);
    bool in_forward = false;
    for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 4096; p = ev.parent[p], ++g) {
      if (ev.kind[p] != EventKind::kPythonFunction) continue;
      const StringId name = ev.name[p];
      if (forward[name]) {
        in_forward = true;
        break;
      }
      if (setup[name] || PythonCallOf(trace.strings.Get(name)) == "__init__") top = p;
    }
    if (!in_forward) rows.insert(top);
  }
  // Per name, the steps its frames run in: two or more say it is the steady state's.
  const std::vector<StepSpan> spans =
      trace.steps.empty() ? std::vector<StepSpan>{} : AnalysedSteps(trace);
  std::map<StringId, std::set<int64_t>> steps_of;
  for (int32_t row : rows) {
    const int64_t step = StepNumberAt(spans, ev.ts[row]);
    if (step >= 0) steps_of[ev.name[row]].insert(step);
  }
  for (int32_t row : rows) {
    if (steps_of[ev.name[row]].size() < 2) out->push_back({row, 0});
  }
}

std::vector<FirstCall> OneTimeFirstCalls(const Trace& trace,
                                         const std::vector<Interval>& gpu_busy) {
  const EventTable& ev = trace.events;
  struct Runs {
    int32_t first = -1;
    std::vector<int64_t> later;      // durations of the next runs (at most kSample)
    std::vector<int64_t> later_own;  // the same without the allocator calls inside them
    int64_t longest_later = 0;       // the longest later run in a later step
    int64_t longest_any = 0;         // the longest later run, in any step
    int64_t step_end = INT64_MIN;    // the end of the first run's step (INT64_MIN: no steps)
  };
  constexpr size_t kSample = 64;
  constexpr size_t kLoaderLaterBatches = 3;
  // Per name: an op (not a region: ProfilerStep#, Optimizer.step#), or a DataLoader iterator's
  // __next__, whose first call starts the worker processes (seconds, against milliseconds for
  // the batches after it).
  enum : uint8_t { kNotEligible, kOp, kLoaderNext };
  std::vector<uint8_t> eligible(trace.strings.size(), kNotEligible);
  std::vector<uint8_t> allocator_name(trace.strings.size(), 0);  // an allocator call's name
  for (size_t id = 0; id < eligible.size(); ++id) {
    const std::string_view n = trace.strings.Get(static_cast<StringId>(id));
    allocator_name[id] = (RuntimeCallFlags(n) & kRuntimeAllocator) != 0;
    // A view (flatten, view, transpose, ...) only makes new metadata: it has nothing to set up,
    // and a long first run of one is the host stalling, not a first call.
    eligible[id] = IsDataLoaderName(n)                   ? kLoaderNext
                   : Contains(n, "#") || IsViewOpName(n) ? kNotEligible
                                                         : kOp;
  }
  // Per op row, the time of the allocator calls inside it (cudaMalloc of a new output, at any
  // depth): a first call's set-up is its own work, not the allocation every cold call makes.
  std::unordered_map<int32_t, int64_t> allocator_under;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (!IsLaunchKind(ev.kind[i]) || !allocator_name[ev.name[i]]) continue;
    for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 256; p = ev.parent[p], ++g) {
      if (ev.kind[p] == EventKind::kCpuOp) allocator_under[p] += ev.dur[i];
    }
  }
  // The profiler's own work (CUPTI's buffer requests: IsProfilerOverhead) inside a row's
  // time is not the row's: a decode's first aten::gather of 1.86 ms held a 1.79 ms "Activity
  // Buffer Request", which no run without the profiler has.
  std::vector<std::pair<int64_t, int64_t>> profiler_work;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.dur[i] > 0 && IsProfilerOverhead(trace, i)) {
      profiler_work.emplace_back(ev.ts[i], ev.end(i));
    }
  }
  auto dur_ns = [&](size_t row) {
    int64_t d = ev.dur[row];
    for (const auto& [a, b] : profiler_work) {
      d -= std::max<int64_t>(0, std::min(b, ev.end(row)) - std::max(a, ev.ts[row]));
    }
    return std::max<int64_t>(0, d);
  };
  auto own_ns = [&](size_t row) {
    auto it = allocator_under.find(static_cast<int32_t>(row));
    return dur_ns(row) - (it != allocator_under.end() ? it->second : 0);
  };
  std::unordered_map<uint64_t, Runs> runs;  // (track, name) -> runs
  for (size_t i = 0; i < ev.size(); ++i) {
    const uint8_t kind = eligible[ev.name[i]];
    if (kind == kNotEligible ||
        !(ev.kind[i] == EventKind::kCpuOp ||
          (kind == kLoaderNext && ev.kind[i] == EventKind::kUserAnnotation))) {
      continue;
    }
    Runs& r = runs[(static_cast<uint64_t>(ev.track[i]) << 32) | ev.name[i]];
    if (r.first < 0) {
      r.first = static_cast<int32_t>(i);
      for (const Step& s : trace.steps) {
        if (s.start() <= ev.ts[i] && ev.ts[i] < s.end()) r.step_end = s.end();
      }
      continue;
    }
    if (r.later.size() < kSample) {
      r.later.push_back(ev.dur[i]);
      r.later_own.push_back(own_ns(i));
    }
    if (ev.ts[i] >= r.step_end) r.longest_later = std::max(r.longest_later, ev.dur[i]);
    r.longest_any = std::max(r.longest_any, ev.dur[i]);
  }
  // Whether GPU work is launched from inside |row| (on its thread).
  auto launches_gpu = [&](int32_t row) {
    const int64_t end = ev.end(row);
    for (size_t j = static_cast<size_t>(row) + 1; j < ev.size() && ev.ts[j] < end; ++j) {
      if (ev.track[j] == ev.track[row] && IsLaunchKind(ev.kind[j]) && ev.link[j] >= 0) return true;
    }
    return false;
  };
  // Whether |row| is a region rather than an op: a record_function the trace writes as an op
  // (the 2021 profiler's "Operator" category, or a wrapper such as model_inference) encloses
  // kRegionMinChildOps ops or more, or kRegionMinDistinctOps different ones, whose nearest
  // enclosing op it is. Its ops' first calls count, not the region.
  auto is_region = [&](int32_t row) {
    const int64_t end = ev.end(row);
    std::vector<StringId> names;
    int children = 0;
    for (size_t j = static_cast<size_t>(row) + 1; j < ev.size() && ev.ts[j] < end; ++j) {
      if (ev.track[j] != ev.track[row] || ev.kind[j] != EventKind::kCpuOp) continue;
      int32_t p = ev.parent[j];
      for (int g = 0; p >= 0 && g < 256 && ev.kind[p] == EventKind::kPythonFunction; ++g) {
        p = ev.parent[p];
      }
      if (p != row) continue;
      ++children;
      if (std::find(names.begin(), names.end(), ev.name[j]) == names.end()) {
        names.push_back(ev.name[j]);
      }
      if (children >= kRegionMinChildOps ||
          names.size() >= static_cast<size_t>(kRegionMinDistinctOps)) {
        return true;
      }
    }
    return false;
  };
  std::vector<FirstCall> out;
  // Long allocator calls while the GPU has nothing to wait for: start-up (cudaFree(0) creating
  // the context, a library's first workspace). A cudaFree that waits for running work is not.
  auto gpu_idle_through = [&](int32_t row) {
    return ClippedLength(gpu_busy, ev.ts[row], ev.end(row)) * 10 < ev.dur[row];
  };
  // In a run of a few milliseconds (a microbenchmark of a handful of calls) a first call's
  // set-up under a millisecond is still much of it: the floor is a tenth of the run there.
  const double span =
      static_cast<double>(trace.span_end()) - static_cast<double>(trace.span_start());
  const int64_t floor_ns = static_cast<int64_t>(
      std::clamp(kShortRunFirstCallShare * span, static_cast<double>(kShortRunFirstCallNs),
                 static_cast<double>(kFirstCallMinNs)));
  // A kernel launch that long, and kFirstCallRatio x the run's usual launch (a lazy module load
  // in a short run: an Inductor call's first cuLaunchKernel of 306 us against 7 us after it).
  std::vector<int64_t> launch_ns;
  if (floor_ns < kFirstCallMinNs) {
    for (size_t i = 0; i < ev.size(); ++i) {
      if (IsLaunchKind(ev.kind[i]) && ev.link[i] >= 0 &&
          (RuntimeCallFlags(trace.Name(i)) & kRuntimeKernelLaunch)) {
        launch_ns.push_back(ev.dur[i]);
      }
    }
  }
  const int64_t usual_launch_ns = Median(launch_ns, 0);
  std::vector<int32_t> long_allocator_calls;
  std::set<int64_t> allocator_steps;  // the steps that hold them (ProfilerStep# or inferred)
  std::vector<StepSpan> spans;        // AnalysedSteps(trace), once there is such a call
  std::vector<int32_t> set_up_calls;  // long device queries and set-up calls
  std::map<StringId, std::set<int64_t>> set_up_steps;  // per name, the steps that hold them
  // In a short run a launch of the first kernel of its name counts from kShortRunFirstCallNs:
  // a TensorRT engine's second lazy load of 0.33 ms in a 4 ms inference (three launches in all,
  // so their median says nothing) is start-up like its first of 1.8 ms, though under the run's
  // tenth.
  const int64_t launch_floor_ns = floor_ns < kFirstCallMinNs ? kShortRunFirstCallNs : floor_ns;
  std::vector<uint8_t> first_of_name;  // per row: a GPU event, the first of its name
  if (launch_floor_ns < floor_ns) {
    first_of_name.assign(ev.size(), 0);
    std::set<StringId> seen;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (IsGpuKind(ev.kind[i]) && seen.insert(ev.name[i]).second) first_of_name[i] = 1;
    }
  }
  for (size_t i = 0; i < ev.size(); ++i) {
    if (!IsLaunchKind(ev.kind[i]) || ev.dur[i] < launch_floor_ns) continue;
    const std::string_view name = trace.Name(i);
    const uint32_t call = RuntimeCallFlags(name);
    const bool allocator =
        (call & kRuntimeAllocator) && ev.dur[i] >= kOneTimeAllocatorCallNs && ev.dur[i] >= floor_ns;
    const bool lazy_launch = ev.link[i] >= 0 && (call & kRuntimeKernelLaunch) &&
                             (ev.dur[i] >= kFirstCallMinNs ||
                              (ev.dur[i] >= floor_ns && launch_ns.size() >= 3 &&
                               static_cast<double>(ev.dur[i]) >=
                                   kFirstCallRatio * static_cast<double>(usual_launch_ns)) ||
                              (!first_of_name.empty() && first_of_name[ev.link[i]]));
    // A device query or set-up call that starts no GPU work and waits for none, of a
    // millisecond or more (cudaDeviceGetStreamPriorityRange creating the context: 75.6 ms):
    // start-up, as long as such calls of its name do not recur in two steps or more.
    constexpr uint32_t kNotSetUp = kRuntimeSync | kRuntimeDeviceWideSync | kRuntimeCopy |
                                   kRuntimeSyncCopy | kRuntimeAnyHostCopy | kRuntimeMemset |
                                   kRuntimeKernelLaunch | kRuntimeGraphLaunch | kRuntimeAllocator |
                                   kRuntimeImplicitSync | kRuntimeCaptureBegin |
                                   kRuntimeCaptureEnd | kRuntimeGraphInstantiate;
    const bool set_up_call = ev.link[i] < 0 && !(call & kNotSetUp) &&
                             ev.dur[i] >= kFirstCallMinNs &&
                             (StartsWith(name, "cu") || StartsWith(name, "hip"));
    if (!(allocator || lazy_launch || set_up_call) || !gpu_idle_through(static_cast<int32_t>(i))) {
      continue;
    }
    if (lazy_launch) {
      out.push_back({static_cast<int32_t>(i), kFirstCallMinNs / 100});
      continue;
    }
    if (spans.empty()) spans = AnalysedSteps(trace);
    const int64_t step = StepNumberAt(spans, ev.ts[i]);
    if (set_up_call) {
      set_up_calls.push_back(static_cast<int32_t>(i));
      if (step >= 0) set_up_steps[ev.name[i]].insert(step);
    } else {
      long_allocator_calls.push_back(static_cast<int32_t>(i));
      if (step >= 0) allocator_steps.insert(step);
    }
  }
  for (int32_t row : set_up_calls) {
    if (set_up_steps[ev.name[row]].size() < 2) out.push_back({row, kFirstCallMinNs / 100});
  }
  // Start-up happens once: long allocator calls in two steps or more are the allocator's churn.
  if (allocator_steps.size() < 2) {
    for (int32_t row : long_allocator_calls) out.push_back({row, kFirstCallMinNs / 100});
  }
  for (auto& [key, r] : runs) {
    const int64_t d = dur_ns(r.first);
    if (d < floor_ns || (d < kFirstCallMinNs && r.later.empty())) continue;
    if (!r.later.empty()) {
      int64_t typical = Median(r.later, 0);
      // A run in a later step that costs as much (half of it or more) says the cost repeats
      // every step: a step's torch.tensor() from a Python list, under the same aten::to as the
      // small casts, is steady-state work, not a first call. (Within the first step, first
      // calls of other shapes may cost as much: a cold step sets up each layer.)
      if (r.longest_later * 2 >= d) continue;
      // An op that launches nothing on the GPU costs by its tensors' size: a later run at half
      // its cost or more, in the same step too, is the same work on other shapes (a model's
      // two largest weights initialised, 1.16 and 1.12 ms), not a first call's set-up.
      if (r.longest_any * 2 >= d && !launches_gpu(r.first)) continue;
      // A math library's first call that the GPU idles through (cuDNN / cuBLAS handles and
      // workspaces, an algorithm search) at twice its later runs or more: in a cold forward
      // those later runs set up their own shapes and are slow too, so the ratio alone misses it.
      const bool library_setup = d >= kFirstCallMinNs && d >= 2 * typical &&
                                 IsMathLibraryOp(trace.Name(r.first)) &&
                                 gpu_idle_through(r.first) && launches_gpu(r.first);
      // A loader's first batch against a single later one says nothing: two workers that cannot
      // keep up hand over a batch after a long wait, then the other's at once (an H200 run's two
      // profiled steps waited 117 ms and 1 ms; 115 ms a step without the profiler). Against two,
      // it must be 10x the longer (a V100 evaluation's 4.5 s, then 1.5 and 105 ms).
      const bool loader = eligible[ev.name[r.first]] == kLoaderNext;
      if (loader && r.later.size() < 2) continue;
      if (loader && r.later.size() < kLoaderLaterBatches) {
        typical = *std::max_element(r.later.begin(), r.later.end());
      }
      // Where the later runs allocate too (an out-of-place op's new output while the cache is
      // cold), the first run's own work against theirs: a set-up of the floor's length or more
      // that is kFirstCallRatio x their own work (a first aten::mul's 0.62 ms of dispatch and
      // lazy initialisation beside a 166 us cudaMalloc, then 15 us beside a 90 us one).
      const int64_t first_own = own_ns(static_cast<size_t>(r.first));
      const int64_t typical_own = Median(r.later_own, 0);
      const bool own_setup =
          !loader && first_own - typical_own >= floor_ns &&
          static_cast<double>(first_own) >= kFirstCallRatio * static_cast<double>(typical_own);
      // (A loader's __next__ encloses the ops that rebuild the batch's tensors: not a region.)
      if ((static_cast<double>(d) >= kFirstCallRatio * static_cast<double>(typical) ||
           library_setup || own_setup) &&
          (eligible[ev.name[r.first]] == kLoaderNext || !is_region(r.first))) {
        out.push_back({r.first, typical});
      }
    } else if ((d >= kFirstCallAloneNs ||
                (d >= kLibraryFirstCallNs && IsMathLibraryOp(trace.Name(r.first)) &&
                 gpu_idle_through(r.first))) &&
               launches_gpu(r.first) && !is_region(r.first)) {
      out.push_back({r.first, kFirstCallMinNs / 10});
    }
  }
  AddModelSetupFrames(trace, &out);
  // torch.compile's compilation (Dynamo's tracing, AOTAutograd, Inductor's lowering, codegen and
  // autotuning, each a record_function "<phase> (dynamo_timed)"): once per frame and guard set,
  // a one-time cost like a library's set-up, unless it recurs in most steps (a recompile every
  // step is the steady state's).
  std::vector<int32_t> compiles;
  std::set<size_t> compile_steps;
  for (size_t i = 0; i < ev.size(); ++i) {
    if ((ev.kind[i] != EventKind::kCpuOp && ev.kind[i] != EventKind::kUserAnnotation) ||
        ev.dur[i] < kFirstCallMinNs || !IsCompilePhaseName(trace.Name(i))) {
      continue;
    }
    compiles.push_back(static_cast<int32_t>(i));
    for (size_t s = 0; s < trace.steps.size(); ++s) {
      if (trace.steps[s].start() <= ev.ts[i] && ev.ts[i] < trace.steps[s].end()) {
        compile_steps.insert(s);
      }
    }
  }
  const bool recompiles_each_step =
      compile_steps.size() >= kRecompileMinSteps && 2 * compile_steps.size() > trace.steps.size();
  if (!recompiles_each_step) {
    for (int32_t row : compiles) out.push_back({row, kFirstCallMinNs / 100});
  }
  std::sort(out.begin(), out.end(),
            [](const FirstCall& a, const FirstCall& b) { return a.row < b.row; });
  // Keep the outermost: a first call inside another one is part of it.
  std::vector<FirstCall> outer;
  for (const FirstCall& c : out) {
    if (EnclosingFirstCall(trace, outer, ev.parent[c.row]) < 0) outer.push_back(c);
  }
  return outer;
}

const FirstCall* FirstCallAt(const std::vector<FirstCall>& calls, int32_t row) {
  auto it = std::lower_bound(calls.begin(), calls.end(), row,
                             [](const FirstCall& c, int32_t r) { return c.row < r; });
  return it != calls.end() && it->row == row ? &*it : nullptr;
}

int32_t EnclosingFirstCall(const Trace& trace, const std::vector<FirstCall>& calls, int32_t row) {
  if (calls.empty()) return -1;
  int32_t found = -1;
  for (int32_t p = row, depth = 0; p >= 0 && depth < 4096; p = trace.events.parent[p], ++depth) {
    if (FirstCallAt(calls, p)) found = p;
  }
  return found;
}

namespace {

// The launch calls of one GPU lane, by start.
struct LaunchedOn {
  std::vector<std::pair<int64_t, int32_t>> by_launch;  // (launch ts, GPU node), sorted
};

// Name classes, computed once per distinct name (the hot loops test ids, not strings).
enum NameClass : uint8_t {
  kNameSync = 1,
  kNameAllocator = 2,
  kNameCold = 4,
  kNameDataLoader = 8,
  kNameProfilerStep = 16,
  kNameIdleWait = 32,
  kNameCopy = 64,
  kNameCpuCollective = 128  // a collective the CPU runs (gloo:all_reduce on its own thread)
};

// BuildCausalGraph's passes, run in order over shared state: each reads what the earlier ones
// left here and in the graph (docs/causal_model.md describes them).
class GraphBuilder {
 public:
  GraphBuilder(const Trace& trace, CausalGraph* graph)
      : trace(trace), ev(trace.events), g(*graph), n_rows(trace.events.size()) {}
  ColdStartCut cut;  // AnalysedSteps'

  // Rows per track, name classes, kept rows, the cold-launch bound and the one-time first calls.
  void IndexRows(const std::vector<int32_t>& keep_rows, const std::vector<FirstCall>* first_calls) {
    // Rows per track, in table order (ts, longer first).
    rows_of.assign(trace.tracks.size(), {});
    {
      std::vector<size_t> rows_per_track(trace.tracks.size(), 0);  // sized once: no regrowth
      for (size_t i = 0; i < n_rows; ++i) ++rows_per_track[ev.track[i]];
      for (size_t t = 0; t < rows_of.size(); ++t) rows_of[t].reserve(rows_per_track[t]);
    }
    name_class.assign(trace.strings.size(), 0);
    call_flags.assign(trace.strings.size(), 0);
    for (size_t id = 0; id < name_class.size(); ++id) {
      const std::string_view n = trace.strings.Get(static_cast<StringId>(id));
      const uint32_t call = RuntimeCallFlags(n);
      call_flags[id] = call;
      name_class[id] =
          (call & (kRuntimeSync | kRuntimeSyncCopy | kRuntimeImplicitSync) ? kNameSync : 0) |
          (call & kRuntimeAllocator ? kNameAllocator : 0) |
          (call & kRuntimeColdStart ? kNameCold : 0) | (IsDataLoaderName(n) ? kNameDataLoader : 0) |
          (StartsWith(n, "ProfilerStep#") ? kNameProfilerStep : 0) |
          (IsIdleWaitName(n) ? kNameIdleWait : 0) | (Contains(n, "Memcpy") ? kNameCopy : 0) |
          (IsCpuCollectiveName(n) ? kNameCpuCollective : 0);
    }
    // One pass over the rows: per track, the launch durations, whether the CPU's ops were
    // profiled, graph captures against replays, launches that block on their kernel.
    std::vector<int64_t> launch_durs, graph_launch_durs;
    size_t captures = 0;
    int64_t graph_launches = 0;
    BlockingLaunchTally blocking;
    for (size_t i = 0; i < n_rows; ++i) {
      const EventKind k = ev.kind[i];
      ops_recorded = ops_recorded || k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
                     k == EventKind::kPythonFunction;
      const bool gpu_track = trace.tracks[ev.track[i]].gpu;
      if (IsGpuKind(k) ? (k != EventKind::kGpuSync) : (IsCpuKind(k) && !gpu_track)) {
        rows_of[ev.track[i]].push_back(static_cast<uint32_t>(i));
      }
      if (!IsLaunchKind(k)) continue;
      if (call_flags[ev.name[i]] & kRuntimeCaptureBegin) ++captures;
      if (call_flags[ev.name[i]] & kRuntimeGraphLaunch) {
        ++graph_launches;
        if (graph_launch_durs.size() < 200000) graph_launch_durs.push_back(ev.dur[i]);
      }
      blocking.Add(ev, static_cast<uint32_t>(i));
      const int32_t launched = ev.link[i];
      if (launched < 0) continue;
      if (launch_durs.size() < 200000) launch_durs.push_back(ev.dur[i]);
    }
    // Rows whose start and end stay node boundaries (merged slices never cross them).
    keep_row.assign(n_rows, 0);
    for (int32_t r : keep_rows) {
      if (r >= 0 && static_cast<size_t>(r) < n_rows) keep_row[r] = 1;
    }
    // A launch call this much slower than the median loads its module lazily (cold start).
    cold_launch_ns =
        std::max<int64_t>(1000000, 50 * std::min(Median(launch_durs, 5000), kLatencyCapNs));
    // A graph launch's CPU cost grows with the graph (a decode step's 3,500 kernels: 3-6 ms each
    // replay): it is cold only far above the run's other graph launches.
    cold_graph_launch_ns =
        graph_launch_durs.empty()
            ? cold_launch_ns
            : std::max(cold_launch_ns, 10 * Median(graph_launch_durs, graph_launch_durs.front()));
    launches_block = blocking.RunBlocks();
    one_time_capture = CapturesAreOneTime(captures, graph_launches);

    g.first_calls = first_calls ? *first_calls : OneTimeFirstCalls(trace);
  }

  // A copy call that returned only once its copy was done (a pageable or synchronous copy, every
  // step): its length is the copy and what the copy queued behind, not a lazy load.
  bool WaitsForItsCopy(uint32_t r) const {
    const int32_t c = ev.link[r];
    if (c < 0 || (ev.kind[c] != EventKind::kMemcpy && ev.kind[c] != EventKind::kMemset)) {
      return false;
    }
    // (Or it lasted as long as its copy, or most of its copy ran before it returned: a GPU clock
    // a little ahead of the CPU's puts a 40 ms pageable upload's end 80 us after its call's, and
    // a 28 ms one's, after a 350 ms wait for the GEMMs queued before it, 250 us after.)
    return ev.end(c) <= ev.end(r) + kBlockingReturnNs ||
           (ev.ts[c] < ev.end(r) &&
            (ev.dur[c] * 5 >= ev.dur[r] * 4 || (ev.end(c) - ev.end(r)) * 2 <= ev.dur[c]));
  }

  // The steps, the main thread and the order of the CPU lanes; whether the allocator is warming.
  void ChooseThreads() {
    // The main thread: the one that runs the ProfilerStep annotations (or the inferred steps'
    // marker), else the busiest CPU one.
    g.spans = AnalysedSteps(trace, cut);
    if (cut.prefix_ns > 0 && g.spans.size() == 1 && g.spans.front().number < 0)
      g.warm_from_ns = g.spans.front().start_ns;
    const std::vector<StepSpan>& spans = g.spans;
    if (!spans.empty() && spans.front().marker_track >= 0) {
      main_track = spans.front().marker_track;
    } else {
      // Autograd's backward thread often records more than the main thread, but the user's code
      // (and the wait in loss.backward()) runs on the main one.
      std::vector<uint8_t> autograd(trace.tracks.size(), 0);
      for (size_t i = 0; i < n_rows; ++i) {
        if (ev.kind[i] == EventKind::kCpuOp &&
            StartsWith(trace.Name(i), "autograd::engine::evaluate_function")) {
          autograd[ev.track[i]] = 1;
        }
      }
      // Without CPU activity (runtime calls only) autograd's thread cannot be told by its ops:
      // the main thread is the one that calls first (the batch's copy before the forward).
      if (!ops_recorded) {
        int64_t first = INT64_MAX;
        for (size_t t = 0; t < rows_of.size(); ++t) {
          if (!trace.tracks[t].gpu && !rows_of[t].empty() && ev.ts[rows_of[t].front()] < first) {
            first = ev.ts[rows_of[t].front()];
            main_track = static_cast<int64_t>(t);
          }
        }
      }
      for (int pass = 0; pass < 2 && main_track < 0; ++pass) {
        size_t most = 0;
        for (size_t t = 0; t < rows_of.size(); ++t) {
          if (!trace.tracks[t].gpu && rows_of[t].size() > most && (pass == 1 || !autograd[t])) {
            most = rows_of[t].size();
            main_track = static_cast<int64_t>(t);
          }
        }
      }
    }
    // With one step (or none), a handful of allocator calls is the caching allocator filling up
    // (one-time); churn repeats (kFewAllocatorCalls or more).
    constexpr int64_t kFewAllocatorCalls = 8;
    // The first step's allocator share of its time over the later steps' for it to be warm-up.
    constexpr int64_t kWarmingAllocatorRatio = 10;
    // More: allocations with hardly a free among them (under a quarter of the calls) are the
    // cache filling up too, since the caching allocator keeps what it allocated; churn frees
    // (the allocator off, empty_cache()). A LoRA step profiled from the process's start made 56
    // cudaMalloc calls and 2 cudaFree.
    int64_t allocator_calls = 0, device_frees = 0;
    if (spans.size() <= 1) {
      for (size_t i = 0; i < n_rows; ++i) {
        if (!IsLaunchKind(ev.kind[i]) || !(name_class[ev.name[i]] & kNameAllocator)) continue;
        ++allocator_calls;
        device_frees += IsDeviceFreeName(trace.Name(i));
      }
    }
    warming_allocator = spans.size() <= 1 &&
                        (allocator_calls < kFewAllocatorCalls ||
                         (device_frees < kFewAllocatorCalls && device_frees * 4 < allocator_calls));
    // With several steps, the first one's allocator calls fill the caching allocator (a
    // library's workspace, the context's first cudaFree) when the later steps, together at
    // least half as long, hardly call it (a tenth of its time per step's time, or less):
    // one-time, not churn (TTA013 needs calls that repeat across steps).
    if (spans.size() >= 2) {
      std::vector<int64_t> alloc_ns(spans.size(), 0);
      for (size_t i = 0; i < n_rows; ++i) {
        if (!IsLaunchKind(ev.kind[i]) || !(name_class[ev.name[i]] & kNameAllocator)) continue;
        const int32_t k = SpanStartingBy(spans, ev.ts[i]);
        if (k < 0 || ev.ts[i] >= spans[k].end_ns) continue;
        alloc_ns[k] += ev.dur[i];
      }
      const double first_ns = std::max<int64_t>(1, spans[0].end_ns - spans[0].start_ns);
      const double first_density = static_cast<double>(alloc_ns[0]) / first_ns;
      double later_ns = 0, later_density = 0;
      for (size_t k = 1; k < spans.size(); ++k) {
        const double d = std::max<int64_t>(1, spans[k].end_ns - spans[k].start_ns);
        later_ns += d;
        later_density = std::max(later_density, static_cast<double>(alloc_ns[k]) / d);
      }
      if (alloc_ns[0] > 0 && 2 * later_ns >= first_ns &&
          later_density * kWarmingAllocatorRatio < first_density) {
        warming_first_step = {spans[0].start_ns, spans[0].end_ns};
      }
    }
    if (main_track >= 0) cpu_tracks.push_back(static_cast<uint32_t>(main_track));
    for (size_t t = 0; t < rows_of.size(); ++t) {
      if (!trace.tracks[t].gpu && static_cast<int64_t>(t) != main_track && !rows_of[t].empty()) {
        cpu_tracks.push_back(static_cast<uint32_t>(t));
      }
    }
  }

  // 1. One CPU lane: slices between consecutive event boundaries, each owned by its innermost
  // event; a runtime call (with whatever it encloses) is one slice.
  // A secondary thread's wait this long follows the main thread (AddCpuLane, HelperWaits).
  static constexpr int64_t kIdleWaitGapNs = 100000;
  std::vector<int32_t> helper_waits;

  void AddCpuLane(uint32_t track) {
    const auto& rows = rows_of[track];
    if (rows.empty()) return;
    const bool is_main = static_cast<int64_t>(track) == main_track;
    g.lanes.push_back({track, false, is_main});
    g.lanes.back().first_node = static_cast<int32_t>(g.size());
    int32_t prev = -1;
    // A secondary thread's first work, like its work after a gap, follows the main thread.
    bool after_gap = !is_main;
    struct Open {
      uint32_t row;
      int64_t end;
      bool data_loading;
      bool communication;  // inside a CPU collective (gloo): the run's communication
      int32_t top;         // the step-level op (TopOpOf), -1
      bool cold;           // inside a one-time first call
      bool capture;        // a one-time graph capture's call, or work during the capture
    };
    bool capturing = false;  // between a one-time capture's begin and end calls
    auto cpu_cause = [](const Open& o) {
      return o.cold            ? Cause::kColdStart
             : o.data_loading  ? Cause::kDataLoading
             : o.communication ? Cause::kCommunication
                               : Cause::kCpuWork;
    };
    std::vector<Open> stack;
    int64_t cur = ev.ts[rows.front()];
    // A trace recorded without CPU activity (runtime calls only) and without steps: the
    // main thread's untraced work runs from the profiled span's start, not from its first
    // recorded call (a batch loaded for seconds before it shows as the GPU idle from the start).
    if (is_main && !ops_recorded && g.spans.size() == 1 && g.spans.front().number < 0 &&
        g.spans.front().start_ns < cur) {
      cur = g.spans.front().start_ns;
    }
    bool cut = true;        // the next slice starts a node (a kept boundary lies between)
    int32_t prev_top = -1;  // the step-level op of |prev| when it is CPU work
    auto emit = [&](int64_t a, int64_t b, bool force) {
      if (b <= a && !force) return;
      int32_t r = stack.empty() ? -1 : static_cast<int32_t>(stack.back().row);
      const int32_t top = stack.empty() ? -1 : stack.back().top;
      if (!cut && !after_gap && r >= 0 && prev >= 0 && !IsLaunchKind(ev.kind[r]) &&
          g.role[prev] == NodeRole::kCpuWork && g.ObsEnd(prev) == a && top == prev_top &&
          g.cause[prev] == cpu_cause(stack.back()) && b - g.obs_start[prev] < kMergedSliceMaxNs) {
        // The same work continues: the previous node grows.
        g.SetObsEnd(prev, b);
        g.dur.Set(prev, b - g.obs_start[prev]);
        return;
      }
      cut = false;
      NodeRole role = NodeRole::kCpuWork;
      // Time on the main thread outside any event; during a one-time capture, part of it.
      Cause cause = capturing ? Cause::kColdStart : Cause::kUntraced;
      if (r >= 0) {
        const uint8_t cls = name_class[ev.name[r]];
        if (IsLaunchKind(ev.kind[r])) {
          role = NodeRole::kLaunch;
          cause = Cause::kLaunch;
          if (cls & kNameAllocator) cause = Cause::kAllocator;
          // Context creation and a library's first workspace are start-up, not churn.
          const bool one_time_alloc =
              (cls & kNameAllocator) &&
              (stack.back().cold || warming_allocator ||
               (ev.ts[r] >= warming_first_step.first && ev.ts[r] < warming_first_step.second));
          // Under CUDA_LAUNCH_BLOCKING a launch waits for its kernel, as a sync would (the
          // wait is the kernel's time, not a lazy load).
          const bool blocks = launches_block && LaunchBlocksOnKernel(ev, static_cast<uint32_t>(r));
          // A launch of a millisecond or more with the GPU idle is listed as a first call (a
          // lazy module load) even where the run has too few warm launches for cold_launch_ns.
          // (Or a long device query or set-up call listed as one, or one inside a first call:
          // context creation under a first aten::empty_strided. A launch inside a first call
          // keeps its own cause.)
          const bool first_call_launch =
              FirstCallAt(g.first_calls, r) != nullptr ||
              (ev.link[r] < 0 && stack.back().cold && !(cls & kNameSync));
          if ((cls & kNameCold) || one_time_alloc || stack.back().capture || first_call_launch ||
              (!blocks && ev.link[r] >= 0 &&
               ev.dur[r] >= ((call_flags[ev.name[r]] & kRuntimeGraphLaunch) ? cold_graph_launch_ns
                                                                            : cold_launch_ns) &&
               !WaitsForItsCopy(static_cast<uint32_t>(r)))) {
            cause = Cause::kColdStart;
            ++g.stats.cold_calls;
          }
          if ((cls & kNameSync) || blocks) role = NodeRole::kSync;
          // A blocking copy whose copy the trace lacks (a synchronous call, or an async one
          // that held the CPU): its time is moving data, not launching.
          if ((cls & kNameCopy) && ev.link[r] < 0 &&
              (role == NodeRole::kSync || ev.dur[r] >= kBlockingCopyCallNs)) {
            cause = Cause::kMemcpy;
          }
        } else {
          cause = cpu_cause(stack.back());
        }
      }
      // A secondary thread blocked on a condition, a lock or a queue (a DataLoader queue's
      // feeder waiting for the next index) works for nobody: its wait ends when the main thread
      // hands it something (HelperWaits).
      const bool idle_wait = !is_main && r >= 0 && !IsLaunchKind(ev.kind[r]) &&
                             (name_class[ev.name[r]] & kNameIdleWait) && b - a >= kIdleWaitGapNs;
      if (idle_wait) cause = Cause::kUntraced;
      int32_t node = g.AddNode(a, std::max(a, b), r, role, cause);
      if (idle_wait) helper_waits.push_back(node);
      if (r >= 0 && IsLaunchKind(ev.kind[r])) g.node_of_row[r] = node;
      if (role == NodeRole::kSync) pending_syncs.push_back(node);
      assert(prev < 0 || prev == node - 1);
      g.has_lane_prev[node] = prev >= 0;
      g.lane_gap.Set(node, prev >= 0 ? a - g.ObsEnd(prev) : 0);
      if (after_gap && !is_main && !main_nodes.empty()) {
        // A secondary thread resuming after a gap waited for the main thread (autograd's
        // backward thread, a helper thread): it follows the main thread's progress.
        int32_t m = NodeAt(g, main_nodes, a);
        // A main-thread slice that was already running before this thread paused did not let
        // it resume (the main thread waiting in loss.backward() for this very thread).
        if (m >= 0 && prev >= 0 && g.obs_start[m] < g.ObsEnd(prev) &&
            a < g.ObsEnd(main_nodes.back())) {
          m = -1;
        }
        if (m >= 0 && a < g.ObsEnd(main_nodes.back())) {
          g.cross[node] = m;
          g.cross_gap.Set(node, a - g.obs_start[m]);
          g.lane_gap.Set(node, std::min<int64_t>(0, g.lane_gap[node]));
        } else if (m >= 0) {
          // Resuming once the main thread is done (a final synchronisation on another thread):
          // it follows the main thread's end.
          g.cross[node] = m;
          g.cross_gap.Set(node, a - g.ObsEnd(m));
          g.cross_from_end[node] = 1;
          g.lane_gap.Set(node, std::min<int64_t>(0, g.lane_gap[node]));
        }
      }
      after_gap = false;
      if (is_main) main_nodes.push_back(node);
      prev = node;
      prev_top = top;
    };
    // A row whose boundaries a merged slice must not cross.
    auto kept = [&](uint32_t r) {
      return keep_row[r] || IsLaunchKind(ev.kind[r]) ||
             (name_class[ev.name[r]] & kNameProfilerStep);
    };
    for (uint32_t r : rows) {
      const int64_t ts = ev.ts[r];
      while (!stack.empty() && stack.back().end <= ts) {
        const bool runtime = IsLaunchKind(ev.kind[stack.back().row]);
        emit(cur, stack.back().end, runtime);
        cur = std::max(cur, stack.back().end);
        cut = cut || kept(stack.back().row);
        stack.pop_back();
      }
      if (!stack.empty() && IsLaunchKind(ev.kind[stack.back().row])) continue;  // inside a call
      if (ts > cur) {
        if (stack.empty()) {
          if (is_main) {
            emit(cur, ts, false);  // untraced time on the main thread
          } else if (ts - cur > kSecondaryResumeGapNs) {
            // A secondary thread idle for a while resumes when the main thread lets it; one that
            // pauses only between the items of its own queue (autograd's backward ops) goes on.
            after_gap = true;
          }
        } else {
          emit(cur, ts, false);
        }
        cur = ts;
      }
      if (!stack.empty() && ts < cur) continue;  // overlaps an emitted slice: malformed nesting
      int64_t end = ev.end(r);
      // Improper nesting (an annotation that starts inside a short Python call and outlives
      // it): the enclosing events that end inside |r| end where |r| starts.
      while (!stack.empty() && stack.back().end < end && !IsLaunchKind(ev.kind[stack.back().row])) {
        cut = cut || kept(stack.back().row);
        stack.pop_back();
      }
      if (!stack.empty()) end = std::min(end, stack.back().end);
      const bool dl = (!stack.empty() && stack.back().data_loading) ||
                      (!IsLaunchKind(ev.kind[r]) && (name_class[ev.name[r]] & kNameDataLoader));
      const bool comm =
          (!stack.empty() && stack.back().communication) ||
          (!IsLaunchKind(ev.kind[r]) && (name_class[ev.name[r]] & kNameCpuCollective));
      // The step-level op, as TopOpOf finds it: the outermost op or annotation other than a step.
      const EventKind k = ev.kind[r];
      const bool op = (k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) &&
                      !(name_class[ev.name[r]] & kNameProfilerStep);
      const int32_t outer = stack.empty() ? -1 : stack.back().top;
      // A one-time graph capture: from its begin call to its end call, and the instantiation.
      constexpr uint32_t kCaptureCalls =
          kRuntimeCaptureBegin | kRuntimeCaptureEnd | kRuntimeGraphInstantiate;
      const uint32_t capture_call = one_time_capture ? call_flags[ev.name[r]] & kCaptureCalls : 0;
      if (capture_call & kRuntimeCaptureBegin) capturing = true;
      const bool capture = capturing || capture_call != 0;
      if (capture_call & kRuntimeCaptureEnd) capturing = false;
      const bool cold = (!stack.empty() && stack.back().cold) || capture ||
                        FirstCallAt(g.first_calls, static_cast<int32_t>(r)) != nullptr;
      stack.push_back({r, end, dl, comm, outer >= 0 ? outer : (op ? static_cast<int32_t>(r) : -1),
                       cold, capture});
      if (IsLaunchKind(k) && ev.link[r] >= 0) {
        // Every open row encloses this launch (marked from the inside out, up to one marked
        // already: its ancestors are).
        for (auto o = stack.rbegin(); o != stack.rend() && !g.launches_gpu[o->row]; ++o) {
          g.launches_gpu[o->row] = 1;
        }
      }
      if (kept(r)) cut = true;
    }
    while (!stack.empty()) {
      const bool runtime = IsLaunchKind(ev.kind[stack.back().row]);
      emit(cur, stack.back().end, runtime);
      cur = std::max(cur, stack.back().end);
      cut = cut || kept(stack.back().row);
      stack.pop_back();
    }
    g.lanes.back().end_node = static_cast<int32_t>(g.size());
  }

  void AddGpuLanes() {
    // 2. GPU lanes: one per stream track, activities in order.
    // An activity waited for its launch when the launch call started after the previous activity
    // on its stream had ended (HTA's rule); otherwise it was queued behind that activity.
    // Also when the stream sat idle and the activity started right after a long launch call
    // returned (a call of a millisecond or more, e.g. lazy loading, that began while the previous
    // activity still ran).
    // Whether the trace records the launches of most GPU activity (a sampled or filtered trace
    // that lacks them says too little of the host to tie the rest to it).
    size_t gpu_rows = 0, launched_rows = 0;
    for (size_t t = 0; t < rows_of.size(); ++t) {
      if (!trace.tracks[t].gpu) continue;
      for (uint32_t r : rows_of[t]) {
        ++gpu_rows;
        launched_rows += ev.link[r] >= 0 && g.node_of_row[ev.link[r]] >= 0;
      }
    }
    const bool launches_recorded = 2 * launched_rows >= gpu_rows;
    // (A launch call of 1 ms or more that loads its module lazily: its activity starts once it
    // returns, or later where the device starts up too, while the stream had run dry before it
    // returned: an A100's first grad accumulation launched for 12 ms, its kernel 2.35 ms after;
    // queued behind the previous kernel, 9.5 ms before, the stream's gap had held it there when
    // the launch was warm.)
    auto waited_for_launch = [&](int32_t launch, int64_t prev_end, int64_t ts) {
      if (prev_end == kNoTime || g.obs_start[launch] >= prev_end) return true;
      const int64_t call_end = g.ObsEnd(launch);
      return call_end - g.obs_start[launch] >= 1000000 && ts - prev_end > 2000 && ts >= call_end &&
             (ts - call_end <= 50000 || prev_end <= call_end);
    };
    std::vector<int64_t> lat_free;      // launch latency of activities that found their stream idle
    std::vector<int64_t> natural_gaps;  // stream gaps between queued activities
    for (size_t t = 0; t < rows_of.size(); ++t) {
      if (!trace.tracks[t].gpu) continue;
      const auto& rows = rows_of[t];
      for (size_t k = 0; k < rows.size(); ++k) {
        const uint32_t r = rows[k];
        const int32_t launch = ev.link[r] >= 0 ? g.node_of_row[ev.link[r]] : -1;
        if (launch < 0) continue;
        const int64_t prev_end = k > 0 ? ev.end(rows[k - 1]) : kNoTime;
        if (waited_for_launch(launch, prev_end, ev.ts[r])) {
          // A one-time lazy launch (a listed first call) says nothing of the usual latency.
          const int64_t lat = ev.ts[r] - g.obs_start[launch];
          if (lat >= 0 && lat_free.size() < 200000 &&
              EnclosingFirstCall(trace, g.first_calls, ev.link[r]) < 0) {
            lat_free.push_back(lat);
          }
        } else if (ev.ts[r] >= prev_end && ev.ts[r] - prev_end <= kLongStreamGapNs &&
                   natural_gaps.size() < 200000) {
          natural_gaps.push_back(ev.ts[r] - prev_end);
        }
      }
    }
    typical_latency = Median(lat_free, 5000);
    // A run whose kernels all queue behind each other has one or two launches that found the
    // stream idle, and the first of them may wait for work queued before the profile began (35
    // ms on an A5000): no usual latency to learn from so few.
    if (lat_free.size() < 3) typical_latency = std::min(typical_latency, kFewLatenciesCapNs);
    g.typical_latency = typical_latency;
    natural_gap = Median(natural_gaps, 1000);
    constexpr uint8_t kUnclassified = 0xff;
    std::vector<uint8_t> gpu_cause_of_name(trace.strings.size(), kUnclassified);
    for (size_t t = 0; t < rows_of.size(); ++t) {
      if (!trace.tracks[t].gpu || rows_of[t].empty()) continue;
      g.lanes.push_back({static_cast<uint32_t>(t), true, false});
      g.lanes.back().first_node = static_cast<int32_t>(g.size());
      int32_t prev = -1;
      for (uint32_t r : rows_of[t]) {
        // Kernel names are long and repeat: classify each distinct name once.
        uint8_t& cached = gpu_cause_of_name[ev.name[r]];
        if (cached == kUnclassified) {
          cached = static_cast<uint8_t>(GpuCause(EventKind::kKernel, trace.Name(r)));
        }
        const Cause cause = ev.kind[r] == EventKind::kMemcpy   ? Cause::kMemcpy
                            : ev.kind[r] == EventKind::kMemset ? Cause::kMemset
                                                               : static_cast<Cause>(cached);
        int32_t node =
            g.AddNode(ev.ts[r], ev.end(r), static_cast<int32_t>(r), NodeRole::kGpu, cause);
        assert(prev < 0 || prev == node - 1);
        g.has_lane_prev[node] = prev >= 0;
        g.node_of_row[r] = node;
        const int64_t gap = prev >= 0 ? ev.ts[r] - g.ObsEnd(prev) : kNoTime;
        const int32_t launch = ev.link[r] >= 0 ? g.node_of_row[ev.link[r]] : -1;
        if (launch < 0) {
          ++g.stats.gpu_without_launch;
          g.lane_gap.Set(node, prev >= 0 ? gap : 0);
          // After a long idle stream, activity whose launch the trace lacks was issued by the host
          // at about that time: it follows the main thread (as a secondary thread resuming
          // does), instead of holding its recorded distance from the stream's previous activity
          // (which pinned it when a one-time call before it is taken out).
          const int32_t m = launches_recorded && prev >= 0 &&
                                    gap > std::max(natural_gap, kLaunchlessFollowGapNs) &&
                                    !main_nodes.empty() && ev.ts[r] < g.ObsEnd(main_nodes.back())
                                ? NodeAt(g, main_nodes, ev.ts[r])
                                : -1;
          if (m >= 0) {
            g.cross[node] = m;
            g.cross_gap.Set(node, ev.ts[r] - g.obs_start[m]);
            g.lane_gap.Set(node, natural_gap);
          }
        } else {
          const int64_t lat = ev.ts[r] - g.obs_start[launch];
          g.cross[node] = launch;
          if (lat < 0) {
            ++g.stats.negative_latency;
            g.cross_gap.Set(node, lat);
            g.lane_gap.Set(node, prev >= 0 ? gap : 0);
          } else if (waited_for_launch(launch, prev >= 0 ? g.ObsEnd(prev) : kNoTime, ev.ts[r])) {
            // The stream was idle: the activity waited for its launch.
            g.cross_gap.Set(node, lat);
            g.lane_gap.Set(node, prev >= 0 ? std::min(gap, natural_gap) : 0);
          } else {
            // Queued behind the previous activity.
            g.cross_gap.Set(node, std::min(lat, typical_latency));
            g.lane_gap.Set(node, gap);
          }
        }
        prev = node;
      }
      g.lanes.back().end_node = static_cast<int32_t>(g.size());
    }
    g.lane_of_track.assign(trace.tracks.size(), -1);
    for (size_t l = 0; l < g.lanes.size(); ++l)
      g.lane_of_track[g.lanes[l].track] = static_cast<int32_t>(l);
  }

  void IndexLaunches() {
    // 3. What each synchronising call waits for: the last activity of every stream launched
    // before the call started (and ended before the call did), or its own blocking copy.
    launched.assign(g.lanes.size(), {});
    for (size_t l = 0; l < g.lanes.size(); ++l) {
      for (int32_t n = g.lanes[l].first_node; n < g.lanes[l].end_node; ++n) {
        if (g.role[n] != NodeRole::kGpu) continue;
        const int32_t c = g.cross[n];
        const int64_t lts = c >= 0 ? g.obs_start[c] : g.obs_start[n];
        launched[l].by_launch.emplace_back(lts, n);
      }
    }
    for (auto& l : launched) std::sort(l.by_launch.begin(), l.by_launch.end());
  }

  void RecordedEventWaits() {
    // 3a. Recorded event waits (cuda_sync rows, where the profiler recorded them): a stream that
    // waits for an event (cudaStreamWaitEvent) starts its next activity after the activity the
    // event was recorded behind; an event sync (cudaEventSynchronize) waits for that activity
    // alone. The recorded activity: the last one launched on the event's stream before its
    // cudaEventRecord call.
    {
      std::map<int64_t, int32_t> record_of_corr;  // cudaEventRecord correlation -> row
      std::vector<uint32_t> sync_rows;
      for (size_t i = 0; i < n_rows; ++i) {
        if (ev.kind[i] == EventKind::kGpuSync && ev.bytes[i] >= 0 && ev.PythonId(i) >= 0) {
          sync_rows.push_back(static_cast<uint32_t>(i));
          record_of_corr[ev.bytes[i]] = -1;
        }
      }
      if (!sync_rows.empty()) {
        for (size_t i = 0; i < n_rows; ++i) {
          if (!IsLaunchKind(ev.kind[i]) || ev.correlation[i] < 0) continue;
          auto it = record_of_corr.find(ev.correlation[i]);
          if (it != record_of_corr.end() && it->second < 0) it->second = static_cast<int32_t>(i);
        }
        // GPU lanes by (device, stream), from their activities.
        std::map<std::pair<int32_t, int32_t>, int32_t> lane_of_stream;
        for (size_t l = 0; l < g.lanes.size(); ++l) {
          if (!g.lanes[l].gpu || g.lanes[l].first_node == g.lanes[l].end_node) continue;
          const int32_t r0 = g.row[g.lanes[l].first_node];
          lane_of_stream[{ev.device[r0], ev.stream[r0]}] = static_cast<int32_t>(l);
        }
        // The last activity launched on |lane| before |ts|, -1.
        auto last_launched_before = [&](int32_t lane, int64_t ts) {
          const auto& v = launched[lane].by_launch;
          auto it = std::lower_bound(v.begin(), v.end(),
                                     std::make_pair(ts, std::numeric_limits<int32_t>::min()));
          return it == v.begin() ? -1 : (it - 1)->second;
        };
        for (uint32_t r : sync_rows) {
          const int32_t record = record_of_corr[ev.bytes[r]];
          auto src_lane = lane_of_stream.find({ev.device[r], ev.PythonId(r)});
          if (record < 0 || src_lane == lane_of_stream.end()) continue;
          const int32_t src = last_launched_before(src_lane->second, ev.ts[record]);
          if (src < 0) continue;
          const int32_t call = ev.link[r] >= 0 ? g.node_of_row[ev.link[r]] : -1;
          const std::string_view kind = trace.Name(r);
          if (kind == "Event Sync" && call >= 0) {
            event_sync_source[call] = src;
          } else if (kind == "Stream Wait Event" && call >= 0) {
            auto dst_lane = lane_of_stream.find({ev.device[r], ev.stream[r]});
            if (dst_lane == lane_of_stream.end()) continue;
            // The waiting stream's next activity launched after the wait was issued.
            const auto& v = launched[dst_lane->second].by_launch;
            auto it = std::lower_bound(
                v.begin(), v.end(),
                std::make_pair(g.obs_start[call], std::numeric_limits<int32_t>::min()));
            if (it == v.end() || it->second == src) continue;
            stream_waits.emplace_back(it->second, src);
          }
        }
      }
    }
  }

  void BlockingCopies() {
    // Blocking copies: async copy calls whose copy is pageable, or finished before the call.
    for (size_t n = 0; n < g.size(); ++n) {
      if (g.role[n] != NodeRole::kGpu || g.cross[n] < 0 ||
          ev.kind[g.row[n]] != EventKind::kMemcpy) {
        continue;
      }
      const int32_t call = g.cross[n];
      // Its own launch call (activity without one follows the main thread instead).
      const int32_t launch_row = ev.link[g.row[n]];
      if (g.role[call] != NodeRole::kLaunch || launch_row < 0 ||
          g.node_of_row[launch_row] != call) {
        continue;
      }
      std::string_view cname = trace.Name(g.row[n]);
      const bool pageable = Contains(cname, "Pageable");
      const bool dtoh = IsD2H(cname);
      if (pageable || (dtoh && g.ObsEnd(n) <= g.ObsEnd(call))) {
        g.role[call] = NodeRole::kSync;
        pending_syncs.push_back(call);
      }
    }
  }

  // 3 (continued). The waits of every synchronising call.
  void SyncWaits() {
    std::sort(pending_syncs.begin(), pending_syncs.end());
    pending_syncs.erase(std::unique(pending_syncs.begin(), pending_syncs.end()),
                        pending_syncs.end());
    for (int32_t s : pending_syncs) {
      ++g.stats.syncs;
      const int64_t a = g.obs_start[s], b = g.ObsEnd(s);
      std::vector<int32_t> deps;
      const std::string_view name = trace.Name(g.row[s]);
      const int32_t own = ev.link[g.row[s]];
      if (own >= 0 &&
          !HasRuntimeFlag(name, kRuntimeSync | kRuntimeSyncCopy | kRuntimeImplicitSync)) {
        // An async copy that blocks: it waits for its own copy (stream order covers the rest).
        if (g.node_of_row[own] >= 0) deps.push_back(g.node_of_row[own]);
      } else if (auto precise = event_sync_source.find(s); precise != event_sync_source.end()) {
        // An event sync whose event the trace records: that activity alone.
        if (g.ObsEnd(precise->second) <= b + 2000) deps.push_back(precise->second);
      } else {
        // A synchronous copy (cudaMemcpy, hipMemcpyWithStream) also waits for its own copy, when
        // that starts before the call returns (its end may be recorded a little after: the
        // GPU's clock against the CPU's).
        if (own >= 0 && g.node_of_row[own] >= 0 && g.role[g.node_of_row[own]] == NodeRole::kGpu &&
            g.obs_start[g.node_of_row[own]] < b) {
          deps.push_back(g.node_of_row[own]);
        }
        for (const auto& l : launched) {
          auto it = std::lower_bound(l.by_launch.begin(), l.by_launch.end(),
                                     std::make_pair(a, std::numeric_limits<int32_t>::min()));
          if (it == l.by_launch.begin()) continue;
          const int32_t node = (it - 1)->second;
          if (g.ObsEnd(node) <= b + 2000) deps.push_back(node);
        }
      }
      int64_t wait_end = kNoTime;
      for (int32_t d : deps) wait_end = std::max(wait_end, g.ObsEnd(d));
      // A call that returns long after what it waits for, right as another stream's activity
      // ends, waited for that too (the legacy default stream's device-wide order, a driver that
      // serialises the staging copy behind the device's work): the latest such end, per stream.
      if (!deps.empty() && b - wait_end >= kInferredWaitMinNs) {
        for (const auto& lane : g.lanes) {
          if (!lane.gpu) continue;
          const int32_t v = LastEndingBy(g, lane, b);
          if (v < 0) continue;
          if (g.ObsEnd(v) <= std::max(a, wait_end) || b - g.ObsEnd(v) > kSyncReturnTailNs) {
            continue;
          }
          deps.push_back(v);
        }
        for (int32_t d : deps) wait_end = std::max(wait_end, g.ObsEnd(d));
      }
      for (int32_t d : deps) wait_pairs.emplace_back(s, d);
      if (wait_end != kNoTime && wait_end > a) {
        sync_tail.Set(s, b - wait_end);
        g.dur.Set(s, std::min(b - a, kSyncCostNs));
      } else {
        g.dur.Set(s, b - a);
        sync_tail.Set(s, 0);
        // A synchronize of a millisecond or more that waited for nothing the trace holds waited
        // for GPU work it lacks (a replayed graph's dropped kernels): not launch overhead.
        if (b - a >= kBlindSyncTailNs && g.cause[s] == Cause::kLaunch &&
            (call_flags[ev.name[g.row[s]]] & kRuntimeSync)) {
          g.cause[s] = Cause::kGpuWait;
        }
      }
    }
  }

  // The longest untraced gap of a secondary thread that still counts as its work in a join.
  static constexpr int64_t kBookkeepingGapNs = 50000;

  void Joins() {
    // 3b. Joins: a main-thread slice of at least 20 us during which a secondary thread or a GPU
    // stream was busy (80% or more) and which ended within 50 us (or 2% of the slice) of that work
    // ending: the main thread waited for it (autograd's backward thread, a helper thread, a sync
    // the trace does not record).
    {
      // GPU busy time over all streams (merged), for the coverage of a wait on the GPU.
      std::vector<Interval> gpu_busy;
      for (size_t v = 0; v < g.size(); ++v) {
        if (g.role[v] == NodeRole::kGpu) gpu_busy.emplace_back(g.obs_start[v], g.ObsEnd(v));
      }
      MergeIntervals(&gpu_busy);
      // Where the trace records the main thread's synchronize calls, it records every wait of
      // that thread for the GPU (the profiler records each runtime call, and a thread can only
      // wait for the GPU through one): a slice that merely ends as a copy or kernel does was not
      // waiting for it. Older traces record launches and copies but no synchronize calls; there
      // a silent wait (`.item()`, `print(loss)`) is inferred.
      bool main_syncs_recorded = false;
      for (int32_t s : pending_syncs) {
        if (g.lanes[g.LaneOf(s)].main && IsSyncCall(trace.Name(g.row[s]))) {
          main_syncs_recorded = true;
          break;
        }
      }
      for (int32_t m : main_nodes) {
        if (g.role[m] != NodeRole::kCpuWork) continue;
        const int64_t a = g.obs_start[m], b = g.ObsEnd(m);
        if (b - a < 20000) continue;
        // Waiting for the GPU without a recorded sync: only outside any operator (Python code or
        // the step annotation itself), where the thread had nothing else to do.
        const int32_t owner = g.row[m];
        const bool may_wait_for_gpu =
            !main_syncs_recorded && (owner < 0 || ev.kind[owner] != EventKind::kCpuOp);
        // Each other lane's latest node ending by |b| (a lane's nodes end in order) is a
        // candidate; the latest-ending one that qualifies is what the slice waited for.
        int32_t d = -1;
        for (const auto& l : g.lanes) {
          if (l.main || (l.gpu && !may_wait_for_gpu)) continue;
          const int32_t v = LastEndingBy(g, l, b);
          if (v < 0) continue;
          // The thread resumes within 50 us of the work's end, or 2% of a long wait (the Python
          // that returns from loss.backward() after a cold autograd pass).
          if (g.ObsEnd(v) <= a || b - g.ObsEnd(v) > std::max<int64_t>(50000, (b - a) / 50)) {
            continue;
          }
          if (d >= 0 && g.ObsEnd(v) <= g.ObsEnd(d)) continue;
          // A wait for a stream ends when the stream runs dry: one still running work that started
          // before the slice ended was not what the thread waited for (a gap in the middle of a
          // long run of collectives or kernels is the thread's own time).
          if (l.gpu && v + 1 < l.end_node && g.obs_start[v + 1] < b) continue;
          int64_t covered = l.gpu ? ClippedLength(gpu_busy, a, b) : 0;
          int64_t later_op_start = -1;  // the start of the lane's op node after |u|, -1
          for (int32_t u = v; !l.gpu && u >= 0 && g.ObsEnd(u) > a; u = g.LanePrev(u)) {
            // A thread blocked in a wait or a sleep was not working for the main thread. A short
            // gap between two of its framework ops is its own bookkeeping (the autograd engine
            // between two nodes, 10-30 us a node under the profiler), part of the work.
            const bool idle = g.row[u] >= 0 && (name_class[ev.name[g.row[u]]] & kNameIdleWait);
            const bool op = g.row[u] >= 0 && ev.kind[g.row[u]] == EventKind::kCpuOp;
            if (g.cause[u] != Cause::kUntraced && !idle) {
              covered += std::min(b, g.ObsEnd(u)) - std::max(a, g.obs_start[u]);
              if (op && later_op_start >= 0 && later_op_start - g.ObsEnd(u) <= kBookkeepingGapNs) {
                covered +=
                    std::max<int64_t>(0, std::min(b, later_op_start) - std::max(a, g.ObsEnd(u)));
              }
            }
            later_op_start = op && !idle ? g.obs_start[u] : -1;
          }
          if (static_cast<double>(covered) >= 0.8 * static_cast<double>(b - a)) d = v;
        }
        if (d < 0) continue;
        g.role[m] = NodeRole::kJoin;
        g.dur.Set(m, 0);
        sync_tail.Set(m, b - g.ObsEnd(d));
        wait_pairs.emplace_back(m, d);
      }
    }
  }

  void HelperWaits() {
    // 3b'. A secondary thread's idle wait (AddCpuLane) ends when the main thread had done what
    // it had done by then: a join on the main thread's last node ending by then, so that it
    // moves with the main thread in a what-if instead of holding its recorded length.
    const CausalGraph::Lane* main_lane = nullptr;
    for (const auto& l : g.lanes) {
      if (l.main) main_lane = &l;
    }
    if (main_lane == nullptr) return;
    for (int32_t n : helper_waits) {
      const int64_t b = g.ObsEnd(n);
      const int32_t d = LastEndingBy(g, *main_lane, b);
      if (d < 0 || g.ObsEnd(d) <= g.obs_start[n]) continue;
      g.role[n] = NodeRole::kJoin;
      g.dur.Set(n, 0);
      sync_tail.Set(n, b - g.ObsEnd(d));
      wait_pairs.emplace_back(n, d);
    }
  }

  void RecordedStreamWaits() {
    // 3c. Recorded stream waits: the waiting activity starts after the awaited one ends (plus the
    // observed gap where that wait is what held it: the awaited activity ended after the waiting
    // stream's previous activity and after the launch call started; then the stream order and
    // the launch become lower bounds, as for an activity queued behind another).
    for (const auto& [dst, src] : stream_waits) {
      if (g.ObsEnd(src) > g.obs_start[dst]) continue;  // inconsistent clocks: no edge
      const int32_t prev = g.LanePrev(dst), launch = g.cross[dst];
      const bool binding = (prev < 0 || g.ObsEnd(src) >= g.ObsEnd(prev)) &&
                           (launch < 0 || g.ObsEnd(src) >= g.obs_start[launch]);
      if (binding) {
        sync_tail.Set(dst, g.obs_start[dst] - g.ObsEnd(src));
        if (prev >= 0) g.lane_gap.Set(dst, std::min(g.lane_gap[dst], natural_gap));
        if (launch >= 0) g.cross_gap.Set(dst, std::min(g.cross_gap[dst], typical_latency));
      } else {
        sync_tail.Set(dst, 0);
      }
      wait_pairs.emplace_back(dst, src);
      ++g.stats.stream_waits;
    }
  }

  void InferredStreamWaits() {
    // 3d. Inferred stream waits (traces without cuda_sync records: a cudaStreamWaitEvent leaves no
    // edge). An activity that started at least kInferredWaitMinNs after both its stream's previous
    // activity and its launch call ended, within kInferredWaitTailNs of another stream's activity
    // ending, waited for that activity (a compute stream behind a collective, or the reverse).
    {
      std::vector<uint8_t> has_wait(g.size(), 0);
      for (const auto& [dst, src] : stream_waits) has_wait[dst] = 1;
      for (const auto& lane : g.lanes) {
        if (!lane.gpu) continue;
        for (int32_t dst = lane.first_node; dst < lane.end_node; ++dst) {
          const int64_t start = g.obs_start[dst];
          // Activity without a launch call (following the main thread) has no launch to wait on.
          const int32_t prev = g.LanePrev(dst),
                        launch = ev.link[g.row[dst]] >= 0 ? g.cross[dst] : -1;
          if (has_wait[dst] || (prev < 0 && launch < 0)) continue;
          if (prev >= 0 && start - g.ObsEnd(prev) < kInferredWaitMinNs) continue;
          // A blocking copy's call returns only once its copy is done: its start is the launch.
          if (launch >= 0 &&
              start - (g.role[launch] == NodeRole::kSync ? g.obs_start[launch] : g.ObsEnd(launch)) <
                  kInferredWaitMinNs) {
            continue;
          }
          int32_t src = -1;
          for (const auto& other : g.lanes) {
            if (!other.gpu || &other == &lane) continue;
            const int32_t v = LastEndingBy(g, other, start);
            if (v < 0) continue;
            if (start - g.ObsEnd(v) > kInferredWaitTailNs) continue;
            if (src < 0 || g.ObsEnd(v) > g.ObsEnd(src)) src = v;
          }
          if (src < 0) continue;
          sync_tail.Set(dst, start - g.ObsEnd(src));
          if (prev >= 0) g.lane_gap.Set(dst, std::min(g.lane_gap[dst], natural_gap));
          if (launch >= 0) g.cross_gap.Set(dst, std::min(g.cross_gap[dst], typical_latency));
          wait_pairs.emplace_back(dst, src);
          ++g.stats.inferred_stream_waits;
        }
      }
    }
  }

  void RebaseOnSyncs() {
    // A node that starts relative to a sync call's start follows the call's lane predecessor
    // instead: the call's end waits for GPU work, which may itself follow the call's start.
    for (size_t v = 0; v < g.size(); ++v) {
      const int32_t c = g.cross[v];
      if (c < 0 || (g.role[c] != NodeRole::kSync && g.role[c] != NodeRole::kJoin) ||
          g.cross[c] >= 0) {
        continue;
      }
      if (g.LanePrev(c) < 0) {
        g.cross[v] = -1;
        if (g.LanePrev(v) < 0) continue;  // anchored at its recorded start
        g.lane_gap.Set(v, g.obs_start[v] - g.ObsEnd(g.LanePrev(v)));
        continue;
      }
      g.cross_gap.Set(v, g.cross_gap[v] + g.lane_gap[c]);
      g.cross[v] = g.LanePrev(c);
      g.cross_from_end[v] = 1;
    }
  }

  // The wait edges, as the graph's compressed lists.
  void StoreWaits() {
    assert(sync_tail.size() == g.size());  // no node added after BuildCausalGraph sized it
    std::sort(wait_pairs.begin(), wait_pairs.end());
    std::vector<int32_t> waiting(wait_pairs.size());
    for (size_t i = 0; i < wait_pairs.size(); ++i) waiting[i] = wait_pairs[i].first;
    g.wait_ranges.Build(g.size(), waiting);
    g.waits.resize(wait_pairs.size());
    g.wait_tail.resize(wait_pairs.size());
    for (size_t i = 0; i < wait_pairs.size(); ++i) {
      g.waits[i] = wait_pairs[i].second;
      g.wait_tail[i] = sync_tail[wait_pairs[i].first];
    }
    sync_tail.Release();  // the graph keeps one value per wait
  }

  void TopologicalOrder() {
    // 4. A topological order (iterative DFS over predecessors); an edge that would close a cycle
    // (possible only with inconsistent timestamps) is dropped and counted.
    const size_t n_nodes = g.size();
    std::vector<uint8_t> state(n_nodes, 0);  // 0 new, 1 on the stack, 2 done
    g.order.reserve(n_nodes);
    std::vector<std::pair<int32_t, uint32_t>> stack;  // (node, next predecessor to look at)
    auto pred = [&](int32_t n, uint32_t k, int32_t* out) -> bool {
      // Predecessor number k of n: 0 lane, 1 cross, 2.. waits.
      if (k == 0) {
        *out = g.LanePrev(n);
        return true;
      }
      if (k == 1) {
        *out = g.cross[n];
        return true;
      }
      const auto [first, last] = g.WaitsOf(n);
      const uint32_t w = first + (k - 2);
      if (w >= last) return false;
      *out = g.waits[w];
      return true;
    };
    for (size_t root = 0; root < n_nodes; ++root) {
      if (state[root]) continue;
      stack.emplace_back(static_cast<int32_t>(root), 0);
      state[root] = 1;
      while (!stack.empty()) {
        auto& [n, k] = stack.back();
        int32_t p = -1;
        if (!pred(n, k, &p)) {
          state[n] = 2;
          g.order.push_back(n);
          stack.pop_back();
          continue;
        }
        const uint32_t which = k++;
        if (p < 0 || state[p] == 2) continue;
        if (state[p] == 1) {
          ++g.stats.cycles_broken;
          if (which == 0) {
            g.has_lane_prev[n] = false;
          } else if (which == 1) {
            g.cross[n] = -1;
          } else {
            g.waits[g.WaitsOf(n).first + which - 2] = n;  // a self-wait is ignored by the replay
          }
          continue;
        }
        state[p] = 1;
        stack.emplace_back(p, 0);
      }
    }
  }

  // Whether |row| is, or runs inside, a recorded op or annotation on its thread.
  bool InsideRecordedOp(int32_t row) const {
    for (int depth = 0; row >= 0 && depth < 1024; ++depth, row = ev.parent[row]) {
      if (ev.kind[row] == EventKind::kCpuOp || ev.kind[row] == EventKind::kUserAnnotation) {
        return true;
      }
    }
    return false;
  }

  void StepBounds() {
    const std::vector<StepSpan>& spans = g.spans;
    const size_t n_nodes = g.size();
    // 5. The nodes that bound each analysed step.
    g.steps.resize(spans.size());
    if (!spans.empty() && spans.front().marker_track >= 0 && !main_nodes.empty()) {
      for (size_t k = 0; k < spans.size(); ++k) {
        CausalGraph::StepNodes& sn = g.steps[k];
        sn.start_node = NodeAt(g, main_nodes, spans[k].start_ns);
        if (sn.start_node >= 0) sn.start_offset = spans[k].start_ns - g.obs_start[sn.start_node];
        sn.end_node = NodeAt(g, main_nodes, spans[k].cpu_end_ns - 1);
        if (sn.end_node >= 0) sn.end_offset = spans[k].cpu_end_ns - g.ObsEnd(sn.end_node);
      }
      for (size_t n = 0; n < n_nodes; ++n) {
        if (g.role[n] != NodeRole::kGpu || g.cross[n] < 0) continue;
        // Its launch call's start; activity without one (following the main thread) its own.
        const int32_t launch_row = ev.link[g.row[n]];
        const int64_t lts = launch_row >= 0 ? ev.ts[launch_row] : g.obs_start[n];
        const int32_t k = SpanStartingBy(spans, lts);
        if (k >= 0 && lts < spans[k].cpu_end_ns) g.steps[k].gpu.push_back(static_cast<int32_t>(n));
      }
    } else if (spans.size() == 1) {
      // One span without steps in a GPU run: a CPU thread that no other lane follows or waits
      // for (a runtime's housekeeping thread, a Python frame wrapping the whole run on a thread
      // of its own) does not bound it. In a CPU-only run every thread does: the busiest one, the
      // main thread, need not be the user's loop.
      const bool any_gpu = std::any_of(g.lanes.begin(), g.lanes.end(),
                                       [](const CausalGraph::Lane& l) { return l.gpu; });
      if (!any_gpu) return;
      std::vector<uint8_t> depended_on(g.lanes.size(), 0);
      std::vector<int32_t> last_depended(g.lanes.size(), -1);  // its last node another follows
      for (size_t l = 0; l < g.lanes.size(); ++l) {
        const CausalGraph::Lane& lane = g.lanes[l];
        auto mark = [&](int32_t to) {
          if (to >= 0 && (to < lane.first_node || to >= lane.end_node)) {
            depended_on[g.LaneOf(to)] = 1;
            last_depended[g.LaneOf(to)] = std::max(last_depended[g.LaneOf(to)], to);
          }
        };
        for (int32_t n = lane.first_node; n < lane.end_node; ++n) {
          mark(g.cross[n]);
          const auto [first, last] = g.WaitsOf(n);
          for (uint32_t w = first; w < last; ++w) mark(g.waits[w]);
        }
      }
      int64_t gpu_end = kNoTime;  // the recorded GPU activity's end
      for (const CausalGraph::Lane& lane : g.lanes) {
        if (!lane.gpu) continue;
        for (int32_t n = lane.first_node; n < lane.end_node; ++n) {
          gpu_end = std::max(gpu_end, g.ObsEnd(n));
        }
      }
      for (size_t l = 0; l < g.lanes.size(); ++l) {
        CausalGraph::Lane& lane = g.lanes[l];
        lane.bounds_run = lane.main || lane.gpu || depended_on[l];
        if (lane.gpu || !lane.bounds_run) continue;
        // The lane's last node that is recorded work: inside an op or annotation, or a launch
        // of GPU work. Without any (runtime calls only), the whole lane bounds the run; so it
        // does when a call after it waits beyond the recorded GPU activity (for work the trace
        // lacks: TTA016).
        int32_t last_work = -1;
        bool unexplained_wait = false;
        for (int32_t n = lane.end_node - 1; n >= lane.first_node; --n) {
          const int32_t row = g.row[n];
          const bool launches = g.role[n] == NodeRole::kLaunch && row >= 0 &&
                                static_cast<size_t>(row) < g.launches_gpu.size() &&
                                g.launches_gpu[row];
          if (launches || (row >= 0 && InsideRecordedOp(row))) {
            last_work = n;
            break;
          }
          if (g.role[n] == NodeRole::kSync &&
              g.ObsEnd(n) - std::max(g.obs_start[n], gpu_end) > kTrailingSyncOwnCostNs) {
            unexplained_wait = true;
          }
        }
        if (last_work >= 0 && !unexplained_wait) lane.bound_end_node = last_work + 1;
        // A thread of Python frames only (a multiprocessing queue's feeder handing the
        // DataLoader's workers their indices, then waiting on its lock until the process ends)
        // bounds the run up to the last node another lane follows.
        if (last_work < 0 && !unexplained_wait && !lane.main && ops_recorded &&
            last_depended[l] >= lane.first_node && LaneOnlyPython(lane)) {
          lane.bound_end_node = last_depended[l] + 1;
        }
      }
    }
  }

  // Whether every node of |lane| with a row is a Python frame or inside one (no op, annotation
  // or runtime call).
  bool LaneOnlyPython(const CausalGraph::Lane& lane) const {
    for (int32_t n = lane.first_node; n < lane.end_node; ++n) {
      const int32_t row = g.row[n];
      if (row >= 0 && ev.kind[row] != EventKind::kPythonFunction) return false;
    }
    return true;
  }

  const Trace& trace;
  const EventTable& ev;
  CausalGraph& g;
  const size_t n_rows;
  // IndexRows
  std::vector<std::vector<uint32_t>> rows_of;  // per track, in table order (ts, longer first)
  std::vector<uint8_t> name_class;             // NameClass bits per name id
  std::vector<uint8_t> keep_row;               // rows whose boundaries stay node boundaries
  int64_t cold_launch_ns = 0;
  int64_t cold_graph_launch_ns = 0;  // the same for graph launches (cudaGraphLaunch)
  bool ops_recorded = false;  // any op, annotation or Python frame: the CPU activity was profiled
  // The run launched with CUDA_LAUNCH_BLOCKING=1: each launch call returns when its kernel ends.
  bool launches_block = false;
  std::vector<uint32_t> call_flags;  // RuntimeCallFlags per name id
  // Graphs are captured once and replayed (more graph launches than captures): the captures,
  // their instantiation and the CPU work during them are one-time.
  bool one_time_capture = false;
  // ChooseThreads
  int64_t main_track = -1;
  bool warming_allocator = false;
  // The first step's span when its allocator calls are warm-up the later steps do not repeat
  // (empty when they do, or with one step).
  std::pair<int64_t, int64_t> warming_first_step{0, 0};
  std::vector<uint32_t> cpu_tracks;  // the main thread's first
  // AddCpuLane
  std::vector<int32_t> main_nodes;
  std::vector<int32_t> pending_syncs;  // sync nodes whose awaited work SyncWaits resolves
  // AddGpuLanes
  int64_t typical_latency = 0;  // launch latency of activities that found their stream idle
  int64_t natural_gap = 0;      // stream gap between queued activities
  // IndexLaunches, RecordedEventWaits
  std::vector<LaunchedOn> launched;                       // per lane
  std::map<int32_t, int32_t> event_sync_source;           // sync call node -> GPU node
  std::vector<std::pair<int32_t, int32_t>> stream_waits;  // (GPU node, GPU node it waits for)
  // Every pass that finds a wait: (waiting node, awaited node).
  std::vector<std::pair<int32_t, int32_t>> wait_pairs;
  // Per node, until StoreWaits: sync and join nodes' end minus the awaited work's end; GPU
  // nodes with a stream wait: their start minus it (CausalGraph::wait_tail).
  NarrowInt64Column sync_tail;
};

}  // namespace

CausalGraph BuildCausalGraph(const Trace& trace, const std::vector<int32_t>& keep_rows,
                             const std::vector<FirstCall>* first_calls, ColdStartCut cut) {
  CausalGraph g;
  const size_t n_rows = trace.events.size();
  g.node_of_row.assign(n_rows, -1);
  g.launches_gpu.assign(n_rows, 0);
  if (n_rows == 0) return g;
  g.Reserve(2 * n_rows);
  GraphBuilder b(trace, &g);
  b.cut = cut;
  b.IndexRows(keep_rows, first_calls);
  b.ChooseThreads();
  for (uint32_t track : b.cpu_tracks) b.AddCpuLane(track);
  b.AddGpuLanes();
  b.sync_tail.assign(g.size(), 0);
  b.IndexLaunches();
  b.RecordedEventWaits();
  b.BlockingCopies();
  b.SyncWaits();
  b.Joins();
  b.HelperWaits();
  b.RecordedStreamWaits();
  b.InferredStreamWaits();
  b.RebaseOnSyncs();
  b.StoreWaits();
  b.TopologicalOrder();
  b.StepBounds();
  return g;
}

int64_t Replay::total_step_ns() const {
  int64_t t = 0;
  for (size_t k = 0; k < step_start.size(); ++k) t += step_end[k] - step_start[k];
  return t;
}

namespace {

// Calls |fn| on each node of the lanes that bound a run without steps (Lane::bounds_run), or of
// every lane when those hold no node; with its cold start analysed apart, only the nodes of its
// warm part. The replay's span and the attribution's last node.
template <typename Fn>
void ForEachNodeBoundingRun(const CausalGraph& g, Fn&& fn) {
  const bool any = std::any_of(g.lanes.begin(), g.lanes.end(), [](const CausalGraph::Lane& l) {
    return l.bounds_run && l.first_node < l.end_node;
  });
  for (const CausalGraph::Lane& lane : g.lanes) {
    if (any && !lane.bounds_run) continue;
    for (int32_t v = lane.first_node; v < (any ? lane.BoundEnd() : lane.end_node); ++v) {
      if (g.obs_start[v] >= g.warm_from_ns) fn(v);
    }
  }
}

}  // namespace

Replay RunReplay(const CausalGraph& g, const WhatIf* what_if) {
  Replay r;
  RunReplay(g, what_if, &r);
  return r;
}

void RunReplay(const CausalGraph& g, const WhatIf* what_if, Replay* out) {
  std::vector<const WhatIf*> parts;
  if (what_if) parts.push_back(what_if);
  RunReplay(g, parts, out);
}

void RunReplay(const CausalGraph& g, const std::vector<const WhatIf*>& what_ifs, Replay* out) {
  const size_t n = g.size();
  Replay& r = *out;
  r.end.resize(n);
  r.len.resize(n);
  r.len.BeginPass();  // each node's length is written once below
  // The what-if's changes, merged per node (several entries for one node: the smallest wins).
  // Durations: a few are kept in the change list; when the lists change many (a chain of fixes),
  // a copy of the duration column takes them instead, so the list never holds most of the graph
  // (32 bytes a node, faulted in by every replay memory that first meets it). A what-if's dense
  // columns (a fix that changes most of the graph) are read as they are.
  constexpr int64_t kKeep = std::numeric_limits<int64_t>::max();  // no change of that value
  std::vector<Replay::Change>& changes = r.scratch_changes;
  std::vector<int32_t>& change_of = r.scratch_change_of;
  changes.clear();
  size_t dur_entries = 0;
  bool any_listed = false;  // a change in one of the lists
  std::vector<const ChangeColumn*> dense_durs, dense_cross_gaps;
  for (const WhatIf* what_if : what_ifs) {
    if (!what_if) continue;
    dur_entries += what_if->dur.size();
    any_listed = any_listed || !what_if->dur.empty() || !what_if->no_wait.empty() ||
                 !what_if->cross_gap.empty() || !what_if->lane_gap.empty();
    if (what_if->dense_dur.count() > 0) dense_durs.push_back(&what_if->dense_dur);
    if (what_if->dense_cross_gap.count() > 0) {
      dense_cross_gaps.push_back(&what_if->dense_cross_gap);
    }
  }
  // (Several what-ifs' own columns, as in a chain of fixes, are folded into the copy too: one
  // read a node instead of one a column.)
  const bool dense_dur = dur_entries > n / 16 || dense_durs.size() >= 2;
  const int64_t* scratch_dur = nullptr;
  if (dense_dur) {
    // Each changed node's smallest change (kKeep: none yet), then the graph's own duration
    // where nothing changed it.
    r.scratch_dur.assign(n, kKeep);
    int64_t* merged = r.scratch_dur.data();
    for (const WhatIf* what_if : what_ifs) {
      if (!what_if) continue;
      for (const auto& [node, d] : what_if->dur) {
        if (node < 0 || static_cast<size_t>(node) >= n) continue;
        merged[node] = std::min(merged[node], std::max<int64_t>(0, d));
      }
      what_if->dense_dur.ForEach([&](int32_t node, int64_t d) {
        merged[node] = std::min(merged[node], std::max<int64_t>(0, d));
      });
    }
    const NarrowInt64Column::View own = g.dur.view();
    for (size_t v = 0; v < n; ++v) {
      if (merged[v] == kKeep) merged[v] = own[v];
    }
    scratch_dur = r.scratch_dur.data();
    dense_durs.clear();  // in the copy already
  }
  for (const WhatIf* what_if : what_ifs) {
    if (!what_if || !any_listed) continue;
    if (change_of.size() != n) change_of.assign(n, -1);
    auto slot = [&](int32_t node) -> Replay::Change* {
      if (node < 0 || static_cast<size_t>(node) >= n) return nullptr;
      int32_t& i = change_of[node];
      if (i < 0) {
        i = static_cast<int32_t>(changes.size());
        changes.push_back({node, false, kKeep, kKeep, kKeep});
      }
      return &changes[i];
    };
    if (!dense_dur) {
      for (const auto& [node, d] : what_if->dur) {
        if (Replay::Change* c = slot(node)) c->dur = std::min(c->dur, d);
      }
    }
    for (const auto& [node, w] : what_if->cross_gap) {
      if (Replay::Change* c = slot(node)) c->cross_gap = std::min(c->cross_gap, w);
    }
    for (const auto& [node, w] : what_if->lane_gap) {
      if (Replay::Change* c = slot(node)) c->lane_gap = std::min(c->lane_gap, w);
    }
    for (int32_t node : what_if->no_wait) {
      if (Replay::Change* c = slot(node)) c->no_wait = true;
    }
  }
  const bool any_change = !changes.empty();
  const bool any_dense = !dense_durs.empty() || !dense_cross_gaps.empty();
  // The columns' views and the replay's own arrays, held in registers through the loop.
  const NarrowInt64Column::View graph_dur = g.dur.view(), graph_lane_gap = g.lane_gap.view(),
                                graph_cross_gap = g.cross_gap.view(), len = r.len.view();
  int64_t* end = r.end.data();
  auto end_of = [&](int32_t u) { return end[u]; };
  auto start_of = [&](int32_t u) { return end[u] - len[u]; };
  for (int32_t v : g.order) {
    int64_t dur = scratch_dur ? scratch_dur[v] : graph_dur[v], lane_gap = graph_lane_gap[v],
            cross_gap = graph_cross_gap[v];
    bool wait = g.role[v] == NodeRole::kSync || g.role[v] == NodeRole::kJoin;
    int64_t new_dur = kKeep;
    if (any_dense) {
      for (const ChangeColumn* c : dense_durs) {
        if (c->Has(v)) new_dur = std::min(new_dur, c->Get(v));
      }
      for (const ChangeColumn* c : dense_cross_gaps) {
        if (c->Has(v)) cross_gap = std::min(cross_gap, c->Get(v));
      }
    }
    if (any_change && change_of[v] >= 0) {
      const Replay::Change& c = changes[change_of[v]];
      new_dur = std::min(new_dur, c.dur);
      lane_gap = std::min(lane_gap, c.lane_gap);
      cross_gap = std::min(cross_gap, c.cross_gap);
      wait = wait && !c.no_wait;
    }
    if (new_dur != kKeep) dur = std::max<int64_t>(0, new_dur);
    int64_t s = kNoTime;
    if (g.LanePrev(v) >= 0) s = end_of(g.LanePrev(v)) + lane_gap;
    if (g.cross[v] >= 0) {
      s = std::max(s,
                   (g.cross_from_end[v] ? end_of(g.cross[v]) : start_of(g.cross[v])) + cross_gap);
    }
    const bool gpu = g.role[v] == NodeRole::kGpu;
    const auto [first_wait, last_wait] =
        gpu || wait ? g.WaitsOf(v) : std::pair<uint32_t, uint32_t>{0, 0};
    if (gpu) {  // recorded stream waits hold the start
      for (uint32_t w = first_wait; w < last_wait; ++w) {
        if (g.waits[w] != v) s = std::max(s, end_of(g.waits[w]) + g.wait_tail[w]);
      }
    }
    if (s == kNoTime) s = g.obs_start[v];
    int64_t e = s + dur;
    if (wait) {
      for (uint32_t w = first_wait; w < last_wait; ++w) {
        const int32_t d = g.waits[w];
        if (d != v) e = std::max(e, end_of(d) + g.wait_tail[w]);
      }
    }
    end[v] = e;
    r.len.SetOnce(v, e - s);
  }
  r.len.EndPass();
  for (const Replay::Change& c : changes) change_of[c.node] = -1;
  // Steps, as the trace builder defines them: from the step's CPU start to the later of its CPU
  // end and the end of the GPU work it launched (clipped at the next step's start).
  const size_t k_steps = g.steps.size();
  r.step_start.assign(k_steps, 0);
  r.step_end.assign(k_steps, 0);
  std::vector<int64_t> cpu_end(k_steps), gpu_end(k_steps);
  for (size_t k = 0; k < k_steps; ++k) {
    const auto& sn = g.steps[k];
    if (sn.start_node < 0 || sn.end_node < 0) {
      // The whole span of a trace without steps.
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = kNoTime;
      ForEachNodeBoundingRun(g, [&](int32_t v) {
        lo = std::min(lo, r.Start(v));
        hi = std::max(hi, r.end[v]);
      });
      r.step_start[k] = n ? lo : 0;
      r.step_end[k] = n ? hi : 0;
      cpu_end[k] = gpu_end[k] = r.step_end[k];
      continue;
    }
    r.step_start[k] = std::min(r.Start(sn.start_node) + sn.start_offset, r.end[sn.start_node]);
    cpu_end[k] = std::max(r.Start(sn.end_node), r.end[sn.end_node] + sn.end_offset);
    gpu_end[k] = cpu_end[k];
    for (int32_t v : sn.gpu) gpu_end[k] = std::max(gpu_end[k], r.end[v]);
  }
  // The run is not over before the GPU work it launched is: the last step ends no earlier than
  // any analysed step's GPU work (a what-if that lets the CPU run ahead, e.g. a deferred sync,
  // must not end the run while that work still runs).
  int64_t all_gpu_end = kNoTime;
  for (size_t k = 0; k < k_steps; ++k) all_gpu_end = std::max(all_gpu_end, gpu_end[k]);
  for (size_t k = 0; k < k_steps; ++k) {
    int64_t ge = gpu_end[k];
    if (k + 1 < k_steps && g.steps[k].start_node >= 0) {
      ge = std::min(ge, std::max(cpu_end[k], r.step_start[k + 1]));
    } else if (k + 1 == k_steps) {
      ge = std::max(ge, all_gpu_end);
    }
    r.step_end[k] = std::max(cpu_end[k], ge);
  }
}

int64_t StepAttribution::total() const {
  int64_t t = 0;  // saturating: a fuzzed clock's steps can add past int64
  for (int64_t v : ns) {
    if (__builtin_add_overflow(t, v, &t)) return std::numeric_limits<int64_t>::max();
  }
  return t;
}

int64_t StepAttribution::gpu_ns() const {
  int64_t t = 0;
  for (Cause c : {Cause::kGpuMatmul, Cause::kGpuKernel, Cause::kCommunication, Cause::kMemcpy,
                  Cause::kMemset}) {
    if (__builtin_add_overflow(t, ns[static_cast<int>(c)], &t)) {
      return std::numeric_limits<int64_t>::max();
    }
  }
  return t;
}

std::vector<StepAttribution> AttributeSteps(const Trace& trace, const CausalGraph& g,
                                            const Replay& r) {
  const EventTable& ev = trace.events;
  std::vector<StepAttribution> out(g.steps.size());
  // The node whose end is latest in each step (the end of its critical path).
  for (size_t k = 0; k < g.steps.size(); ++k) {
    StepAttribution& at = out[k];
    const int64_t S = r.step_start[k];
    int64_t t = r.step_end[k];
    int32_t n = -1;
    const auto& sn = g.steps[k];
    if (sn.start_node < 0 || sn.end_node < 0) {
      // The whole span of a trace without steps (a step the main thread does not bound, in a
      // malformed trace, stays untraced).
      if (g.steps.size() == 1) {
        ForEachNodeBoundingRun(g, [&](int32_t v) {
          if (n < 0 || r.end[v] > r.end[n]) n = v;
        });
      }
    } else {
      n = sn.end_node;
      for (int32_t v : sn.gpu) {
        if (r.end[v] > r.end[n] && r.Start(v) < t) n = v;
      }
      // The step ends at the next step's start while its GPU work continues: the main thread
      // is what runs at that moment when no GPU node does.
      if (r.end[n] < t && n == sn.end_node && k + 1 < g.steps.size()) {
        n = g.steps[k + 1].start_node;
      }
    }
    std::map<StringId, int64_t> ops;
    auto add = [&](Cause c, int64_t a, int64_t b, int32_t node) {
      if (b <= a) return;
      at.ns[static_cast<int>(c)] += b - a;
      if (c == Cause::kCpuWork && node >= 0 && g.row[node] >= 0) {
        // Attribute CPU work to the outermost op under the step (aten::..., Optimizer.step...).
        const int32_t top = TopOpOf(trace, g.row[node]);
        ops[ev.name[top >= 0 ? top : g.row[node]]] += b - a;
      }
    };
    size_t guard = 4 * g.size() + 16;
    while (n >= 0 && t > S && guard-- > 0) {
      if (t > r.end[n]) {
        add(Cause::kUntraced, r.end[n], t, -1);
        t = std::max(S, r.end[n]);
        if (t <= S) break;
      }
      // A synchronisation that ended because the awaited work did.
      const bool waits = g.role[n] == NodeRole::kSync || g.role[n] == NodeRole::kJoin;
      if (waits && r.end[n] > r.Start(n) + g.dur[n]) {
        int32_t dep = -1;
        const auto [first, last] = g.WaitsOf(n);
        for (uint32_t w = first; w < last; ++w) {
          const int32_t d = g.waits[w];
          if (d != n && (dep < 0 || r.end[d] > r.end[dep])) dep = d;
        }
        if (dep >= 0) {
          const int64_t a = std::max(S, std::min(t, r.end[dep]));
          // An allocator call's time after what it waited for is its own work (the free, the
          // context a first cudaFree creates), beyond a synchronize's usual return.
          if (g.role[n] == NodeRole::kSync &&
              (g.cause[n] == Cause::kColdStart || g.cause[n] == Cause::kAllocator) &&
              t > a + kSyncReturnTailNs) {
            add(g.cause[n], a + kSyncReturnTailNs, t, n);
            t = a + kSyncReturnTailNs;
          }
          // A synchronize that returned a millisecond or more after what it waited for waited
          // for work the trace lacks: the GPU's unexplained time, not the host's sync. (A copy
          // call's tail is its own: a pageable download's copy out of the staging buffer.)
          add(g.role[n] != NodeRole::kSync ? g.cause[n]
              : t - a >= kBlindSyncTailNs && g.row[n] >= 0 &&
                      HasRuntimeFlag(trace.Name(g.row[n]), kRuntimeSync)
                  ? Cause::kGpuWait
                  : Cause::kHostSync,
              a, t, n);
          t = a;
          n = dep;
          continue;
        }
      }
      const int64_t a = std::max(S, std::min(t, r.Start(n)));
      add(g.cause[n], a, t, n);
      t = a;
      if (t <= S) break;
      const int32_t lp = g.LanePrev(n), cp = g.cross[n];
      const int64_t lane_term = lp >= 0 ? r.end[lp] + g.lane_gap[n] : kNoTime;
      const int64_t cross_base =
          cp >= 0 ? (g.cross_from_end[n] ? r.end[cp] : r.Start(cp)) : kNoTime;
      const int64_t cross_term = cp >= 0 ? cross_base + g.cross_gap[n] : kNoTime;
      const bool gpu = g.role[n] == NodeRole::kGpu;
      // A recorded stream wait that held the start: the awaited activity is on the path.
      int32_t awaited = -1;
      int64_t wait_term = kNoTime;
      const auto [first_wait, last_wait] = gpu ? g.WaitsOf(n) : std::pair<uint32_t, uint32_t>{0, 0};
      for (uint32_t w = first_wait; w < last_wait; ++w) {
        const int32_t d = g.waits[w];
        if (d != n && r.end[d] + g.wait_tail[w] > wait_term) {
          wait_term = r.end[d] + g.wait_tail[w];
          awaited = d;
        }
      }
      if (awaited >= 0 && wait_term >= lane_term && wait_term >= cross_term) {
        const int64_t b = std::max(S, std::min(t, r.end[awaited]));
        add(Cause::kGpuGap, b, t, -1);
        t = b;
        n = awaited;
        continue;
      }
      const bool use_cross =
          cp >= 0 && (cross_term > lane_term || (!gpu && cross_term == lane_term));
      // GPU activity without a launch call follows the main thread's node |cp| (AddGpuLanes):
      // what ran there is on the path, not a launch.
      const bool follows_main =
          gpu && cp >= 0 && g.role[cp] == NodeRole::kCpuWork && !g.cross_from_end[n];
      if (use_cross) {
        if (gpu && !follows_main) {
          const int64_t b = std::max(S, std::min(t, cross_base));
          // The launch call itself (or its lazy loading); a latency far beyond the call and the
          // usual launch latency is the stream waiting for work the trace does not show.
          const int64_t call_end = g.cross_from_end[n] ? b : std::min(t, std::max(b, r.end[cp]));
          // (Latencies are capped so hostile timestamps cannot overflow the sum.)
          const int64_t usual =
              call_end + std::max<int64_t>(100000, 10 * std::min(g.typical_latency, kLatencyCapNs));
          // After a cold launch (a first call's, a lazy load), the device's own start-up is the
          // rest of the latency: one-time too.
          if (t > usual && g.cause[cp] != Cause::kColdStart) {
            add(Cause::kGpuWait, usual, t, -1);
            t = usual;
          }
          add(g.cause[cp] == Cause::kColdStart ? Cause::kColdStart : Cause::kLaunch, b, t, cp);
          t = b;
        }
        n = cp;  // a secondary thread: the main thread was running |cp| at time t
      } else if (lp >= 0) {
        const int64_t b = std::max(S, std::min(t, r.end[lp]));
        // A long idle gap between queued activities is a wait the trace does not explain (a
        // dependency it does not record, or GPU timestamps offset from the CPU's).
        add(!gpu                        ? Cause::kUntraced
            : t - b <= kLongStreamGapNs ? Cause::kGpuGap
                                        : Cause::kGpuWait,
            b, t, -1);
        t = b;
        n = lp;
      } else {
        add(Cause::kUntraced, S, t, -1);
        t = S;
      }
    }
    if (t > S) add(Cause::kUntraced, S, t, -1);
    for (auto& [name, ns] : ops) at.cpu_ops.emplace_back(name, ns);
    std::sort(at.cpu_ops.begin(), at.cpu_ops.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  return out;
}

TimeBreakdown WhereTimeWent(const Trace& trace) {
  CausalGraph g = BuildCausalGraph(trace);
  // Per trace row, for the what-ifs only: the replay and the attribution do without them.
  std::vector<int32_t>().swap(g.node_of_row);
  std::vector<uint8_t>().swap(g.launches_gpu);
  Replay r = RunReplay(g);
  return WhereTimeWent(trace, g, r);
}

TimeBreakdown WhereTimeWent(const Trace& trace, const CausalGraph& g, const Replay& r) {
  TimeBreakdown out;
  const std::vector<StepSpan>& spans = g.spans;
  out.steps = AttributeSteps(trace, g, r);
  std::map<StringId, int64_t> ops;
  for (size_t k = 0; k < out.steps.size(); ++k) {
    out.step_numbers.push_back(k < spans.size() ? spans[k].number : -1);
    // Sums saturate: a trace's clock may span up to 2^62 ns (kMaxTimestampNs), and steps
    // that long add past int64.
    auto add = [](int64_t* total, int64_t v) {
      if (__builtin_add_overflow(*total, v, total)) *total = std::numeric_limits<int64_t>::max();
    };
    for (int c = 0; c < kCauseCount; ++c) add(&out.overall.ns[c], out.steps[k].ns[c]);
    for (auto& [name, ns] : out.steps[k].cpu_ops) add(&ops[name], ns);
    if (!trace.steps.empty() && k < spans.size()) {
      const int64_t rec = spans[k].end_ns - spans[k].start_ns;
      const int64_t rep = r.step_end[k] - r.step_start[k];
      if (rec > 0) {
        out.replay_max_error =
            std::max(out.replay_max_error, std::abs(static_cast<double>(rep - rec)) / rec);
      }
    }
  }
  for (auto& [name, ns] : ops) out.overall.cpu_ops.emplace_back(name, ns);
  std::sort(out.overall.cpu_ops.begin(), out.overall.cpu_ops.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.overall.cpu_ops.size() > 10) out.overall.cpu_ops.resize(10);
  return out;
}

std::string FormatCauses(const StepAttribution& a, size_t max_causes) {
  const int64_t total = a.total();
  if (total <= 0) return "";
  std::vector<std::pair<int64_t, int>> order;
  for (int c = 0; c < kCauseCount; ++c) {
    if (100.0 * a.ns[c] >= static_cast<double>(total)) order.emplace_back(a.ns[c], c);
  }
  std::sort(order.rbegin(), order.rend());
  std::string out;
  for (size_t i = 0; i < order.size() && i < max_causes; ++i) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%s %.0f%%", i ? ", " : "",
                  CauseDescription(static_cast<Cause>(order[i].second)),
                  100.0 * order[i].first / total);
    out += buf;
  }
  return out;
}

std::string CauseBar(const StepAttribution& a, int width) {
  static const char kLetter[] = {'G', 'G', 'C', 'M', 'M', '.', 'L',
                                 'S', 'D', 'A', 'P', 'W', '.', 'U'};
  static_assert(sizeof(kLetter) == kCauseCount, "one letter per cause");
  const int64_t total = a.total();
  if (total <= 0 || width <= 0) return "";
  std::map<char, int64_t> by_letter;
  for (int c = 0; c < kCauseCount; ++c) by_letter[kLetter[c]] += a.ns[c];
  std::vector<std::pair<int64_t, char>> order;
  for (auto& [letter, ns] : by_letter) order.emplace_back(ns, letter);
  std::sort(order.rbegin(), order.rend());
  std::string bar;
  double carried = 0;
  for (auto& [ns, letter] : order) {
    carried += static_cast<double>(ns) * width / total;
    while (static_cast<int>(bar.size()) < static_cast<int>(carried + 0.5)) bar += letter;
  }
  bar.resize(width, '.');
  return bar;
}

}  // namespace ttap

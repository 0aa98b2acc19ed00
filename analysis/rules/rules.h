// The rule catalogue (TTA001..TTA014, docs/antipatterns.md): each detector reads an immutable
// Trace through a RuleContext and appends Findings. RunRules runs them all, merges findings of
// one cause across steps, sets severities from the time lost, and scores the windows (until the
// learned model lands, window scores come from the rules). Called by `ttap scan` and the LSP's
// analysis worker; pure functions, any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/causal/causal_graph.h"
#include "analysis/model/findings.h"
#include "analysis/model/tensor_cores.h"
#include "analysis/model/trace.h"
#include "analysis/rules/rule_context.h"

namespace ttap {

struct RuleInfo {
  const char* code;
  const char* name;
  const char* summary;  // one line: what it is
  const char* fix;      // fix recipe id, or "" for none
};
// The catalogue in code order (the detectors' codes).
const std::vector<RuleInfo>& RuleCatalogue();
// Codes decided from the causal model (tta0NN_*.cpp, causal_detectors.h): TTA015 cold-start, TTA016
// trace-incomplete, TTA017 cpu-overhead-bound. Kept apart from RuleCatalogue(), whose codes the
// learned scorer's category head was trained on.
const std::vector<RuleInfo>& CauseRuleCatalogue();
// TTA900 "unusual-window": a window the learned scorer flags and no rule explains (added by
// `ttap scan --model`, server/scan.cpp); not a detector.
const RuleInfo& UnusualWindowRule();
// The catalogue entry or TTA900; nullptr for unknown codes.
const RuleInfo* FindRule(const std::string& code);

struct WindowScore {
  double score = 0;      // 0..1
  std::string category;  // code of the strongest finding in the window, empty for none
};

struct RuleResult {
  std::vector<Finding> findings;     // sorted: most time lost first
  std::vector<WindowScore> windows;  // one per Trace::windows entry
  // The share of the run the findings account for together (joint_saving_ns / run_ns: the fixes,
  // then the idle time TTA008 finds that no fix explains): adding an anti-pattern to a run can
  // only raise it.
  double trace_score = 0;
  int64_t run_ns = 0;         // the analysed steps' wall time without the profiler's own cost
  int64_t traced_run_ns = 0;  // ... as recorded
  int64_t profiler_overhead_ns = 0;  // traced_run_ns - run_ns: what the profiler itself added
  size_t profiled_ops = 0;           // the recorded ops that cost it
  // Whether what the profiler added is worth saying (>= 5% of the recorded run): `ttap scan`'s
  // last line, the hover and the trace summary say it from this one test.
  bool ProfilerCostMatters() const {
    return profiled_ops > 0 && profiler_overhead_ns * 20 >= traced_run_ns;
  }
  int64_t safe_saving_ns = 0;   // what all the fixes save together, replayed
  int64_t joint_saving_ns = 0;  // ... and the idle time no fix explains (TTA008) after them
  double speedup = 1.0;         // run_ns / (run_ns - joint_saving_ns)
  // What the one-time findings (TTA015) save of it, each alone: start-up the process pays once
  // whatever the program does, which profiling after a warm-up only leaves out of the trace.
  int64_t one_time_saving_ns = 0;
  // The findings' claims added up (each what its fix saves alone, share_of_step x run_ns): fixes
  // of causes that bound the step side by side (the CPU's work beside exposed collectives) save
  // more together than apart, which SavingsVerdict says where it is so.
  int64_t claims_ns = 0;
  // A finding says GPU activity is missing (TTA016): savings replayed on what the trace holds
  // say nothing of the GPU side.
  bool trace_incomplete = false;
  // The trace holds GPU activity but no CPU op, Python call or annotation (recorded with
  // activities=[CUDA] only), and the idle time under CPU work it cannot name (TTA008) is most of
  // what the findings save: SavingsVerdict says what fixes save cannot be judged.
  bool cpu_side_missing = false;
  // What the run's last line says of the fixes together: "this run could be 1.32x faster", or,
  // when the trace lacks its GPU activity and no fix saves anything, that this cannot be judged;
  // when one-time start-up is most of the saving, also what the other fixes make of the run
  // without it (a 389 ms single call with 388 ms of cuBLAS set-up is not "542x faster" to fix).
  std::string SavingsVerdict() const;
  TimeBreakdown time;  // where each step's time went (critical path)
  // RunRulesSteadyFirst: the leading steps analysed apart as a cold start (0: none), and their
  // recorded time together; for a run without steps, no steps and the time from its start to
  // its warm part (everything else in this result is of that warm part).
  size_t cold_steps = 0;
  int64_t cold_ns = 0;
  // One-off host stalls (OneOffHostStalls, trace_queries.h): the machine, not the code; the
  // figures above include them, so the run's summary names them (HostStallsText).
  std::vector<HostStall> host_stalls;
  // Every op ran on the CPU though the trace lists a GPU (CpuRunBesideGpuText), "" otherwise:
  // the run's summary says so.
  std::string cpu_run_beside_gpu;
  // Wall milliseconds per phase, in order ("rule detectors", "causal graph", "replay",
  // "attribution", "causal detectors", "what-ifs", "window scores"): `ttap stats --timing`.
  std::vector<std::pair<std::string, double>> phases;
};

RuleResult RunRules(const Trace& trace, const RuleOptions& options);

// A trace profiled from a script's start: its first steps (ProfilerStep#'s, or a training loop's
// iterations inferred from its optimizer steps; not a serving engine's marks) hold the one-time
// work (compilation, context and library set-up: a TTA015 finding, nearly all of it in them, each
// of those steps 3x the median of the rest or more) and at least three steady steps follow. The
// rules run again on the steady steps alone: what the user's loop costs every step comes first,
// then the one-time findings of the cold steps (their fields per recorded step as RunRules gives
// them, their messages in the run's totals), then the rest. Any other trace: RunRules. `ttap scan`
// and the LSP call it.
RuleResult RunRulesSteadyFirst(const Trace& trace, const RuleOptions& options);

// What the run's summary says of its one-off host stalls ("" for none): "the host stalled
// 7842.0 ms in one aten::mkldnn_convolution call, where its 199 other calls took at most 192.0
// ms: the machine (paging, throttling, another process), not the code; these figures include
// it". `ttap scan`'s last line and the editor's trace summary.
std::string HostStallsText(const Trace& trace, const std::vector<HostStall>& stalls);
// A run whose ops all ran on the CPU though the trace lists a GPU (its deviceProperties): no GPU
// activity, no runtime call, no op naming cuDNN, CUDA or NCCL, and convolutions on a CPU
// backend (aten::mkldnn_convolution, _slow_conv2d_forward: an op name alike on both devices, a
// matmul, says nothing, as a trace of the CPU's side only looks the same). "" otherwise; else a
// sentence for the run's summary (`ttap scan`, the hover): the model was never moved to the GPU.
// RunRules keeps it in RuleResult::cpu_run_beside_gpu.
std::string CpuRunBesideGpuText(const Trace& trace);

// The one-line message of a merged finding, with its numbers.
std::string FindingMessage(const Finding& f);

// Detectors, one file per code (tta0NN_<name>.cpp). Each appends raw findings (one per step and
// cause); RunRules merges and grades them.
using Detector = void (*)(const RuleContext&, const RuleOptions&, std::vector<Finding>*);
void DetectDataloaderStall(const RuleContext&, const RuleOptions&,
                           std::vector<Finding>*);                                         // TTA001
void DetectHostSync(const RuleContext&, const RuleOptions&, std::vector<Finding>*);        // TTA002
void DetectPageableMemcpy(const RuleContext&, const RuleOptions&, std::vector<Finding>*);  // TTA003
void DetectSmallH2DCopies(const RuleContext&, const RuleOptions&, std::vector<Finding>*);  // TTA004
void DetectZeroGradPerParam(const RuleContext&, const RuleOptions&,
                            std::vector<Finding>*);  // TTA005
void DetectUnfusedOptimizer(const RuleContext&, const RuleOptions&,
                            std::vector<Finding>*);                                       // TTA006
void DetectLaunchBound(const RuleContext&, const RuleOptions&, std::vector<Finding>*);    // TTA007
void DetectGpuIdle(const RuleContext&, const RuleOptions&, std::vector<Finding>*);        // TTA008
void DetectNoTensorCores(const RuleContext&, const RuleOptions&, std::vector<Finding>*);  // TTA009
void DetectLayoutConversion(const RuleContext&, const RuleOptions&,
                            std::vector<Finding>*);  // TTA010
void DetectCommNotOverlapped(const RuleContext&, const RuleOptions&,
                             std::vector<Finding>*);  // TTA011
void DetectCommPerParameter(const RuleContext&, const RuleOptions&,
                            std::vector<Finding>*);                                        // TTA012
void DetectAllocatorChurn(const RuleContext&, const RuleOptions&, std::vector<Finding>*);  // TTA013
void DetectDevicePingPong(const RuleContext&, const RuleOptions&, std::vector<Finding>*);  // TTA014

// A code's own wording of its merged finding, with the detected time (per step) and the saving
// clause; codes without one read "<summary>: <detail><saving>" (FindingMessage).
using MessageFn = std::string (*)(const Finding& f, const std::string& detected,
                                  const std::string& saving);
std::string DataLoaderStallMessage(const Finding&, const std::string&, const std::string&);
std::string CommNotOverlappedMessage(const Finding&, const std::string&, const std::string&);
std::string HostSyncMessage(const Finding&, const std::string&, const std::string&);
std::string GpuIdleMessage(const Finding&, const std::string&, const std::string&);
std::string LaunchBoundMessage(const Finding&, const std::string&, const std::string&);
std::string PeerWaitMessage(const Finding&, const std::string&, const std::string&);

// Detectors over the causal model (tta013, tta015-tta017, tta020-tta022_*.cpp), run after the graph
// is built.
using CausalDetector = void (*)(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                                const RuleOptions&, std::vector<Finding>*);
void DetectCpuOverheadPath(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                           const RuleOptions&, std::vector<Finding>*);  // TTA017
void DetectAllocatorPath(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                         const RuleOptions&, std::vector<Finding>*);  // TTA013 (critical path)
void DetectColdStart(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                     const RuleOptions&, std::vector<Finding>*);  // TTA015
void DetectTraceIncomplete(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                           const RuleOptions&, std::vector<Finding>*);  // TTA016
void DetectConvAlgorithmSearch(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                               const RuleOptions&, std::vector<Finding>*);  // TTA020
void DetectAnomalyDetection(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                            const RuleOptions&, std::vector<Finding>*);  // TTA021
void DetectPeerWait(const RuleContext&, const CausalGraph&, const TimeBreakdown&,
                    const RuleOptions&, std::vector<Finding>*);  // TTA022

}  // namespace ttap

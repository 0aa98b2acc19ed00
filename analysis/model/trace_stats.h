// Trace statistics behind `ttap stats` and the rules: interval algebra, the per-step
// TorchBench-style breakdown (GPU active / data movement / idle), the GPU timeline per device and
// stream, top kernels and CPU ops, and Holistic Trace Analysis's temporal breakdown and
// comm/comp overlap reproduced exactly (definitions: ../shared/traces/HTA_REFERENCE.md).
// Pure functions of an immutable Trace; callable from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/model/trace.h"

namespace ttap {

using Interval = std::pair<int64_t, int64_t>;  // [begin, end) in ns
// Sorts and merges touching/overlapping intervals in place.
void MergeIntervals(std::vector<Interval>* v);
int64_t TotalLength(const std::vector<Interval>& merged);
// Length of the intersection of two merged interval lists.
int64_t IntersectionLength(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Length of |merged| clipped to [lo, hi).
int64_t ClippedLength(const std::vector<Interval>& merged, int64_t lo, int64_t hi);

struct Breakdown {
  int64_t span_ns = 0;
  int64_t kernel_ns = 0;         // GPU busy with kernels
  int64_t data_movement_ns = 0;  // memcpy/memset with no kernel running
  int64_t idle_ns = 0;           // no GPU activity
  double Pct(int64_t v) const { return span_ns > 0 ? 100.0 * v / span_ns : 0.0; }
};

struct StepSummary {
  int64_t number = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t cpu_ns = 0;
  int64_t kernels = 0;  // GPU activities launched in the step
  Breakdown breakdown;
};

struct StreamSummary {
  int32_t device = -1;
  int32_t stream = -1;
  int64_t count = 0;
  int64_t kernel_ns = 0;  // summed durations
  int64_t memcpy_ns = 0;
  int64_t memset_ns = 0;
  int64_t busy_ns = 0;  // union
  int64_t span_ns = 0;  // first start to last end
};

struct NameSummary {
  StringId name = kEmptyString;
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;
};

struct HtaFigures {
  bool has_gpu_events = false;
  double idle_time_us = 0, compute_time_us = 0, non_compute_time_us = 0, kernel_time_us = 0;
  std::optional<double> comm_comp_overlap_pct;
  int64_t iterations = 0;
  int64_t gpu_events_considered = 0;
  bool last_step_filter_applied = false;
};

struct TraceSummary {
  std::string device_type;  // "NVIDIA GPU", "AMD GPU", "MTIA", "CPU"
  std::vector<StepSummary> steps;
  Breakdown overall;  // over all steps (or the whole span without steps)
  std::vector<StreamSummary> streams;
  std::vector<NameSummary> top_kernels;  // by total GPU time
  std::vector<NameSummary> top_cpu_ops;  // by self time
  int64_t total_kernel_ns = 0;
  std::vector<std::pair<EventKind, int64_t>> counts;
  HtaFigures hta;
};

// |hta| false leaves out the HTA figures (the language server's summary does without them).
// Where each step's time went is the causal model's (WhereTimeWent, causal/causal_graph.h).
TraceSummary Summarize(const Trace& trace, size_t top_n = 10, bool hta = true);
HtaFigures ComputeHtaFigures(const Trace& trace);

// HTA's kernel type of a name (hta/utils/utils.py order).
enum class HtaKernelType { kCommunication, kMemory, kComputation, kOther };
HtaKernelType ClassifyHtaKernel(std::string_view name);

}  // namespace ttap

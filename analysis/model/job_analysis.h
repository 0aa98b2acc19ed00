// A whole job, not one rank: the traces of a multi-GPU job's ranks read together. Collectives
// end together on every rank (each waits for the last to arrive), so the clocks are aligned on
// their ends, and how late each rank arrives at each collective says which ranks hold the
// others back and by how much per step (TTA018 straggler-rank). Each rank is first reduced to a
// small RankTimeline (steps, collective kernels), which is what a distributed scan ships
// (`ttap scan --format rank-summary`, tools/ttap_dask.py); AnalyseJob is the reduction. Called by
// `ttap scan DIR` and `ttap job`; pure functions, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model/trace.h"

namespace ttap {

struct RankCollective {
  int64_t step = -1;  // the step (ProfilerStep number) whose CPU part launched it; -1 for none
  std::string kind;   // the kernel's name up to its parameters (ncclKernel_AllReduce_RING_LL_...)
  int64_t start_ns = 0, end_ns = 0;  // on the GPU, in the rank's own clock
};

// What the job analysis needs of one rank.
struct RankTimeline {
  int rank = -1;
  std::string file;
  std::string top_cause;  // the rank's own top finding ("TTA001 dataloader-stall ..."), or ""
  double step_us = 0;     // the rank's analysed step time (without the profiler's cost)
  struct Step {
    int64_t number = -1;
    int64_t start_ns = 0, end_ns = 0;
    int64_t compute_ns = 0;  // its GPU kernels' time, the collectives aside
  };
  std::vector<Step> steps;
  std::vector<RankCollective> collectives;  // in start order
};

// The rank's steps and collective kernels (the kernels IsCollectiveKernel names).
RankTimeline ExtractRankTimeline(const Trace& trace);

struct RankLateness {
  int rank = -1;
  double late_us_per_step = 0;     // how long after the median rank it arrives, summed per step
  double wait_us_per_step = 0;     // how long it waits in collectives for the last rank, per step
  int last_arrivals = 0;           // collectives it arrived at last
  double compute_us_per_step = 0;  // its GPU kernels' time per step, the collectives aside
};

// One matched collective: which rank arrived last, and each rank's wait for it.
struct CollectiveSkew {
  int64_t step = -1;
  std::string kind;
  int last_rank = -1;
  std::vector<double> wait_us;  // per rank, in JobAnalysis::per_rank order
};

struct JobAnalysis {
  bool ok = false;
  std::string why_not;  // when !ok: fewer than two ranks, no collective in common, not one job
  int ranks = 0;
  size_t steps = 0;        // steps all ranks recorded
  size_t collectives = 0;  // collectives matched on every rank
  double job_step_us = 0;  // a step of the job: its first start to its last end on any rank
  std::vector<RankLateness> per_rank;          // by rank
  std::vector<CollectiveSkew> per_collective;  // in the order the median rank reached them
  std::vector<int> late_ranks;  // the ranks that arrive well after the median rank, latest first
  // Load imbalance (TTA019): ranks whose kernels take well longer than the median rank's (uneven
  // batches or sequence lengths), with how much longer per step; most first.
  double median_compute_us = 0;
  std::vector<std::pair<int, double>> imbalanced;
  // What the job saves per step if the late ranks arrived with the median rank: each collective
  // starts when the last of the others arrives.
  double saving_us_per_step = 0;
  // The rank's entry in per_rank, nullptr when it is not one of the job's.
  const RankLateness* Of(int rank) const;
  // The rank that waits longest in collectives (for the late ones), nullptr without ranks.
  const RankLateness* WaitsLongest() const;
  bool IsLate(int rank) const;
  double speedup() const {
    return job_step_us > saving_us_per_step && job_step_us > 0
               ? job_step_us / (job_step_us - saving_us_per_step)
               : 1.0;
  }
};

// The reduction over the ranks' timelines (any order; one per rank).
JobAnalysis AnalyseJob(const std::vector<RankTimeline>& ranks);

}  // namespace ttap

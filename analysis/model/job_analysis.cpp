// The cross-rank analysis of one job (see job_analysis.h).
#include "analysis/model/job_analysis.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <set>

#include "analysis/base/median.h"
#include "analysis/base/string_util.h"

namespace ttap {

namespace {

// A rank is late when it arrives this share of the latest rank's lateness after the median.
constexpr double kLateShareOfWorst = 0.5;
// ... and the latest rank is late at all: this long per step, and this share of the job's step.
constexpr double kMinLateUs = 100;
constexpr double kMinLateShare = 0.02;
// A rank's kernels take this many times the median rank's: load imbalance.
constexpr double kImbalanceRatio = 1.15;
// Matched collectives end together on every rank (within this, or this share of their median
// duration) once the clocks are aligned; otherwise the traces are not one job's.
constexpr int64_t kEndSpreadNs = 200000;
constexpr double kEndSpreadShare = 0.25;

std::string KindOf(std::string_view name) {
  const size_t paren = name.find('(');
  return std::string(paren == std::string_view::npos ? name : name.substr(0, paren));
}

}  // namespace

const RankLateness* JobAnalysis::Of(int rank) const {
  for (const RankLateness& l : per_rank) {
    if (l.rank == rank) return &l;
  }
  return nullptr;
}

const RankLateness* JobAnalysis::WaitsLongest() const {
  const RankLateness* most = nullptr;
  for (const RankLateness& l : per_rank) {
    if (!most || l.wait_us_per_step > most->wait_us_per_step) most = &l;
  }
  return most;
}

bool JobAnalysis::IsLate(int rank) const {
  return std::find(late_ranks.begin(), late_ranks.end(), rank) != late_ranks.end();
}

RankTimeline ExtractRankTimeline(const Trace& trace) {
  RankTimeline t;
  t.rank = trace.rank;
  t.file = trace.path;
  for (const Step& s : trace.steps) {
    t.steps.push_back({s.number, s.cpu_start, std::max(s.cpu_end, s.gpu_end), 0});
  }
  const EventTable& ev = trace.events;
  // The steps whose CPU part holds |ts|, in order. Steps in time order that do not overlap (a
  // ProfilerStep loop) hold it at most once: a binary search; others are each looked at (a
  // 106k-step trace made this quadratic: minutes).
  const std::vector<Step>& steps = trace.steps;
  bool ordered = true;
  for (size_t k = 1; k < steps.size() && ordered; ++k) {
    ordered =
        steps[k - 1].cpu_start <= steps[k].cpu_start && steps[k - 1].cpu_end <= steps[k].cpu_start;
  }
  auto for_each_step_holding = [&](int64_t ts, auto&& fn) {
    if (!ordered) {
      for (size_t k = 0; k < steps.size(); ++k) {
        if (ts >= steps[k].cpu_start && ts < steps[k].cpu_end) fn(k);
      }
      return;
    }
    auto it = std::upper_bound(steps.begin(), steps.end(), ts,
                               [](int64_t x, const Step& s) { return x < s.cpu_start; });
    if (it == steps.begin()) return;
    const size_t k = static_cast<size_t>(it - steps.begin()) - 1;
    if (ts >= steps[k].cpu_start && ts < steps[k].cpu_end) fn(k);
  };
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::kKernel) continue;
    const std::string_view name = trace.Name(i);
    if (!IsCollectiveKernel(name)) {  // compute: counted in the step that launched it
      const int64_t launched = ev.link[i] >= 0 ? ev.ts[ev.link[i]] : ev.ts[i];
      for_each_step_holding(launched, [&](size_t k) { t.steps[k].compute_ns += ev.dur[i]; });
      continue;
    }
    RankCollective c;
    c.kind = KindOf(name);
    c.start_ns = ev.ts[i];
    c.end_ns = ev.end(i);
    // The step whose CPU part launched it (its launch call's start), else the kernel's start.
    const int64_t launched = ev.link[i] >= 0 ? ev.ts[ev.link[i]] : ev.ts[i];
    for_each_step_holding(launched, [&](size_t k) { c.step = steps[k].number; });
    t.collectives.push_back(std::move(c));
  }
  std::sort(
      t.collectives.begin(), t.collectives.end(),
      [](const RankCollective& a, const RankCollective& b) { return a.start_ns < b.start_ns; });
  return t;
}

namespace {

// The steps every rank recorded (one step, -1, for traces without ProfilerStep annotations).
std::set<int64_t> CommonSteps(const std::vector<const RankTimeline*>& ranks) {
  const size_t n = ranks.size();
  std::set<int64_t> common;
  for (size_t k = 0; k < n; ++k) {
    std::set<int64_t> mine;
    for (const RankCollective& c : ranks[k]->collectives) mine.insert(c.step);
    if (k == 0) {
      common = mine;
    } else {
      std::set<int64_t> both;
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                            std::inserter(both, both.begin()));
      common = both;
    }
  }
  return common;
}

// Collectives matched across ranks: per step and kernel kind, the i-th on each rank, where
// every rank ran as many.
struct Matched {
  int64_t step;
  std::string kind;
  std::vector<int64_t> start, end;  // per rank (sorted order), own clocks
};
std::vector<Matched> MatchCollectives(const std::vector<const RankTimeline*>& ranks,
                                      const std::set<int64_t>& common) {
  const size_t n = ranks.size();
  std::vector<Matched> matched;
  for (int64_t step : common) {
    std::vector<std::map<std::string, std::vector<const RankCollective*>>> by_kind(n);
    for (size_t k = 0; k < n; ++k) {
      for (const RankCollective& c : ranks[k]->collectives) {
        if (c.step == step) by_kind[k][c.kind].push_back(&c);
      }
    }
    for (const auto& [kind, first] : by_kind[0]) {
      bool same = true;
      for (size_t k = 1; k < n && same; ++k) {
        auto it = by_kind[k].find(kind);
        same = it != by_kind[k].end() && it->second.size() == first.size();
      }
      if (!same) continue;
      for (size_t i = 0; i < first.size(); ++i) {
        Matched m{step, kind, std::vector<int64_t>(n), std::vector<int64_t>(n)};
        for (size_t k = 0; k < n; ++k) {
          const RankCollective* c = by_kind[k][kind][i];
          m.start[k] = c->start_ns;
          m.end[k] = c->end_ns;
        }
        matched.push_back(std::move(m));
      }
    }
  }
  return matched;
}

// Clocks aligned on the collectives' ends: each rank's offset from the first rank's clock.
std::vector<int64_t> AlignClocks(const std::vector<Matched>& matched) {
  const size_t n = matched.front().end.size();
  std::vector<int64_t> offset(n, 0);
  for (size_t k = 1; k < n; ++k) {
    std::vector<int64_t> d;
    for (const Matched& m : matched) d.push_back(m.end[k] - m.end[0]);
    offset[k] = Median(d);
  }
  return offset;
}

// Whether the matched collectives end together once the clocks are aligned (the ranks of one job).
bool EndTogether(const std::vector<Matched>& matched, const std::vector<int64_t>& offset) {
  const size_t n = offset.size();
  std::vector<int64_t> spreads, durations;
  for (const Matched& m : matched) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t k = 0; k < n; ++k) {
      lo = std::min(lo, m.end[k] - offset[k]);
      hi = std::max(hi, m.end[k] - offset[k]);
      durations.push_back(m.end[k] - m.start[k]);
    }
    spreads.push_back(hi - lo);
  }
  const int64_t spread = Median(spreads);
  return spread <= std::max<int64_t>(kEndSpreadNs, kEndSpreadShare * Median(durations));
}

// The job's step from its first start to its last end on any rank (aligned clocks), in us.
double JobStepUs(const std::vector<const RankTimeline*>& ranks, const std::set<int64_t>& common,
                 const std::vector<int64_t>& offset) {
  const size_t n = ranks.size();
  double job_step_ns = 0;
  size_t timed_steps = 0;
  for (int64_t step : common) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t k = 0; k < n; ++k) {
      for (const RankTimeline::Step& s : ranks[k]->steps) {
        if (s.number != step) continue;
        lo = std::min(lo, s.start_ns - offset[k]);
        hi = std::max(hi, s.end_ns - offset[k]);
      }
    }
    if (hi > lo) {
      job_step_ns += static_cast<double>(hi - lo);
      ++timed_steps;
    }
  }
  if (timed_steps == 0) {  // no steps: the span of the matched collectives' ranks
    double best = 0;
    for (size_t k = 0; k < n; ++k) best = std::max(best, ranks[k]->step_us * 1000.0);
    job_step_ns = best;
    timed_steps = 1;
  }
  return job_step_ns / static_cast<double>(timed_steps) / 1000.0;
}

// Arrivals: how late each rank comes after the median rank, and how long it waits for the last
// (job->per_collective, job->per_rank); returns each collective's arrivals (aligned clocks).
std::vector<std::vector<int64_t>> MeasureArrivals(const std::vector<const RankTimeline*>& ranks,
                                                  const std::vector<Matched>& matched,
                                                  const std::vector<int64_t>& offset,
                                                  JobAnalysis* job_out) {
  JobAnalysis& job = *job_out;
  const size_t n = ranks.size();
  std::vector<std::vector<int64_t>> arrivals;
  std::vector<double> late(n, 0), wait(n, 0);
  std::vector<int> last_count(n, 0);
  std::vector<std::pair<int64_t, CollectiveSkew>> skews;  // (median arrival, skew)
  for (const Matched& m : matched) {
    std::vector<int64_t> a(n);
    for (size_t k = 0; k < n; ++k) a[k] = m.start[k] - offset[k];
    const int64_t med = Median(a);
    const size_t last = std::max_element(a.begin(), a.end()) - a.begin();
    ++last_count[last];
    CollectiveSkew skew;
    skew.step = m.step;
    skew.kind = m.kind;
    skew.last_rank = ranks[last]->rank;
    for (size_t k = 0; k < n; ++k) {
      late[k] += static_cast<double>(std::max<int64_t>(0, a[k] - med));
      wait[k] += static_cast<double>(a[last] - a[k]);
      skew.wait_us.push_back(static_cast<double>(a[last] - a[k]) / 1000.0);
    }
    skews.emplace_back(med, std::move(skew));
    arrivals.push_back(std::move(a));
  }
  std::stable_sort(skews.begin(), skews.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [t, skew] : skews) job.per_collective.push_back(std::move(skew));
  const double steps = static_cast<double>(job.steps);
  for (size_t k = 0; k < n; ++k) {
    RankLateness l;
    l.rank = ranks[k]->rank;
    l.late_us_per_step = late[k] / steps / 1000.0;
    l.wait_us_per_step = wait[k] / steps / 1000.0;
    l.last_arrivals = last_count[k];
    job.per_rank.push_back(l);
  }
  return arrivals;
}

// Each rank's kernels per common step, the collectives aside: the same work taking longer on
// one rank is load imbalance (job->imbalanced).
void MeasureImbalance(const std::vector<const RankTimeline*>& ranks,
                      const std::set<int64_t>& common, JobAnalysis* job_out) {
  JobAnalysis& job = *job_out;
  const size_t n = ranks.size();
  std::vector<double> compute(n, 0);
  for (size_t k = 0; k < n; ++k) {
    double ns = 0;
    size_t counted = 0;
    for (const RankTimeline::Step& s : ranks[k]->steps) {
      if (!common.count(s.number)) continue;
      ns += static_cast<double>(s.compute_ns);
      ++counted;
    }
    compute[k] = counted ? ns / static_cast<double>(counted) / 1000.0 : 0;
    job.per_rank[k].compute_us_per_step = compute[k];
  }
  job.median_compute_us = Median(compute);
  for (size_t k = 0; k < n; ++k) {
    const double excess = compute[k] - job.median_compute_us;
    if (job.median_compute_us > 0 && compute[k] >= kImbalanceRatio * job.median_compute_us &&
        excess >= kMinLateUs && excess >= kMinLateShare * job.job_step_us) {
      job.imbalanced.emplace_back(ranks[k]->rank, excess);
    }
  }
  std::sort(job.imbalanced.begin(), job.imbalanced.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
}

// The late ranks (job->late_ranks) and what the job saves without their lateness.
void FindLateRanks(const std::vector<std::vector<int64_t>>& arrivals, JobAnalysis* job_out) {
  JobAnalysis& job = *job_out;
  const size_t n = job.per_rank.size();
  const double steps = static_cast<double>(job.steps);
  double worst = 0;
  for (const RankLateness& l : job.per_rank) worst = std::max(worst, l.late_us_per_step);
  if (worst < kMinLateUs || worst < kMinLateShare * job.job_step_us) return;
  std::vector<size_t> late_idx;
  for (size_t k = 0; k < n; ++k) {
    if (job.per_rank[k].late_us_per_step >= kLateShareOfWorst * worst) late_idx.push_back(k);
  }
  std::sort(late_idx.begin(), late_idx.end(), [&](size_t a, size_t b) {
    return job.per_rank[a].late_us_per_step > job.per_rank[b].late_us_per_step;
  });
  for (size_t k : late_idx) job.late_ranks.push_back(job.per_rank[k].rank);
  // The saving: each collective starts when the last of the others (or the median) arrives.
  double saving = 0;
  for (const std::vector<int64_t>& a : arrivals) {
    int64_t others = Median(a);
    for (size_t k = 0; k < n; ++k) {
      if (std::find(late_idx.begin(), late_idx.end(), k) == late_idx.end()) {
        others = std::max(others, a[k]);
      }
    }
    const int64_t last = *std::max_element(a.begin(), a.end());
    saving += static_cast<double>(std::max<int64_t>(0, last - others));
  }
  job.saving_us_per_step = std::min(saving / steps / 1000.0, job.job_step_us);
}

}  // namespace

JobAnalysis AnalyseJob(const std::vector<RankTimeline>& input) {
  JobAnalysis job;
  std::vector<const RankTimeline*> ranks;
  for (const RankTimeline& r : input) ranks.push_back(&r);
  std::sort(ranks.begin(), ranks.end(),
            [](const RankTimeline* a, const RankTimeline* b) { return a->rank < b->rank; });
  job.ranks = static_cast<int>(ranks.size());
  if (ranks.size() < 2) {
    job.why_not = "fewer than two ranks";
    return job;
  }
  std::set<int> distinct;
  for (const RankTimeline* r : ranks) distinct.insert(r->rank);
  if (distinct.size() != ranks.size()) {
    job.why_not = "two traces name the same rank";
    return job;
  }
  const std::set<int64_t> common = CommonSteps(ranks);
  const std::vector<Matched> matched = MatchCollectives(ranks, common);
  job.collectives = matched.size();
  if (matched.empty()) {
    job.why_not = "no collective ran on every rank in the same step";
    return job;
  }
  const std::vector<int64_t> offset = AlignClocks(matched);
  if (!EndTogether(matched, offset)) {
    job.why_not = "their collectives do not end together: not the ranks of one job";
    return job;
  }
  job.steps = std::max<size_t>(1, common.size());
  job.job_step_us = JobStepUs(ranks, common, offset);
  const std::vector<std::vector<int64_t>> arrivals = MeasureArrivals(ranks, matched, offset, &job);
  MeasureImbalance(ranks, common, &job);
  job.ok = true;
  FindLateRanks(arrivals, &job);
  return job;
}

}  // namespace ttap

// Statistics core of the future `ttap eval` command (the benchmark): scores ttap's findings
// against labelled traces. AUC-ROC with a bootstrap confidence interval for per-window scores,
// precision/recall/F1 of findings matched to labelled intervals, window labelling and category
// accuracy. Pure functions, no I/O, no exceptions; callable from any thread. Intervals are
// half-open [start_ns, end_ns): two intervals overlap when max(start) < min(end), so empty
// intervals never overlap anything.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ttap {

// Area under the ROC curve of |scores| against binary |labels| (nonzero = positive; ties get half
// credit, i.e. the Mann-Whitney U statistic / (n_pos * n_neg)); NaN when a class is empty or the
// sizes differ. Entries with a NaN score are ignored. O(n log n).
double AucRoc(const std::vector<double>& scores, const std::vector<int>& labels);

struct Interval95 {
  double estimate, low, high;
};
// Percentile bootstrap 95% CI of AucRoc over |resamples| resamples with replacement
// (deterministic from |seed|, std::mt19937_64); resamples missing a class are redrawn (bounded
// attempts, then dropped). |estimate| is AucRoc of the full data; everything is NaN when that is
// NaN, and low/high are NaN when resamples < 1 or no resample had both classes.
Interval95 BootstrapAucRoc(const std::vector<double>& scores, const std::vector<int>& labels,
                           int resamples, uint64_t seed);

// Percentile bootstrap 95% CI of the proportion |successes| / |n| (each resample draws n items
// with replacement: a Binomial(n, p) count), deterministic from |seed|. NaN when n <= 0; low/high
// NaN when resamples < 1.
Interval95 BootstrapProportion(int successes, int n, int resamples, uint64_t seed);

struct PrecisionRecall {
  int true_positives, false_positives, false_negatives;
  double precision, recall, f1;  // 0 where the denominator is 0
};
struct LabeledInterval {
  std::string code;
  int64_t start_ns, end_ns;
};
// Findings vs labelled intervals: a finding matches a label when codes are equal and
// [start,end) intervals overlap; each label and each finding is matched at most once (greedy by
// largest overlap, ties by lower finding then lower label index). Unmatched findings are false
// positives, unmatched labels false negatives.
PrecisionRecall MatchFindings(const std::vector<LabeledInterval>& findings,
                              const std::vector<LabeledInterval>& labels);

// Window labels: window i is positive (1) when it overlaps any labelled interval, else 0.
std::vector<int> WindowLabels(const std::vector<std::pair<int64_t, int64_t>>& windows,
                              const std::vector<LabeledInterval>& labels);

// Category accuracy: share of flagged windows (non-empty |predicted|[i]) whose predicted category
// equals the label's code (only windows with a label, non-empty |truth|[i], count). Extra entries
// of the longer vector are ignored; NaN when no window is both flagged and labelled.
double CategoryAccuracy(const std::vector<std::string>& predicted,
                        const std::vector<std::string>& truth);

}  // namespace ttap

// Statistics core of the future `ttap eval` command; see eval_metrics.h.
#include "bench/harness/eval_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <tuple>

namespace ttap {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxRedraws = 100;

int64_t Overlap(int64_t a_start, int64_t a_end, int64_t b_start, int64_t b_end) {
  int64_t lo = std::max(a_start, b_start);
  int64_t hi = std::min(a_end, b_end);
  return hi > lo ? hi - lo : 0;
}

// AUC of (score, positive) pairs; sorts |items| in place.
double AucOfPairs(std::vector<std::pair<double, bool>>* items) {
  std::vector<std::pair<double, bool>>& v = *items;
  double n_pos = 0;
  for (const auto& it : v) n_pos += it.second ? 1 : 0;
  double n_neg = static_cast<double>(v.size()) - n_pos;
  if (n_pos == 0 || n_neg == 0) return kNaN;
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Sum of the (1-based, tie-averaged) ranks of the positives.
  double rank_sum = 0;
  size_t i = 0;
  while (i < v.size()) {
    size_t j = i;
    double pos_in_group = 0;
    while (j < v.size() && v[j].first == v[i].first) {
      pos_in_group += v[j].second ? 1 : 0;
      ++j;
    }
    double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    rank_sum += pos_in_group * avg_rank;
    i = j;
  }
  double u = rank_sum - n_pos * (n_pos + 1) / 2.0;
  return u / (n_pos * n_neg);
}

// Linear-interpolated quantile of sorted |v| at q in [0, 1].
double Quantile(const std::vector<double>& v, double q) {
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

}  // namespace

double AucRoc(const std::vector<double>& scores, const std::vector<int>& labels) {
  if (scores.size() != labels.size()) return kNaN;
  std::vector<std::pair<double, bool>> items;
  items.reserve(scores.size());
  for (size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) continue;
    items.emplace_back(scores[i], labels[i] != 0);
  }
  return AucOfPairs(&items);
}

Interval95 BootstrapAucRoc(const std::vector<double>& scores, const std::vector<int>& labels,
                           int resamples, uint64_t seed) {
  Interval95 out{AucRoc(scores, labels), kNaN, kNaN};
  if (std::isnan(out.estimate) || resamples < 1) return out;
  std::vector<std::pair<double, bool>> items;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (!std::isnan(scores[i])) items.emplace_back(scores[i], labels[i] != 0);
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, items.size() - 1);
  std::vector<double> aucs;
  aucs.reserve(static_cast<size_t>(resamples));
  std::vector<std::pair<double, bool>> sample(items.size());
  for (int r = 0; r < resamples; ++r) {
    for (int attempt = 0; attempt < kMaxRedraws; ++attempt) {
      for (auto& s : sample) s = items[pick(rng)];
      double auc = AucOfPairs(&sample);
      if (!std::isnan(auc)) {
        aucs.push_back(auc);
        break;
      }
    }
  }
  if (aucs.empty()) return out;
  std::sort(aucs.begin(), aucs.end());
  out.low = Quantile(aucs, 0.025);
  out.high = Quantile(aucs, 0.975);
  return out;
}

PrecisionRecall MatchFindings(const std::vector<LabeledInterval>& findings,
                              const std::vector<LabeledInterval>& labels) {
  // Candidate pairs: (overlap, finding index, label index).
  std::vector<std::tuple<int64_t, size_t, size_t>> candidates;
  for (size_t f = 0; f < findings.size(); ++f) {
    for (size_t l = 0; l < labels.size(); ++l) {
      if (findings[f].code != labels[l].code) continue;
      int64_t ov =
          Overlap(findings[f].start_ns, findings[f].end_ns, labels[l].start_ns, labels[l].end_ns);
      if (ov > 0) candidates.emplace_back(ov, f, l);
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
    if (std::get<1>(a) != std::get<1>(b)) return std::get<1>(a) < std::get<1>(b);
    return std::get<2>(a) < std::get<2>(b);
  });
  std::vector<bool> finding_used(findings.size(), false);
  std::vector<bool> label_used(labels.size(), false);
  int tp = 0;
  for (const auto& c : candidates) {
    size_t f = std::get<1>(c);
    size_t l = std::get<2>(c);
    if (finding_used[f] || label_used[l]) continue;
    finding_used[f] = true;
    label_used[l] = true;
    ++tp;
  }
  PrecisionRecall pr{};
  pr.true_positives = tp;
  pr.false_positives = static_cast<int>(findings.size()) - tp;
  pr.false_negatives = static_cast<int>(labels.size()) - tp;
  pr.precision = findings.empty() ? 0.0 : static_cast<double>(tp) / findings.size();
  pr.recall = labels.empty() ? 0.0 : static_cast<double>(tp) / labels.size();
  double sum = pr.precision + pr.recall;
  pr.f1 = sum > 0 ? 2.0 * pr.precision * pr.recall / sum : 0.0;
  return pr;
}

std::vector<int> WindowLabels(const std::vector<std::pair<int64_t, int64_t>>& windows,
                              const std::vector<LabeledInterval>& labels) {
  std::vector<int> out(windows.size(), 0);
  for (size_t i = 0; i < windows.size(); ++i) {
    for (const auto& l : labels) {
      if (Overlap(windows[i].first, windows[i].second, l.start_ns, l.end_ns) > 0) {
        out[i] = 1;
        break;
      }
    }
  }
  return out;
}

double CategoryAccuracy(const std::vector<std::string>& predicted,
                        const std::vector<std::string>& truth) {
  size_t n = std::min(predicted.size(), truth.size());
  size_t counted = 0;
  size_t correct = 0;
  for (size_t i = 0; i < n; ++i) {
    if (predicted[i].empty() || truth[i].empty()) continue;
    ++counted;
    if (predicted[i] == truth[i]) ++correct;
  }
  return counted == 0 ? kNaN : static_cast<double>(correct) / counted;
}

Interval95 BootstrapProportion(int successes, int n, int resamples, uint64_t seed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (n <= 0) return {nan, nan, nan};
  const double p = static_cast<double>(successes) / n;
  if (resamples < 1) return {p, nan, nan};
  std::mt19937_64 rng(seed);
  std::binomial_distribution<int> draw(n, p);
  std::vector<double> v(static_cast<size_t>(resamples));
  for (double& x : v) x = static_cast<double>(draw(rng)) / n;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {p, at(0.025), at(0.975)};
}

}  // namespace ttap

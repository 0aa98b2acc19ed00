// Baselines of `ttap eval` (k-means, z-score, random); see eval_baselines.h.
#include "bench/harness/eval_baselines.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace ttap {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kMinStd = 1e-9;
constexpr double kMaxZ = 1e6;

double SquaredDistance(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double x = a[i] - b[i];
    d += x * x;
  }
  return d;
}

// 95th percentile (nearest rank on the sorted copy); 1 when it is not positive or |v| is empty.
double Scale95(std::vector<double> v) {
  if (v.empty()) return 1;
  std::sort(v.begin(), v.end());
  const double q = v[std::min(v.size() - 1, static_cast<size_t>(0.95 * (v.size() - 1) + 0.5))];
  return q > 0 && std::isfinite(q) ? q : 1;
}

double Squash(double value, double scale) {
  if (std::isnan(value)) return kNaN;
  if (!std::isfinite(value)) return 1;
  return value / (value + scale);
}

}  // namespace

StandardScaler FitScaler(const FeatureRows& rows) {
  StandardScaler s;
  if (rows.empty()) return s;
  size_t dims = 0;
  for (const auto& r : rows) dims = std::max(dims, r.size());
  s.mean.assign(dims, 0);
  s.std.assign(dims, 0);
  const double n = static_cast<double>(rows.size());
  for (const auto& r : rows) {
    for (size_t j = 0; j < r.size(); ++j) s.mean[j] += r[j] / n;
  }
  for (const auto& r : rows) {
    for (size_t j = 0; j < dims; ++j) {
      const double x = (j < r.size() ? r[j] : 0) - s.mean[j];
      s.std[j] += x * x / n;
    }
  }
  for (double& v : s.std) v = std::max(std::sqrt(v), kMinStd);
  return s;
}

std::vector<double> Standardise(const StandardScaler& scaler, const std::vector<double>& row) {
  std::vector<double> out(scaler.mean.size(), 0);
  for (size_t j = 0; j < out.size(); ++j) {
    const double x = j < row.size() ? row[j] : 0;
    out[j] = std::clamp((x - scaler.mean[j]) / scaler.std[j], -kMaxZ, kMaxZ);
  }
  return out;
}

KMeansModel FitKMeans(const FeatureRows& rows, const KMeansOptions& options) {
  KMeansModel model;
  if (rows.empty() || options.k < 1) return model;
  std::mt19937_64 rng(options.seed);
  // Subsample very large fit sets (seeded, without replacement).
  std::vector<size_t> pick(rows.size());
  std::iota(pick.begin(), pick.end(), 0);
  if (options.max_fit_rows > 0 && pick.size() > options.max_fit_rows) {
    std::shuffle(pick.begin(), pick.end(), rng);
    pick.resize(options.max_fit_rows);
    std::sort(pick.begin(), pick.end());
  }
  FeatureRows fit;
  fit.reserve(pick.size());
  for (size_t i : pick) fit.push_back(rows[i]);
  model.scaler = FitScaler(fit);
  std::vector<std::vector<double>> z;
  z.reserve(fit.size());
  for (const auto& r : fit) z.push_back(Standardise(model.scaler, r));
  const size_t n = z.size();

  // k-means++: the first centre uniformly, then each with probability proportional to D^2.
  std::vector<double> d2(n, std::numeric_limits<double>::infinity());
  auto& centres = model.centroids;
  centres.push_back(z[std::uniform_int_distribution<size_t>(0, n - 1)(rng)]);
  while (centres.size() < static_cast<size_t>(options.k)) {
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      d2[i] = std::min(d2[i], SquaredDistance(z[i], centres.back()));
      total += d2[i];
    }
    if (!(total > 0)) break;  // fewer distinct rows than k
    double target = std::uniform_real_distribution<double>(0, total)(rng);
    size_t chosen = n - 1;
    for (size_t i = 0; i < n; ++i) {
      target -= d2[i];
      if (target < 0 && d2[i] > 0) {
        chosen = i;
        break;
      }
    }
    if (!(d2[chosen] > 0)) {
      // Rounding left us on a duplicate: take the farthest row instead.
      chosen = static_cast<size_t>(std::max_element(d2.begin(), d2.end()) - d2.begin());
    }
    centres.push_back(z[chosen]);
  }

  // Lloyd iterations until no assignment changes.
  std::vector<int> assign(n, -1);
  const size_t dims = model.scaler.mean.size();
  for (int it = 0; it < options.max_iterations; ++it) {
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      int best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (size_t c = 0; c < centres.size(); ++c) {
        const double d = SquaredDistance(z[i], centres[c]);
        if (d < best_d) {
          best_d = d;
          best = static_cast<int>(c);
        }
      }
      if (assign[i] != best) {
        assign[i] = best;
        changed = true;
      }
    }
    if (!changed) break;
    std::vector<std::vector<double>> sums(centres.size(), std::vector<double>(dims, 0));
    std::vector<size_t> counts(centres.size(), 0);
    for (size_t i = 0; i < n; ++i) {
      ++counts[assign[i]];
      for (size_t j = 0; j < dims; ++j) sums[assign[i]][j] += z[i][j];
    }
    for (size_t c = 0; c < centres.size(); ++c) {
      if (counts[c] == 0) continue;  // an empty cluster keeps its centre
      for (size_t j = 0; j < dims; ++j) centres[c][j] = sums[c][j] / counts[c];
    }
  }
  std::vector<double> dist(n);
  for (size_t i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& c : centres) best = std::min(best, SquaredDistance(z[i], c));
    dist[i] = std::sqrt(best);
  }
  model.scale = Scale95(std::move(dist));
  return model;
}

int NearestCentroid(const KMeansModel& model, const std::vector<double>& row, double* distance) {
  if (!model.ok()) {
    if (distance) *distance = kNaN;
    return -1;
  }
  const std::vector<double> z = Standardise(model.scaler, row);
  int best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < model.centroids.size(); ++c) {
    const double d = SquaredDistance(z, model.centroids[c]);
    if (d < best_d) {
      best_d = d;
      best = static_cast<int>(c);
    }
  }
  if (distance) *distance = std::sqrt(best_d);
  return best;
}

std::vector<double> KMeansScores(const KMeansModel& model, const FeatureRows& rows) {
  std::vector<double> out(rows.size(), kNaN);
  if (!model.ok()) return out;
  for (size_t i = 0; i < rows.size(); ++i) {
    double d = 0;
    NearestCentroid(model, rows[i], &d);
    out[i] = Squash(d, model.scale);
  }
  return out;
}

ZScoreModel FitZScore(const FeatureRows& rows) {
  ZScoreModel model;
  model.scaler = FitScaler(rows);
  if (!model.ok()) return model;
  std::vector<double> z(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) z[i] = MaxAbsZ(model, rows[i]);
  model.scale = Scale95(std::move(z));
  return model;
}

double MaxAbsZ(const ZScoreModel& model, const std::vector<double>& row) {
  double best = 0;
  for (double v : Standardise(model.scaler, row)) best = std::max(best, std::fabs(v));
  return best;
}

std::vector<double> ZScoreScores(const ZScoreModel& model, const FeatureRows& rows) {
  std::vector<double> out(rows.size(), kNaN);
  if (!model.ok()) return out;
  for (size_t i = 0; i < rows.size(); ++i) out[i] = Squash(MaxAbsZ(model, rows[i]), model.scale);
  return out;
}

std::vector<double> RandomScores(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> out(n);
  for (double& v : out) v = u(rng);
  return out;
}

uint64_t StableHash(const std::string& text, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

double MeanScore(const std::vector<double>& window_scores) {
  double sum = 0;
  size_t n = 0;
  for (double v : window_scores) {
    if (std::isnan(v)) continue;
    sum += v;
    ++n;
  }
  return n == 0 ? kNaN : sum / n;
}

}  // namespace ttap

// Unsupervised baselines that `ttap eval` (bench/harness/eval_command.cpp) compares the rules (and
// the learned window scorer) against. Each scores window feature vectors (window_features.h) in
// 0..1; a trace's score is the mean of its window scores (the MIL assumption the rules use too).
// Fitted on the train split's windows only. Pure, deterministic for a seed (std::mt19937_64), no
// I/O, no exceptions; any thread.
//
//  - k-means: features standardised with the fit data's mean/std, k-means++ initialisation, Lloyd
//    iterations; score = d / (d + s), d the distance to the nearest centroid, s the 95th
//    percentile of d over the fit data (so about 5% of fit windows score >= 0.5).
//  - z-score: mean/std of each feature over the windows of clean train traces; score =
//    z / (z + s), z the largest |z| over the features, s its 95th percentile over the fit data.
//  - random: uniform scores from a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ttap {

using FeatureRows = std::vector<std::vector<double>>;

// Per-feature mean and standard deviation (std floored at a tiny positive value).
struct StandardScaler {
  std::vector<double> mean, std;
};
// Empty scaler (no features) when |rows| is empty.
StandardScaler FitScaler(const FeatureRows& rows);
// (row - mean) / std; missing entries count as 0.
std::vector<double> Standardise(const StandardScaler& scaler, const std::vector<double>& row);

struct KMeansOptions {
  int k = 8;
  uint64_t seed = 1;
  int max_iterations = 100;
  size_t max_fit_rows = 200000;  // larger fit sets are subsampled (seeded) to this many rows
};

struct KMeansModel {
  StandardScaler scaler;
  std::vector<std::vector<double>> centroids;  // in standardised space
  double scale = 1;                            // the 95th percentile of fit distances
  bool ok() const { return !centroids.empty(); }
};

// At most min(k, number of distinct rows) centroids; not ok() when |rows| is empty.
KMeansModel FitKMeans(const FeatureRows& rows, const KMeansOptions& options);
// Index of the nearest centroid (-1 when the model is not ok) and its distance.
int NearestCentroid(const KMeansModel& model, const std::vector<double>& row, double* distance);
// One score in 0..1 per row; NaN when the model is not ok.
std::vector<double> KMeansScores(const KMeansModel& model, const FeatureRows& rows);

struct ZScoreModel {
  StandardScaler scaler;
  double scale = 1;  // the 95th percentile of the fit rows' max |z|
  bool ok() const { return !scaler.mean.empty(); }
};
// |rows|: the windows of clean traces.
ZScoreModel FitZScore(const FeatureRows& rows);
// Largest |z| of |row| over the features.
double MaxAbsZ(const ZScoreModel& model, const std::vector<double>& row);
// One score in 0..1 per row; NaN when the model is not ok.
std::vector<double> ZScoreScores(const ZScoreModel& model, const FeatureRows& rows);

// |n| uniform scores in [0, 1), deterministic from |seed|.
std::vector<double> RandomScores(size_t n, uint64_t seed);
// A stable 64-bit hash (FNV-1a) for deriving per-trace seeds from names.
uint64_t StableHash(const std::string& text, uint64_t seed = 0);

// The mean of |window_scores| ignoring NaN; NaN when none is finite.
double MeanScore(const std::vector<double>& window_scores);

}  // namespace ttap

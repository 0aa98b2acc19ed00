// Unit tests of the `ttap eval` baselines (bench/harness/eval_baselines.h): k-means separates
// obvious clusters and is deterministic for a seed, the z-score flags an outlier window, random
// scores are deterministic.
#include "bench/harness/eval_baselines.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

namespace {

// |n| points around each of (0, 0, 0) and (10, 10, 10).
ttap::FeatureRows TwoBlobs(int n) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.3);
  ttap::FeatureRows rows;
  for (int i = 0; i < n; ++i) rows.push_back({noise(rng), noise(rng), noise(rng)});
  for (int i = 0; i < n; ++i) rows.push_back({10 + noise(rng), 10 + noise(rng), 10 + noise(rng)});
  return rows;
}

}  // namespace

TEST_CASE("k-means separates two obvious clusters", "[eval]") {
  const auto rows = TwoBlobs(50);
  ttap::KMeansOptions o;
  o.k = 2;
  o.seed = 3;
  auto model = ttap::FitKMeans(rows, o);
  REQUIRE(model.ok());
  REQUIRE(model.centroids.size() == 2);
  const int a = ttap::NearestCentroid(model, rows[0], nullptr);
  const int b = ttap::NearestCentroid(model, rows[50], nullptr);
  CHECK(a != b);
  for (int i = 0; i < 50; ++i) CHECK(ttap::NearestCentroid(model, rows[i], nullptr) == a);
  for (int i = 50; i < 100; ++i) CHECK(ttap::NearestCentroid(model, rows[i], nullptr) == b);
  // Far from both clusters scores high, a cluster centre low.
  auto scores = ttap::KMeansScores(model, {{5, 5, 50}, {0, 0, 0}, {10, 10, 10}});
  CHECK(scores[0] > 0.9);
  CHECK(scores[1] < 0.5);
  CHECK(scores[2] < 0.5);
  for (double s : scores) CHECK((s >= 0 && s <= 1));
}

TEST_CASE("k-means is deterministic for a seed", "[eval]") {
  const auto rows = TwoBlobs(40);
  ttap::KMeansOptions o;  // k = 8 > the natural 2 clusters
  o.seed = 11;
  auto m1 = ttap::FitKMeans(rows, o);
  auto m2 = ttap::FitKMeans(rows, o);
  REQUIRE(m1.centroids.size() == 8);
  CHECK(m1.centroids == m2.centroids);
  CHECK(m1.scale == m2.scale);
  CHECK(ttap::KMeansScores(m1, rows) == ttap::KMeansScores(m2, rows));
  // Fewer distinct rows than k: no duplicate centres, still usable.
  auto small = ttap::FitKMeans({{1, 1}, {1, 1}, {2, 2}}, o);
  REQUIRE(small.ok());
  CHECK(small.centroids.size() == 2);
  // Nothing to fit on.
  auto none = ttap::FitKMeans({}, o);
  CHECK_FALSE(none.ok());
  CHECK(std::isnan(ttap::KMeansScores(none, {{1, 2}})[0]));
}

TEST_CASE("z-score flags an outlier window", "[eval]") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 1);
  ttap::FeatureRows clean;
  for (int i = 0; i < 200; ++i) clean.push_back({1 + noise(rng), 2 + 0.1 * noise(rng), 0.0});
  auto model = ttap::FitZScore(clean);
  REQUIRE(model.ok());
  // Feature 1 is 48 standard deviations away; feature 2 is constant in the fit data.
  auto scores = ttap::ZScoreScores(model, {{1, 2, 0}, {1, 50, 0}, {1, 2, 3}});
  CHECK(scores[0] < 0.5);
  CHECK(scores[1] > 0.9);
  CHECK(scores[2] > 0.9);
  CHECK(ttap::MaxAbsZ(model, {1, 50, 0}) > 40);
  CHECK(ttap::MeanScore(scores) == Approx((scores[0] + scores[1] + scores[2]) / 3));
  auto none = ttap::FitZScore({});
  CHECK_FALSE(none.ok());
  CHECK(std::isnan(ttap::ZScoreScores(none, {{1}})[0]));
}

TEST_CASE("random scores are deterministic for a seed", "[eval]") {
  auto a = ttap::RandomScores(100, 42);
  auto b = ttap::RandomScores(100, 42);
  auto c = ttap::RandomScores(100, 43);
  CHECK(a == b);
  CHECK(a != c);
  for (double v : a) CHECK((v >= 0 && v < 1));
  CHECK(ttap::StableHash("trace_1") == ttap::StableHash("trace_1"));
  CHECK(ttap::StableHash("trace_1") != ttap::StableHash("trace_2"));
  CHECK(std::isnan(ttap::MeanScore({})));
}

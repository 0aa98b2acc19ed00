// Unit tests of the `ttap eval` statistics core: AUC-ROC, its bootstrap CI, finding matching,
// window labels and category accuracy.
#include "bench/harness/eval_metrics.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ttap {
namespace {

TEST_CASE("AucRoc perfect, reversed and all-equal scores", "[eval]") {
  std::vector<int> labels = {0, 0, 0, 1, 1};
  CHECK(AucRoc({0.1, 0.2, 0.3, 0.8, 0.9}, labels) == Approx(1.0));
  CHECK(AucRoc({0.9, 0.8, 0.7, 0.2, 0.1}, labels) == Approx(0.0));
  CHECK(AucRoc({0.5, 0.5, 0.5, 0.5, 0.5}, labels) == Approx(0.5));
}

TEST_CASE("AucRoc hand-computed case with ties", "[eval]") {
  // Positives 0.4 and 0.8 vs negatives 0.1 and 0.4: 0.4 beats 0.1 (1), ties 0.4 (0.5); 0.8 beats
  // both (2). U = 3.5 over 4 pairs.
  CHECK(AucRoc({0.1, 0.4, 0.4, 0.8}, {0, 0, 1, 1}) == Approx(0.875));
  // Shuffled order gives the same answer.
  CHECK(AucRoc({0.4, 0.8, 0.1, 0.4}, {1, 1, 0, 0}) == Approx(0.875));
  // Three negatives {1, 2, 2}, two positives {2, 3}: 2 vs {1: 1, 2: .5, 2: .5} = 2; 3 vs all = 3.
  CHECK(AucRoc({1, 2, 2, 2, 3}, {0, 0, 1, 0, 1}) == Approx(5.0 / 6.0));
}

TEST_CASE("AucRoc is NaN when a class is empty or sizes differ", "[eval]") {
  CHECK(std::isnan(AucRoc({0.1, 0.2, 0.3}, {1, 1, 1})));
  CHECK(std::isnan(AucRoc({0.1, 0.2, 0.3}, {0, 0, 0})));
  CHECK(std::isnan(AucRoc({}, {})));
  CHECK(std::isnan(AucRoc({0.1, 0.2}, {0, 1, 1})));
}

// Informative but imperfect scores (AUC 30/35): positives and negatives partly interleave.
void NoisyData(int copies, std::vector<double>* scores, std::vector<int>* labels) {
  const std::vector<double> base_scores = {0.9, 0.1, 0.4, 0.7,  0.6,  0.2,
                                           0.3, 0.8, 0.5, 0.65, 0.35, 0.15};
  const std::vector<int> base_labels = {1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 1, 0};
  for (int c = 0; c < copies; ++c) {
    scores->insert(scores->end(), base_scores.begin(), base_scores.end());
    labels->insert(labels->end(), base_labels.begin(), base_labels.end());
  }
}

TEST_CASE("BootstrapAucRoc contains the estimate and is deterministic", "[eval]") {
  std::vector<double> scores;
  std::vector<int> labels;
  NoisyData(2, &scores, &labels);
  Interval95 a = BootstrapAucRoc(scores, labels, 500, 42);
  CHECK(a.estimate == Approx(30.0 / 35.0));
  CHECK(a.low <= a.estimate);
  CHECK(a.estimate <= a.high);
  CHECK(a.low < a.high);
  CHECK(a.low >= 0.0);
  CHECK(a.high <= 1.0);
  Interval95 b = BootstrapAucRoc(scores, labels, 500, 42);
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
  CHECK(a.estimate == b.estimate);
}

TEST_CASE("BootstrapAucRoc narrows with more data", "[eval]") {
  std::vector<double> small_scores, big_scores;
  std::vector<int> small_labels, big_labels;
  NoisyData(2, &small_scores, &small_labels);
  NoisyData(20, &big_scores, &big_labels);
  Interval95 small = BootstrapAucRoc(small_scores, small_labels, 500, 7);
  Interval95 big = BootstrapAucRoc(big_scores, big_labels, 500, 7);
  CHECK(small.estimate == Approx(big.estimate));
  CHECK(big.high - big.low < small.high - small.low);
}

TEST_CASE("BootstrapAucRoc degenerate inputs", "[eval]") {
  Interval95 one_class = BootstrapAucRoc({0.1, 0.2}, {1, 1}, 100, 1);
  CHECK(std::isnan(one_class.estimate));
  CHECK(std::isnan(one_class.low));
  CHECK(std::isnan(one_class.high));
  Interval95 none = BootstrapAucRoc({0.1, 0.9}, {0, 1}, 0, 1);
  CHECK(none.estimate == Approx(1.0));
  CHECK(std::isnan(none.low));
  // Two points, one per class: half the resamples miss a class and are redrawn.
  Interval95 tiny = BootstrapAucRoc({0.1, 0.9}, {0, 1}, 100, 1);
  CHECK(tiny.low == Approx(1.0));
  CHECK(tiny.high == Approx(1.0));
}

TEST_CASE("MatchFindings overlaps and code mismatch", "[eval]") {
  std::vector<LabeledInterval> labels = {{"TTAP001", 100, 200}, {"TTAP002", 300, 400}};
  std::vector<LabeledInterval> findings = {
      {"TTAP001", 150, 250},  // overlaps label 0, same code: TP
      {"TTAP001", 300, 400},  // overlaps label 1 but code differs: FP
      {"TTAP002", 400, 500},  // touches label 1 only at its end (half-open): FP
  };
  PrecisionRecall pr = MatchFindings(findings, labels);
  CHECK(pr.true_positives == 1);
  CHECK(pr.false_positives == 2);
  CHECK(pr.false_negatives == 1);
  CHECK(pr.precision == Approx(1.0 / 3.0));
  CHECK(pr.recall == Approx(0.5));
  CHECK(pr.f1 == Approx(2.0 * (1.0 / 3.0) * 0.5 / (1.0 / 3.0 + 0.5)));
}

TEST_CASE("MatchFindings matches each label at most once, greedy by overlap", "[eval]") {
  std::vector<LabeledInterval> labels = {{"A", 0, 100}};
  std::vector<LabeledInterval> findings = {{"A", 90, 200}, {"A", 10, 90}};
  PrecisionRecall pr = MatchFindings(findings, labels);
  CHECK(pr.true_positives == 1);
  CHECK(pr.false_positives == 1);
  CHECK(pr.false_negatives == 0);
  CHECK(pr.precision == Approx(0.5));
  CHECK(pr.recall == Approx(1.0));
  CHECK(pr.f1 == Approx(2.0 / 3.0));

  // Greedy by largest overlap: finding 0 overlaps label 0 by 10 and label 1 by 50; finding 1
  // overlaps only label 0 (by 80). Largest first: (f1,l0)=80, then (f0,l1)=50 -> both match.
  std::vector<LabeledInterval> two_labels = {{"A", 0, 100}, {"A", 100, 200}};
  std::vector<LabeledInterval> two_findings = {{"A", 90, 150}, {"A", 10, 90}};
  PrecisionRecall both = MatchFindings(two_findings, two_labels);
  CHECK(both.true_positives == 2);
  CHECK(both.false_positives == 0);
  CHECK(both.false_negatives == 0);
  CHECK(both.f1 == Approx(1.0));
}

TEST_CASE("MatchFindings empty inputs", "[eval]") {
  PrecisionRecall none = MatchFindings({}, {});
  CHECK(none.true_positives == 0);
  CHECK(none.precision == 0.0);
  CHECK(none.recall == 0.0);
  CHECK(none.f1 == 0.0);
  PrecisionRecall only_labels = MatchFindings({}, {{"A", 0, 10}});
  CHECK(only_labels.false_negatives == 1);
  CHECK(only_labels.recall == 0.0);
  PrecisionRecall only_findings = MatchFindings({{"A", 0, 10}}, {});
  CHECK(only_findings.false_positives == 1);
  CHECK(only_findings.precision == 0.0);
}

TEST_CASE("WindowLabels marks windows overlapping any label", "[eval]") {
  std::vector<std::pair<int64_t, int64_t>> windows = {{0, 100}, {100, 200}, {200, 300}, {300, 400}};
  std::vector<LabeledInterval> labels = {{"A", 150, 160}, {"B", 300, 301}, {"C", 0, 0}};
  std::vector<int> expected = {0, 1, 0, 1};
  CHECK(WindowLabels(windows, labels) == expected);
  CHECK(WindowLabels(windows, {}) == std::vector<int>(4, 0));
  CHECK(WindowLabels({}, labels).empty());
  // A label spanning several windows marks them all; touching at an edge does not count.
  std::vector<int> spanning = {1, 1, 0, 0};
  CHECK(WindowLabels(windows, {{"A", 50, 200}}) == spanning);
}

TEST_CASE("CategoryAccuracy over flagged, labelled windows", "[eval]") {
  std::vector<std::string> predicted = {"A", "B", "", "A", "C"};
  std::vector<std::string> truth = {"A", "A", "A", "", "C"};
  // Counted: windows 0 (ok), 1 (wrong), 4 (ok); 2 is not flagged, 3 has no label.
  CHECK(CategoryAccuracy(predicted, truth) == Approx(2.0 / 3.0));
  CHECK(CategoryAccuracy({"A"}, {"A"}) == Approx(1.0));
  CHECK(std::isnan(CategoryAccuracy({"", "A"}, {"A", ""})));
  CHECK(std::isnan(CategoryAccuracy({}, {})));
}

}  // namespace
}  // namespace ttap

TEST_CASE("bootstrap proportion: estimate, deterministic interval, edge cases", "[eval]") {
  const ttap::Interval95 a = ttap::BootstrapProportion(30, 40, 1000, 7);
  CHECK(a.estimate == Approx(0.75));
  CHECK(a.low < 0.75);
  CHECK(a.high > 0.75);
  CHECK(a.low > 0.5);
  CHECK(a.high < 0.95);
  const ttap::Interval95 b = ttap::BootstrapProportion(30, 40, 1000, 7);
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
  CHECK(std::isnan(ttap::BootstrapProportion(0, 0, 100, 1).estimate));
  CHECK(std::isnan(ttap::BootstrapProportion(3, 4, 0, 1).low));
  const ttap::Interval95 all = ttap::BootstrapProportion(10, 10, 200, 1);
  CHECK(all.low == 1.0);
}

// The cross-rank analysis (analysis/model/job_analysis.h): clocks aligned on the collectives' ends,
// the late ranks and what the job saves without their lateness, on inline timelines with known
// arrivals; traces of different jobs are not compared; then the 8 PARAM DLRM ranks of
// ../shared (skipped when absent), read by hand: ranks 2, 6 and 7 arrive last.
#include "analysis/model/job_analysis.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "analysis/load/trace_loader.h"
#include "analysis/tiny_trace.h"
#include "test_support.h"

using namespace ttap;

namespace {

// A rank whose step |number| starts at |start| (us, own clock) and whose two all-reduces start
// at |a1| and |a2| and end at 100 and 200 (us, the job's clock) plus the rank's clock |offset|.
RankTimeline Rank(int rank, int64_t offset, int64_t start, int64_t a1, int64_t a2) {
  RankTimeline t;
  t.rank = rank;
  const int64_t us = 1000;
  t.steps.push_back({7, (start + offset) * us, (210 + offset) * us});
  t.collectives.push_back(
      {7, "ncclKernel_AllReduce_RING_LL", (a1 + offset) * us, (100 + offset) * us});
  t.collectives.push_back(
      {7, "ncclKernel_AllReduce_RING_LL", (a2 + offset) * us, (200 + offset) * us});
  return t;
}

}  // namespace

TEST_CASE("job: the late rank, the others' wait and the saving, across clock offsets", "[job]") {
  // Ranks 0-3 arrive at 10/20/30 us before each end; rank 3 arrives late at both collectives
  // (90 and 190: 70 us after the median, 60 us after the next latest) and its clock is 5 ms off.
  std::vector<RankTimeline> ranks = {Rank(0, 0, 0, 20, 120), Rank(1, 0, 0, 25, 125),
                                     Rank(2, 0, 0, 30, 130), Rank(3, 5000, 50, 90, 190)};
  JobAnalysis job = AnalyseJob(ranks);
  REQUIRE(job.ok);
  CHECK(job.ranks == 4);
  CHECK(job.steps == 1);
  CHECK(job.collectives == 2);
  CHECK(job.job_step_us == Approx(210));
  REQUIRE(job.late_ranks == std::vector<int>{3});
  REQUIRE(job.per_rank.size() == 4);
  // The median arrival (upper middle of four) is 30 and 130: rank 3 is 60 + 60 us late.
  CHECK(job.per_rank[3].late_us_per_step == Approx(120));
  CHECK(job.per_rank[3].last_arrivals == 2);
  CHECK(job.per_rank[0].wait_us_per_step == Approx(70 + 70));
  // Without its lateness each collective starts when rank 2 arrives: 60 us earlier, twice.
  CHECK(job.saving_us_per_step == Approx(120));
  CHECK(job.speedup() == Approx(210.0 / 90.0));
}

TEST_CASE("job: ranks arriving together hold nobody back; other jobs are not compared", "[job]") {
  JobAnalysis even = AnalyseJob({Rank(0, 0, 0, 20, 120), Rank(1, 300, 0, 21, 121)});
  REQUIRE(even.ok);
  CHECK(even.late_ranks.empty());
  CHECK(even.saving_us_per_step == 0);
  // Collectives that do not end together (another job's trace): not compared.
  RankTimeline other = Rank(1, 0, 0, 21, 121);
  other.collectives[1].end_ns += 5000000;
  other.collectives[1].start_ns += 5000000;
  JobAnalysis mixed = AnalyseJob({Rank(0, 0, 0, 20, 120), other});
  CHECK_FALSE(mixed.ok);
  CHECK(mixed.why_not.find("not the ranks of one job") != std::string::npos);
  CHECK_FALSE(AnalyseJob({Rank(0, 0, 0, 20, 120)}).ok);
  CHECK_FALSE(AnalyseJob({Rank(0, 0, 0, 20, 120), Rank(0, 0, 0, 20, 120)}).ok);
  // No collective in common (different kinds): nothing to compare.
  RankTimeline send = Rank(1, 0, 0, 21, 121);
  for (auto& c : send.collectives) c.kind = "ncclKernel_SendRecv";
  CHECK_FALSE(AnalyseJob({Rank(0, 0, 0, 20, 120), send}).ok);
}

TEST_CASE("job: the PARAM DLRM ranks: ranks 7, 6 and 2 hold the others back", "[job][real]") {
  namespace fs = std::filesystem;
  const std::string dir = ttap_test::RealTracesDir();
  std::vector<std::string> files;
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("param--dlrm_kineto.tar.gz__worker", 0) == 0) files.push_back(e.path());
    }
  }
  if (files.size() != 8) {
    WARN("the 8 PARAM DLRM ranks of ../shared are not here: skipped");
    return;
  }
  std::vector<RankTimeline> ranks;
  for (const std::string& f : files) {
    auto t = LoadTrace(f, {});
    REQUIRE(t.ok());
    ranks.push_back(ExtractRankTimeline(**t));
  }
  JobAnalysis job = AnalyseJob(ranks);
  REQUIRE(job.ok);
  CHECK(job.collectives == 8);
  // Read by hand before ttap ran on them: the first all-to-all ends within 2 us on every rank;
  // rank 7 starts it last (10 us kernel), ranks 2 and 6 0.5 ms before it, rank 1 7.6 ms before.
  std::vector<int> late = job.late_ranks;
  std::sort(late.begin(), late.end());
  CHECK(late == std::vector<int>{2, 6, 7});
  CHECK(job.late_ranks.front() == 7);
  CHECK(job.per_rank[1].wait_us_per_step > job.per_rank[7].wait_us_per_step);
  CHECK(job.saving_us_per_step > 1000);
  CHECK(job.saving_us_per_step < job.job_step_us);
}

TEST_CASE("job: the DLRM ranks' per-collective last rank and waits agree with the reference",
          "[job][real]") {
  // ../shared/traces/hta_stragglers_dlrm.json: per collective, each rank's start and end from
  // the raw JSON (independent of ttap), the last to arrive and each rank's wait; HTA's
  // get_potential_stragglers(3) answers [2, 6, 7].
  namespace fs = std::filesystem;
  const std::string ref_path = ttap_test::SharedDir() + "/traces/hta_stragglers_dlrm.json";
  if (!fs::exists(ref_path)) {
    WARN("../shared/traces/hta_stragglers_dlrm.json is not here: skipped");
    return;
  }
  const std::string ref_text = ttap_test::ReadFile(ref_path);
  // The reference names its files; the test reads them from ../shared/traces/real.
  std::vector<RankTimeline> ranks;
  for (int r = 0; r < 8; ++r) {
    const std::string key = "\"" + std::to_string(r) + "\": \"";
    const size_t files = ref_text.find("\"files\"");
    REQUIRE(files != std::string::npos);
    const size_t at = ref_text.find(key, files);
    REQUIRE(at != std::string::npos);
    const size_t begin = at + key.size(), end = ref_text.find('"', begin);
    auto t = LoadTrace(ttap_test::RealTracesDir() + "/" + ref_text.substr(begin, end - begin), {});
    REQUIRE(t.ok());
    ranks.push_back(ExtractRankTimeline(**t));
  }
  JobAnalysis job = AnalyseJob(ranks);
  REQUIRE(job.ok);
  REQUIRE(job.per_collective.size() == 8);
  // The reference's last ranks, collective by collective: rank 7 five times, then 5, 5, 4 (from
  // "last_to_arrive"), and rank 1's waits (7624 us in the first).
  std::vector<int> last;
  for (const CollectiveSkew& c : job.per_collective) last.push_back(c.last_rank);
  size_t pos = 0;
  std::vector<int> ref_last;
  while ((pos = ref_text.find("\"last_to_arrive\": ", pos)) != std::string::npos) {
    pos += 18;
    ref_last.push_back(std::stoi(ref_text.substr(pos)));
  }
  CHECK(last == ref_last);
  CHECK(job.per_collective[0].wait_us[1] == Approx(7624).margin(3));
  CHECK(job.per_collective[0].wait_us[7] == Approx(0).margin(3));
  std::vector<int> late = job.late_ranks;
  std::sort(late.begin(), late.end());
  CHECK(late == std::vector<int>{2, 6, 7});  // HTA's get_potential_stragglers(3)
}

TEST_CASE("job: a rank whose kernels take longer every step is load imbalance", "[job]") {
  // Rank 2's kernels take 6 ms a step against the others' 4 ms (a larger batch): it arrives late
  // at the all-reduces, and TTA019 names it with 2 ms/step more work.
  std::vector<RankTimeline> ranks = {Rank(0, 0, 0, 20, 120), Rank(1, 0, 0, 25, 125),
                                     Rank(2, 0, 0, 90, 190)};
  const int64_t compute_us[3] = {4000, 4100, 6000};
  for (int k = 0; k < 3; ++k) ranks[k].steps[0].compute_ns = compute_us[k] * 1000;
  JobAnalysis job = AnalyseJob(ranks);
  REQUIRE(job.ok);
  CHECK(job.median_compute_us == Approx(4100));
  REQUIRE(job.imbalanced.size() == 1);
  CHECK(job.imbalanced[0].first == 2);
  CHECK(job.imbalanced[0].second == Approx(1900));
  CHECK(job.per_rank[2].compute_us_per_step == Approx(6000));
  // Even work: none.
  for (auto& r : ranks) r.steps[0].compute_ns = 4000000;
  CHECK(AnalyseJob(ranks).imbalanced.empty());
}

TEST_CASE("job: each kernel counts in the step that launched it, also among thousands of steps",
          "[job]") {
  // 5,000 steps of one compute kernel and one all-reduce each: every step gets its own kernel's
  // time and every collective its own step (a search per kernel; it was a scan of every step,
  // minutes on a 106k-step trace).
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  for (int s = 0; s < 5000; ++s) {
    const double start = 1000 + 100.0 * s;
    t.Step(s, start, 90);
    t.Kernel("sgemm", start + 10, 5, start + 20, 7 + s % 3);
    t.Kernel("ncclKernel_AllReduce_RING_LL", start + 40, 5, start + 50, 10);
  }
  auto trace = t.Load();
  const RankTimeline tl = ExtractRankTimeline(*trace);
  REQUIRE(tl.steps.size() == 5000);
  REQUIRE(tl.collectives.size() == 5000);
  int wrong = 0;
  for (int s = 0; s < 5000; ++s) {
    wrong += tl.steps[s].compute_ns != (7 + s % 3) * 1000;
    wrong += tl.collectives[s].step != tl.steps[s].number;
  }
  CHECK(wrong == 0);
}

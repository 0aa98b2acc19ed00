// Unit tests of the window features the `ttap eval` baselines score
// (analysis/model/window_features.h): shapes, and hand-computed values on a tiny inline trace.
#include "analysis/model/window_features.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "analysis/tiny_trace.h"

namespace {

using ttap_test::TinyTrace;

// One 1000 us step cut into 10 windows of 100 us.
std::unique_ptr<ttap::Trace> SmallTrace() {
  TinyTrace t;
  t.Device(0, "NVIDIA A100", 8, 0)
      .Step(1, 0, 1000)
      .Python("train.py", 3, "main", 0, 1000)
      .Kernel("gemm", 0, 5, 10, 200)  // launched at 0, runs 10..210
      .Runtime("cudaStreamSynchronize", 400, 200)
      .Launch("Memcpy HtoD (Pageable -> Device)", 700, 5, 720, 10, "gpu_memcpy", 7,
              "cudaMemcpyAsync", 1 << 20);
  return t.Load(10);
}

size_t Index(const std::string& name) {
  const auto& names = ttap::WindowFeatureNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  FAIL("no feature " << name);
  return 0;
}

}  // namespace

TEST_CASE("WindowFeatures: one finite row of fixed length per window", "[eval]") {
  auto trace = SmallTrace();
  REQUIRE(trace->windows.size() == 10);
  auto rows = ttap::WindowFeatures(*trace);
  REQUIRE(rows.size() == 10);
  REQUIRE(ttap::WindowFeatureNames().size() == static_cast<size_t>(ttap::kWindowFeatureCount));
  for (const auto& r : rows) {
    REQUIRE(r.size() == static_cast<size_t>(ttap::kWindowFeatureCount));
    for (double v : r) CHECK(std::isfinite(v));
  }
}

TEST_CASE("WindowFeatures: hand-computed values", "[eval]") {
  auto trace = SmallTrace();
  auto rows = ttap::WindowFeatures(*trace);
  const size_t busy = Index("gpu_busy_share"), kernels = Index("log_kernels"),
               mean_k = Index("mean_log_kernel_us"), max_k = Index("max_log_kernel_us"),
               delay = Index("log_launch_delay_us"), sync = Index("sync_share"),
               runtime = Index("runtime_share"), memcpys = Index("log_memcpys"),
               bytes = Index("log_memcpy_bytes"), python = Index("python_share");
  // The kernel covers 90% of window 0, all of window 1 and 10% of window 2.
  CHECK(rows[0][busy] == Approx(0.9));
  CHECK(rows[1][busy] == Approx(1.0));
  CHECK(rows[2][busy] == Approx(0.1));
  CHECK(rows[3][busy] == Approx(0.0));
  // It starts in window 0: counted there, with its duration and launch delay (10 us).
  CHECK(rows[0][kernels] == Approx(std::log1p(1.0)));
  CHECK(rows[1][kernels] == Approx(0.0));
  CHECK(rows[0][mean_k] == Approx(std::log1p(200.0)));
  CHECK(rows[0][max_k] == Approx(std::log1p(200.0)));
  CHECK(rows[0][delay] == Approx(std::log1p(10.0)));
  // The synchronize call fills windows 4 and 5 (and counts as runtime time).
  CHECK(rows[4][sync] == Approx(1.0));
  CHECK(rows[5][sync] == Approx(1.0));
  CHECK(rows[6][sync] == Approx(0.0));
  CHECK(rows[4][runtime] == Approx(1.0));
  CHECK(rows[0][runtime] == Approx(0.05));  // the 5 us launch
  // The memcpy in window 7: 1 MiB, launched 20 us before it ran.
  CHECK(rows[7][memcpys] == Approx(std::log1p(1.0)));
  CHECK(rows[7][bytes] == Approx(std::log1p(1048576.0)));
  CHECK(rows[7][delay] == Approx(std::log1p(20.0)));
  CHECK(rows[6][memcpys] == Approx(0.0));
  // The python frame spans the whole step.
  for (const auto& r : rows) CHECK(r[python] == Approx(1.0));
}

TEST_CASE("WindowFeatures: overlap of GPU streams", "[eval]") {
  // Stream 7 busy 0..300 us, stream 13 busy 150..250 and 600..700: the streams overlap in window
  // 1 for 50 us and in window 2 for 50 us; window 6 has stream 13 alone.
  TinyTrace t;
  auto trace = t.Device(0, "NVIDIA A100", 8, 0)
                   .Step(1, 0, 1000)
                   .Kernel("gemm", 0, 2, 0, 300, 7)
                   .Kernel("augment", 100, 2, 150, 100, 13)
                   .Kernel("augment", 550, 2, 600, 100, 13)
                   .Load(10);
  REQUIRE(trace->windows.size() == 10);
  auto rows = ttap::WindowFeatures(*trace);
  const size_t overlap = Index("gpu_overlap_share"), busy = Index("gpu_busy_share");
  CHECK(rows[0][overlap] == Approx(0.0));
  CHECK(rows[1][overlap] == Approx(0.5));
  CHECK(rows[2][overlap] == Approx(0.5));
  CHECK(rows[3][overlap] == Approx(0.0));
  CHECK(rows[6][overlap] == Approx(0.0));
  CHECK(rows[6][busy] == Approx(1.0));
  // One stream alone never overlaps.
  auto single = SmallTrace();
  for (const auto& r : ttap::WindowFeatures(*single)) CHECK(r[overlap] == 0.0);
}

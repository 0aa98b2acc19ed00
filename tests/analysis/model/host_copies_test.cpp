// Tests for analysis/model/host_copies.h: the pinned bandwidth of a GPU's host link and a
// pageable copy's time once pinned (TTA003's what-if).
#include "analysis/model/host_copies.h"

#include <catch2/catch.hpp>

TEST_CASE("host copies: pinned bandwidth by host link, told by name where AMD shares numbers",
          "[model][TTA003]") {
  using ttap::KnownPinnedCopyGBps;
  CHECK(KnownPinnedCopyGBps(90, "NVIDIA H200") == 50.0);
  CHECK(KnownPinnedCopyGBps(100, "NVIDIA B200") == 50.0);
  CHECK(KnownPinnedCopyGBps(90, "NVIDIA GH200 480GB") == 200.0);
  CHECK(KnownPinnedCopyGBps(80, "NVIDIA A100-SXM4-80GB") == 24.0);
  CHECK(KnownPinnedCopyGBps(89, "NVIDIA L4") == 24.0);
  CHECK(KnownPinnedCopyGBps(70, "Tesla V100-SXM2-32GB") == 12.0);
  CHECK(KnownPinnedCopyGBps(75, "Tesla T4") == 12.0);
  // AMD writes gfx942 as compute capability 9.4: it is not an sm_90.
  CHECK(KnownPinnedCopyGBps(94, "AMD Instinct MI300X") == 50.0);
  CHECK(KnownPinnedCopyGBps(90, "AMD Instinct MI250X") == 24.0);
  CHECK(KnownPinnedCopyGBps(90, "AMD Radeon Graphics") == 0.0);
  CHECK(KnownPinnedCopyGBps(-1, "") == 0.0);
  CHECK(KnownPinnedCopyGBps(61, "Tesla P100") == 0.0);
}

TEST_CASE(
    "host copies: a pinned copy takes the faster of half its time and its bytes at the "
    "pinned bandwidth",
    "[model][TTA003]") {
  using ttap::PinnedCopyNs;
  // 36.8 MiB pageable in 4.76 ms on an H200 (bench/record's pageable run): 0.77 ms at 50 GB/s.
  CHECK(PinnedCopyNs(4760000, 38535168, 50.0) == Approx(770703).margin(1));
  // A V100's 12 GB/s is slower than twice an 8 GB/s pageable copy: half its time.
  CHECK(PinnedCopyNs(1000000, 8000000, 12.0) == 500000);
  // Unknown bandwidth or size: half.
  CHECK(PinnedCopyNs(1000000, 8000000, 0.0) == 500000);
  CHECK(PinnedCopyNs(1000000, -1, 50.0) == 500000);
  CHECK(PinnedCopyNs(0, 0, 50.0) == 0);
}

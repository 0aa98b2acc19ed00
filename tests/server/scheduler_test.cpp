// AnalysisScheduler (server/lsp/scheduler.h): requests coalesce while a run is in flight, a
// forced request or a different trace cancels the run in flight, a run that asks to run again
// does, and BlockUntilIdleForTest returns once nothing is pending or running.
#include "server/lsp/scheduler.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using ttap::CancelToken;
using ttap::lsp::AnalysisScheduler;

namespace {

// Waits (bounded) until |done| holds.
template <typename Pred>
bool Eventually(Pred done) {
  for (int i = 0; i < 500 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return done();
}

}  // namespace

TEST_CASE("scheduler: requests coalesce; force and a new trace cancel the run in flight",
          "[scheduler]") {
  AnalysisScheduler s;
  std::atomic<int> runs{0}, cancelled{0}, forced{0};
  std::atomic<bool> hold{true};
  s.Start(
      [&](bool force, const CancelToken& cancel) {
        ++runs;
        forced += force ? 1 : 0;
        s.SetInFlight("a.json", 1);
        while (hold && !cancel.cancelled())
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        cancelled += cancel.cancelled() ? 1 : 0;
        return false;
      },
      {});
  s.Request(false);
  REQUIRE(Eventually([&] { return s.AnalysingTrace(); }));
  for (int i = 0; i < 10; ++i) s.Request(false);  // one more run, not ten
  s.RequestTrace("a.json", 1);                    // the trace in flight: nothing cancelled
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(cancelled == 0);
  s.RequestTrace("b.json", 2);  // a newer trace: the run in flight is pointless
  REQUIRE(Eventually([&] { return cancelled == 1; }));
  hold = false;
  REQUIRE(s.BlockUntilIdleForTest(std::chrono::seconds(5)));
  CHECK(runs == 2);
  CHECK_FALSE(s.AnalysingTrace());

  hold = true;
  s.Request(false);
  REQUIRE(Eventually([&] { return runs == 3; }));
  s.Request(true);  // new settings: cancel, and the next run is forced
  REQUIRE(Eventually([&] { return cancelled == 2; }));
  hold = false;
  REQUIRE(s.BlockUntilIdleForTest(std::chrono::seconds(5)));
  CHECK(runs == 4);
  CHECK(forced == 1);
}

TEST_CASE("scheduler: a run that asks runs again; Stop cancels and joins", "[scheduler]") {
  AnalysisScheduler s;
  std::atomic<int> runs{0};
  std::atomic<bool> watching{false};
  s.Start([&](bool, const CancelToken&) { return ++runs < 3; },
          [&] {
            watching = true;
            while (s.Pause(10, CancelToken())) {
            }
          });
  s.Request(false);
  REQUIRE(s.BlockUntilIdleForTest(std::chrono::seconds(5)));
  CHECK(runs == 3);
  CHECK(Eventually([&] { return watching.load(); }));
  CancelToken cancel = CancelToken::Cancellable();
  cancel.Cancel();
  CHECK_FALSE(s.Pause(1, cancel));
  s.Stop();  // the watch loop's Pause returns false, both threads join
  CHECK(s.stopping());
  CHECK(s.BlockUntilIdleForTest(std::chrono::milliseconds(1)));
}

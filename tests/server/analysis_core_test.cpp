// AnalysisCore (server/core/analysis_core.h): the workspace index is shared while its root and
// path maps hold, file events replace it with an edited copy (a scan holding the old one keeps
// reading it unchanged), and RootOf picks the workspace folder that holds a trace.
#include "server/core/analysis_core.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "server/fixture_traces.h"
#include "test_support.h"

TEST_CASE("core: the workspace index is shared, and file events replace it", "[core]") {
  const std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", "print(1)\n");
  ttap::AnalysisCore core;
  const auto first = core.Index(root, {});
  REQUIRE(first->size() == 1);
  CHECK(core.Index(root, {}) == first);  // built once

  WriteOrFail(root + "/model.py", "x = 1\n");
  core.FilesChanged({root + "/model.py"}, {});
  const auto second = core.Index(root, {});
  CHECK(second != first);
  CHECK(second->size() == 2);
  CHECK(first->size() == 1);  // the index a scan already holds is not edited

  core.FilesChanged({}, {root + "/train.py"});
  CHECK(core.Index(root, {})->size() == 1);
  core.FilesChanged({root + "/notes.txt"}, {});  // not Python: nothing changes
  CHECK(core.Index(root, {})->size() == 1);

  // Other path maps: built afresh.
  const auto mapped = core.Index(root, {{"/remote", root}});
  CHECK(mapped != core.Index(root, {}));
}

TEST_CASE("core: RootOf picks the workspace folder holding the trace", "[core]") {
  CHECK(ttap::AnalysisCore::RootOf("/w/a/log/t.json", {"/w", "/w/a"}) == "/w/a");
  CHECK(ttap::AnalysisCore::RootOf("/elsewhere/t.json", {"/w", "/w/a"}) == "/w");
  CHECK(ttap::AnalysisCore::RootOf("/w/t.json", {}) == ".");
}

TEST_CASE("core: sibling ranks' timelines are reused while their files hold still", "[core][job]") {
  const std::string dir = ttap_test::MakeTempDir();
  for (int rank = 0; rank < 3; ++rank) {
    REQUIRE(ttap_test::WriteFile(dir + "/host.rank" + std::to_string(rank) + ".pt.trace.json",
                                 ttap_test::JobRankTrace(rank)));
  }
  ttap::AnalysisCore core;
  ttap::ScanRequest request;
  request.workspace_root = dir;
  auto scanned = core.LoadAndScan(dir + "/host.rank0.pt.trace.json", request, {});
  REQUIRE(scanned.ok());
  const auto never = [] { return false; };
  ttap::SiblingTimelineCache cache;
  CHECK(ttap::AnalyseSiblingRanks(*scanned, never, &cache).ok);
  CHECK(cache.size() == 2);  // the other ranks
  // Rank 2's file made unreadable with its size and mtime kept: the cached timeline serves.
  const std::string rank2 = dir + "/host.rank2.pt.trace.json";
  struct stat st;
  REQUIRE(stat(rank2.c_str(), &st) == 0);
  REQUIRE(ttap_test::WriteFile(rank2, std::string(static_cast<size_t>(st.st_size), ' ')));
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  REQUIRE(utimensat(AT_FDCWD, rank2.c_str(), times, 0) == 0);
  CHECK(ttap::AnalyseSiblingRanks(*scanned, never, &cache).ok);
  // Without the cache (or once the file changes) it is read again, and the job has two ranks.
  const ttap::JobAnalysis uncached = ttap::AnalyseSiblingRanks(*scanned, never);
  CHECK(uncached.ranks == 2);
  const struct timespec later[2] = {st.st_atim, {st.st_mtim.tv_sec + 5, 0}};
  REQUIRE(utimensat(AT_FDCWD, rank2.c_str(), later, 0) == 0);
  CHECK(ttap::AnalyseSiblingRanks(*scanned, never, &cache).ranks == 2);
}

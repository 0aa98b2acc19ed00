// AnalysisCore (server/core/analysis_core.h): the workspace index is shared while its root and
// path maps hold, file events replace it with an edited copy (a scan holding the old one keeps
// reading it unchanged), and RootOf picks the workspace folder that holds a trace.
#include "server/core/analysis_core.h"

#include <catch2/catch.hpp>

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

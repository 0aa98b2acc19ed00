// DirWatcher (server/lsp/dir_watcher.h): the language server's inotify watch of the workspace,
// which replaced walking the whole tree every poll (issue 24 item 5). Events for trace files
// wake it, in folders made after it started and behind symbolic links; other files, skipped
// folders and a quiet tree do not; a watch budget it cannot meet sends the caller to polling.
#include "server/lsp/dir_watcher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "server/lsp/channel.h"
#include "server/lsp/trace_discovery.h"
#include "test_support.h"

using ttap::lsp::DirWatcher;

namespace {

bool NoSkip(const std::string& name, const std::string&) { return name == ".git"; }
bool IsTrace(const std::string& path) {
  return path.size() > 15 && path.compare(path.size() - 14, 14, ".pt.trace.json") == 0;
}
// Waits up to |ms| for a relevant change.
bool Woken(DirWatcher* w, int ms = 2000) {
  for (int waited = 0; waited < ms; waited += 100)
    if (w->Wait(100, IsTrace)) return true;
  return false;
}

}  // namespace

TEST_CASE("DirWatcher wakes for traces anywhere below the roots, and only for them",
          "[server][watch]") {
  const std::string root = ttap_test::MakeTempDir();
  mkdir((root + "/data").c_str(), 0755);
  mkdir((root + "/.git").c_str(), 0755);
  DirWatcher w({root}, NoSkip);
  REQUIRE(w.ok());
  CHECK(w.watch_count() == 2);        // root and data; .git is skipped
  CHECK_FALSE(w.Wait(200, IsTrace));  // a quiet tree: no wake-up

  // Images written into the dataset folder: not a reason to look.
  for (int i = 0; i < 50; ++i)
    REQUIRE(ttap_test::WriteFile(root + "/data/img_" + std::to_string(i) + ".jpg", "x"));
  CHECK_FALSE(Woken(&w, 300));
  REQUIRE(ttap_test::WriteFile(root + "/.git/x.pt.trace.json", "{}"));
  CHECK_FALSE(Woken(&w, 300));

  // A trace in a folder made after the watch started (the profiler's `log/run1/`).
  mkdir((root + "/log").c_str(), 0755);
  CHECK(Woken(&w));  // the new folder itself
  mkdir((root + "/log/run1").c_str(), 0755);
  CHECK(Woken(&w));
  REQUIRE(ttap_test::WriteFile(root + "/log/run1/host.pt.trace.json", "{}"));
  CHECK(Woken(&w));
  // Deleted, and renamed into place.
  REQUIRE(std::remove((root + "/log/run1/host.pt.trace.json").c_str()) == 0);
  CHECK(Woken(&w));
  REQUIRE(ttap_test::WriteFile(root + "/log/tmp.part", "{}"));
  CHECK_FALSE(Woken(&w, 300));
  REQUIRE(rename((root + "/log/tmp.part").c_str(), (root + "/log/b.pt.trace.json").c_str()) == 0);
  CHECK(Woken(&w));
}

TEST_CASE("DirWatcher follows linked folders, ends link loops, and reports a budget it cannot meet",
          "[server][watch]") {
  const std::string root = ttap_test::MakeTempDir();
  const std::string scratch = ttap_test::MakeTempDir();  // outside the workspace
  REQUIRE(symlink(scratch.c_str(), (root + "/log").c_str()) == 0);
  REQUIRE(symlink(root.c_str(), (root + "/loop").c_str()) == 0);
  DirWatcher w({root}, NoSkip);
  REQUIRE(w.ok());
  CHECK(w.watch_count() == 2);  // root and the linked scratch folder, once each
  REQUIRE(ttap_test::WriteFile(scratch + "/host.pt.trace.json", "{}"));
  CHECK(Woken(&w));
  // A link made later (`ln -s /scratch/run2 log2`) is watched from then on.
  const std::string scratch2 = ttap_test::MakeTempDir();
  REQUIRE(symlink(scratch2.c_str(), (root + "/log2").c_str()) == 0);
  Woken(&w, 300);
  REQUIRE(ttap_test::WriteFile(scratch2 + "/host.pt.trace.json", "{}"));
  CHECK(Woken(&w));

  for (int i = 0; i < 5; ++i) mkdir((root + "/d" + std::to_string(i)).c_str(), 0755);
  DirWatcher small({root}, NoSkip, /*max_watches=*/3);
  CHECK_FALSE(small.ok());
  CHECK(small.why_not().find("more than 3 folders") != std::string::npos);
}

TEST_CASE(
    "FindTraces lists the folders near the root first: a dataset tree that spends the "
    "folder budget does not hide the run folder",
    "[lsp][discovery]") {
  const std::string root = ttap_test::MakeTempDir();
  // Three dataset trees of 40 class folders each (120 folders, two levels deep), and the run.
  for (const char* set : {"data_a", "data_b", "data_c"}) {
    mkdir((root + "/" + set).c_str(), 0755);
    for (int k = 0; k < 40; ++k) {
      mkdir((root + "/" + set + "/class_" + std::to_string(k)).c_str(), 0755);
    }
  }
  mkdir((root + "/zz_runs").c_str(), 0755);
  REQUIRE(ttap_test::WriteFile(root + "/zz_runs/host_1.pt.trace.json", "{}"));
  // A budget of 20 folders: the root, its 4 children, and what fits after.
  std::vector<std::string> found;
  size_t dirs_left = 20;
  std::set<std::pair<dev_t, ino_t>> visited;
  ttap::lsp::FindTraces(root, {"**/*trace*.json"}, &found, &dirs_left, &visited);
  REQUIRE(found.size() == 1);
  CHECK(found[0] == root + "/zz_runs/host_1.pt.trace.json");
}

TEST_CASE("a workspace folder of / does not walk the kernel's pseudo file systems",
          "[lsp][discovery]") {
  CHECK(ttap::lsp::SkipDirectory("proc", "/proc"));
  CHECK(ttap::lsp::SkipDirectory("sys", "/sys"));
  CHECK(ttap::lsp::SkipDirectory("task", "/proc/self/task"));
  CHECK_FALSE(ttap::lsp::SkipDirectory("proc", "/home/me/proc"));
  CHECK_FALSE(ttap::lsp::SkipDirectory("runs", "/home/me/runs"));
}

TEST_CASE("lsp: --listen takes localhost and a bracketed IPv6 address as users write them",
          "[lsp][listen]") {
  auto local = ttap::lsp::TcpListener::Listen("localhost", 0);
  REQUIRE(local.ok());
  CHECK((*local)->port() > 0);
  (*local)->Stop();
  auto v6 = ttap::lsp::TcpListener::Listen("[::1]", 0);
  if (v6.ok()) {  // a container without IPv6 refuses ::1 itself
    CHECK((*v6)->port() > 0);
    (*v6)->Stop();
  } else {
    CHECK(v6.status().message().find("bad address") == std::string::npos);
  }
  CHECK_FALSE(ttap::lsp::TcpListener::Listen("no such host.invalid", 0).ok());
}

// WorkspaceIndex: resolving trace frame paths (container paths, bare names, sys.path-relative
// library paths) to workspace files, path maps, ambiguity, virtual environments; and the choice
// of the responsible user frame.
#include "mapping/workspace_index.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "test_support.h"

using namespace ttap;

namespace {
std::string MakeWorkspace(const std::vector<std::string>& files) {
  char tmpl[] = "/tmp/ttap_ws_XXXXXX";
  std::string root = mkdtemp(tmpl);
  for (const auto& f : files) {
    std::string path = root + "/" + f;
    for (size_t p = path.find('/', root.size() + 1); p != std::string::npos;
         p = path.find('/', p + 1)) {
      mkdir(path.substr(0, p).c_str(), 0755);
    }
    FILE* out = std::fopen(path.c_str(), "w");
    REQUIRE(out);
    std::fputs("print('hi')\n", out);
    std::fclose(out);
  }
  return root;
}
}  // namespace

TEST_CASE("frame paths resolve to workspace files", "[mapping][workspace]") {
  std::string root = MakeWorkspace(
      {"train.py", "proj/models/net.py", "pkg_a/utils.py", "pkg_b/utils.py",
       ".venv/lib/python3.11/site-packages/torch/x.py", "env/pyvenv.cfg", "env/lib/y.py"});
  auto ws = WorkspaceIndex::Build(root);
  CHECK(ws.size() == 4);  // .venv and the env/ virtual environment are library code

  SECTION("exact and relative") {
    CHECK(ws.Resolve(root + "/train.py").path == root + "/train.py");
    CHECK(ws.Resolve("train.py").status == Resolution::kResolved);
    CHECK(ws.Resolve("proj/models/net.py").path == root + "/proj/models/net.py");
  }
  SECTION("recorded on another machine or in a container") {
    auto r = ws.Resolve("/workspace/proj/models/net.py");
    CHECK(r.status == Resolution::kResolved);
    CHECK(r.path == root + "/proj/models/net.py");
    CHECK(ws.Resolve("/home/u/repo/train.py").path == root + "/train.py");
  }
  SECTION("duplicate names in different packages are ambiguous, never guessed") {
    auto r = ws.Resolve("/opt/app/utils.py");
    CHECK(r.status == Resolution::kAmbiguous);
    CHECK(r.candidates.size() == 2);
    CHECK(ws.Resolve("/opt/app/pkg_b/utils.py").path == root + "/pkg_b/utils.py");
  }
  SECTION("unknown files") {
    CHECK(ws.Resolve("other.py").status == Resolution::kNotFound);
    CHECK(ws.Resolve("").status == Resolution::kNotFound);
  }
  SECTION("path maps win") {
    auto mapped = WorkspaceIndex::Build(root, {{"/mnt/job/", "pkg_a/"}});
    CHECK(mapped.Resolve("/mnt/job/utils.py").path == root + "/pkg_a/utils.py");
  }
}

TEST_CASE("the responsible user frame is the innermost one in the workspace",
          "[mapping][workspace]") {
  std::string root = MakeWorkspace({"train_single_gpu.py", "typing.py"});
  auto ws = WorkspaceIndex::Build(root);
  std::vector<FindingFrame> frames = {{"torch/nn/modules/module.py", 1780, "_call_impl"},
                                      {"typing.py", 2300, "cast"},
                                      {"train_single_gpu.py", 41, "main"},
                                      {"train_single_gpu.py", 62, "<module>"}};
  ResolvedPath r;
  // typing.py is recorded relative to sys.path: library code even though the workspace has one.
  CHECK(SelectUserFrame(frames, &ws, &r) == 2);
  CHECK(r.path == root + "/train_single_gpu.py");
  // Without a workspace: the innermost non-library .py frame.
  CHECK(SelectUserFrame(frames, nullptr, &r) == 2);
  std::vector<FindingFrame> library_only = {{"torch/optim/sgd.py", 10, "step"}};
  CHECK(SelectUserFrame(library_only, &ws, &r) == -1);
  CHECK(IsLibraryPath("/usr/lib/python3.11/threading.py"));
  CHECK(IsLibraryPath("/home/u/.venv/lib/site-packages/x.py"));
  CHECK(IsLibraryPath("<frozen importlib._bootstrap>"));
  CHECK_FALSE(IsLibraryPath("/workspace/proj/train.py"));
}

TEST_CASE("the index follows files that appear, disappear and move", "[mapping][workspace]") {
  std::string root = MakeWorkspace({"train.py"});
  auto ws = WorkspaceIndex::Build(root);
  CHECK(ws.Resolve("/job/models/net.py").status == Resolution::kNotFound);
  CHECK(ws.AddFile(root + "/models/net.py"));
  CHECK_FALSE(ws.AddFile(root + "/models/net.py"));   // already there
  CHECK_FALSE(ws.AddFile(root + "/.venv/lib/x.py"));  // library code
  CHECK_FALSE(ws.AddFile(root + "/notes.txt"));
  CHECK(ws.Resolve("/job/models/net.py").path == root + "/models/net.py");
  // A move: removed at the old place, added at the new one.
  CHECK(ws.RemoveFile(root + "/models/net.py"));
  CHECK(ws.AddFile("src/models/net.py"));
  CHECK(ws.Resolve("/job/models/net.py").path == root + "/src/models/net.py");
  CHECK(ws.Resolve("train.py").status == Resolution::kResolved);
  // Rescan picks up what is on disk again.
  ws.Rescan();
  CHECK(ws.Resolve("/job/models/net.py").status == Resolution::kNotFound);
}

TEST_CASE("include/exclude globs decide what user code is", "[mapping][workspace]") {
  std::string root = MakeWorkspace({"train.py", "vendor/lib.py"});
  auto ws = WorkspaceIndex::Build(root);
  std::vector<FindingFrame> frames = {{"vendor/lib.py", 3, "helper"}, {"train.py", 9, "main"}};
  ResolvedPath r;
  CHECK(SelectUserFrame(frames, &ws, &r) == 0);
  FrameFilter no_vendor;
  no_vendor.exclude = {"vendor/*", "*/vendor/*"};
  CHECK(SelectUserFrame(frames, &ws, &r, &no_vendor) == 1);
  FrameFilter only_train;
  only_train.include = {"*train.py"};
  CHECK(SelectUserFrame(frames, &ws, &r, &only_train) == 1);
  CHECK(r.path == root + "/train.py");
}

TEST_CASE("sources in a symlinked folder resolve; link loops end",
          "[mapping][workspace][symlink]") {
  // The project's package lives elsewhere and is linked into the workspace (a monorepo, a
  // mounted checkout); a link back to the root makes a loop.
  std::string elsewhere = MakeWorkspace({"pkg/models/net.py"});
  std::string root = MakeWorkspace({"train.py"});
  REQUIRE(symlink((elsewhere + "/pkg").c_str(), (root + "/pkg").c_str()) == 0);
  REQUIRE(symlink(root.c_str(), (root + "/loop").c_str()) == 0);
  REQUIRE(symlink((root + "/missing").c_str(), (root + "/dangling.py").c_str()) == 0);
  auto ws = WorkspaceIndex::Build(root);
  auto r = ws.Resolve("/job/pkg/models/net.py");
  REQUIRE(r.status == Resolution::kResolved);
  CHECK(r.path == root + "/pkg/models/net.py");
  CHECK(ws.Resolve("train.py").status == Resolution::kResolved);
}

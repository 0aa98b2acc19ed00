// Config: TOML parsing of [tool.ttap] in pyproject.toml and ttap.toml, upward search, errors.
#include "server/config.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "fixture_traces.h"
#include "test_support.h"

using namespace ttap;

TEST_CASE("config files", "[config]") {
  char tmpl[] = "/tmp/ttap_cfg_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  SECTION("defaults without a file") {
    auto c = FindConfig(dir);
    REQUIRE(c.ok());
    CHECK(c->windows == 100);
    CHECK(c->source.empty());
  }
  SECTION("pyproject without [tool.ttap] gives defaults") {
    WriteOrFail(dir + "/pyproject.toml", "[project]\nname = \"demo\"\n");
    auto c = FindConfig(dir);
    REQUIRE(c.ok());
    CHECK(c->source.empty());
  }
  SECTION("[tool.ttap] found from a subdirectory") {
    WriteOrFail(
        dir + "/pyproject.toml",
        "[tool.ttap]\nwindows = 50\nthreads = 1\n[tool.ttap.thresholds]\ndataloader_share = "
        "0.05\n");
    mkdir((dir + "/src").c_str(), 0755);
    auto c = FindConfig(dir + "/src");
    REQUIRE(c.ok());
    CHECK(c->windows == 50);
    CHECK(c->threads == 1);
    CHECK(c->thresholds.at("dataloader_share") == Approx(0.05));
    CHECK(c->source == dir + "/pyproject.toml");
  }
  SECTION("ttap.toml wins over pyproject and accepts a [ttap] table") {
    WriteOrFail(dir + "/pyproject.toml", "[tool.ttap]\nwindows = 50\n");
    WriteOrFail(dir + "/ttap.toml", "[ttap]\nwindows = 20\n");
    auto c = FindConfig(dir);
    REQUIRE(c.ok());
    CHECK(c->windows == 20);
  }
  SECTION("errors name the file") {
    WriteOrFail(dir + "/ttap.toml", "windows = \"many\"\n[thresholds]\nx = \"y\"\n");
    auto c = LoadConfigFile(dir + "/ttap.toml");
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().message().find("ttap.toml") != std::string::npos);
  }
}

TEST_CASE("config: path maps and user-frame globs", "[config]") {
  char tmpl[] = "/tmp/ttap_cfg2_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  WriteOrFail(dir + "/ttap.toml",
              "user_frames_exclude = [\"*/vendor/*\"]\n[path_maps]\n\"/workspace/proj/\" = \"\"\n");
  auto c = LoadConfigFile(dir + "/ttap.toml");
  REQUIRE(c.ok());
  REQUIRE(c->path_maps.size() == 1);
  CHECK(c->path_maps[0].first == "/workspace/proj/");
  CHECK(c->path_maps[0].second == "");
  CHECK(c->user_frames_exclude == std::vector<std::string>{"*/vendor/*"});
  WriteOrFail(dir + "/bad.toml", "path_maps = 3\n");
  CHECK_FALSE(LoadConfigFile(dir + "/bad.toml").ok());
}

TEST_CASE("config: window_fusion names one of the combinations eval tries", "[config]") {
  char tmpl[] = "/tmp/ttap_cfg3_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  WriteOrFail(dir + "/ttap.toml", "");
  auto d = LoadConfigFile(dir + "/ttap.toml");
  REQUIRE(d.ok());
  CHECK(d->window_fusion == kDefaultWindowFusion);
  WriteOrFail(dir + "/ttap.toml", "window_fusion = \"max\"\n");
  auto c = LoadConfigFile(dir + "/ttap.toml");
  REQUIRE(c.ok());
  CHECK(c->window_fusion == "max");
  WriteOrFail(dir + "/bad.toml", "window_fusion = \"product\"\n");
  auto bad = LoadConfigFile(dir + "/bad.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("noisy-OR m/2") != std::string::npos);
}

TEST_CASE("config: select and ignore code lists, and ttap scan honours them", "[config]") {
  const std::string dir = ttap_test::MakeTempDir();
  WriteOrFail(dir + "/pyproject.toml",
              "[tool.ttap]\nselect = [\"TTA00\", \"TTA9\"]\nignore = [\"TTA009\"]\n");
  auto c = LoadConfigFile(dir + "/pyproject.toml");
  REQUIRE(c.ok());
  CHECK(c->select == std::vector<std::string>{"TTA00", "TTA9"});
  CHECK(c->ignore == std::vector<std::string>{"TTA009"});
  WriteOrFail(dir + "/bad.toml", "ignore = [\"E501\"]\n");
  auto bad = LoadConfigFile(dir + "/bad.toml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("ignore: 'E501' is not a code") != std::string::npos);
  // The StallTrace gives TTA001: ignored by the project's list, or selected away by a flag.
  WriteOrFail(dir + "/trace.json", ttap_test::StallTrace());
  auto all = ttap_test::RunTtap("scan --no-model trace.json", dir);
  CHECK(all.out.find("TTA001") != std::string::npos);
  WriteOrFail(dir + "/pyproject.toml", "[tool.ttap]\nignore = [\"TTA001\"]\n");
  auto ignored = ttap_test::RunTtap("scan --no-model trace.json", dir);
  CHECK(ignored.out.find("TTA001") == std::string::npos);
  auto flag = ttap_test::RunTtap("scan --no-model --select TTA9 --ignore TTA9 trace.json", dir);
  CHECK(flag.out.find("TTA001") == std::string::npos);
  CHECK(ttap_test::RunTtap("scan --select nope trace.json", dir).exit_code == 2);
}

TEST_CASE("config: a deeply nested ttap.toml is refused with an error, not a crash",
          "[config][nesting]") {
  char tmpl[] = "/tmp/ttap_cfg_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  // 20,000-deep inline table and 200,000-deep array (cpptoml recurses per level).
  std::string table = "windows = 10\nx = ";
  for (int i = 0; i < 20000; ++i) table += "{a = ";
  table += "1" + std::string(20000, '}') + "\n";
  WriteOrFail(dir + "/ttap.toml", table);
  auto t = LoadConfigFile(dir + "/ttap.toml");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().find("nested deeper") != std::string::npos);
  WriteOrFail(dir + "/ttap.toml",
              "x = " + std::string(200000, '[') + std::string(200000, ']') + "\n");
  CHECK_FALSE(LoadConfigFile(dir + "/ttap.toml").ok());
  // Brackets inside strings and comments do not count; a shallow nesting loads.
  WriteOrFail(dir + "/ttap.toml", "windows = 7 # " + std::string(500, '[') + "\ntrace_globs = [\"" +
                                      std::string(500, '{') + "\", '''" + std::string(500, '[') +
                                      "''']\n");
  auto ok = LoadConfigFile(dir + "/ttap.toml");
  REQUIRE(ok.ok());
  CHECK(ok->windows == 7);
}

// `ttap gen` as a whole process: the labels format, splits by workload group (a group never
// spans two splits, families no rule covers only in held-out splits), validation of every trace,
// pre-existing findings of real bases, and byte-identical output for one seed.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "test_support.h"

using ttap_test::MakeTempDir;
using ttap_test::PathExists;
using ttap_test::ReadFile;
using ttap_test::RunTtap;

TEST_CASE("gen writes labelled traces split by workload group", "[gen]") {
  const std::string dir = MakeTempDir();
  const std::string bases = ttap_test::SourceDir() + "/examples/resnet50_num_workers_0";
  auto gen = RunTtap("gen --out '" + dir + "/a' --seed 9 --count 48 --bases '" + bases + "'");
  INFO(gen.out + gen.err);
  REQUIRE(gen.exit_code == 0);
  const std::vector<std::string> labels = ttap_test::ListDir(dir + "/a/labels");
  REQUIRE(labels.size() == 48);
  std::map<std::string, std::set<std::string>> splits_of_group;
  int injected = 0, simulated = 0, anti = 0, with_pre_existing = 0;
  for (const std::string& name : labels) {
    INFO(name);
    auto j = nlohmann::json::parse(ReadFile(dir + "/a/labels/" + name));
    REQUIRE(PathExists(dir + "/a/" + j["trace"].get<std::string>()));
    const std::string split = j["split"];
    CHECK((split == "train" || split == "val" || split == "test" || split == "unseen"));
    CHECK(j["seen"] == (split != "unseen"));
    splits_of_group[j["workload_group"]].insert(split);
    (j["source"] == "injected" ? injected : simulated)++;
    CHECK(j["trace_label"] == (j["labels"].empty() ? "clean" : "anti-pattern"));
    anti += j["labels"].empty() ? 0 : 1;
    with_pre_existing += j["pre_existing"].empty() ? 0 : 1;
    for (const auto& l : j["labels"]) {
      CHECK(l["start_us"].get<long long>() < l["end_us"].get<long long>());
      CHECK((l["family"] == "catalogue" || l["family"] == "unseen"));
      if (l["family"] == "unseen") CHECK((split == "test" || split == "unseen"));
      if (l["line"].get<int>() > 0) CHECK(!l["file"].get<std::string>().empty());
    }
    if (j["source"] == "injected") {
      CHECK(j["workload_group"] == "real/resnet50-num-workers");
      CHECK(PathExists(dir + "/a/" + j["script"].get<std::string>()));
    }
  }
  for (const auto& [group, splits] : splits_of_group) {
    INFO(group);
    CHECK(splits.size() == 1);
  }
  CHECK(injected == 19);
  CHECK(simulated == 29);
  CHECK(anti == 24);
  // The num_workers=0 base stalls on its DataLoader: recorded as pre-existing.
  CHECK(with_pre_existing > 0);
  // One seed, one dataset.
  REQUIRE(
      RunTtap("gen --out '" + dir + "/b' --seed 9 --count 48 --bases '" + bases + "'").exit_code ==
      0);
  for (const std::string& name : ttap_test::ListDir(dir + "/a")) {
    if (name == "labels" || name == "scripts") continue;
    INFO(name);
    CHECK(ReadFile(dir + "/a/" + name) == ReadFile(dir + "/b/" + name));
  }
  for (const std::string& name : labels) {
    CHECK(ReadFile(dir + "/a/labels/" + name) == ReadFile(dir + "/b/labels/" + name));
  }
}

TEST_CASE("gen refuses bad options and missing bases", "[gen]") {
  const std::string dir = MakeTempDir();
  CHECK(RunTtap("gen --out '" + dir + "'").exit_code == 2);
  CHECK(RunTtap("gen --seed 1").exit_code == 2);
  CHECK(RunTtap("gen --out '" + dir + "' --seed 1 --count 0").exit_code == 2);
  auto missing = RunTtap("gen --out '" + dir + "' --seed 1 --bases '" + dir + "/nope'");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("nope") != std::string::npos);
}

// `ttap gen` as a whole process: the labels format, splits by workload group (a group never
// spans two splits, half of every group's traces with anti-patterns, families no rule covers in
// the train groups only when weak, --weak-families), validation of every trace, pre-existing
// findings of real bases, byte-identical output for one seed, and the real groups' split
// (SplitRealGroups: validation holds a clean-base group whenever test does).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "bench/harness/gen_command.h"
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
  std::map<std::string, int> anti_minus_clean;  // per workload group
  int injected = 0, simulated = 0, anti = 0, with_pre_existing = 0;
  std::map<std::string, std::set<std::string>> no_rule_splits;  // per family: where it appears
  for (const std::string& name : labels) {
    INFO(name);
    auto j = nlohmann::json::parse(ReadFile(dir + "/a/labels/" + name));
    REQUIRE(PathExists(dir + "/a/" + j["trace"].get<std::string>()));
    const std::string split = j["split"];
    CHECK((split == "train" || split == "val" || split == "test" || split == "unseen"));
    CHECK(j["seen"] == (split != "unseen"));
    splits_of_group[j["workload_group"]].insert(split);
    anti_minus_clean[j["workload_group"]] += j["labels"].empty() ? -1 : 1;
    (j["source"] == "injected" ? injected : simulated)++;
    CHECK(j["trace_label"] == (j["labels"].empty() ? "clean" : "anti-pattern"));
    anti += j["labels"].empty() ? 0 : 1;
    with_pre_existing += j["pre_existing"].empty() ? 0 : 1;
    for (const auto& l : j["labels"]) {
      CHECK(l["start_us"].get<long long>() < l["end_us"].get<long long>());
      const std::string code = l["code"], family = l["family"];
      // The default weak families (TTX101, TTX103) may appear anywhere; TTX102 is zero-shot.
      CHECK(family == (code.rfind("TTX", 0) != 0 ? "catalogue"
                       : code == "TTX102"        ? "unseen"
                                                 : "no-rule"));
      if (family == "unseen") CHECK((split == "test" || split == "unseen"));
      if (family != "catalogue") no_rule_splits[code].insert(split);
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
  // Half of every group has anti-patterns: the workload never tells the label.
  for (const auto& [group, balance] : anti_minus_clean) {
    INFO(group);
    CHECK(std::abs(balance) <= 1);
  }
  // The weak families reach the train groups (with trace labels, for the model to learn from).
  CHECK((no_rule_splits["TTX101"].count("train") + no_rule_splits["TTX103"].count("train")) > 0);
  CHECK(injected == 19);
  CHECK(simulated == 29);
  CHECK(anti == 25);
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

TEST_CASE("gen --split-seed and --only-splits: more traces of the same groups", "[gen]") {
  const std::string dir = MakeTempDir();
  const std::string bases = ttap_test::SourceDir() + "/examples/resnet50_num_workers_0";
  auto gen = [&](const std::string& name, const std::string& options) {
    return RunTtap("gen --out '" + dir + "/" + name + "' " + options + " --count 48 --bases '" +
                   bases + "'")
        .exit_code;
  };
  auto read_split_of_group = [&](const std::string& d) {
    std::map<std::string, std::string> split_of;
    for (const std::string& name : ttap_test::ListDir(d + "/labels")) {
      auto j = nlohmann::json::parse(ReadFile(d + "/labels/" + name));
      split_of[j["workload_group"]] = j["split"];
    }
    return split_of;
  };
  REQUIRE(gen("s1", "--seed 9") == 0);
  // The same seed with --only-splits writes exactly the full run's train and val traces.
  REQUIRE(gen("tv", "--seed 9 --only-splits train,val") == 0);
  const auto full = read_split_of_group(dir + "/s1");
  int expected = 0;
  for (const std::string& name : ttap_test::ListDir(dir + "/s1/labels")) {
    auto j = nlohmann::json::parse(ReadFile(dir + "/s1/labels/" + name));
    if (j["split"] != "train" && j["split"] != "val") continue;
    ++expected;
    CHECK(ReadFile(dir + "/tv/labels/" + name) == ReadFile(dir + "/s1/labels/" + name));
  }
  CHECK(ttap_test::ListDir(dir + "/tv/labels").size() == static_cast<size_t>(expected));
  // Another seed with --split-seed 9: new traces, every group in the split seed 9 gave it.
  REQUIRE(gen("s2", "--seed 2 --split-seed 9 --only-splits train") == 0);
  const auto extra = read_split_of_group(dir + "/s2");
  REQUIRE(!extra.empty());
  for (const auto& [group, split] : extra) {
    INFO(group);
    CHECK(split == "train");
    REQUIRE(full.count(group));
    CHECK(full.at(group) == "train");
  }
  CHECK(RunTtap("gen --out '" + dir + "/x' --seed 1 --only-splits train,bogus").exit_code == 2);
}

TEST_CASE("gen --weak-families none: every family no rule covers stays held out", "[gen]") {
  const std::string dir = MakeTempDir();
  REQUIRE(RunTtap("gen --out '" + dir + "/a' --seed 9 --count 60 --weak-families none").exit_code ==
          0);
  int families = 0;
  for (const std::string& name : ttap_test::ListDir(dir + "/a/labels")) {
    auto j = nlohmann::json::parse(ReadFile(dir + "/a/labels/" + name));
    for (const auto& l : j["labels"]) {
      if (l["code"].get<std::string>().rfind("TTX", 0) != 0) continue;
      INFO(name);
      ++families;
      CHECK(l["family"] == "unseen");
      CHECK((j["split"] == "test" || j["split"] == "unseen"));
    }
  }
  CHECK(families > 0);
  CHECK(RunTtap("gen --out '" + dir + "/b' --seed 9 --weak-families TTX999").exit_code == 2);
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

TEST_CASE("real groups with a clean base are stratified into validation", "[gen]") {
  std::vector<std::string> groups;
  for (int i = 0; i < 22; ++i) groups.push_back("real/g" + std::to_string(i));
  const auto plain = ttap::SplitRealGroups(groups, {}, 1);
  std::map<std::string, int> sizes;
  std::map<std::string, std::vector<std::string>> in;
  for (const auto& [g, s] : plain) {
    sizes[s]++;
    in[s].push_back(g);
  }
  CHECK(sizes["unseen"] == 6);
  CHECK(sizes["test"] == 5);
  CHECK(sizes["val"] == 3);
  CHECK(sizes["train"] == 8);
  auto count_in = [](const std::map<std::string, std::string>& split,
                     const std::set<std::string>& clean, const std::string& s) {
    int n = 0;
    for (const std::string& g : clean) n += split.at(g) == s;
    return n;
  };
  // Exactly one clean group moves to val, from |donor|, and one val group takes its place;
  // unseen and the split sizes never change.
  auto check_moved = [&](const std::set<std::string>& clean, const std::string& donor) {
    const auto split = ttap::SplitRealGroups(groups, clean, 1);
    CHECK(count_in(split, clean, "val") == 1);
    CHECK(count_in(split, clean, donor) == count_in(plain, clean, donor) - 1);
    int moved = 0;
    std::map<std::string, int> new_sizes;
    for (const auto& [g, s] : split) {
      new_sizes[s]++;
      if (s == plain.at(g)) continue;
      ++moved;
      CHECK(((s == "val" && plain.at(g) == donor) || (s == donor && plain.at(g) == "val")));
    }
    CHECK(moved == 2);
    CHECK(new_sizes == sizes);
  };
  // From train when train keeps one, else from test when test keeps one.
  check_moved({in["test"][0], in["train"][0], in["train"][1]}, "train");
  check_moved({in["test"][0], in["test"][1], in["train"][0]}, "test");
  check_moved({in["unseen"][0], in["test"][0], in["test"][1]}, "test");
  // Nothing moves when val already holds one, or when no split could spare one.
  CHECK(ttap::SplitRealGroups(groups, {in["test"][0], in["val"][0], in["train"][0]}, 1) == plain);
  CHECK(ttap::SplitRealGroups(groups, {in["test"][0], in["train"][0]}, 1) == plain);
  CHECK(ttap::SplitRealGroups(groups, {in["unseen"][0], in["unseen"][1]}, 1) == plain);
}

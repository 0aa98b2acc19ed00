// `ttap eval` as a whole process on datasets written by `ttap gen`: the report files and their
// numbers, the refused train/val splits, the labels file parser (old and new formats), splits
// used for fitting and the exclusion of traces with pre-existing anti-patterns.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/model/window_features.h"
#include "bench/harness/eval_command.h"
#include "test_support.h"

using ttap_test::MakeTempDir;
using ttap_test::PathExists;
using ttap_test::ReadFile;
using ttap_test::RunTtap;

namespace {

const nlohmann::json* FindMethod(const nlohmann::json& section, const std::string& method) {
  for (const auto& m : section["methods"]) {
    if (m["method"] == method) return &m;
  }
  return nullptr;
}

const nlohmann::json* FindSection(const nlohmann::json& report, const std::string& name) {
  for (const auto& s : report["sections"]) {
    if (s["name"] == name) return &s;
  }
  return nullptr;
}

// Puts every trace of |dir| in split |split| (tests that need all traces reported).
void SetSplit(const std::string& dir, const std::string& split) {
  for (const std::string& name : ttap_test::ListDir(dir + "/labels")) {
    const std::string path = dir + "/labels/" + name;
    auto j = nlohmann::json::parse(ReadFile(path));
    j["split"] = split;
    REQUIRE(ttap_test::WriteFile(path, j.dump()));
  }
}

}  // namespace

TEST_CASE("gen then eval end to end: simulated and injected traces, every method", "[eval]") {
  // The CI-sized benchmark: 40 traces, 16 of them injected into the bundled ResNet-50 trace.
  const std::string dir = MakeTempDir();
  auto gen = RunTtap("gen --out '" + dir + "' --seed 3 --count 40 --bases '" +
                     ttap_test::SourceDir() + "/examples/resnet50_num_workers_0'");
  INFO(gen.out + gen.err);
  REQUIRE(gen.exit_code == 0);
  CHECK(gen.out.find("40 traces") != std::string::npos);
  CHECK(gen.out.find("Simulator realism") != std::string::npos);
  CHECK(PathExists(dir + "/realism.md"));
  auto r = RunTtap("eval '" + dir + "' --split all --bootstrap 50");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("| method | trace AUC") != std::string::npos);
  CHECK(r.out.find("| rules |") != std::string::npos);
  REQUIRE(PathExists(dir + "/eval/eval.md"));
  REQUIRE(PathExists(dir + "/eval/eval.json"));
  CHECK(ReadFile(dir + "/eval/eval.md") == r.out);
  auto report = nlohmann::json::parse(ReadFile(dir + "/eval/eval.json"));
  CHECK(report["split"] == "all");
  CHECK(report["bootstrap"] == 50);
  CHECK(report["traces"]["failed_to_load"] == 0);
  CHECK(report["traces"]["train"].get<int>() > 0);
  CHECK(report["fit_errors"].empty());
  REQUIRE(report["sections"].size() >= 3);  // + "no-rule families" when present
  const nlohmann::json* overall = FindSection(report, "overall");
  REQUIRE(overall);
  CHECK((*overall)["n_positive_traces"].get<int>() > 0);
  CHECK((*overall)["n_positive_traces"].get<int>() < (*overall)["n_traces"].get<int>());
  for (const char* method : {"rules", "clustering", "zscore", "random"}) {
    INFO(method);
    const nlohmann::json* m = FindMethod(*overall, method);
    REQUIRE(m);
    REQUIRE((*m)["trace_auc"]["estimate"].is_number());
    CHECK(std::isfinite((*m)["trace_auc"]["estimate"].get<double>()));
    CHECK((*m)["window_auc"]["estimate"].is_number());
  }
  const nlohmann::json* rules = FindMethod(*overall, "rules");
  CHECK((*rules)["per_code"].is_array());
  // Cost accuracy: every costly injected copy with its truth and estimate; those whose base
  // already has the code, whose finding also covers the base's share, are left out of the ratio
  // (the truth covers only the injection). The
  // bundled base has anti-patterns of its own, so its copies count with --with-pre-existing.
  auto with_pre =
      RunTtap("eval '" + dir + "' --split all --bootstrap 50 --with-pre-existing --out '" + dir +
              "/with_pre'");
  REQUIRE(with_pre.exit_code == 0);
  CHECK(with_pre.out.find("## Cost accuracy") != std::string::npos);
  auto cost_report = nlohmann::json::parse(ReadFile(dir + "/with_pre/eval.json"));
  REQUIRE(cost_report.contains("cost_accuracy"));
  const auto& injections = cost_report["cost_accuracy"]["injections"];
  CHECK(injections.size() > 0);
  REQUIRE(injections.is_array());
  for (const auto& inj : injections) {
    INFO(inj.dump());
    CHECK(inj["truth_us_per_step"].get<double>() > 0);
    CHECK(inj["estimate_us_per_step"].get<double>() >= 0);
    auto labels = nlohmann::json::parse(
        ReadFile(dir + "/labels/" + inj["trace"].get<std::string>() + ".labels.json"));
    bool base_has = false;
    for (const auto& c : labels["pre_existing_codes"]) base_has = base_has || c == inj["code"];
    // Left out only where the base has the code (and its finding reaches beyond the injection).
    if (!base_has) CHECK(inj["left_out"].is_null());
  }
  CHECK((*rules)["source_top1"]["n"].get<int>() > 0);
  // Deterministic: a second run gives the same numbers.
  auto again = RunTtap("eval '" + dir + "' --split all --bootstrap 50 --out '" + dir +
                       "/again' --windows-tsv");
  REQUIRE(again.exit_code == 0);
  auto report2 = nlohmann::json::parse(ReadFile(dir + "/again/eval.json"));
  CHECK(report2["sections"] == report["sections"]);
  // --windows-tsv: one row per evaluated window with every method's score and the features.
  std::istringstream tsv(ReadFile(dir + "/again/windows.tsv"));
  std::string header, row;
  REQUIRE(std::getline(tsv, header));
  CHECK(header.rfind("trace\tsplit\ttrace_label\twindow\twindow_label\trules\tclustering\tzscore\t"
                     "random\tmil\tcat\tunusual\trules_in_fused\tf.log_events",
                     0) == 0);
  int rows = 0, labelled = 0;
  while (std::getline(tsv, row)) {
    ++rows;
    std::vector<std::string> cells;
    std::istringstream cs(row);
    for (std::string c; std::getline(cs, c, '\t');) cells.push_back(c);
    REQUIRE(cells.size() == 13 + ttap::WindowFeatureNames().size());
    // No method here needs the val split, so only evaluated traces are written.
    CHECK((cells[1] == "test" || cells[1] == "unseen"));
    CHECK(cells[5] != "nan");  // the rules scored it
    CHECK(cells[9] == "nan");  // no model ran
    labelled += cells[4] == "1" ? 1 : 0;
  }
  CHECK(rows == (*overall)["n_windows"].get<int>());
  CHECK(labelled == (*overall)["n_positive_windows"].get<int>());
}

TEST_CASE("eval refuses the train and val splits and bad input", "[eval]") {
  const std::string dir = MakeTempDir();
  REQUIRE(RunTtap("gen --out '" + dir + "' --seed 3 --count 2").exit_code == 0);
  SetSplit(dir, "test");
  auto train = RunTtap("eval '" + dir + "' --split train");
  CHECK(train.exit_code == 2);
  CHECK(train.err.find("fit") != std::string::npos);
  CHECK(RunTtap("eval '" + dir + "' --split val").exit_code == 2);
  auto model = RunTtap("eval '" + dir + "' --methods rules,model");
  CHECK(model.exit_code == 2);
  CHECK(model.err.find("model") != std::string::npos);
  auto missing = RunTtap("eval '" + dir + "' --methods rules,model --model '" + dir + "/none.pt'");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("does not exist") != std::string::npos);
  CHECK(RunTtap("eval '" + dir + "' --methods bogus").exit_code == 2);
  CHECK(RunTtap("eval '" + dir + "/missing'").exit_code == 2);
  const std::string empty = MakeTempDir();
  auto none = RunTtap("eval '" + empty + "'");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no label files") != std::string::npos);
  CHECK(RunTtap("eval").exit_code == 2);
  // An unreadable trace is reported and skipped; nothing usable at all is an error.
  std::vector<std::string> traces;
  for (const std::string& name : ttap_test::ListDir(dir, ".pt.trace.json.gz")) {
    traces.push_back(dir + "/" + name);
  }
  REQUIRE(traces.size() == 2);
  REQUIRE(ttap_test::WriteFile(traces[0], "not a trace"));
  auto one = RunTtap("eval '" + dir + "' --bootstrap 10 --methods rules,random");
  INFO(one.err);
  CHECK(one.exit_code == 0);
  CHECK(one.err.find("skipped") != std::string::npos);
  auto report = nlohmann::json::parse(ReadFile(dir + "/eval/eval.json"));
  CHECK(report["traces"]["failed_to_load"] == 1);
  REQUIRE(ttap_test::WriteFile(traces[1], "[{"));
  CHECK(RunTtap("eval '" + dir + "' --bootstrap 10").exit_code == 2);
}

TEST_CASE("eval fits baselines on the train split and excludes pre-existing traces", "[eval]") {
  const std::string dir = MakeTempDir();
  REQUIRE(RunTtap("gen --out '" + dir + "' --seed 5 --count 16").exit_code == 0);
  // Rewrite the labels: the first 8 files are train, one test trace has a pre-existing label,
  // one is unseen.
  const std::vector<std::string> files = ttap_test::ListDir(dir + "/labels");
  REQUIRE(files.size() == 16);
  int pre_existing_clean = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string path = dir + "/labels/" + files[i];
    auto j = nlohmann::json::parse(ReadFile(path));
    if (i < 8) {
      j["split"] = "train";
    } else if (i == 8) {
      j["split"] = "test";
      j["pre_existing"] = {{{"code", "TTA008"}, {"start_us", 0}, {"end_us", 1}}};
      pre_existing_clean = 1;
    } else if (i == 9) {
      j["split"] = "unseen";
    } else {
      j["split"] = "test";
    }
    REQUIRE(ttap_test::WriteFile(path, j.dump()));
  }
  REQUIRE(pre_existing_clean == 1);
  auto r = RunTtap("eval '" + dir + "' --bootstrap 20 --out '" + dir + "/out'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("excluded: 1 trace") != std::string::npos);
  auto report = nlohmann::json::parse(ReadFile(dir + "/out/eval.json"));
  CHECK(report["traces"]["excluded_pre_existing"] == 1);
  CHECK(report["traces"]["train"] == 8);
  CHECK(report["fit_errors"].empty());
  const nlohmann::json* seen = FindSection(report, "seen");
  const nlohmann::json* unseen = FindSection(report, "unseen");
  const nlohmann::json* overall = FindSection(report, "overall");
  REQUIRE((seen && unseen && overall));
  CHECK((*seen)["n_traces"] == 6);
  CHECK((*unseen)["n_traces"] == 1);
  CHECK((*overall)["n_traces"] == 7);
  const nlohmann::json* clustering = FindMethod(*overall, "clustering");
  REQUIRE(clustering);
  CHECK((*clustering)["window_auc"]["estimate"].is_number());

  auto with = RunTtap("eval '" + dir + "' --bootstrap 20 --with-pre-existing --split seen --out '" +
                      dir + "/with'");
  REQUIRE(with.exit_code == 0);
  auto report2 = nlohmann::json::parse(ReadFile(dir + "/with/eval.json"));
  CHECK(report2["traces"]["excluded_pre_existing"] == 0);
  REQUIRE(report2["sections"].size() >= 1);  // seen, and "no-rule families" when present
  CHECK(report2["sections"][0]["name"] == "seen");
  CHECK(report2["sections"][0]["n_traces"] == 7);
}

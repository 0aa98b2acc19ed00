// The labels file (bench/harness/labels.h): what gen writes, eval reads back the same; older
// files get their defaults; malformed ones are refused with a reason.
#include "bench/harness/labels.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

TEST_CASE("labels files: new format and the defaults of old ones", "[labels]") {
  auto full = ttap::ParseEvalLabels(R"({
    "trace": "x.pt.trace.json.gz", "trace_label": "anti-pattern", "source": "injected",
    "task": "base_trace", "workload_group": "real/base", "hardware": "H100", "split": "unseen",
    "labels": [{"code": "TTX101", "family": "unseen", "start_us": 10, "end_us": 20.5,
                "file": "train.py", "line": 52}],
    "pre_existing": [{"code": "TTA008", "start_us": 1, "end_us": 2}]})",
                                    "stem");
  REQUIRE(full.ok());
  CHECK(full->trace == "x.pt.trace.json.gz");
  CHECK(full->anti_pattern);
  CHECK(full->split == "unseen");
  CHECK(full->workload_group == "real/base");
  REQUIRE(full->labels.size() == 1);
  CHECK(full->labels[0].family == "unseen");
  CHECK(full->labels[0].start_ns == 10000);
  CHECK(full->labels[0].end_ns == 20500);
  CHECK(full->labels[0].line == 52);
  REQUIRE(full->pre_existing.size() == 1);
  CHECK(full->pre_existing[0].code == "TTA008");

  auto old = ttap::ParseEvalLabels(
      R"({"trace_label": "clean", "task": "classification", "hardware": "A100", "labels": []})",
      "classification_A100_3");
  REQUIRE(old.ok());
  CHECK(old->trace == "classification_A100_3.pt.trace.json.gz");
  CHECK(old->split == "test");
  CHECK(old->workload_group == "classification");
  CHECK_FALSE(old->anti_pattern);

  CHECK_FALSE(ttap::ParseEvalLabels("{", "s").ok());
  CHECK_FALSE(ttap::ParseEvalLabels(R"({"trace_label": "maybe"})", "s").ok());
  CHECK_FALSE(
      ttap::ParseEvalLabels(R"({"trace_label": "clean", "labels": [{"code": "TTA001"}]})", "s")
          .ok());
}

TEST_CASE("labels files: what WriteLabelsFile writes, ParseEvalLabels reads back", "[labels]") {
  ttap::EvalLabels in;
  in.trace = "real_copy_3.pt.trace.json.gz";
  in.anti_pattern = true;
  in.source = "injected";
  in.task = "resnet";
  in.workload_group = "real/resnet";
  in.hardware = "A100";
  in.split = "unseen";
  in.base = "bases/resnet.json.gz";
  in.script = "scripts/train_resnet.py";
  in.seed = 12345678901234ull;
  in.severity = 0.33333;
  // Real traces' clocks exceed a double's 53 bits in ns: starts round down, ends up, exactly.
  in.labels.push_back(
      {"TTA005", "catalogue", 1712195495519689000, 1712195495519690001, "train.py", 37});
  in.pre_existing.push_back({"TTA008", "", 1712195495519688999, 1712195495519689999, "", 0});
  in.pre_existing_codes = {"TTA008"};
  in.time_lost_us_per_step = 1234.56789;
  in.run_us_per_step = 9876.54321;
  const std::string text = ttap::WriteLabelsFile(in);
  const auto j = nlohmann::json::parse(text);
  CHECK(j["labels"][0]["start_us"] == 1712195495519689LL);
  CHECK(j["labels"][0]["end_us"] == 1712195495519691LL);
  CHECK(j["pre_existing"][0]["start_us"] == 1712195495519688LL);
  CHECK_FALSE(j["pre_existing"][0].contains("family"));
  CHECK(j["seen"] == false);
  CHECK(j["severity"] == 0.333);
  CHECK(j["time_lost_us_per_step"] == 1234.568);

  auto out = ttap::ParseEvalLabels(text, "real_copy_3");
  REQUIRE(out.ok());
  CHECK(out->trace == in.trace);
  CHECK(out->anti_pattern);
  CHECK(out->source == "injected");
  CHECK(out->workload_group == in.workload_group);
  CHECK(out->split == "unseen");
  CHECK(out->base == in.base);
  CHECK(out->script == in.script);
  CHECK(out->seed == in.seed);
  REQUIRE(out->labels.size() == 1);
  CHECK(out->labels[0].code == "TTA005");
  CHECK(out->labels[0].start_ns == 1712195495519689000);
  CHECK(out->labels[0].end_ns == 1712195495519691000);
  CHECK(out->labels[0].line == 37);
  REQUIRE(out->pre_existing.size() == 1);
  CHECK(out->pre_existing_codes == in.pre_existing_codes);
  CHECK(out->time_lost_us_per_step == Approx(1234.568));
  CHECK(out->run_us_per_step == Approx(9876.543));

  // A simulated trace's file says so and carries no cost or pre-existing codes.
  ttap::EvalLabels sim;
  sim.source = "simulated";
  sim.training = true;
  sim.variant = "resnet";
  const auto js = nlohmann::json::parse(ttap::WriteLabelsFile(sim));
  CHECK(js["training"] == true);
  CHECK(js["trace_label"] == "clean");
  CHECK_FALSE(js.contains("time_lost_us_per_step"));
  CHECK_FALSE(js.contains("pre_existing_codes"));
  CHECK_FALSE(js.contains("base"));
}

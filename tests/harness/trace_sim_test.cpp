// Tests for the trace simulator behind `ttap gen` (bench/harness/trace_sim.h): every task x
// hardware loads cleanly with the expected steps and causal GPU timing; each injected anti-pattern
// is labelled and found by RunRules at the label; clean traces stay clean; output is deterministic.
#include "bench/harness/trace_sim.h"

#include <catch2/catch.hpp>

#include "analysis/load/trace_loader.h"
#include "analysis/rules/rules.h"

namespace {

std::unique_ptr<ttap::Trace> Load(const ttap::SimTrace& sim) {
  ttap::LoadOptions o;
  o.threads = 1;
  auto t = ttap::LoadTraceFromMemory(sim.json, "sim.json", o);
  REQUIRE(t.ok());
  return std::move(t.value());
}

std::string Describe(const ttap::SimSpec& s) {
  std::string d = s.task + "/" + s.hardware + (s.training ? "/train" : "/infer");
  for (auto& c : s.anti_patterns) d += "/" + c;
  return d;
}

}  // namespace

TEST_CASE("every task x hardware loads cleanly with causal GPU timing", "[sim]") {
  for (const auto& task : ttap::SimTasks()) {
    for (const auto& hw : ttap::SimHardware()) {
      for (bool training : {true, false}) {
        ttap::SimSpec spec;
        spec.task = task;
        spec.hardware = hw;
        spec.training = training;
        spec.steps = 4;
        spec.seed = 7;
        INFO(Describe(spec));
        auto sim = ttap::SimulateTrace(spec);
        CHECK(sim.labels.empty());
        CHECK(sim.script_path == "train_" + task + ".py");
        auto t = Load(sim);
        CHECK(t->stats.total_skipped() == 0);
        CHECK(t->stats.gpu_without_launch == 0);
        CHECK(t->steps.size() == 4);
        CHECK(t->rank == 0);
        const auto& ev = t->events;
        size_t kernels = 0, bad = 0, negative = 0;
        for (size_t i = 0; i < ev.size(); ++i) {
          if (ev.dur[i] < 0) ++negative;
          if (!ttap::IsGpuKind(ev.kind[i])) continue;
          ++kernels;
          if (ev.link[i] < 0 || ev.ts[i] < ev.ts[ev.link[i]]) ++bad;
        }
        CHECK(kernels > 50);
        CHECK(bad == 0);
        CHECK(negative == 0);
        // Clean: none of the injectable codes at warning or above.
        for (const auto& f : ttap::RunRules(*t, {}).findings) {
          bool injectable = f.code == "TTA001" || f.code == "TTA002" || f.code == "TTA005" ||
                            f.code == "TTA006" || f.code == "TTA009";
          INFO(f.code << ": " << f.message);
          CHECK_FALSE((injectable && f.severity <= ttap::Severity::kWarning));
        }
      }
    }
  }
}

TEST_CASE("injected anti-patterns are labelled and found at the label", "[sim]") {
  const char* codes[] = {"TTA001", "TTA002", "TTA005", "TTA006", "TTA009"};
  int n = 0;
  for (const char* code : codes) {
    for (const auto& hw : ttap::SimHardware()) {
      ttap::SimSpec spec;
      spec.task = ttap::SimTasks()[n++ % ttap::SimTasks().size()];
      spec.hardware = hw;
      spec.training = true;
      spec.steps = 4;
      spec.seed = 100 + n;
      spec.severity = 1.0;
      spec.anti_patterns = {code};
      INFO(Describe(spec));
      auto sim = ttap::SimulateTrace(spec);
      if (!ttap::SimCanInject(spec, code)) {
        CHECK(sim.labels.empty());
        continue;
      }
      REQUIRE(sim.labels.size() == 4);
      for (const auto& l : sim.labels) {
        CHECK(l.code == code);
        CHECK(l.file == sim.script_path);
        CHECK(l.line > 0);
        CHECK(l.end_us >= l.start_us);
      }
      auto t = Load(sim);
      CHECK(t->stats.total_skipped() == 0);
      bool found = false;
      for (const auto& f : ttap::RunRules(*t, {}).findings) {
        if (f.code != code) continue;
        for (const auto& l : sim.labels) {
          if (f.start_ns < l.end_us * 1000 && l.start_us * 1000 < f.end_ns) found = true;
        }
      }
      CHECK(found);
    }
  }
}

TEST_CASE("simulation is deterministic and labels serialise", "[sim]") {
  ttap::SimSpec spec;
  spec.task = "segmentation";
  spec.hardware = "H100";
  spec.seed = 42;
  spec.anti_patterns = {"TTA002", "TTA006"};
  spec.severity = 0.4;
  auto a = ttap::SimulateTrace(spec);
  auto b = ttap::SimulateTrace(spec);
  CHECK(a.json == b.json);
  spec.seed = 43;
  CHECK(ttap::SimulateTrace(spec).json != a.json);
  spec.seed = 42;
  bool has_tta006 = false;
  for (const ttap::SimLabel& l : a.labels) {
    has_tta006 = has_tta006 || l.code == "TTA006";
    CHECK(l.file == "train_segmentation.py");
    CHECK(l.start_us <= l.end_us);
  }
  CHECK(has_tta006);
  ttap::SimSpec clean;
  CHECK(ttap::SimulateTrace(clean).labels.empty());
}

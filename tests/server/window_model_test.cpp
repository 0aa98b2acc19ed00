// The learned window scorer through its C ABI (server/window_model.h -> models/window_model.cpp):
// window tensors; a tiny model trains, saves, loads and scores deterministically; empty and
// one-event windows score finite; the score is the noisy-OR of the parts the file names (chosen
// on validation by `ttap train`, again by `--retune`); missing, corrupt and truncated weights files
// give clear messages; `ttap scan --model` with a bad file still runs the rules, and with a good
// one adds TTA900 only where no rule explains a window. Skipped when libtorch was not found at
// build time.
#include "server/window_model.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "analysis/load/trace_loader.h"
#include "analysis/model/window_tensors.h"
#include "analysis/tiny_trace.h"
#include "bench/harness/score_tuning.h"
#include "bench/harness/trace_sim.h"
#include "server/scan.h"
#include "test_support.h"

namespace {

bool HaveModels() {
  if (!ttap_test::PathExists(ttap_test::ModelsLib())) return false;
  setenv("TTAP_MODELS_LIB", ttap_test::ModelsLib().c_str(), 0);
  return true;
}

std::unique_ptr<ttap::Trace> Load(const std::string& json) {
  ttap::LoadOptions o;
  o.threads = 1;
  auto t = ttap::LoadTraceFromMemory(json, "t.json", o);
  REQUIRE(t.ok());
  return std::move(t.value());
}

std::unique_ptr<ttap::Trace> Sim(uint64_t seed, std::vector<std::string> codes) {
  ttap::SimSpec s;
  s.steps = 3;
  s.seed = seed;
  s.anti_patterns = std::move(codes);
  s.severity = 0.8;
  return Load(ttap::SimulateTrace(s).json);
}

// A simulated trace as a training example: TTA001 in the odd seeds' traces; every window counts
// as clean for the category head; |label| is the trace label.
ttap::TrainExample SimExample(uint64_t seed, int label) {
  auto t = Sim(seed, seed % 2 ? std::vector<std::string>{"TTA001"} : std::vector<std::string>{});
  ttap::TrainExample ex;
  ex.tensors = ttap::BuildWindowTensors(*t);
  ex.label = label;
  ex.categories.assign(t->windows.size(), 0);
  return ex;
}

// What the tiny models of this file train with: one epoch on one CPU thread.
ttap::TrainSettings OneCpuEpoch(std::vector<std::string> codes) {
  ttap::TrainSettings s;
  s.epochs = 1;
  s.threads = 1;
  s.device = "cpu";
  s.codes = std::move(codes);
  return s;
}

// A tiny model trained once for the tests of this file.
const std::string& TinyModel() {
  static std::string path;
  if (!path.empty()) return path;
  std::vector<ttap::TrainExample> train, val;
  // The fifth trace has no trace-level label (-1, as `train --pre-existing windows` gives).
  for (int i = 0; i < 5; ++i) {
    (i == 3 ? val : train).push_back(SimExample(100 + i, i == 4 ? -1 : i % 2));
  }
  ttap::TrainSettings s = OneCpuEpoch({"TTA001", "TTA002"});
  s.trained_on = R"({"groups": ["sim/classification/resnet"], "splits": ["train", "val"]})";
  path = ttap_test::MakeTempDir() + "/tiny.pt";
  std::vector<std::string> lines;
  ttap::Status st = ttap::TrainWindowModel(train, val, s, path,
                                           [&](const std::string& l) { lines.push_back(l); });
  INFO(st.message());
  REQUIRE(st.ok());
  REQUIRE(!lines.empty());
  CHECK(lines.front().find("epoch 1/1") != std::string::npos);
  return path;
}

}  // namespace

TEST_CASE("window tensors: sub-tokens, caps, lanes and masks", "[model]") {
  CHECK(ttap::NameSubTokens("void at::native::vectorized_elementwise_kernel<4, float>") ==
        std::vector<std::string>{"void", "at", "native", "vectorized", "elementwise", "kernel",
                                 "float"});
  CHECK(ttap::HashToken("kernel", 4096) >= 1);
  CHECK(ttap::HashToken("kernel", 4096) < 4096);
  auto t = Sim(3, {});
  ttap::WindowTensorSpec spec;
  spec.max_events = 16;
  const ttap::WindowTensors wt = ttap::BuildWindowTensors(*t, spec);
  REQUIRE(wt.windows == static_cast<int>(t->windows.size()));
  CHECK(wt.events == 16);
  CHECK(wt.token_ids.size() == static_cast<size_t>(wt.windows) * 16 * spec.tokens);
  size_t real = 0;
  for (size_t i = 0; i < wt.mask.size(); ++i) {
    real += wt.mask[i];
    if (!wt.mask[i]) CHECK(wt.kinds[i] == 0);
    if (wt.mask[i]) CHECK((wt.lanes[i] >= 1 && wt.lanes[i] < spec.lanes));
  }
  CHECK(real > 0);
  for (float v : wt.numeric) CHECK(std::isfinite(v));
  // Window features: the absolute ones, then each minus its median over the trace's windows.
  REQUIRE(wt.features == ttap::kWindowTensorFeatures);
  REQUIRE(wt.window_features.size() ==
          static_cast<size_t>(wt.windows) * static_cast<size_t>(wt.features));
  const int half = wt.features / 2;
  for (int j = 0; j < half; ++j) {
    std::vector<float> column;
    for (int w = 0; w < wt.windows; ++w) column.push_back(wt.window_features[w * wt.features + j]);
    std::vector<float> sorted = column;
    std::sort(sorted.begin(), sorted.end());
    const float median = sorted[sorted.size() / 2];
    for (int w = 0; w < wt.windows; ++w) {
      CHECK(wt.window_features[w * wt.features + half + j] ==
            Approx(column[w] - median).margin(1e-5));
    }
  }
}

TEST_CASE("a model trained on fewer window features reads the leading ones", "[model]") {
  if (!HaveModels()) return;
  auto leading = [](ttap::WindowTensors wt, int keep) {
    std::vector<float> cut;
    for (int w = 0; w < wt.windows; ++w) {
      for (int j = 0; j < keep; ++j) cut.push_back(wt.window_features[w * wt.features + j]);
    }
    wt.features = keep;
    wt.window_features = std::move(cut);
    return wt;
  };
  std::vector<ttap::TrainExample> train, val;
  for (int i = 0; i < 3; ++i) {
    ttap::TrainExample ex = SimExample(300 + i, i % 2);
    ex.tensors = leading(ex.tensors, 14);  // as weights made before the relative features
    (i == 2 ? val : train).push_back(std::move(ex));
  }
  const std::string path = ttap_test::MakeTempDir() + "/f14.pt";
  REQUIRE(ttap::TrainWindowModel(train, val, OneCpuEpoch({"TTA001"}), path, [](const std::string&) {
          }).ok());
  auto m = ttap::WindowModel::Open(path, "cpu", 1);
  REQUIRE(m.ok());
  CHECK((*m)->config().find("features:14") != std::string::npos);
  auto t = Sim(310, {"TTA001"});
  const ttap::WindowTensors full = ttap::BuildWindowTensors(*t);
  auto a = (*m)->Score(full);
  auto b = (*m)->Score(leading(full, 14));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == b->size());
  for (size_t w = 0; w < a->size(); ++w) CHECK((*a)[w].score == (*b)[w].score);
  // Fewer features than the model reads is refused with a message.
  auto c = (*m)->Score(leading(full, 10));
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().find("10 window features") != std::string::npos);
}

TEST_CASE("a trained model loads and scores deterministically", "[model]") {
  if (!HaveModels()) {
    WARN("libttap_models.so not built (no libtorch): skipped");
    return;
  }
  const std::string& path = TinyModel();
  auto m = ttap::WindowModel::Open(path, "cpu", 1);
  INFO((m.ok() ? "" : m.status().message()));
  REQUIRE(m.ok());
  CHECK((*m)->codes() == std::vector<std::string>{"TTA001", "TTA002"});
  CHECK((*m)->trained_on().find("sim/classification/resnet") != std::string::npos);
  CHECK((*m)->device() == "cpu");
  auto t = Sim(77, {"TTA001"});
  auto a = (*m)->Score(*t);
  auto b = (*m)->Score(*t);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == t->windows.size());
  for (size_t w = 0; w < a->size(); ++w) {
    CHECK((*a)[w].score == (*b)[w].score);
    CHECK((*a)[w].category == (*b)[w].category);
    CHECK((*a)[w].score >= 0.0);
    CHECK((*a)[w].score <= 1.0);
  }
  // A second process-level open of the same file gives the same numbers.
  auto m2 = ttap::WindowModel::Open(path, "cpu", 1);
  REQUIRE(m2.ok());
  auto c = (*m2)->Score(*t);
  REQUIRE(c.ok());
  for (size_t w = 0; w < a->size(); ++w) CHECK((*a)[w].score == (*c)[w].score);
}

TEST_CASE("the window score is the noisy-OR of the parts the file names", "[model]") {
  if (!HaveModels()) return;
  auto m = ttap::WindowModel::Open(TinyModel(), "cpu", 1);
  REQUIRE(m.ok());
  CHECK((*m)->score_parts() == "mil+cat+unusual");  // not chosen: TrainWindowModel alone
  auto t = Sim(78, {"TTA001"});
  auto all = (*m)->Score(*t);
  REQUIRE(all.ok());
  for (const auto& p : *all) {
    for (double v : {p.mil, p.cat, p.unusual}) {
      CHECK(v >= 0.0);
      CHECK(v <= 1.0);
    }
    CHECK(p.score == Approx(1 - (1 - p.mil) * (1 - p.cat) * (1 - p.unusual)).margin(1e-5));
  }
  CHECK((*m)->flag_threshold() == Approx(0.8));  // the default until training chooses one
  // Rewritten with other parts: same weights and parts, another score; the open model unchanged.
  const std::string dir = ttap_test::MakeTempDir();
  REQUIRE((*m)->SaveTuned({"cat+unusual", 0.93}, dir + "/cu.pt").ok());
  auto again = (*m)->Score(*t);
  REQUIRE(again.ok());
  REQUIRE(again->size() == all->size());
  for (size_t w = 0; w < all->size(); ++w) CHECK((*again)[w].score == (*all)[w].score);
  auto cu = ttap::WindowModel::Open(dir + "/cu.pt", "cpu", 1);
  REQUIRE(cu.ok());
  CHECK((*cu)->score_parts() == "cat+unusual");
  CHECK((*cu)->flag_threshold() == Approx(0.93));
  auto some = (*cu)->Score(*t);
  REQUIRE(some.ok());
  REQUIRE(some->size() == all->size());
  for (size_t w = 0; w < some->size(); ++w) {
    const auto& p = (*some)[w];
    CHECK(p.mil == Approx((*all)[w].mil).margin(1e-6));
    CHECK(p.cat == Approx((*all)[w].cat).margin(1e-6));
    CHECK(p.unusual == Approx((*all)[w].unusual).margin(1e-6));
    CHECK(p.score == Approx(1 - (1 - p.cat) * (1 - p.unusual)).margin(1e-5));
  }
  // Bad parts and flag thresholds are refused.
  auto bad = (*m)->SaveTuned({"mil+magic", 0.9}, dir + "/bad.pt");
  REQUIRE(!bad.ok());
  CHECK(bad.message().find("bad score parts 'mil+magic'") != std::string::npos);
  auto bad_flag = (*m)->SaveTuned({"cat", 1.5}, dir + "/bad.pt");
  REQUIRE(!bad_flag.ok());
  CHECK(bad_flag.message().find("flag threshold") != std::string::npos);
  // A file with one header line made bad does not load, and the message names the line.
  auto open_with = [&](const std::string& line, const std::string& bad_line) {
    std::string bytes = ttap_test::ReadFile(dir + "/cu.pt");
    const size_t at = bytes.find(line);
    REQUIRE(at != std::string::npos);
    bytes.replace(at, line.size(), bad_line);
    REQUIRE(ttap_test::WriteFile(dir + "/broken.pt", bytes));
    auto broken = ttap::WindowModel::Open(dir + "/broken.pt", "cpu", 1);
    REQUIRE(!broken.ok());
    return broken.status().message();
  };
  CHECK(open_with("score_parts=cat+unusual", "score_parts=cat+unusua!").find("score_parts line") !=
        std::string::npos);
  CHECK(open_with("flag_threshold=0.93", "flag_threshold=9.93").find("flag_threshold line") !=
        std::string::npos);
}

TEST_CASE("empty and one-event windows score finite", "[model]") {
  if (!HaveModels()) return;
  auto m = ttap::WindowModel::Open(TinyModel(), "cpu", 1);
  REQUIRE(m.ok());
  // One kernel: 99 of the 100 windows are empty, one holds one event.
  auto t = Load(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
     "args": {"stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]})");
  auto s = (*m)->Score(*t);
  REQUIRE(s.ok());
  REQUIRE(!s->empty());
  for (const auto& p : *s) CHECK(std::isfinite(p.score));
  auto none = Load(R"({"traceEvents": []})");
  auto e = (*m)->Score(*none);
  REQUIRE(e.ok());
  CHECK(e->size() == none->windows.size());
}

TEST_CASE("missing, corrupt and truncated model files give clear messages", "[model]") {
  if (!HaveModels()) return;
  auto missing = ttap::WindowModel::Open("/nonexistent/m.pt");
  REQUIRE(!missing.ok());
  CHECK(missing.status().message().find("does not exist") != std::string::npos);
  const std::string dir = ttap_test::MakeTempDir();
  REQUIRE(ttap_test::WriteFile(dir + "/garbage.pt", "not a model at all"));
  auto garbage = ttap::WindowModel::Open(dir + "/garbage.pt");
  REQUIRE(!garbage.ok());
  CHECK(garbage.status().message().find("not a ttap window-scorer file") != std::string::npos);
  const std::string whole = ttap_test::ReadFile(TinyModel());
  REQUIRE(ttap_test::WriteFile(dir + "/cut.pt", whole.substr(0, whole.size() / 2)));
  auto cut = ttap::WindowModel::Open(dir + "/cut.pt");
  REQUIRE(!cut.ok());
  CHECK(cut.status().message().find("corrupt or truncated") != std::string::npos);
  auto bad_device = ttap::WindowModel::Open(TinyModel(), "tpu");
  REQUIRE(!bad_device.ok());
  CHECK(bad_device.status().message().find("unknown device") != std::string::npos);
}

TEST_CASE("scan --model: a bad file leaves the rules working, a good one adds TTA900", "[model]") {
  if (!HaveModels()) return;
  const std::string dir = ttap_test::MakeTempDir();
  ttap::SimSpec s;
  s.steps = 3;
  s.seed = 5;
  s.anti_patterns = {"TTA005"};
  REQUIRE(ttap_test::WriteFile(dir + "/t.json", ttap::SimulateTrace(s).json));
  REQUIRE(ttap_test::WriteFile(dir + "/bad.pt", "junk"));
  auto bad =
      ttap_test::RunTtap("scan '" + dir + "/t.json' --model '" + dir + "/bad.pt' --format json");
  CHECK(bad.exit_code == 1);  // findings
  CHECK(bad.err.find("rules only") != std::string::npos);
  CHECK(bad.out.find("TTA005") != std::string::npos);
  auto good = ttap_test::RunTtap("scan '" + dir + "/t.json' --model '" + TinyModel() +
                                 "' --format json --min-severity hint");
  INFO(good.err);
  CHECK(good.exit_code == 1);
  CHECK(good.out.find("TTA005") != std::string::npos);
  CHECK(good.err.find("rules only") == std::string::npos);
}

// Idle GPU time no rule names: three steps of 30 kernels of 1 ms, each after 150 us of CPU work
// with the GPU idle (below TTA008's 200 us gaps; GPU-bound, so no CPU-overhead region).
std::unique_ptr<ttap::Trace> SmallGaps() {
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 30; ++k) {
      t.Cpu("aten::mul", cpu, 150);
      t.Kernel("vectorized_elementwise_kernel", cpu + 140, 5, cpu + 150, 1000);
      cpu += 1150;
    }
    t.Step(s + 1, start, cpu - start);
  }
  return t.Load(30);
}

TEST_CASE("TTA900 says which parts of the window score flagged it, and what it costs", "[model]") {
  if (!HaveModels()) return;
  auto m = ttap::WindowModel::Open(TinyModel(), "cpu", 1);
  REQUIRE(m.ok());
  ttap::ScanOptions o;
  o.model = m->get();
  o.model_threshold = 0;  // every window no rule explains
  ttap::ScanResult r = ttap::ScanTrace(SmallGaps(), o);
  int unusual = 0;
  for (const ttap::Finding& f : r.rules.findings) {
    if (f.code != "TTA900") continue;
    ++unusual;
    INFO(f.message);
    CHECK(f.message.find("anti-pattern head") != std::string::npos);
    CHECK(f.message.find("some catalogue category") != std::string::npos);
    CHECK(f.message.find("unlike clean training windows") != std::string::npos);
    CHECK(f.evidence.at("unusual").number > 0);
    CHECK(f.evidence.at("unusual").number < 1);
    // Costed by the replay like any finding: the idle GPU time, with its CPU work moved out.
    CHECK(f.message.find("moving the CPU work out of its idle GPU time saves") !=
          std::string::npos);
    CHECK(f.share_of_step > 0.05);
    CHECK(f.severity != ttap::Severity::kHint);
  }
  CHECK(unusual > 0);
  // A GPU-bound clean run's windows cost nothing to move: every window flagged, none reported.
  for (const ttap::Finding& f : ttap::ScanTrace(Sim(79, {}), o).rules.findings) {
    INFO(f.message);
    CHECK(f.code != "TTA900");
  }
  // Without a threshold of its own, scan takes the file's flag threshold.
  const std::string dir = ttap_test::MakeTempDir();
  REQUIRE((*m)->SaveTuned({(*m)->score_parts(), 1e-6}, dir + "/low.pt").ok());
  REQUIRE((*m)->SaveTuned({(*m)->score_parts(), 1.0}, dir + "/high.pt").ok());
  auto count_unusual = [&](const std::string& path) {
    auto model = ttap::WindowModel::Open(path, "cpu", 1);
    REQUIRE(model.ok());
    ttap::ScanOptions file_threshold;
    file_threshold.model = model->get();
    int n = 0;
    for (const ttap::Finding& f : ttap::ScanTrace(SmallGaps(), file_threshold).rules.findings) {
      n += f.code == "TTA900";
    }
    return n;
  };
  CHECK(count_unusual(dir + "/low.pt") == unusual);
  CHECK(count_unusual(dir + "/high.pt") == 0);
}

TEST_CASE("train CLI: several datasets of one split, and a split conflict refused", "[model]") {
  if (!HaveModels()) return;
  const std::string dir = ttap_test::MakeTempDir();
  using ttap_test::RunTtap;
  REQUIRE(RunTtap("gen --out '" + dir + "/a' --seed 5 --count 16").exit_code == 0);
  REQUIRE(RunTtap("gen --out '" + dir +
                  "/b' --seed 6 --split-seed 5 --count 16 --only-splits "
                  "train")
              .exit_code == 0);
  auto ok = RunTtap("train --data '" + dir + "/a' --data '" + dir + "/b/' --out '" + dir +
                    "/m.pt' --epochs 1 --threads 1 --device cpu --pre-existing windows");
  INFO(ok.out + ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(ok.out.find(dir + "/a," + dir + "/b") != std::string::npos);
  // Training ends by choosing the score parts on the val split.
  CHECK(ok.out.find("score parts chosen on") != std::string::npos);
  auto m = ttap::WindowModel::Open(dir + "/m.pt", "cpu", 1);
  REQUIRE(m.ok());
  CHECK((*m)->trained_on().find("\"pre_existing\":\"windows\"") != std::string::npos);
  const std::string chosen = (*m)->score_parts();
  CHECK(ok.out.find("-> " + chosen) != std::string::npos);
  // ... and the flag threshold, within its documented range and printed with what it flags.
  CHECK((*m)->flag_threshold() >= ttap::kMinFlagThreshold);
  CHECK((*m)->flag_threshold() <= ttap::kMaxFlagThreshold);
  char flag_text[32];
  std::snprintf(flag_text, sizeof(flag_text), "flag threshold %.3f: flags", (*m)->flag_threshold());
  CHECK(ok.out.find(flag_text) != std::string::npos);
  CHECK((*m)->trained_on().find("\"train_groups\":[") != std::string::npos);
  auto t = Sim(80, {"TTA001"});
  auto before = (*m)->Score(*t);
  REQUIRE(before.ok());
  // --retune chooses again on the val split only and keeps the weights: same choice.
  auto retune = RunTtap("train --data '" + dir + "/a' --out '" + dir +
                        "/m.pt' --retune --threads 1 --device cpu");
  INFO(retune.out + retune.err);
  REQUIRE(retune.exit_code == 0);
  CHECK(retune.out.find("-> " + chosen) != std::string::npos);
  CHECK(retune.out.find("epoch") == std::string::npos);
  auto reopened = ttap::WindowModel::Open(dir + "/m.pt", "cpu", 1);
  REQUIRE(reopened.ok());
  auto after = (*reopened)->Score(*t);
  REQUIRE(after.ok());
  REQUIRE(after->size() == before->size());
  for (size_t w = 0; w < after->size(); ++w) CHECK((*after)[w].mil == (*before)[w].mil);
  // Refused: a dataset without val traces, training-only options, a missing file, and (below)
  // val traces of groups the model was trained on.
  auto no_val = RunTtap("train --data '" + dir + "/b' --out '" + dir + "/m.pt' --retune");
  CHECK(no_val.exit_code == 2);
  CHECK(no_val.err.find("no val traces") != std::string::npos);
  auto flag = RunTtap("train --data '" + dir + "/a' --out '" + dir + "/m.pt' --retune --epochs 3");
  CHECK(flag.exit_code == 2);
  CHECK(flag.err.find("--epochs only applies to training") != std::string::npos);
  CHECK(RunTtap("train --data '" + dir + "/a' --out '" + dir + "/none.pt' --retune").exit_code ==
        2);
  // Splits drawn from another seed put some group in train here and val there.
  REQUIRE(
      RunTtap("gen --out '" + dir + "/c' --seed 7 --count 16 --only-splits train,val").exit_code ==
      0);
  auto clash = RunTtap("train --data '" + dir + "/a' --data '" + dir + "/c' --out '" + dir +
                       "/n.pt' --epochs 1 --threads 1");
  CHECK(clash.exit_code == 2);
  CHECK(clash.err.find("--split-seed") != std::string::npos);
  auto leak = RunTtap("train --data '" + dir + "/c' --out '" + dir + "/m.pt' --retune");
  CHECK(leak.exit_code == 2);
  CHECK(leak.err.find("which the model was trained on") != std::string::npos);
  CHECK(RunTtap("train --data '" + dir + "/a' --out '" + dir + "/n.pt' --pre-existing maybe")
            .exit_code == 2);
}

TEST_CASE("the window scorer is not asked about a trace without GPU activity", "[model]") {
  if (!HaveModels()) return;
  auto m = ttap::WindowModel::Open(TinyModel(), "cpu", 1);
  REQUIRE(m.ok());
  // A CPU-only run (the scorer learned GPU runs only): three steps of CPU ops.
  std::string json = "{\"traceEvents\": [";
  for (int s = 0; s < 3; ++s) {
    const int64_t t0 = 1000000 + s * 100000;
    json += std::string(s ? "," : "") +
            "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":" + "\"ProfilerStep#" +
            std::to_string(s + 1) + "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(t0) +
            ",\"dur\":90000}";
    for (int k = 0; k < 40; ++k) {
      json +=
          ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":" +
          std::to_string(t0 + 10 + k * 2000) + ",\"dur\":1500}";
    }
  }
  json += "]}";
  ttap::ScanOptions o;
  o.model = m->get();
  o.model_threshold = 0;  // every window no rule explains, were it asked
  const ttap::ScanResult r = ttap::ScanTrace(Load(json), o);
  for (const ttap::Finding& f : r.rules.findings) CHECK(f.code != "TTA900");
  CHECK(r.window_fusion.empty());  // the rules' window scores stand
  CHECK(r.model_window_scores.empty());
}

// The `ttap` binary as a whole process: --help/--version, exit codes, `ttap stats` text and JSON
// (golden files for small bundled traces), directories of ranks, configuration discovery.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/tiny_trace.h"
#include "server/fixture_traces.h"
#include "test_support.h"

using ttap_test::RunTtap;
using ttap_test::SourceDir;

namespace {

std::string DataTrace(const std::string& name) { return SourceDir() + "/tests/data/" + name; }

// Drops path-dependent keys so a golden file does not depend on the checkout location.
void StripPaths(nlohmann::json* j) {
  if (j->is_object()) {
    j->erase("trace");
    j->erase("file");
    for (auto& [k, v] : j->items()) StripPaths(&v);
  } else if (j->is_array()) {
    for (auto& v : *j) StripPaths(&v);
  }
}

}  // namespace

TEST_CASE("version and help", "[cli]") {
  auto v = RunTtap("--version");
  CHECK(v.exit_code == 0);
  CHECK(v.out.rfind("ttap ", 0) == 0);
  auto h = RunTtap("--help");
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("usage: ttap") != std::string::npos);
  CHECK(h.out.find("stats") != std::string::npos);
  auto none = RunTtap("");
  CHECK(none.exit_code == 2);
  auto unknown = RunTtap("frobnicate");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("unknown command") != std::string::npos);
}

TEST_CASE("stats JSON matches the golden files", "[cli][golden]") {
  for (const char* name : {"kineto--docs__traces__before_fix_trace.json.gz",
                           "hta--amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                           "hta--cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"}) {
    INFO(name);
    auto r = RunTtap("stats --json '" + DataTrace(name) + "'");
    REQUIRE(r.exit_code == 0);
    auto got = nlohmann::json::parse(r.out);
    REQUIRE(got.contains("ranks"));
    REQUIRE(got.contains("import_stats"));
    const auto& rank = got["ranks"][0];
    for (const char* key : {"rank", "device", "steps", "breakdown", "top_kernels", "hta"}) {
      CHECK(rank.contains(key));
    }
    for (const char* key : {"idle_time_us", "compute_time_us", "non_compute_time_us",
                            "kernel_time_us", "comm_comp_overlap_pct", "iterations"}) {
      CHECK(rank["hta"].contains(key));
    }
    StripPaths(&got);
    std::string golden_path = SourceDir() + "/tests/golden/" + std::string(name) + ".stats.json";
    std::string golden = ttap_test::ReadFile(golden_path);
    if (golden.empty()) {
      FAIL("missing golden file " << golden_path << "; produced:\n" << got.dump(2));
    }
    CHECK(got == nlohmann::json::parse(golden));
  }
}

TEST_CASE("stats text output", "[cli]") {
  auto r = RunTtap("stats '" + SourceDir() +
                   "/examples/resnet50_num_workers_0/worker0.pt.trace.json.gz'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("6 steps") != std::string::npos);
  CHECK(r.out.find("GPU active") != std::string::npos);
  // The 2021 trace's enumerate(DataLoader) regions are annotations, not CPU ops: their time shows
  // as data loading.
  CHECK(r.out.find("data loading") != std::string::npos);
}

TEST_CASE("stats text output: steps inferred without ProfilerStep are counted as such", "[cli]") {
  // Four repeats of a loop's record_function and no ProfilerStep: the header said "0 steps" and
  // then broke the time down per step.
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  for (int k = 0; k < 4; ++k) {
    const double s = 1000 + 1000 * k;
    t.Cpu("train_step", s, 600, "user_annotation");
    t.Cpu("aten::mm", s + 100, 100);
    t.Kernel("ampere_sgemm_128x64_nn", s + 110, 5, s + 120, 300);
  }
  const std::string path = ttap_test::MakeTempDir() + "/loop.pt.trace.json";
  REQUIRE(ttap_test::WriteFile(path, t.Json()));
  auto r = RunTtap("stats '" + path + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("no ProfilerStep, 4 steps inferred") != std::string::npos);
  CHECK(r.out.find("0 steps") == std::string::npos);
}

TEST_CASE("unusable input: one line naming the file, exit code 2", "[cli]") {
  std::string dir = ttap_test::MakeTempDir();
  WriteOrFail(dir + "/notes.json", "these are my notes");
  WriteOrFail(dir + "/trunc.json", R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "na)");
  for (const std::string& f : {dir + "/missing.json", dir + "/notes.json", dir + "/trunc.json"}) {
    INFO(f);
    auto r = RunTtap("stats '" + f + "'");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(f) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  auto trunc = RunTtap("stats '" + dir + "/trunc.json'");
  CHECK(trunc.err.find("byte") != std::string::npos);
  auto usage = RunTtap("stats");
  CHECK(usage.exit_code == 2);
}

TEST_CASE("a directory of ranks is loaded and ordered by rank", "[cli]") {
  std::string dir = ttap_test::MakeTempDir();
  auto event = [](int rank) {
    return std::string(R"({"distributedInfo": {"rank": )") + std::to_string(rank) +
           R"(, "world_size": 2}, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]})";
  };
  WriteOrFail(dir + "/a_worker.pt.trace.json", event(1));
  WriteOrFail(dir + "/b_worker.pt.trace.json", event(0));
  auto r = RunTtap("stats --json '" + dir + "'");
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["ranks"].size() == 2);
  CHECK(j["ranks"][0]["rank"] == 0);
  CHECK(j["ranks"][1]["rank"] == 1);
  CHECK(j["ranks"][0]["world_size"] == 2);
  auto one = RunTtap("stats --json --rank 1 '" + dir + "'");
  REQUIRE(one.exit_code == 0);
  CHECK(nlohmann::json::parse(one.out)["ranks"].size() == 1);
}

TEST_CASE("configuration: pyproject [tool.ttap], ttap.toml, --config, flags win", "[cli][config]") {
  std::string dir = ttap_test::MakeTempDir();
  std::string trace = DataTrace("kineto--docs__traces__before_fix_trace.json.gz");
  WriteOrFail(dir + "/pyproject.toml", "[project]\nname = \"x\"\n\n[tool.ttap]\nwindows = 7\n");
  auto r = RunTtap("stats --json '" + trace + "'", dir);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out)["ranks"][0]["windows"]["count"] == 7);
  auto flag = RunTtap("stats --json --windows 3 '" + trace + "'", dir);
  CHECK(nlohmann::json::parse(flag.out)["ranks"][0]["windows"]["count"] == 3);
  WriteOrFail(dir + "/other.toml", "windows = 11\n");
  auto cfg = RunTtap("--config other.toml stats --json '" + trace + "'", dir);
  REQUIRE(cfg.exit_code == 0);
  CHECK(nlohmann::json::parse(cfg.out)["ranks"][0]["windows"]["count"] == 11);
  WriteOrFail(dir + "/broken.toml", "windows = = 3\n");
  auto broken = RunTtap("--config broken.toml stats '" + trace + "'", dir);
  CHECK(broken.exit_code == 2);
  CHECK(broken.err.find("broken.toml") != std::string::npos);
  WriteOrFail(dir + "/bad_value.toml", "windows = 0\n");
  auto bad = RunTtap("--config bad_value.toml stats '" + trace + "'", dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("windows") != std::string::npos);
}

TEST_CASE("libtorch stays out of start-up: loaded by dlopen only when asked", "[cli][models]") {
  // The binary itself must not link libtorch (0.4 s and 160 MB before main otherwise).
  FILE* p = popen(("ldd '" + ttap_test::Binary() + "'").c_str(), "r");
  REQUIRE(p);
  std::string ldd;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) ldd.append(buf, n);
  pclose(p);
  CHECK(ldd.find("libtorch") == std::string::npos);
  CHECK(ldd.find("libc10") == std::string::npos);
  // libcurl too is opened only when LLM drafts run (a machine without it gets the rest).
  CHECK(ldd.find("libcurl") == std::string::npos);
  auto r = RunTtap("doctor");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("models: ") != std::string::npos);
  CHECK(r.out.find("llm: libcurl found") != std::string::npos);
  // A module that is not ours gives a clear message instead of a crash.
  std::string dir = ttap_test::MakeTempDir();
  WriteOrFail(dir + "/libttap_models.so", "not an ELF file");
  FILE* env = popen(
      ("TTAP_MODELS_LIB='" + dir + "/libttap_models.so' '" + ttap_test::Binary() + "' doctor 2>&1")
          .c_str(),
      "r");
  REQUIRE(env);
  std::string out;
  while ((n = fread(buf, 1, sizeof(buf), env)) > 0) out.append(buf, n);
  CHECK(pclose(env) == 0);
  CHECK(out.find(dir + "/libttap_models.so") != std::string::npos);
}

TEST_CASE("stats --json: the hta block agrees with HTA's own output", "[cli][golden][hta]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared not present: skipped");
    return;
  }
  auto ref = nlohmann::json::parse(
      ttap_test::ReadFile(ttap_test::SharedDir() + "/traces/hta_reference.json"));
  for (const char* name :
       {"hta--nccl_parser_config__nccl_data.json.gz",
        "param--dlrm_kineto.tar.gz__worker3_step_12.1694128201557.pt.trace.json.gz",
        "tracelens--mi300__Falconsai_nsfw_image_detection__1016002.json.gz",
        "kineto--docs__traces__after_fix_trace.json.gz"}) {
    INFO(name);
    auto r = RunTtap("stats --json '" + ttap_test::RealTracesDir() + "/" + name + "'");
    REQUIRE(r.exit_code == 0);
    const auto hta = nlohmann::json::parse(r.out)["ranks"][0]["hta"];
    const auto& entry = ref[name];
    const auto& block = entry.contains("no_ns_rounding") ? entry["no_ns_rounding"] : entry;
    const auto& tb = block["temporal_breakdown"].begin().value();
    const double kernel = tb["kernel_time_us"].get<double>();
    for (const char* key :
         {"idle_time_us", "compute_time_us", "non_compute_time_us", "kernel_time_us"}) {
      INFO(key);
      CHECK(std::abs(hta[key].get<double>() - tb[key].get<double>()) <= 0.01 * kernel);
    }
    CHECK(hta["iterations"] == block["n_iterations"]);
    const auto& overlap = block.value("comm_comp_overlap_pctg", nlohmann::json::object());
    bool has_comm = false;
    for (auto& [rank, v] : overlap.items()) {
      if (!v.is_number()) continue;
      has_comm = true;
      CHECK(std::abs(hta["comm_comp_overlap_pct"].get<double>() - v.get<double>()) <= 0.01);
    }
    if (!has_comm) CHECK(hta["comm_comp_overlap_pct"].is_null());
  }
}

TEST_CASE("lsp: a port out of range or not a number is refused, not wrapped", "[cli][lsp]") {
  for (const char* args :
       {"lsp --listen 127.0.0.1:99999 < /dev/null", "lsp --listen 127.0.0.1:80x < /dev/null",
        "lsp --socket=70000 < /dev/null", "lsp --socket abc < /dev/null"}) {
    INFO(args);
    auto r = RunTtap(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("is not a port") != std::string::npos);
  }
}

TEST_CASE("stats reads a pipe, '-' (standard input), and refuses a FIFO without a writer",
          "[cli]") {
  const std::string trace = DataTrace("kineto--docs__traces__before_fix_trace.json.gz");
  auto direct = RunTtap("stats --json '" + trace + "'");
  REQUIRE(direct.exit_code == 0);
  const auto events = nlohmann::json::parse(direct.out)["ranks"][0]["events"];
  // Gzip and plain text, through a pipe: the bytes read to tell the format are not lost.
  for (const std::string& cmd :
       {"cat '" + trace + "' | '" + ttap_test::Binary() + "' stats --json -",
        "zcat '" + trace + "' | '" + ttap_test::Binary() + "' stats --json /dev/stdin"}) {
    INFO(cmd);
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    CHECK(pclose(p) == 0);
    CHECK(nlohmann::json::parse(out)["ranks"][0]["events"] == events);
  }
  // A named FIFO no one writes to: a clear error at once, not a wait forever.
  const std::string fifo = ttap_test::MakeTempDir() + "/trace.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  auto r = RunTtap("stats '" + fifo + "'");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("empty") != std::string::npos);
}

TEST_CASE("cli: each command has its own --help", "[cli]") {
  for (const char* command : {"stats", "scan", "gen", "eval", "train", "lsp", "doctor"}) {
    INFO(command);
    auto r = RunTtap(std::string(command) + " --help");
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(std::string("usage: ttap [--config FILE] ") + command, 0) == 0);
    CHECK(r.out.find("commands:") == std::string::npos);  // not the global list
    CHECK(r.out.find("--config FILE") != std::string::npos);
  }
  CHECK(RunTtap("scan --help").out.find("--select CODES") != std::string::npos);
  CHECK(RunTtap("--help").out.find("commands:") != std::string::npos);
}

TEST_CASE("stats --json and scan --format json|sarif write non-UTF-8 file names, not abort",
          "[cli][utf8]") {
  // A trace file named w\xff.pt.trace.json (Latin-1 on a UTF-8 system), alone and in a folder.
  const std::string dir = ttap_test::MakeTempDir();
  const std::string name = dir + "/w\xff.pt.trace.json";
  REQUIRE(ttap_test::WriteFile(name, ttap_test::StallTrace()));
  for (const std::string& target : {name, dir}) {
    INFO(target);
    auto stats = RunTtap("stats --json '" + target + "'");
    CHECK(stats.exit_code == 0);
    CHECK_FALSE(nlohmann::json::parse(stats.out, nullptr, false).is_discarded());
    for (const char* format : {"json", "sarif"}) {
      INFO(format);
      auto scan = RunTtap(std::string("scan --format ") + format + " '" + target + "'");
      CHECK((scan.exit_code == 0 || scan.exit_code == 1));
      CHECK_FALSE(nlohmann::json::parse(scan.out, nullptr, false).is_discarded());
    }
  }
}

TEST_CASE("scan of a job's ranks: the table, each rank's lateness and the straggler ranks",
          "[cli][job]") {
  const std::string real = ttap_test::RealTracesDir();
  const std::string dir = ttap_test::MakeTempDir();
  int ranks = 0;
  for (int r = 0; r < 8; ++r) {
    const std::string prefix =
        "param--dlrm_kineto.tar.gz__worker" + std::to_string(r) + "_step_12.";
    for (const char* stamp : {"1694128201545", "1694128201556", "1694128201554", "1694128201557",
                              "1694128201547", "1694128201549", "1694128201553"}) {
      const std::string name = prefix + stamp + ".pt.trace.json.gz";
      struct stat st;
      if (stat((real + "/" + name).c_str(), &st) != 0) continue;
      REQUIRE(symlink((real + "/" + name).c_str(), (dir + "/" + name).c_str()) == 0);
      ++ranks;
      break;
    }
  }
  if (ranks != 8) {
    WARN("the 8 PARAM DLRM ranks of ../shared are not here: skipped");
    return;
  }
  auto text = ttap_test::RunTtap("scan --no-model '" + dir + "'");
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("job: 8 ranks, 1 step(s), 8 collective(s) on every rank") !=
        std::string::npos);
  CHECK(text.out.find("[TTA018 straggler-rank]: ranks 7, ") != std::string::npos);
  CHECK(text.out.find("it could be") != std::string::npos);
  auto json = ttap_test::RunTtap("scan --no-model --format json '" + dir + "'");
  const nlohmann::json all = nlohmann::json::parse(json.out);
  REQUIRE(all.is_array());
  REQUIRE(all.size() == 8);
  for (const nlohmann::json& rank : all) {
    REQUIRE(rank.contains("job"));
    CHECK(rank["job"]["late_ranks"].size() == 3);
    CHECK(rank["job"]["this_rank"]["wait_us_per_step"].get<double>() >= 0);
  }
  // The same report from the ranks' summaries, as a distributed scan ships them.
  std::string summaries;
  for (const nlohmann::json& rank : all) {
    auto one = ttap_test::RunTtap("scan --no-model --format rank-summary '" +
                                  rank["trace"].get<std::string>() + "'");
    const std::string path = dir + "/rank" + std::to_string(rank["rank"].get<int>()) + ".summary";
    REQUIRE(ttap_test::WriteFile(path, one.out));
    summaries += " '" + path + "'";
  }
  auto job = ttap_test::RunTtap("job" + summaries);
  CHECK(job.exit_code == 1);
  CHECK(job.out == text.out);
  CHECK(ttap_test::RunTtap("job '" + dir + "/param--dlrm_kineto.tar.gz__worker0_step_12." +
                           "1694128201545.pt.trace.json.gz'")
            .exit_code == 2);  // a trace, not a summary
  // One trace is not a job.
  auto one = ttap_test::RunTtap("scan --no-model --format json '" + dir + "/" +
                                "param--dlrm_kineto.tar.gz__worker0_step_12.1694128201545" +
                                ".pt.trace.json.gz'");
  CHECK_FALSE(nlohmann::json::parse(one.out).contains("job"));
}

TEST_CASE("scan of a job: a rank with a slow DataLoader makes the others wait in all_reduce",
          "[cli][job]") {
  // Three ranks, four steps of 11 ms. Each step: a 4 ms GEMM, then an all_reduce that ends on
  // every rank when the last rank arrives. Rank 1 first loads its batch on the main thread
  // (5 ms), so it reaches the all_reduce 5 ms after ranks 0 and 2, which wait for it there.
  const std::string dir = ttap_test::MakeTempDir();
  for (int rank = 0; rank < 3; ++rank) {
    ttap_test::TinyTrace t;
    t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
    for (int k = 0; k < 4; ++k) {
      const double base = 1000 + 20000.0 * k;
      const double load = rank == 1 ? 5000 : 0;
      t.Step(k + 1, base, 11150);
      if (rank == 1) {
        t.Cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", base + 50, load);
      }
      t.Kernel("volta_sgemm_128x64_nn", base + 100 + load, 10, base + 150 + load, 4000);
      const double arrive = base + 5100 + (rank == 1 ? 5000 : 0);
      const double end = base + 11100;  // the slow rank's arrival + 1 ms, on every rank
      t.Launch("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ncclWork*)", arrive - 100, 10,
               arrive, end - arrive, "kernel", 13);
      t.Runtime("cudaStreamSynchronize", arrive, end + 20 - arrive);
    }
    REQUIRE(
        ttap_test::WriteFile(dir + "/rank-" + std::to_string(rank) + ".pt.trace.json", t.Json()));
  }
  auto text = ttap_test::RunTtap("scan --no-model '" + dir + "'");
  INFO(text.out);
  CHECK(text.out.find("job: 3 ranks, 4 step(s), 4 collective(s) on every rank") !=
        std::string::npos);
  // The report names rank 1 and its DataLoader ...
  CHECK(text.out.find("[TTA018 straggler-rank]: rank 1 arrives at the collectives 5.0 ms per "
                      "step after the median rank") != std::string::npos);
  CHECK(text.out.find("rank 1's own top cause: TTA001 dataloader-stall") != std::string::npos);
  CHECK(text.out.find("rank 0 waits 5.0 ms/step") != std::string::npos);
  // ... and not the others' communication: their waits are rank 1's cost.
  CHECK(text.out.find("rank 0's own top cause") == std::string::npos);
  CHECK(text.out.find("rank 2's own top cause") == std::string::npos);
}

TEST_CASE("scan --format sarif carries the mechanical fixes the editor offers", "[cli][sarif]") {
  const std::string example = ttap_test::SourceDir() + "/examples/resnet50_num_workers_0";
  auto sarif = ttap_test::RunTtap("scan --no-model --format sarif --workspace '" + example + "' '" +
                                  example + "/worker0.pt.trace.json.gz'");
  const nlohmann::json all = nlohmann::json::parse(sarif.out);
  std::map<std::string, nlohmann::json> fixes;
  for (const nlohmann::json& r : all["runs"][0]["results"]) {
    if (r.contains("fixes")) fixes[r["ruleId"]] = r["fixes"];
  }
  // zero_grad() on line 37 gets set_to_none=True inserted, the SGD constructor foreach=True.
  REQUIRE(fixes.count("TTA005"));
  const nlohmann::json& change = fixes["TTA005"][0]["artifactChanges"][0];
  CHECK(change["artifactLocation"]["uri"] == "train.py");
  CHECK(change["replacements"][0]["deletedRegion"]["startLine"] == 37);
  CHECK(change["replacements"][0]["insertedContent"]["text"] == "set_to_none=True");
  REQUIRE(fixes.count("TTA006"));
  CHECK(fixes["TTA006"][0]["description"]["text"].get<std::string>().find("foreach=True") !=
        std::string::npos);
  CHECK(fixes.count("TTA001"));  // the DataLoader's workers
}

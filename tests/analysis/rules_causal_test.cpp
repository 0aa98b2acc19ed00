// Rule tests for the detectors that read the causal model (rules_causal.cpp): an eager loop of
// short kernels is launch-bound on its critical path (TTA007), a cold first iteration is
// cold-start (TTA015) rather than gpu-idle, and launches without GPU activity make the trace
// incomplete (TTA016), and a compile-time trace of overlapping syncs claims no more than its
// run. Tiny inline traces, one class each.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "analysis/tiny_trace.h"

using ttap_test::Eager;
using ttap_test::FindingsWithCode;
using ttap_test::TinyTrace;

TEST_CASE("causal: an eager loop of short kernels is launch-bound, its largest cause",
          "[rules][causal][TTA007]") {
  // Kernels (6 us) outlast their launch calls (5 us), so no burst of kernels shorter than their
  // launch exists; the CPU dispatch (10 us) and launches keep the GPU idle two thirds of the time.
  auto trace = Eager(200, 10, 5, 6).Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  const auto& top = all.findings.front();
  INFO(top.message);
  CHECK(top.code == "TTA007");
  CHECK(top.cause_key == "critical-path");
  CHECK((top.severity == ttap::Severity::kWarning || top.severity == ttap::Severity::kError));
  CHECK(all.speedup > 1.5);
  for (const auto& f : all.findings) {
    if (f.code == "TTA008") CHECK(f.severity == ttap::Severity::kHint);
  }
}

TEST_CASE("causal: a cold first iteration is cold-start, not gpu-idle", "[rules][causal][TTA015]") {
  // GPU-bound steady state (200 us kernels); the first step's first four launches take 40 ms.
  auto trace = Eager(50, 5, 5, 200, /*cold_first=*/true).Load();
  auto all = ttap::RunRules(*trace, {});
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].step_ids == std::vector<int64_t>{1});
  CHECK(cold[0].evidence.at("calls").number >= 4);
  CHECK(
      (cold[0].severity == ttap::Severity::kWarning || cold[0].severity == ttap::Severity::kError));
  CHECK(cold[0].message.find("warmup") != std::string::npos);
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA015");
  for (const auto& f : all.findings) {
    if (f.code == "TTA008") CHECK(f.severity == ttap::Severity::kHint);
  }
}

TEST_CASE("causal: launches without GPU activity make the trace incomplete",
          "[rules][causal][TTA016]") {
  auto trace = Eager(50, 10, 5, 6, false, /*no_gpu=*/true).Load();
  auto all = ttap::RunRules(*trace, {});
  auto inc = FindingsWithCode(*trace, "TTA016");
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].severity == ttap::Severity::kWarning);
  CHECK(inc[0].evidence.at("launches_without_gpu_activity").number == 150);
  CHECK(inc[0].message.find("cannot be judged") != std::string::npos);
  CHECK(FindingsWithCode(*trace, "TTA008").empty());
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA016");  // it qualifies every other finding
  // A complete trace of the same loop is not incomplete.
  CHECK(FindingsWithCode(*Eager(50, 10, 5, 6).Load(), "TTA016").empty());
}

TEST_CASE("causal: an allocator-bound trace without ProfilerStep reports TTA013 first",
          "[rules][causal][TTA013]") {
  // No step annotations: a loop whose every op allocates and frees (the caching allocator off),
  // 300 + 200 us of cudaMalloc / cudaFree around 100 us of GPU work.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  for (int k = 0; k < 60; ++k) {
    t.Cpu("aten::empty", cpu, 302);
    t.Runtime("cudaMalloc", cpu + 1, 300);
    cpu += 303;
    t.Cpu("aten::conv2d", cpu, 20);
    t.Kernel("sm80_xmma_fprop_implicit_gemm", cpu + 2, 8, cpu + 12, 100);
    cpu += 22;
    t.Runtime("cudaFree", cpu, 200);
    cpu += 202;
  }
  auto trace = t.Load();
  REQUIRE(trace->steps.empty());
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA013");
  CHECK((all.findings.front().severity == ttap::Severity::kWarning ||
         all.findings.front().severity == ttap::Severity::kError));
  // Without the calls the run is about 5x faster (325 of 527 us per iteration are allocator).
  CHECK(all.speedup > 2.0);
}

TEST_CASE("the profiler's own stop sync at the end of a trace without stacks is not TTA002",
          "[rules][TTA002]") {
  // GPU-bound steps; after the last launch, a bare cudaDeviceSynchronize (torch.profiler
  // stopping) waits 2 ms for the queue. The same sync inside an operator is the user's.
  auto make = [](bool in_op) {
    TinyTrace t;
    t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
    double cpu = 1000, gpu = 1010;
    for (int s = 0; s < 2; ++s) {
      const double start = cpu;
      for (int k = 0; k < 20; ++k) {
        t.Kernel("ampere_sgemm_128x64_nn", cpu, 5, std::max(gpu, cpu + 8), 200);
        gpu = std::max(gpu, cpu + 8) + 200;
        cpu += 10;
      }
      if (s == 1) {
        // The last step: the sync, then 1 ms of CPU work before the step closes.
        if (in_op) t.Cpu("aten::item", cpu + 1, gpu - cpu + 10);
        t.Runtime("cudaDeviceSynchronize", cpu + 2, gpu - cpu + 5);
        cpu = gpu + 1000;
      }
      t.Step(s + 1, start, cpu - start);
    }
    return t;
  };
  ttap::RuleOptions o;
  o.values["host_sync_share"] = 0;
  CHECK(FindingsWithCode(*make(false).Load(), "TTA002", o).empty());
  CHECK(FindingsWithCode(*make(true).Load(), "TTA002", o).size() == 1);
}

TEST_CASE("window scores follow each window's avoidable time", "[rules][causal][windows]") {
  // The cold first step's 40 ms launches: the windows they fall in are nearly all avoidable;
  // the warm steps' windows hold nothing a fix would save.
  auto trace = Eager(50, 5, 5, 200, /*cold_first=*/true).Load(/*windows=*/20);
  auto rr = ttap::RunRules(*trace, {});
  REQUIRE(rr.windows.size() == 20);
  size_t top = 0;
  for (size_t w = 1; w < rr.windows.size(); ++w) {
    if (rr.windows[w].score > rr.windows[top].score) top = w;
  }
  CHECK(rr.windows[top].category == "TTA015");
  INFO(rr.findings.front().message);
  CHECK(rr.windows[top].score > 0.5);
  CHECK(trace->windows[top].start_ns < trace->steps.front().end());
  // The last window lies in the warm third step: nothing there.
  CHECK(rr.windows.back().score < 0.2);
}

TEST_CASE("causal: a compile-time trace reports nothing larger than its step",
          "[rules][causal][TTA002]") {
  // torch.compile autotuning, no ProfilerStep: four compile threads each benchmark candidate
  // kernels and synchronise after each, their syncs overlapping in time (77 syncs of a real
  // 1.7 s compile-time trace were once summed to 11 s of "drain"). Whatever is reported, no
  // finding claims more than the run, nor do all of them together.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double gpu = 1100;
  for (int k = 0; k < 20; ++k) {
    for (int tid = 1; tid <= 4; ++tid) {
      const double cpu = 1000 + 500 * k + 20 * tid;
      t.Cpu("triton_benchmark", cpu, 480, "cpu_op", tid);
      const int corr = 5000 + 10 * k + tid;
      const std::string c = "\"correlation\": " + std::to_string(corr);
      t.Cpu("cudaLaunchKernel", cpu + 2, 5, "cuda_runtime", tid, c);
      gpu = std::max(gpu, cpu + 10);
      t.Raw(
          "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"triton_poi_fused_0\", \"pid\": 0, "
          "\"tid\": 7, \"ts\": " +
          std::to_string(gpu) + ", \"dur\": 110, \"args\": {" + c +
          ", \"stream\": 7, \"device\": 0}}");
      gpu += 110;
      t.Runtime("cudaDeviceSynchronize", cpu + 8, 460, tid);
    }
  }
  auto trace = t.Load();
  REQUIRE(trace->steps.empty());
  auto rr = ttap::RunRules(*trace, {});
  REQUIRE(!rr.findings.empty());  // the syncs are reported (TTA002), within the run
  double claimed = 0;
  for (const auto& f : rr.findings) {
    INFO(f.code << ": " << f.message);
    CHECK(f.share_of_step <= 1.0);
    CHECK(f.time_lost_us_per_step * 1000.0 <= static_cast<double>(rr.run_ns) + 1);
    claimed += f.share_of_step;
  }
  CHECK(claimed <= 1.0 + 1e-9);
  CHECK(rr.joint_saving_ns <= rr.run_ns);
  CHECK(rr.trace_score <= 1.0);
  CHECK(rr.speedup >= 1.0);
}

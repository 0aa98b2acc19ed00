// Rule tests for the detectors that read the causal model (tta013, tta015-tta017_*.cpp): an eager
// forward, a backward thread and a decode loop bound by the CPU's dispatch are CPU-overhead-bound
// (TTA017); a cold first iteration, a one-time cudaFree in a first call and a first-call stall
// are cold-start (TTA015) rather than allocator churn or gpu-idle; launches without GPU activity
// make the trace incomplete (TTA016) and are never launch overhead; a compile-time trace of
// overlapping syncs claims no more than its run. Tiny inline traces, one class each.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "analysis/tiny_trace.h"

using ttap_test::ColdCallThenCalls;
using ttap_test::Eager;
using ttap_test::ExactWhatIfs;
using ttap_test::FindingsWithCode;
using ttap_test::ModelBuiltThenLoop;
using ttap_test::StreamClock;
using ttap_test::TinyTrace;

// One story per run: the run's "could be N x faster" is never less than any one finding's claim.
void CheckOneStory(const ttap::RuleResult& all) {
  for (const auto& f : all.findings) {
    INFO(f.message);
    const double claim_ns = f.share_of_step * static_cast<double>(all.run_ns);
    CHECK(static_cast<double>(all.joint_saving_ns) >= claim_ns - 1000.0);
  }
}

TEST_CASE("causal: an eager forward of short kernels is CPU-overhead-bound, its largest cause",
          "[rules][causal][TTA017]") {
  // Kernels (6 us) outlast their launch calls (5 us), so no burst of kernels shorter than their
  // launch exists; the CPU dispatch (10 us) and launches keep the GPU idle two thirds of the time.
  auto trace = Eager(200, 10, 5, 6).Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  const auto& top = all.findings.front();
  INFO(top.message);
  CHECK(top.code == "TTA017");
  CHECK(top.name == "cpu-overhead-bound");
  CHECK(top.cause_key == "the step's eager ops");
  CHECK(top.fix == "cuda-graphs-or-compile");
  CHECK(top.message.find("CUDA graphs") != std::string::npos);
  CHECK(top.message.find("aten::add") != std::string::npos);  // the op that holds the CPU time
  CHECK((top.severity == ttap::Severity::kWarning || top.severity == ttap::Severity::kError));
  CHECK(all.speedup > 1.5);
  CHECK(FindingsWithCode(*trace, "TTA007").empty());  // one cause, one finding
  for (const auto& f : all.findings) {
    if (f.code == "TTA008") CHECK(f.severity == ttap::Severity::kHint);
  }
  CheckOneStory(all);
  // A GPU-bound loop of the same ops is not CPU-overhead-bound.
  CHECK(FindingsWithCode(*Eager(200, 10, 5, 200).Load(), "TTA017").empty());
}

TEST_CASE("causal: Python work between launches is not dispatch that a graph removes",
          "[rules][causal][TTA017]") {
  // Three steps of 200 eager ops (10 us dispatch, 5 us launch, 6 us kernel) with 5 ms of Python
  // logic halfway (guards, bookkeeping: no torch op, no launch), recorded with and without
  // Python frames. With frames the 5 ms is forward()'s own time, and forward() launches GPU
  // work: CUDA graphs were credited with removing it (TTA017 saved 7.2 ms of the 8.4 ms step;
  // 2.7 ms without frames). A graph keeps launch-free stretches of 1 ms or more.
  double saving[2];
  for (bool frames : {false, true}) {
    INFO("frames " << frames);
    auto trace = Eager(200, 10, 5, 6, false, false, /*python_gap_us=*/5000, frames).Load();
    auto f = FindingsWithCode(*trace, "TTA017", ExactWhatIfs());
    REQUIRE(f.size() == 1);
    INFO(f[0].message);
    // The ops' dispatch and launches (200 x 17 us) less what a graph keeps of them.
    CHECK(f[0].time_lost_us_per_step < 4000);
    CHECK(f[0].time_lost_us_per_step > 2500);
    saving[frames] = f[0].time_lost_us_per_step;
  }
  CHECK(saving[1] == Approx(saving[0]).epsilon(0.05));
}

TEST_CASE("causal: an optimizer step is captured whole, its Python before the first launch too",
          "[rules][causal][TTA017]") {
  // Three steps, each an Optimizer.step annotation: 400 us of the optimizer's own Python (state
  // set-up, no op, no launch), 10 ops on CPU tensors (step counters: 20 us each, no launch),
  // then 40 foreach ops of 10 us dispatch + 5 us launch for 6 us kernels. A graph or a compiled
  // optimizer step replays none of its Python: the region's saving counted only from its first
  // launch (about 475 us; 875 us with the preamble). The ops on CPU tensors stay (a capture
  // would drop them, so they must stay or move).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    const double opt_start = cpu + 2;
    cpu = opt_start + 400;
    for (int k = 0; k < 10; ++k) {
      t.Cpu("aten::add_", cpu, 19);
      cpu += 20;
    }
    for (int k = 0; k < 40; ++k) {
      t.Cpu("aten::_foreach_mul_", cpu, 17);
      gpu.Kernel(t, "void at::native::multi_tensor_apply_kernel<FunctorMul>()", cpu + 10, 5, 3, 6);
      cpu += 18;
    }
    t.Cpu("Optimizer.step#AdamW.step", opt_start, cpu - opt_start + 1, "user_annotation");
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu + 2);
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA017", ExactWhatIfs());
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].cause_key == "the optimizer step");
  CHECK(f[0].time_lost_us_per_step > 800);
  CHECK(f[0].time_lost_us_per_step < 950);
}

TEST_CASE("causal: a backward thread bound by its dispatch is CPU-overhead-bound in backward",
          "[rules][causal][TTA017]") {
  // Each step: a short forward on the main thread, then autograd's thread (tid 2) runs 150
  // backward ops of 15 us dispatch + 5 us launch for 6 us kernels while the main thread waits
  // for it in backward() (the GPU is busy a sixth of the time).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 10; ++k) {
      t.Cpu("aten::linear", cpu, 40);
      gpu.Kernel(t, "ampere_sgemm_64x32_sliced1x4_nn", cpu + 30, 5, 3, 30);
      cpu += 42;
    }
    const double bw_start = cpu + 5;
    double b = bw_start;
    for (int k = 0; k < 150; ++k) {
      t.Cpu("autograd::engine::evaluate_function: MulBackward0", b, 22, "cpu_op", 2);
      gpu.Kernel(t, "void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>()",
                 b + 15, 5, 3, 6, /*tid=*/2);
      b += 24;
    }
    t.Cpu("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", b, 2, "cpu_op",
          2);
    t.Cpu("aten::backward", cpu, b - cpu + 5, "cpu_op", 1);
    cpu = std::max(b, gpu.free) + 10;
    t.Step(s + 1, start, cpu - start);
    cpu += 2;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  auto overhead = FindingsWithCode(*trace, "TTA017");
  REQUIRE(!overhead.empty());
  const auto& bw = *std::max_element(overhead.begin(), overhead.end(),
                                     [](const ttap::Finding& a, const ttap::Finding& b) {
                                       return a.time_lost_us_per_step < b.time_lost_us_per_step;
                                     });
  INFO(bw.message);
  CHECK(bw.cause_key == "backward");
  CHECK(bw.message.find("MulBackward0") != std::string::npos);
  // Each region's own median kernel: backward's 6 us kernels, not the run's.
  CHECK(bw.evidence.at("median_kernel_us").number == Approx(6));
  for (const auto& f : overhead) {
    if (f.cause_key != "backward") CHECK(f.evidence.at("median_kernel_us").number == Approx(30));
  }
  CHECK((bw.severity == ttap::Severity::kWarning || bw.severity == ttap::Severity::kError));
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA017");
  CheckOneStory(all);
}

TEST_CASE("causal: an eager decode loop without ProfilerStep is CPU-overhead-bound",
          "[rules][causal][TTA017]") {
  // Eight decode steps, each a top-level annotation the loop repeats (steps are inferred from
  // it): 120 small ops of 12 us dispatch + 4 us launch for 5 us kernels, then the next token's
  // .item() (a short sync).
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 8; ++s) {
    const double start = cpu;
    for (int k = 0; k < 120; ++k) {
      t.Cpu(k % 3 == 0 ? "aten::linear" : k % 3 == 1 ? "aten::mul" : "aten::rms_norm", cpu, 18);
      gpu.Kernel(t, "void at::native::vectorized_elementwise_kernel<4, Functor<c10::BFloat16>>()",
                 cpu + 12, 4, 3, 5);
      cpu += 19;
    }
    t.Cpu("aten::item", cpu, std::max(5.0, gpu.free - cpu + 4));
    t.Runtime("cudaStreamSynchronize", cpu + 1, std::max(2.0, gpu.free - cpu + 2));
    cpu = std::max(cpu, gpu.free) + 6;
    t.Cpu("decode_step", start, cpu - start, "user_annotation");
    cpu += 3;
  }
  auto trace = t.Load();
  REQUIRE(trace->steps.empty());
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  const auto& top = all.findings.front();
  INFO(top.message);
  CHECK(top.code == "TTA017");
  CHECK(top.cause_key == "decode_step");
  CHECK(top.evidence.at("occurs").text == "every step");
  CHECK(top.step_ids.size() >= 7);
  CHECK((top.severity == ttap::Severity::kWarning || top.severity == ttap::Severity::kError));
  CHECK(all.speedup > 2.0);
  CheckOneStory(all);
}

TEST_CASE("causal: long frees in every step are the caching allocator off, not cold start",
          "[rules][causal][TTA015][TTA013]") {
  // A ROCm DDP step with PYTORCH_NO_CUDA_MEMORY_CACHING=1: each of 4 steps, 3 ops (conv, relu,
  // add) x 8 allocate their output (hipMalloc) and free their input (hipFree); one free in four
  // takes 25 ms while the GPU has nothing queued (hipFree synchronises the device).
  TinyTrace t;
  t.Device(0, "AMD Instinct MI300X", 9, 4);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 4; ++s) {
    const double start = cpu;
    for (int k = 0; k < 24; ++k) {
      const char* op = k % 3 == 0 ? "aten::convolution" : k % 3 == 1 ? "aten::relu" : "aten::add";
      const double free_us = k % 4 == 0 ? 25000 : 300;
      t.Cpu(op, cpu, 60 + free_us);
      t.Runtime("hipMalloc", cpu + 2, 40);
      t.Runtime("hipFree", cpu + 44, free_us);
      gpu.Kernel(t, std::string(op).substr(6) + "_kernel", cpu + 50 + free_us, 5, 3, 200);
      cpu += 62 + free_us;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  CHECK(FindingsWithCode(*trace, "TTA015").empty());
  auto churn = FindingsWithCode(*trace, "TTA013");
  REQUIRE(churn.size() == 1);  // one cause, the setting, not one finding per op
  INFO(churn[0].message);
  CHECK(churn[0].message.find("48 allocator calls in a steady-state step, 24 of them frees") !=
        std::string::npos);
  CHECK(churn[0].message.find("PYTORCH_NO_CUDA_MEMORY_CACHING") != std::string::npos);
  CHECK(churn[0].fix.empty());  // an environment variable, not an edit of the code
  CHECK(churn[0].share_of_step > 0.8);
}

TEST_CASE("causal: in a short run, a first launch 40x the others is a lazy module load",
          "[rules][causal][TTA015]") {
  // A compiled function's call profiled alone (2.3 ms): six Triton kernels launched with
  // cuLaunchKernel, the first call 300 us (its module loads), the others 7 us.
  TinyTrace t;
  t.Device(0, "NVIDIA A10G", 8, 6);
  StreamClock gpu;
  double cpu = 1000;
  for (int k = 0; k < 6; ++k) {
    const std::string name = "triton_poi_fused_" + std::to_string(k);
    const double launch = k == 0 ? 300 : 7;
    t.Cpu(name, cpu, launch + 12);
    t.Launch(name, cpu + 5, launch, std::max(gpu.free + 1, cpu + 5 + launch + 3), 30, "kernel", 7,
             "cuLaunchKernel");
    gpu.free = std::max(gpu.free + 1, cpu + 5 + launch + 3) + 30;
    cpu += launch + 300;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu.free - cpu + 3));
  auto trace = t.Load();
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].message.find("longest cuLaunchKernel") != std::string::npos);
}

TEST_CASE("causal: in a short run, a later launch of a kernel never seen before is a lazy load",
          "[rules][causal][TTA015]") {
  // A TensorRT engine's first inference (4 ms, inside record_function model_inference): three
  // launch calls for nine kernels (the others' launches are not recorded). The first launch
  // loads modules for 1.8 ms; the second, of a kernel not seen before, for 0.33 ms: under the
  // run's tenth, and the median of three launches is itself 0.33 ms. (0.34 ms of host work
  // after the last kernel stays gpu-idle.)
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060", 8, 6);
  t.Cpu("model_inference", 143, 4013, "user_annotation");
  t.Launch("genericReformat::copyPackedKernel", 1596, 1794, 3390, 4, "kernel", 13);
  for (double ts : {3414.0, 3429.0}) {
    t.Raw(R"({"ph": "X", "cat": "kernel", "name": "sm80_xmma_fprop_implicit_gemm", "pid": 0,)"
          R"( "tid": 13, "ts": )" +
          std::to_string(ts) + R"(, "dur": 13, "args": {"stream": 13}})");
  }
  t.Launch("cuInt8::nhwcTonchw", 3443, 332, 3776, 5, "kernel", 13);
  t.Launch("sm80_xmma_gemm_f16f16_tn", 3805, 9, 3816, 3, "kernel", 13);
  t.Runtime("cudaStreamSynchronize", 4097, 9);
  auto trace = t.Load();
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].evidence.at("calls").number == 2);
  CHECK(cold[0].evidence.at("call_us").number > 2100);
  for (const auto& f : FindingsWithCode(*trace, "TTA008")) {
    CHECK(f.evidence.at("detected_us_per_step").number < 500);  // the end's CPU work only
  }
}

TEST_CASE("causal: a one-time cudaFree in the first call is cold-start, not allocator churn",
          "[rules][causal][TTA015][TTA013]") {
  // GPU-bound steps of aten::mm; the very first aten::mm creates cuBLAS's workspace and the
  // context: a 237 ms cudaFree while the GPU has nothing to run. Later aten::mm calls are cheap.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 20; ++k) {
      const bool first = s == 0 && k == 0;
      const double cold = first ? 237000 : 0;
      t.Cpu("aten::mm", cpu, 12 + cold);
      if (first) t.Runtime("cudaFree", cpu + 1, cold);
      const double l = cpu + 4 + cold;
      gpu.Kernel(t, "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16", l, 5, 3, 300);
      cpu = l + 10;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  CHECK(FindingsWithCode(*trace, "TTA013").empty());
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].message.find("one-time") != std::string::npos);
  CHECK(cold[0].evidence.at("occurs").text == "one-time");
  CHECK(cold[0].step_ids == std::vector<int64_t>{1});
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA015");
  for (const auto& f : all.findings) {
    if (f.code == "TTA008") CHECK(f.severity == ttap::Severity::kHint);
  }
  CheckOneStory(all);
  // The run's last line does not promise the start-up as a speed-up of the program: "could be
  // 14x faster" goes on with the run without it, which nothing else makes faster.
  CHECK(all.one_time_saving_ns == Approx(cold[0].share_of_step * all.run_ns).epsilon(0.001));
  CHECK(all.one_time_saving_ns > 230000000);
  INFO(all.SavingsVerdict());
  CHECK(all.SavingsVerdict().find("of that is one-time start-up (TTA015) the process pays once: "
                                  "without it the run takes ") != std::string::npos);
  CHECK(all.SavingsVerdict().find("which the other fixes could make 1.0") != std::string::npos);
}

TEST_CASE("causal: a one-time cudaFree outside any op, once the GPU drains, is cold-start",
          "[rules][causal][TTA015][TTA013][TTA002]") {
  // Four steps of aten::mm; in the first, after its kernels are queued, a bare 200 ms cudaFree
  // (context start-up from Python, not inside an op): it first waits for the queued kernels,
  // then works on its own. No later step calls the allocator. Right after it a kernel runs whose
  // launch the trace lacks. Before, the cudaFree's own 200 ms were read as a wait for the GPU
  // (host-sync, that no finding reported), the first step's allocator calls were neither
  // one-time nor churn, and the launch-less kernel kept its distance from the stream's previous
  // kernel, so no fix could move what followed it.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 4; ++s) {
    const double start = cpu;
    for (int k = 0; k < 20; ++k) {
      t.Cpu("aten::mm", cpu, 12);
      gpu.Kernel(t, "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16", cpu + 4, 5, 3,
                 300);
      cpu += 14;
    }
    if (s == 0) {
      const double own = 200000, waits = gpu.free - cpu;
      t.Runtime("cudaFree", cpu, waits + own);
      cpu += waits + own + 2;
      // A kernel whose launch the trace did not record, 20 us after the call.
      t.Raw(
          "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"fill_kernel\", \"pid\": 0, \"tid\": "
          "7, \"ts\": " +
          std::to_string(cpu + 20) + ", \"dur\": 5, \"args\": {\"stream\": 7, \"device\": 0}}");
      gpu.free = cpu + 25;
      cpu += 30;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, ExactWhatIfs());
  CHECK(FindingsWithCode(*trace, "TTA013", ExactWhatIfs()).empty());
  CHECK(FindingsWithCode(*trace, "TTA002", ExactWhatIfs()).empty());
  auto cold = FindingsWithCode(*trace, "TTA015", ExactWhatIfs());
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].evidence.at("occurs").text == "one-time");
  // The 200 ms over four steps, all of it: what follows the call moves with it.
  CHECK(cold[0].time_lost_us_per_step == Approx(50000).margin(1000));
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA015");
  CheckOneStory(all);
}

TEST_CASE("causal: a costly op that repeats every step is steady-state, not a first call",
          "[rules][causal][TTA015][TTA008]") {
  // Each step builds its input with torch.tensor() from a Python list: a 30 ms aten::to with
  // the GPU idle, among many 10 us casts (aten::to too). The first run is 1000x the median of
  // the later runs, but runs as long come back every step: not one-time (recorded: pylist).
  TinyTrace t;
  t.Device(0, "NVIDIA H200", 9, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    t.Cpu("aten::to", cpu, 30000);
    cpu += 30010;
    for (int k = 0; k < 20; ++k) {
      t.Cpu("aten::to", cpu, 10);
      t.Cpu("aten::linear", cpu + 11, 12);
      gpu.Kernel(t, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", cpu + 15, 5, 3,
                 200);
      cpu += 25;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  CHECK(FindingsWithCode(*trace, "TTA015").empty());
  auto idle = FindingsWithCode(*trace, "TTA008");
  REQUIRE_FALSE(idle.empty());
  INFO(idle[0].message);
  CHECK(idle[0].message.find("aten::to") != std::string::npos);
  CHECK(idle[0].step_ids.size() == 3);
  CHECK(idle[0].share_of_step > 0.8);
}

TEST_CASE("causal: a first-call stall is cold-start, not gpu-idle", "[rules][causal][TTA015]") {
  // GPU-bound steps; the first aten::index_select (under the first aten::embedding) stalls the
  // CPU 2.35 ms with the GPU idle; later ones take 20 us.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 10; ++k) {
      const double stall = s == 0 && k == 0 ? 2350 : 0;
      t.Cpu("aten::embedding", cpu, 25 + stall);
      t.Cpu("aten::index_select", cpu + 1, 20 + stall);
      gpu.Kernel(t, "void at::native::indexSelectLargeIndex<float, long>()", cpu + 12 + stall, 5, 3,
                 40);
      cpu += 26 + stall;
      t.Cpu("aten::linear", cpu, 12);
      gpu.Kernel(t, "sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x32", cpu + 4, 5, 3,
                 400);
      cpu += 13;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  for (const auto& f : FindingsWithCode(*trace, "TTA008")) {
    INFO(f.message);
    CHECK(f.severity == ttap::Severity::kHint);
  }
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].message.find("aten::embedding") != std::string::npos);
  CHECK(cold[0].time_lost_us_per_step * 3 > 1500);  // most of the 2.33 ms stall
  // Recorded from ProfilerStep#1: a schedule's step ran before, so advising one says nothing
  // new (a Llama block on a CPU, recorded from ProfilerStep#2, was told to use
  // schedule(wait=1, warmup=1, active=3)).
  CHECK(cold[0].message.find("the profiler's schedule skipped 1 step(s) already") !=
        std::string::npos);
  CHECK(cold[0].message.find("schedule(wait=1") == std::string::npos);
  CheckOneStory(all);
}

TEST_CASE(
    "causal: a trace of first calls only (a library's first convolution, a lazy kernel load) "
    "is cold-start, also when backward runs on autograd's thread",
    "[rules][causal][TTA015]") {
  // One backward pass, no ProfilerStep: the main thread's annotation waits 37 ms in
  // loss.backward() while autograd's thread spends 16 ms in the first (and only)
  // aten::convolution_backward (MIOpen's solver search) and 19 ms in the first hipLaunchKernel
  // of an elementwise kernel (a lazy code-object load). The GPU works 20 us in all.
  TinyTrace t;
  t.Device(0, "AMD Instinct MI300X", 9, 4);
  t.Cpu("model_inference", 100, 38000, "user_annotation", 1);
  t.Cpu("aten::ones_like", 150, 100, "cpu_op", 1);
  t.Launch("void at::native::vectorized_elementwise_kernel<4>()", 200, 20, 230, 3, "kernel", 0,
           "hipLaunchKernel");
  t.Cpu("autograd::engine::evaluate_function: MseLossBackward0", 1400, 19100, "cpu_op", 2);
  t.Cpu("aten::mse_loss_backward", 1450, 19000, "cpu_op", 2);
  t.Launch("void at::native::elementwise_kernel<128, 2>()", 1500, 18900, 20420, 4, "kernel", 0,
           "hipLaunchKernel", -1, 0, 2);
  t.Cpu("autograd::engine::evaluate_function: ConvolutionBackward0", 20600, 16900, "cpu_op", 2);
  t.Cpu("aten::convolution_backward", 20650, 16800, "cpu_op", 2);
  t.Launch("igemm_wrw_gtcx3_nhwc_fp32", 37300, 30, 37340, 5, "kernel", 0, "hipLaunchKernel", -1, 0,
           2);
  t.Runtime("hipDeviceSynchronize", 38150, 80);
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].severity == ttap::Severity::kError);
  CHECK(cold[0].share_of_step > 0.8);
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA015");
}

TEST_CASE("causal: a record_function written as an op is a region, not a first call",
          "[rules][causal][TTA015]") {
  // One CPU-bound forward, no steps, inside with record_function("model_inference"), which the
  // 2021 profiler writes as an "Operator" (and some wrappers as a cpu_op): 20 aten::linear of
  // 3 ms on the CPU, each a 100 us GEMM. The region (60 ms, run once, launching GPU work) was
  // itself a one-time first call: the whole forward cold-start, TTA015 error.
  for (const char* cat : {"Operator", "cpu_op"}) {
    INFO(cat);
    TinyTrace t;
    t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
    StreamClock gpu;
    double cpu = 1000;
    const double start = cpu;
    for (int k = 0; k < 20; ++k) {
      t.Cpu("aten::linear", cpu, 3000, cat);
      gpu.Kernel(t, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8", cpu + 2900, 6, 3,
                 100);
      cpu += 3001;
    }
    t.Runtime("cudaDeviceSynchronize", cpu, gpu.free - cpu + 3);
    t.Cpu("model_inference", start - 10, gpu.free + 20 - start, cat);
    auto trace = t.Load();
    auto all = ttap::RunRules(*trace, {});
    CHECK(FindingsWithCode(*trace, "TTA015").empty());
    CHECK(all.time.overall.ns[static_cast<int>(ttap::Cause::kColdStart)] == 0);
  }
}

TEST_CASE("causal: a cold forward's first convolution sets up cuDNN: cold start, not idle time",
          "[rules][causal][TTA015]") {
  // One forward, no steps (an RTX 3060 CNN's first call): the first aten::cudnn_convolution runs
  // 40 ms with the GPU idle (cuDNN's handle and workspace: a 9 ms cudaFree inside it) before
  // its kernel; the second, another shape, is cold too at 8 ms (5 ms of lazy launches), so the
  // first is "only" 5x it. Then 10 elementwise ops. It was TTA008 "the GPU idles while the CPU
  // runs model_inference" and TTA013 "allocator calls in steady-state steps".
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060", 8, 6);
  StreamClock gpu;
  const double start = 1000;
  double cpu = start + 10;
  t.Cpu("aten::cudnn_convolution", cpu, 40000);
  t.Runtime("cudaFree", cpu + 5000, 9000);
  gpu.Kernel(t, "implicit_convolve_sgemm", cpu + 39900, 20, 5, 300);
  cpu += 40010;
  t.Cpu("aten::cudnn_convolution", cpu, 8000);
  gpu.Kernel(t, "implicit_convolve_sgemm", cpu + 2900, 5000, 5, 300);
  cpu += 8010;
  for (int k = 0; k < 10; ++k) {
    t.Cpu("aten::relu", cpu, 30);
    gpu.Kernel(t, "vectorized_elementwise_kernel", cpu + 20, 5, 3, 20);
    cpu += 31;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, gpu.free - cpu + 3);
  t.Cpu("model_inference", start, gpu.free + 10 - start, "user_annotation");
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA015");
  // Each call once: the first convolution (its cudaFree with it) and the second's lazy launch.
  CHECK(all.findings.front().message.find("2 call(s)") != std::string::npos);
  CHECK(all.findings.front().message.find("(45.0 ms,") != std::string::npos);
  CHECK(FindingsWithCode(*trace, "TTA013").empty());
  for (const auto& f : FindingsWithCode(*trace, "TTA008")) {
    INFO(f.message);
    CHECK(f.severity >= ttap::Severity::kInfo);
  }
  const auto& cp = all.time.overall.ns;
  CHECK(cp[static_cast<int>(ttap::Cause::kColdStart)] >= 40000000);
}

TEST_CASE(
    "causal: a small CNN's first convolution, 3x the later ones with the GPU idle, is cold start",
    "[rules][causal][TTA015]") {
  // A 2080 Ti CNN's single forward: the first aten::cudnn_convolution spends 1.7 ms on the CPU
  // (cuDNN's heuristics) before its kernel, the GPU idle from the start; the next two take
  // 0.5-0.7 ms while the GPU runs. It was TTA008 "the GPU idles 2.3 ms while the CPU runs
  // model_inference" (the library-setup rule wanted 5 ms).
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 2080 Ti", 7, 5);
  StreamClock gpu;
  const double start = 1000;
  double cpu = start + 300;
  const double conv_us[] = {1700, 520, 660};
  for (int k = 0; k < 3; ++k) {
    t.Cpu("aten::cudnn_convolution", cpu, conv_us[k]);
    gpu.Kernel(t, "volta_scudnn_128x128_relu_small_nn_v1", cpu + conv_us[k] - 60, 20, 5, 1500);
    cpu += conv_us[k] + 10;
    for (int j = 0; j < 3; ++j) {
      t.Cpu("aten::leaky_relu_", cpu, 40);
      gpu.Kernel(t, "vectorized_elementwise_kernel", cpu + 20, 10, 3, 150);
      cpu += 41;
    }
  }
  t.Runtime("cudaDeviceSynchronize", cpu, gpu.free - cpu + 3);
  t.Cpu("model_inference", start, gpu.free + 10 - start, "user_annotation");
  auto trace = t.Load();
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].severity <= ttap::Severity::kWarning);
  for (const auto& f : FindingsWithCode(*trace, "TTA008")) {
    INFO(f.message);
    CHECK(f.severity >= ttap::Severity::kInfo);
  }
}

TEST_CASE("causal: a lazy first launch in a run of few launches is cold start",
          "[rules][causal][TTA015]") {
  // A TensorRT engine's first call (an RTX 3060): no ops recorded, two launches; the first
  // takes 1.8 ms with the GPU idle (its module loads), the second 330 us. With so few launches
  // the median launch was slow, so the lazy one passed as launch overhead (54% of the run) and
  // its latency as the usual one: TTA015 saved 0.3 ms of its 1.8.
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060", 8, 6);
  StreamClock gpu;
  const double start = 1000;
  double cpu = start + 1300;
  gpu.Kernel(t, "copyPackedKernel", cpu, 1800, 3, 4);
  cpu += 1850;
  gpu.Kernel(t, "nhwcTonchw", cpu, 330, 3, 5);
  cpu += 340;
  t.Runtime("cudaStreamSynchronize", cpu + 250, 9);
  t.Cpu("model_inference", start, cpu + 300 - start, "user_annotation");
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA015");
  CHECK(all.findings.front().time_lost_us_per_step >= 1400);
  CHECK(all.time.overall.ns[static_cast<int>(ttap::Cause::kColdStart)] >= 1700000);
}

TEST_CASE("causal: a lazy launch's kernel that starts well after the call still waited for it",
          "[rules][causal][TTA015]") {
  // An A100 MoE step: three 1 ms GEMMs queued, then the first gradient accumulation's launch
  // loads its module for 12 ms while the stream runs dry; its kernel starts 2 ms after the call
  // returns (the device starting up too), and a synchronize waits for it. The kernel had been
  // read as queued behind the last GEMM 11 ms before it, a gap kept in every what-if: warming
  // the launch up saved 2.8 ms of the 9.5 ms the GPU idled.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-40GB", 8, 0);
  const double start = 1000;
  for (int k = 0; k < 3; ++k) {
    t.Cpu("aten::mm", start + 10 + 20 * k, 15);
    t.Launch("sm80_xmma_gemm_bf16bf16_bf16f32", start + 12 + 20 * k, 8, start + 30 + 1000 * k,
             1000);
  }
  t.Cpu("aten::add_", start + 100, 12020);
  t.Launch("vectorized_elementwise_kernel", start + 105, 12000, start + 14105, 3);
  t.Runtime("cudaDeviceSynchronize", start + 12200, 1912);
  t.Cpu("train_step", start, 13200, "user_annotation");
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  const auto& top = all.findings.front();
  INFO(top.message);
  CHECK(top.code == "TTA015");
  // Warm, the kernel follows the GEMMs (3.03 ms): the run ends ~11 ms sooner.
  CHECK(top.time_lost_us_per_step >= 9000);
  CHECK(all.time.overall.ns[static_cast<int>(ttap::Cause::kGpuWait)] < 1000000);
}

// A loop body after its batch: ten aten::mm of 2 ms GEMMs (|kernel|) launched 40 us apart, then a
// cudaDeviceSynchronize that waits for them; returns where the CPU goes on.
double GemmsThenSync(TinyTrace& t, double cpu, const std::string& kernel) {
  for (int k = 0; k < 10; ++k) {
    t.Cpu("aten::mm", cpu + 40 * k, 30);
    t.Launch(kernel, cpu + 40 * k + 5, 10, cpu + 90 + 2000 * k, 2000);
  }
  cpu += 400;
  t.Runtime("cudaDeviceSynchronize", cpu, 19700);
  return cpu + 19710;
}

TEST_CASE("causal: a DataLoader's first batch starts its workers: one-time, not a stalling loader",
          "[rules][causal][TTA015][TTA001]") {
  // An evaluation loop profiled from the iterator's creation, no steps: the first __next__ waits
  // 2 s for the worker processes (rebuilding the batch's tensors inside: 20 small ops), the next
  // four take 2 ms; each batch is uploaded by a blocking 30 ms pageable copy whose GPU side ends
  // 80 us after the call returns (the GPU's clock a little ahead), then ten 2 ms GEMMs.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  const std::string next = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  double cpu = 1000;
  for (int b = 0; b < 5; ++b) {
    const double load = b == 0 ? 2000000 : 2000;
    t.Cpu(next, cpu, load, "user_annotation");
    for (int k = 0; k < 20; ++k) t.Cpu("aten::set_", cpu + load - 500 + 20 * k, 10);
    cpu += load + 10;
    t.Cpu("aten::to", cpu, 30020);
    t.Launch("Memcpy HtoD (Pageable -> Device)", cpu + 5, 30000, cpu + 10, 30075, "gpu_memcpy", 7,
             "cudaMemcpyAsync", 150 << 20);
    cpu += 30030;
    cpu = GemmsThenSync(t, cpu, "ampere_sgemm_128x64_nn");
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA015");
  CHECK(all.findings.front().message.find("worker processes") != std::string::npos);
  CHECK(FindingsWithCode(*trace, "TTA001").empty());
  // The uploads waited for their copies: moving data every batch, not lazy loading.
  CHECK(all.findings.front().evidence.at("calls").number == 1);
}

TEST_CASE("causal: a loader's long wait then a short one is a stalling loader, not its first batch",
          "[rules][causal][TTA015][TTA001]") {
  // Two profiled steps of a training loop whose two workers cannot keep up (an H200 recording:
  // 115 ms a step without the profiler against 20 ms with 12 workers): the first __next__ waits
  // 117 ms, the second gets the other worker's batch at once. The iterator was made before the
  // profiler started; one later batch cannot tell a first batch from a stall.
  TinyTrace t;
  t.Device(0, "NVIDIA H200", 9, 0);
  const std::string next = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  double cpu = 1000;
  for (int s = 0; s < 2; ++s) {
    const double start = cpu;
    const double load = s == 0 ? 117000 : 1000;
    t.Cpu(next, cpu, load, "user_annotation");
    cpu += load + 10;
    cpu = GemmsThenSync(t, cpu, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n");
    t.Step(s + 1, start, cpu - start);
    cpu += 5;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA001");
  CHECK(FindingsWithCode(*trace, "TTA015").empty());
}

TEST_CASE("causal: a region run many times a step is captured run by run, not across the others",
          "[rules][causal][TTA017]") {
  // One ProfilerStep holding ten iterations of a small MLP's loop (CPU-bound): a forward block
  // (record_function "forward": 8 launches, 60 us of CPU each), the loss's 3 eager ops (40 us
  // each), an optimizer step (8 launches, 50 us each); kernels of 12 us.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double cpu = 1000;
  const double start = cpu;
  auto ops = [&](int n, double each) {
    for (int k = 0; k < n; ++k) {
      t.Cpu("aten::addmm", cpu, each - 2);
      t.Launch("elementwise_kernel", cpu + each - 12, 8, cpu + each - 2, 12);
      cpu += each;
    }
  };
  for (int it = 0; it < 10; ++it) {
    const double f0 = cpu;
    cpu += 2;
    ops(8, 60);
    t.Cpu("forward", f0, cpu - f0, "user_annotation");
    cpu += 2;
    ops(3, 40);
    const double o0 = cpu;
    cpu += 2;
    ops(8, 50);
    t.Cpu("Optimizer.step#SGD.step", o0, cpu - o0, "user_annotation");
    cpu += 2;
  }
  t.Step(1, start, cpu - start);
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA017");
  REQUIRE(!f.empty());
  for (const auto& x : f) {
    INFO(x.message);
    // What capturing a region saves is at most its own CPU time: the loss's ops hold 1.2 ms of
    // the step; capturing them must not claim the forward and optimizer runs between them.
    CHECK(x.time_lost_us_per_step <= 1.1 * x.evidence.at("op_cpu_us").number + 50);
  }
}

TEST_CASE("causal: a CPU-only run's first calls are set-up, with no CUDA context to name",
          "[rules][causal][TTA015]") {
  // A CPU inference, three steps of 40 ops: the first aten::conv2d takes 60 ms (a library's
  // set-up), the later ones 2 ms.
  TinyTrace t;
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 40; ++k) {
      const double d = s == 0 && k == 0 ? 60000 : 2000;
      t.Cpu("aten::conv2d", cpu, d);
      cpu += d + 10;
    }
    t.Step(s + 1, start, cpu - start);
    cpu += 10;
  }
  auto trace = t.Load();
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].message.find("run for the first time") != std::string::npos);
  CHECK(cold[0].message.find("CUDA context") == std::string::npos);
}

TEST_CASE("causal: a model's largest weight initialised first is not a first call",
          "[rules][causal][TTA015]") {
  // Model construction inside the first step: aten::uniform_ on CPU tensors of 512x784 (1.16 ms),
  // 512 (4 us), 512x512 (1.12 ms), 10x512 (16 us); then three CPU-bound GPU steps.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    if (s == 0) {
      for (double d : {1160.0, 4.0, 1120.0, 3.4, 15.8, 0.8}) {
        t.Cpu("aten::uniform_", cpu, d);
        cpu += d + 20;
      }
    }
    for (int k = 0; k < 30; ++k) {
      t.Cpu("aten::addmm", cpu, 40);
      t.Launch("elementwise_kernel", cpu + 30, 8, cpu + 40, 5);
      cpu += 42;
    }
    t.Step(s + 1, start, cpu - start);
    cpu += 5;
  }
  auto trace = t.Load();
  for (const auto& x : FindingsWithCode(*trace, "TTA015")) {
    INFO(x.message);
    CHECK(x.message.find("aten::uniform_") == std::string::npos);
  }
}

TEST_CASE("causal: a sync waiting for a replayed graph's dropped kernels is no host sync",
          "[rules][causal][TTA016][TTA002]") {
  // A policy's inference replays one graph: 60 kernels recorded (1 ms), then the trace records
  // nothing while hipStreamSynchronize waits 29 ms for the rest of the replay.
  TinyTrace t;
  t.Device(0, "AMD Instinct MI300X", 9, 4);
  std::vector<TinyTrace::GraphKernel> kernels;
  for (int k = 0; k < 60; ++k) kernels.push_back({"Cijk_Ailk_Bljk_BBS_BH", 1180 + 17.0 * k, 16});
  t.GraphLaunch(1000, 2110, kernels);
  t.Runtime("hipStreamSynchronize", 3340, 29000);
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  auto incomplete = FindingsWithCode(*trace, "TTA016");
  REQUIRE_FALSE(incomplete.empty());
  // The trace holds GPU activity already: its advice is about the graph's kernels, not about
  // adding ProfilerActivity.CUDA.
  INFO(incomplete[0].message);
  CHECK(incomplete[0].message.find("the run replays graphs") != std::string::npos);
  // It recorded the graph's first 60 kernels: some of them are missing, not all.
  CHECK(incomplete[0].message.find("some of whose kernels this profiler did not record") !=
        std::string::npos);
  CHECK(incomplete[0].message.find("ProfilerActivity") == std::string::npos);
  CHECK(FindingsWithCode(*trace, "TTA002").empty());  // nothing the trace holds to judge
  const auto& cp = all.time.overall.ns;
  CHECK(cp[static_cast<int>(ttap::Cause::kLaunch)] < 3000000);
  CHECK(cp[static_cast<int>(ttap::Cause::kHostSync)] < 1000000);
  CHECK(cp[static_cast<int>(ttap::Cause::kGpuWait)] > 25000000);
}

TEST_CASE("causal: a toy's few launches, none with GPU activity, make the trace incomplete",
          "[rules][causal][TTA016]") {
  // A lecture's toy, two steps: a 4 MB host tensor uploaded (a 600 us blocking copy and its sync),
  // a memset and one kernel launch, a synchronize; no kernel, copy or memset event recorded.
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3050 Laptop GPU", 8, 6);
  double cpu = 1000;
  for (int s = 0; s < 2; ++s) {
    const double start = cpu;
    t.Cpu("aten::randn", cpu, 5000);
    cpu += 5010;
    t.Cpu("aten::to", cpu, 830);
    t.Runtime("cudaMemcpyAsync", cpu + 5, 630);
    t.Runtime("cudaStreamSynchronize", cpu + 640, 180);
    cpu += 840;
    t.Cpu("aten::matmul", cpu, 60);
    t.Runtime("cudaMemsetAsync", cpu + 5, 20);
    t.Runtime("cudaLaunchKernel", cpu + 30, 20);
    cpu += 70;
    t.Runtime("cudaDeviceSynchronize", cpu, 700);
    cpu += 710;
    t.Step(s + 2, start, cpu - start);
    cpu += 10;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA016");
  CHECK(all.findings.front().message.find("6 of 6 launches") != std::string::npos);
  // Nothing recorded at all: the device's activity was not collected, no buffer overflowed.
  CHECK(all.findings.front().message.find("CUPTI") != std::string::npos);
  CHECK(all.findings.front().message.find("overflow") == std::string::npos);
}

TEST_CASE("causal: launches and blocking copies without GPU activity are not launch overhead",
          "[rules][causal][TTA016]") {
  // WSL-style trace: per step, 12 ops' cudaLaunchKernel calls and a blocking 400 us
  // cudaMemcpyAsync of the batch, no kernel or copy events.
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3080", 8, 6);
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    t.Cpu("aten::to", cpu + 1, 404);
    t.Runtime("cudaMemcpyAsync", cpu + 2, 400);
    cpu += 410;
    for (int k = 0; k < 12; ++k) {
      t.Cpu("aten::add", cpu, 17);
      t.Runtime("cudaLaunchKernel", cpu + 10, 5);
      cpu += 19;
    }
    t.Step(s + 1, start, cpu - start + 2);
    cpu += 4;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA016");
  CHECK(FindingsWithCode(*trace, "TTA007").empty());
  CHECK(FindingsWithCode(*trace, "TTA017").empty());
  CHECK(FindingsWithCode(*trace, "TTA008").empty());
  // The blocking copy's 400 us are moving data, not CPU launch overhead.
  const auto& cp = all.time.overall.ns;
  CHECK(cp[static_cast<int>(ttap::Cause::kMemcpy)] >= 3 * 390000);
  CHECK(cp[static_cast<int>(ttap::Cause::kLaunch)] < 3 * 100000);
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

TEST_CASE("causal: a cold first step before a steady loop: the steady state's cause comes first",
          "[rules][causal][TTA015][TTA017]") {
  // Profiled from the script's start: the first step's first four launches take 40 ms each
  // (lazy loading), then five steady steps of 200 tiny kernels bound by the CPU's dispatch.
  auto trace = Eager(200, 10, 5, 6, /*cold_first=*/true, false, 0, false, /*steps=*/6).Load();
  // Over all six steps, the one-time work is most of the average step.
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA015");
  auto steady = ttap::RunRulesSteadyFirst(*trace, {});
  CHECK(steady.cold_steps == 1);
  CHECK(steady.time.steps.size() == 5);
  REQUIRE(!steady.findings.empty());
  INFO(steady.findings.front().message);
  CHECK(steady.findings.front().code == "TTA017");
  CHECK(steady.findings.front().severity <= ttap::Severity::kWarning);
  // The one-time finding stays, counted over the recorded run.
  const ttap::Finding* cold = nullptr;
  for (const auto& f : steady.findings) {
    if (f.code == "TTA015") cold = &f;
  }
  REQUIRE(cold != nullptr);
  CHECK(cold->severity <= ttap::Severity::kWarning);
  INFO(cold->message);
  CHECK(cold->message.find("all of it in the cold first step of the 6 recorded, analysed apart") !=
        std::string::npos);
  // The message counts the run's total, not a per-step average that reads as every step's.
  CHECK(cold->message.find("/step") == std::string::npos);
  // Per recorded step, as everywhere: the 160 ms of lazy launches over six steps.
  CHECK(cold->time_lost_us_per_step * 6 > 100000);
  // Other causes seen only in the cold step are its set-up: at most info.
  for (const auto& f : steady.findings) {
    if (f.code != "TTA015" && f.step_ids == std::vector<int64_t>{1}) {
      CHECK(f.severity >= ttap::Severity::kInfo);
    }
  }
  // Three steps (two steady ones after the cold one) are too few to call a steady state.
  auto short_trace = Eager(200, 10, 5, 6, true, false, 0, false, /*steps=*/3).Load();
  auto short_run = ttap::RunRulesSteadyFirst(*short_trace, {});
  CHECK(short_run.cold_steps == 0);
  CHECK(short_run.findings.front().code == "TTA015");
}

TEST_CASE("causal: a run without steps analyses its warm part apart from its cold start",
          "[rules][causal][TTA015][TTA017]") {
  auto trace = ColdCallThenCalls(20, /*repeat=*/true).Load();
  // Over the whole run, the 370 ms of set-up hide the 2.4 ms of launch-bound calls after it.
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA015");
  auto warm = ttap::RunRulesSteadyFirst(*trace, {});
  CHECK(warm.cold_steps == 0);
  CHECK(warm.cold_ns >= 370000000);
  CHECK(warm.cold_ns < 371200000);
  CHECK(warm.time.overall.total() < 5000000);  // the warm part's critical path, not the run's
  REQUIRE(!warm.findings.empty());
  INFO(warm.findings.front().message);
  // What the calls cost every time comes first, of the warm part.
  CHECK((warm.findings.front().code == "TTA017" || warm.findings.front().code == "TTA007"));
  CHECK(warm.findings.front().severity <= ttap::Severity::kWarning);
  CHECK(warm.findings.front().message.find("of the warm part") != std::string::npos);
  const ttap::Finding* cold = nullptr;
  for (const auto& f : warm.findings) {
    if (f.code == "TTA015") cold = &f;
  }
  REQUIRE(cold != nullptr);
  INFO(cold->message);
  CHECK(cold->severity <= ttap::Severity::kWarning);
  CHECK(cold->message.find("all of it in the run's one-time start (its first 370.") !=
        std::string::npos);
  CHECK(warm.SavingsVerdict().find("its warm part could be") == 0);
}

TEST_CASE("causal: the rest of one cold call is no warm part", "[rules][causal][TTA015]") {
  // The ops after the cold one run once each: one forward pass, nothing that repeats.
  auto trace = ColdCallThenCalls(3, /*repeat=*/false).Load();
  auto once = ttap::RunRulesSteadyFirst(*trace, {});
  CHECK(once.cold_ns == 0);
  REQUIRE(!once.findings.empty());
  CHECK(once.findings.front().code == "TTA015");
}

TEST_CASE("causal: a model's construction in the one step is its cold start",
          "[rules][causal][TTA015][TTA017]") {
  auto trace = ModelBuiltThenLoop(10).Load();
  // The user's __init__ (with the Linear's inside it) and Module.to are one-time set-up.
  const auto first_calls = ttap::OneTimeFirstCalls(*trace);
  std::vector<std::string> names;
  std::string listed;
  for (const auto& c : first_calls) {
    names.emplace_back(trace->Name(c.row));
    listed += names.back() + "; ";
  }
  INFO(listed);
  REQUIRE(names.size() == 2);
  CHECK(names[0] == "model.py(5): __init__");
  CHECK(names[1] == "torch/nn/modules/module.py(1244): to");
  auto warm = ttap::RunRulesSteadyFirst(*trace, {});
  REQUIRE(!warm.findings.empty());
  INFO(warm.findings.front().message);
  // The loop's per-op dispatch comes first, of the step's warm part; the construction follows.
  CHECK((warm.findings.front().code == "TTA017" || warm.findings.front().code == "TTA007"));
  CHECK(warm.findings.front().message.find("of the warm part") != std::string::npos);
  CHECK(warm.cold_ns >= 3400000);
  const ttap::Finding* cold = nullptr;
  for (const auto& f : warm.findings) {
    INFO(f.message);
    CHECK(f.code != "TTA003");  // the parameters are copied once, not every step
    CHECK(f.message.find("aten::uniform_") == std::string::npos);
    if (f.code == "TTA015") cold = &f;
  }
  REQUIRE(cold != nullptr);
  CHECK(cold->message.find("the model is built and moved to the device") != std::string::npos);
  CHECK(cold->message.find("build the model and move it to the device before the profiler "
                           "starts") != std::string::npos);
  CHECK(cold->message.find("warm-up") == std::string::npos);  // no warm-up moves it out
  // A module made inside forward is made every call: no first call, whatever it costs.
  auto made_in_forward = ModelBuiltThenLoop(10, /*in_forward=*/true).Load();
  for (const auto& c : ttap::OneTimeFirstCalls(*made_in_forward)) {
    CHECK(made_in_forward->Name(c.row).find("__init__") == std::string_view::npos);
  }
}

TEST_CASE("causal: the rest of a cold optimizer step is no warm part",
          "[rules][causal][TTA015][TTA006]") {
  // A custom Adam's step profiled alone: its first mul_ sets up for 2 ms, then 28 parameters'
  // eight element-wise updates each, every one a dispatch and a launch of a 2 us kernel.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-40GB", 8, 0);
  StreamClock gpu;
  double cpu = 300;
  const double step_start = 200;
  t.Cpu("aten::mul_", cpu, 1960);
  gpu.Kernel(t, "mul_kernel", cpu + 1930, 18, 3, 2);
  cpu += 1980;
  for (int p = 0; p < 28; ++p) {
    for (const char* op : {"aten::mul_", "aten::add_", "aten::addcmul_", "aten::sqrt", "aten::div",
                           "aten::addcdiv_", "aten::mul", "aten::add"}) {
      t.Cpu(op, cpu, 20);
      gpu.Kernel(t, std::string(op).substr(6) + "_kernel", cpu + 8, 8, 3, 2);
      cpu += 22;
    }
  }
  t.Cpu("Optimizer.step#CustomAdam.step", step_start, cpu - step_start + 5, "user_annotation");
  auto trace = t.Load();
  auto run = ttap::RunRulesSteadyFirst(*trace, {});
  CHECK(run.cold_ns == 0);  // not split inside the step
  REQUIRE(!run.findings.empty());
  INFO(run.findings.front().message);
  CHECK(run.findings.front().code == "TTA006");
}

TEST_CASE("causal: a CPU-only DDP step bound by gloo's all-reduce is communication",
          "[rules][causal][TTA011]") {
  // Three steps of a CPU-only DDP job (gloo): 6 ms of forward, backward's ops for 8 ms, its
  // gradient bucket all-reduced on a gloo thread for 60 ms from 2 ms into backward while the
  // main thread waits, then a 3 ms optimizer step.
  TinyTrace t;
  double at = 0;
  for (int s = 0; s < 3; ++s) {
    const double start = at;
    t.Cpu("aten::linear", at + 10, 6000);
    const double backward = at + 6100;
    t.Cpu("## backward ##", backward, 62100, "user_annotation");
    for (int k = 0; k < 8; ++k) t.Cpu("aten::mm", backward + 10 + 1000 * k, 990);
    t.Cpu("gloo:all_reduce", backward + 2000, 60000, "user_annotation", /*tid=*/2);
    t.Cpu("Optimizer.step#SGD.step", backward + 62200, 3000, "user_annotation");
    t.Cpu("aten::add_", backward + 62210, 2900);
    at = backward + 65300;
    t.Step(s + 1, start, at - start);
    at += 10;
  }
  auto trace = t.Load();
  auto run = ttap::RunRules(*trace, ExactWhatIfs());
  // The wait is communication, not CPU work.
  const auto& at_steps = run.time.overall;
  CHECK(at_steps.ns[static_cast<int>(ttap::Cause::kCommunication)] * 2 > at_steps.total());
  auto comm = FindingsWithCode(*trace, "TTA011", ExactWhatIfs());
  REQUIRE(comm.size() == 1);
  INFO(comm[0].message);
  CHECK(comm[0].severity <= ttap::Severity::kWarning);
  CHECK(comm[0].message.find("the CPU runs these collectives (gloo)") != std::string::npos);
  CHECK(comm[0].message.find("fp16_compress_hook") != std::string::npos);
  // Backward's 8 ms cannot hide a 60 ms all-reduce: half the bytes save half of it.
  CHECK(comm[0].time_lost_us_per_step > 25000);
  CHECK(comm[0].time_lost_us_per_step < 32000);
}

TEST_CASE("causal: a long device query creating the context is one-time start-up",
          "[rules][causal][TTA015]") {
  // A script's first CUDA call, a stream-priority query, creates the context (75 ms, bare or
  // under the first op's allocation); ten 3 ms copy-and-kernel calls follow.
  for (bool under_op : {false, true}) {
    TinyTrace t;
    t.Device(0, "NVIDIA RTX 6000 Ada Generation", 8, 9);
    if (under_op) {
      t.Cpu("aten::empty_strided", 1000, 75700);
      t.Cpu("aten::empty_strided", 200000, 20);
      t.Cpu("aten::empty_strided", 300000, 20);
    }
    t.Runtime("cudaDeviceGetStreamPriorityRange", 1010, 75645);
    StreamClock gpu;
    double cpu = 80000;
    for (int k = 0; k < 10; ++k, cpu += 3000) gpu.Kernel(t, "pow_kernel", cpu, 5, 3, 2900);
    t.Runtime("cudaDeviceSynchronize", cpu, gpu.free - cpu + 3);
    auto trace = t.Load();
    INFO(under_op);
    const auto first_calls = ttap::OneTimeFirstCalls(*trace);
    REQUIRE(!first_calls.empty());
    auto run = ttap::RunRules(*trace, ExactWhatIfs());
    const auto& time = run.time.overall;
    // Its 75.6 ms are start-up, not launch overhead.
    CHECK(time.ns[static_cast<int>(ttap::Cause::kColdStart)] >= 75000000);
    CHECK(time.ns[static_cast<int>(ttap::Cause::kLaunch)] < 1000000);
    CHECK(!FindingsWithCode(*trace, "TTA015", ExactWhatIfs()).empty());
  }
}

TEST_CASE("causal: a warm part inside a record_function around the whole run names its ops",
          "[rules][causal][TTA008]") {
  // PARAM's benchmark: "[param|cuda]" around everything; a 75 ms context creation under the
  // first aten::rand, then per call 20 ms of aten::fill_ on the CPU (clearing the cache) with
  // the GPU idle, and a tiny kernel.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-PG509-200", 8, 0);
  t.Cpu("aten::rand", 100, 75700);
  t.Runtime("cudaDeviceGetStreamPriorityRange", 110, 75645);
  StreamClock gpu;
  double cpu = 80000;
  for (int k = 0; k < 4; ++k) {
    t.Cpu("aten::fill_", cpu, 20000);
    cpu += 20010;
    t.Cpu("aten::add", cpu, 40);
    gpu.Kernel(t, "add_kernel", cpu + 20, 10, 3, 3);
    cpu += 50;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, gpu.free - cpu + 3);
  t.Cpu("[param|cuda]", 50, cpu + 100 - 50, "user_annotation");
  auto trace = t.Load();
  auto run = ttap::RunRulesSteadyFirst(*trace, {});
  CHECK(run.cold_ns >= 75000000);
  const ttap::Finding* idle = nullptr;
  for (const auto& f : run.findings) {
    if (f.code == "TTA008" && !idle) idle = &f;
  }
  REQUIRE(idle != nullptr);
  INFO(idle->message);
  CHECK(idle->message.find("aten::fill_") != std::string::npos);
  CHECK(idle->message.find("records no CPU op") == std::string::npos);
}

TEST_CASE("A trace without any CPU op says what fixes save cannot be judged", "[rules]") {
  // An Inductor run recorded with activities=[CUDA] only: a few copies, then 2.6 s of nothing
  // the trace names before six kernels. It read "this run could be 563.96x faster".
  auto run = [](bool with_op) {
    TinyTrace t;
    t.Device(0, "NVIDIA A10G", 8, 6);
    t.Launch("Memcpy HtoD (Pageable -> Device)", 100, 30, 120, 1, "gpu_memcpy", 7,
             "cudaMemcpyAsync", 4096);
    if (with_op) t.Cpu("aten::conv2d", 200, 2600000);
    for (int k = 0; k < 6; ++k) {
      t.Kernel("triton_poi_fused_" + std::to_string(k), 2600300 + k * 30, 10, 2600315 + k * 30, 3);
    }
    t.Runtime("cudaDeviceSynchronize", 2600600, 10);
    return ttap::RunRulesSteadyFirst(*t.Load(), {});
  };
  const ttap::RuleResult blind = run(false);
  CHECK(blind.cpu_side_missing);
  INFO(blind.SavingsVerdict());
  CHECK(blind.SavingsVerdict().find("what fixes would save cannot be judged: the trace records no "
                                    "CPU op") == 0);
  const ttap::RuleResult seen = run(true);
  CHECK_FALSE(seen.cpu_side_missing);
  CHECK(seen.SavingsVerdict().find("cannot be judged") == std::string::npos);
}

TEST_CASE("A model left on the CPU beside a GPU is named in the run's summary", "[rules]") {
  // A ResNet's forward profiled with an RTX 4090 listed: its convolutions ran on oneDNN.
  auto cpu_run = [](bool kernel) {
    TinyTrace t;
    t.Device(0, "NVIDIA GeForce RTX 4090", 8, 9);
    double at = 0;
    for (int k = 0; k < 5; ++k, at += 1100) {
      t.Cpu("aten::conv2d", at, 1000);
      t.Cpu("aten::mkldnn_convolution", at + 10, 980);
    }
    if (kernel) t.Kernel("relu_kernel", at, 5, at + 10, 3);
    return t;
  };
  const std::string text = ttap::CpuRunBesideGpuText(*cpu_run(false).Load());
  INFO(text);
  CHECK(text.find("every op ran on the CPU though the trace lists a GPU (NVIDIA GeForce RTX "
                  "4090") == 0);
  CHECK(text.find("aten::mkldnn_convolution") != std::string::npos);
  CHECK(text.find("model.to(\"cuda\")") != std::string::npos);
  // Any GPU work, or no GPU listed: nothing to say.
  CHECK(ttap::CpuRunBesideGpuText(*cpu_run(true).Load()).empty());
  TinyTrace no_gpu;
  no_gpu.Cpu("aten::mkldnn_convolution", 0, 1000);
  CHECK(ttap::CpuRunBesideGpuText(*no_gpu.Load()).empty());
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

TEST_CASE("causal: without CPU activity the idle time before the first call is the CPU's",
          "[rules][causal][TTA008]") {
  // activities=[CUDA] only, no steps: the previous step's kernels end at 1 ms, then nothing is
  // recorded for 3 s (the batch loading), then the main thread copies the batch and launches the
  // forward, and autograd's thread (busier: it launches more) the backward.
  TinyTrace t;
  t.Device(0, "NVIDIA RTX A4000", 8, 6);
  t.Raw(R"j({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
           "tid": "PyTorch Profiler", "ts": 0, "dur": 3100000
})j");
  double g = 10;
  for (int k = 0; k < 5; ++k, g += 200)
    t.Raw(
        R"j({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": )j" +
        std::to_string(g) + R"j(, "dur": 190, "args": {"stream": 7, "device": 0}})j");
  double cpu = 3000000;
  t.Launch("Memcpy HtoD (Pageable -> Device)", cpu, 5000, cpu + 10, 4900, "gpu_memcpy", 7,
           "cudaMemcpyAsync", 150000000);
  cpu += 5010;
  double gts = cpu + 10;
  for (int k = 0; k < 20; ++k, cpu += 10, gts += 501)
    t.Kernel("ampere_sgemm_128x64_nn", cpu, 5, gts, 500);
  for (int k = 0; k < 40; ++k, cpu += 10, gts += 501) {
    t.Launch("ampere_sgemm_128x64_nn", cpu, 5, gts, 500, "kernel", 7, "cudaLaunchKernel", -1, 0, 2);
  }
  auto trace = t.Load();
  auto idle = FindingsWithCode(*trace, "TTA008");
  REQUIRE(idle.size() == 1);
  INFO(idle[0].message);
  CHECK(idle[0].severity == ttap::Severity::kError);
  CHECK(idle[0].share_of_step > 0.9);  // the 3 s before the batch's copy
  CHECK(idle[0].message.find("ProfilerActivity.CPU") != std::string::npos);
}

TEST_CASE("causal: under CUDA_LAUNCH_BLOCKING a launch waits for its kernel, it is no lazy load",
          "[rules][causal][TTA009]") {
  // CUDA_LAUNCH_BLOCKING=1: each launch call returns 5 us after its kernel ends. Per step, 30
  // fp32 SIMT GEMMs of 2 ms on an A100 (TF32 would run them faster).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 30; ++k) {
      t.Cpu("aten::mm", cpu, 2020);
      t.Launch("ampere_sgemm_128x64_nn", cpu + 5, 2012, cpu + 12, 2000);
      cpu += 2025;
    }
    t.Step(s + 1, start, cpu - start + 2);
    cpu += 5;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  CHECK(FindingsWithCode(*trace, "TTA015").empty());  // 2 ms launches, but no lazy loading
  auto tc = FindingsWithCode(*trace, "TTA009");
  REQUIRE(tc.size() == 1);
  INFO(tc[0].message);
  // Faster GEMMs shorten the step: the launches wait for them.
  CHECK(tc[0].share_of_step > 0.3);
  CHECK(tc[0].severity == ttap::Severity::kError);  // severity: lower is worse
  const auto& cp = all.time.overall.ns;
  CHECK(cp[static_cast<int>(ttap::Cause::kColdStart)] == 0);
}

TEST_CASE("causal: a one-time CUDA graph capture is cold start, not gpu-idle",
          "[rules][causal][TTA015]") {
  // A server's decode loop: steps replay a captured graph (one cudaGraphLaunch, 40 kernels of
  // 50 us); step 3 first captures it: 20 ms of ops whose launches run nothing, then a 2 ms
  // instantiation, the GPU idle throughout.
  TinyTrace t;
  t.Device(0, "NVIDIA A10G", 8, 6);
  double cpu = 1000;
  for (int s = 0; s < 8; ++s) {
    const double start = cpu;
    if (s == 3) {
      t.Runtime("cudaStreamBeginCapture", cpu, 3);
      cpu += 5;
      for (int k = 0; k < 100; ++k) {
        t.Cpu("aten::mm", cpu, 190);
        t.Runtime("cudaLaunchKernel", cpu + 100, 20);
        cpu += 200;
      }
      t.Runtime("cudaStreamEndCapture", cpu, 10);
      t.Runtime("cudaGraphInstantiateWithFlags", cpu + 12, 2000);
      cpu += 2020;
    }
    t.Cpu("execute_model", cpu, 60);
    double g = cpu + 60;
    for (int k = 0; k < 40; ++k) {
      t.Launch("sm80_xmma_gemm_bf16bf16_bf16f32", cpu + 10, 40, g, 50, "kernel", 7,
               "cudaGraphLaunch");
      g += 51;
    }
    t.Step(s + 1, start, g + 5 - start);
    cpu = g + 10;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  CHECK(cold[0].message.find("1 CUDA graph capture") != std::string::npos);
  CHECK(cold[0].evidence.at("occurs").text == "one-time");
  for (const auto& f : all.findings) {
    INFO(f.message);
    CHECK(f.code != "TTA008");  // the capture's idle GPU is not steady-state idle time
  }
  // Captured every step (as often as replayed): steady-state work, not cold start.
  TinyTrace every;
  every.Device(0, "NVIDIA A10G", 8, 6);
  cpu = 1000;
  for (int s = 0; s < 4; ++s) {
    const double start = cpu;
    every.Runtime("cudaStreamBeginCapture", cpu, 3);
    every.Cpu("aten::mm", cpu + 5, 5000);
    every.Runtime("cudaStreamEndCapture", cpu + 5010, 10);
    every.Launch("sm80_xmma_gemm_bf16bf16_bf16f32", cpu + 5030, 40, cpu + 5080, 2000, "kernel", 7,
                 "cudaGraphLaunch");
    every.Step(s + 1, start, 7100);
    cpu += 7110;
  }
  auto steady = every.Load();
  CHECK(FindingsWithCode(*steady, "TTA015").empty());
}

TEST_CASE("causal: a saving on a trace missing its GPU side says it counts what the trace holds",
          "[rules][causal][TTA016]") {
  // A WSL trace without GPU activity whose blocking copy looks like a first call: "this run
  // could be 24.96x faster" stood beside "nothing on the GPU side can be judged".
  ttap::RuleResult r;
  r.trace_incomplete = true;
  r.joint_saving_ns = 1000000;
  r.speedup = 24.96;
  CHECK(r.SavingsVerdict() ==
        "this run could be 24.96x faster by what the trace holds (its GPU side is missing: "
        "TTA016)");
  r.trace_incomplete = false;
  CHECK(r.SavingsVerdict() == "this run could be 24.96x faster");
  // Half the saving or more one-time start-up: what the other fixes make of the run without it.
  r.run_ns = 10000000;
  r.joint_saving_ns = 9000000;
  r.speedup = 10.0;
  r.one_time_saving_ns = 8000000;
  CHECK(r.SavingsVerdict() ==
        "this run could be 10.00x faster, but 8.0 ms of that is one-time start-up (TTA015) the "
        "process pays once: without it the run takes 2.0 ms, which the other fixes could make "
        "2.00x faster");
  r.one_time_saving_ns = 4000000;  // less than half: the steady fixes' story
  CHECK(r.SavingsVerdict() == "this run could be 10.00x faster");
  // Fixes that save more together than their figures add up to (a DLRM step bound by its CPU
  // work beside exposed all-to-alls: 6.2 ms together, 4.9 ms added up) say why.
  r.one_time_saving_ns = 0;
  r.time.steps.resize(2);
  r.claims_ns = 7000000;
  CHECK(r.SavingsVerdict() ==
        "this run could be 10.00x faster (more than the findings' figures add up to, 3.5 "
        "ms/step: each is what its fix saves alone, and causes that bound the step side by side "
        "save more fixed together)");
  r.claims_ns = 8500000;  // within 15%: replays of fixes that interact need not add up exactly
  CHECK(r.SavingsVerdict() == "this run could be 10.00x faster");
}

TEST_CASE("causal: a CPU-overhead-bound region's ops leave out one-time first calls",
          "[rules][causal][TTA017]") {
  // The first step's first aten::add sets up for 3 ms before its launch (a first call:
  // TTA015's). The region's "most CPU time in aten::add" is the steady dispatch, 3.4 ms a step,
  // not 4.4.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  StreamClock gpu;
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 200; ++k) {
      const double dispatch = s == 0 && k == 0 ? 3000 : 10;
      t.Cpu("aten::add", cpu, dispatch + 7);
      gpu.Kernel(t, "vectorized_elementwise_kernel", cpu + dispatch, 5, 3, 6);
      cpu += dispatch + 7;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA017");
  REQUIRE(!f.empty());
  INFO(f[0].message);
  CHECK(f[0].message.find("in aten::add 3.3") != std::string::npos);
}

TEST_CASE("causal: a CPU-overhead-bound region's ops are those of most of its steps",
          "[rules][causal][TTA017]") {
  // Four steps of 200 eager aten::add; the first also creates an optimizer's state: 40
  // aten::zeros_like of 100 us each (4 ms, 1 ms "a step" over four), none in later steps. The
  // steps' dispatch is aten::add's (3.4 ms a step); zeros_like runs in one step of four.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  StreamClock gpu;
  double cpu = 1000;
  for (int s = 0; s < 4; ++s) {
    const double start = cpu;
    for (int k = 0; k < 200; ++k) {
      t.Cpu("aten::add", cpu, 17);
      gpu.Kernel(t, "vectorized_elementwise_kernel", cpu + 10, 5, 3, 6);
      cpu += 17;
      if (s == 0 && k % 5 == 0) {
        t.Cpu("aten::zeros_like", cpu, 100);
        gpu.Kernel(t, "vectorized_elementwise_kernel", cpu + 93, 5, 3, 6);
        cpu += 100;
      }
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA017");
  REQUIRE(!f.empty());
  INFO(f[0].message);
  CHECK(f[0].message.find("most CPU time a step in aten::add 3.4") != std::string::npos);
  CHECK(f[0].message.find("zeros_like") == std::string::npos);
}

TEST_CASE("causal: the eager warm-up before a one-time graph capture is not steady-state dispatch",
          "[rules][causal][TTA017][TTA007]") {
  // vLLM captures a batch size's graph lazily: step 3 first runs the model eagerly (100 ops of
  // 190 us dispatch, 5 us kernels; then 30 of 2 us kernels, each shorter than its 6 us launch),
  // then captures it; every other step replays a graph. The warm-up happens once, so it is not
  // the steady state's CPU overhead, nor its launch-bound bursts.
  TinyTrace t;
  t.Device(0, "NVIDIA A10G", 8, 6);
  double cpu = 1000;
  for (int s = 0; s < 8; ++s) {
    const double start = cpu;
    if (s == 3) {
      for (int k = 0; k < 100; ++k) {
        t.Cpu("aten::mm", cpu, 200);
        t.Kernel("sm80_xmma_gemm_bf16bf16_bf16f32", cpu + 180, 10, cpu + 195, 5);
        cpu += 210;
      }
      for (int k = 0; k < 30; ++k) {
        t.Cpu("aten::add", cpu, 10);
        t.Kernel("vectorized_elementwise_kernel", cpu + 2, 6, cpu + 9, 2);
        cpu += 11;
      }
      t.Runtime("cudaStreamBeginCapture", cpu, 3);
      t.Runtime("cudaStreamEndCapture", cpu + 5, 10);
      t.Runtime("cudaGraphInstantiateWithFlags", cpu + 16, 2000);
      cpu += 2020;
    }
    t.Cpu("execute_model", cpu, 60);
    double g = cpu + 60;
    for (int k = 0; k < 40; ++k) {
      t.Launch("sm80_xmma_gemm_bf16bf16_bf16f32", cpu + 10, 40, g, 50, "kernel", 7,
               "cudaGraphLaunch");
      g += 51;
    }
    t.Step(s + 1, start, g + 5 - start);
    cpu = g + 10;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  for (const auto& f : all.findings) {
    INFO(f.message);
    CHECK(f.code != "TTA017");
    CHECK(f.code != "TTA007");
  }
}

TEST_CASE("causal: a CPU-overhead-bound region over several steps is described per step",
          "[rules][causal][TTA017]") {
  // The finding merges the region's steps: its text gives their average (200 kernels a step),
  // not the last step's tally alone.
  auto trace = Eager(200, 10, 5, 6).Load();
  auto f = FindingsWithCode(*trace, "TTA017");
  REQUIRE(!f.empty());
  INFO(f[0].message);
  CHECK(f[0].message.find("200 kernels a step") != std::string::npos);
  CHECK(f[0].message.find("most CPU time a step in aten::add") != std::string::npos);
}

TEST_CASE("causal: a big graph's slow launch every step is steady-state, not lazy loading",
          "[rules][causal][TTA015]") {
  // A decode step replays a graph of thousands of kernels: each cudaGraphLaunch holds the CPU
  // 3-6 ms (a GH200 vLLM trace), every step, beside single launches of 5 us. It was TTA015
  // "one-time: 8 call(s) load kernels lazily (longest cudaGraphLaunch)".
  TinyTrace t;
  t.Device(0, "NVIDIA GH200 480GB", 9, 0);
  double cpu = 1000;
  for (int s = 0; s < 8; ++s) {
    const double start = cpu;
    for (int k = 0; k < 20; ++k) {
      t.Cpu("aten::add", cpu, 20);
      t.Kernel("vectorized_elementwise_kernel", cpu + 10, 5, cpu + 20, 3);
      cpu += 21;
    }
    const double launch_us = 3000 + 400 * (s % 4);
    double g = cpu + launch_us + 5;
    std::vector<TinyTrace::GraphKernel> replay;
    for (int k = 0; k < 40; ++k) {
      replay.push_back({"sm90_xmma_gemm_bf16bf16_bf16f32", g, 150});
      g += 151;
    }
    t.GraphLaunch(cpu, launch_us, replay);
    t.Runtime("cudaEventSynchronize", cpu + launch_us + 5, std::max(1.0, g - cpu - launch_us));
    t.Step(s + 1, start, g + 10 - start);
    cpu = g + 20;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  for (const auto& f : all.findings) {
    INFO(f.message);
    CHECK(f.code != "TTA015");
  }
  CHECK(all.time.overall.ns[static_cast<int>(ttap::Cause::kColdStart)] == 0);
}

TEST_CASE("causal: a GPU run profiled on the CPU side only is incomplete",
          "[rules][causal][TTA016]") {
  // activities=[ProfilerActivity.CPU] (or WSL without CUPTI): a data-parallel step's ops, its
  // all-reduces and cuDNN convolutions recorded, no launch call and no GPU activity at all.
  auto step_ops = [](const std::string& collective, const std::string& conv) {
    TinyTrace t;
    double cpu = 1000;
    for (int s = 0; s < 3; ++s) {
      const double start = cpu;
      for (int k = 0; k < 4; ++k) {
        t.Cpu(conv, cpu, 300);
        cpu += 310;
      }
      t.Cpu(collective, cpu, 500);
      cpu += 510;
      t.Step(s + 1, start, cpu - start);
      cpu += 5;
    }
    return t;
  };
  auto trace = step_ops("nccl:all_reduce", "aten::cudnn_convolution").Load();
  auto all = ttap::RunRules(*trace, {});
  auto inc = FindingsWithCode(*trace, "TTA016");
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].severity == ttap::Severity::kWarning);
  CHECK(inc[0].evidence.at("ops_that_use_a_gpu").number == 15);
  CHECK(inc[0].message.find("only the CPU's side was profiled") != std::string::npos);
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA016");
  // A CPU-only run (gloo, oneDNN convolutions) is not incomplete.
  CHECK(FindingsWithCode(*step_ops("c10d::allreduce_", "aten::mkldnn_convolution").Load(), "TTA016")
            .empty());
}

TEST_CASE("causal: .item() reads that wait for an unrecorded device make the trace incomplete",
          "[rules][causal][TTA016]") {
  // Apple MPS (its work is not recorded): a training loop without steps whose loss.item() and
  // grad-norm reads wait milliseconds with no op under them; no launch, no device activity.
  auto loop = [](double read_us, bool op_under_read, int reads = 4, bool launches = false) {
    TinyTrace t;
    double cpu = 1000;
    for (int k = 0; k < reads; ++k) {
      if (launches) t.Runtime("cudaLaunchKernel", cpu + 100, 5);
      t.Cpu("aten::linear", cpu, 400);
      cpu += 410;
      t.Cpu("aten::item", cpu, read_us + 4);
      t.Cpu("aten::_local_scalar_dense", cpu + 1, read_us + 2);
      if (op_under_read) t.Cpu("aten::sum", cpu + 2, read_us);
      cpu += read_us + 10;
    }
    return t;
  };
  auto trace = loop(5000, false).Load();
  auto inc = FindingsWithCode(*trace, "TTA016");
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].severity == ttap::Severity::kWarning);
  CHECK(inc[0].evidence.at("device_waits").number == 4);
  CHECK(inc[0].message.find("the CPU waited for a device") != std::string::npos);
  // The run's last line does not promise a speed-up it cannot judge.
  const ttap::RuleResult all = ttap::RunRules(*trace, {});
  CHECK(all.trace_incomplete);
  CHECK(all.SavingsVerdict().find("cannot be judged") != std::string::npos);
  const ttap::RuleResult cpu_reads = ttap::RunRules(*loop(20, false).Load(), {});
  CHECK_FALSE(cpu_reads.trace_incomplete);
  CHECK(cpu_reads.SavingsVerdict().rfind("this run could be ", 0) == 0);
  // Reads of CPU tensors take microseconds; a read that runs an op of its own is no wait.
  CHECK(FindingsWithCode(*loop(20, false).Load(), "TTA016").empty());
  CHECK(FindingsWithCode(*loop(5000, true).Load(), "TTA016").empty());
  // Two such reads are not enough; a trace with launches is judged by the other forms.
  CHECK(FindingsWithCode(*loop(5000, false, 2).Load(), "TTA016").empty());
  auto with_launches = loop(5000, false, 4, true).Load();
  for (const auto& f : FindingsWithCode(*with_launches, "TTA016")) {
    CHECK(f.evidence.count("device_waits") == 0);
  }
  // Three 1 ms reads in a long CPU run (a preempted CPU) are under 5% of it.
  TinyTrace long_run = loop(1000, false, 3);
  long_run.Cpu("aten::linear", 20000, 100000);
  CHECK(FindingsWithCode(*long_run.Load(), "TTA016").empty());
}

TEST_CASE("causal: a trace without steps states its numbers for the run, not per step",
          "[rules][causal][TTA008]") {
  // No ProfilerStep and no repeated marker: one span. The GPU idles while the CPU makes the
  // input (torch.randn on the host), three times.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  for (int k = 0; k < 3; ++k) {
    t.Cpu("aten::randn", cpu, 5000);
    cpu += 5010;
    t.Cpu("aten::mul", cpu, 20);
    t.Kernel("vectorized_elementwise_kernel", cpu + 5, 5, cpu + 15, 100);
    cpu += 130;
  }
  auto trace = t.Load();
  REQUIRE(trace->steps.empty());
  auto idle = FindingsWithCode(*trace, "TTA008");
  REQUIRE(!idle.empty());
  INFO(idle[0].message);
  CHECK(idle[0].message.find("of the run") != std::string::npos);
  CHECK(idle[0].message.find("/step") == std::string::npos);
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

namespace {

// Three steps of 8 convolutions (aten::cudnn_convolution, 40 us of dispatch and a 300 us
// kernel). In the steps listed in |searching|, each convolution first times 6 candidate
// algorithms: 6 trial kernels, each followed by a cudaEventSynchronize, 5 ms of CPU in all.
TinyTrace Convolutions(const std::vector<int>& searching) {
  TinyTrace t;
  t.Device(0, "NVIDIA H200", 9, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    const bool search = std::count(searching.begin(), searching.end(), s) > 0;
    for (int k = 0; k < 8; ++k) {
      const double op = cpu;
      t.Cpu("aten::conv2d", op, 1);  // the outer op, grown below
      double at = op + 2;
      if (search) {
        for (int c = 0; c < 6; ++c) {
          gpu.Kernel(t, "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", at, 5,
                     3, 100);
          at += 8;
          const double wait = std::max(5.0, gpu.free - at + 2);
          t.Runtime("cudaEventSynchronize", at, wait);
          at += wait + 800;  // cuDNN's own bookkeeping between candidates
        }
      }
      at += 30;
      gpu.Kernel(t, "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", at, 5, 3,
                 300);
      at += 8;
      t.Cpu("aten::cudnn_convolution", op + 1, at - op - 1);
      cpu = at + 2;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  return t;
}

}  // namespace

TEST_CASE("causal: convolutions that search for their algorithm every step are TTA020",
          "[rules][causal][TTA020]") {
  // cudnn.benchmark with shapes that change: the search comes back in every step.
  auto trace = Convolutions({0, 1, 2}).Load();
  auto all = ttap::RunRules(*trace, {});
  auto f = FindingsWithCode(*trace, "TTA020");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("8 convolution(s) in the step search") != std::string::npos);
  CHECK(f[0].message.find("cudnn.benchmark") != std::string::npos);
  CHECK(f[0].step_ids.size() == 3);
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA020");
  // The search is most of each step; the fix leaves the warm convolutions.
  CHECK(f[0].share_of_step > 0.6);
  CHECK(f[0].share_of_step < 1.0);
  CheckOneStory(all);
  // Fixed shapes: one search in the first step only is a first call, never TTA020; no search
  // at all, nothing.
  CHECK(FindingsWithCode(*Convolutions({0}).Load(), "TTA020").empty());
  CHECK(FindingsWithCode(*Convolutions({}).Load(), "TTA020").empty());
}

TEST_CASE("causal: autograd's anomaly mode left on is TTA021, costed by what it adds",
          "[rules][causal][TTA021]") {
  // Three training steps. Forward: 30 ops (aten::linear, 40 us of dispatch and a 100 us
  // kernel); with anomaly mode each also captures its traceback (torch/fx/traceback.py's
  // format_stack, 300 us). Backward, on the autograd thread: 30 functions; with anomaly mode
  // each checks its gradient (aten::isnan, aten::_is_any_true, aten::item with a sync).
  auto loop = [](bool anomaly) {
    TinyTrace t;
    t.Device(0, "NVIDIA H200", 9, 0);
    double cpu = 1000;
    StreamClock gpu;
    for (int s = 0; s < 3; ++s) {
      const double start = cpu;
      for (int k = 0; k < 30; ++k) {
        const double capture = anomaly ? 300 : 0;
        t.Cpu("aten::linear", cpu, 40 + capture);
        if (anomaly) {
          t.Python("torch/fx/traceback.py", 415, "format_stack", cpu + 2, 296);
          t.Python("traceback.py", 221, "extract_stack", cpu + 3, 200);
        }
        gpu.Kernel(t, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                   cpu + 30 + capture, 5, 3, 100);
        cpu += 42 + capture;
      }
      for (int k = 0; k < 30; ++k) {
        const double check = anomaly ? 200 : 0;
        t.Cpu("autograd::engine::evaluate_function: AddmmBackward0", cpu, 40 + check, "cpu_op", 2);
        gpu.Kernel(t, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64", cpu + 2, 5, 3,
                   100, 2);
        if (anomaly) {
          t.Cpu("aten::isnan", cpu + 10, 20, "cpu_op", 2);
          t.Cpu("aten::_is_any_true", cpu + 32, 20, "cpu_op", 2);
          t.Cpu("aten::item", cpu + 54, 180, "cpu_op", 2);
          t.Runtime("cudaStreamSynchronize", cpu + 60, std::max(5.0, gpu.free - cpu - 60), 2);
        }
        cpu += 42 + check + std::max(0.0, anomaly ? gpu.free - cpu - 60 : 0.0);
      }
      cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
    }
    return t;
  };
  auto trace = loop(true).Load();
  auto all = ttap::RunRules(*trace, {});
  auto f = FindingsWithCode(*trace, "TTA021");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("30 op(s) in the step captured their Python traceback") !=
        std::string::npos);
  CHECK(f[0].message.find("30 backward function(s) check their gradients") != std::string::npos);
  CHECK(f[0].step_ids.size() == 3);
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA021");
  // At least the forward's captures, which bound it (CPU 342 us per op against 100 us kernels).
  CHECK(f[0].share_of_step > 0.3);
  CheckOneStory(all);
  CHECK(FindingsWithCode(*loop(false).Load(), "TTA021").empty());
}

TEST_CASE("A saving under half a microsecond reads as no measurable time, never 0.000 ms",
          "[rules][message]") {
  ttap::Finding f;
  f.code = "TTA002";
  f.name = "host-sync";
  f.time_lost_us_per_step = 0.2;
  f.evidence["saving_note"] = {false, 0, "other work on the critical path hides it"};
  f.evidence["detected_us_per_step"] = {true, 300, ""};
  std::string text = ttap::FindingMessage(f);
  INFO(text);
  CHECK(text.find("a fix saves no measurable time (other work") != std::string::npos);
  CHECK(text.find("0.000") == std::string::npos);
  // Once the larger fixes are in, nothing is left: said in words too.
  f.evidence.erase("saving_note");
  f.time_lost_us_per_step = 120;
  f.share_of_step = 0.02;
  f.evidence["saving_after_larger_fixes_us_per_step"] = {true, 0.1, ""};
  text = ttap::FindingMessage(f);
  INFO(text);
  CHECK(text.find("0.12 ms/step (2.0% of the step, nothing after the larger fixes)") !=
        std::string::npos);
  // Idle time too: a gpu-idle finding whose idle the larger fixes remove (a cold start's)
  // says so, or the run's last line ("the other fixes could make 1.00x faster") contradicts it.
  f.code = "TTA008";
  f.name = "gpu-idle";
  text = ttap::FindingMessage(f);
  INFO(text);
  CHECK(text.find("saves 0.12 ms/step (2.0% of the step, nothing after the larger fixes)") !=
        std::string::npos);
}

TEST_CASE("causal: a first call's kernel that starts late delays the whole GPU: cold-start",
          "[rules][causal][TTA015]") {
  // One forward pass, no ProfilerStep (a T4's VGG-16): the first aten::conv2d takes 2.3 ms on the
  // CPU and its kernel starts 6.8 ms after its launch; every later kernel queues behind it, so
  // the GPU's work ends 6.8 ms late. The later convolutions take 200 us on the CPU.
  TinyTrace t;
  t.Device(0, "Tesla T4", 7, 5);
  t.Cpu("aten::conv2d", 1000, 2300);
  t.Cpu("aten::cudnn_convolution", 1010, 2200);
  t.Launch("void cask_cudnn::computeOffsetsKernel<false, false>()", 3000, 15, 9800, 5, "kernel", 7,
           "cudaLaunchKernel");
  double cpu = 3400, gpu = 9810;
  for (int k = 0; k < 10; ++k) {
    t.Cpu("aten::conv2d", cpu, 200);
    t.Cpu("aten::cudnn_convolution", cpu + 5, 180);
    t.Launch("void at::native::elementwise_kernel<128, 2>()", cpu + 100, 15, gpu, 1000, "kernel", 7,
             "cudaLaunchKernel");
    cpu += 300;
    gpu += 1002;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, gpu - cpu + 5);
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  auto cold = FindingsWithCode(*trace, "TTA015");
  REQUIRE(cold.size() == 1);
  INFO(cold[0].message);
  // Warm, the first kernel starts a launch latency after its call and the queue with it: most of
  // the 6.8 ms delay and the first call's 2 ms go (was 0.8 ms: the late start was read as the
  // usual launch latency, measured on that one kernel).
  CHECK(cold[0].time_lost_us_per_step > 6000);
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA015");
}

// Three steps of a torch.compile'd model with |breaks| graph breaks: one outer compiled frame
// ("Torch-Compiled Region: 0/0") whose graphs run in resumed frames ("1/0") nested in it, each a
// 60 us guard check, a "## Call CompiledFxGraph ##" of 10 ops (10 us dispatch, 5 us launch, 6 us
// kernel), then 150 us of Python to the next frame (the break). |graph_replay|: the outer frame
// also replays a CUDA graph (mode="reduce-overhead" on a part of it).
TinyTrace CompiledWithBreaks(int breaks, bool graph_replay) {
  TinyTrace t;
  t.Device(0, "NVIDIA H200", 9, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    const double outer = cpu + 2;
    cpu = outer + 40;
    if (graph_replay) {
      t.GraphLaunch(cpu, 20, {{"triton_poi_fused_0", std::max(gpu.free + 1, cpu + 25), 30}});
      gpu.free = std::max(gpu.free + 1, cpu + 25) + 30;
      cpu += 22;
    }
    for (int frame = 0; frame <= breaks; ++frame) {
      const double region = cpu;
      const double call = cpu + 60;
      cpu = call + 2;
      for (int k = 0; k < 10; ++k) {
        t.Cpu("aten::addmm", cpu, 16);
        gpu.Kernel(t, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize64x64x32", cpu + 10, 5, 3, 6);
        cpu += 17;
      }
      t.Cpu("## Call CompiledFxGraph abc123 ##", call, cpu - call + 1, "user_annotation");
      cpu += 2;
      if (frame > 0) t.Cpu("Torch-Compiled Region: 1/0", region, cpu - region);
      cpu += 150;
    }
    t.Cpu("Torch-Compiled Region: 0/0", outer, cpu - outer);
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu + 2);
  }
  return t;
}

TEST_CASE(
    "causal: a compiled function with graph breaks is one region, its Python between graphs too",
    "[rules][causal][TTA017]") {
  // Four graph breaks: five graphs of 10 ops a step (170 us of dispatch and launches each), with
  // 212 us of guards and Python between them. The fix (no breaks, mode="reduce-overhead")
  // replays the whole function as one graph: about 1.8 ms of the 1.9 ms step. As five regions
  // of "Call CompiledFxGraph" it saved their dispatch only, and TTA008 named the compiled
  // region's Python apart (0.93 ms, the fix's other half).
  auto trace = CompiledWithBreaks(4, false).Load();
  auto all = ttap::RunRules(*trace, ExactWhatIfs());
  REQUIRE(!all.findings.empty());
  const auto& top = all.findings.front();
  INFO(top.message);
  CHECK(top.code == "TTA017");
  CHECK(top.cause_key == "the compiled function (Torch-Compiled Region: 0/0)");
  CHECK(top.message.find("4 graph breaks a call") != std::string::npos);
  CHECK(top.message.find("fullgraph=True") != std::string::npos);
  CHECK(top.evidence.at("graph_breaks_per_call").number == Approx(4));
  CHECK(top.time_lost_us_per_step > 1500);
  for (const auto& f : all.findings) {
    INFO(f.message);
    if (f.code == "TTA008") CHECK(f.severity >= ttap::Severity::kInfo);
  }
  CheckOneStory(all);
  // Without graph breaks the compiled function is still the region, with no break to name.
  auto whole = FindingsWithCode(*CompiledWithBreaks(0, false).Load(), "TTA017", ExactWhatIfs());
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].cause_key == "the compiled function (Torch-Compiled Region: 0/0)");
  CHECK(whole[0].message.find("graph break") == std::string::npos);
  // A compiled function that replays a CUDA graph is captured already: the eager graphs of its
  // resumed frames are regions of their own, the Python around its graph is not theirs.
  auto replayed = FindingsWithCode(*CompiledWithBreaks(4, true).Load(), "TTA017", ExactWhatIfs());
  REQUIRE(!replayed.empty());
  for (const auto& f : replayed) {
    INFO(f.message);
    CHECK(f.cause_key != "the compiled function (Torch-Compiled Region: 0/0)");
  }
  CHECK(replayed[0].cause_key == "the compiled function (Torch-Compiled Region: 1/0)");
  // Its advice is not to capture CUDA graphs, which the run replays already (vLLM's prefill ops
  // outside its piecewise graphs were told to): these ops are outside them.
  CHECK(replayed[0].message.find("The run replays CUDA graphs already") != std::string::npos);
  CHECK(replayed[0].message.find("Capture it with CUDA graphs") == std::string::npos);
  CHECK(whole[0].message.find("replays CUDA graphs already") == std::string::npos);
}

// A run without steps that compiles on its first call (|recompile|: in each of four steps).
TinyTrace CompileThenCalls(bool recompile) {
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3090", 8, 6);
  double cpu = 1000;
  StreamClock gpu;
  for (int s = 0; s < 4; ++s) {
    const double start = cpu;
    if (s == 0 || recompile) {
      // Dynamo's tracing (fake-tensor ops, no launch), then Inductor's lowering and codegen.
      const double compile = cpu;
      cpu += 5;
      for (int k = 0; k < 50; ++k) {
        t.Cpu("aten::mul", cpu, 100);
        cpu += 110;
      }
      t.Cpu("GraphLowering.run (dynamo_timed)", cpu, 20000, "user_annotation");
      cpu += 20001;
      t.Cpu("GraphLowering.compile_to_module (dynamo_timed)", cpu, 60000, "user_annotation");
      cpu += 60001;
      t.Cpu("_compile.<locals>.compile_inner (dynamo_timed)", compile, cpu - compile,
            "user_annotation");
      cpu += 5;
    }
    // The compiled call: a GEMM and a fused Triton kernel, GPU-bound.
    const double call = cpu;
    t.Cpu("aten::mm", cpu, 12);
    gpu.Kernel(t, "ampere_sgemm_128x64_tn", cpu + 4, 5, 3, 2000);
    cpu += 14;
    gpu.Kernel(t, "triton_poi_fused_mul_relu_0", cpu, 5, 3, 190);
    cpu += 7;
    t.Cpu("Torch-Compiled Region: 0/0", call, cpu - call);
    cpu = recompile ? gpu.SyncAndStep(t, s + 1, start, cpu) : cpu + 2;
  }
  if (!recompile) t.Runtime("cudaDeviceSynchronize", cpu, gpu.free - cpu + 3);
  return t;
}

TEST_CASE("causal: torch.compile's compilation is one-time cold start, not gpu-idle",
          "[rules][causal][TTA015]") {
  // A book example profiled from its first call: 86 ms of compilation with the GPU idle, then
  // four compiled calls of 2.2 ms on the GPU. The compilation was TTA008 gpu-idle at 97% of the
  // run ("while the CPU runs compile_inner"): it happens once per function and input shapes.
  auto trace = CompileThenCalls(false).Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  const auto& top = all.findings.front();
  INFO(top.message);
  CHECK(top.code == "TTA015");
  CHECK(top.message.find("torch.compile compiles for 85.5 ms") != std::string::npos);
  CHECK(top.severity == ttap::Severity::kError);
  for (const auto& f : all.findings) {
    INFO(f.message);
    if (f.code == "TTA008") CHECK(f.severity == ttap::Severity::kHint);
  }
  CheckOneStory(all);
  // Recompiling in every step (new shapes each step) is the steady state's, never start-up.
  auto again = CompileThenCalls(true).Load();
  for (const auto& f : FindingsWithCode(*again, "TTA015")) {
    INFO(f.message);
    CHECK(f.message.find("torch.compile") == std::string::npos);
  }
  CHECK(!FindingsWithCode(*again, "TTA008").empty());
}

// Five iterations of 60 eager ops (10 us dispatch, 5 us launch, 6 us kernels) without
// ProfilerStep, the first with four lazy loads of 30 ms. |optimizer|: each ends with an
// Optimizer.step (a training loop); else each is a serving engine's mark
// (execute_new_<n>_cached_0) around its ops.
TinyTrace ColdFirstIterations(bool optimizer) {
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double cpu = 1000;
  StreamClock gpu;
  for (int it = 0; it < 5; ++it) {
    const double mark = cpu;
    for (int k = 0; k < 60; ++k) {
      const double lazy = it == 0 && k < 4 ? 30000 : 0;
      t.Cpu("aten::linear", cpu, 16 + lazy);
      gpu.Kernel(t, "void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4>()",
                 cpu + 10, 5 + lazy, 3, 6);
      cpu += 17 + lazy;
    }
    if (optimizer) {
      const double opt = cpu;
      t.Cpu("aten::_foreach_add_", cpu + 2, 20);
      gpu.Kernel(t, "void at::native::multi_tensor_apply_kernel<FunctorAdd>()", cpu + 10, 5, 3, 6);
      cpu += 24;
      t.Cpu("Optimizer.step#SGD.step", opt, cpu - opt, "user_annotation");
      cpu += 2;
    } else {
      t.Cpu("execute_new_" + std::to_string(it + 1) + "_cached_0", mark, cpu - mark,
            "user_annotation");
      cpu += 30;
    }
  }
  t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu.free - cpu + 3));
  return t;
}

TEST_CASE("causal: steps inferred from the optimizer keep the first iteration, cold or not",
          "[rules][causal][TTA015]") {
  // No ProfilerStep: five iterations of 60 eager ops (10 us dispatch, 5 us launch, 6 us
  // kernels) and an Optimizer.step, profiled from the first iteration, whose first launches load
  // their modules lazily (4 x 30 ms). The steps ran from one optimizer step's end to the next:
  // the first iteration, 120 ms of a 125 ms run, was in no step and no figure.
  auto trace = ColdFirstIterations(/*optimizer=*/true).Load();
  REQUIRE(trace->steps.empty());
  const auto spans = ttap::AnalysedSteps(*trace);
  REQUIRE(spans.size() == 5);
  CHECK(spans[0].start_ns == 1000000);  // the first iteration is a step
  // The steady steps' cause first, the first iteration's lazy loading after it with its total.
  auto all = ttap::RunRulesSteadyFirst(*trace, {});
  CHECK(all.cold_steps == 1);
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA017");
  auto cold = std::find_if(all.findings.begin(), all.findings.end(),
                           [](const ttap::Finding& f) { return f.code == "TTA015"; });
  REQUIRE(cold != all.findings.end());
  INFO(cold->message);
  CHECK(cold->message.find("a fix saves 1") != std::string::npos);  // 120 ms, in the run
  CHECK(cold->message.find("all of it in the cold first step") != std::string::npos);
}

// |calls| eager Linear calls of a 3 us GEMV, without steps; the first one's set-up takes 540 us
// before its launch (a first call of the shape), the others 24 us.
TinyTrace LinearCalls(int calls) {
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060 Ti", 8, 6);
  double cpu = 1000;
  StreamClock gpu;
  for (int k = 0; k < calls; ++k) {
    const double setup = k == 0 ? 540 : 0;
    t.Cpu("aten::linear", cpu, 22 + setup);
    t.Cpu("aten::addmm", cpu + 2, 19 + setup);
    gpu.Kernel(t, "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4, true>()", cpu + 16 + setup, 4,
               3, 3);
    cpu += 24 + setup;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu.free - cpu + 3));
  return t;
}

TEST_CASE(
    "causal: in a run of a millisecond, a first call's set-up under a millisecond is cold start",
    "[rules][causal][TTA015]") {
  // 20 calls in 1.0 ms, half of it the first call's set-up: it was TTA008 gpu-idle at error
  // ("while the CPU runs aten::linear", 79%), advice that saves nothing once the shape is warm.
  auto trace = LinearCalls(20).Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA015");
  CHECK(all.findings.front().message.find("aten::linear") != std::string::npos);
  // No steps recorded: a schedule with a warm-up is the advice.
  CHECK(all.findings.front().message.find("schedule(wait=1, warmup=1, active=3)") !=
        std::string::npos);
  for (const auto& f : all.findings) {
    INFO(f.message);
    if (f.code == "TTA008") CHECK(f.severity == ttap::Severity::kHint);
  }
  CheckOneStory(all);
  // In a run of 1,000 calls the same 0.56 ms is no first call worth naming (under a
  // millisecond, 2% of the run).
  CHECK(FindingsWithCode(*LinearCalls(1000).Load(), "TTA015").empty());
}

// Two out-of-place multiplies of a 268 MB tensor (1.3 ms kernels), without steps: each
// allocates its output (cudaMalloc 166 us, then 90 us: the cache is cold for both); the first
// also spends 600 us on its own set-up (dispatch, lazy initialisation) before it launches.
TinyTrace OutOfPlaceMuls() {
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060 Ti", 8, 6);
  StreamClock gpu;
  double cpu = 1000;
  for (int k = 0; k < 2; ++k) {
    const double setup = k == 0 ? 600 : 10;
    const double malloc_us = k == 0 ? 166 : 90;
    const double launch_us = k == 0 ? 55 : 8;
    t.Cpu("aten::mul", cpu, setup + malloc_us + launch_us + 5);
    t.Runtime("cudaMalloc", cpu + setup, malloc_us);
    gpu.Kernel(t, "void at::native::vectorized_elementwise_kernel<4, at::native::binary_op>()",
               cpu + setup + malloc_us + 1, launch_us, 3, 1320);
    cpu += setup + malloc_us + launch_us + 20;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu.free - cpu + 3));
  return t;
}

TEST_CASE("causal: a first call's own set-up counts though its later call allocates too",
          "[rules][causal][TTA015]") {
  // The first aten::mul takes 826 us, the second 113 us: 7.3x, under the 10x of a first call,
  // because the second allocates its output as well. Without their allocations, 605 us against
  // 13 us. It was TTA008 gpu-idle "while the CPU runs aten::mul" at warning (18%).
  auto trace = OutOfPlaceMuls().Load();
  const auto first_calls = ttap::OneTimeFirstCalls(*trace);
  REQUIRE(first_calls.size() == 1);
  CHECK(trace->Name(first_calls[0].row) == "aten::mul");
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA015");
  for (const auto& f : all.findings) {
    INFO(f.message);
    if (f.code == "TTA008") CHECK(f.severity >= ttap::Severity::kInfo);
  }
}

TEST_CASE("causal: a view's long first run is the host stalling, not a first call",
          "[rules][causal][TTA015]") {
  // Five calls each of aten::flatten and aten::index_select; the first of each takes 3 ms, the
  // others 10 us. A view only makes new metadata: a CPU ResNet-18 whose first aten::flatten took
  // 277.7 ms (the machine stalled) was TTA015 "longest aten::flatten".
  TinyTrace t;
  double cpu = 1000;
  for (int k = 0; k < 5; ++k) {
    for (const char* op : {"aten::flatten", "aten::index_select"}) {
      const double dur = k == 0 ? 3000 : 10;
      t.Cpu(op, cpu, dur);
      cpu += dur + 5;
    }
  }
  auto trace = t.Load();
  const auto first_calls = ttap::OneTimeFirstCalls(*trace);
  REQUIRE(first_calls.size() == 1);
  CHECK(trace->Name(first_calls[0].row) == "aten::index_select");
}

TEST_CASE("causal: a serving engine's cold first mark is not analysed apart as a loop's",
          "[rules][causal][TTA015]") {
  // No ProfilerStep: five marks of a serving engine (vLLM's execute_new_<n>_cached_<m>), each 60
  // eager ops, the first with four lazy loads of 30 ms. The marks are batches of requests, not
  // iterations of one program: the run keeps its findings in one story (a vLLM run's first
  // steps without stacks had read a designed per-step sync first once its cold mark was set
  // apart).
  auto trace = ColdFirstIterations(/*optimizer=*/false).Load();
  const auto spans = ttap::AnalysedSteps(*trace);
  REQUIRE(spans.size() == 5);
  CHECK(spans[0].inferred);
  CHECK_FALSE(spans[0].optimizer_marked);
  auto all = ttap::RunRulesSteadyFirst(*trace, {});
  CHECK(all.cold_steps == 0);
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA015");
}

// Rule tests for TTA011 comm-not-overlapped and TTA012 comm-per-parameter: tiny inline traces
// (positive and negative for each), then the shared real traces (skipped when ../shared is
// absent).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "analysis/load/trace_loader.h"
#include "analysis/tiny_trace.h"
#include "test_support.h"

using ttap_test::CountCode;
using ttap_test::FindingsWithCode;
using ttap_test::RealFindings;
using ttap_test::RealTraces;
using ttap_test::TinyTrace;

namespace {

const char* kAllReduce =
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";

// One all_reduce issued the way c10d does: c10d::allreduce_ > record_param_comms >
// nccl:all_reduce (annotation) > cudaLaunchKernelExC, its kernel on |stream| at gts..gts+gdur.
void AllReduce(TinyTrace& t, double cpu, double gts, double gdur, int stream = 20,
               double launch_us = 10) {
  t.Cpu("c10d::allreduce_", cpu, launch_us + 6);
  t.Cpu("record_param_comms", cpu + 1, launch_us + 4);
  t.Cpu("nccl:all_reduce", cpu + 2, launch_us + 2, "user_annotation");
  t.Launch(kAllReduce, cpu + 3, launch_us, gts, gdur, "kernel", stream, "cudaLaunchKernelExC");
}

// Three training steps (a backward op marks each; a run without one is inference, whose
// collectives TTA012 leaves alone): compute kernels on stream 7 for 2 ms, then |n| all_reduces of
// |comm_us| each on stream |stream|, starting |offset_us| after the compute began (offset 0:
// fully alongside the compute; 2000: after it, exposed).
TinyTrace DdpSteps(int n, double comm_us, double offset_us, int stream = 20, bool training = true) {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    const double gpu0 = base + 50;
    double cpu = base + 10;
    if (training) t.Cpu("autograd::engine::evaluate_function: MmBackward0", base + 1, 2);
    for (int k = 0; k < 4; ++k) {
      t.Cpu("aten::mm", cpu, 8);
      t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16", cpu + 1, 5,
               gpu0 + 500 * k, 500);
      cpu += 10;
    }
    double gts = gpu0 + offset_us;
    for (int k = 0; k < n; ++k) {
      gts = std::max(gts, cpu + 4);  // a kernel starts once its launch has begun
      AllReduce(t, cpu, gts, comm_us, stream);
      cpu += 20;
      gts += comm_us + 1;
    }
    double end = std::max(gpu0 + 2000, gts) + 30;
    end = std::max(end, cpu + 10);
    t.Step(s, base, end - base);
    base = end;
  }
  return t;
}

}  // namespace

// ---- TTA011 comm-not-overlapped ----

TEST_CASE("TTA011: collectives after the compute are exposed", "[rules][TTA011]") {
  // Two 800 us all_reduces after 2 ms of compute: no overlap at all.
  auto trace = DdpSteps(2, 800, /*offset_us=*/2000).Load();
  auto f = FindingsWithCode(*trace, "TTA011");
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "comm-not-overlapped");
  CHECK(f[0].fix == "overlap-communication");
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2});
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "nccl:all_reduce");
  // The detector sees 1600 us exposed; the replay with the collectives off the critical path
  // saves that less the 1 us stream gaps the next step's compute still waits for.
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(1600).margin(2));
  CHECK(f[0].time_lost_us_per_step == Approx(1600).epsilon(0.02));
  CHECK(f[0].evidence.at("collectives").number == 6);
  CHECK(f[0].evidence.at("overlap").text == "0.0%");
  CHECK(f[0].severity == ttap::Severity::kWarning);
  CHECK(f[0].message.find("nccl:all_reduce") != std::string::npos);
}

TEST_CASE(
    "TTA011: collectives after backward on the compute stream are exposed, and backward "
    "could hide them",
    "[rules][TTA011]") {
  // Per step: 2 ms of backward kernels, then two 800 us all_reduces on the same stream, then
  // the optimizer's 300 us. Overlapped with backward (DDP's buckets on their own stream), the
  // 1600 us of communication would hide behind the 2 ms of compute before them.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, gpu = base + 50;
    for (int k = 0; k < 4; ++k) {
      t.Cpu("autograd::engine::evaluate_function: MmBackward0", cpu, 8);
      t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16", cpu + 1, 5, gpu, 500);
      gpu += 500;
      cpu += 10;
    }
    for (int k = 0; k < 2; ++k) {
      AllReduce(t, cpu, gpu, 800, /*stream=*/7);
      gpu += 800;
      cpu += 20;
    }
    t.Cpu("Optimizer.step#SGD.step", cpu, 12, "user_annotation");
    t.Kernel("void at::native::multi_tensor_apply_kernel<SgdFunctor>()", cpu + 2, 6, gpu, 300);
    gpu += 300;
    cpu += 14;
    t.Runtime("cudaDeviceSynchronize", cpu, gpu - cpu + 2);
    const double end = gpu + 10;
    t.Step(s, base, end - base);
    base = end + 5;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  auto f = FindingsWithCode(*trace, "TTA011");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].evidence.at("overlap").text == "0.0%");
  CHECK(f[0].time_lost_us_per_step == Approx(1600).epsilon(0.05));
  REQUIRE(!all.findings.empty());
  CHECK(all.findings.front().code == "TTA011");
  // A fix worth less than severity_warning_min_us per step (default 25 us) is at most info,
  // whatever its share of a short step.
  ttap::RuleOptions floor;
  floor.values["severity_warning_min_us"] = 2000;
  auto small = FindingsWithCode(*trace, "TTA011", floor);
  REQUIRE(small.size() == 1);
  CHECK(small[0].severity == ttap::Severity::kInfo);
}

TEST_CASE(
    "TTA011: only the backward's time can hide the collectives: the forward's cannot (the "
    "gradients do not exist yet)",
    "[rules][TTA011]") {
  // Per step: 2 ms of forward kernels, 300 us of backward, then two 800 us all_reduces on the
  // compute stream. Overlapped with backward, 300 us of the 1600 us hide (the saving); 1300 us
  // stay on the path.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, gpu = base + 50;
    for (int k = 0; k < 4; ++k) {
      t.Cpu("aten::linear", cpu, 8);
      t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16", cpu + 1, 5, gpu, 500);
      gpu += 500;
      cpu += 10;
    }
    t.Cpu("autograd::engine::evaluate_function: MmBackward0", cpu, 8);
    t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nt_n_tilesize128x128x16", cpu + 1, 5, gpu, 300);
    gpu += 300;
    cpu += 10;
    for (int k = 0; k < 2; ++k) {
      AllReduce(t, cpu, gpu, 800, /*stream=*/7);
      gpu += 800;
      cpu += 20;
    }
    t.Runtime("cudaDeviceSynchronize", cpu, gpu - cpu + 2);
    const double end = gpu + 10;
    t.Step(s, base, end - base);
    base = end + 5;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA011");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(1600).margin(2));
  CHECK(f[0].time_lost_us_per_step == Approx(300).epsilon(0.1));
}

TEST_CASE("TTA011: a pipeline stage's receive waiting for its peer is called a pipeline bubble",
          "[rules][TTA011]") {
  // Megatron's first pipeline stage (pp=2, one micro-batch): after its forward it receives the
  // gradients from stage 1 with batch_isend_irecv (nccl:coalesced), whose SendRecv kernel waits
  // 20 ms for the peer. Overlapping it with backward is no fix: there is no backward to run
  // before the gradients arrive. Beside it, a small all_reduce keeps its own 0.4 ms figure (it
  // said the step's 20.4 ms).
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10;
    for (int k = 0; k < 4; ++k) {
      t.Cpu("aten::mm", cpu, 8);
      t.Kernel("sm90_xmma_gemm_bf16bf16_bf16f32", cpu + 1, 5, base + 50 + 500 * k, 500);
      cpu += 10;
    }
    t.Cpu("nccl:coalesced", cpu, 12, "user_annotation");
    t.Launch("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", cpu + 1, 10,
             base + 2100, 20000, "kernel", 20, "cudaLaunchKernelExC");
    cpu += 20;
    AllReduce(t, cpu, base + 22200, 400);
    const double end = base + 22700;
    t.Step(s, base, end - base);
    base = end;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA011");
  REQUIRE(!f.empty());
  bool bubble = false, small = false;
  for (const auto& x : f) {
    INFO(x.message);
    if (x.message.find("nccl:coalesced") != std::string::npos) {
      bubble = x.message.find("pipeline bubble") != std::string::npos;
    }
    if (x.message.find("nccl:all_reduce") != std::string::npos) {
      CHECK(x.message.find("pipeline bubble") == std::string::npos);
      small = x.message.find("0.400 ms of 0.400 ms of its communication") != std::string::npos;
    }
  }
  CHECK(bubble);
  if (f.size() > 1) CHECK(small);
}

TEST_CASE("TTA011: partly overlapped collectives count only their exposed part",
          "[rules][TTA011]") {
  // 1000 us of all_reduce starting 1500 us into 2 ms of compute: 500 us overlapped (50%).
  auto trace = DdpSteps(1, 1000, 1500).Load();
  auto f = FindingsWithCode(*trace, "TTA011");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(500).margin(2));
  // Replayed: the collective off the path also lets the step's tail start earlier.
  CHECK(f[0].time_lost_us_per_step == Approx(500).epsilon(0.15));
  // With a 40% minimum overlap the 50% is good enough.
  ttap::RuleOptions o;
  o.values["comm_overlap_min"] = 0.4;
  CHECK(FindingsWithCode(*trace, "TTA011", o).empty());
}

TEST_CASE("TTA011: collectives hidden behind compute are not reported", "[rules][TTA011]") {
  auto hidden = DdpSteps(2, 800, /*offset_us=*/100).Load();
  CHECK(FindingsWithCode(*hidden, "TTA011").empty());
  // Exposed but tiny: 20 us of a ~2.1 ms step is below the 2% exposed share.
  auto tiny = DdpSteps(1, 20, 2000).Load();
  CHECK(FindingsWithCode(*tiny, "TTA011").empty());
  // No collectives at all.
  auto none = DdpSteps(0, 0, 0).Load();
  CHECK(FindingsWithCode(*none, "TTA011").empty());
}

TEST_CASE("TTA011: a step with no compute has nothing to overlap with", "[rules][TTA011]") {
  TinyTrace t;
  for (int s = 0; s < 2; ++s) {
    double base = 1000 + s * 2000;
    AllReduce(t, base + 10, base + 40, 1500);
    t.Step(s, base, 1600);
  }
  auto trace = t.Load();
  CHECK(FindingsWithCode(*trace, "TTA011").empty());
}

// ---- TTA022 peer-wait ----

// Three steps of an expert-parallel layer: 1 ms of GEMMs, then four all_to_all SendRecv kernels
// of |bytes| each, 12 us when the peer is on time; |late_us| > 0: in steps 1 and 2 the third
// one waits that long for the peer.
TinyTrace AllToAllSteps(double late_us, long long bytes = 8192, long long big_bytes = -1) {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-40GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, g = base + 30;
    for (int k = 0; k < 2; ++k) {
      t.Kernel("ampere_sgemm_128x64_nn", cpu, 5, g, 500);
      cpu += 10;
      g += 501;
    }
    for (int k = 0; k < 4; ++k) {
      double d = k == 2 && s > 0 ? 12 + late_us : 12;
      long long b = bytes;
      if (big_bytes > 0 && k == 2) {  // a different message: a large one, slow on its own
        b = big_bytes;
        d = 12 + late_us;
      }
      t.Cpu("nccl:all_to_all", cpu, 8, "user_annotation");
      t.Launch("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", cpu + 1, 5,
               std::max(g, cpu + 10), d, "kernel", 20, "cudaLaunchKernel", b);
      g = std::max(g, cpu + 10) + d + 1;
      cpu += 10;
    }
    t.Step(s, base, g + 20 - base);
    base = g + 40;
  }
  return t;
}

TEST_CASE("TTA011: a graph replay that runs past its step keeps its collectives",
          "[rules][TTA011]") {
  // A CUDA-graph decode loop (tensor parallel): each 3 ms step launches one graph whose replay
  // starts 100 us before the step ends, as the GPU works a step behind: 20 layers of an 80 us
  // GEMM then a 40 us all-reduce on the compute stream, all recorded against the one
  // cudaGraphLaunch. 19 of each replay's 20 all-reduces run in the next step, where they were
  // launched before it: they belonged to no step (1 collective a step, 20 us exposed: nothing
  // found) and their overlap what-if was never costed.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  for (int s = 0; s < 4; ++s) {
    const double base = 1000 + 3000 * s;
    t.Step(s, base, 3000);
    t.Cpu("vllm::execute_model", base + 50, 200, "user_annotation");
    std::vector<TinyTrace::GraphKernel> replay;
    double gts = base + 2900;
    for (int layer = 0; layer < 20; ++layer) {
      replay.push_back({"sm90_xmma_gemm_bf16bf16_bf16f32", gts, 80});
      replay.push_back({kAllReduce, gts + 81, 40});
      gts += 122;
    }
    t.GraphLaunch(base + 100, 100, replay);
  }
  auto f = FindingsWithCode(*t.Load(), "TTA011");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("collectives").number == 80);
  CHECK(f[0].evidence.at("detected_us_per_step").number > 700);
}

TEST_CASE("TTA011: a step whose replayed collectives all run after it", "[rules][TTA011]") {
  // Each 3 ms step runs a 2 ms GEMM, then launches a graph of one 600 us all-reduce that runs
  // just after the step, before the next step's GEMM. The first step has no collective running
  // in it: it was skipped (2 collectives, 400 us a step); its launches count.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  for (int s = 0; s < 3; ++s) {
    const double base = 1000 + 3000 * s;
    t.Step(s, base, 3000);
    t.Launch("sm90_xmma_gemm_bf16bf16_bf16f32", base + 50, 20, base + 700, 2000);
    t.GraphLaunch(base + 2500, 50, {{kAllReduce, base + 3050, 600}});
  }
  auto f = FindingsWithCode(*t.Load(), "TTA011");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("collectives").number == 3);
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(600).margin(1));
}

TEST_CASE("TTA022: a collective that waits for a late peer", "[rules][TTA022]") {
  auto trace = AllToAllSteps(3000).Load();
  auto f = FindingsWithCode(*trace, "TTA022");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].name == "peer-wait");
  CHECK(f[0].evidence.at("waiting_collectives").number == 2);
  // 3 ms of waiting in two of three steps: 2 ms per step.
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(2000).margin(5));
  // The peers on time: each waiting run at the fastest one's 12 us.
  CHECK(f[0].time_lost_us_per_step == Approx(2000).epsilon(0.1));
  CHECK(f[0].message.find("late peer") != std::string::npos);
  CHECK(f[0].message.find("8.0 KiB") != std::string::npos);
  // On time: nothing.
  CHECK(FindingsWithCode(*AllToAllSteps(0).Load(), "TTA022").empty());
  // A slow run of a different (large) message is not a wait: its size explains it.
  CHECK(FindingsWithCode(*AllToAllSteps(3000, 8192, 64 << 20).Load(), "TTA022").empty());
  // Without the message size (older traces) nothing is compared.
  CHECK(FindingsWithCode(*AllToAllSteps(3000, -1).Load(), "TTA022").empty());
}

// ---- TTA012 comm-per-parameter ----

TEST_CASE("TTA012: one all_reduce per parameter", "[rules][TTA012]") {
  // 100 tiny all_reduces per step, hidden behind compute (stream 20): launch overhead only.
  auto trace = DdpSteps(100, 3, /*offset_us=*/0).Load();
  auto f = FindingsWithCode(*trace, "TTA012");
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "comm-per-parameter");
  CHECK(f[0].fix == "bucket-collectives");
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "nccl:all_reduce");
  CHECK(f[0].evidence.at("collectives").number == 300);
  // 100 launches of 10 us each per step; the collectives mostly overlap the compute.
  CHECK(f[0].evidence.at("launch_overhead_us").number == Approx(3000).margin(1));
  // What bucketing saves on this run: the step is 2 ms of GEMMs on the GPU and the 100 launches
  // hide behind them, so the replay gives it little (the detector's 3 ms of launch overhead is
  // not on the critical path).
  CHECK(f[0].evidence.at("detected_us_per_step").number >= 1000);
  CHECK(f[0].time_lost_us_per_step < 100);
  CHECK((f[0].severity == ttap::Severity::kInfo || f[0].severity == ttap::Severity::kHint));
  CHECK(f[0].message.find("100 collectives") != std::string::npos);
  // Fewer than the configured minimum per step: no finding.
  ttap::RuleOptions o;
  o.values["comm_min_per_step"] = 200;
  CHECK(FindingsWithCode(*trace, "TTA012", o).empty());
}

TEST_CASE("TTA012: graph-launched collectives pay no launch of their own", "[rules][TTA012]") {
  // A step replayed as a CUDA graph, recorded without its ops: one 4 ms cudaGraphLaunch call
  // starts 100 small collectives (each recorded against that call) beside the step's GEMMs.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double gts = base + 50;
    for (int k = 0; k < 100; ++k) {
      t.Launch(kAllReduce, base + 10, 4000, gts, 5, "kernel", 20, "cudaGraphLaunch");
      t.Launch("sm90_xmma_gemm_bf16bf16_bf16f32", base + 10, 4000, gts + 6, 20, "kernel", 7,
               "cudaGraphLaunch");
      gts += 27;
    }
    t.Step(s, base, gts + 20 - base);
    base = gts + 40;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA012");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("launch_overhead_us").number == 0);
  CHECK(f[0].message.find("graph-launched") != std::string::npos);
  CHECK(f[0].message.find("to launch each") == std::string::npos);
}

TEST_CASE("TTA012: collectives on the compute stream", "[rules][TTA012]") {
  auto trace = DdpSteps(2, 800, 2000, /*stream=*/7).Load();
  auto f = FindingsWithCode(*trace, "TTA012");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("same_stream_collectives").number == 6);
  // Launch overhead (2 x 10 us) plus the exposed 1600 us, per step.
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(1620).margin(3));
  // Replayed bucketing: the second call's fixed latency and its CPU side are paid once per
  // step, and the next step follows sooner. An 800 us all-reduce moves data: its latency is at
  // most 100 us, not 80% of the call (640 us, which credited bucketing with 1.07 ms a step:
  // two large collectives bucketed into one still move the same bytes).
  CHECK(f[0].time_lost_us_per_step == Approx(166.7).margin(5));
  CHECK(f[0].time_lost_us_per_step < FindingsWithCode(*trace, "TTA011")[0].time_lost_us_per_step);
  CHECK(f[0].message.find("compute stream") != std::string::npos);
}

TEST_CASE("TTA012: collectives belong to the step that launched them, wherever they ran",
          "[rules][TTA012]") {
  // Step 0 launches 100 all_reduces of 20 us from 1500 us; the comm stream runs them back to
  // back until 3510, past step 1's start at 3000. All 100 are step 0's (by the old reading of GPU
  // time, 75; the 25 that ran in step 1 were nobody's call overhead).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Cpu("autograd::engine::evaluate_function: MmBackward0", 1001, 2);
  t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16", 1010, 5, 1020, 400);
  double gts = 1510;
  for (int k = 0; k < 100; ++k) {
    AllReduce(t, 1500 + 10 * k, gts, 20, 20, 5);
    gts += 20;
  }
  t.Step(0, 1000, 2000);
  t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16", 3010, 5, 3600, 400);
  t.Step(1, 3000, 2000);
  auto f = FindingsWithCode(*t.Load(), "TTA012");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("collectives").number == 100);
  CHECK(f[0].step_ids == std::vector<int64_t>{0});
}

TEST_CASE("TTA012: a few bucketed collectives on their own stream are fine", "[rules][TTA012]") {
  auto trace = DdpSteps(4, 300, 100).Load();
  CHECK(FindingsWithCode(*trace, "TTA012").empty());
  auto exposed = DdpSteps(2, 800, 2000).Load();  // TTA011's business, not TTA012's
  CHECK(FindingsWithCode(*exposed, "TTA012").empty());
}

TEST_CASE("TTA012: an inference run's per-layer collectives are not bucketed", "[rules][TTA012]") {
  // Tensor-parallel inference: 100 all-reduces per forward on the compute stream, each after its
  // layer's GEMM, and no backward anywhere. As training (one per parameter) TTA012 fires; in a
  // forward each carries one layer's output to the next, so none could wait to be bucketed with
  // another: TTA011 reports their exposed time, with the fixes inference has.
  CHECK(FindingsWithCode(*DdpSteps(100, 30, 2000, 7, /*training=*/true).Load(), "TTA012").size() ==
        1);
  auto trace = DdpSteps(100, 30, 2000, 7, /*training=*/false).Load();
  CHECK(FindingsWithCode(*trace, "TTA012").empty());
  auto exposed = FindingsWithCode(*trace, "TTA011");
  REQUIRE(exposed.size() == 1);
  CHECK(exposed[0].message.find("the run has no backward") != std::string::npos);
  CHECK(exposed[0].message.find("two-batch") == std::string::npos);
  CHECK(exposed[0].message.find("second micro-batch") != std::string::npos);
  // A training run's exposed collectives keep DDP's advice (docs), not inference's.
  auto ddp = FindingsWithCode(*DdpSteps(2, 800, 2000).Load(), "TTA011");
  REQUIRE(ddp.size() == 1);
  CHECK(ddp[0].message.find("no backward") == std::string::npos);
}

// ---- real traces ----

TEST_CASE("real traces: NCCL all_reduce after the backward pass is exposed",
          "[rules][TTA011][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  auto files = RealTraces("hta--nccl_parser_config");
  REQUIRE(files.size() == 1);
  auto fs = RealFindings(files[0]);
  bool found = false;
  for (const auto& f : fs) {
    if (f.code == "TTA011" && f.evidence.count("op") &&
        f.evidence.at("op").text == "nccl:all_reduce") {
      found = true;
    }
  }
  CHECK(found);
}

TEST_CASE("real traces: ROCm, MTIA and CPU-only traces give no comm findings",
          "[rules][TTA011][TTA012][real]") {
  // (CPU-only: no GPU collectives; its gloo all-reduces are the test below.)
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  std::vector<std::string> files;
  for (const char* prefix : {"tracelens--mi300", "hta--mtia", "hta--cpu_only", "hta--amd_trace"}) {
    auto f = RealTraces(prefix);
    REQUIRE_FALSE(f.empty());
    files.insert(files.end(), f.begin(), f.end());
  }
  for (const auto& path : files) {
    INFO(path);
    auto fs = RealFindings(path);
    if (path.find("hta--cpu_only") == std::string::npos) CHECK(CountCode(fs, "TTA011") == 0);
    CHECK(CountCode(fs, "TTA012") == 0);
  }
}

TEST_CASE("real traces: a CPU-only DDP job waits for gloo's all-reduce", "[rules][TTA011][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  // HTA's CPU-only DDP trace, five steps: each backward computes for ~15 ms while two gloo
  // threads all-reduce its buckets for ~170 ms; the main thread waits.
  const std::string path = ttap_test::RealTracesDir() +
                           "/hta--cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace@older.json.gz";
  auto loaded = ttap::LoadTrace(path);
  REQUIRE(loaded.ok());
  auto result = ttap::RunRules(**loaded, {});
  const auto& t = result.time.overall;
  CHECK(t.ns[static_cast<int>(ttap::Cause::kCommunication)] > 0.7 * t.total());
  const ttap::Finding* comm = nullptr;
  for (const auto& f : result.findings) {
    if (f.code == "TTA011") comm = &f;
  }
  REQUIRE(comm != nullptr);
  INFO(comm->message);
  CHECK(comm->severity == ttap::Severity::kWarning);
  CHECK(comm->evidence.at("op").text == "gloo:all_reduce");
  CHECK(comm->message.find("fp16_compress_hook") != std::string::npos);
}

TEST_CASE("real traces: no per-parameter collectives in the shared traces",
          "[rules][TTA012][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  // Every distributed trace here buckets its collectives on NCCL's own streams.
  for (const char* prefix : {"hta--nccl_parser_config", "hta--negative_queue", "param--dlrm",
                             "hta--timeline_analysis"}) {
    for (const auto& path : RealTraces(prefix)) {
      INFO(path);
      CHECK(CountCode(RealFindings(path), "TTA012") == 0);
    }
  }
}

TEST_CASE(
    "TTA011: tensor parallelism's all-reduces between layers (vLLM's custom all-reduce) hide "
    "behind each layer's compute",
    "[rules][TTA011]") {
  // One inference step: 8 layers of 400 us of GEMM, each followed on the same stream by a
  // 100 us vllm::cross_device_reduce_1stage. Overlapped with the layers (async tensor
  // parallelism), all 800 us of communication hide.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double cpu = 1010, gpu = 1050;
  for (int layer = 0; layer < 8; ++layer) {
    t.Cpu("aten::linear", cpu, 8);
    t.Kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", cpu + 1, 5, gpu, 400);
    gpu += 400;
    t.Cpu("vllm::all_reduce", cpu + 10, 8);
    t.Kernel("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 4>(vllm::RankData*)", cpu + 11,
             5, gpu, 100);
    gpu += 100;
    cpu += 20;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, gpu - cpu + 2);
  t.Step(1, 1000, gpu + 10 - 1000);
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA011");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].evidence.at("collectives").number == 8);
  CHECK(f[0].time_lost_us_per_step == Approx(800).epsilon(0.05));
}

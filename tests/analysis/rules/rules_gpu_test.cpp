// Rule tests for TTA007 launch-bound, TTA009 no-tensor-cores and TTA010 layout-conversion: tiny
// inline traces (positive and negative for each), then the shared real traces (skipped when
// ../shared is absent).
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "analysis/load/trace_loader.h"
#include "analysis/rules/gpu_detectors.h"
#include "analysis/tiny_trace.h"
#include "test_support.h"

using ttap_test::CountCode;
using ttap_test::ExactWhatIfs;
using ttap_test::FindingsWithCode;
using ttap_test::RealFindings;
using ttap_test::RealTraces;
using ttap_test::TinyTrace;

namespace {

// Three steps, each: |kernels| kernels launched back to back inside Optimizer.step (one
// aten::add_ per kernel), each launch taking 10 us on the CPU and its kernel |kernel_us| on the
// GPU, starting when the launch returns. Then one long matmul.
TinyTrace LaunchLoop(int kernels, double kernel_us, const std::string& runtime = "cudaLaunchKernel",
                     int break_every = 0, int last_step_kernels = -1) {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10;
    double gpu_free = 0;
    const double opt_start = cpu;
    const int step_kernels = s == 2 && last_step_kernels >= 0 ? last_step_kernels : kernels;
    for (int k = 0; k < step_kernels; ++k) {
      const bool long_kernel = break_every > 0 && k % break_every == break_every - 1;
      const double dur = long_kernel ? 30 : kernel_us;
      t.Cpu("aten::add_", cpu, 12);
      const double gts = std::max(cpu + 11, gpu_free);
      t.Launch("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>()",
               cpu + 1, 10, gts, dur, "kernel", 7, runtime);
      gpu_free = gts + dur;
      cpu += 13;
    }
    t.Cpu("Optimizer.step#SGD.step", opt_start - 1, cpu - opt_start, "user_annotation");
    t.Cpu("aten::mm", cpu, 12);
    const double mm_start = std::max(cpu + 11, gpu_free);
    t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16", cpu + 1, 10, mm_start,
             500);
    const double end = mm_start + 500 + 20;
    t.Step(s, base, end - base);
    base = end;
  }
  return t;
}

// One step of |n| GEMM/conv kernels of |name| (1 ms each) launched by |op|, then an elementwise
// kernel, on device |device_name| with compute capability |major|.|minor| (none when major < 0).
TinyTrace MatrixSteps(const std::string& name, const std::string& op, int major, int minor,
                      const std::string& device_name = "Tesla V100-SXM2-32GB", int n = 4) {
  TinyTrace t;
  if (major >= 0) t.Device(0, device_name, major, minor);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, gpu = base + 30;
    for (int k = 0; k < n; ++k) {
      t.Cpu(op, cpu, 15);
      t.Kernel(name, cpu + 2, 10, gpu, 1000);
      cpu += 20;
      gpu += 1000;
    }
    t.Cpu("aten::relu", cpu, 15);
    t.Kernel("void at::native::vectorized_elementwise_kernel<4, relu>()", cpu + 2, 10, gpu, 200);
    gpu += 200;
    const double end = gpu + 20;
    t.Step(s, base, end - base);
    base = end;
  }
  return t;
}

}  // namespace

// ---- TTA007 launch-bound ----

TEST_CASE("TTA007: a burst of kernels shorter than their launches is launch-bound",
          "[rules][TTA007]") {
  auto trace = LaunchLoop(/*kernels=*/40, /*kernel_us=*/2).Load();
  // The burst's kernels are TTA007's; TTA017 (CPU-overhead-bound) speaks only of the rest of
  // the step's dispatch.
  // The fix's arithmetic on hand-written durations: the profiler's own cost is not taken out.
  ttap::RuleOptions bursts = ExactWhatIfs();
  auto f = FindingsWithCode(*trace, "TTA007", bursts);
  REQUIRE(f.size() == 1);
  for (const auto& o : FindingsWithCode(*trace, "TTA017", bursts)) {
    for (int32_t r : o.rows) CHECK(std::count(f[0].rows.begin(), f[0].rows.end(), r) == 0);
  }
  CHECK(f[0].name == "launch-bound");
  CHECK(f[0].fix == "cuda-graphs-or-compile");
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2});
  // The idle time per kernel, and its sum over the step (a mean alone read as the total).
  INFO(f[0].message);
  CHECK(f[0].message.find("us after each, 0.4") != std::string::npos);
  CHECK(f[0].message.find(" a step") != std::string::npos);
  // Kernels start every 13 us and run 2 us: 11 us idle in each of the 39 gaps of a step.
  // The replay under CUDA graphs alone: close to the 39 x 11 us of GPU idle the detector sees.
  CHECK(f[0].evidence.at("saving_alone_us_per_step").number == Approx(39 * 11).epsilon(0.1));
  CHECK(f[0].evidence.at("short_kernels").number == 120);
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "Optimizer.step#SGD.step");
  CHECK(f[0].message.find("kernels shorter than their launches") != std::string::npos);
  CHECK(f[0].message.find("Optimizer.step#SGD.step") != std::string::npos);
  // These are the single-tensor optimizer's kernels: TTA006 (foreach) is the cause and claims
  // the time; the launch-bound burst is its symptom and claims only what is left after it.
  auto opt = FindingsWithCode(*trace, "TTA006", bursts);
  REQUIRE(opt.size() == 1);
  // (One launch for the kind: the region's 520 us of CPU shrinks to 1/40.)
  CHECK(opt[0].time_lost_us_per_step == Approx(520.0 * 39 / 40).margin(20));
  CHECK(opt[0].severity == ttap::Severity::kWarning);
  CHECK(f[0].evidence.at("symptom_of").text == "TTA006");
  CHECK(f[0].time_lost_us_per_step < 0.1 * opt[0].time_lost_us_per_step);
  CHECK(f[0].message.find("after TTA006's fix") != std::string::npos);
  // The same burst outside any optimizer region is launch-bound alone: TTA007 claims it.
  ttap::RuleOptions no_opt = bursts;
  no_opt.values["disable_TTA006"] = 1;
  auto alone = FindingsWithCode(*trace, "TTA007", no_opt);
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].time_lost_us_per_step == Approx(39 * 11).epsilon(0.1));
  CHECK(alone[0].severity == ttap::Severity::kWarning);
}

TEST_CASE("TTA007: its message counts every step's bursts, not the last step's",
          "[rules][TTA007]") {
  // 40, 40 and 10 short kernels in the three steps: 30 a step. A TensorRT validation loop's
  // message gave its last step's 8 kernels and 0.009 ms where its 10 steps held 216 kernels and
  // 0.26 ms a step of idle time.
  auto trace = LaunchLoop(/*kernels=*/40, /*kernel_us=*/2, "cudaLaunchKernel", 0, 10).Load();
  auto f = FindingsWithCode(*trace, "TTA007", ExactWhatIfs());
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].evidence.at("short_kernels").number == 90);
  CHECK(f[0].message.find("30 kernels in 1 burst(s) a step") != std::string::npos);
}

TEST_CASE("TTA007: kernels longer than their launches are not launch-bound", "[rules][TTA007]") {
  auto trace = LaunchLoop(40, /*kernel_us=*/25).Load();
  CHECK(FindingsWithCode(*trace, "TTA007").empty());
}

TEST_CASE("TTA007: short runs below the burst length and CUDA graphs are not flagged",
          "[rules][TTA007]") {
  // Every 6th kernel is long: runs of 5 short kernels, below the default burst of 8. The burst
  // detector stays silent; the loop is still bound by the CPU's dispatch on its critical path:
  // the single-tensor optimizer's kernels, which TTA006 reports (TTA017 leaves them to it), and
  // without TTA006 TTA017 reports the optimizer's region, unless it is turned off too.
  auto broken = LaunchLoop(40, 2, "cudaLaunchKernel", /*break_every=*/6).Load();
  CHECK(FindingsWithCode(*broken, "TTA007").empty());
  CHECK(FindingsWithCode(*broken, "TTA006").size() == 1);
  // (The GEMM after the optimizer step is a region of its own: the step's eager ops.)
  auto optimizer_region = [](const std::vector<ttap::Finding>& fs) {
    std::vector<ttap::Finding> out;
    for (const auto& f : fs) {
      if (f.cause_key == "the optimizer step") out.push_back(f);
    }
    return out;
  };
  CHECK(optimizer_region(FindingsWithCode(*broken, "TTA017")).empty());
  ttap::RuleOptions no_opt;
  no_opt.values["disable_TTA006"] = 1;
  auto overhead = optimizer_region(FindingsWithCode(*broken, "TTA017", no_opt));
  CHECK(overhead.size() == 1);
  ttap::RuleOptions off = no_opt;
  off.values["cpu_overhead_path_share"] = 2;  // never
  CHECK(FindingsWithCode(*broken, "TTA017", off).empty());
  ttap::RuleOptions o;
  o.values["launch_bound_min_burst"] = 4;
  REQUIRE(FindingsWithCode(*broken, "TTA007", o).size() == 1);
  CHECK(FindingsWithCode(*broken, "TTA007", o)[0].cause_key ==
        "launch-bound Optimizer.step#SGD.step");
  // Kernels from graph launches: graphs are the fix, not the problem.
  auto graphs = LaunchLoop(40, 2, "cudaGraphLaunch").Load();
  CHECK(FindingsWithCode(*graphs, "TTA007").empty());
}

TEST_CASE("TTA007: the share threshold is configurable", "[rules][TTA007]") {
  auto trace = LaunchLoop(40, 2).Load();
  ttap::RuleOptions o;
  o.values["launch_bound_share"] = 0.9;
  o.values["launch_bound_cpu_share"] = 0.9;
  CHECK(FindingsWithCode(*trace, "TTA007", o).empty());
}

TEST_CASE("TTA007: a burst queued behind GPU work is a candidate by its CPU time",
          "[rules][TTA007]") {
  // Per step: a 2 ms GEMM is queued first, then 40 tiny kernels launched 13 us apart run back
  // to back behind it: the GPU never idles between them, but their launching holds the CPU for
  // 0.5 ms of a ~2.6 ms step. A candidate (the replay says what graphs would save), unless the
  // CPU share is set above it.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    t.Cpu("aten::mm", base + 5, 12);
    t.Kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16", base + 6, 10, base + 20,
             2000);
    double cpu = base + 30, gpu = base + 2021;
    for (int k = 0; k < 40; ++k, cpu += 13, gpu += 3) {
      t.Cpu("aten::add_", cpu, 12);
      t.Launch("void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>()", cpu + 1,
               10, gpu, 2, "kernel", 7);
    }
    t.Runtime("cudaStreamSynchronize", cpu, gpu - cpu + 5);
    t.Step(s, base, gpu + 10 - base);
    base = gpu + 20;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA007");
  REQUIRE(f.size() == 1);
  CHECK(f[0].cause_key == "launch-bound aten::add_");
  // 1 us between kernels: 39 us per step, under the 5% of idle the burst rule asks for.
  CHECK(f[0].evidence.at("gpu_idle_between_us").number == Approx(3 * 39).margin(3));
  ttap::RuleOptions o;
  o.values["launch_bound_cpu_share"] = 0.5;
  CHECK(FindingsWithCode(*trace, "TTA007", o).empty());
}

// ---- TTA009 no-tensor-cores ----

TEST_CASE("TTA009: fp32 SIMT GEMMs on a V100 suggest fp16 autocast", "[rules][TTA009]") {
  auto trace = MatrixSteps("volta_sgemm_128x64_nt", "aten::addmm", 7, 0).Load();
  auto f = FindingsWithCode(*trace, "TTA009");
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "no-tensor-cores");
  CHECK(f[0].fix == "enable-tf32-or-amp");
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "aten::addmm");
  // 4 ms of fp32 GEMM per step on a V100, whose fp16 tensor cores run ~8x the fp32 rate: each
  // 1 ms kernel takes 125 us + the 15 us floor, so 4 x 860 us are saved.
  CHECK(f[0].time_lost_us_per_step == Approx(4 * 860).margin(1));
  CHECK(f[0].evidence.at("precision").text == "fp16");
  CHECK(f[0].evidence.at("arch").text == "sm_70");
  CHECK(f[0].evidence.at("tensor_core_ratio").number == Approx(8.0));  // the 3 steps' mean
  CHECK(f[0].severity == ttap::Severity::kError);
  REQUIRE_FALSE(f[0].top_events.empty());
  CHECK(f[0].top_events[0].name == "volta_sgemm_128x64_nt");
  // The GPU has tensor cores; these kernels do not use them.
  CHECK(f[0].message.find("(Tesla V100-SXM2-32GB), not on its tensor cores") != std::string::npos);
}

TEST_CASE("TTA009: one fix, one finding: the fp32 GEMMs of every op, anchored at the costliest",
          "[rules][TTA009]") {
  // An MLP's step: the forward's aten::addmm (two 1 ms fp32 GEMMs), the backward's aten::mm
  // (four). Autocast moves all of them to tensor cores: one finding, its saving theirs together
  // (it had been one per op, neither saying what they lose together).
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060 Ti", 8, 6);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, gpu = base + 30;
    for (int k = 0; k < 6; ++k) {
      const char* op = k < 2 ? "aten::addmm" : "aten::mm";
      t.Cpu(op, cpu, 15);
      t.Kernel(k < 2 ? "ampere_sgemm_128x128_tn" : "cutlass_80_simt_sgemm_256x128_8x4_nn_align1",
               cpu + 2, 10, gpu, 1000);
      cpu += 20;
      gpu += 1000;
    }
    const double end = gpu + 20;
    t.Step(s, base, end - base);
    base = end;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA009");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "aten::mm");  // 4 ms of the 6
  CHECK(f[0].evidence.at("op").text == "aten::mm, aten::addmm");
  CHECK(f[0].evidence.at("fp32_kernels").number == 18);  // the 3 steps'
  CHECK(f[0].share_of_step > 0.4);
}

TEST_CASE("TTA009: fp32 convolutions on an A100 suggest TF32, the speedup is configurable",
          "[rules][TTA009]") {
  auto trace =
      MatrixSteps("void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false>(int)",
                  "aten::cudnn_convolution", 8, 0, "NVIDIA A100-SXM4-80GB")
          .Load();
  auto f = FindingsWithCode(*trace, "TTA009");
  REQUIRE(f.size() == 1);
  CHECK(trace->Name(f[0].anchor_row) == "aten::cudnn_convolution");
  CHECK(f[0].evidence.at("precision").text == "tf32");
  CHECK(f[0].top_events[0].name == "implicit_convolve_sgemm");
  ttap::RuleOptions o;
  o.values["tensor_core_speedup"] = 4.0;
  auto f4 = FindingsWithCode(*trace, "TTA009", o);
  REQUIRE(f4.size() == 1);
  // Each 1 ms kernel at 4x plus the 15 us floor: 265 us.
  CHECK(f4[0].time_lost_us_per_step == Approx(4 * 735).margin(1));
}

TEST_CASE("TTA009: on a GeForce card, which runs TF32 at its fp32 rate, only bf16 is advised",
          "[rules][TTA009]") {
  // An RTX 3060 Ti (sm_86): fp16/bf16 with fp32 accumulation runs ~2x its fp32 pipe, TF32 no
  // faster (a book's fp32 training loop was told to turn TF32 on).
  auto trace =
      MatrixSteps("ampere_sgemm_128x64_tn", "aten::addmm", 8, 6, "NVIDIA GeForce RTX 3060 Ti")
          .Load();
  auto f = FindingsWithCode(*trace, "TTA009");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].evidence.at("precision").text == "bf16");
  CHECK(f[0].evidence.at("tensor_core_ratio").number == Approx(2.0));
  CHECK(f[0].message.find("allow_tf32") == std::string::npos);
  CHECK(f[0].message.find("bf16 autocast") != std::string::npos);
  // An A10 (sm_86, a datacenter part) runs TF32 at twice its fp32 rate: TF32 is advised.
  auto a10 = FindingsWithCode(
      *MatrixSteps("ampere_sgemm_128x64_tn", "aten::addmm", 8, 6, "NVIDIA A10").Load(), "TTA009");
  REQUIRE(a10.size() == 1);
  CHECK(a10[0].evidence.at("precision").text == "tf32");
  CHECK(a10[0].message.find("allow_tf32") != std::string::npos);
}

TEST_CASE("TTA009: where other convolutions run TF32 already, only bf16 autocast is advised",
          "[rules][TTA009]") {
  // An A40 training loop: cuDNN's default allow_tf32 runs most convolutions on TF32 kernels,
  // but picks an fp32 SIMT kernel for one shape. Advising to enable TF32 is advising what is on.
  auto loop = [](bool tf32_elsewhere) {
    TinyTrace t = MatrixSteps("cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>",
                              "aten::convolution_backward", 8, 6, "NVIDIA A40");
    if (tf32_elsewhere) {
      t.Cpu("aten::cudnn_convolution", 50000, 15);
      t.Kernel("sm86_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw", 50002, 10, 50030,
               1000);
    }
    return t.Load();
  };
  auto on = FindingsWithCode(*loop(true), "TTA009");
  REQUIRE(!on.empty());
  INFO(on[0].message);
  CHECK(on[0].message.find("TF32 is on already") != std::string::npos);
  CHECK(on[0].message.find("allow_tf32") == std::string::npos);
  auto off = FindingsWithCode(*loop(false), "TTA009");
  REQUIRE(!off.empty());
  CHECK(off[0].message.find("allow_tf32") != std::string::npos);
}

TEST_CASE("TTA009: an fp32 GEMM beside a GPU-bound step saves little, and says why",
          "[rules][TTA009]") {
  // Per step a 10 ms elementwise kernel and, beside it on another stream, a 300 us fp32 GEMM on
  // a V100: tensor cores save nothing of the step. The hint said "GPU-bound: ... so this costs
  // little here", backwards for a fix that makes GPU kernels faster: those kernels are a small part
  // of the path.
  TinyTrace t;
  t.Device(0, "Tesla V100-SXM2-32GB", 7, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    t.Cpu("aten::mul", base + 10, 15);
    t.Kernel("void at::native::vectorized_elementwise_kernel<4, mul>()", base + 12, 10, base + 30,
             10000);
    t.Cpu("aten::addmm", base + 30, 15);
    t.Kernel("volta_sgemm_128x64_nt", base + 32, 10, base + 100, 300, /*stream=*/8);
    const double end = base + 10060;
    t.Step(s, base, end - base);
    base = end;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA009");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].severity == ttap::Severity::kHint);
  CHECK(f[0].message.find("these kernels are a small part of the critical path") !=
        std::string::npos);
  CHECK(f[0].message.find("GPU-bound") == std::string::npos);
}

TEST_CASE("TTA009: without device properties the architecture comes from kernel names",
          "[rules][TTA009]") {
  auto volta = MatrixSteps("volta_scudnn_128x128_stridedB_splitK_medium_nn_v1",
                           "aten::cudnn_convolution", -1, -1)
                   .Load();
  auto f = FindingsWithCode(*volta, "TTA009");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("arch").text == "sm_70");
  // No architecture hint at all: tensor cores may not exist, stay silent.
  auto unknown = MatrixSteps("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>()",
                             "aten::cudnn_convolution_backward_input", -1, -1)
                     .Load();
  CHECK(FindingsWithCode(*unknown, "TTA009").empty());
}

TEST_CASE("TTA009: tensor-core kernels, pre-Volta GPUs and ROCm give no finding",
          "[rules][TTA009]") {
  const char* tensor_core_kernels[] = {
      "volta_h884gemm_128x128_ldg8_nn",
      "sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16",
      "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
      "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
      "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_32x1_nn>(P)",
      "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw",
  };
  for (const char* k : tensor_core_kernels) {
    INFO(k);
    auto trace = MatrixSteps(k, "aten::mm", 8, 0, "NVIDIA A100-SXM4-80GB").Load();
    CHECK(FindingsWithCode(*trace, "TTA009").empty());
  }
  // Pascal has no tensor cores.
  auto pascal = MatrixSteps("maxwell_sgemm_128x64_nt", "aten::mm", 6, 0, "Tesla P100").Load();
  CHECK(FindingsWithCode(*pascal, "TTA009").empty());
  // ROCm: MFMA kernels are named differently; the rule stays silent.
  auto rocm = MatrixSteps("Cijk_Ailk_Bljk_SB_MT64x64x16_MI16x16x4x1_SN", "aten::mm", 9, 4,
                          "AMD Instinct MI300X")
                  .Load();
  CHECK(FindingsWithCode(*rocm, "TTA009").empty());
  auto rocm_sgemm =
      MatrixSteps("volta_sgemm_128x64_nt", "aten::mm", 9, 4, "AMD Instinct MI300X").Load();
  CHECK(FindingsWithCode(*rocm_sgemm, "TTA009").empty());
  // Elementwise fp32 kernels are no matrix kernels.
  auto elementwise =
      MatrixSteps("void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>()",
                  "aten::add", 7, 0)
          .Load();
  CHECK(FindingsWithCode(*elementwise, "TTA009").empty());
}

// ---- TTA010 layout-conversion ----

namespace {

// Three steps of convolutions; each launches |pre| then the conv kernel then |post|.
TinyTrace ConvSteps(const std::string& pre, const std::string& post,
                    const std::string& conv_op = "aten::cudnn_convolution") {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, gpu = base + 40;
    for (int k = 0; k < 3; ++k) {
      t.Cpu(conv_op, cpu, 40);
      if (!pre.empty()) {
        t.Kernel(pre, cpu + 2, 5, gpu, 100);
        gpu += 100;
      }
      t.Kernel("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc", cpu + 10, 5, gpu,
               500);
      gpu += 500;
      if (!post.empty()) {
        t.Kernel(post, cpu + 20, 5, gpu, 60);
        gpu += 60;
      }
      cpu += 45;
    }
    const double end = gpu + 20;
    t.Step(s, base, end - base);
    base = end;
  }
  return t;
}

}  // namespace

TEST_CASE("TTA010: NCHW<->NHWC conversion kernels around convolutions", "[rules][TTA010]") {
  auto trace =
      ConvSteps(
          "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, "
          "(cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float "
          "const*, float*)",
          "void cudnn::engines_precompiled::nhwcToNchwKernel<float, float, float, true, "
          "false, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nhwc2nchw_params_t)")
          .Load();
  auto f = FindingsWithCode(*trace, "TTA010");
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "layout-conversion");
  CHECK(f[0].fix == "channels-last");
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "aten::cudnn_convolution");
  // 3 x (100 + 60) us of conversions per step.
  CHECK(f[0].time_lost_us_per_step == Approx(480).margin(5));  // replayed
  CHECK(f[0].evidence.at("conversions").number == 18);
  CHECK(f[0].top_events.size() == 2);
}

TEST_CASE("TTA010: transposes count only when a convolution launches them", "[rules][TTA010]") {
  auto conv = ConvSteps("batched_transpose_32x32_half", "", "aten::miopen_convolution").Load();
  auto f = FindingsWithCode(*conv, "TTA010");
  REQUIRE(f.size() == 1);
  CHECK(f[0].time_lost_us_per_step == Approx(300).margin(5));  // replayed
  auto other = ConvSteps("batched_transpose_32x32_half", "", "aten::bmm").Load();
  CHECK(FindingsWithCode(*other, "TTA010").empty());
}

// After each channels_last convolution a forward hook calls .contiguous() (or a convolution makes
// its NCHW input channels_last): a strided copy that only the recorded strides and memory format
// show to be a layout conversion (record_shapes). A copy of a transposed matrix is none.
TinyTrace ContiguousSteps(const std::string& strides, const std::string& format) {
  TinyTrace t;
  t.Device(0, "NVIDIA H200", 9, 0);
  double base = 1000;
  const std::string args =
      "\"Input Strides\": [" + strides + ", []], \"Concrete Inputs\": [\"\", \"" + format + "\"]";
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, gpu = base + 40;
    for (int k = 0; k < 3; ++k) {
      t.Cpu("aten::cudnn_convolution", cpu, 20);
      t.Kernel("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc", cpu + 5, 5, gpu,
               500);
      gpu += 500;
      t.Cpu("aten::contiguous", cpu + 22, 20, "cpu_op", 1, args);
      t.Cpu("aten::clone", cpu + 23, 18);
      t.Cpu("aten::copy_", cpu + 25, 14);
      t.Kernel(
          "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
          "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}>(at::"
          "TensorIteratorBase&, {lambda()#3} const&)::{lambda(int)#1}>(int, {lambda(int)#1})",
          cpu + 27, 5, gpu, 150);
      gpu += 150;
      cpu += 45;
    }
    const double end = gpu + 20;
    t.Step(s, base, end - base);
    base = end;
  }
  return t;
}

TEST_CASE("TTA010: a .contiguous() that the recorded strides show converts the layout",
          "[rules][TTA010]") {
  // channels_last strides of a 64x512x7x7 tensor made contiguous (memory format 0).
  auto to_nchw = ContiguousSteps("[25088, 1, 3584, 512]", "0").Load();
  auto f = FindingsWithCode(*to_nchw, "TTA010", ExactWhatIfs());
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("conversions").number == 9);
  CHECK(f[0].time_lost_us_per_step == Approx(3 * 150).margin(10));
  // NCHW strides asked to become channels_last (memory format 2): a conversion too.
  CHECK(FindingsWithCode(*ContiguousSteps("[25088, 49, 7, 1]", "2").Load(), "TTA010").size() == 1);
  // A transposed matrix made contiguous, or an NCHW tensor kept NCHW: no layout conversion.
  CHECK(FindingsWithCode(*ContiguousSteps("[1, 4096]", "0").Load(), "TTA010").empty());
  CHECK(FindingsWithCode(*ContiguousSteps("[25088, 49, 7, 1]", "0").Load(), "TTA010").empty());
}

TEST_CASE("TTA010: channels-last convolutions give no finding", "[rules][TTA010]") {
  auto trace = ConvSteps("", "").Load();
  CHECK(FindingsWithCode(*trace, "TTA010").empty());
  // Conversions below the share threshold are not reported.
  auto small = ConvSteps("void cudnn::ops::nchwToNhwcKernel<float>()", "").Load();
  ttap::RuleOptions o;
  o.values["layout_conversion_share"] = 0.5;
  CHECK(FindingsWithCode(*small, "TTA010", o).empty());
}

// ---- real traces ----

// The fp32 kernels are there (the detector measures over 10% of the step in them). The
// num_workers=0 runs are CPU-bound (data loading, per-parameter optimizer): faster GEMMs save
// almost nothing there, and the findings are not warnings. With four workers the GEMMs and
// convolutions are 41% of one run's critical path, and fp16 on the V100's tensor cores saves a
// quarter of it.
TEST_CASE("real traces: the fp32 ResNet-50 runs on a V100 show TTA009", "[rules][TTA009][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  auto files = RealTraces("kineto--resnet50");
  REQUIRE(files.size() == 4);
  for (const auto& path : files) {
    INFO(path);
    auto fs = RealFindings(path);
    bool conv_anchor = false;
    double share = 0, detected_us = 0;
    for (const auto& f : fs) {
      if (f.code != "TTA009") continue;
      share += f.share_of_step;
      detected_us += f.evidence.at("detected_us_per_step").number;
      if (path.find("num_workers_0") != std::string::npos) {
        CHECK((f.severity == ttap::Severity::kInfo || f.severity == ttap::Severity::kHint));
      }
      CHECK(f.evidence.at("precision").text == "fp16");
      if (f.evidence.count("op") &&
          f.evidence.at("op").text.find("cudnn_convolution") != std::string::npos) {
        conv_anchor = true;
      }
    }
    CHECK(conv_anchor);
    CHECK(detected_us > 5000);  // over 5 ms of fp32 GEMM time per ~150 ms step
    CHECK(share < (path.find("num_workers_0") != std::string::npos ? 0.05 : 0.3));
  }
}

TEST_CASE("real traces: bf16 H100 inference uses tensor cores (no TTA009)",
          "[rules][TTA009][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  auto files = RealTraces("tracelens--h100");
  REQUIRE(files.size() == 5);
  for (const auto& path : files) {
    INFO(path);
    CHECK(CountCode(RealFindings(path), "TTA009") == 0);
  }
}

TEST_CASE("real traces: ROCm, MTIA and CPU-only traces give no false GPU-rule findings",
          "[rules][TTA007][TTA009][TTA010][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  // ROCm: no NVIDIA tensor-core advice. (Launch-bound bursts and MIOpen's NCHW->NHWC transposes
  // around convolutions are real on ROCm too.)
  auto rocm = RealTraces("tracelens--mi300");
  REQUIRE(rocm.size() == 6);
  for (const auto& path : rocm) {
    INFO(path);
    auto fs = RealFindings(path);
    CHECK(CountCode(fs, "TTA009") == 0);
    for (const auto& f : fs) {
      if (f.code != "TTA010") continue;
      // Only transposes that MIOpen convolutions launch.
      REQUIRE(f.evidence.count("op"));
      CHECK(f.evidence.at("op").text.find("conv") != std::string::npos);
    }
  }
  auto others = RealTraces("hta--mtia");
  auto cpu = RealTraces("hta--cpu_only");
  REQUIRE(others.size() == 2);
  REQUIRE(cpu.size() == 2);
  others.insert(others.end(), cpu.begin(), cpu.end());
  for (const auto& path : others) {
    INFO(path);
    auto fs = RealFindings(path);
    CHECK(CountCode(fs, "TTA007") == 0);
    CHECK(CountCode(fs, "TTA009") == 0);
    CHECK(CountCode(fs, "TTA010") == 0);
  }
}

TEST_CASE("TTA007: bursts launched by different ops are separate findings", "[rules][TTA007]") {
  // Per step, 40 tiny adds, then (300 us later) 40 tiny fills: two bursts, two causes. One
  // finding for both would cost a symptom of one cause (zero_grad's fills, the optimizer's
  // updates) together with the other.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10;
    for (const char* op : {"aten::add_", "aten::fill_"}) {
      for (int k = 0; k < 40; ++k, cpu += 13) {
        t.Cpu(op, cpu, 12);
        t.Launch("void at::native::vectorized_elementwise_kernel<4, Functor<float>>()", cpu + 1, 10,
                 cpu + 8, 2, "kernel", 7);
      }
      cpu += 300;
    }
    t.Step(s, base, cpu + 20 - base);
    base = cpu + 40;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA007");
  REQUIRE(f.size() == 2);
  std::set<std::string> keys = {f[0].cause_key, f[1].cause_key};
  CHECK(keys == std::set<std::string>{"launch-bound aten::add_", "launch-bound aten::fill_"});
  for (const auto& x : f) CHECK(x.evidence.at("short_kernels").number == 3 * 40);
}

TEST_CASE("kernel names in messages: short forms say when they are cut", "[rules][TTA009]") {
  using ttap::gpu_detail::ShortKernelName;
  // cuBLAS's names end with what matters (ffma: fp32 SIMT); 80 characters cut "ffma" to "ffm".
  const std::string sgemm =
      "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4";
  CHECK(ShortKernelName("void " + sgemm + "<float>(Params)") == sgemm);
  // A generic wrapper keeps the kernel it wraps: "cutlass::Kernel2" alone named none.
  CHECK(ShortKernelName("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>("
                        "cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)") ==
        "cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>");
  CHECK(ShortKernelName("void at::native::vectorized_elementwise_kernel<4, at::native::Fn>(int)") ==
        "at::native::vectorized_elementwise_kernel");
  const std::string longer(130, 'k');
  CHECK(ShortKernelName(longer) == std::string(97, 'k') + "...");
}

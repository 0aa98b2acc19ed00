// Rule tests for TTA001 dataloader-stall, TTA002 host-sync, TTA008 gpu-idle (tiny inline traces,
// one positive and one negative each), plus RunRules' merging and window scores.
#include <algorithm>
#include <catch2/catch.hpp>
#include <utility>

#include "analysis/tiny_trace.h"

using ttap_test::FindingsWithCode;
using ttap_test::TinyTrace;

namespace {

// Three steps; in each, data loading for |load_us| at the start, then 30 kernels of 100 us
// launched back to back; the step ends 50 us after its last kernel. |sync_after_forward|: after
// the 20th kernel the CPU waits for the GPU (`.item()`), then logs for 1.5 ms. |sync_frames|
// (outer, inner): that wait is instead a bare cudaDeviceSynchronize inside these two Python
// frames, named "FILE(line): fn" as Kineto names them. The logging takes |log_us|;
// |log_statement|: the `.item()` and the logging are one Python statement
// (`pbar.set_postfix(loss=loss.item())`). |cpu_gap_us| of CPU work (|gap_name|, an event of
// |gap_category|) before the last 10 kernels idles the GPU.
TinyTrace TrainingLoop(double load_us, bool sync_after_forward = false, double cpu_gap_us = 0,
                       const std::pair<std::string, std::string>& sync_frames = {},
                       bool log_statement = false, double log_us = 1500,
                       const std::string& gap_name = "aten::nonzero_static_python_work",
                       const std::string& gap_category = "cpu_op") {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    if (load_us > 0) {
      t.Cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", base + 2, load_us);
    }
    double cpu = base + 5 + load_us;
    double gpu = cpu + 10;
    for (int k = 0; k < 20; ++k) {
      t.Kernel("volta_h884gemm_128x128_nn", cpu, 5, gpu, 100);
      cpu += 10;
      gpu += 100;
    }
    if (sync_after_forward) {
      if (log_statement) t.Python("train.py", 55, "log_loss", cpu - 1, gpu - cpu + 26 + log_us);
      if (sync_frames.first.empty()) {
        t.Cpu("aten::item", cpu, gpu - cpu + 20);
        t.Cpu("aten::_local_scalar_dense", cpu + 1, gpu - cpu + 18);
        t.Runtime("cudaStreamSynchronize", cpu + 2, gpu - cpu + 15);
      } else {
        t.Python(sync_frames.first, 821, "step", cpu, gpu - cpu + 20);
        t.Python(sync_frames.second, 751, "__enter__", cpu + 1, gpu - cpu + 18);
        t.Runtime("cudaDeviceSynchronize", cpu + 2, gpu - cpu + 15);
      }
      cpu = gpu + 25;
      t.Cpu("aten::add", cpu, log_us);  // the CPU logs before launching more work
      cpu += log_us;
      gpu = cpu + 10;
    }
    if (cpu_gap_us > 0) {
      t.Cpu(gap_name, cpu, cpu_gap_us, gap_category);
      cpu += cpu_gap_us;
      gpu = std::max(gpu, cpu + 10);
    }
    for (int k = 0; k < 10; ++k) {
      t.Kernel("volta_h884gemm_128x128_nn", cpu, 5, gpu, 100);
      cpu += 10;
      gpu += 100;
    }
    const double end = gpu + 50;
    t.Step(s, base, end - base);
    t.Python("train.py", 40, "<module>", base + 1, end - base - 2);
    base = end;
  }
  return t;
}

}  // namespace

TEST_CASE("TTA001: data loading that idles the GPU is found with its share", "[rules][TTA001]") {
  auto trace = TrainingLoop(/*load_us=*/4000).Load();
  auto f = FindingsWithCode(*trace, "TTA001");
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "dataloader-stall");
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2});
  // The GPU idles for the whole 4 ms load of each ~7 ms step.
  CHECK(f[0].share_of_step == Approx(4000.0 / 7065).margin(0.03));
  CHECK(f[0].time_lost_us_per_step == Approx(4000).margin(300));
  CHECK(f[0].severity == ttap::Severity::kError);  // over half of every step
  CHECK(f[0].fix == "dataloader-workers");
  CHECK(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row).find("DataLoader") != std::string_view::npos);
  CHECK_FALSE(f[0].window_indices.empty());
  CHECK(f[0].message.find("56.") != std::string::npos);
  // The message names the fix (a scan's reader has no hover): the loader runs in the main
  // process (_SingleProcessDataLoaderIter).
  INFO(f[0].message);
  CHECK(f[0].message.find("it loads in the main process (num_workers=0): "
                          "DataLoader(num_workers=N, pin_memory=True)") != std::string::npos);
}

TEST_CASE("TTA001: a marker around the last prof.step() only is not the step", "[rules][TTA001]") {
  // Profiled without a schedule: `with profile() as prof: train_one_step(); prof.step()` records
  // ProfilerStep#1 around the final step() call only (14 us), after all the work: 6 ms of data
  // loading, then 4 ms of forward, backward and optimizer ops; no GPU activity recorded.
  TinyTrace t;
  t.Cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 6000);
  for (int k = 0; k < 40; ++k) t.Cpu("aten::addmm", 6200 + 100 * k, 80);
  t.Step(1, 10300, 14);
  auto trace = t.Load();
  CHECK(trace->steps.empty());
  CHECK(trace->stats.step_markers_ignored == 1);
  auto f = FindingsWithCode(*trace, "TTA001");
  REQUIRE(f.size() == 1);
  CHECK(f[0].share_of_step == Approx(6000.0 / 10214).margin(0.03));
  CHECK(f[0].severity == ttap::Severity::kError);
  // No GPU activity: the loop waits, no GPU is said to idle.
  CHECK(f[0].message.find("the loop waits") != std::string::npos);
  CHECK(f[0].message.find("GPU idle") == std::string::npos);
  // Markers around the work are kept.
  TinyTrace kept;
  kept.Step(1, 50, 10300);
  kept.Cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 6000);
  for (int k = 0; k < 40; ++k) kept.Cpu("aten::addmm", 6200 + 100 * k, 80);
  auto with_step = kept.Load();
  CHECK(with_step->steps.size() == 1);
  CHECK(with_step->stats.step_markers_ignored == 0);
}

TEST_CASE("TTA001: a loader that stalls in some steps says its share of those steps",
          "[rules][TTA001]") {
  // Three steps of 30 kernels of 100 us; the load takes 4 ms in the first and the last, 50 us
  // in the middle one (the workers kept up). "runs 57% of each step" read as every step.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    const double load_us = s == 1 ? 50 : 4000;
    t.Cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", base + 2, load_us);
    double cpu = base + 5 + load_us, gpu = cpu + 10;
    for (int k = 0; k < 30; ++k, cpu += 10, gpu += 100) {
      t.Kernel("volta_h884gemm_128x128_nn", cpu, 5, gpu, 100);
    }
    t.Step(s, base, gpu + 50 - base);
    base = gpu + 50;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA001");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("of the 2 of 3 steps it stalls in") != std::string::npos);
  CHECK(f[0].message.find("of each step") == std::string::npos);
}

TEST_CASE("TTA001: fast data loading is not reported", "[rules][TTA001]") {
  auto trace = TrainingLoop(/*load_us=*/100).Load();
  CHECK(FindingsWithCode(*trace, "TTA001").empty());
  auto none = TrainingLoop(0).Load();
  CHECK(FindingsWithCode(*none, "TTA001").empty());
}

TEST_CASE("TTA001: the threshold is configurable", "[rules][TTA001]") {
  auto trace = TrainingLoop(/*load_us=*/400).Load();  // 400 us of a ~3.5 ms step: 11%
  CHECK(FindingsWithCode(*trace, "TTA001").size() == 1);
  ttap::RuleOptions o;
  o.values["dataloader_share"] = 0.2;
  CHECK(FindingsWithCode(*trace, "TTA001", o).empty());
}

TEST_CASE("TTA001: data loading that is mostly the profiler recording it says so",
          "[rules][TTA001]") {
  // 1.2 ms of data loading per step, recorded with with_stack=True: 600 Python calls of 2 us
  // each inside it (a batch received from workers call by call), about what the profiler
  // takes to record each. Without the profiler the load is short: the finding says why.
  TinyTrace t = TrainingLoop(/*load_us=*/1200);
  for (int s = 0; s < 3; ++s) {
    const double load_start = 1000 + 2 + s * (1200 + 5 + 10 + 3000 + 50) + 1;
    for (int k = 0; k < 590; ++k) {
      t.Python("multiprocessing/connection.py", 400, "_recv", load_start + 2 * k, 1.8);
    }
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA001");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].severity == ttap::Severity::kInfo);
  CHECK(f[0].time_lost_us_per_step < 200);
  CHECK(f[0].message.find("the profiler's own: recording the 1770 ops and Python calls") !=
        std::string::npos);
  // The same load without the calls recorded inside it is the loop's own: a warning at least.
  auto plain = TrainingLoop(/*load_us=*/1200).Load();
  auto g = FindingsWithCode(*plain, "TTA001");
  REQUIRE(g.size() == 1);
  CHECK(g[0].severity >= ttap::Severity::kWarning);
  CHECK(g[0].message.find("profiler's own") == std::string::npos);
}

TEST_CASE("TTA001: a loader whose workers do not keep up says so, not 'use workers'",
          "[rules][TTA001]") {
  // CPU-only preprocessing over a 2-worker DataLoader: each __next__ waits 10 ms for the
  // workers, the loop's own work is 0.2 ms.
  TinyTrace t;
  const std::string next = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  double cpu = 1000;
  for (int s = 0; s < 5; ++s) {
    const double start = cpu;
    t.Cpu(next, cpu, 10000, "user_annotation");
    cpu += 10010;
    t.Cpu("aten::cat", cpu, 200);
    cpu += 210;
    t.Step(s + 1, start, cpu - start);
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA001");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("worker processes do not keep up") != std::string::npos);
}

TEST_CASE("TTA002: .item() in the loop drains the GPU", "[rules][TTA002]") {
  auto trace = TrainingLoop(0, /*sync_after_forward=*/true).Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(f.size() == 1);
  CHECK(trace->Name(f[0].anchor_row) == "aten::item");
  CHECK(f[0].time_lost_us_per_step > 1000);
  CHECK(f[0].evidence.at("sync_call").text == "cudaStreamSynchronize");
  CHECK(f[0].fix == "defer-host-sync");
}

TEST_CASE("TTA002: under CUDA_LAUNCH_BLOCKING every launch is a sync, not launch-bound work",
          "[rules][TTA002][TTA007]") {
  // CUDA_LAUNCH_BLOCKING=1 left on: each launch returns 3 us after its 40 us kernel ends, and the
  // op's 60 us of CPU work before the next launch leaves the GPU idle. 40 launches a step.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 40; ++k) {
      t.Cpu("aten::add", cpu, 110);
      t.Launch("vectorized_elementwise_kernel", cpu + 60, 48, cpu + 65, 40);
      cpu += 112;
    }
    t.Step(s + 1, start, cpu - start);
    cpu += 2;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("CUDA_LAUNCH_BLOCKING") != std::string::npos);
  CHECK(f[0].message.find("40 launches per step") != std::string::npos);
  CHECK(f[0].fix.empty());  // an environment setting: no edit of the code
  // Launching ahead, the CPU's 60 us per op overlaps the GPU's 40 us: about a third of the step.
  CHECK(f[0].share_of_step > 0.25);
  CHECK(FindingsWithCode(*trace, "TTA007").empty());
}

TEST_CASE("TTA002: a read on a GPU already idle drains nothing: the host work after it is not its",
          "[rules][TTA002]") {
  // Per step: 20 GEMMs of 50 us launched 10 us apart (1 ms of GPU work), 1.2 ms of CPU ops that
  // launch nothing (the GPU finishes meanwhile), an .item() (a 5 us copy and its sync), then
  // 300 us of logging on the host before the next step launches.
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  double cpu = 1000;
  for (int s = 0; s < 4; ++s) {
    const double start = cpu;
    for (int k = 0; k < 20; ++k) {
      t.Cpu("aten::mm", cpu, 9);
      t.Launch("sm90_xmma_gemm_bf16bf16_bf16f32", cpu + 2, 5, cpu + 12 + 40 * k, 50);
      cpu += 10;
    }
    t.Cpu("aten::index", cpu, 1200);
    cpu += 1210;
    t.Cpu("aten::item", cpu, 40);
    t.Launch("Memcpy DtoH (Device -> Pageable)", cpu + 2, 20, cpu + 8, 5, "gpu_memcpy", 7,
             "cudaMemcpyAsync", 4);
    t.Runtime("cudaStreamSynchronize", cpu + 24, 6);
    cpu += 45;
    t.Cpu("aten::add", cpu, 300);  // the metric logged on the host
    cpu += 305;
    t.Step(s + 1, start, cpu - start);
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  for (const auto& x : f) {
    INFO(x.message);
    CHECK(x.severity > ttap::Severity::kWarning);  // severity: lower is worse
    CHECK(x.evidence.at("gpu_drain_us").number < 50 * 4);
  }
}

TEST_CASE("TTA002: the statement around a read lies inside its step, never the loop around it",
          "[rules][TTA002]") {
  // A serving engine: one Python frame (its busy loop) holds every step; each step is marked by
  // an annotation, a worker thread launches the step's 880 us kernel, and the loop waits for it
  // with cudaEventSynchronize. The frame launches nothing on its own thread.
  TinyTrace t;
  t.Device(0, "NVIDIA GB10", 12, 1);
  const double start = 1000;
  double s = start;
  for (int k = 0; k < 4; ++k) {
    t.Cpu("execute_context_" + std::to_string(k), s, 200, "user_annotation");
    t.Launch("marlin::Marlin<256, 1, 8, 8, 4, 8>", s + 10, 8, s + 20, 880, "kernel", 7,
             "cudaLaunchKernel", -1, 0, /*tid=*/2);
    t.Runtime("cudaEventSynchronize", s + 300, 605);
    s += 1000;
  }
  t.Python("core.py", 10, "run_busy_loop", start - 100, s - start + 200);
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(!f.empty());
  for (const auto& x : f) {
    INFO(x.message);
    // At most a step's length per step (the busy loop's 4.3 ms is no statement of a 1 ms step).
    const auto it = x.evidence.find("host_statement_us");
    if (it != x.evidence.end()) CHECK(it->second.number <= 1000 * 4);
    CHECK(x.message.find("the statement around it runs") == std::string::npos);
  }
}

TEST_CASE("TTA002: syncs inside an op that cannot be captured come before CUDA graphs",
          "[rules][TTA002][TTA017]") {
  // A sparse matmul (an RTX 4090 neural-PDE forward): each aten::matmul coalesces its sparse
  // operand, and aten::_coalesce reads back sizes with 5 cudaStreamSynchronize calls, each
  // waiting for a tiny kernel that starts 150 us after its launch. It was TTA017 first ("CUDA
  // graphs ... saves 42%"), which cannot capture a sync, and TTA002 counted "5x" (the matmuls).
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 4090", 8, 9);
  ttap_test::StreamClock gpu;
  double cpu = 1000;
  for (int m = 0; m < 5; ++m) {
    const double start = cpu;
    cpu += 5;
    const double coalesce_start = cpu;
    for (int k = 0; k < 5; ++k) {
      for (int j = 0; j < 3; ++j) {
        gpu.Kernel(t, "thrust::cuda_cub::core::_kernel_agent", cpu, 4, 150, 1.3);
        cpu += 5;
      }
      const double wait = std::max(1.0, gpu.free - cpu + 2);
      t.Runtime("cudaStreamSynchronize", cpu, wait);
      cpu += wait + 2;
    }
    t.Cpu("aten::_coalesce", coalesce_start - 1, cpu - coalesce_start + 2);
    cpu += 2;
    gpu.Kernel(t, "cusparse::csrmv_v3_kernel", cpu, 4, 3, 2);
    cpu += 6;
    t.Cpu("aten::matmul", start, cpu - start);
    cpu += 20;
  }
  t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu.free - cpu + 3));
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  REQUIRE(!all.findings.empty());
  const auto& top = all.findings.front();
  INFO(top.message);
  CHECK(top.code == "TTA002");
  CHECK(top.message.find("inside aten::_coalesce") != std::string::npos);
  CHECK(top.message.find("25x in the run") != std::string::npos);
  CHECK(FindingsWithCode(*trace, "TTA017").empty());
}

TEST_CASE("TTA002: a run's tail after its last wait is not a drain", "[rules][TTA002]") {
  // A serving worker without steps (an H100 vLLM trace): ten decode batches, each read back with
  // a sync that waits 0.3 ms for the GPU, which resumes 0.2 ms later; after the last one the
  // worker polls for requests 100 ms with nothing for the GPU. The drain was 101.6 ms.
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  ttap_test::StreamClock gpu;
  double cpu = 1000;
  for (int b = 0; b < 10; ++b) {
    for (int k = 0; k < 10; ++k) {
      t.Cpu("aten::mm", cpu, 20);
      gpu.Kernel(t, "sm90_xmma_gemm_bf16bf16_bf16f32", cpu + 10, 5, 3, 300);
      cpu += 21;
    }
    t.Cpu("aten::to", cpu, gpu.free - cpu + 10);
    t.Runtime("cudaStreamSynchronize", cpu + 2, gpu.free - cpu + 5);
    cpu = gpu.free + 200;
  }
  t.Python("shm_broadcast.py", 400, "acquire_read", cpu, 100000);
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(!f.empty());
  INFO(f[0].message);
  CHECK(f[0].evidence.at("gpu_drain_us").number < 5000);
}

// Per step 20 kernels of 100 us, then `.item()`: a blocking 4-byte copy to pageable memory
// (cudaMemcpyAsync, which waits for the queue) and a cudaStreamSynchronize, then 1.5 ms of
// logging while the GPU idles, then 10 more kernels. |in_if|: the read is Python's truth test
// of the tensor (`if loss > 0:`), aten::is_nonzero around the aten::item.
TinyTrace ItemThenLogging(bool in_if) {
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3080", 8, 6);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    ttap_test::StreamClock gpu;
    gpu.free = base;
    double cpu = base + 5;
    for (int k = 0; k < 20; ++k) {
      gpu.Kernel(t, "volta_h884gemm_128x128_nn", cpu, 5, 5, 100);
      cpu += 10;
    }
    const double copy_at = gpu.free + 2;
    if (in_if) t.Cpu("aten::is_nonzero", cpu - 1, copy_at + 32 - cpu);
    t.Cpu("aten::item", cpu, copy_at + 30 - cpu);
    t.Cpu("aten::_local_scalar_dense", cpu + 1, copy_at + 28 - cpu);
    t.Launch("Memcpy DtoH (Device -> Pageable)", cpu + 2, copy_at + 8 - cpu, copy_at, 3,
             "gpu_memcpy", 7, "cudaMemcpyAsync", 4);
    t.Runtime("cudaStreamSynchronize", copy_at + 12, 5);
    cpu = copy_at + 31;
    t.Cpu("aten::add", cpu, 1500);  // logging on the CPU
    cpu += 1500;
    gpu.free = cpu;
    for (int k = 0; k < 10; ++k) {
      gpu.Kernel(t, "volta_h884gemm_128x128_nn", cpu, 5, 5, 100);
      cpu += 10;
    }
    const double end = gpu.free + 20;
    t.Step(s, base, end - base);
    base = end;
  }
  return t;
}

TEST_CASE("TTA002: an .item()'s copy and its sync are one read and one drain", "[rules][TTA002]") {
  // It said "2x per step" and counted the idle stretch after the read twice.
  auto trace = ItemThenLogging(false).Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].evidence.at("syncs").number == 3);
  CHECK(f[0].message.find("1x per step") != std::string::npos);
  // It names the call that waited (the copy, 2 ms), not the 5 us synchronize after it.
  CHECK(f[0].message.find("(cudaMemcpyAsync, 1x per step)") != std::string::npos);
  // The GPU idles from the copy's end to the next kernel: ~1.55 ms a step, once.
  CHECK(f[0].evidence.at("gpu_drain_us").number == Approx(3 * 1550).margin(3 * 60));
}

TEST_CASE("TTA002: a read-back's copy and the stream sync after it are one wait to remove",
          "[rules][TTA002]") {
  // An MLP whose every step ends in torch.nonzero: its count comes back by a blocking
  // cudaMemcpyAsync, then a 1 us cudaStreamSynchronize; the compaction kernels and the next
  // step's launches follow the read, so the GPU idles ~150 us a step. The fix's what-if kept
  // the sync's wait: the wait moved to it and the fix saved 0.058 ms of 1.2 (a 3060 Ti trace).
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060 Ti", 8, 6);
  ttap_test::StreamClock gpu;
  double cpu = 1000;
  for (int s = 0; s < 6; ++s) {
    const double start = cpu;
    t.Cpu("aten::addmm", cpu, 30);
    gpu.Kernel(t, "internal::gemvx::kernel", cpu + 20, 5, 3, 700);
    cpu += 40;
    gpu.Kernel(t, "cub::DeviceReduceKernel", cpu + 5, 3, 3, 3);
    const double copy_at = std::max(gpu.free + 1, cpu + 12);
    t.Launch("Memcpy DtoH (Device -> Pageable)", cpu + 10, copy_at + 2 - (cpu + 10), copy_at, 1,
             "gpu_memcpy", 7, "cudaMemcpyAsync", 4);
    gpu.free = copy_at + 1;
    double c = copy_at + 4;
    t.Runtime("cudaStreamSynchronize", c, 1);
    c += 60;  // resize_ and the compaction's set-up
    gpu.Kernel(t, "cub::DeviceCompactInitKernel", c, 3, 3, 2);
    gpu.Kernel(t, "cub::DeviceSelectSweepKernel", c + 5, 3, 3, 3);
    t.Cpu("aten::nonzero", cpu, c + 10 - cpu);
    cpu = c + 60;
    t.Step(s + 1, start, cpu - start);
    cpu += 1;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  const double drain_per_step = f[0].evidence.at("gpu_drain_us").number / 6;
  CHECK(drain_per_step > 50);  // to the first kernel after the read
  CHECK(f[0].time_lost_us_per_step > 0.5 * drain_per_step);
}

TEST_CASE("TTA002: a truth test of a GPU tensor names the branch, not its .item()",
          "[rules][TTA002]") {
  // A policy's denoising loop (openpi on an H200) read `while` conditions on GPU tensors:
  // aten::is_nonzero around each aten::item. "host synchronisation in aten::item" sent the user
  // looking for an .item() call the code does not have.
  auto f = FindingsWithCode(*ItemThenLogging(true).Load(), "TTA002");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("host synchronisation in aten::is_nonzero (an if / while / bool() on a "
                          "GPU tensor)") != std::string::npos);
  CHECK(f[0].evidence.at("syncs").number == 3);
}

TEST_CASE("TTA002: the fix defers the statement that reads the value, not only its wait",
          "[rules][TTA002]") {
  // 4 ms of logging after a wait of 1.8 ms, the GPU idle for both. Alone, the .item() only stops
  // waiting: the logging stays in the step, and the GPU still idles once its backlog is done.
  auto bare = FindingsWithCode(*TrainingLoop(0, true, 0, {}, false, 4000).Load(), "TTA002");
  // As one statement with the logging (nothing launched but the read-back), the fix (read it
  // every N steps, or keep it on the device) takes the logging out of the step too.
  auto statement = FindingsWithCode(*TrainingLoop(0, true, 0, {}, true, 4000).Load(), "TTA002");
  REQUIRE(bare.size() == 1);
  REQUIRE(statement.size() == 1);
  CHECK(bare[0].time_lost_us_per_step == Approx(1820).margin(30));
  // (The trace records its synchronize calls, so the step's Python tail after the last launch is
  // its own CPU time, not a silent wait for the GPU: it moves with the CPU, 4 ms + 95 us.)
  CHECK(statement[0].time_lost_us_per_step == Approx(4095).margin(30));
  // The detector measures that statement too (its host time beyond the wait), and says so.
  // Bare, the statement is aten::item itself: a few microseconds beyond its wait.
  const bool bare_short = bare[0].evidence.count("host_statement_us") == 0 ||
                          bare[0].evidence.at("host_statement_us").number / 3 < 10;
  CHECK(bare_short);
  CHECK(bare[0].message.find("the statement that reads it") == std::string::npos);
  REQUIRE(statement[0].evidence.count("host_statement_us") == 1);
  CHECK(statement[0].evidence.at("host_statement_us").number / 3 == Approx(4006).margin(30));
  CHECK(statement[0].message.find("the statement that reads it runs") != std::string::npos);
}

TEST_CASE("TTA002: the profiler's own synchronisation in step() is not the user's",
          "[rules][TTA002]") {
  // Each step, torch.profiler's step() synchronises the device while kernels are queued (as
  // `profile.__enter__` does when a recording starts): the GPU drains, but no user code asked.
  auto loop = [](const std::string& outer, const std::string& inner) {
    return TrainingLoop(0, /*sync_after_forward=*/true, 0, {outer, inner}).Load();
  };
  // Relative and absolute frame paths alike.
  CHECK(
      FindingsWithCode(*loop("torch/profiler/profiler.py", "torch/autograd/profiler.py"), "TTA002")
          .empty());
  CHECK(FindingsWithCode(*loop("/opt/conda/lib/python3.11/site-packages/torch/profiler/profiler.py",
                               "/opt/conda/lib/python3.11/site-packages/torch/cuda/__init__.py"),
                         "TTA002")
            .empty());
  // The same synchronisation from the user's own helper is reported.
  CHECK(FindingsWithCode(*loop("train.py", "utils/timing.py"), "TTA002").size() == 1);
}

TEST_CASE("TTA002: a synchronize that ends each step drains the GPU into the next step",
          "[rules][TTA002]") {
  // Each step: 1.5 ms of host work (the batch built on the CPU), 30 kernels of 100 us launched
  // 10 us apart (the GPU trails the CPU by 2.7 ms), then `torch.cuda.synchronize()` as the
  // step's last call. The GPU is busy until the sync returns, so inside the step it never
  // idles; it idles in the next one, while the CPU builds the batch it would have built while
  // the GPU finished. (Before, the drain stopped at the step's end: no finding at all.)
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 4; ++s) {
    t.Cpu("aten::stack", base + 2, 1500);
    double cpu = base + 1510, gpu = cpu + 10;
    for (int k = 0; k < 30; ++k) {
      t.Kernel("volta_h884gemm_128x128_nn", cpu, 5, gpu, 100);
      cpu += 10;
      gpu += 100;
    }
    t.Python("train.py", 61, "<module>", cpu, gpu - cpu + 8);
    t.Runtime("cudaDeviceSynchronize", cpu + 1, gpu - cpu + 5);
    const double end = gpu + 20;
    t.Step(s, base, end - base);
    base = end;
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("sync_call").text == "cudaDeviceSynchronize");
  // Without it, the batch of the next step is built while the GPU runs this step's tail.
  CHECK(f[0].time_lost_us_per_step > 1000);
  CHECK(f[0].time_lost_us_per_step < 1600);
  // Its steps' savings add up to the run's: without the sync each step's CPU ends earlier and
  // the last step holds the GPU's tail, so the steps' own shortening (2.7 ms in each but the
  // last) is not what each saves.
  double per_step_total = 0;
  for (const auto& [step, lost] : f[0].per_step) per_step_total += lost;
  CHECK(per_step_total == Approx(f[0].time_lost_us_per_step * 4).epsilon(0.01));
}

// A run without steps (one call profiled, no schedule): a 20 MiB pinned upload (366 us on the
// GPU) and two kernels, then a bare cudaEventSynchronize that waits for them (the user's timing)
// and, 85 us after the GPU is done, the bare cudaDeviceSynchronize of the profiler's exit. With
// |missing_gpu_us| > 0 the event sync waits that much longer, for GPU work the trace lacks.
TinyTrace SyncEndsRunWithoutSteps(double missing_gpu_us) {
  TinyTrace t;
  t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
  t.Cpu("aten::to", 134, 54);
  t.Cpu("aten::copy_", 173, 14);
  t.Launch("Memcpy HtoD (Pinned -> Device)", 177, 9, 188, 366, "gpu_memcpy", 7, "cudaMemcpyAsync",
           20 << 20);
  t.Cpu("aten::mul", 206, 16);
  t.Kernel("vectorized_elementwise_kernel", 212, 9, 556, 15);
  t.Cpu("aten::mul", 223, 7);
  t.Kernel("vectorized_elementwise_kernel", 226, 4, 572, 19);
  t.Runtime("cudaEventSynchronize", 256, 338 + missing_gpu_us);
  t.Runtime("cudaDeviceSynchronize", 678 + missing_gpu_us, 15);
  return t;
}

TEST_CASE("TTA002: a synchronize that ends a run without steps saves nothing", "[rules][TTA002]") {
  // The run is over when its GPU work is: what follows the last op on the CPU (the final waits,
  // the profiler's exit) does not bound it, so removing the sync lets nothing run beside the GPU.
  // (Before, the 85 us tail bounded the run: "a fix saves 0.1 ms (18.7% of the run)", warning.)
  auto trace = SyncEndsRunWithoutSteps(0).Load();
  for (const auto& f : FindingsWithCode(*trace, "TTA002")) CHECK(f.time_lost_us_per_step < 25);
  const auto r = ttap::RunRules(*trace, {});
  CHECK(r.run_ns / 1000.0 == Approx(591 - 134).margin(10));
  // A wait far beyond the recorded GPU work is for work the trace lacks: the run keeps it.
  const auto missing = ttap::RunRules(*SyncEndsRunWithoutSteps(20000).Load(), {});
  CHECK(missing.run_ns / 1000.0 > 20000);
}

TEST_CASE("TTA002: no synchronisation, no finding", "[rules][TTA002]") {
  auto trace = TrainingLoop(0).Load();
  CHECK(FindingsWithCode(*trace, "TTA002").empty());
}

TEST_CASE("TTA008: CPU work between kernels idles the GPU", "[rules][TTA008]") {
  auto trace = TrainingLoop(0, false, /*cpu_gap_us=*/5000).Load();
  auto f = FindingsWithCode(*trace, "TTA008");
  REQUIRE_FALSE(f.empty());
  CHECK(trace->Name(f[0].anchor_row) == "aten::nonzero_static_python_work");
  CHECK(f[0].share_of_step > 0.3);
  // The idle time it finds counts in the trace score (what the findings account for) though no
  // one-line fix removes it: the same loop without the CPU work scores lower.
  auto rr = ttap::RunRules(*trace, {});
  CHECK(rr.joint_saving_ns >= rr.safe_saving_ns);
  CHECK(rr.trace_score > 0.3);
  CHECK(rr.trace_score <= 1.0);
  CHECK(ttap::RunRules(*TrainingLoop(0).Load(), {}).trace_score < rr.trace_score);
}

namespace {

// Five steps of a T4 CNN loop, 30 fp32 convolutions of |conv_us| each; in the second step one
// aten::empty_strided of a label tensor takes 7 ms (its other runs 20 us) with the GPU idle.
TinyTrace StallInSecondStep(double conv_us) {
  TinyTrace t;
  t.Device(0, "Tesla T4", 7, 5);
  ttap_test::StreamClock gpu;
  double cpu = 1000;
  for (int s = 0; s < 5; ++s) {
    const double start = cpu;
    const double alloc_us = s == 1 ? 7000 : 20;
    t.Cpu("aten::to", cpu, alloc_us + 40);
    t.Cpu("aten::empty_strided", cpu + 5, alloc_us);
    cpu += alloc_us + 45;
    for (int k = 0; k < 30; ++k) {
      t.Cpu("aten::conv2d", cpu, 30);
      gpu.Kernel(t, "implicit_convolve_sgemm", cpu + 20, 5, 3, conv_us);
      cpu += 31;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  return t;
}

}  // namespace

TEST_CASE("TTA008: idle time one step holds nearly all of is a one-off stall, at most info",
          "[rules][TTA008]") {
  // Five steps of a T4 CNN loop; in the second, one aten::empty_strided of a label tensor takes
  // 7 ms (its other runs 20 us) with the GPU idle. It was a warning "1.6 ms/step (9.4%)".
  auto trace = StallInSecondStep(/*conv_us=*/300).Load();
  auto f = FindingsWithCode(*trace, "TTA008");
  REQUIRE(!f.empty());
  INFO(f[0].message);
  CHECK(f[0].severity >= ttap::Severity::kInfo);
  CHECK(f[0].evidence.at("occurs").text == "once (step 2)");
  CHECK(f[0].message.find("a one-off stall") != std::string::npos);
}

TEST_CASE("RunRules: a one-off stall at info comes after the warnings, whatever it saves",
          "[rules][TTA008]") {
  // Five steps of 30 fp32 convolutions (40 us each) on a T4, the second step with a 7 ms stall
  // in aten::empty_strided: the stall saves more a step (1.4 ms) than the tensor cores (0.4 ms)
  // or the sync at each step's end (0.1 ms) would, but it happens once; a user reads the
  // findings in order.
  auto all = ttap::RunRules(*StallInSecondStep(/*conv_us=*/40).Load(), {});
  REQUIRE(all.findings.size() >= 2);
  CHECK(all.findings.front().code == "TTA009");
  CHECK(all.findings.front().severity == ttap::Severity::kWarning);
  for (size_t i = 1; i < all.findings.size(); ++i) {
    INFO(all.findings[i].message);
    CHECK(all.findings[i - 1].severity <= all.findings[i].severity);
  }
}

TEST_CASE("TTA008: a gap inside a record_function around the whole run names the op within",
          "[rules][TTA008]") {
  // GPU MODE's profiling example: torch.square(torch.randn(10000, 10000).cuda()) inside
  // record_function("model_inference"), no steps. The GPU idles while the CPU draws the random
  // numbers; "while the CPU runs model_inference" named the whole run.
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3080", 8, 6);
  ttap_test::StreamClock gpu;
  t.Cpu("aten::randn", 1010, 6000);
  t.Cpu("aten::normal_", 1020, 5980);
  t.Cpu("aten::to", 7020, 50);
  gpu.Kernel(t, "Memcpy HtoD (Pageable -> Device)", 7030, 30, 3, 400);
  t.Cpu("aten::square", 7100, 20);
  gpu.Kernel(t, "vectorized_elementwise_kernel", 7105, 5, 3, 300);
  t.Runtime("cudaDeviceSynchronize", 7130, gpu.free - 7130 + 3);
  t.Cpu("model_inference", 1000, gpu.free + 10 - 1000, "user_annotation");
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA008");
  REQUIRE(!f.empty());
  INFO(f[0].message);
  CHECK(f[0].message.find("while the CPU runs aten::randn") != std::string::npos);
}

TEST_CASE("TTA008: Python work outside any torch op is named by its call", "[rules][TTA008]") {
  // The CPU spends 5 ms in gc.collect() between the kernels of each step: no torch op covers the
  // gap, the tracer's event for the built-in does (a gc pause, logging, a file write look alike).
  auto trace = TrainingLoop(0, false, /*cpu_gap_us=*/5000, {}, false, 1500,
                            "<built-in function collect>", "python_function")
                   .Load();
  auto f = FindingsWithCode(*trace, "TTA008");
  REQUIRE_FALSE(f.empty());
  CHECK(trace->Name(f[0].anchor_row) == "<built-in function collect>");
  CHECK(f[0].message.find("while the CPU runs Python outside any torch op: collect()") !=
        std::string::npos);
  CHECK(f[0].share_of_step > 0.3);
}

TEST_CASE("TTA008: a gap that torch ops hardly cover is work outside any op", "[rules][TTA008]") {
  // Each step: 10 GEMMs, then 5 ms on the CPU in which only a 20 us aten::empty is recorded (no
  // Python frames: the trace was recorded without with_stack=True), then 10 more. The finding
  // named the gap "aten::empty", as if the op took the 5 ms.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  ttap_test::StreamClock gpu;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    for (int k = 0; k < 20; ++k) {
      if (k == 10) {
        t.Cpu("aten::empty", cpu + 2500, 20);
        cpu += 5000;
      }
      t.Cpu("aten::mm", cpu, 12);
      gpu.Kernel(t, "sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x32", cpu + 4, 5, 3,
                 100);
      cpu += 13;
    }
    cpu = gpu.SyncAndStep(t, s + 1, start, cpu);
  }
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA008");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("work outside any torch op, around aten::empty (record with "
                          "with_stack=True") != std::string::npos);
  CHECK(trace->Name(f[0].anchor_row) == "aten::empty");
}

TEST_CASE("TTA008: a call far longer than its usual runs is named as a stall inside it",
          "[rules][TTA008]") {
  // The gap's Python call is a module __getattr__ that usually takes 1 us: 5 ms inside it is a
  // garbage-collection pause or the OS, not the lookup's own work.
  TinyTrace t = TrainingLoop(0, false, /*cpu_gap_us=*/5000, {}, false, 1500,
                             "torch/nn/modules/module.py(1955): __getattr__", "python_function");
  for (int k = 0; k < 20; ++k)
    t.Python("torch/nn/modules/module.py", 1955, "__getattr__", 990 - k * 2, 1);
  auto trace = t.Load();
  auto f = FindingsWithCode(*trace, "TTA008");
  REQUIRE_FALSE(f.empty());
  INFO(f[0].message);
  CHECK(f[0].message.find("a stall inside __getattr__() (its 23 runs usually take 1.0 us") !=
        std::string::npos);
  // A lock's acquire() is as tiny whenever the lock is free, but 5 ms in it is a wait for the
  // thread or process that holds it (a serving engine's loop waiting for its next request),
  // not a garbage-collection pause.
  TinyTrace w =
      TrainingLoop(0, false, /*cpu_gap_us=*/5000, {}, false, 1500,
                   "<built-in method acquire of _thread.lock object at 0x7f22>", "python_function");
  for (int k = 0; k < 20; ++k)
    w.Cpu("<built-in method acquire of _thread.lock object at 0x7f22>", 990 - k * 2, 1,
          "python_function");
  auto waits = FindingsWithCode(*w.Load(), "TTA008");
  REQUIRE_FALSE(waits.empty());
  INFO(waits[0].message);
  CHECK(waits[0].message.find("a wait in acquire() for another thread or process") !=
        std::string::npos);
  CHECK(waits[0].message.find("stall") == std::string::npos);
}

TEST_CASE("TTA008: a busy GPU gives no idle finding, data loading is left to TTA001",
          "[rules][TTA008]") {
  auto busy = TrainingLoop(0).Load();
  CHECK(FindingsWithCode(*busy, "TTA008").empty());
  auto loading = TrainingLoop(4000).Load();
  CHECK(FindingsWithCode(*loading, "TTA008").empty());
}

TEST_CASE("RunRules: window scores, categories and trace score", "[rules]") {
  auto trace = TrainingLoop(4000).Load(30);
  auto r = ttap::RunRules(*trace, {});
  REQUIRE(r.windows.size() == 30);
  int flagged = 0;
  for (const auto& w : r.windows) {
    CHECK(w.score >= 0);
    CHECK(w.score <= 1);
    if (w.category == "TTA001") ++flagged;
  }
  CHECK(flagged > 0);
  CHECK(r.trace_score > 0);
  auto clean = TrainingLoop(0).Load(30);
  CHECK(ttap::RunRules(*clean, {}).trace_score == 0);
}

TEST_CASE("RunRules: a cause's windows are those of its occurrences, not the span between",
          "[rules][TTA002]") {
  // One step of ~10 ms: the same .item() call site syncs near its start and near its end; the
  // 8.8 ms of kernels between the two syncs hold no finding.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1005, gpu = 1015;
  auto sync = [&]() {
    // A 500 us kernel queued first: the sync waits for it, and the CPU's work after the wait
    // could have overlapped it.
    gpu = std::max(gpu, cpu + 10);
    t.Kernel("volta_h884gemm_128x128_nn", cpu, 5, gpu, 500);
    cpu += 10;
    gpu += 500;
    t.Cpu("aten::item", cpu, gpu - cpu + 20);
    t.Cpu("aten::_local_scalar_dense", cpu + 1, gpu - cpu + 18);
    t.Runtime("cudaStreamSynchronize", cpu + 2, gpu - cpu + 15);
    cpu = gpu + 25;
    t.Cpu("aten::add", cpu, 400);  // CPU work while the GPU has nothing queued
    cpu += 400;
    gpu = cpu + 10;
  };
  auto kernels = [&](int n) {  // launched no faster than they run: each sync waits briefly
    for (int k = 0; k < n; ++k) {
      gpu = std::max(gpu, cpu + 10);
      t.Kernel("volta_h884gemm_128x128_nn", cpu, 5, gpu, 100);
      cpu += 110;
      gpu += 100;
    }
  };
  kernels(2);
  sync();
  kernels(80);
  sync();
  kernels(2);
  t.Step(0, 1000, gpu + 50 - 1000);
  t.Python("train.py", 40, "<module>", 1001, gpu + 50 - 1002);
  auto trace = t.Load(20);
  auto f = FindingsWithCode(*trace, "TTA002");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("syncs").number == 2);
  // The extent still spans both syncs; the windows are only those around each.
  const auto& w = trace->windows;
  REQUIRE(w.size() == 20);
  CHECK(f[0].start_ns < w[3].start_ns);
  CHECK(f[0].end_ns > w[16].end_ns);
  REQUIRE_FALSE(f[0].window_indices.empty());
  CHECK(f[0].window_indices.size() <= 6);
  CHECK(f[0].window_indices.front() <= 2);
  CHECK(f[0].window_indices.back() >= 17);
  auto r = ttap::RunRules(*trace, {});
  for (int middle = 5; middle < 15; ++middle) {
    INFO("window " << middle);
    CHECK(r.windows[middle].score == 0);
    CHECK(r.windows[middle].category.empty());
  }
  CHECK(r.windows[f[0].window_indices.front()].score > 0);  // TTA002 or the drain's TTA008
}

TEST_CASE("Rules on a trace without GPU events give CPU-side findings only", "[rules]") {
  TinyTrace t;
  for (int s = 0; s < 3; ++s) {
    double base = 1000 + s * 10000;
    t.Step(s, base, 10000);
    t.Cpu("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", base + 5, 5000);
    t.Cpu("aten::mm", base + 5100, 4000);
  }
  auto trace = t.Load();
  auto r = ttap::RunRules(*trace, {});
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].code == "TTA001");
}

TEST_CASE(
    "TTA002: a sync in the user's code is the user's even when a profiler frame encloses the step",
    "[rules][TTA002]") {
  // Some harnesses run the whole step inside the profiler's own frames (a record_function
  // __enter__ enclosing the model, as a real tracelens Qwen1.5 trace shows): the user's .item()
  // still syncs.
  auto trace =
      TrainingLoop(0, /*sync_after_forward=*/true, 0, {"torch/autograd/profiler.py", "train.py"})
          .Load();
  CHECK(FindingsWithCode(*trace, "TTA002").size() == 1);
}

TEST_CASE("TTA002: a bare synchronize() reads nothing: its statement is the one around it",
          "[rules][TTA002]") {
  // Per step: 20 kernels of 100 us queued, then a timing statement that calls
  // torch.cuda.synchronize() (1.9 ms of waiting) and spends 3 ms on the host after it.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    double cpu = base + 10, gpu = base + 30;
    for (int k = 0; k < 20; ++k) {
      t.Cpu("aten::mul", cpu, 4);
      t.Kernel("void at::native::vectorized_elementwise_kernel<4>", cpu + 1, 2, gpu, 100);
      cpu += 5;
      gpu += 100;
    }
    const double sync_end = gpu + 3;
    t.Python("train.py", 30, "log_timing", cpu, sync_end + 3000 - cpu);
    t.Runtime("cudaDeviceSynchronize", cpu + 1, sync_end - cpu - 1);
    const double end = sync_end + 3010;
    t.Step(s, base, end - base);
    base = end;
  }
  auto f = FindingsWithCode(*t.Load(), "TTA002");
  REQUIRE(f.size() == 1);
  INFO(f[0].message);
  CHECK(f[0].message.find("the statement around it runs 3.0 ms/step") != std::string::npos);
  CHECK(f[0].message.find("reads it") == std::string::npos);
}

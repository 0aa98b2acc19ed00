// Rule tests for the memory family: TTA003 pageable-memcpy, TTA004 small-h2d-copies, TTA013
// allocator-churn, TTA014 device-ping-pong. Tiny inline traces, a positive and negatives for each.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "analysis/causal/causal_graph.h"
#include "analysis/causal/what_if.h"
#include "analysis/rules/rule_registry.h"
#include "analysis/tiny_trace.h"

using ttap_test::ExactWhatIfs;
using ttap_test::FindingsWithCode;
using ttap_test::TinyTrace;

namespace {

const char* kPageableH2D = "Memcpy HtoD (Pageable -> Device)";
const char* kPinnedH2D = "Memcpy HtoD (Pinned -> Device)";
const char* kPageableD2H = "Memcpy DtoH (Device -> Pageable)";

// |steps| steps of 3 ms. In each, |body|(t, base) adds the step's copies in its first 1.5 ms,
// then 10 kernels of 100 us keep the GPU busy in the second half.
TinyTrace Steps(int steps, const std::function<void(TinyTrace&, double)>& body) {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < steps; ++s) {
    t.Step(s, base, 3000);
    t.Python("train.py", 30, "<module>", base + 1, 2998);
    body(t, base);
    double cpu = base + 1500, gpu = base + 1510;
    for (int k = 0; k < 10; ++k) {
      t.Kernel("ampere_sgemm_128x64_nn", cpu, 5, gpu, 100);
      cpu += 10;
      gpu += 100;
    }
    base += 3000;
  }
  return t;
}

// x.to("cuda") of |bytes| from host memory named by |gpu_name|: aten::to > aten::_to_copy >
// aten::copy_ > cudaMemcpyAsync (launch 10 us) > the copy (|copy_us| on the GPU).
void CopyTo(TinyTrace& t, double ts, const std::string& gpu_name, long long bytes, double copy_us,
            const std::string& runtime = "cudaMemcpyAsync", double launch_us = 10) {
  const double dur = launch_us + copy_us + 10;
  t.Cpu("aten::to", ts, dur);
  t.Cpu("aten::_to_copy", ts + 1, dur - 2);
  t.Cpu("aten::copy_", ts + 2, dur - 4);
  t.Launch(gpu_name, ts + 3, launch_us + copy_us, ts + 3 + launch_us, copy_us, "gpu_memcpy", 7,
           runtime, bytes);
}

}  // namespace

// ---- TTA003 pageable-memcpy ----

TEST_CASE("TTA003: copies from pageable memory are found with their launching op",
          "[rules][TTA003]") {
  auto trace = Steps(3, [](TinyTrace& t, double base) {
                 CopyTo(t, base + 100, kPageableH2D, 19267584, 400);  // the input batch
               }).Load();
  auto f = FindingsWithCode(*trace, "TTA003");
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "pageable-memcpy");
  CHECK(f[0].fix == "pin-memory-non-blocking");
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2});
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "aten::to");
  // At least the copy itself; the GPU idles while the CPU stages the pageable buffer, so the
  // call's idle time counts too (the whole 410 us call here, the GPU having nothing else).
  CHECK(f[0].time_lost_us_per_step >= 400);
  CHECK(f[0].time_lost_us_per_step == Approx(410).margin(5));
  CHECK(f[0].evidence.at("copies").number == 3);
  CHECK(f[0].evidence.at("bytes").number == 3.0 * 19267584);
  CHECK(f[0].message.find("pageable") != std::string::npos);
  CHECK(f[0].message.find("18.4 MiB") != std::string::npos);
  CHECK(f[0].severity == ttap::Severity::kWarning);  // ~14% of a 3 ms step
}

TEST_CASE("TTA003/TTA008: random numbers drawn on the CPU and copied over are drawn on the GPU",
          "[rules][TTA003][TTA008]") {
  // x = torch.randn(n).to("cuda") each step: aten::randn (aten::normal_ on the host, 1 ms, no
  // launch) then the pageable copy. The fix is device="cuda", not pinning the buffer.
  auto trace = Steps(3, [](TinyTrace& t, double base) {
                 t.Cpu("aten::randn", base + 10, 1000);
                 t.Cpu("aten::normal_", base + 20, 980);
                 CopyTo(t, base + 1020, kPageableH2D, 19267584, 400);
               }).Load();
  auto copies = FindingsWithCode(*trace, "TTA003");
  REQUIRE(copies.size() == 1);
  INFO(copies[0].message);
  CHECK(copies[0].message.find("of random numbers aten::randn drew on the CPU just before: draw "
                               "them on the GPU instead, e.g. torch.randn(..., device=\"cuda\")") !=
        std::string::npos);
  auto idle = FindingsWithCode(*trace, "TTA008");
  REQUIRE(!idle.empty());
  INFO(idle[0].message);
  CHECK(
      idle[0].message.find("aten::randn (random numbers drawn on the CPU: draw them on the GPU") !=
      std::string::npos);
  // A copy after any other op keeps the pinning advice alone.
  auto plain = Steps(3, [](TinyTrace& t, double base) {
                 t.Cpu("aten::cat", base + 10, 1000);
                 CopyTo(t, base + 1020, kPageableH2D, 19267584, 400);
               }).Load();
  auto plain_copies = FindingsWithCode(*plain, "TTA003");
  REQUIRE(plain_copies.size() == 1);
  CHECK(plain_copies[0].message.find("random") == std::string::npos);
}

TEST_CASE("TTA003: pageable device-to-host copies and synchronous cudaMemcpy count",
          "[rules][TTA003]") {
  auto trace = Steps(2, [](TinyTrace& t, double base) {
                 // loss.cpu(): 200 us copy; its call is not charged (that is TTA002's drain).
                 t.Cpu("aten::cpu", base + 100, 260);
                 t.Launch(kPageableD2H, base + 102, 250, base + 150, 200, "gpu_memcpy", 7,
                          "cudaMemcpyAsync", 4 << 20);
                 // A legacy synchronous copy from pinned memory: 300 us on the GPU.
                 t.Cpu("aten::legacy_copy", base + 600, 330);
                 t.Launch(kPinnedH2D, base + 605, 320, base + 615, 300, "gpu_memcpy", 7,
                          "cudaMemcpy", 8 << 20);
               }).Load();
  auto f = FindingsWithCode(*trace, "TTA003");
  REQUIRE(f.size() == 2);
  double total = 0;
  for (const auto& x : f) {
    total += x.time_lost_us_per_step;
    CHECK(x.evidence.at("copies").number == 2);  // one per step
  }
  // D2H: 200 us (the copy). Sync call: 300 us copy + 20 us of GPU idle during the call.
  // Replayed with pinned, non-blocking copies (half the copy time, no wait): 555 us, near the
  // detector's 200 + 320 us.
  CHECK(total == Approx(200 + 320).epsilon(0.1));
}

TEST_CASE("TTA003: .item()'s scalar read-back is the host sync's, no buffer to pin",
          "[rules][TTA003]") {
  // loss.item() after 2 ms of GEMMs: aten::item > aten::_local_scalar_dense > a 4-byte pageable
  // device-to-host copy and the stream sync that waits for the queue. It had also been TTA003 "pin
  // the host buffer and copy with non_blocking=True" (a DDP step on an H100), a buffer the user
  // never sees.
  auto trace = Steps(3, [](TinyTrace& t, double base) {
                 for (int k = 0; k < 4; ++k) {
                   t.Cpu("aten::mm", base + 10 + 10 * k, 8);
                   t.Kernel("sm80_xmma_gemm_bf16bf16_bf16f32", base + 11 + 10 * k, 5,
                            base + 60 + 500 * k, 500);
                 }
                 t.Cpu("aten::item", base + 100, 2000);
                 t.Cpu("aten::_local_scalar_dense", base + 102, 1995);
                 t.Launch(kPageableD2H, base + 105, 8, base + 2065, 6, "gpu_memcpy", 7,
                          "cudaMemcpyAsync", 4);
                 t.Runtime("cudaStreamSynchronize", base + 115, 1955);
               }).Load();
  CHECK(FindingsWithCode(*trace, "TTA003").empty());
}

TEST_CASE("TTA003: pinned asynchronous copies and ROCm host copies are not reported",
          "[rules][TTA003]") {
  auto pinned = Steps(3, [](TinyTrace& t, double base) {
                  CopyTo(t, base + 100, kPinnedH2D, 19267584, 400);
                }).Load();
  CHECK(FindingsWithCode(*pinned, "TTA003").empty());
  // ROCm names do not say pageable or pinned: no finding on a guess.
  auto rocm =
      Steps(3, [](TinyTrace& t, double base) {
        CopyTo(t, base + 100, "Memcpy HtoD (Host -> Device)", 19267584, 400, "hipMemcpyWithStream");
      }).Load();
  CHECK(FindingsWithCode(*rocm, "TTA003").empty());
}

namespace {

// Per step: 10 kernels of 100 us launched back to back, then a device-to-host copy of the
// result through |runtime| that blocks the CPU until the kernels are done (its copy, 60 us,
// runs at the end of the call), then 400 us of host work and the next step's launches: the GPU
// idles while the CPU is blocked and then busy. |then_stream_sync|: as PyTorch's copy_ with
// non_blocking=False records it, |runtime| queues the copy and returns, and a
// cudaStreamSynchronize under the same aten::to does the waiting.
TinyTrace BlockingReadback(const std::string& copy_name, const std::string& runtime,
                           const std::string& device, int major, long long bytes = 64 << 20,
                           bool then_stream_sync = false) {
  TinyTrace t;
  t.Device(0, device, major, 0);
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    double gpu = cpu + 10;
    for (int k = 0; k < 10; ++k) {
      t.Cpu("aten::linear", cpu, 8);
      t.Kernel("Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1", cpu + 1, 5, gpu, 100);
      gpu += 100;
      cpu += 10;
    }
    const double call_end = gpu + 60 + 5;
    t.Cpu("aten::to", cpu, call_end - cpu + 4);
    if (then_stream_sync) {
      t.Launch(copy_name, cpu + 2, 20, gpu, 60, "gpu_memcpy", 7, runtime, bytes);
      t.Runtime("cudaStreamSynchronize", cpu + 25, call_end - cpu - 25);
    } else {
      t.Launch(copy_name, cpu + 2, call_end - cpu - 2, gpu, 60, "gpu_memcpy", 7, runtime, bytes);
    }
    cpu = call_end + 5;
    t.Cpu("aten::sum", cpu, 400);  // host work on the result
    cpu += 402;
    t.Step(s + 1, start, cpu - start);
    cpu += 2;
  }
  return t;
}

}  // namespace

TEST_CASE("TTA003: a blocking copy is reported by its fix and ranks above the sync it causes",
          "[rules][TTA003][TTA002]") {
  // ROCm: hipMemcpyWithStream blocks the CPU 1 ms behind the queued kernels for a 60 us copy.
  auto rocm = BlockingReadback("Memcpy DtoH (Device -> Host)", "hipMemcpyWithStream",
                               "AMD Instinct MI300X", 9)
                  .Load();
  auto all = ttap::RunRules(*rocm, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA003");
  CHECK((all.findings.front().severity == ttap::Severity::kWarning ||
         all.findings.front().severity == ttap::Severity::kError));
  // CUDA: a pageable device-to-host cudaMemcpyAsync blocks the same way; the host sync it causes
  // (TTA002) is its symptom and ranks after it.
  auto cuda = BlockingReadback("Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync",
                               "NVIDIA A100-SXM4-80GB", 8)
                  .Load();
  auto c = ttap::RunRules(*cuda, {});
  REQUIRE(!c.findings.empty());
  INFO(c.findings.front().message);
  CHECK(c.findings.front().code == "TTA003");
  for (const auto& f : c.findings) {
    if (f.code != "TTA002") continue;
    INFO(f.message);
    CHECK(f.evidence.at("symptom_of").text == "TTA003");
    CHECK(f.time_lost_us_per_step < c.findings.front().time_lost_us_per_step);
  }
}

namespace {

// Three 4 ms steps of host work around x.to("cuda") of 16 MiB that blocks for its copy
// (|copy_us| on an idle GPU: |runtime| returns |call_tail_us| after it is done; negative: the
// copy's end is recorded after the call's, the GPU's clock against the CPU's), then 10 kernels
// of 100 us (none when |kernels| is false: a benchmark of uploads alone).
TinyTrace BlockingUpload(const std::string& copy_name, const std::string& runtime,
                         const std::string& device, int major, int minor, double copy_us,
                         double call_tail_us = 100, bool kernels = true) {
  TinyTrace t;
  t.Device(0, device, major, minor);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    t.Step(s, base, 4000);
    t.Cpu("aten::to", base + 100, copy_us + 120);
    t.Launch(copy_name, base + 105, copy_us + 10 + call_tail_us, base + 115, copy_us, "gpu_memcpy",
             7, runtime, 16 << 20);
    double cpu = base + copy_us + 300, gpu = cpu + 10;
    for (int k = 0; k < (kernels ? 10 : 0); ++k) {
      t.Kernel("Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1", cpu, 5, gpu, 100);
      cpu += 10;
      gpu += 100;
    }
    base += 4000;
  }
  return t;
}

}  // namespace

TEST_CASE(
    "TTA003: a blocking host copy that ran at pageable speed is pageable on ROCm too, and "
    "never cold-start",
    "[rules][TTA003][TTA015]") {
  // ROCm names the host side "Host" and copies every host buffer with hipMemcpyWithStream. A
  // 16 MiB copy in 2 ms (8.4 GB/s) on an MI300X, whose PCIe 5 link moves pinned memory at
  // 50 GB/s, was staged from pageable memory: TTA003, the CPU blocked 2 ms of every step.
  auto staged = BlockingUpload("Memcpy HtoD (Host -> Device)", "hipMemcpyWithStream",
                               "AMD Instinct MI300X", 9, 4, 2000)
                    .Load();
  auto f = FindingsWithCode(*staged, "TTA003", ExactWhatIfs());
  REQUIRE(f.size() == 1);
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2});
  CHECK(f[0].time_lost_us_per_step > 1500);
  // A long call that waits for its own copy every step is the copy, not a lazy load.
  CHECK(FindingsWithCode(*staged, "TTA015").empty());
  // The same copy at 42 GB/s (400 us) ran at pinned speed: nothing says it was pageable.
  auto fast = BlockingUpload("Memcpy HtoD (Host -> Device)", "hipMemcpyWithStream",
                             "AMD Instinct MI300X", 9, 4, 400)
                  .Load();
  CHECK(FindingsWithCode(*fast, "TTA003").empty());
  // A run of uploads alone, no kernel: the GPU is still the MI300X its copies ran on (its host
  // link was unknown without a kernel, so no copy was found staged from pageable memory).
  auto alone = BlockingUpload("Memcpy HtoD (Host -> Device)", "hipMemcpyWithStream",
                              "AMD Instinct MI300X", 9, 4, 2000, 100, /*kernels=*/false)
                   .Load();
  CHECK(FindingsWithCode(*alone, "TTA003").size() == 1);
  // CUDA names it: a pageable cudaMemcpyAsync that blocks 2 ms a step is TTA003, not TTA015.
  auto cuda = BlockingUpload(kPageableH2D, "cudaMemcpyAsync", "NVIDIA H200", 9, 0, 2000).Load();
  CHECK(FindingsWithCode(*cuda, "TTA003").size() == 1);
  CHECK(FindingsWithCode(*cuda, "TTA015").empty());
}

TEST_CASE(
    "TTA003: on ROCm, a blocking copy at half the link's speed whose end is recorded after the "
    "call's is staged",
    "[rules][TTA003]") {
  // 16 MiB in 700 us (24 GB/s, under 1/1.6 of an MI300X's pinned 50 GB/s plus a copy's 10 us)
  // by a hipMemcpyWithStream recorded returning 20 us before its copy ends. It is synchronous,
  // so that is the two clocks, not an early (pinned, asynchronous) return: TTA003, and its call
  // waits for its copy in the replay, so pinning saves most of the 0.7 ms the CPU blocks. (Before,
  // a copy ending after its call was neither staged nor waited for.)
  auto t = BlockingUpload("Memcpy HtoD (Host -> Device)", "hipMemcpyWithStream",
                          "AMD Instinct MI300X", 9, 4, 700, -20)
               .Load();
  auto f = FindingsWithCode(*t, "TTA003", ExactWhatIfs());
  REQUIRE(f.size() == 1);
  CHECK(f[0].time_lost_us_per_step > 400);
  CHECK(f[0].time_lost_us_per_step < 760);
  // The same call returning 600 us before its copy ends did return early: pinned, no finding.
  auto async = BlockingUpload("Memcpy HtoD (Host -> Device)", "hipMemcpyWithStream",
                              "AMD Instinct MI300X", 9, 4, 700, -600)
                   .Load();
  CHECK(FindingsWithCode(*async, "TTA003").empty());
}

TEST_CASE(
    "TTA003: a pageable upload that waits for the GEMMs queued before it is the copy, not a lazy "
    "load, though its end is recorded after its call's",
    "[rules][TTA003][TTA015]") {
  // Four steps: x.to("cuda") of 96 MiB from pageable memory, then ten 3 ms fp32 GEMMs launched at
  // once. Each upload's cudaMemcpyAsync waits for the previous step's GEMMs (27 ms) before its
  // 3 ms copy, which the GPU's clock, 250 us ahead of the CPU's, records ending after the call.
  // The book's RTX 3060 Ti loop said "one-time: 24 call(s) ... (6996.5 ms, longest
  // cudaMemcpyAsync)" for 18 such uploads, one a step.
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060 Ti", 8, 6);
  double cpu = 1000, gpu_free = 0;
  for (int s = 0; s < 4; ++s) {
    const double start = cpu;
    const double copy_start = std::max(cpu + 20, gpu_free + 1);
    const double call_us = copy_start + 3000 - 250 - (cpu + 2);
    t.Cpu("aten::to", cpu, call_us + 10);
    t.Launch(kPageableH2D, cpu + 2, call_us, copy_start, 3000, "gpu_memcpy", 7, "cudaMemcpyAsync",
             96 << 20);
    cpu += call_us + 15;
    double gpu = copy_start + 3000 + 5;
    for (int k = 0; k < 10; ++k) {
      t.Kernel("ampere_sgemm_128x64_tn", cpu, 8, std::max(gpu, cpu + 12), 3000);
      gpu = std::max(gpu, cpu + 12) + 3000;
      cpu += 10;
    }
    gpu_free = gpu;
    t.Step(s, start, cpu + 5 - start);
    cpu += 5;
  }
  auto trace = t.Load();
  CHECK(FindingsWithCode(*trace, "TTA003").size() == 1);
  // Each call is its copy's wait, never a lazy load's cold call.
  CHECK(ttap::BuildCausalGraph(*trace).stats.cold_calls == 0);
  for (const auto& f : FindingsWithCode(*trace, "TTA015")) {
    INFO(f.message);
    CHECK(f.message.find("cudaMemcpyAsync") == std::string::npos);
  }
}

namespace {

// Three 2 ms steps where the copy is on the GPU's path: a 1 ms kernel, then x.to("cuda") of
// 4 MiB from pageable memory (450 us on the GPU, 9.3 GB/s; its call blocks until the kernel and
// the copy are done), then a 300 us kernel. |pinned_us| > 0 adds a 2 MiB pinned copy of that
// length to each step, for the trace to measure pinned bandwidth by.
TinyTrace GpuBoundPageableCopy(const std::string& device, int major, int minor,
                               double pinned_us = 0) {
  TinyTrace t;
  if (!device.empty()) t.Device(0, device, major, minor);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    t.Step(s, base, 2000);
    t.Python("train.py", 30, "<module>", base + 1, 1998);
    t.Kernel("ampere_sgemm_128x64_nn", base + 10, 5, base + 20, 1000);
    t.Cpu("aten::to", base + 30, 1460);
    t.Cpu("aten::_to_copy", base + 31, 1458);
    t.Cpu("aten::copy_", base + 32, 1456);
    t.Launch(kPageableH2D, base + 33, 1450, base + 1021, 450, "gpu_memcpy", 7, "cudaMemcpyAsync",
             4 << 20);
    t.Kernel("ampere_sgemm_128x64_nn", base + 1500, 5, base + 1510, 300);
    if (pinned_us > 0) {  // on a side stream, beside the first kernel
      t.Launch(kPinnedH2D, base + 16, 3, base + 25, pinned_us, "gpu_memcpy", 9, "cudaMemcpyAsync",
               2 << 20);
    }
    base += 2000;
  }
  return t;
}

}  // namespace

TEST_CASE("TTA003: the pinned copy runs at the host link's bandwidth, measured or known",
          "[rules][TTA003]") {
  // Pinned, the 450 us copy takes: on an H200's PCIe 5 link (50 GB/s) 84 us; with no device
  // named, half its time (225 us); where the trace's own pinned copies run at 10.5 GB/s (2 MiB in
  // 200 us), still half (pinning at least doubles a pageable copy's bandwidth). The saving is the
  // copy's time it no longer takes plus the launch the CPU no longer blocks on.
  auto saving = [](const TinyTrace& t, std::string* message) {
    auto trace = t.Load();
    auto f = FindingsWithCode(*trace, "TTA003", ExactWhatIfs());
    REQUIRE(f.size() == 1);
    *message = f[0].message;
    return f[0];
  };
  std::string m;
  const auto h200 = saving(GpuBoundPageableCopy("NVIDIA H200", 9, 0), &m);
  CHECK(h200.evidence.at("pinned_bandwidth").text == "50 GB/s (this GPU's host link)");
  // A rate merged over the three steps is their mean, not their sum.
  CHECK(h200.evidence.at("pinned_gbps").number == Approx(50));
  CHECK(h200.evidence.at("steps_affected").number == 3);
  const auto unknown = saving(GpuBoundPageableCopy("", -1, -1), &m);
  CHECK(unknown.evidence.count("pinned_gbps") == 0);
  const auto measured = saving(GpuBoundPageableCopy("NVIDIA H200", 9, 0, 200), &m);
  CHECK(measured.evidence.at("pinned_bandwidth").text == "10 GB/s (measured in this trace)");
  CHECK(h200.time_lost_us_per_step - unknown.time_lost_us_per_step == Approx(225 - 84).margin(3));
  CHECK(measured.time_lost_us_per_step == Approx(unknown.time_lost_us_per_step).margin(3));
}

TEST_CASE("TTA002: ROCm's .item(), one blocking hipMemcpyWithStream of 4 bytes, is host-sync",
          "[rules][TTA003][TTA002]") {
  // The same 1 ms wait behind the queued kernels for a 4-byte read: the host needs the value, so
  // pinning it saves nothing; reading it less often does (TTA002), not pageable-copy.
  auto item = BlockingReadback("Memcpy DtoH (Device -> Host)", "hipMemcpyWithStream",
                               "AMD Instinct MI300X", 9, 4)
                  .Load();
  auto all = ttap::RunRules(*item, {});
  REQUIRE(!all.findings.empty());
  INFO(all.findings.front().message);
  CHECK(all.findings.front().code == "TTA002");
  CHECK(all.findings.front().message.find("hipMemcpyWithStream") != std::string::npos);
  CHECK(FindingsWithCode(*item, "TTA003").empty());
}

// ---- TTA004 small-h2d-copies ----

namespace {

// Per step: |n| copies of |bytes| (-1: no args.bytes) lasting |copy_us|, 20 us apart; 3 of every
// 4 from aten::to, the rest from aten::index.
TinyTrace SmallCopies(int n, long long bytes, double copy_us = 2) {
  return Steps(3, [=](TinyTrace& t, double base) {
    for (int i = 0; i < n; ++i) {
      const double ts = base + 50 + i * 40;
      const std::string op = i % 4 == 3 ? "aten::index" : "aten::to";
      t.Cpu(op, ts, 8 + copy_us);
      t.Launch(kPinnedH2D, ts + 1, 5, ts + 6, copy_us, "gpu_memcpy", 7, "cudaMemcpyAsync", bytes);
    }
  });
}

}  // namespace

TEST_CASE("TTA004: many small host-to-device copies per step", "[rules][TTA004]") {
  auto trace = SmallCopies(32, 256).Load();
  auto f = FindingsWithCode(*trace, "TTA004", ExactWhatIfs());
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "small-h2d-copies");
  CHECK(f[0].fix == "create-on-device");
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2});
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "aten::to");  // 24 of the 32 copies
  // 32 x (5 us launch + 2 us copy) per step.
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(32 * 7).margin(1));
  // Replayed: batched into one copy, every copy but the last loses its op (aten::to or
  // aten::index, 10 us with its 5 us launch) from the CPU's path; the bytes still move, in one
  // copy that the last launch sends once the CPU is done.
  CHECK(f[0].time_lost_us_per_step == Approx(31 * 10).margin(8));
  CHECK(f[0].evidence.at("copies").number == 96);
  CHECK(f[0].message.find("32 host-to-device copies") != std::string::npos);
}

TEST_CASE("TTA004: without args.bytes, short copies count as small", "[rules][TTA004]") {
  auto fast = SmallCopies(20, -1, 3).Load();
  CHECK(FindingsWithCode(*fast, "TTA004").size() == 1);
  auto slow = SmallCopies(20, -1, 30).Load();
  CHECK(FindingsWithCode(*slow, "TTA004").empty());
}

TEST_CASE("TTA004: few or large copies are not reported, the count is configurable",
          "[rules][TTA004]") {
  CHECK(FindingsWithCode(*SmallCopies(10, 256).Load(), "TTA004").empty());
  CHECK(FindingsWithCode(*SmallCopies(32, 1 << 20).Load(), "TTA004").empty());
  ttap::RuleOptions o;
  o.values["small_h2d_min_copies"] = 8;
  CHECK(FindingsWithCode(*SmallCopies(10, 256).Load(), "TTA004", o).size() == 1);
}

// ---- TTA013 allocator-churn ----

namespace {

// Three steps. Every step allocates in aten::empty (cudaMalloc, 150 us); with |empty_cache|
// the steady-state steps also call torch.cuda.empty_cache() (two cudaFree, 200 us each).
TinyTrace AllocLoop(bool mallocs_after_first, bool empty_cache) {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    t.Step(s, base, 3000);
    double cpu = base + 10, gpu = base + 20;
    for (int k = 0; k < 10; ++k) {
      t.Kernel("ampere_sgemm_128x64_nn", cpu, 5, gpu, 100);
      cpu += 10;
      gpu += 100;
    }
    if (s == 0 || mallocs_after_first) {
      t.Cpu("aten::empty", base + 1200, 160);
      t.Runtime("cudaMalloc", base + 1205, 150);
    }
    if (s > 0 && empty_cache) {
      t.Python("torch/cuda/memory.py", 192, "empty_cache", base + 1400, 420);
      t.Runtime("cudaFree", base + 1405, 200);
      t.Runtime("cudaFree", base + 1610, 200);
    }
    base += 3000;
  }
  return t;
}

}  // namespace

TEST_CASE("TTA013: cudaMalloc/cudaFree and empty_cache in steady-state steps", "[rules][TTA013]") {
  auto trace = AllocLoop(true, true).Load();
  auto f = FindingsWithCode(*trace, "TTA013");
  REQUIRE(f.size() == 2);  // the empty_cache call site and the aten::empty one
  for (const auto& x : f) {
    CHECK(x.name == "allocator-churn");
    CHECK(x.fix == "avoid-empty-cache");
  }
  // Most time first: empty_cache (420 us per steady step) with step 2's cudaMalloc (150 us),
  // which refills what step 1's empty_cache() emptied; step 1's cudaMalloc follows no
  // empty_cache() (step 0, the warm-up, called none) and stays aten::empty's.
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row).find("empty_cache") != std::string_view::npos);
  CHECK(f[0].step_ids == std::vector<int64_t>{1, 2});  // never the warm-up step
  CHECK(f[0].evidence.at("allocator_calls").number == 5);
  CHECK(f[0].time_lost_us_per_step == Approx((420.0 * 2 + 150) / 3).margin(3));
  REQUIRE(f[1].anchor_row >= 0);
  CHECK(trace->Name(f[1].anchor_row) == "aten::empty");
  CHECK(f[1].step_ids == std::vector<int64_t>{1});
  CHECK(f[1].time_lost_us_per_step == Approx(150.0 / 3).margin(2));
  CHECK(f[0].message.find("empty_cache") != std::string::npos);
}

namespace {

// Four 3 ms steps: the step's first allocation (aten::empty, cudaMalloc 300 us), 10 kernels, then
// torch.cuda.empty_cache() after the step's work: its cudaFree (200 us) under the Python frame
// (|with_stack|) or alone. |every_step| false: the malloc and free in the first step only.
TinyTrace EmptyCacheLoop(bool with_stack, bool every_step = true) {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 4; ++s) {
    t.Step(s, base, 3000);
    t.Cpu("aten::empty", base + 10, 310);
    if (every_step || s == 0) t.Runtime("cudaMalloc", base + 15, 300);
    for (int k = 0; k < 10; ++k)
      t.Kernel("ampere_sgemm_128x64_nn", base + 400 + k * 10, 5, base + 410 + k * 100, 100);
    if (with_stack) t.Python("torch/cuda/memory.py", 192, "empty_cache", base + 2500, 220);
    if (every_step || s == 0) t.Runtime("cudaFree", base + 2505, 200);
    base += 3000;
  }
  return t;
}

}  // namespace

TEST_CASE("TTA013: empty_cache() at each step's end is charged the next step's allocations",
          "[rules][TTA013]") {
  // Each step's first allocation then calls cudaMalloc again. One cause and one fix: one
  // finding, with both calls.
  auto trace = EmptyCacheLoop(true).Load();
  auto f = FindingsWithCode(*trace, "TTA013");
  REQUIRE(f.size() == 1);
  CHECK(trace->Name(f[0].anchor_row).find("empty_cache") != std::string_view::npos);
  // Four empty_cache() regions (220 us; never warm-up) and the four cudaMallocs that refill the
  // cache (300 us): step 0 calls empty_cache() as the later steps do, so the unprofiled step
  // before it did too, and its cudaMalloc is a refill, not warm-up (it was, at first: 3 of 4).
  CHECK(f[0].evidence.at("allocator_calls").number == 8);
  CHECK(f[0].evidence.at("detected_us_per_step").number ==
        Approx((4 * 220.0 + 4 * 300.0) / 4).margin(2));
  // Later steps call empty_cache() with nothing to free and allocate nothing: step 0's cudaMalloc
  // is the cache warming up.
  auto warm = EmptyCacheLoop(true, false).Load();
  auto g = FindingsWithCode(*warm, "TTA013");
  REQUIRE(g.size() == 1);
  CHECK(g[0].evidence.at("allocator_calls").number == 1);
}

TEST_CASE("TTA013: recorded without Python frames, a free outside any op stands for empty_cache()",
          "[rules][TTA013]") {
  // The same loop without with_stack=True: empty_cache() leaves only its cudaFree, outside any
  // op. Still one cause: the free and the cudaMallocs that refill the cache after it.
  auto trace = EmptyCacheLoop(false).Load();
  auto f = FindingsWithCode(*trace, "TTA013");
  REQUIRE(f.size() == 1);
  CHECK(trace->Name(f[0].anchor_row) == "cudaFree");
  CHECK(f[0].evidence.at("allocator_calls").number == 8);
  CHECK(f[0].message.find("outside any op") != std::string::npos);
  // A free in the first step alone is start-up (a cudaFree(0) that creates the context).
  CHECK(FindingsWithCode(*EmptyCacheLoop(false, false).Load(), "TTA013").empty());
}

TEST_CASE("TTA013: a cudaFree that drains the GPU is charged the drain", "[rules][TTA013]") {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  for (int s = 0; s < 2; ++s) {
    const double base = 1000 + s * 3000;
    t.Step(s, base, 3000);
    // 10 kernels queued back to back, GPU busy until base + 1020.
    for (int k = 0; k < 10; ++k)
      t.Kernel("ampere_sgemm_128x64_nn", base + 10 + k * 5, 4, base + 20 + k * 100, 100);
    // cudaFree waits for them (base+100..base+1020), then the CPU takes 300 us to launch more.
    t.Runtime("cudaFree", base + 100, 920);
    t.Kernel("ampere_sgemm_128x64_nn", base + 1320, 5, base + 1330, 100);
  }
  auto f = FindingsWithCode(*t.Load(), "TTA013");
  REQUIRE(f.size() == 1);
  // A free outside any op in every step is churn in the first step too (it stands for
  // empty_cache(), which is never warm-up).
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1});
  // 920 us blocked + 310 us of GPU drain afterwards, in each of the 2 analysed steps.
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(920.0 + 310).margin(2));
  // Replayed: the CPU stops waiting 920 us; the next kernel still queues behind the first ten.
  CHECK(f[0].time_lost_us_per_step == Approx(920.0).margin(2));
}

TEST_CASE("TTA013: allocations only in the first step, or a single step, are warm-up",
          "[rules][TTA013]") {
  CHECK(FindingsWithCode(*AllocLoop(false, false).Load(), "TTA013").empty());
  TinyTrace one;
  one.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  one.Kernel("ampere_sgemm_128x64_nn", 1010, 5, 1020, 100);
  one.Runtime("cudaMalloc", 1200, 150);
  one.Runtime("cudaFree", 1400, 150);
  CHECK(FindingsWithCode(*one.Load(), "TTA013").empty());
  // A run without steps (one cold iteration) that allocates in 40 ops, each between the GPU's
  // work, and frees twice: the caching allocator filling up, which keeps what it allocated. A
  // LoRA step profiled from the process's start (56 cudaMalloc, 2 cudaFree) said TTA013 "in
  // steady-state steps". The same allocations each freed again are churn (the allocator off).
  auto cold_iteration = [](bool frees_each) {
    TinyTrace t;
    t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
    ttap_test::StreamClock gpu;
    double cpu = 1000;
    for (int k = 0; k < 40; ++k) {
      t.Cpu("aten::empty", cpu, 310);
      t.Runtime("cudaMalloc", cpu + 5, 300);
      cpu += 320;
      gpu.Kernel(t, "ampere_sgemm_128x64_nn", cpu, 5, 3, 100);
      cpu += 10;
      if (frees_each || k % 20 == 0) {
        t.Runtime("cudaFree", cpu, 200);
        cpu += 210;
      }
    }
    t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu.free - cpu + 3));
    return t;
  };
  CHECK(FindingsWithCode(*cold_iteration(false).Load(), "TTA013").empty());
  CHECK(FindingsWithCode(*cold_iteration(true).Load(), "TTA013").size() == 1);
}

// ---- TTA014 device-ping-pong ----

namespace {

// Per step: |n| tensors of |out_bytes| moved to the host (aten::to, pageable D2H, 100 us each),
// then |n| of |in_bytes| moved back (aten::to, H2D, 80 us each); |back_first| reverses the order.
TinyTrace PingPong(int n, long long out_bytes, long long in_bytes, bool back_first = false,
                   const char* out_name = "Memcpy DtoH (Device -> Pinned)",
                   const char* in_name = kPinnedH2D) {
  return Steps(3, [=](TinyTrace& t, double base) {
    for (int i = 0; i < n; ++i) {
      const double out_ts = base + (back_first ? 700 : 50) + i * 130;
      const double in_ts = base + (back_first ? 50 : 700) + i * 130;
      t.Cpu("aten::to", out_ts, 120);
      t.Launch(out_name, out_ts + 2, 110, out_ts + 5, 100, "gpu_memcpy", 7, "cudaMemcpyAsync",
               out_bytes);
      t.Cpu("aten::to", in_ts, 100);
      t.Launch(in_name, in_ts + 2, 90, in_ts + 5, 80, "gpu_memcpy", 7, "cudaMemcpyAsync", in_bytes);
    }
  });
}

}  // namespace

TEST_CASE("TTA014: tensors copied to the host and back every step", "[rules][TTA014]") {
  auto trace = PingPong(4, 4 << 20, 4 << 20).Load();
  auto f = FindingsWithCode(*trace, "TTA014", ExactWhatIfs());
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "device-ping-pong");
  CHECK(f[0].fix == "keep-on-device");
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2});
  CHECK(f[0].evidence.at("detected_us_per_step").number == Approx(4 * (100 + 80)).margin(1));
  // Replayed: the copies go with the aten::to ops that made them (120 and 100 us, their 110 /
  // 90 us launch calls included), all on the CPU's path: 4 x 220.
  // With them goes the host time between the copies out and back (260 us: nothing else is
  // launched there but the round trip's own copies of the other tensors).
  CHECK(f[0].time_lost_us_per_step == Approx(4 * (120 + 100) + 260).margin(1));
  CHECK(f[0].evidence.at("round_trips").number == 12);
  REQUIRE(f[0].anchor_row >= 0);
  CHECK(trace->Name(f[0].anchor_row) == "aten::to");
  // The anchor is the op that moved the data out, not the one that brought it back.
  const double step_start = trace->steps[0].cpu_start;
  CHECK(trace->events.ts[f[0].anchor_row] < step_start + 600 * 1000);
  CHECK(f[0].message.find("16.0 MiB") != std::string::npos);
}

TEST_CASE("TTA014: pinning the copies it removes is another fix for the same work, not more",
          "[rules][TTA014][TTA003]") {
  // Per 1.2 ms step: a tensor's blocking `.cpu()` (pageable, 500 us) and its `.cuda()` back
  // (pageable, 400 us), then a 100 us kernel. Keeping it on the device (TTA014) and pinning both
  // copies (TTA003) fix the same copies: together their claims exceed the step, yet neither
  // scales the other down; TTA014 claims what it saves alone.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double base = 1000;
  for (int s = 0; s < 3; ++s) {
    t.Step(s, base, 1200);
    t.Python("train.py", 30, "<module>", base + 1, 1198);
    t.Cpu("aten::to", base + 10, 520);
    t.Launch(kPageableD2H, base + 12, 510, base + 15, 500, "gpu_memcpy", 7, "cudaMemcpyAsync",
             4 << 20);
    t.Cpu("aten::to", base + 540, 420);
    t.Launch(kPageableH2D, base + 542, 410, base + 545, 400, "gpu_memcpy", 7, "cudaMemcpyAsync",
             4 << 20);
    t.Kernel("ampere_sgemm_128x64_nn", base + 970, 5, base + 980, 100);
    base += 1200;
  }
  auto trace = t.Load();
  auto all = ttap::RunRules(*trace, {});
  const ttap::Finding* ping_pong = nullptr;
  double pinned_claims = 0;
  for (const auto& f : all.findings) {
    if (f.code == "TTA014") ping_pong = &f;
    if (f.code == "TTA003") pinned_claims += f.time_lost_us_per_step;
  }
  REQUIRE(ping_pong != nullptr);
  INFO(ping_pong->message);
  const double alone = ping_pong->evidence.at("saving_alone_us_per_step").number;
  CHECK(alone + pinned_claims > trace->steps[0].end() / 1000.0 - trace->steps[0].start() / 1000.0);
  CHECK(ping_pong->time_lost_us_per_step == Approx(alone).margin(1));
  CHECK(alone >= 900);  // both copies and their blocking calls
}

TEST_CASE("TTA014: same-size copies of different tensors are not a round trip", "[rules][TTA014]") {
  // Outputs copied into pinned memory, next inputs copied from pageable memory: the same 4 MiB,
  // but two host buffers (pinned and pageable are never one tensor).
  auto different =
      PingPong(4, 4 << 20, 4 << 20, false, "Memcpy DtoH (Device -> Pinned)", kPageableH2D).Load();
  CHECK(FindingsWithCode(*different, "TTA014").empty());
  // The same buffer (pageable both ways, as `.cpu()` then `.cuda()` of one tensor) is.
  auto same =
      PingPong(4, 4 << 20, 4 << 20, false, "Memcpy DtoH (Device -> Pageable)", kPageableH2D).Load();
  CHECK(FindingsWithCode(*same, "TTA014").size() == 1);
}

TEST_CASE("TTA014: on ROCm, whose copies say only Host, the timing tells the host buffers apart",
          "[rules][TTA014]") {
  // Per 2 ms step on an MI300X: 4 MiB out, then 4 MiB in. |out_async|: the read-back returns
  // before its copy is done (non_blocking into pinned memory); else it blocks at pageable speed.
  // The copy in always blocks, 500 us for 4 MiB (8.4 GB/s: staged from pageable memory).
  auto trace = [](bool out_async) {
    TinyTrace t;
    t.Device(0, "AMD Instinct MI300X", 9, 4);
    double base = 1000;
    for (int s = 0; s < 3; ++s) {
      t.Step(s, base, 2000);
      t.Cpu("aten::to", base + 50, out_async ? 12 : 520);
      t.Launch("Memcpy DtoH (Device -> Host)", base + 52, out_async ? 8 : 510, base + 60, 500,
               "gpu_memcpy", 7, out_async ? "hipMemcpyAsync" : "hipMemcpyWithStream", 4 << 20);
      t.Cpu("aten::to", base + 700, 530);
      t.Launch("Memcpy HtoD (Host -> Device)", base + 702, 520, base + 710, 500, "gpu_memcpy", 7,
               "hipMemcpyWithStream", 4 << 20);
      t.Kernel("Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1", base + 1300, 5, base + 1310, 300);
      base += 2000;
    }
    return t.Load();
  };
  // Out into pinned memory, in from pageable memory: two tensors of one size.
  CHECK(FindingsWithCode(*trace(true), "TTA014").empty());
  // Both staged through pageable memory (`.cpu()` then `.cuda()` of one tensor): a round trip.
  CHECK(FindingsWithCode(*trace(false), "TTA014").size() == 1);
}

TEST_CASE("TTA014: the host work between a copy out and its copy back leaves the step too",
          "[rules][TTA014]") {
  // Per step: 4 MiB to the host, 300 us of numpy on it, and back; nothing else launched between.
  auto trace = Steps(3, [](TinyTrace& t, double base) {
                 t.Launch("Memcpy DtoH (Device -> Pinned)", base + 50, 110, base + 55, 100,
                          "gpu_memcpy", 7, "cudaMemcpyAsync", 4 << 20);
                 t.Python("numpy/core/fromnumeric.py", 2313, "clip", base + 170, 300);
                 t.Launch(kPinnedH2D, base + 480, 90, base + 485, 80, "gpu_memcpy", 7,
                          "cudaMemcpyAsync", 4 << 20);
               }).Load();
  auto f = FindingsWithCode(*trace, "TTA014");
  REQUIRE(f.size() == 1);
  // The copies' calls (110 + 90 us), the numpy work (300 us) and the CPU time around it (20 us).
  CHECK(f[0].time_lost_us_per_step == Approx(520).margin(2));
}

TEST_CASE("TTA014: copies belong to the step that launched them, wherever the GPU ran them",
          "[rules][TTA014]") {
  // The stream runs far behind its launches: each step's copy to the host runs on the GPU 3 ms
  // after its launch, in the next step's time; the copy back follows it. Paired by launch, the
  // round trip is still one step's.
  auto trace = Steps(4, [](TinyTrace& t, double base) {
                 t.Launch("Memcpy DtoH (Device -> Pinned)", base + 50, 10, base + 3050, 100,
                          "gpu_memcpy", 7, "cudaMemcpyAsync", 4 << 20);
                 t.Launch(kPinnedH2D, base + 400, 10, base + 3160, 80, "gpu_memcpy", 7,
                          "cudaMemcpyAsync", 4 << 20);
               }).Load();
  auto f = FindingsWithCode(*trace, "TTA014");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("round_trips").number == 4);
  CHECK(f[0].step_ids == std::vector<int64_t>{0, 1, 2, 3});
}

TEST_CASE("TTA014: different sizes, tiny scalars or the wrong order are not a round trip",
          "[rules][TTA014]") {
  CHECK(FindingsWithCode(*PingPong(4, 4 << 20, 2 << 20).Load(), "TTA014").empty());
  CHECK(FindingsWithCode(*PingPong(4, 8, 8).Load(), "TTA014").empty());  // .item()-like reads
  CHECK(FindingsWithCode(*PingPong(4, 4 << 20, 4 << 20, true).Load(), "TTA014").empty());
  ttap::RuleOptions o;
  o.values["ping_pong_min_bytes"] = 16;
  CHECK(FindingsWithCode(*PingPong(4, 8, 8).Load(), "TTA014", o).size() == 1);
}

TEST_CASE("memory rules stay quiet on a trace without GPU activity", "[rules]") {
  TinyTrace t;
  for (int s = 0; s < 3; ++s) {
    const double base = 1000 + s * 10000;
    t.Step(s, base, 10000);
    t.Cpu("aten::to", base + 10, 500);
    t.Runtime("cudaMalloc", base + 600, 300);
  }
  auto trace = t.Load();
  for (const char* code : {"TTA003", "TTA004", "TTA013", "TTA014"}) {
    CHECK(FindingsWithCode(*trace, code).empty());
  }
}

TEST_CASE("TTA013: empty_cache() is never warm-up, and the allocations that refill it are its cost",
          "[rules][TTA013]") {
  // One step: a kernel, torch.cuda.empty_cache() freeing 4 blocks (300 us each), then 4
  // aten::empty re-allocating them (200 us each).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("ampere_sgemm_128x64_nn", 1010, 5, 1020, 100);
  t.Python("torch/cuda/memory.py", 192, "empty_cache", 1100, 1220);
  for (int i = 0; i < 4; ++i) t.Runtime("cudaFree", 1105 + i * 302, 300);
  for (int i = 0; i < 4; ++i) {
    t.Cpu("aten::empty", 2400 + i * 210, 205);
    t.Runtime("cudaMalloc", 2402 + i * 210, 200);
  }
  t.Step(0, 1000, 2300);
  auto f = FindingsWithCode(*t.Load(), "TTA013");
  REQUIRE(f.size() == 1);
  CHECK(f[0].evidence.at("empty_cache_calls").number == 1);
  CHECK(f[0].evidence.at("allocator_calls").number == 8);
  CHECK(f[0].evidence.at("call_us").number == Approx(1220 + 4 * 200).margin(5));
}

TEST_CASE("TTA004: each burst of copies is batched where it was made", "[rules][TTA004]") {
  // Three steps of 32 small copies: the fix sends each step's burst as one copy, so three copies
  // carry the bytes (one per step). Batching every copy of the finding into its very last one
  // queued three steps of bytes at the end of the run (one copy, in the last step).
  auto trace = SmallCopies(32, 256).Load();
  auto f = FindingsWithCode(*trace, "TTA004");
  REQUIRE(f.size() == 1);
  std::vector<int32_t> keep(f[0].rows.begin(), f[0].rows.end());
  ttap::CausalGraph g = ttap::BuildCausalGraph(*trace, keep);
  ttap::WhatIf w = ttap::FixWhatIf(*trace, g, f[0], ttap::FindRuleSpec("TTA004")->plan.model);
  int batches = 0;
  for (const auto& [n, d] : w.dur) {
    if (g.role[n] == ttap::NodeRole::kGpu && d > g.dur[n]) ++batches;
  }
  CHECK(batches == 3);
}

TEST_CASE(
    "TTA003: the stream sync of a pageable upload goes with pinning; a read-back's sync stays",
    "[rules][TTA003][TTA002]") {
  // Host to device: pinned memory and non_blocking=True drop copy_'s cudaStreamSynchronize, so
  // the host sync in aten::to is TTA003's symptom and the pageable copy ranks first.
  auto upload = BlockingReadback("Memcpy HtoD (Pageable -> Device)", "cudaMemcpyAsync",
                                 "NVIDIA A100-SXM4-80GB", 8, 1 << 20, true)
                    .Load();
  auto u = ttap::RunRules(*upload, {});
  REQUIRE(!u.findings.empty());
  INFO(u.findings.front().message);
  CHECK(u.findings.front().code == "TTA003");
  CHECK(u.findings.front().time_lost_us_per_step > 200);
  for (const auto& f : u.findings) {
    if (f.code != "TTA002") continue;
    INFO(f.message);
    REQUIRE(f.evidence.count("symptom_of") == 1);
    CHECK(f.evidence.at("symptom_of").text == "TTA003");
    CHECK(f.time_lost_us_per_step < u.findings.front().time_lost_us_per_step);
  }
  // Device to host: the host reads what it copied, so the sync stays with pinned memory; the
  // host sync is a cause of its own and outranks the copy.
  auto readback = BlockingReadback("Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync",
                                   "NVIDIA A100-SXM4-80GB", 8, 1 << 20, true)
                      .Load();
  auto r = ttap::RunRules(*readback, {});
  REQUIRE(!r.findings.empty());
  INFO(r.findings.front().message);
  CHECK(r.findings.front().code == "TTA002");
  CHECK(r.findings.front().evidence.count("symptom_of") == 0);
}

// The causal model (analysis/causal/causal_graph.h): the unchanged replay reproduces the trace's
// own step times, the attribution adds up to each step's wall time, and its largest cause is the
// one a person reading the trace would name (tiny inline traces), then the same invariants on
// every shared real trace. Real traces skip when ../shared is absent.
#include "analysis/causal/causal_graph.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "analysis/tiny_trace.h"

using namespace ttap;
using ttap_test::TinyTrace;

namespace {

Cause Largest(const StepAttribution& a) {
  int best = 0;
  for (int c = 1; c < kCauseCount; ++c) {
    if (a.ns[c] > a.ns[best]) best = c;
  }
  return static_cast<Cause>(best);
}

void RequireReplayMatches(const Trace& t, const CausalGraph& g, const Replay& r) {
  auto spans = AnalysedSteps(t);
  REQUIRE(r.step_start.size() == spans.size());
  for (size_t k = 0; k < spans.size(); ++k) {
    if (!t.steps.empty()) {
      CHECK(r.step_start[k] == spans[k].start_ns);
      CHECK(r.step_end[k] == spans[k].end_ns);
    }
  }
  for (size_t v = 0; v < g.size(); ++v) {
    INFO("node " << v << " row " << g.row[v]);
    CHECK(r.end[v] == g.ObsEnd(v));
    CHECK(r.Start(v) == g.obs_start[v]);
  }
}

}  // namespace

TEST_CASE("launch-bound loop: replay is exact and launch overhead is the largest cause",
          "[causal]") {
  auto trace = ttap_test::Eager(40, 6, 10, 4).Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay r = RunReplay(g);
  RequireReplayMatches(*trace, g, r);
  auto at = AttributeSteps(*trace, g, r);
  REQUIRE(at.size() == 3);
  for (size_t k = 0; k < at.size(); ++k) {
    CHECK(at[k].total() == r.step_end[k] - r.step_start[k]);
    CHECK((Largest(at[k]) == Cause::kLaunch || Largest(at[k]) == Cause::kCpuWork));
    CHECK(at[k].ns[static_cast<int>(Cause::kGpuKernel)] < at[k].total() / 4);
  }
}

TEST_CASE("GPU-bound loop: GPU compute is the largest cause", "[causal]") {
  auto trace = ttap_test::Eager(20, 6, 10, 400).Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay r = RunReplay(g);
  RequireReplayMatches(*trace, g, r);
  auto at = AttributeSteps(*trace, g, r);
  for (size_t k = 0; k < at.size(); ++k) {
    CHECK(at[k].total() == r.step_end[k] - r.step_start[k]);
    CHECK(Largest(at[k]) == Cause::kGpuKernel);
  }
}

TEST_CASE("a sync waits for the GPU: the replay waits too, and shorter GPU work shortens it",
          "[causal]") {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("volta_sgemm_128x64_nn", 1010, 5, 1020, 1000);  // 1020..2020
  t.Runtime("cudaStreamSynchronize", 1020, 1005);          // waits until 2020, returns 2025
  t.Cpu("aten::add", 2030, 50);
  t.Step(1, 1000, 1100);
  t.Step(2, 2100, 100);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  CHECK(g.stats.syncs == 1);
  Replay base = RunReplay(g);
  RequireReplayMatches(*trace, g, base);
  // The kernel made 10x faster: the sync returns 900 us earlier.
  WhatIf w;
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.role[v] == NodeRole::kGpu) w.dur.emplace_back(static_cast<int32_t>(v), 100000);
  }
  Replay faster = RunReplay(g, &w);
  CHECK(base.total_step_ns() - faster.total_step_ns() == 900000);
  auto at = AttributeSteps(*trace, g, base);
  CHECK(at[0].total() == 1100000);
  CHECK(Largest(at[0]) == Cause::kGpuMatmul);
  CHECK(at[0].ns[static_cast<int>(Cause::kHostSync)] == 5000);
}

TEST_CASE("the library's memory-bound kernels are not matrix math; int4 GEMMs and GEMVs are",
          "[causal]") {
  TinyTrace t;
  t.Device(0, "NVIDIA A10G", 8, 6);
  // Four launches back to back, the kernels queued behind each other, a sync for the last.
  t.Kernel("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>()", 1010, 5,
           1020, 1000);  // ..2020
  t.Kernel("void cudnn::ops::nchwToNhwcKernel<float, float, float>()", 1016, 5, 2021, 500);
  t.Kernel("void marlin::Marlin<256, 1, 8, 8, 4, 8>()", 1022, 5, 2522, 2000);     // ..4522
  t.Kernel("void gemvx::kernel<int, int, __nv_bfloat16>()", 1028, 5, 4523, 300);  // ..4823
  t.Runtime("cudaStreamSynchronize", 1034, 3794);                                 // ..4828
  t.Step(1, 1000, 3830);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay r = RunReplay(g);
  auto at = AttributeSteps(*trace, g, r);
  REQUIRE(at.size() == 1);
  for (int c = 0; c < kCauseCount; ++c)
    INFO(CauseName(static_cast<Cause>(c)) << " " << at[0].ns[c]);
  CHECK(at[0].ns[static_cast<int>(Cause::kGpuKernel)] >= 1500000);
  CHECK(at[0].ns[static_cast<int>(Cause::kGpuMatmul)] >= 2300000);
}

TEST_CASE("a first kernel held by work queued before the profile is a GPU wait, not a launch",
          "[causal]") {
  // 18 launches in 2 ms; the first kernel starts 35 ms after its launch (the stream busy with
  // work launched before the profile began), the rest queue behind it; a sync waits for all.
  TinyTrace t;
  t.Device(0, "NVIDIA RTX A5000", 8, 6);
  double gpu = 1000 + 35000;
  for (int k = 0; k < 18; ++k) {
    t.Kernel("ampere_sgemm_128x64_tn", 1000 + 100 * k, 10, gpu, 4000);
    gpu += 4000;
  }
  t.Runtime("cudaDeviceSynchronize", 2900, gpu - 2900 + 5);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay r = RunReplay(g);
  auto at = AttributeSteps(*trace, g, r);
  REQUIRE(at.size() == 1);
  CHECK(at[0].ns[static_cast<int>(Cause::kLaunch)] < 1500000);
  CHECK(at[0].ns[static_cast<int>(Cause::kGpuWait)] > 30000000);
}

TEST_CASE("what-ifs that change few or most durations replay alike: the smallest change wins",
          "[causal]") {
  auto trace = ttap_test::Eager(40, 6, 10, 4).Load();
  CausalGraph g = BuildCausalGraph(*trace);
  // The expected replay: the graph itself with each changed duration written in.
  auto replay_written = [&](const std::vector<std::pair<int32_t, int64_t>>& dur) {
    CausalGraph copy = g;
    for (const auto& [v, d] : dur) copy.dur.Set(v, std::max<int64_t>(0, d));
    return RunReplay(copy);
  };
  // Few nodes (kept in the change list) and every CPU node (a copy of the duration column),
  // each split over two what-ifs that also propose larger values for the same nodes.
  for (size_t every : {size_t{97}, size_t{1}}) {
    INFO("every " << every << "th node");
    WhatIf small, large;
    std::vector<std::pair<int32_t, int64_t>> expected;
    for (size_t v = 0; v < g.size(); v += every) {
      if (g.role[v] != NodeRole::kCpuWork) continue;
      const int64_t d = v % 3 == 0 ? -5 : g.dur[v] / 2;  // a negative duration means none
      small.dur.emplace_back(static_cast<int32_t>(v), d);
      large.dur.emplace_back(static_cast<int32_t>(v), g.dur[v] * 2);
      expected.emplace_back(static_cast<int32_t>(v), d);
    }
    REQUIRE(!expected.empty());
    Replay want = replay_written(expected);
    Replay got;
    RunReplay(g, {&large, &small}, &got);
    CHECK(got.end == want.end);
    CHECK(got.len == want.len);
    CHECK(got.step_end == want.step_end);
    RunReplay(g, nullptr, &got);  // the same memory replays the unchanged graph unchanged
    RequireReplayMatches(*trace, g, got);
  }
}

TEST_CASE("a what-if's dense columns replay as its lists do, alone and beside listed changes",
          "[causal]") {
  // A fix that changes most of a large graph holds its durations and launch latencies as
  // columns (ChangeColumn): the replay must not tell them from the same changes listed, also
  // where both forms name one node (the smallest wins) and where a value needs 64 bits.
  auto trace = ttap_test::Eager(40, 6, 10, 4).Load();
  CausalGraph g = BuildCausalGraph(*trace);
  WhatIf listed, dense, other;
  dense.dense_dur.Init(g.size());
  dense.dense_cross_gap.Init(g.size());
  for (size_t v = 0; v < g.size(); ++v) {
    const auto n = static_cast<int32_t>(v);
    if (g.role[v] == NodeRole::kCpuWork) {
      const int64_t d = v % 5 == 0 ? int64_t{3} << 33 : g.dur[v] / 3;  // 8.6 s: kept aside
      listed.dur.emplace_back(n, d);
      dense.dense_dur.SetMin(v, d);
    } else if (g.role[v] == NodeRole::kGpu && g.cross[v] >= 0) {
      listed.cross_gap.emplace_back(n, -1000);
      dense.dense_cross_gap.SetMin(v, -1000);
      dense.dense_cross_gap.SetMin(v, 5000);  // the smaller holds
    }
    if (v % 7 == 0 && g.role[v] == NodeRole::kCpuWork) other.dur.emplace_back(n, 0);
  }
  REQUIRE(dense.dense_dur.count() == listed.dur.size());
  REQUIRE(dense.dense_cross_gap.count() == listed.cross_gap.size());
  REQUIRE(dense.DurCount() == listed.DurCount());
  size_t visited = 0;
  dense.ForEachDur([&](int32_t, int64_t) { ++visited; });
  CHECK(visited == listed.dur.size());
  for (bool with_other : {false, true}) {
    INFO("beside another what-if's listed changes: " << with_other);
    Replay want, got;
    std::vector<const WhatIf*> a{&listed}, b{&dense};
    if (with_other) {
      a.push_back(&other);
      b.push_back(&other);
    }
    RunReplay(g, a, &want);
    RunReplay(g, b, &got);
    CHECK(got.end == want.end);
    CHECK(got.len == want.len);
    CHECK(got.step_end == want.step_end);
    CHECK(got.total_step_ns() != RunReplay(g).total_step_ns());
  }
}

TEST_CASE("a recorded stream wait: the waiting kernel follows the awaited one, in replay and path",
          "[causal]") {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("volta_sgemm_128x64_nn", 1010, 5, 1020, 1000, 7);  // K1 on stream 7: 1020..2020
  t.Cpu("cudaEventRecord", 1016, 2, "cuda_runtime", 1, "\"correlation\": 9001");
  t.Cpu("cudaStreamWaitEvent", 1019, 2, "cuda_runtime", 1, "\"correlation\": 9002");
  t.Raw(
      "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Wait Event\", \"pid\": 0, "
      "\"tid\": 20, \"ts\": 1019, \"dur\": 1, \"args\": {\"correlation\": 9002, \"stream\": 20, "
      "\"device\": 0, \"wait_on_stream\": 7, \"wait_on_cuda_event_record_corr_id\": 9001}}");
  t.Kernel("void add_kernel", 1022, 5, 2025, 100, 20);  // K2 on stream 20 waits: 2025..2125
  t.Runtime("cudaDeviceSynchronize", 1030, 1100);       // returns at 2130
  t.Step(1, 1000, 1200);
  t.Step(2, 2200, 100);
  t.Cpu("aten::add", 2210, 50);
  // Kernels launched onto idle streams start ~10 us after their launch (the typical latency).
  for (int k = 0; k < 3; ++k) t.Kernel("void relu_kernel", 2215 + 10 * k, 4, 2225 + 10 * k, 3);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  CHECK(g.stats.stream_waits == 1);
  Replay base = RunReplay(g);
  RequireReplayMatches(*trace, g, base);
  // K1 twice as fast: K2 follows it 500 us earlier, and so does the sync.
  WhatIf w;
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.role[v] == NodeRole::kGpu && g.dur[v] == 1000000) {
      w.dur.emplace_back(static_cast<int32_t>(v), 500000);
    }
  }
  REQUIRE(w.dur.size() == 1);
  CHECK(base.total_step_ns() - RunReplay(g, &w).total_step_ns() == 500000);
  // The step's path runs through K2's wait into K1.
  auto at = AttributeSteps(*trace, g, base);
  CHECK(at[0].total() == base.step_end[0] - base.step_start[0]);
  CHECK(at[0].ns[static_cast<int>(Cause::kGpuMatmul)] == 1000000);
}

TEST_CASE("an unrecorded stream wait is inferred: a kernel held until a collective ended",
          "[causal]") {
  // No cuda_sync records: K2 on the compute stream was launched at 1032 and its stream idle
  // from 1120, yet it started at 1803, 3 us after the collective on stream 30 ended (DDP's
  // cudaStreamWaitEvent on the all-reduce leaves only that trace).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("volta_sgemm_128x64_nn", 1010, 5, 1020, 100, 7);                     // K1: 1020..1120
  t.Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1020, 5, 1100, 700, 30);  // 1100..1800
  t.Cpu("cudaStreamWaitEvent", 1027, 2, "cuda_runtime", 1, "\"correlation\": 9002");
  t.Kernel("void add_kernel", 1032, 5, 1803, 50, 7);  // K2: 1803..1853
  t.Runtime("cudaDeviceSynchronize", 1040, 820);      // returns at 1860
  t.Step(1, 1000, 870);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  CHECK(g.stats.stream_waits == 0);
  CHECK(g.stats.inferred_stream_waits == 1);
  Replay base = RunReplay(g);
  RequireReplayMatches(*trace, g, base);
  // The collective overlapped (off the path): K2 follows K1, 683 us earlier, the sync with it.
  WhatIf w;
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.role[v] == NodeRole::kGpu && g.dur[v] == 700000) w.dur.emplace_back(v, 0);
  }
  REQUIRE(w.dur.size() == 1);
  CHECK(base.total_step_ns() - RunReplay(g, &w).total_step_ns() == Approx(683000).margin(5000));
  auto at = AttributeSteps(*trace, g, base);
  CHECK(at[0].ns[static_cast<int>(Cause::kCommunication)] > 600000);
  // A kernel that waited for its own late launch is not given a wait.
  TinyTrace late;
  late.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  late.Kernel("volta_sgemm_128x64_nn", 1010, 5, 1020, 100, 7);
  late.Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1020, 5, 1100, 700, 30);
  late.Kernel("void add_kernel", 1790, 5, 1803, 50, 7);  // launched at 1790
  late.Step(1, 1000, 870);
  CHECK(BuildCausalGraph(*late.Load()).stats.inferred_stream_waits == 0);
}

TEST_CASE("a blocking copy held until a collective ended waited for it (its call returns late)",
          "[causal]") {
  // The next batch's pageable copy is launched at 1040 but held on the compute stream until the
  // all-reduce on stream 30 ends at 1800; its call returns with the copy at 1850. The call
  // ending after the copy started does not hide the wait.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("volta_sgemm_128x64_nn", 1010, 5, 1020, 100, 7);
  t.Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1020, 5, 1100, 700, 30);  // 1100..1800
  t.Launch("Memcpy HtoD (Pageable -> Device)", 1040, 811, 1801, 50, "gpu_memcpy", 7,
           "cudaMemcpyAsync", 1 << 20);
  t.Step(1, 1000, 870);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  CHECK(g.stats.inferred_stream_waits == 1);
  Replay base = RunReplay(g);
  RequireReplayMatches(*trace, g, base);
}

TEST_CASE(
    "a blocking copy whose copy ran early but whose call returned as a collective ended waited "
    "for the collective",
    "[causal]") {
  // A pageable device-to-host copy on stream 9 runs at 1045..1047, yet its call (1040) returns
  // only at 1802, 2 us after the all-reduce on stream 30 ends: the call waited for the device
  // (the legacy default stream's order, or the driver's staging). With the collective gone, the
  // call returns right after its copy.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1020, 5, 1100, 700, 30);  // 1100..1800
  t.Launch("Memcpy DtoH (Device -> Pageable)", 1040, 762, 1045, 2, "gpu_memcpy", 9,
           "cudaMemcpyAsync", 1 << 10);
  t.Cpu("aten::add", 1803, 20);
  t.Step(1, 1000, 830);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay base = RunReplay(g);
  RequireReplayMatches(*trace, g, base);
  WhatIf w;
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.role[v] == NodeRole::kGpu && g.dur[v] == 700000) w.dur.emplace_back(v, 0);
  }
  REQUIRE(w.dur.size() == 1);
  // The call now ends when the collective would have (1100, at its start) instead of 1802.
  CHECK(base.total_step_ns() - RunReplay(g, &w).total_step_ns() == Approx(700000).margin(10000));
  // A call that returns long after its copy, but not as any other activity ends, keeps its time
  // as its own (nothing to attribute it to).
  TinyTrace lone;
  lone.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  lone.Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1020, 5, 1100, 300, 30);  // ..1400
  lone.Launch("Memcpy DtoH (Device -> Pageable)", 1040, 762, 1045, 2, "gpu_memcpy", 9,
              "cudaMemcpyAsync", 1 << 10);
  lone.Step(1, 1000, 830);
  auto lone_trace = lone.Load();
  CausalGraph lg = BuildCausalGraph(*lone_trace);
  WhatIf lw;
  for (size_t v = 0; v < lg.size(); ++v) {
    if (lg.role[v] == NodeRole::kGpu && lg.dur[v] == 300000) lw.dur.emplace_back(v, 0);
  }
  REQUIRE(lw.dur.size() == 1);
  Replay lbase = RunReplay(lg);
  CHECK(lbase.total_step_ns() - RunReplay(lg, &lw).total_step_ns() == Approx(0).margin(1000));
}

TEST_CASE("steps inferred from Optimizer.step end where their GPU work ends, as ProfilerStep's do",
          "[causal]") {
  // No ProfilerStep: four optimizer steps end four steps (the first from the thread's first
  // event). The last one launches a collective that runs 2 ms past the loop's end: that tail is
  // the last step's time (clipped elsewhere at the next step's start).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  for (int k = 0; k < 4; ++k) {
    const double s = 1000 + 1000 * k;
    t.Cpu("aten::mm", s, 100);
    t.Kernel("volta_sgemm_128x64_nn", s + 10, 5, s + 20, 300);  // ends well inside the step
    t.Cpu("Optimizer.step#SGD.step", s + 500, 100, "user_annotation");
  }
  t.Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 4550, 5, 4560, 2000, 30);  // to 6560
  auto trace = t.Load();
  REQUIRE(trace->steps.empty());
  auto spans = AnalysedSteps(*trace);
  REQUIRE(spans.size() == 4);
  CHECK(spans[0].start_ns == 1000000);
  CHECK(spans[0].end_ns == 1600000);
  CHECK(spans[1].end_ns == spans[1].cpu_end_ns);
  CHECK(spans[2].end_ns == spans[2].cpu_end_ns);
  CHECK(spans[3].cpu_end_ns == 4600000);
  CHECK(spans[3].end_ns == 6560000);
  CausalGraph g = BuildCausalGraph(*trace);
  Replay r = RunReplay(g);
  REQUIRE(r.step_end.size() == 4);
  CHECK(r.step_end[3] == spans[3].end_ns);
}

TEST_CASE("a serving loop's last, empty mark is a stub, not a step", "[causal]") {
  // A CPU vLLM run: three prefill batches of ~600 ms marked execute_context_<n>(<tokens>), then
  // the engine's last mark once the requests are done: 0.3 ms, no work under it.
  TinyTrace t;
  const double lens[] = {594000, 1199000, 595000};
  const char* names[] = {"execute_context_2(2048)_generation_0(0)",
                         "execute_context_4(4096)_generation_0(0)",
                         "execute_context_2(2048)_generation_0(0)"};
  double s = 1000;
  for (int k = 0; k < 3; ++k) {
    t.Cpu(names[k], s, lens[k], "user_annotation");
    t.Cpu("aten::mm", s + 10, lens[k] - 20);
    s += lens[k] + 100;
  }
  t.Cpu("execute_context_0(0)_generation_0(0)", s, 300, "user_annotation");
  auto trace = t.Load();
  auto spans = AnalysedSteps(*trace);
  CHECK(spans.size() == 3);
}

TEST_CASE("a loop's record_function marks its steps under Python frames and with numbered names",
          "[causal]") {
  // vLLM's engine annotates each step "execute_new_<n>_cached_<m>" inside its Python frames
  // (with_stack=True): the same loop as without stacks, whatever the counts in its names.
  auto make = [](bool frames) {
    TinyTrace t;
    t.Device(0, "NVIDIA GeForce RTX 3090", 8, 6);
    if (frames) t.Python("llm_engine.py", 10, "step_loop", 500, 5000);
    const char* names[] = {"execute_new_2_cached_0", "execute_new_0_cached_4",
                           "execute_new_0_cached_4", "execute_new_0_cached_12"};
    for (int k = 0; k < 4; ++k) {
      const double s = 1000 + 1000 * k;
      if (frames) t.Python("gpu_model_runner.py", 20, "execute_model", s - 50, 800);
      t.Cpu(names[k], s, 600, "user_annotation");
      t.Cpu("aten::mm", s + 100, 100);
      t.Kernel("ampere_bf16_s16816gemm_bf16_64x64", s + 110, 5, s + 120, 300);
    }
    return t.Load();
  };
  for (bool frames : {false, true}) {
    INFO("with Python frames: " << frames);
    auto trace = make(frames);
    REQUIRE(trace->steps.empty());
    auto spans = AnalysedSteps(*trace);
    REQUIRE(spans.size() == 4);
    CHECK(spans[0].start_ns == 1000000);
    CHECK(spans[1].start_ns == 2000000);
    CHECK(spans[3].start_ns == 4000000);
    CHECK(spans[0].inferred);
  }
}

TEST_CASE("blocks run a few times each in one part of the run do not mark steps", "[causal]") {
  // A benchmark runs each layer three times in turn, then a long tail: no loop spans the run.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  for (int k = 0; k < 3; ++k)
    t.Cpu("LayerNorm affine=True", 1000 + 300 * k, 200, "user_annotation");
  for (int k = 0; k < 3; ++k) t.Cpu("RMSNorm affine=True", 2000 + 300 * k, 200, "user_annotation");
  t.Cpu("aten::mm", 3000, 8000);
  auto trace = t.Load();
  auto spans = AnalysedSteps(*trace);
  REQUIRE(spans.size() == 1);
  CHECK(!spans[0].inferred);
}

namespace {

// The first five of the main thread's 100 us op slices (half of the tests' ten ops) made free.
WhatIf HalfOfMainThreadOps(const CausalGraph& g) {
  WhatIf w;
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.lanes[g.LaneOf(static_cast<int32_t>(v))].main && g.role[v] == NodeRole::kCpuWork &&
        g.dur[v] == 100000 && w.dur.size() < 5) {
      w.dur.emplace_back(static_cast<int32_t>(v), 0);
    }
  }
  return w;
}

}  // namespace

TEST_CASE("a secondary thread resuming after the main thread is done follows its end", "[causal]") {
  // No steps. Thread 2 launches the first kernel, then the main thread (1) runs 1 ms of ops;
  // 50 us after it is done, thread 2 synchronises the device (a harness's final sync).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Cpu("aten::empty", 900, 20, "cpu_op", 2);
  double cpu = 1000;
  for (int k = 0; k < 10; ++k, cpu += 100) t.Cpu("aten::mul", cpu, 100);
  t.Cpu("cudaDeviceSynchronize", cpu + 50, 10, "cuda_runtime", 2, "\"correlation\": 9100");
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay base = RunReplay(g);
  RequireReplayMatches(*trace, g, base);
  // Half the main thread's work: the sync, and the run's end, come 500 us earlier.
  WhatIf w = HalfOfMainThreadOps(g);
  REQUIRE(w.dur.size() == 5);
  CHECK(base.total_step_ns() - RunReplay(g, &w).total_step_ns() == 500000);
}

TEST_CASE("a thread nothing depends on does not hold a stepless run's end", "[causal]") {
  // No steps. The main thread runs 1 ms of ops and launches a kernel; a runtime's housekeeping
  // thread (3) wakes every 100 ms for a call that starts no GPU work, the last one 40 ms after
  // the work is done (vLLM on ROCm: hipThreadExchangeStreamCaptureMode).
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Runtime("cudaThreadExchangeStreamCaptureMode", 950, 3, 3);
  double cpu = 1000;
  for (int k = 0; k < 10; ++k, cpu += 100) t.Cpu("aten::mul", cpu, 100);
  t.Kernel("vectorized_elementwise_kernel", cpu, 5, cpu + 10, 50);
  t.Runtime("cudaThreadExchangeStreamCaptureMode", cpu + 40000, 3, 3);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay base = RunReplay(g);
  // The run ends with the kernel (at cpu + 60 us), not with the housekeeping call.
  CHECK(base.total_step_ns() == (cpu + 60 - 1000) * 1000);
  WhatIf w = HalfOfMainThreadOps(g);
  REQUIRE(w.dur.size() == 5);
  CHECK(base.total_step_ns() - RunReplay(g, &w).total_step_ns() == 500000);
  // A shorter kernel ends the run earlier (the housekeeping call, which follows the main
  // thread, used to hold the end: every fix saved nothing).
  WhatIf shorter_kernel;
  for (size_t v = 0; v < g.size(); ++v) {
    if (g.role[v] == NodeRole::kGpu) shorter_kernel.dur.emplace_back(static_cast<int32_t>(v), 0);
  }
  REQUIRE(shorter_kernel.dur.size() == 1);
  CHECK(base.total_step_ns() - RunReplay(g, &shorter_kernel).total_step_ns() == 50000);
  std::vector<StepAttribution> at = AttributeSteps(*trace, g, base);
  REQUIRE(at.size() == 1);
  CHECK(at[0].total() == base.total_step_ns());
  // A thread that launches GPU work bounds the run, and so does every thread of a CPU-only run.
  TinyTrace launcher = t;
  launcher.Launch("vectorized_elementwise_kernel", cpu + 40000, 5, cpu + 40010, 50, "kernel", 7,
                  "cudaLaunchKernel", -1, 0, 3);
  auto launched = launcher.Load();
  CausalGraph lg = BuildCausalGraph(*launched);
  CHECK(RunReplay(lg).total_step_ns() == (cpu + 40060 - 950) * 1000);
  TinyTrace cpu_only;
  for (int k = 0; k < 10; ++k) cpu_only.Cpu("aten::mul", 1000 + 100 * k, 100);
  cpu_only.Cpu("aten::add", 5000, 100, "cpu_op", 3);
  auto cpu_trace = cpu_only.Load();
  CausalGraph cg = BuildCausalGraph(*cpu_trace);
  CHECK(RunReplay(cg).total_step_ns() == (5100 - 1000) * 1000);
}

TEST_CASE("a lane's nodes are consecutive: LanePrev and LaneOf agree with the lanes' ranges",
          "[causal]") {
  // Threads with work, one with a zero-length op only, two streams.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Cpu("aten::empty", 900, 0, "cpu_op", 4);
  double cpu = 1000;
  for (int k = 0; k < 6; ++k, cpu += 100) {
    t.Cpu("aten::mul", cpu, 90);
    t.Kernel("vectorized_elementwise_kernel", cpu + 10, 5, cpu + 20, 60, 7 + k % 2);
  }
  t.Cpu("aten::add", 1200, 300, "cpu_op", 2);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  REQUIRE(g.stats.cycles_broken == 0);
  size_t covered = 0;
  for (size_t l = 0; l < g.lanes.size(); ++l) {
    const CausalGraph::Lane& lane = g.lanes[l];
    if (l > 0) CHECK(g.lanes[l - 1].end_node == lane.first_node);
    for (int32_t n = lane.first_node; n < lane.end_node; ++n, ++covered) {
      CHECK(g.LaneOf(n) == l);
      CHECK(g.LanePrev(n) == (n == lane.first_node ? -1 : n - 1));
    }
  }
  CHECK(covered == g.size());
}

TEST_CASE("a thread blocked in a wait or a sleep is not work the main thread waits for",
          "[causal]") {
  // The main thread idles in its loop body from 1100 to 3000 while another thread's frame ends
  // at 2990: a worker computing (the main thread waited for it: a join), or tqdm's monitor
  // sleeping in threading.py's wait (it waited for nothing of it).
  auto joins = [](const std::string& other_frame) {
    TinyTrace t;
    t.Python("train.py", 10, "<module>", 1000, 2000);
    t.Cpu("aten::mul", 1001, 99);
    t.Cpu(other_frame, 900, 2090, "python_function", 2);
    auto trace = t.Load();
    CausalGraph g = BuildCausalGraph(*trace);
    RequireReplayMatches(*trace, g, RunReplay(g));
    // (The waiting thread's own wait follows the main thread: a join of that thread.)
    int main_joins = 0;
    for (size_t n = 0; n < g.size(); ++n) {
      main_joins += g.role[n] == NodeRole::kJoin && g.lanes[g.LaneOf(n)].main;
    }
    return main_joins;
  };
  CHECK(joins("worker.py(5): compute") == 1);
  CHECK(joins("threading.py(359): wait") == 0);
  CHECK(joins("<built-in function sleep>") == 0);
  // A serving engine's socket threads block in ZeroMQ's poll or a pipe's recv, whose C call the
  // tracer leaves out (vLLM's input thread on an RTX 3090: a 220 ms poll frame, joined at the
  // end, was the whole run's critical path: "CPU work 100%", nothing found).
  CHECK(joins("zmq/sugar/poll.py(80): poll") == 0);
  CHECK(joins("multiprocessing/connection.py(430): _recv_bytes") == 0);
}

TEST_CASE("the main thread in run_backward waits for the autograd thread despite its gaps",
          "[causal]") {
  // loss.backward() blocks the main thread in run_backward for about 1 ms while the autograd
  // thread runs 20 nodes of 35 us, 15 us apart (the engine's own bookkeeping under the profiler):
  // its ops cover 70% of the wait, yet the wait is for them (an RTX 5080 MLP: the main thread's
  // backward_pass was "CPU work on the critical path", and backward's TTA017 saved nothing).
  auto build = [](double gap_us) {
    TinyTrace t;
    const double last_end = 1040 + 19 * (35 + gap_us) + 35;
    t.Python("torch/autograd/graph.py", 840, "_engine_run_backward", 990, last_end + 10 - 990);
    t.Cpu("aten::mul", 1000, 10);
    for (int k = 0; k < 20; ++k) {
      t.Cpu("autograd::engine::evaluate_function: AddmmBackward0", 1040 + k * (35 + gap_us), 35,
            "cpu_op", 2);
    }
    return t.Load();
  };
  auto main_joins = [](const Trace& trace) {
    CausalGraph g = BuildCausalGraph(trace);
    RequireReplayMatches(trace, g, RunReplay(g));
    int joins = 0;
    for (size_t n = 0; n < g.size(); ++n) {
      joins += g.role[n] == NodeRole::kJoin && g.lanes[g.LaneOf(n)].main;
    }
    return joins;
  };
  CHECK(main_joins(*build(15)) == 1);
  // Gaps of 200 us between its ops are not bookkeeping: the main thread was not waiting for it.
  CHECK(main_joins(*build(200)) == 0);
}

TEST_CASE("nested CPU work under one op is one node; kept rows and runtime calls stay boundaries",
          "[causal]") {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  // aten::linear with four nested ops in 10 us, then a launch, then more nested work.
  t.Cpu("aten::linear", 1000, 30);
  for (int k = 0; k < 4; ++k) t.Cpu("aten::view", 1001 + 2 * k, 1);
  t.Runtime("cudaLaunchKernel", 1012, 4);
  t.Kernel("void add_kernel", 1014, 4, 1020, 3);
  t.Cpu("aten::t", 1020, 5);
  t.Cpu("aten::transpose", 1021, 2);
  t.Step(1, 1000, 40);
  t.Step(2, 1040, 40);
  t.Cpu("aten::relu", 1045, 10);
  auto trace = t.Load();
  auto cpu_nodes_of = [](const CausalGraph& g) {
    size_t n = 0;
    for (size_t v = 0; v < g.size(); ++v) n += g.role[v] == NodeRole::kCpuWork ? 1 : 0;
    return n;
  };
  CausalGraph merged = BuildCausalGraph(*trace);
  RequireReplayMatches(*trace, merged, RunReplay(merged));
  // Step 1: aten::linear and its views before the launch; aten::linear with aten::t after it; the
  // step's own tail. Step 2: its head, aten::relu, its tail. (Unmerged: one node per boundary.)
  CHECK(cpu_nodes_of(merged) == 6);
  // aten::t kept: its start and end are node boundaries, so its time is exactly its nodes'.
  int32_t t_row = -1;
  for (size_t i = 0; i < trace->events.size(); ++i) {
    if (trace->Name(i) == "aten::t") t_row = static_cast<int32_t>(i);
  }
  REQUIRE(t_row >= 0);
  CausalGraph kept = BuildCausalGraph(*trace, {t_row});
  RequireReplayMatches(*trace, kept, RunReplay(kept));
  int64_t inside = 0;
  for (size_t v = 0; v < kept.size(); ++v) {
    if (kept.role[v] != NodeRole::kCpuWork) continue;
    const bool starts_inside = kept.obs_start[v] >= 1020000 && kept.obs_start[v] < 1025000;
    if (starts_inside) {
      CHECK(kept.ObsEnd(v) <= 1025000);
      inside += kept.ObsEnd(v) - kept.obs_start[v];
    }
  }
  CHECK(inside == 5000);
  CHECK(cpu_nodes_of(kept) > cpu_nodes_of(merged));
}

TEST_CASE("every shared real trace: replay reproduces its steps and attribution adds up",
          "[causal][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  std::vector<double> errors;
  for (const auto& path : ttap::ListTraceFiles(ttap_test::RealTracesDir())) {
    INFO(path);
    auto loaded = LoadTrace(path);
    REQUIRE(loaded.ok());
    const Trace& t = **loaded;
    CausalGraph g = BuildCausalGraph(t);
    Replay r = RunReplay(g);
    auto spans = AnalysedSteps(t);
    auto at = AttributeSteps(t, g, r);
    REQUIRE(at.size() == spans.size());
    for (size_t k = 0; k < spans.size(); ++k) {
      const int64_t wall = r.step_end[k] - r.step_start[k];
      CHECK(at[k].total() == wall);
      if (!t.steps.empty()) {
        const int64_t obs = spans[k].end_ns - spans[k].start_ns;
        if (obs > 0) errors.push_back(std::abs(static_cast<double>(wall - obs)) / obs);
      }
    }
  }
  REQUIRE(!errors.empty());
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  const double p95 = errors[std::min(errors.size() - 1, errors.size() * 95 / 100)];
  INFO("steps " << errors.size() << " median error " << median << " p95 " << p95);
  CHECK(median <= 0.02);
  CHECK(p95 <= 0.05);
}

TEST_CASE("every shared real trace: findings are physical (what_if costing)", "[causal][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  for (const auto& path : ttap::ListTraceFiles(ttap_test::RealTracesDir())) {
    INFO(path);
    auto loaded = LoadTrace(path);
    REQUIRE(loaded.ok());
    RuleResult r = RunRules(**loaded, {});
    double claimed = 0;
    for (const Finding& f : r.findings) {
      INFO(f.code << " " << f.message);
      CHECK(f.share_of_step >= 0);
      CHECK(f.share_of_step <= 1.0);  // no finding's time lost exceeds its step
      for (const auto& [step, lost_us] : f.per_step) CHECK(lost_us >= 0);
      claimed += f.share_of_step;
    }
    CHECK(claimed <= 1.0 + 1e-9);  // together never more than the run
    CHECK(r.trace_score >= 0);
    CHECK(r.trace_score <= 1);
    CHECK(r.safe_saving_ns <= r.run_ns);
    CHECK(r.speedup >= 1.0);
  }
}

TEST_CASE("a sync in a GPU-bound loop that already waits once per step costs nothing", "[causal]") {
  // Each step: 20 long kernels queued, a .item() after the 10th (the CPU waits, but the queue
  // behind it is what the step waits for at the end anyway), then the step's own sync.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  for (int s = 0; s < 3; ++s) {
    const double start = cpu;
    double gpu = cpu + 20;
    cpu += 5;
    for (int k = 0; k < 20; ++k) {
      t.Cpu("aten::mm", cpu, 12);
      t.Kernel("ampere_sgemm_128x64_nn", cpu + 1, 10, std::max(gpu, cpu + 15), 500);
      gpu = std::max(gpu, cpu + 15) + 500;
      cpu += 15;
      if (k == 9) {
        t.Cpu("aten::item", cpu, gpu - cpu + 20);
        t.Runtime("cudaStreamSynchronize", cpu + 2, gpu - cpu + 10);
        cpu = gpu + 20;
      }
    }
    t.Runtime("cudaDeviceSynchronize", cpu, gpu - cpu + 10);
    cpu = gpu + 12;
    t.Step(s + 1, start, cpu - start);
    cpu += 2;
  }
  auto trace = t.Load();
  RuleOptions o;
  o.values["host_sync_share"] = 0;  // report any drain, however small
  auto fs = ttap_test::FindingsWithCode(*trace, "TTA002", o);
  // The detector sees the drain after the .item(); the replay says removing that wait saves
  // almost nothing, since the step's own sync at the end waits for the same queue.
  // (The step's own cudaDeviceSynchronize is reported too: the same holds for it.)
  REQUIRE(!fs.empty());
  bool item = false;
  for (const auto& f : fs) {
    INFO(f.message);
    item = item || f.evidence.at("op").text == "aten::item";
    CHECK(f.evidence.at("detected_us_per_step").number > 10);
    CHECK(f.share_of_step < 0.01);
    CHECK(f.severity == Severity::kHint);
    CHECK(f.message.find("GPU-bound") != std::string::npos);
  }
  CHECK(item);
}

TEST_CASE("degenerate traces (a zero-length step, timestamps far apart) do not break the model",
          "[causal]") {
  // Found by the loader fuzzer: a ProfilerStep of zero length has no node that ends it.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Step(1, 100, 0);
  t.Cpu("aten::mm", 101.5, 20);
  t.Kernel("ampere_sgemm_128x64_nn", 105, 4, 120, 50);
  t.Step(2, 200, 50);
  auto trace = t.Load();
  TimeBreakdown tb = WhereTimeWent(*trace);
  CHECK(tb.steps.size() == trace->steps.size());
  RuleResult rr = RunRules(*trace, {});
  CHECK(rr.trace_score >= 0);
  // A launch latency of ~30 years (hostile timestamps) must not overflow the attribution.
  TinyTrace far;
  far.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  far.Kernel("ampere_sgemm_128x64_nn", 100, 4, 1e15, 50);
  far.Kernel("ampere_sgemm_128x64_nn", 200, 4, 2e15, 50);
  auto f = far.Load();
  CHECK(WhereTimeWent(*f).overall.total() >= 0);
}

TEST_CASE("a main-thread gap while a stream keeps running is not a wait for that stream",
          "[causal]") {
  // Collectives queue up on a stream faster than they run; the main thread's 30 us gap outside
  // any op ends while the stream is still busy (a kernel started before it ended). It waited for
  // nothing: shortening the collectives must not hold it. A gap that ends when the stream runs
  // dry is a wait (no recorded sync).
  auto joins = [](double gap_end) {
    TinyTrace t;
    t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
    t.Python("train.py", 10, "<module>", 1000, 3000);
    // Ten 50 us kernels back to back from 1010 to 1510, launched 1000..1045.
    for (int k = 0; k < 10; ++k)
      t.Kernel("ncclKernel_AllReduce", 1000 + 5 * k, 4, 1010 + 50 * k, 50, 9);
    // The gap: 1100..gap_end, then an op.
    t.Cpu("aten::add", gap_end, 20);
    auto trace = t.Load();
    CausalGraph g = BuildCausalGraph(*trace);
    RequireReplayMatches(*trace, g, RunReplay(g));
    // (The waiting thread's own wait follows the main thread: a join of that thread.)
    int main_joins = 0;
    for (size_t n = 0; n < g.size(); ++n) {
      main_joins += g.role[n] == NodeRole::kJoin && g.lanes[g.LaneOf(n)].main;
    }
    return main_joins;
  };
  CHECK(joins(1212) == 0);  // the stream runs until 1510
  CHECK(joins(1520) == 1);  // it ran dry at 1510: the thread waited for it
}

TEST_CASE("a silent wait for the GPU is inferred only where the trace records no synchronize",
          "[causal]") {
  // A gap outside any op that ends as the stream runs dry is a wait in a trace that records
  // launches but no synchronize calls (older Kineto traces); in one that records the thread's
  // cudaStreamSynchronize, the profiler would have recorded that wait too: the slice only ended
  // near the kernel.
  auto joins = [](bool records_syncs) {
    TinyTrace t;
    t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
    t.Python("train.py", 10, "<module>", 1000, 3000);
    for (int k = 0; k < 10; ++k)
      t.Kernel("volta_sgemm_128x64_nn", 1000 + 5 * k, 4, 1010 + 50 * k, 50);
    t.Cpu("aten::add", 1520, 20);  // after the gap 1050..1520; the stream ran dry at 1510
    if (records_syncs) {
      t.Cpu("aten::item", 1600, 30);
      t.Runtime("cudaStreamSynchronize", 1605, 20);
    }
    auto trace = t.Load();
    CausalGraph g = BuildCausalGraph(*trace);
    RequireReplayMatches(*trace, g, RunReplay(g));
    // (The waiting thread's own wait follows the main thread: a join of that thread.)
    int main_joins = 0;
    for (size_t n = 0; n < g.size(); ++n) {
      main_joins += g.role[n] == NodeRole::kJoin && g.lanes[g.LaneOf(n)].main;
    }
    return main_joins;
  };
  CHECK(joins(false) == 1);
  CHECK(joins(true) == 0);
}

TEST_CASE("gap columns keep every gap exactly, beyond 32 bits too", "[causal]") {
  ttap::GapColumn gaps;
  const int64_t big = int64_t{3600} * 1000000000;  // an hour, as kLatencyCapNs
  for (int64_t v : {int64_t{0}, int64_t{-5}, big, -big, int64_t{2147483647}, int64_t{-2147483647},
                    int64_t{-2147483648}}) {
    gaps.push_back(v);
  }
  REQUIRE(gaps.size() == 7);
  CHECK(gaps[1] == -5);
  CHECK(gaps[2] == big);
  CHECK(gaps[3] == -big);
  CHECK(gaps[4] == 2147483647);
  CHECK(gaps[5] == -2147483647);
  CHECK(gaps[6] == -2147483648LL);  // the escape value itself is kept aside
  gaps.Set(2, 7);                   // a big gap replaced by a small one, and back
  CHECK(gaps[2] == 7);
  gaps.Set(2, -big);
  CHECK(gaps[2] == -big);
}

TEST_CASE("A trailing step that launches nothing and lasts a tenth of the others is not analysed",
          "[causal][steps]") {
  // The final prof.step() opens ProfilerStep#N+1 just before the profiler stops: 18 us, no GPU
  // work. Averaged in, a one-step trace's "per step" figures halve.
  auto make = [](double last_us, bool launch) {
    TinyTrace t;
    t.Device(0, "NVIDIA H100 80GB HBM3", 9, 0);
    t.Step(3, 1000, 1000);
    t.Cpu("aten::mul", 1010, 20);
    t.Kernel("void at::native::vectorized_elementwise_kernel<4>", 1015, 5, 1030, 900);
    t.Step(4, 2050, last_us);
    if (launch) t.Kernel("void at::native::vectorized_elementwise_kernel<4>", 2052, 3, 2060, 5);
    return t.Load();
  };
  auto stub = make(18, false);
  REQUIRE(stub->steps.size() == 2);
  auto spans = AnalysedSteps(*stub);
  REQUIRE(spans.size() == 1);
  CHECK(spans[0].number == 3);
  // A short last step with GPU work, or one as long as the others, is a step.
  CHECK(AnalysedSteps(*make(18, true)).size() == 2);
  CHECK(AnalysedSteps(*make(400, false)).size() == 2);
}

TEST_CASE("A helper thread blocked on a condition works for nobody: its wait is not CPU work",
          "[causal]") {
  // No steps; the main thread launches 20 kernels of 900 us and synchronises: GPU-bound. A
  // DataLoader queue's feeder thread (Python frames only) waits 15 ms on its condition, sends
  // an index to a worker when the main thread puts one, and waits again until near the end.
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Python("train.py", 10, "main", 0, 19500);
  double cpu = 100, gpu = 200;
  for (int k = 0; k < 20; ++k) {
    t.Cpu("aten::mul", cpu, 40);
    t.Kernel("void at::native::vectorized_elementwise_kernel<4>", cpu + 5, 10, gpu, 900);
    cpu += 50;
    gpu += 902;
  }
  t.Python("multiprocessing/queues.py", 86, "put", cpu, 20);
  t.Runtime("cudaDeviceSynchronize", cpu + 30, gpu - cpu - 25);
  // The profiler's stop at the end, while the feeder wakes up and works: it looks like a join.
  t.Cpu("<built-in method _disable_profiler of PyCapsule object at 0x1>", 19040, 450,
        "python_function");
  t.Python("multiprocessing/queues.py", 231, "_feed", 10, 19470, 2);
  t.Python("threading.py", 320, "wait", 20, cpu + 5 - 20, 2);
  t.Python("multiprocessing/connection.py", 181, "send_bytes", cpu + 10, 30, 2);
  t.Python("threading.py", 288, "wait", cpu + 45, 19000 - cpu - 45, 2);
  auto trace = t.Load();
  CausalGraph g = BuildCausalGraph(*trace);
  Replay r = RunReplay(g);
  auto at = AttributeSteps(*trace, g, r);
  REQUIRE(at.size() == 1);
  INFO("cpu work " << at[0].ns[static_cast<int>(Cause::kCpuWork)] << " of " << at[0].total());
  CHECK(Largest(at[0]) == Cause::kGpuKernel);
  CHECK(at[0].ns[static_cast<int>(Cause::kCpuWork)] < at[0].total() / 10);
  for (const auto& [name, ns] : at[0].cpu_ops) {
    CHECK(trace->strings.Get(name).find("wait") == std::string_view::npos);
  }
}

// Diff tests of LoadTrace on tiny inline traces (both Kineto generations), plus HTA figures.
#include "analysis/load/trace_loader.h"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/load/event_parser.h"
#include "analysis/model/trace.h"
#include "analysis/model/trace_stats.h"
#include "mapping/python_frames.h"
#include "tests/analysis/test_helpers.h"

namespace ttap {
namespace {

using testing::Gzip;
using testing::TempFile;

std::unique_ptr<Trace> Load(std::string_view data, int threads, int window_count = 100,
                            const std::string& name = "inline.json",
                            size_t chunk_bytes = 8u << 20) {
  LoadOptions opts;
  opts.threads = threads;
  opts.window_count = window_count;
  opts.chunk_bytes = chunk_bytes;
  opts.keep_flows = true;  // the flows' own fields are checked
  auto r = LoadTraceFromMemory(data, name, opts);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return std::move(*r);
}

// The first row named |name|; fails the test when there is none.
size_t Row(const Trace& t, std::string_view name) {
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.Name(i) == name) return i;
  }
  FAIL("no row named " << name);
  return 0;
}

size_t CountKind(const Trace& t, EventKind kind) {
  size_t n = 0;
  for (size_t i = 0; i < t.events.size(); ++i) n += t.events.kind[i] == kind;
  return n;
}

constexpr int64_t kUs = 1000;

// Current Kineto format: one step, python frames, cpu ops, launches and their GPU activity.
const char* kNewFormat = R"J({
  "schemaVersion": 1,
  "distributedInfo": {"backend": "nccl", "rank": 2, "world_size": 4},
  "deviceProperties": [
    {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712,
     "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 108}
  ],
  "baseTimeNanoseconds": 1700000000000000000,
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 100, "tid": 200,
   "ts": 1000, "dur": 100},
  {"ph": "X", "cat": "python_function", "name": "train.py(10): main", "pid": 100, "tid": 200,
   "ts": 1001, "dur": 98, "args": {"Python id": 1, "Python parent id": 0}},
  {"ph": "X", "cat": "python_function", "name": "model.py(42): forward", "pid": 100, "tid": 200,
   "ts": 1002, "dur": 90, "args": {"Python id": 2, "Python parent id": 1}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 100, "tid": 200,
   "ts": 1010, "dur": 50, "args": {"External id": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 100, "tid": 200,
   "ts": 1012, "dur": 40, "args": {"External id": 8}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 200,
   "ts": 1020, "dur": 10, "args": {"correlation": 42, "External id": 8}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 100, "tid": 200,
   "ts": 1040, "dur": 5, "args": {"correlation": 43, "External id": 8}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 200,
   "ts": 1060, "dur": 8, "args": {"correlation": 44}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 100, "tid": 200,
   "ts": 1070, "dur": 4, "args": {"correlation": 45}},
  {"ph": "X", "cat": "kernel", "name": "sgemm_128x64", "pid": 0, "tid": 7,
   "ts": 1050, "dur": 200, "args": {"correlation": 42, "stream": 7, "device": 0, "External id": 8}},
  {"ph": "X", "cat": "kernel", "name": "triton_fused", "pid": 0, "tid": 7,
   "ts": 1250, "dur": 30, "args": {"correlation": 43, "stream": 7, "device": 0}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
   "ts": 1280, "dur": 10, "args": {"correlation": 44, "stream": 7, "device": 0, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,
   "ts": 1290, "dur": 2, "args": {"correlation": 45, "stream": 7, "device": 0, "bytes": 256}},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#7", "pid": 0, "tid": 7,
   "ts": 1050, "dur": 242},
  {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 42, "pid": 100, "tid": 200, "ts": 1020, "bp": "e"},
  {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 42, "pid": 0, "tid": 7, "ts": 1050, "bp": "e"},
  {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
   "tid": "PyTorch Profiler", "ts": 990, "dur": 400},
  {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python3"}},
  {"ph": "M", "name": "thread_name", "pid": 100, "tid": 200, "args": {"name": "thread 200 (python3)"}},
  {"ph": "X", "cat": "my_custom_cat", "name": "custom", "pid": 100, "tid": 300, "ts": 1100, "dur": 1},
  {"ph": "X", "cat": "my_custom_cat", "name": "custom2", "pid": 100, "tid": 300, "ts": 1101, "dur": 1},
  {"ph": "i", "cat": "cpu_instant_event", "name": "marker", "s": "t", "pid": 100, "tid": 200,
   "ts": 1095}
  ]
})J";

// The 2021 format: bare array, Operator/Runtime/Kernel/Memcpy/Memset, "Call stack" strings,
// "async" flows and lowercase "external id".
const char* kOldFormat = R"J([
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#3", "pid": 1234, "tid": "5678",
   "ts": 100, "dur": 500, "args": {"Input dims": [], "Op count": 0}},
  {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 1234, "tid": "5678",
   "ts": 110, "dur": 100, "args": {"Input dims": [[1, 3, 224, 224]],
   "Call stack": "torchvision/models/resnet.py(230): _forward_impl;train.py(57): main",
   "external id": 3}},
  {"ph": "X", "cat": "Operator", "name": "aten::convolution", "pid": 1234, "tid": "5678",
   "ts": 112, "dur": 90, "args": {"external id": 4}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1234, "tid": "5678",
   "ts": 120, "dur": 5, "args": {"correlation": 11, "external id": 4}},
  {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 1234, "tid": "5678",
   "ts": 130, "dur": 5, "args": {"correlation": 12, "external id": 4}},
  {"ph": "X", "cat": "Runtime", "name": "cudaMemsetAsync", "pid": 1234, "tid": "5678",
   "ts": 140, "dur": 5, "args": {"correlation": 13, "external id": 4}},
  {"ph": "X", "cat": "Kernel", "name": "implicit_convolve_sgemm", "pid": 0, "tid": "stream 7",
   "ts": 150, "dur": 600, "args": {"queued": 0, "device": 0, "context": 1, "stream": 7,
   "correlation": 11, "external id": 4}},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
   "tid": "stream 7", "ts": 750, "dur": 20, "args": {"device": 0, "context": 1, "stream": 7,
   "correlation": 12, "external id": 4, "bytes": 602112}},
  {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7",
   "ts": 770, "dur": 3, "args": {"device": 0, "stream": 7, "correlation": 13}},
  {"ph": "s", "cat": "async", "id": 11, "pid": 1234, "tid": "5678", "ts": 120, "name": "launch"},
  {"ph": "f", "cat": "async", "id": 11, "pid": 0, "tid": "stream 7", "ts": 150, "bp": "e",
   "name": "launch"},
  {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",
   "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 100}
])J";

TEST_CASE("New-format trace: kinds, tracks, metadata and counters", "[loader]") {
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    auto t = Load(kNewFormat, threads);
    CHECK_FALSE(t->bare_array);
    CHECK(t->path == "inline.json");
    CHECK(t->events.size() == 18);  // 17 X events (Trace span included) + 1 instant
    CHECK(t->stats.elements == 22);
    CHECK(t->stats.events == 18);
    CHECK(t->stats.metadata == 2);
    CHECK(t->stats.flows == 2);
    CHECK(t->stats.total_skipped() == 0);
    CHECK(t->stats.first_error.empty());
    CHECK(t->base_time_ns == INT64_C(1700000000000000000));

    CHECK(t->events.kind[Row(*t, "ProfilerStep#7")] == EventKind::kUserAnnotation);
    CHECK(t->events.kind[Row(*t, "train.py(10): main")] == EventKind::kPythonFunction);
    CHECK(t->events.kind[Row(*t, "aten::addmm")] == EventKind::kCpuOp);
    CHECK(t->events.kind[Row(*t, "cudaLaunchKernel")] == EventKind::kRuntime);
    CHECK(t->events.kind[Row(*t, "cuLaunchKernel")] == EventKind::kDriver);
    CHECK(t->events.kind[Row(*t, "sgemm_128x64")] == EventKind::kKernel);
    CHECK(t->events.kind[Row(*t, "Memcpy HtoD (Pageable -> Device)")] == EventKind::kMemcpy);
    CHECK(t->events.kind[Row(*t, "Memset (Device)")] == EventKind::kMemset);
    CHECK(t->events.kind[Row(*t, "PyTorch Profiler (0)")] == EventKind::kTraceSpan);
    CHECK(t->events.kind[Row(*t, "marker")] == EventKind::kInstant);
    CHECK(t->events.kind[Row(*t, "custom")] == EventKind::kOther);
    CHECK(CountKind(*t, EventKind::kGpuUserAnnotation) == 1);
    CHECK(CountKind(*t, EventKind::kKernel) == 2);

    // Unknown categories are kept and counted.
    REQUIRE(t->stats.unknown_categories.size() == 1);
    CHECK(t->stats.unknown_categories.at("my_custom_cat") == 2);

    // Rows are sorted by ts, longer first on ties.
    for (size_t i = 1; i < t->events.size(); ++i) {
      INFO("row " << i);
      REQUIRE(t->events.ts[i - 1] <= t->events.ts[i]);
      if (t->events.ts[i - 1] == t->events.ts[i]) REQUIRE(t->events.dur[i - 1] >= t->events.dur[i]);
    }

    // Columns read from args.
    size_t k = Row(*t, "sgemm_128x64");
    CHECK(t->events.ts[k] == 1050 * kUs);
    CHECK(t->events.dur[k] == 200 * kUs);
    CHECK(t->events.stream[k] == 7);
    CHECK(t->events.correlation[k] == 42);
    CHECK(t->events.external_id[k] == 8);
    CHECK(t->events.device[k] == 0);
    CHECK((t->events.flags[k] & kHasDur) != 0);
    CHECK((t->events.flags[k] & kHasCat) != 0);
    CHECK((t->events.flags[k] & kFracTs) == 0);
    CHECK(t->strings.Get(t->events.cat[k]) == "kernel");
    CHECK(t->events.bytes[Row(*t, "Memcpy HtoD (Pageable -> Device)")] == 4096);
    size_t py = Row(*t, "model.py(42): forward");
    CHECK(t->events.PythonId(py) == 2);
    CHECK(t->events.python_parent[py] == 1);
    CHECK(t->events.stream[Row(*t, "aten::addmm")] == -1);
    CHECK(t->events.correlation[Row(*t, "aten::addmm")] == -1);
    CHECK((t->events.flags[Row(*t, "marker")] & kHasDur) == 0);

    // Tracks: numbers and strings as written, names from metadata.
    const Track& cpu = t->tracks[t->events.track[Row(*t, "aten::addmm")]];
    CHECK(cpu.pid == "100");
    CHECK(cpu.tid == "200");
    CHECK(cpu.pid_num == 100);
    CHECK(cpu.tid_num == 200);
    CHECK(cpu.name == "thread 200 (python3)");
    CHECK_FALSE(cpu.gpu);
    const Track& gpu = t->tracks[t->events.track[k]];
    CHECK(gpu.pid == "0");
    CHECK(gpu.tid == "7");
    CHECK(gpu.gpu);
    CHECK(gpu.device == 0);
    const Track& span = t->tracks[t->events.track[Row(*t, "PyTorch Profiler (0)")]];
    CHECK(span.pid == "Spans");
    CHECK(span.pid_num == kNone);
    CHECK(span.tid == "PyTorch Profiler");
    CHECK(span.tid_num == kNone);

    // Flows.
    REQUIRE(t->flows.size() == 2);
    CHECK(t->flows[0].id == 42);
    CHECK(t->flows[0].phase == 's');
    CHECK(t->flows[0].ts == 1020 * kUs);
    CHECK(t->strings.Get(t->flows[0].cat) == "ac2g");
    CHECK(t->flows[1].phase == 'f');
    CHECK(t->tracks[t->flows[1].track].tid == "7");
  }
}

TEST_CASE("Columns no event fills are held empty and read as their defaults", "[loader]") {
  // No 2021-format call stack, no Python id, no enclosing Python frame: the columns are released
  // after the load (4 bytes an event each), and their readers still see kEmptyString and -1. The
  // other columns are read as written, a value beyond int32 included.
  constexpr std::string_view kPlain = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5000000,
     "args": {"correlation": 8589934592}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 20, "dur": 3}
  ]})";
  auto plain = Load(kPlain, 1);
  CHECK(plain->events.call_stack.empty());
  CHECK(plain->events.python_id.empty());
  CHECK(plain->events.frame.empty());  // no Python frame encloses anything
  const size_t mm = Row(*plain, "aten::mm");
  CHECK(plain->events.Frame(mm) == -1);
  CHECK(plain->events.CallStack(mm) == kEmptyString);
  CHECK(plain->events.PythonId(mm) == -1);
  CHECK(plain->events.dur[mm] == int64_t{5000000} * 1000);  // 5 s in ns: beyond int32
  CHECK(plain->events.correlation[mm] == int64_t{8589934592});
  // One event with each keeps the columns.
  constexpr std::string_view kFilled = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"Call stack": "a.py(1): f"}},
    {"ph": "X", "cat": "python_function", "name": "a.py(1): f", "pid": 1, "tid": 1, "ts": 9,
     "dur": 7, "args": {"Python id": 3}}
  ]})";
  auto filled = Load(kFilled, 1);
  CHECK(filled->events.call_stack.size() == filled->events.size());
  CHECK(filled->events.python_id.size() == filled->events.size());
  CHECK(filled->events.Frame(Row(*filled, "aten::mm")) ==
        static_cast<int32_t>(Row(*filled, "a.py(1): f")));
  CHECK(filled->strings.Get(filled->events.CallStack(Row(*filled, "aten::mm"))) == "a.py(1): f");
  CHECK(filled->events.PythonId(Row(*filled, "a.py(1): f")) == 3);
}

TEST_CASE("New-format trace: rank, devices and steps", "[loader]") {
  auto t = Load(kNewFormat, 1);
  CHECK(t->rank == 2);
  CHECK(t->rank_source == "distributedInfo");
  CHECK(t->world_size == 4);
  CHECK(t->backend == "nccl");

  REQUIRE(t->devices.size() == 1);
  CHECK(t->devices[0].id == 0);
  CHECK(t->devices[0].name == "NVIDIA A100-SXM4-80GB");
  CHECK(t->devices[0].compute_major == 8);
  CHECK(t->devices[0].compute_minor == 0);
  CHECK(t->devices[0].total_memory == INT64_C(85097971712));
  CHECK(t->devices[0].num_sms == 108);
  CHECK(t->devices[0].used);

  // The gpu_user_annotation copy of ProfilerStep#7 is not a second step.
  REQUIRE(t->steps.size() == 1);
  const Step& s = t->steps[0];
  CHECK(s.number == 7);
  CHECK(s.event == static_cast<int32_t>(Row(*t, "ProfilerStep#7")));
  CHECK(t->events.kind[s.event] == EventKind::kUserAnnotation);
  CHECK(s.cpu_start == 1000 * kUs);
  CHECK(s.cpu_end == 1100 * kUs);
  // Extended to the end of the memset launched at 1070 (1290 + 2).
  CHECK(s.gpu_end == 1292 * kUs);
  CHECK(s.start() == 1000 * kUs);
  CHECK(s.end() == 1292 * kUs);
  REQUIRE(t->step_windows.size() == 1);
  CHECK(t->step_windows[0].step == 0);
  CHECK(t->step_windows[0].start_ns == 1000 * kUs);
  CHECK(t->step_windows[0].end_ns == 1292 * kUs);
}

TEST_CASE("A collective kernel's message size is read into bytes", "[loader]") {
  const std::string trace = R"json({"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*)", "pid": 0, "tid": 20,
   "ts": 10, "dur": 12, "args": {"In msg nelems": 2048, "Out msg nelems": 2048, "dtype": "Float"}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(x)", "pid": 0, "tid": 20,
   "ts": 30, "dur": 12, "args": {"In msg nelems": 1024, "Out msg nelems": 4096,
   "dtype": "BFloat16"}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm", "pid": 0, "tid": 7, "ts": 50, "dur": 5,
   "args": {"dtype": "Float"}}
]
})json";
  auto t = Load(trace, 1);
  CHECK(t->events.bytes[Row(*t, "ncclDevKernel_SendRecv(ncclDevComm*)")] == 8192);
  CHECK(t->events.bytes[Row(*t, "ncclDevKernel_AllGather_RING_LL(x)")] == 8192);  // out x 2 B
  CHECK(t->events.bytes[Row(*t, "ampere_sgemm")] == -1);
}

TEST_CASE("New-format trace: CPU launch <-> GPU activity links", "[loader]") {
  for (int threads : {1, 2}) {
    auto t = Load(kNewFormat, threads);
    const auto& link = t->events.link;
    size_t launch = Row(*t, "cudaLaunchKernel"), kernel = Row(*t, "sgemm_128x64");
    CHECK(link[kernel] == static_cast<int32_t>(launch));
    CHECK(link[launch] == static_cast<int32_t>(kernel));
    size_t drv = Row(*t, "cuLaunchKernel"), triton = Row(*t, "triton_fused");
    CHECK(link[triton] == static_cast<int32_t>(drv));
    CHECK(link[drv] == static_cast<int32_t>(triton));
    size_t cpy = Row(*t, "cudaMemcpyAsync"), memcpy = Row(*t, "Memcpy HtoD (Pageable -> Device)");
    CHECK(link[memcpy] == static_cast<int32_t>(cpy));
    CHECK(link[cpy] == static_cast<int32_t>(memcpy));
    size_t set = Row(*t, "cudaMemsetAsync"), memset = Row(*t, "Memset (Device)");
    CHECK(link[memset] == static_cast<int32_t>(set));
    CHECK(link[set] == static_cast<int32_t>(memset));
    CHECK(link[Row(*t, "aten::addmm")] == -1);
    CHECK(t->stats.gpu_without_launch == 0);
  }
}

TEST_CASE("New-format trace: hierarchy and python frames", "[loader]") {
  auto t = Load(kNewFormat, 2);
  const auto& ev = t->events;
  size_t step = Row(*t, "ProfilerStep#7"), main = Row(*t, "train.py(10): main"),
         fwd = Row(*t, "model.py(42): forward"), linear = Row(*t, "aten::linear"),
         addmm = Row(*t, "aten::addmm"), launch = Row(*t, "cudaLaunchKernel"),
         drv = Row(*t, "cuLaunchKernel"), cpy = Row(*t, "cudaMemcpyAsync"),
         marker = Row(*t, "marker");
  auto i32 = [](size_t v) { return static_cast<int32_t>(v); };
  CHECK(ev.depth[step] == 0);
  CHECK(ev.parent[step] == -1);
  CHECK(ev.depth[main] == 1);
  CHECK(ev.parent[main] == i32(step));
  CHECK(ev.depth[fwd] == 2);
  CHECK(ev.parent[fwd] == i32(main));
  CHECK(ev.depth[linear] == 3);
  CHECK(ev.parent[linear] == i32(fwd));
  CHECK(ev.depth[addmm] == 4);
  CHECK(ev.parent[addmm] == i32(linear));
  CHECK(ev.depth[launch] == 5);
  CHECK(ev.parent[launch] == i32(addmm));
  CHECK(ev.parent[drv] == i32(addmm));
  // aten::linear ends at 1060 exactly: the memcpy launch at 1060 is not inside it.
  CHECK(ev.parent[cpy] == i32(fwd));
  CHECK(ev.depth[cpy] == 3);
  CHECK(ev.parent[marker] == i32(main));
  CHECK(ev.depth[marker] == 2);
  // Another thread starts its own hierarchy.
  CHECK(ev.depth[Row(*t, "custom")] == 0);
  CHECK(ev.parent[Row(*t, "custom2")] == -1);

  // Enclosing python frame.
  CHECK(ev.Frame(step) == -1);
  CHECK(ev.Frame(main) == -1);
  CHECK(ev.Frame(fwd) == i32(main));
  CHECK(ev.Frame(addmm) == i32(fwd));
  CHECK(ev.Frame(launch) == i32(fwd));
  CHECK(ev.Frame(marker) == i32(main));

  auto frames = FramesOf(*t, addmm);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].file == "model.py");
  CHECK(frames[0].line == 42);
  CHECK(frames[0].function == "forward");
  CHECK(frames[1].file == "train.py");
  CHECK(frames[1].line == 10);
  CHECK(frames[1].function == "main");
  // A python_function row starts from itself.
  auto own = FramesOf(*t, main);
  REQUIRE(own.size() == 1);
  CHECK(own[0].function == "main");
  // A kernel takes the frames of its launch.
  auto kframes = FramesOf(*t, Row(*t, "sgemm_128x64"));
  REQUIRE(kframes.size() == 2);
  CHECK(kframes[0].function == "forward");
  CHECK(kframes[1].function == "main");
  CHECK(FramesOf(*t, step).empty());
}

TEST_CASE("Ill-nested entries: a step opened inside prof.step()'s frames", "[loader][frames]") {
  // prof.step() opens ProfilerStep#N inside record_function.__enter__'s Python frames, and the
  // step runs on after they return; a collective's annotation outlives the frame that opened
  // it. Each step's ops belong to the training loop, not to __enter__, and the stack does not
  // grow from step to step.
  std::string events;
  auto add = [&](const std::string& name, const char* cat, int ts, int dur) {
    events += std::string(events.empty() ? "" : ",\n") + R"({"ph":"X","cat":")" + cat +
              R"(","name":")" + name + R"(","pid":1,"tid":1,"ts":)" + std::to_string(ts) +
              R"(,"dur":)" + std::to_string(dur) + "}";
  };
  add("train.py(20): train", "python_function", 0, 10000);
  for (int s = 0; s < 3; ++s) {
    const int b = 100 + 3000 * s;
    add("torch/profiler/profiler.py(640): step", "python_function", b, 60);
    add("torch/autograd/profiler.py(604): __enter__", "python_function", b + 10, 50);
    add("<built-in method _record_function_enter_new of PyCapsule object at 0x1>",
        "python_function", b + 12, 47);
    add("ProfilerStep#" + std::to_string(s + 1), "user_annotation", b + 20, 2900);
    add("train.py(25): <lambda>", "python_function", b + 100, 2600);
    add("aten::linear", "cpu_op", b + 200, 100);
    add("dist.py(9): send", "python_function", b + 2200, 300);
    add("nccl:coalesced", "user_annotation", b + 2250, 270);
    add("cudaLaunchKernel", "cuda_runtime", b + 2490, 5);
  }
  auto t = Load(R"({"traceEvents":[)" + events + "]}", 1);
  const auto& ev = t->events;
  auto i32 = [](size_t v) { return static_cast<int32_t>(v); };
  std::vector<size_t> steps, lambdas, linears, sends, coalesced, launches;
  for (size_t i = 0; i < ev.size(); ++i) {
    const std::string_view n = t->Name(i);
    if (n.substr(0, 13) == "ProfilerStep#") steps.push_back(i);
    if (n == "train.py(25): <lambda>") lambdas.push_back(i);
    if (n == "aten::linear") linears.push_back(i);
    if (n == "dist.py(9): send") sends.push_back(i);
    if (n == "nccl:coalesced") coalesced.push_back(i);
    if (n == "cudaLaunchKernel") launches.push_back(i);
  }
  REQUIRE(steps.size() == 3);
  REQUIRE(linears.size() == 3);
  const size_t train = Row(*t, "train.py(20): train");
  for (size_t s = 0; s < 3; ++s) {
    INFO("step " << s + 1);
    // The step's parent and frame: the loop that contains it whole.
    CHECK(ev.parent[steps[s]] == i32(train));
    CHECK(ev.Frame(steps[s]) == i32(train));
    CHECK(ev.depth[steps[s]] == 1);
    // Its ops: under the step, in the loop's frames, at the same depth every step.
    CHECK(ev.parent[lambdas[s]] == i32(steps[s]));
    CHECK(ev.Frame(linears[s]) == i32(lambdas[s]));
    CHECK(ev.depth[linears[s]] == ev.depth[linears[0]]);
    // The annotation outlives send(): its parent is the frame that contains it whole, and the
    // launch inside both belongs to the annotation opened last, in send()'s frame.
    CHECK(ev.parent[coalesced[s]] == i32(lambdas[s]));
    CHECK(ev.Frame(coalesced[s]) == i32(lambdas[s]));
    CHECK(ev.parent[launches[s]] == i32(coalesced[s]));
    CHECK(ev.Frame(launches[s]) == i32(sends[s]));
  }
  CHECK(ev.parent[sends[0]] == i32(lambdas[0]));
}

TEST_CASE("A staircase of rows, each outliving all the open ones, goes on top past 64",
          "[loader][frames]") {
  // Hostile nesting: row k runs [10k, 100000 + 10k). Each starts inside every open row and
  // outlives it. The first 64 go in below the rows they outlive; past that they go on top (each
  // row's cost stays bounded), with the row opened last as their parent.
  std::string events;
  for (int k = 0; k < 2000; ++k) {
    events += std::string(k ? ",\n" : "") + R"({"ph":"X","cat":"cpu_op","name":"op)" +
              std::to_string(k) + R"(","pid":1,"tid":1,"ts":)" + std::to_string(10 * k) +
              R"(,"dur":100000})";
  }
  auto t = Load(R"({"traceEvents":[)" + events + "]}", 1);
  const auto& ev = t->events;
  REQUIRE(ev.size() == 2000);
  CHECK(ev.parent[Row(*t, "op1")] == -1);  // contained by nothing, below op0
  CHECK(ev.parent[Row(*t, "op1999")] == static_cast<int32_t>(Row(*t, "op1998")));
}

TEST_CASE("Windows are index ranges that cover the span, exactly N of them", "[loader]") {
  for (int n : {1, 4, 7}) {
    INFO("window_count " << n);
    auto t = Load(kNewFormat, 1, n);
    REQUIRE(t->windows.size() == static_cast<size_t>(n));
    CHECK(t->windows.front().start_ns == t->span_start());
    CHECK(t->windows.back().end_ns == t->span_end());
    CHECK(t->span_start() == 1000 * kUs);
    CHECK(t->span_end() == 1292 * kUs);
    for (size_t w = 0; w < t->windows.size(); ++w) {
      const Window& win = t->windows[w];
      INFO("window " << w);
      REQUIRE(win.begin <= win.end);
      REQUIRE(win.start_ns < win.end_ns);
      if (w > 0) {
        REQUIRE(win.start_ns == t->windows[w - 1].end_ns);
        REQUIRE(win.begin == t->windows[w - 1].end);
      }
      // Half-open [start_ns, end_ns), except that the last window also takes rows at end_ns.
      const bool last = w + 1 == t->windows.size();
      for (uint32_t r = win.begin; r < win.end; ++r) {
        REQUIRE(t->events.ts[r] >= win.start_ns);
        REQUIRE((t->events.ts[r] < win.end_ns || (last && t->events.ts[r] == win.end_ns)));
      }
      // Rows just outside the range are outside the window's time range.
      if (win.begin > 0) REQUIRE(t->events.ts[win.begin - 1] < win.start_ns);
      if (win.end < t->events.size()) {
        REQUIRE((last ? t->events.ts[win.end] > win.end_ns : t->events.ts[win.end] >= win.end_ns));
      }
      CHECK(win.step == 0);  // every window's midpoint lies inside ProfilerStep#7
    }
    // Every row inside the profiled span is in exactly one window.
    for (size_t r = 0; r < t->events.size(); ++r) {
      int64_t ts = t->events.ts[r];
      bool inside = ts >= t->span_start() && ts <= t->span_end();
      int hits = 0;
      for (const Window& win : t->windows) hits += r >= win.begin && r < win.end;
      INFO("row " << r << " " << t->Name(r));
      REQUIRE(hits == (inside ? 1 : 0));
    }
  }
}

TEST_CASE("A trace without ProfilerStep markers has no steps and windows over all events",
          "[loader]") {
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 20, "dur": 30},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 21,
     "dur": 3, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": 70,
     "args": {"correlation": 1, "stream": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 2, "ts": 99, "dur": 1}
  ]})J";
  auto t = Load(trace, 2, 3);
  CHECK(t->steps.empty());
  CHECK(t->step_windows.empty());
  CHECK(t->span_start() == 10 * kUs);
  CHECK(t->span_end() == 100 * kUs);
  REQUIRE(t->windows.size() == 3);
  CHECK(t->windows[0].begin == 0);
  CHECK(t->windows[2].end == t->events.size());
  for (size_t w = 0; w < 3; ++w) {
    CHECK(t->windows[w].step == -1);
    if (w > 0) CHECK(t->windows[w].begin == t->windows[w - 1].end);
  }
  CHECK(t->windows[0].start_ns == 10 * kUs);
  CHECK(t->windows[0].end_ns == 40 * kUs);
  CHECK(t->windows[0].end == 4);  // a, b, launch, kernel
  CHECK(t->windows[1].end == 4);  // nothing starts in [40, 70)
}

TEST_CASE("Windows cover an event that starts at the very end of the span", "[loader]") {
  // The last row is an instant at the time the previous event ends: span_end() equals its ts,
  // and the last window must still take it although the windows are otherwise half-open.
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "i", "cat": "cpu_instant_event", "name": "done", "s": "t", "pid": 1, "tid": 1, "ts": 10}
  ]})J";
  auto t = Load(trace, 1, 2);
  REQUIRE(t->windows.size() == 2);
  CHECK(t->span_end() == 10 * kUs);
  CHECK(t->windows.back().end_ns == 10 * kUs);
  CHECK(t->windows.front().begin == 0);
  CHECK(t->windows.front().end == 1);
  CHECK(t->windows.back().begin == 1);
  CHECK(t->windows.back().end == t->events.size());
}

// Windows must still be contiguous index ranges over every row, whatever the timestamps.
void CheckWindowsCoverAllRows(const Trace& t, size_t count) {
  REQUIRE(t.windows.size() == count);
  CHECK(t.windows.front().begin == 0);
  CHECK(t.windows.back().end == t.events.size());
  for (size_t w = 0; w < t.windows.size(); ++w) {
    INFO("window " << w);
    CHECK(t.windows[w].begin <= t.windows[w].end);
    CHECK(t.windows[w].start_ns <= t.windows[w].end_ns);
    if (w > 0) CHECK(t.windows[w].begin == t.windows[w - 1].end);
  }
}

TEST_CASE("Extreme timestamps: events beyond 2^62 ns are skipped and counted",
          "[loader][extreme]") {
  // 9223372036854769 us + 6.807 us = INT64_MAX ns. The accepted range (kMinTimestampNs ..
  // kMaxTimestampNs) keeps every span, end and window bound representable.
  const char* trace = R"J([
    {"ph": "X", "cat": "cpu_op", "name": "early", "pid": 1, "tid": 1, "ts": 4000000000000000, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "last", "pid": 1, "tid": 1, "ts": 9223372036854769, "dur": 6.807}
  ])J";
  auto t = Load(trace, 1, 4);
  REQUIRE(t->events.size() == 1);
  CHECK(t->stats.skipped.at("ts out of range") == 1);
  CheckWindowsCoverAllRows(*t, 4);
}

TEST_CASE("Extreme timestamps: a span longer than 2^63 ns", "[loader][extreme]") {
  // -9e15 us and +9e15 us are both outside the accepted range, so end - start can never
  // overflow in BuildWindows, the HTA kernel_time or the breakdown spans.
  const char* trace = R"J([
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": -9000000000000000, "dur": 1,
     "args": {"stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 9000000000000000, "dur": 1,
     "args": {"stream": 7, "correlation": 2}}
  ])J";
  LoadOptions opts;
  opts.threads = 1;
  opts.window_count = 4;
  auto r = LoadTraceFromMemory(trace, "inline.json", opts);
  // Either a clear error or a trace whose windows and figures make sense.
  if (r.ok()) {
    const Trace& t = **r;
    CHECK(t.windows.empty());
    CHECK(t.events.size() == 0);
    CHECK(t.stats.skipped.at("ts out of range") == 2);
    HtaFigures h = ComputeHtaFigures(t);
    CHECK_FALSE(h.has_gpu_events);
  } else {
    CHECK_THAT(r.status().message(), Catch::StartsWith("inline.json: "));
  }
}

TEST_CASE("Negative timestamps load and sort", "[loader][extreme]") {
  const char* trace = R"J([
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": -5.5, "dur": 20}
  ])J";
  auto t = Load(trace, 1, 2);
  REQUIRE(t->events.size() == 2);
  CHECK(t->Name(0) == "a");
  CHECK(t->events.ts[0] == -5500);
  CHECK(t->events.parent[1] == 0);
  CheckWindowsCoverAllRows(*t, 2);
}

TEST_CASE("Huge ProfilerStep numbers", "[loader][extreme][overflow]") {
  // Too large for int64: not a step (ParseStepNumber refuses it) but still one HTA iteration name.
  const char* trace = R"J([
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#99999999999999999999", "pid": 1,
     "tid": 1, "ts": 1, "dur": 10},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#123456789012345", "pid": 1,
     "tid": 1, "ts": 20, "dur": 10}
  ])J";
  auto t = Load(trace, 1);
  REQUIRE(t->steps.size() == 1);
  CHECK(t->steps[0].number == INT64_C(123456789012345));
  CHECK(ComputeHtaFigures(*t).iterations == 1);  // the last step is filtered out
}

TEST_CASE("ParsePythonFrame rejects non-numeric line numbers", "[loader][frames][overflow]") {
  PythonFrame f;
  CHECK_FALSE(ParsePythonFrame("a.py(abcdefghi): f", &f));
  CHECK_FALSE(ParsePythonFrame("(y.20pion5): ", &f));
  CHECK_FALSE(ParsePythonFrame("<built-in method mm of type object>", &f));
  REQUIRE(ParsePythonFrame("pkg/a (copy).py(123456789): run", &f));
  CHECK(f.file == "pkg/a (copy).py");
  CHECK(f.line == 123456789);
  CHECK(f.function == "run");
  auto frames = ParseCallStack("a.py(1): f; b.py(2): g;garbage;c.py(x): h");
  REQUIRE(frames.size() == 2);
  CHECK(frames[1].file == "b.py");
}

TEST_CASE("2021 Operator events named as record_function markers are annotations", "[loader]") {
  CHECK(IsLegacyAnnotationName("ProfilerStep#3"));
  CHECK(IsLegacyAnnotationName("Optimizer.step#SGD.step"));
  CHECK(IsLegacyAnnotationName("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"));
  CHECK(IsLegacyAnnotationName("## forward ##"));
  CHECK_FALSE(IsLegacyAnnotationName("aten::conv2d"));
  CHECK_FALSE(IsLegacyAnnotationName("autograd::engine::evaluate_function: AddBackward0"));
  CHECK_FALSE(IsLegacyAnnotationName("CudnnConvolutionBackward"));
  CHECK_FALSE(IsLegacyAnnotationName("detach_"));
  CHECK_FALSE(IsLegacyAnnotationName("AOTDispatcher Runtime Wrapper Prologue"));
}

TEST_CASE("the legacy profiler's export: ops without a category on pid 'CPU functions'",
          "[loader]") {
  // torch.autograd.profiler's EventList.export_chrome_trace: no "cat", pid "CPU functions".
  const std::string legacy = R"([
    {"name": "aten::conv2d", "ph": "X", "ts": 10.5, "dur": 1121.4, "tid": 1,
     "pid": "CPU functions", "args": {}},
    {"name": "ProfilerStep#2", "ph": "X", "ts": 5, "dur": 2000, "tid": 1,
     "pid": "CPU functions", "args": {}},
    {"name": "aten::to", "ph": "s", "ts": 151.8, "tid": 1, "pid": "CPU functions", "id": 1,
     "cat": "cpu_to_cuda", "args": {}},
    {"name": "mystery", "ph": "X", "ts": 3000, "dur": 5, "tid": 1, "pid": 7, "args": {}}
  ])";
  auto t = Load(legacy, 1);
  CHECK(t->events.kind[Row(*t, "aten::conv2d")] == EventKind::kCpuOp);
  CHECK(t->events.kind[Row(*t, "ProfilerStep#2")] == EventKind::kUserAnnotation);
  CHECK(t->events.kind[Row(*t, "mystery")] == EventKind::kOther);  // elsewhere: unknown
}

TEST_CASE("Old-format (2021) bare-array trace", "[loader]") {
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    auto t = Load(kOldFormat, threads);
    CHECK(t->bare_array);
    CHECK(t->events.size() == 10);
    CHECK(t->stats.total_skipped() == 0);
    CHECK(t->stats.unknown_categories.empty());
    CHECK(t->rank == 0);
    CHECK(t->rank_source == "default");

    size_t step = Row(*t, "ProfilerStep#3"), conv = Row(*t, "aten::conv2d"),
           convolution = Row(*t, "aten::convolution"), launch = Row(*t, "cudaLaunchKernel"),
           kernel = Row(*t, "implicit_convolve_sgemm"),
           memcpy = Row(*t, "Memcpy HtoD (Pageable -> Device)"),
           memset = Row(*t, "Memset (Device)");
    // The 2021 profiler wrote record_function markers as "Operator": read as annotations.
    CHECK(t->events.kind[step] == EventKind::kUserAnnotation);
    CHECK(t->events.kind[conv] == EventKind::kCpuOp);
    CHECK(t->events.kind[launch] == EventKind::kRuntime);
    CHECK(t->events.kind[kernel] == EventKind::kKernel);
    CHECK(t->events.kind[memcpy] == EventKind::kMemcpy);
    CHECK(t->events.kind[memset] == EventKind::kMemset);
    CHECK(t->events.kind[Row(*t, "Iteration Start: PyTorch Profiler")] == EventKind::kInstant);

    // Lowercase "external id", correlation, bytes, stream.
    CHECK(t->events.external_id[conv] == 3);
    CHECK(t->events.external_id[kernel] == 4);
    CHECK(t->events.correlation[kernel] == 11);
    CHECK(t->events.stream[kernel] == 7);
    CHECK(t->events.bytes[memcpy] == 602112);
    CHECK(t->strings.Get(t->events.CallStack(conv)) ==
          "torchvision/models/resnet.py(230): _forward_impl;train.py(57): main");
    CHECK(t->events.CallStack(convolution) == kEmptyString);

    // String tids.
    const Track& cpu = t->tracks[t->events.track[conv]];
    CHECK(cpu.pid_num == 1234);
    CHECK(cpu.tid == "5678");
    CHECK(cpu.tid_num == 5678);
    const Track& gpu = t->tracks[t->events.track[kernel]];
    CHECK(gpu.tid == "stream 7");
    CHECK(gpu.tid_num == kNone);
    CHECK(gpu.gpu);

    // async flows are kept.
    REQUIRE(t->flows.size() == 2);
    CHECK(t->strings.Get(t->flows[0].cat) == "async");
    CHECK(t->flows[0].id == 11);

    // Links, hierarchy, step.
    CHECK(t->events.link[kernel] == static_cast<int32_t>(launch));
    CHECK(t->events.link[launch] == static_cast<int32_t>(kernel));
    CHECK(t->events.link[memcpy] == static_cast<int32_t>(Row(*t, "cudaMemcpyAsync")));
    CHECK(t->events.link[memset] == static_cast<int32_t>(Row(*t, "cudaMemsetAsync")));
    CHECK(t->events.parent[convolution] == static_cast<int32_t>(conv));
    CHECK(t->events.parent[launch] == static_cast<int32_t>(convolution));
    CHECK(t->events.depth[launch] == 3);
    REQUIRE(t->steps.size() == 1);
    CHECK(t->steps[0].number == 3);
    CHECK(t->steps[0].cpu_end == 600 * kUs);
    CHECK(t->steps[0].gpu_end == 773 * kUs);

    // No deviceProperties: a device entry is made for the GPU that has activity.
    REQUIRE(t->devices.size() == 1);
    CHECK(t->devices[0].id == 0);
    CHECK(t->devices[0].used);
    CHECK(t->devices[0].name.empty());

    // Call stack frames: own string, a parent's string, and through the launch for the kernel.
    auto own = FramesOf(*t, conv);
    REQUIRE(own.size() == 2);
    CHECK(own[0].file == "torchvision/models/resnet.py");
    CHECK(own[0].line == 230);
    CHECK(own[0].function == "_forward_impl");
    CHECK(own[1].file == "train.py");
    CHECK(own[1].line == 57);
    CHECK(own[1].function == "main");
    auto inherited = FramesOf(*t, launch);
    REQUIRE(inherited.size() == 2);
    CHECK(inherited[0].function == "_forward_impl");
    auto gpu_frames = FramesOf(*t, kernel);
    REQUIRE(gpu_frames.size() == 2);
    CHECK(gpu_frames[0].line == 230);
    CHECK(FramesOf(*t, step).empty());
  }
}

TEST_CASE("Fractional microseconds beyond double precision are exact", "[loader]") {
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
     "ts": 1712195495519689.047, "dur": 2.5},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
     "ts": 1712195495519690.001, "dur": 0.999, "args": {"stream": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "whole", "pid": 1, "tid": 1,
     "ts": 1712195495519700, "dur": 1}
  ]})J";
  for (int threads : {1, 2}) {
    auto t = Load(trace, threads);
    size_t a = Row(*t, "a"), k = Row(*t, "k"), whole = Row(*t, "whole");
    CHECK(t->events.ts[a] == INT64_C(1712195495519689047));
    CHECK(t->events.dur[a] == 2500);
    CHECK(t->events.end(a) == INT64_C(1712195495519691547));
    CHECK((t->events.flags[a] & kFracTs) != 0);
    CHECK(t->events.ts[k] == INT64_C(1712195495519690001));
    CHECK(t->events.dur[k] == 999);
    CHECK(t->events.ts[whole] == INT64_C(1712195495519700000));
    CHECK((t->events.flags[whole] & kFracTs) == 0);
  }
}

TEST_CASE("pid and tid as numbers or strings", "[loader]") {
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "num", "pid": 42, "tid": 4093687616, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "str", "pid": "42", "tid": "4093687616", "ts": 2, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "text", "pid": "Traces", "tid": "PyTorch Profiler",
     "ts": 3, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "neg", "pid": -1, "tid": -7, "ts": 4, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "none", "ts": 5, "dur": 1}
  ]})J";
  auto t = Load(trace, 1);
  const Track& num = t->tracks[t->events.track[Row(*t, "num")]];
  CHECK(num.pid == "42");
  CHECK(num.tid == "4093687616");
  CHECK(num.pid_num == 42);
  CHECK(num.tid_num == INT64_C(4093687616));
  // A number and a string with the same text are the same track.
  CHECK(t->events.track[Row(*t, "num")] == t->events.track[Row(*t, "str")]);
  const Track& text = t->tracks[t->events.track[Row(*t, "text")]];
  CHECK(text.pid == "Traces");
  CHECK(text.pid_num == kNone);
  CHECK(text.tid == "PyTorch Profiler");
  const Track& neg = t->tracks[t->events.track[Row(*t, "neg")]];
  CHECK(neg.pid == "-1");
  CHECK(neg.tid_num == -7);
  const Track& none = t->tracks[t->events.track[Row(*t, "none")]];
  CHECK(none.pid.empty());
  CHECK(none.tid.empty());
  CHECK(t->tracks.size() == 4);
}

TEST_CASE("Rank from distributedInfo, else the file name, else 0", "[loader]") {
  const char* no_info = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})J";
  auto by_name = Load(no_info, 1, 10, "rank-3.json");
  CHECK(by_name->rank == 3);
  CHECK(by_name->rank_source == "file name");
  auto by_path = Load(no_info, 1, 10, "/data/run/worker_rank_12.pt.trace.json");
  CHECK(by_path->rank == 12);
  auto none = Load(no_info, 1, 10, "inline.json");
  CHECK(none->rank == 0);
  CHECK(none->rank_source == "default");

  // distributedInfo wins over the file name.
  const char* with_info = R"J({"distributedInfo": {"rank": 5, "world_size": 8, "backend": "gloo"},
    "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})J";
  auto info = Load(with_info, 1, 10, "rank-3.json");
  CHECK(info->rank == 5);
  CHECK(info->rank_source == "distributedInfo");
  CHECK(info->world_size == 8);
  CHECK(info->backend == "gloo");

  CHECK(RankFromFileName("rank-3.json") == 3);
  CHECK(RankFromFileName("rank_7.json.gz") == 7);
  CHECK(RankFromFileName("rank0.json") == 0);
  CHECK(RankFromFileName("/x/rank-9/trace.json") == -1);  // the directory does not count
  CHECK(RankFromFileName("host.1234.pt.trace.json") == -1);
  CHECK(RankFromFileName("ranking-3.json") == -1);
  CHECK(RankFromFileName("") == -1);
}

// Reference table of a load, to compare loads that must give the same result.
struct Snapshot {
  std::vector<int64_t> ts, dur, link_ts;
  std::vector<std::string> names, tracks;
  std::vector<int32_t> parent_depth;
  bool operator==(const Snapshot& o) const {
    return ts == o.ts && dur == o.dur && link_ts == o.link_ts && names == o.names &&
           tracks == o.tracks && parent_depth == o.parent_depth;
  }
};

Snapshot Snap(const Trace& t) {
  Snapshot s;
  for (size_t i = 0; i < t.events.size(); ++i) {
    s.ts.push_back(t.events.ts[i]);
    s.dur.push_back(t.events.dur[i]);
    s.names.emplace_back(t.Name(i));
    const Track& tr = t.tracks[t.events.track[i]];
    s.tracks.push_back(tr.pid + "/" + tr.tid);
    s.link_ts.push_back(t.events.link[i] >= 0 ? t.events.ts[t.events.link[i]] : -1);
    s.parent_depth.push_back(t.events.depth[i]);
  }
  return s;
}

TEST_CASE("Gzip traces load from memory and from a file, one or several members", "[loader]") {
  auto plain = Load(kNewFormat, 1);
  const Snapshot expected = Snap(*plain);

  const std::string gz = Gzip(kNewFormat);
  REQUIRE(static_cast<unsigned char>(gz[0]) == 0x1f);
  REQUIRE(static_cast<unsigned char>(gz[1]) == 0x8b);
  auto from_memory = Load(gz, 1);
  CHECK(Snap(*from_memory) == expected);
  CHECK(from_memory->stats.json_bytes == std::string_view(kNewFormat).size());
  CHECK(from_memory->rank == 2);
  CHECK(from_memory->steps.size() == 1);

  // Two members, cut in the middle of an event.
  const std::string text = kNewFormat;
  const std::string two =
      Gzip(text.substr(0, text.size() / 2)) + Gzip(text.substr(text.size() / 2));
  auto concatenated = Load(two, 2);
  CHECK(Snap(*concatenated) == expected);

  // Many members, one per 100 bytes.
  std::string many;
  for (size_t i = 0; i < text.size(); i += 100) many += Gzip(text.substr(i, 100));
  CHECK(Snap(*Load(many, 1)) == expected);

  TempFile file(gz, ".json.gz");
  LoadOptions opts;
  opts.threads = 2;
  auto loaded = LoadTrace(file.path(), opts);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK(Snap(**loaded) == expected);
  CHECK((*loaded)->path == file.path());
}

// A larger generated trace: several batches per load when chunks are small.
std::string GeneratedTrace(int steps, int ops_per_step) {
  std::string s = "{\"traceEvents\": [\n";
  int64_t ts = 1000;
  int corr = 1;
  bool first = true;
  auto add = [&](const std::string& e) {
    if (!first) s += ",\n";
    first = false;
    s += e;
  };
  for (int st = 0; st < steps; ++st) {
    int64_t step_start = ts;
    int64_t step_dur = ops_per_step * 20 + 10;
    add("{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" + std::to_string(st) +
        "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(step_start) +
        ",\"dur\":" + std::to_string(step_dur) + "}");
    for (int op = 0; op < ops_per_step; ++op) {
      int64_t t0 = step_start + 5 + op * 20;
      add("{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::op" + std::to_string(op % 7) +
          "\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(t0) + ".125,\"dur\":15}");
      add("{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
          "\"tid\":1,\"ts\":" +
          std::to_string(t0 + 2) + ",\"dur\":3,\"args\":{\"correlation\":" + std::to_string(corr) +
          "}}");
      add("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_" + std::to_string(op % 5) +
          "\",\"pid\":0,\"tid\":7,\"ts\":" + std::to_string(t0 + 10) +
          ",\"dur\":30,\"args\":{\"correlation\":" + std::to_string(corr) +
          ",\"stream\":7,\"device\":0}}");
      ++corr;
    }
    ts += step_dur + 10;
  }
  s += "\n]}";
  return s;
}

TEST_CASE("Loads agree across threads and chunk sizes", "[loader]") {
  const std::string trace = GeneratedTrace(4, 60);
  REQUIRE(trace.size() > 4 * 4096);
  auto reference = Load(trace, 1, 10);
  CHECK(reference->events.size() == 4 * (1 + 3 * 60));
  CHECK(reference->steps.size() == 4);
  CHECK(reference->stats.gpu_without_launch == 0);
  const Snapshot expected = Snap(*reference);
  for (int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    auto t = Load(trace, threads, 10, "inline.json", 4096);
    CHECK(Snap(*t) == expected);
    CHECK(t->steps.size() == 4);
    for (size_t s = 0; s < t->steps.size(); ++s) {
      CHECK(t->steps[s].number == static_cast<int64_t>(s));
      CHECK(t->steps[s].gpu_end == reference->steps[s].gpu_end);
    }
    auto gz = Load(Gzip(trace), threads, 10, "inline.json.gz", 4096);
    CHECK(Snap(*gz) == expected);
  }
  // The last kernel of step 0 (launched at 2187, before the CPU end at 2210) ends at 2225.
  const Step& s0 = reference->steps[0];
  CHECK(s0.cpu_end == 2210 * kUs);
  CHECK(s0.gpu_work_end == (1000 + 5 + 59 * 20 + 10 + 30) * kUs);
  CHECK(s0.gpu_end == std::min(s0.gpu_work_end, reference->steps[1].cpu_start));
}

TEST_CASE("ProfilerStep numbers and GPU ends of several steps", "[loader]") {
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#10", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 90, "dur": 5,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#11", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 5,
     "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "long_kernel", "pid": 0, "tid": 7, "ts": 96, "dur": 300,
     "args": {"correlation": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "short_kernel", "pid": 0, "tid": 8, "ts": 120, "dur": 10,
     "args": {"correlation": 2, "stream": 8}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#notanumber", "pid": 1, "tid": 1,
     "ts": 200, "dur": 5}
  ]})J";
  auto t = Load(trace, 2);
  REQUIRE(t->steps.size() == 2);
  CHECK(t->steps[0].number == 10);
  CHECK(t->steps[0].cpu_end == 100 * kUs);
  CHECK(t->steps[0].gpu_work_end == 396 * kUs);  // the kernel launched at 90 runs to 396
  CHECK(t->steps[0].gpu_end == 100 * kUs);       // ... but step 11 starts at 100: no overlap
  CHECK(t->steps[1].number == 11);
  CHECK(t->steps[1].gpu_end == 150 * kUs);  // its kernel ends at 130, before the CPU end
  CHECK(t->step_windows.size() == 2);
  CHECK(t->span_start() == 0);
}

TEST_CASE("The profiled span ends with the step that ends last", "[loader]") {
  // ProfilerStep#10's GPU work runs to 396 us, past the end of the last step (150 us): the span
  // (and so the windows) must reach 396, as step_windows[0] does, not stop at steps.back().end().
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#10", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 90, "dur": 5,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#11", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
    {"ph": "X", "cat": "kernel", "name": "long_kernel", "pid": 0, "tid": 7, "ts": 96, "dur": 300,
     "args": {"correlation": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "late_kernel", "pid": 0, "tid": 7, "ts": 200, "dur": 5,
     "args": {"stream": 7}}
  ]})J";
  auto t = Load(trace, 1, 4);
  REQUIRE(t->steps.size() == 2);
  CHECK(t->steps[0].gpu_work_end == 396 * kUs);
  CHECK(t->steps[0].end() == t->steps[1].start());  // steps never overlap
  CHECK(t->span_end() == 396 * kUs);
  CHECK(t->windows.back().end_ns >= t->step_windows[0].end_ns);
}

TEST_CASE("Counters, metadata and flows are counted, not rows", "[loader]") {
  const char* trace = R"J({"traceEvents": [
    {"ph": "C", "name": "memory", "pid": 1, "tid": 1, "ts": 5, "args": {"bytes": 10}},
    {"ph": "M", "name": "process_labels", "pid": 1, "tid": 0, "args": {"labels": "CPU"}},
    {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "gpu 0"}},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": "0x2a", "pid": 1, "tid": 1, "ts": 6},
    {"ph": "t", "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 7},
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 0, "ts": 10, "dur": 5}
  ]})J";
  auto t = Load(trace, 1);
  CHECK(t->events.size() == 1);
  CHECK(t->stats.counters == 1);
  CHECK(t->stats.metadata == 2);
  CHECK(t->stats.flows == 2);
  REQUIRE(t->flows.size() == 1);  // the one without an id is skipped
  CHECK(t->stats.skipped.at("flow without id") == 1);
  CHECK(t->tracks[t->events.track[0]].name == "CPU");  // process_labels on (1, 0)
}

TEST_CASE("Cancellation stops a load with an error", "[loader]") {
  LoadOptions opts;
  opts.threads = 2;
  opts.cancel = CancelToken::Cancellable();
  opts.cancel.Cancel();
  auto r = LoadTraceFromMemory(kNewFormat, "inline.json", opts);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("inline.json"));
  CHECK_THAT(r.status().message(), Catch::Contains("cancelled"));
}

TEST_CASE("ListTraceFiles lists *.json and *.json.gz files, sorted, not recursive", "[loader]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("ttap_list_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub.json");
  for (const char* f : {"rank-1.json.gz", "rank-0.json", "notes.txt", "trace.json.bak"}) {
    std::ofstream(dir / f) << "x";
  }
  std::ofstream(dir / "sub.json" / "inner.json") << "x";
  auto files = ListTraceFiles(dir.string());
  fs::remove_all(dir);
  REQUIRE(files.size() == 2);
  CHECK(files[0] == (dir / "rank-0.json").string());
  CHECK(files[1] == (dir / "rank-1.json.gz").string());
  CHECK(ListTraceFiles("/nonexistent/dir").empty());
}

const char* kRocm = R"J({
  "deviceProperties": [{"id": 0, "name": "AMD Instinct MI250X", "computeMajor": 9, "computeMinor": 0}],
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 0, "dur": 50},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 10, "tid": 10, "ts": 5,
   "dur": 10, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipExtModuleLaunchKernel", "pid": 10, "tid": 10,
   "ts": 20, "dur": 10, "args": {"correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk", "pid": 2, "tid": 0, "ts": 30, "dur": 40,
   "args": {"correlation": 3, "stream": 0, "device": 2}},
  {"ph": "X", "cat": "kernel", "name": "elementwise", "pid": 2, "tid": 0, "ts": 70, "dur": 10,
   "args": {"correlation": 4, "stream": 0, "device": 2}}
  ]
})J";

TEST_CASE("ROCm trace (hipLaunchKernel) loads and links", "[loader]") {
  auto t = Load(kRocm, 1);
  size_t launch = Row(*t, "hipLaunchKernel"), kernel = Row(*t, "Cijk_Alik_Bljk");
  CHECK(t->events.kind[launch] == EventKind::kRuntime);
  CHECK(t->events.link[kernel] == static_cast<int32_t>(launch));
  CHECK(t->events.link[launch] == static_cast<int32_t>(kernel));
  CHECK(t->events.link[Row(*t, "elementwise")] ==
        static_cast<int32_t>(Row(*t, "hipExtModuleLaunchKernel")));
  CHECK(t->tracks[t->events.track[kernel]].device == 2);
  // One visible device whose properties carry another index: the properties describe it.
  const DeviceInfo* used = nullptr;
  for (const auto& d : t->devices) {
    if (d.used) used = &d;
  }
  REQUIRE(used != nullptr);
  CHECK(used->id == 2);
  CHECK(used->name == "AMD Instinct MI250X");
  CHECK(Summarize(*t).device_type == "AMD GPU");
}

TEST_CASE("CPU-only trace loads with no GPU device used", "[loader]") {
  const char* trace = R"J({
    "deviceProperties": [],
    "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 5, "tid": 5, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 5, "tid": 5, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 5, "tid": 6, "ts": 40, "dur": 20},
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
     "ts": 0, "dur": 100}
  ]})J";
  auto t = Load(trace, 2);
  CHECK(t->events.size() == 4);
  for (const auto& d : t->devices) CHECK_FALSE(d.used);
  for (const auto& tr : t->tracks) CHECK_FALSE(tr.gpu);
  CHECK(t->stats.gpu_without_launch == 0);
  REQUIRE(t->steps.size() == 1);
  CHECK(t->steps[0].gpu_end == t->steps[0].cpu_end);
  auto summary = Summarize(*t);
  CHECK(summary.device_type == "CPU");
  CHECK(summary.total_kernel_ns == 0);
  auto hta = ComputeHtaFigures(*t);
  CHECK_FALSE(hta.has_gpu_events);
  CHECK(hta.gpu_events_considered == 0);
}

TEST_CASE("GPU activity without its launch is counted", "[loader]") {
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
     "args": {"correlation": 99, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "no_corr", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
     "args": {"stream": 7}}
  ]})J";
  auto t = Load(trace, 1);
  CHECK(t->stats.gpu_without_launch == 2);
  CHECK(t->events.link[Row(*t, "orphan")] == -1);
}

TEST_CASE("GPU activity without a correlation id links to its launch by the ac2g flow",
          "[loader]") {
  // Early ROCm exports: the launch and its kernel carry only "External id"; an ac2g flow starts
  // at the call (same thread and ts) and ends at the kernel. A flow that starts at no launch
  // links nothing.
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 5, "tid": 5, "ts": 100, "dur": 40},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, "tid": 5, "ts": 105,
     "dur": 30, "args": {"External id": 32}},
    {"ph": "s", "id": 32, "pid": 5, "tid": 5, "ts": 105, "cat": "ac2g", "name": "ac2g"},
    {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 2, "tid": 0, "ts": 150, "dur": 5,
     "args": {"External id": 32}},
    {"ph": "f", "id": 32, "pid": 2, "tid": 0, "ts": 150, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "s", "id": 40, "pid": 5, "tid": 5, "ts": 101, "cat": "ac2g", "name": "ac2g"},
    {"ph": "X", "cat": "kernel", "name": "stray_kernel", "pid": 2, "tid": 0, "ts": 160, "dur": 5,
     "args": {"External id": 40}},
    {"ph": "f", "id": 40, "pid": 2, "tid": 0, "ts": 160, "cat": "ac2g", "name": "ac2g", "bp": "e"}
  ]})J";
  auto t = Load(trace, 1);
  const size_t launch = Row(*t, "hipLaunchKernel"), kernel = Row(*t, "add_kernel");
  CHECK(t->events.link[kernel] == static_cast<int32_t>(launch));
  CHECK(t->events.link[launch] == static_cast<int32_t>(kernel));
  CHECK(t->events.link[Row(*t, "stray_kernel")] == -1);
  CHECK(t->stats.gpu_without_launch == 1);
}

// Hand-computed HTA temporal breakdown (HTA_REFERENCE.md §1, §3):
//   G (rows with a stream): sgemm [0,10) COMP, Memcpy [5,15) MEM, ncclKernel [20,30) COMM,
//   elementwise [25,35) COMP, Stream Wait Event [40,42) OTHER.
//   kernel_time = 42 - 0 = 42; |U G| = 15 + 15 + 2 = 32; idle = 10;
//   compute = |[0,10) u [25,35)| = 20; non_compute = 42 - 20 - 10 = 12;
//   comm/comp overlap = |[20,30) n [25,35)| / |[20,30)| = 5/10 = 50%.
const char* kHtaTrace = R"J({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 45},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 4},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
   "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "sgemm_nn", "pid": 0, "tid": 7, "ts": 0, "dur": 10,
   "args": {"correlation": 1, "stream": 7}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 8,
   "ts": 5, "dur": 10, "args": {"correlation": 2, "stream": 8}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 9,
   "ts": 20, "dur": 10, "args": {"correlation": 3, "stream": 9}},
  {"ph": "X", "cat": "kernel", "name": "elementwise_kernel", "pid": 0, "tid": 7, "ts": 25, "dur": 10,
   "args": {"correlation": 4, "stream": 7}},
  {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 40, "dur": 2,
   "args": {"correlation": 5, "stream": 7}},
  {"ph": "i", "cat": "kernel", "name": "instant_not_counted", "pid": 0, "tid": 7, "ts": 50, "s": "t",
   "args": {"correlation": 6, "stream": 7}},
  {"ph": "X", "name": "no_cat_not_counted", "pid": 0, "tid": 7, "ts": 60, "dur": 100,
   "args": {"correlation": 7, "stream": 7}},
  {"ph": "X", "cat": "Trace", "name": "span_not_counted", "pid": 0, "tid": 7, "ts": 0, "dur": 500,
   "args": {"stream": 7}}
]})J";

TEST_CASE("HTA temporal breakdown and comm/comp overlap on a hand-computed trace",
          "[loader][hta]") {
  for (int threads : {1, 2}) {
    auto t = Load(kHtaTrace, threads);
    HtaFigures h = ComputeHtaFigures(*t);
    CHECK(h.has_gpu_events);
    CHECK(h.gpu_events_considered == 5);
    CHECK_FALSE(h.last_step_filter_applied);
    CHECK(h.iterations == 1);
    CHECK(h.kernel_time_us == Approx(42.0));
    CHECK(h.idle_time_us == Approx(10.0));
    CHECK(h.compute_time_us == Approx(20.0));
    CHECK(h.non_compute_time_us == Approx(12.0));
    REQUIRE(h.comm_comp_overlap_pct.has_value());
    CHECK(*h.comm_comp_overlap_pct == Approx(50.0));
    // Summarize carries the same figures.
    auto s = Summarize(*t);
    CHECK(s.hta.kernel_time_us == Approx(42.0));
    CHECK(s.total_kernel_ns == (10 + 10 + 10) * kUs);
  }
  CHECK(ClassifyHtaKernel("ncclKernel_AllReduce") == HtaKernelType::kCommunication);
  CHECK(ClassifyHtaKernel("hipMemcpy") == HtaKernelType::kCommunication);
  CHECK(ClassifyHtaKernel("Memcpy DtoH") == HtaKernelType::kMemory);
  CHECK(ClassifyHtaKernel("Stream Wait Event") == HtaKernelType::kOther);
  CHECK(ClassifyHtaKernel("cudaLaunchKernel") == HtaKernelType::kOther);
  CHECK(ClassifyHtaKernel("volta_sgemm") == HtaKernelType::kComputation);
}

TEST_CASE("HTA: no communication means no overlap figure", "[loader][hta]") {
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 100, "dur": 10,
     "args": {"correlation": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 110, "dur": 10,
     "args": {"correlation": 2, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 130, "dur": 20,
     "args": {"correlation": 3, "stream": 7}}
  ]})J";
  auto h = ComputeHtaFigures(*Load(trace, 1));
  CHECK(h.kernel_time_us == Approx(50.0));
  CHECK(h.idle_time_us == Approx(10.0));  // touching intervals merge: only [120,130) is idle
  CHECK(h.compute_time_us == Approx(40.0));
  CHECK(h.non_compute_time_us == Approx(0.0));
  CHECK_FALSE(h.comm_comp_overlap_pct.has_value());
  CHECK(h.iterations == 0);
}

TEST_CASE("HTA: the last-step filter drops the last step and its GPU work", "[loader][hta]") {
  // Two ProfilerStep names: CPU rows before the start of ProfilerStep#2 are kept, and GPU rows
  // whose correlation matches a kept CPU row. The kernel launched in step 2 is dropped.
  const char* trace = R"J({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 2,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 50, "dur": 50},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 60, "dur": 2,
     "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 20, "dur": 8,
     "args": {"correlation": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 70, "dur": 20,
     "args": {"correlation": 2, "stream": 7}}
  ]})J";
  auto t = Load(trace, 2);
  REQUIRE(t->steps.size() == 2);
  auto h = ComputeHtaFigures(*t);
  CHECK(h.last_step_filter_applied);
  CHECK(h.iterations == 1);
  CHECK(h.gpu_events_considered == 1);
  CHECK(h.kernel_time_us == Approx(8.0));
  CHECK(h.idle_time_us == Approx(0.0));
  CHECK(h.compute_time_us == Approx(8.0));
}

TEST_CASE("Summarize breaks a step down into kernel, data movement and idle time", "[loader]") {
  auto t = Load(kNewFormat, 1);
  auto s = Summarize(*t);
  CHECK(s.device_type == "NVIDIA GPU");
  REQUIRE(s.steps.size() == 1);
  const Breakdown& b = s.steps[0].breakdown;
  // Step [1000, 1292): kernels [1050, 1280), memcpy/memset [1280, 1292).
  CHECK(b.span_ns == 292 * kUs);
  CHECK(b.kernel_ns == 230 * kUs);
  CHECK(b.data_movement_ns == 12 * kUs);
  CHECK(b.idle_ns == 50 * kUs);
  CHECK(s.steps[0].kernels == 4);
  CHECK(s.total_kernel_ns == 230 * kUs);
  REQUIRE(s.top_kernels.size() == 2);
  CHECK(t->strings.Get(s.top_kernels[0].name) == "sgemm_128x64");
}

TEST_CASE("A step's GPU activities include kernels without a recorded launch", "[loader]") {
  // A TensorRT engine enqueues its kernels inside the library: CUPTI records the kernels, the
  // trace has no launch call for them. They count for the step whose span holds their start.
  const std::string trace = R"({"traceEvents":[
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1000,"dur":500},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1010,"dur":5,
     "args":{"correlation":7}},
    {"ph":"X","cat":"kernel","name":"k_launched","pid":0,"tid":7,"ts":1020,"dur":10,
     "args":{"correlation":7,"device":0,"stream":7}},
    {"ph":"X","cat":"kernel","name":"trt_engine_kernel","pid":0,"tid":7,"ts":1100,"dur":10,
     "args":{"device":0,"stream":7}},
    {"ph":"X","cat":"kernel","name":"trt_engine_kernel","pid":0,"tid":7,"ts":1200,"dur":10,
     "args":{"device":0,"stream":7}},
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1600,"dur":500},
    {"ph":"X","cat":"kernel","name":"trt_engine_kernel","pid":0,"tid":7,"ts":1700,"dur":10,
     "args":{"device":0,"stream":7}}
  ]})";
  auto t = Load(trace, 1);
  auto s = Summarize(*t);
  REQUIRE(s.steps.size() == 2);
  CHECK(s.steps[0].kernels == 3);
  CHECK(s.steps[1].kernels == 1);
}

}  // namespace
}  // namespace ttap

TEST_CASE("unknown categories: the first 256 are named, the rest counted together", "[loader]") {
  // 1,000 events in 500 distinct unknown categories, loaded on several threads.
  std::string json = "{\"traceEvents\": [";
  for (int i = 0; i < 1000; ++i) {
    json += std::string(i ? "," : "") + "{\"ph\":\"X\",\"cat\":\"weird_" + std::to_string(i % 500) +
            "\",\"name\":\"e\",\"pid\":1,\"tid\":1,\"ts\":" + std::to_string(1000 + i) +
            ",\"dur\":1}";
  }
  json += "]}";
  ttap::LoadOptions opts;
  opts.threads = 4;
  auto r = ttap::LoadTraceFromMemory(json, "cats.json", opts);
  REQUIRE(r.ok());
  const ttap::ImportStats& s = (*r)->stats;
  CHECK(s.unknown_categories.size() <= ttap::ImportStats::kMaxUnknownCategories);
  uint64_t named = 0;
  for (const auto& [cat, n] : s.unknown_categories) named += n;
  CHECK(named + s.unknown_categories_other == 1000);  // every event counted once
  CHECK(s.unknown_categories_other > 0);
}

// TinyTrace: builds small Kineto traces in code for rule tests (Perfetto "diff test" style: a
// tiny inline trace, then assertions on what the rules say). Times are in microseconds.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "analysis/load/trace_loader.h"
#include "analysis/rules/rules.h"
#include "test_support.h"

namespace ttap_test {

class TinyTrace {
 public:
  // deviceProperties entry (id, name, compute capability).
  TinyTrace& Device(int id, const std::string& name, int major, int minor) {
    devices_.push_back("{\"id\": " + std::to_string(id) + ", \"name\": \"" + name +
                       "\", \"computeMajor\": " + std::to_string(major) +
                       ", \"computeMinor\": " + std::to_string(minor) + "}");
    return *this;
  }
  // ProfilerStep#n on the main CPU thread.
  TinyTrace& Step(int n, double ts, double dur) {
    return Cpu("ProfilerStep#" + std::to_string(n), ts, dur, "user_annotation");
  }
  // A CPU event (cpu_op by default) on thread |tid| of pid 100.
  TinyTrace& Cpu(const std::string& name, double ts, double dur, const std::string& cat = "cpu_op",
                 int tid = 1, const std::string& extra_args = "") {
    events_.push_back(Event(cat, name, "100", std::to_string(tid), ts, dur,
                            extra_args.empty() ? "" : extra_args));
    return *this;
  }
  // A python_function frame "file.py(line): function".
  TinyTrace& Python(const std::string& file, int line, const std::string& function, double ts,
                    double dur, int tid = 1) {
    return Cpu(file + "(" + std::to_string(line) + "): " + function, ts, dur, "python_function",
               tid);
  }
  // A runtime call without GPU work (cudaStreamSynchronize, cudaMalloc, ...).
  TinyTrace& Runtime(const std::string& name, double ts, double dur, int tid = 1) {
    return Cpu(name, ts, dur, "cuda_runtime", tid,
               "\"correlation\": " + std::to_string(next_corr_++));
  }
  // A launch (runtime call at ts..ts+dur) and the GPU activity it starts at gts..gts+gdur.
  // |gpu_cat|: kernel, gpu_memcpy or gpu_memset. |bytes| >= 0 adds args.bytes.
  TinyTrace& Launch(const std::string& gpu_name, double ts, double dur, double gts, double gdur,
                    const std::string& gpu_cat = "kernel", int stream = 7,
                    const std::string& runtime = "cudaLaunchKernel", long long bytes = -1,
                    int device = 0, int tid = 1) {
    int corr = next_corr_++;
    std::string c = "\"correlation\": " + std::to_string(corr);
    events_.push_back(Event("cuda_runtime", runtime, "100", std::to_string(tid), ts, dur, c));
    std::string gargs =
        c + ", \"stream\": " + std::to_string(stream) + ", \"device\": " + std::to_string(device);
    if (bytes >= 0) gargs += ", \"bytes\": " + std::to_string(bytes);
    events_.push_back(
        Event(gpu_cat, gpu_name, std::to_string(device), std::to_string(stream), gts, gdur, gargs));
    return *this;
  }
  TinyTrace& Kernel(const std::string& name, double ts, double dur, double gts, double gdur,
                    int stream = 7) {
    return Launch(name, ts, dur, gts, gdur, "kernel", stream);
  }
  // A kernel of a replayed graph (GraphLaunch).
  struct GraphKernel {
    std::string name;
    double gts = 0, gdur = 0;
    int stream = 7;
  };
  // A cudaGraphLaunch at ts..ts+dur and its replay: every kernel recorded against that one call
  // (one correlation id), as CUPTI records a graph's kernels.
  TinyTrace& GraphLaunch(double ts, double dur, const std::vector<GraphKernel>& kernels,
                         int tid = 1) {
    const std::string c = "\"correlation\": " + std::to_string(next_corr_++);
    events_.push_back(
        Event("cuda_runtime", "cudaGraphLaunch", "100", std::to_string(tid), ts, dur, c));
    for (const GraphKernel& k : kernels) {
      events_.push_back(Event("kernel", k.name, "0", std::to_string(k.stream), k.gts, k.gdur,
                              c + ", \"stream\": " + std::to_string(k.stream) + ", \"device\": 0"));
    }
    return *this;
  }
  TinyTrace& Raw(const std::string& event_json) {
    events_.push_back(event_json);
    return *this;
  }

  std::string Json() const {
    std::string s = "{\"schemaVersion\": 1, ";
    if (!devices_.empty()) {
      s += "\"deviceProperties\": [";
      for (size_t i = 0; i < devices_.size(); ++i) s += (i ? ", " : "") + devices_[i];
      s += "], ";
    }
    s += "\"traceEvents\": [\n";
    for (size_t i = 0; i < events_.size(); ++i) s += (i ? ",\n" : "") + events_[i];
    return s + "\n]}";
  }
  std::unique_ptr<ttap::Trace> Load(int windows = 20) const {
    ttap::LoadOptions o;
    o.threads = 1;
    o.window_count = windows;
    auto t = ttap::LoadTraceFromMemory(Json(), "tiny.json", o);
    INFO(Json());
    REQUIRE(t.ok());
    return std::move(t.value());
  }

 private:
  static std::string Num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.3f", v);
    return buf;
  }
  static std::string Event(const std::string& cat, const std::string& name, const std::string& pid,
                           const std::string& tid, double ts, double dur, const std::string& args) {
    std::string s = "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
                    "\", \"pid\": " + pid + ", \"tid\": " + tid + ", \"ts\": " + Num(ts) +
                    ", \"dur\": " + Num(dur);
    if (!args.empty()) s += ", \"args\": {" + args + "}";
    return s + "}";
  }
  std::vector<std::string> devices_;
  std::vector<std::string> events_;
  int next_corr_ = 1;
};

// One stream's clock for hand-built eager loops: each kernel starts |latency_us| after its launch
// call returns, or 1 us after the stream's previous kernel ends, whichever is later.
struct StreamClock {
  double free = 0;  // when the stream's last kernel ends
  // Adds the launch (on thread |tid|) and its kernel; returns the kernel's start.
  double Kernel(TinyTrace& t, const std::string& name, double launch_ts, double launch_us,
                double latency_us, double kernel_us, int tid = 1) {
    const double g = std::max(free + 1, launch_ts + launch_us + latency_us);
    t.Launch(name, launch_ts, launch_us, g, kernel_us, "kernel", 7, "cudaLaunchKernel", -1, 0, tid);
    free = g + kernel_us;
    return g;
  }
  // Ends step |n| (started at |start|) with a cudaDeviceSynchronize at |cpu| that waits for the
  // stream; returns where the next step starts.
  double SyncAndStep(TinyTrace& t, int n, double start, double cpu) const {
    t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, free - cpu + 3));
    const double end = std::max(cpu, free) + 5;
    t.Step(n, start, end - start);
    return end + 1;
  }
};

// Three steps of |ops| eager ops: |dispatch_us| of CPU work, then a |launch_us| launch of a
// |kernel_us| kernel that starts 3 us after the launch returns (or once the stream is free).
// |cold_first|: the first step's first launches load their modules lazily (40 ms each) and call
// cudaFuncGetAttributes first. |no_gpu|: the GPU activity is missing from the trace.
// |python_gap_us|: that much CPU time with no op and no launch before the middle op (Python
// logic); |frames|: a Python frame model.py(10): forward around each step's ops.
inline TinyTrace Eager(int ops, double dispatch_us, double launch_us, double kernel_us,
                       bool cold_first = false, bool no_gpu = false, double python_gap_us = 0,
                       bool frames = false, int steps = 3) {
  TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000, gpu_free = 0;
  for (int s = 0; s < steps; ++s) {
    const double start = cpu;
    cpu += 2;
    const double forward_start = cpu;
    for (int k = 0; k < ops; ++k) {
      if (k == ops / 2) cpu += python_gap_us;
      const bool cold = cold_first && s == 0 && k < 4;
      double launch = launch_us;
      if (cold) {
        t.Runtime("cudaFuncGetAttributes", cpu + 1, 30);
        cpu += 32;
        launch = 40000;
      }
      t.Cpu("aten::add", cpu, dispatch_us + launch + 2);
      const double l = cpu + dispatch_us;
      const double g = std::max(gpu_free + 1, l + launch + 3);
      if (no_gpu) {
        t.Runtime("cudaLaunchKernel", l, launch);
      } else {
        t.Kernel("vectorized_elementwise_kernel", l, launch, g, kernel_us);
      }
      gpu_free = g + kernel_us;
      cpu = l + launch + 2;
    }
    if (frames) t.Python("model.py", 10, "forward", forward_start, cpu - forward_start);
    t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu_free - cpu + 3));
    cpu = std::max(cpu, gpu_free) + 5;
    t.Step(s + 1, start, cpu - start);
    cpu += 1;
  }
  return t;
}

// A script profiled from its start without ProfilerStep: the first aten::mm creates cuBLAS's
// context (cudaFree 70 ms and 300 ms inside it), then |calls| calls of a small MLP follow. With
// |repeat|, each call runs the same three ops (mm, add, relu: 30 us of dispatch for a 3 us
// kernel); without, the calls run different ops once each (the rest of one forward pass).
inline TinyTrace ColdCallThenCalls(int calls, bool repeat) {
  TinyTrace t;
  t.Device(0, "NVIDIA GeForce RTX 3060 Ti", 8, 6);
  StreamClock gpu;
  t.Cpu("aten::mm", 1000, 370100);
  t.Runtime("cudaFree", 1010, 70000);
  t.Runtime("cudaFree", 71020, 300000);
  gpu.Kernel(t, "gemv2T_kernel_val", 371050, 5, 3, 3);
  double cpu = 371110;
  for (int c = 0; c < calls; ++c) {
    for (const char* op : {"aten::mm", "aten::add", "aten::relu"}) {
      const std::string name = repeat ? op : std::string(op) + "_" + std::to_string(c);
      t.Cpu(name, cpu, 38);
      gpu.Kernel(t, repeat ? std::string(op).substr(6) + "_kernel" : name + "_kernel", cpu + 30, 5,
                 3, 3);
      cpu += 40;
    }
  }
  t.Runtime("cudaDeviceSynchronize", cpu, std::max(1.0, gpu.free - cpu + 3));
  return t;
}

// One ProfilerStep around a model's construction and its training loop (with_stack): the user's
// model.py(5): __init__ builds a Linear whose torch/nn/init.py initialiser draws its weight with
// aten::uniform_ on the host (2.5 ms, the GPU idle), Module.to copies it to the device from
// pageable memory, then |calls| launch-bound calls of mm, add, relu (38 us of dispatch each for a
// 3 us kernel). |in_forward|: the module is made inside a forward instead (every call's work).
inline TinyTrace ModelBuiltThenLoop(int calls, bool in_forward = false) {
  TinyTrace t;
  t.Device(0, "NVIDIA H100", 9, 0);
  StreamClock gpu;
  double cpu = 100;
  if (in_forward) t.Python("model.py", 30, "forward", cpu - 5, 3010);
  t.Python("model.py", 5, "__init__", cpu, 2990);
  t.Python("torch/nn/modules/linear.py", 96, "__init__", cpu + 10, 2960);
  t.Python("torch/nn/init.py", 511, "kaiming_uniform_", cpu + 20, 2600);
  t.Cpu("aten::uniform_", cpu + 30, 2500);
  cpu += 3000;
  t.Python("torch/nn/modules/module.py", 1244, "to", cpu, 400);
  t.Cpu("aten::to", cpu + 10, 380);
  t.Launch("Memcpy HtoD (Pageable -> Device)", cpu + 20, 300, cpu + 300, 40, "gpu_memcpy", 7,
           "cudaMemcpyAsync", 2 << 20);
  gpu.free = cpu + 340;
  cpu += 420;
  for (int c = 0; c < calls; ++c) {
    for (const char* op : {"aten::mm", "aten::add", "aten::relu"}) {
      t.Cpu(op, cpu, 38);
      gpu.Kernel(t, std::string(op).substr(6) + "_kernel", cpu + 30, 5, 3, 3);
      cpu += 40;
    }
  }
  gpu.SyncAndStep(t, 2, 50, cpu);
  return t;
}

// Options for tests of one fix's arithmetic on a hand-written trace: the profiler's own cost per
// recorded op is not taken out (tests/analysis/causal/what_if_test.cpp tests that on its own).
inline ttap::RuleOptions ExactWhatIfs() {
  ttap::RuleOptions o;
  o.values["profiler_op_us"] = 0;
  o.values["profiler_frame_us"] = 0;
  return o;
}

// Runs the rules with default options and returns the findings with |code|.
inline std::vector<ttap::Finding> FindingsWithCode(const ttap::Trace& t, const std::string& code,
                                                   const ttap::RuleOptions& o = {}) {
  std::vector<ttap::Finding> out;
  for (auto& f : ttap::RunRules(t, o).findings) {
    if (f.code == code) out.push_back(f);
  }
  return out;
}

// The shared real traces whose file name starts with |prefix| (none without ../shared).
inline std::vector<std::string> RealTraces(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& p : ttap::ListTraceFiles(ttap_test::RealTracesDir())) {
    std::string file = p.substr(p.find_last_of('/') + 1);
    if (file.rfind(prefix, 0) == 0) out.push_back(p);
  }
  return out;
}

inline std::vector<ttap::Finding> RealFindings(const std::string& path) {
  auto t = ttap::LoadTrace(path);
  REQUIRE(t.ok());
  return ttap::RunRules(**t, {}).findings;
}

inline int CountCode(const std::vector<ttap::Finding>& fs, const std::string& code) {
  int n = 0;
  for (const auto& f : fs) n += f.code == code;
  return n;
}

}  // namespace ttap_test

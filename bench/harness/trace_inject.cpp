// Injectors (trace_inject.h): find the trace's main CPU thread, main GPU stream and steps, then
// splice in CpuBlocks (trace_edit.h) or change existing GPU work, one code at a time.
#include "bench/harness/trace_inject.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <random>
#include <set>

#include "analysis/base/string_util.h"

namespace ttap {

namespace {

bool Has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Where to inject: the main thread, its stream, and each step as the top-level ops on the main
// thread (indices stay valid across edits: events are only appended).
struct Site {
  EditableTrace* t = nullptr;
  uint32_t cpu = 0, gpu = 0;
  int32_t device = 0;
  std::vector<std::vector<size_t>> steps;  // top-level ops per step, in time order

  int64_t Start(size_t s) const { return t->events[steps[s].front()].ts; }
  int64_t End(size_t s) const {
    int64_t e = 0;
    for (size_t i : steps[s]) e = std::max(e, t->events[i].ts + t->events[i].dur);
    return e;
  }
  int64_t Length(size_t s) const { return std::max<int64_t>(End(s) - Start(s), 1000); }
  // The start of the top-level op nearest to |fraction| of the step.
  int64_t At(size_t s, double fraction) const {
    if (fraction <= 0) return Start(s);
    const int64_t want = Start(s) + static_cast<int64_t>(fraction * static_cast<double>(Length(s)));
    int64_t best = Start(s);
    for (size_t i : steps[s]) {
      if (std::llabs(t->events[i].ts - want) < std::llabs(best - want)) best = t->events[i].ts;
    }
    return best;
  }
};

bool FindSite(EditableTrace* t, Site* site, std::string* why) {
  site->t = t;
  std::map<uint32_t, int> launches, kernels, steps;
  std::set<uint32_t> autograd;  // threads that run autograd's backward engine
  for (const EditEvent& e : t->events) {
    if (IsLaunchKind(e.kind) && !t->tracks[e.track].gpu && Has(e.name, "aunch"))
      launches[e.track]++;
    if (e.kind == EventKind::kKernel) kernels[e.track]++;
    if (e.name.rfind("ProfilerStep#", 0) == 0) steps[e.track]++;
    if (e.name.rfind("autograd::engine::evaluate_function", 0) == 0) autograd.insert(e.track);
  }
  if (launches.empty() || kernels.empty()) {
    *why = "no kernel launches with GPU work";
    return false;
  }
  auto most = [](const std::map<uint32_t, int>& m) {
    return std::max_element(m.begin(), m.end(),
                            [](auto& a, auto& b) { return a.second < b.second; })
        ->first;
  };
  // The user's code runs on the main thread: the one with the step annotations, else the one
  // launching most that is not autograd's backward thread (it often launches more than the main
  // thread, but no user statement runs there).
  std::map<uint32_t, int> main_candidates;
  for (const auto& [track, n] : launches) {
    if (!autograd.count(track)) main_candidates[track] = n;
  }
  site->cpu = !steps.empty()             ? most(steps)
              : !main_candidates.empty() ? most(main_candidates)
                                         : most(launches);
  site->gpu = most(kernels);
  site->device = std::max(0, t->tracks[site->gpu].device);
  // New work queues behind the stream's work in launch order: work without a launch record has
  // no place in that order (a base whose GPU events mostly lack one, e.g. clock-skewed or
  // partial exports, would queue injected kernels far behind their launches).
  std::set<int64_t> launch_ids;
  for (const EditEvent& e : t->events) {
    if (IsLaunchKind(e.kind) && !t->tracks[e.track].gpu && e.correlation >= 0) {
      launch_ids.insert(e.correlation);
    }
  }
  int on_stream = 0, linked = 0;
  for (const EditEvent& e : t->events) {
    if (e.track != site->gpu || !IsGpuKind(e.kind)) continue;
    ++on_stream;
    linked += launch_ids.count(e.correlation) > 0 ? 1 : 0;
  }
  if (2 * linked < on_stream) {
    *why = "most GPU work has no launch record (" + std::to_string(linked) + " of " +
           std::to_string(on_stream) + ")";
    return false;
  }
  // Events of the main thread in time order, with their nesting among ops.
  std::vector<size_t> rows;
  for (size_t i = 0; i < t->events.size(); ++i) {
    if (t->events[i].track == site->cpu && !t->events[i].instant) rows.push_back(i);
  }
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    const EditEvent &x = t->events[a], &y = t->events[b];
    return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
  });
  auto is_step = [&](const EditEvent& e) { return e.name.rfind("ProfilerStep#", 0) == 0; };
  auto is_op = [&](const EditEvent& e) {
    return (e.kind == EventKind::kCpuOp || e.kind == EventKind::kUserAnnotation) && !is_step(e);
  };
  std::vector<size_t> top;
  std::vector<int64_t> open_ends;
  for (size_t i : rows) {
    const EditEvent& e = t->events[i];
    while (!open_ends.empty() && open_ends.back() <= e.ts) open_ends.pop_back();
    if (!is_op(e)) continue;
    if (open_ends.empty()) top.push_back(i);
    open_ends.push_back(e.ts + e.dur);
  }
  if (top.empty()) {  // no ops: the launches themselves
    for (size_t i : rows) {
      if (IsLaunchKind(t->events[i].kind)) top.push_back(i);
    }
  }
  if (top.size() < 3) {
    *why = "too few CPU ops on the main thread";
    return false;
  }
  std::vector<std::pair<int64_t, int64_t>> step_ranges;
  for (size_t i : rows) {
    if (is_step(t->events[i]))
      step_ranges.push_back({t->events[i].ts, t->events[i].ts + t->events[i].dur});
  }
  if (!step_ranges.empty()) {
    for (auto [a, b] : step_ranges) {
      std::vector<size_t> ops;
      for (size_t i : top) {
        if (t->events[i].ts >= a && t->events[i].ts < b) ops.push_back(i);
      }
      if (ops.size() >= 2) site->steps.push_back(ops);
    }
  }
  if (site->steps.empty()) {  // three pseudo-steps over the main thread's ops
    for (size_t k = 0; k < 3; ++k) {
      std::vector<size_t> ops(top.begin() + static_cast<long>(k * top.size() / 3),
                              top.begin() + static_cast<long>((k + 1) * top.size() / 3));
      if (ops.size() >= 1) site->steps.push_back(ops);
    }
  }
  return true;
}

// Records an inserted block's extent (CPU block and its GPU work) once all edits are done.
struct Pending {
  std::string code;
  size_t root;
  size_t gpu_first, gpu_count;
  bool to_gpu_resume;  // host sync: the interval ends where the GPU resumes
};

std::string KernelName(const std::string& functor, int arity) {
  return "void at::native::vectorized_elementwise_kernel<4, " + functor +
         ", at::detail::Array<char*, " + std::to_string(arity) + "> >(int, " + functor +
         ", at::detail::Array<char*, " + std::to_string(arity) + ">)";
}

class Injector;
// One injectable code: how the injector writes it (each step's block, or the whole trace at once),
// its variant of a shared form, whether it has a fixed form (the truth's "after" run), and the
// line of the generated script its frames name. Injectors() lists them.
struct InjectorSpec {
  const char* code;
  bool (Injector::*per_step)(size_t step, bool variant, std::string* why) = nullptr;
  bool (Injector::*whole_trace)(std::vector<InjectedInterval>* out, std::string* why) = nullptr;
  bool variant = false;
  bool fixed_form = false;
  int script_line = 0;
  bool needs_named_host_memory = false;  // not on ROCm, whose traces do not name pageable memory
};
const InjectorSpec* FindInjector(const std::string& code);
const std::vector<InjectorSpec>& Injectors();

class Injector {
 public:
  Injector(EditableTrace* t, const InjectionSpec& spec, const Site& site)
      : t_(t), spec_(spec), site_(site), rng_(spec.seed * 0x9E3779B97F4A7C15ull + 5) {
    sev_ = std::clamp(spec.severity, 0.0, 1.0);
  }

  bool Run(std::vector<InjectedInterval>* out, std::string* why) {
    const InjectorSpec* inj = FindInjector(spec_.code);
    const size_t n = site_.steps.size();
    bool ok = true;
    if (inj && inj->whole_trace) {
      ok = (this->*(inj->whole_trace))(out, why);
    } else {
      if (inj && inj->needs_named_host_memory && t_->amd) {
        *why = "ROCm traces do not name pageable host memory";
        return false;
      }
      for (size_t s = 0; s < n; ++s) {
        if (!Block(s, why)) return false;
      }
      ReflowGpu(t_);
      Finish(out);
    }
    return ok;
  }

 private:
  friend const std::vector<InjectorSpec>& Injectors();
  double U(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng_); }
  int64_t Us(double us) { return static_cast<int64_t>(std::llround(us * 1000.0)); }
  std::string LaunchName() const { return t_->amd ? "hipLaunchKernel" : "cudaLaunchKernel"; }
  std::string MemcpyName() const { return t_->amd ? "hipMemcpyAsync" : "cudaMemcpyAsync"; }
  std::string SyncName() const {
    return t_->amd ? "hipStreamSynchronize" : "cudaStreamSynchronize";
  }
  int Line() const { return InjectedScriptLine(spec_.code); }
  void UserFrame(CpuBlock* b) { b->Py(spec_.script, Line(), "train"); }
  // Collectives run on a stream of their own, non-blocking as NCCL's and RCCL's are.
  uint32_t CommTrack() {
    const uint32_t track = t_->GpuTrack(site_.device, 9000 + site_.device);
    auto& nb = t_->nonblocking_tracks;
    if (std::find(nb.begin(), nb.end(), track) == nb.end()) nb.push_back(track);
    return track;
  }

  void Keep(const CpuBlock& b, bool to_gpu_resume = false) {
    pending_.push_back({spec_.code, b.root_index(), b.gpu_index(0), b.gpu_count(), to_gpu_resume});
  }

  void Copy(CpuBlock* b, const std::string& kind, int64_t bytes, double gbps, double call_us) {
    b->Op("aten::to");
    b->Op("aten::_to_copy");
    b->Op("aten::copy_");
    const int64_t ns =
        std::max<int64_t>(1200, static_cast<int64_t>(static_cast<double>(bytes) / gbps));
    b->Launch(MemcpyName(), Us(call_us), EventKind::kMemcpy, kind, ns, site_.gpu, bytes);
    b->End();
    b->End();
    b->End();
  }

  struct Span {
    double lo, hi;  // microseconds, drawn uniformly
  };
  // A short CPU gap, the op chain |ops| and the one elementwise kernel it launches: the shape of
  // per-parameter and per-term work (TTA005, TTA006, TTA007).
  // One eager op with values drawn beforehand (both forms of an injection draw alike): |gap_us|
  // of CPU, then |op| launching |functor|'s kernel.
  void DrawnOp(CpuBlock* b, const char* op, const std::string& functor, int arity, double gap_us,
               double call_us, double gpu_us) {
    b->Cpu(Us(gap_us));
    b->Op(op);
    b->Launch(LaunchName(), Us(call_us), EventKind::kKernel, KernelName(functor, arity), Us(gpu_us),
              site_.gpu);
    b->End();
  }

  void ElementwiseOp(CpuBlock* b, std::initializer_list<const char*> ops,
                     const std::string& functor, int arity, Span gap, Span call, Span gpu) {
    b->Cpu(Us(U(gap.lo, gap.hi)));
    for (const char* op : ops) b->Op(op);
    b->Launch(LaunchName(), Us(U(call.lo, call.hi)), EventKind::kKernel, KernelName(functor, arity),
              Us(U(gpu.lo, gpu.hi)), site_.gpu);
    for (size_t i = 0; i < ops.size(); ++i) b->End();
  }

  // One step's injected block, by the code's injector (Injectors()).
  bool Block(size_t s, std::string* why) {
    const InjectorSpec* inj = FindInjector(spec_.code);
    if (!inj || !inj->per_step) {
      *why = "no injector for " + spec_.code;
      return false;
    }
    return (this->*(inj->per_step))(s, inj->variant, why);
  }

  // TTA001: the batch loaded on the main thread (transforms under the DataLoader).
  bool InjectDataLoaderStall(size_t s, bool /*variant*/, std::string* /*why*/) {
    const double L = static_cast<double>(site_.Length(s)) / 1000.0;  // us
    CpuBlock b(t_, site_.cpu, site_.At(s, 0));
    UserFrame(&b);
    b.Py("torch/utils/data/dataloader.py", 631, "__next__");
    b.Op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", EventKind::kUserAnnotation);
    b.Py("torch/utils/data/dataloader.py", 675, "_next_data");
    b.Py("torch/utils/data/_utils/fetch.py", 51, "fetch");
    const double total = L * (0.12 + 1.2 * sev_);
    const int items = 8 + static_cast<int>(U(0, 24));
    for (int i = 0; i < items; ++i) {
      b.Py("torchvision/transforms/transforms.py", 95, "__call__");
      b.Cpu(Us(total * 0.9 / items * U(0.7, 1.3)));
      b.End();
    }
    b.End();
    b.Op("aten::stack");
    b.Cpu(Us(total * 0.05));
    b.Commit(false);
    Keep(b);
    return true;
  }

  // TTA002: a value read on the host (.item()), which waits for the GPU.
  bool InjectHostSync(size_t s, bool /*variant*/, std::string* /*why*/) {
    const double L = static_cast<double>(site_.Length(s)) / 1000.0;  // us
    const bool amd = t_->amd;
    CpuBlock b(t_, site_.cpu, site_.At(s, U(0.3, 0.6)));
    UserFrame(&b);
    b.Op("aten::item");
    b.Op("aten::_local_scalar_dense");
    b.Launch(MemcpyName(), Us(U(5, 9)), EventKind::kMemcpy,
             amd ? "Memcpy DtoH (Device -> Host)" : "Memcpy DtoH (Device -> Pageable)", Us(1.5),
             site_.gpu, 4);
    b.Runtime(SyncName(), Us(3));
    b.End();
    b.End();
    b.Py("tqdm/std.py", 1196, "update");
    b.Cpu(Us(L * (0.01 + 0.2 * sev_)));
    b.Commit(true);  // the sync's wait depends on the GPU backlog: settle it now
    Keep(b, true);
    return true;
  }

  // TTA003: copies from pageable host memory (a pinned, non-blocking copy when fixed).
  bool InjectPageableCopies(size_t s, bool /*variant*/, std::string* /*why*/) {
    CpuBlock b(t_, site_.cpu, site_.At(s, 0));
    UserFrame(&b);
    const int64_t bytes = static_cast<int64_t>(U(2, 24) * (0.3 + 1.5 * sev_) * 1048576.0);
    const double gbps = U(5, 11);
    const double blocking_extra_us = U(8, 20);
    // The fixed form (pinned memory, non_blocking=True): the same bytes at the pinned rate
    // (1.6-2.4x the pageable one, which stages through a bounce buffer), and a call that
    // returns at once.
    const double pinned_gbps = gbps * U(1.6, 2.4);
    const double async_call_us = U(5, 10);
    if (spec_.fixed) {
      Copy(&b, "Memcpy HtoD (Pinned -> Device)", bytes, pinned_gbps, async_call_us);
    } else {
      Copy(&b, "Memcpy HtoD (Pageable -> Device)", bytes, gbps,
           static_cast<double>(bytes) / gbps / 1000.0 + blocking_extra_us);
    }
    b.Commit(false);
    Keep(b);
    return true;
  }

  // TTA004: many small host-to-device copies (one batched copy when fixed).
  bool InjectSmallCopies(size_t s, bool /*variant*/, std::string* /*why*/) {
    const bool amd = t_->amd;
    CpuBlock b(t_, site_.cpu, site_.At(s, 0));
    UserFrame(&b);
    const int copies = 24 + static_cast<int>(400 * sev_ * U(0.7, 1.3));
    // Each tensor: host work that makes it, then its copy. Drawn alike for both forms: the
    // fixed form (the tensors batched, or made on the device) keeps the host work and sends
    // all the bytes in one copy.
    std::vector<double> make_us(copies), gbps(copies), call_us(copies);
    std::vector<int64_t> bytes(copies);
    for (int i = 0; i < copies; ++i) {
      make_us[i] = U(2, 6);
      bytes[i] = static_cast<int64_t>(U(1, 64) * 1024);
      gbps[i] = U(3, 8);
      call_us[i] = U(4, 8);
    }
    const std::string kind =
        amd ? "Memcpy HtoD (Host -> Device)" : "Memcpy HtoD (Pinned -> Device)";
    int64_t all_bytes = 0;
    double payload_ns = 0;  // each tensor's bytes at its own rate
    for (int i = 0; i < copies; ++i) {
      b.Cpu(Us(make_us[i]));
      all_bytes += bytes[i];
      payload_ns += static_cast<double>(bytes[i]) / gbps[i];
      if (!spec_.fixed) Copy(&b, kind, bytes[i], gbps[i], call_us[i]);
    }
    if (spec_.fixed) {
      Copy(&b, kind, all_bytes, static_cast<double>(all_bytes) / std::max(1.0, payload_ns),
           call_us[0]);
    }
    b.Commit(false);
    Keep(b);
    return true;
  }

  // TTA005 (variant: zero_grad) and TTA006 (the optimizer step): one kernel per parameter.
  bool InjectPerParameterOps(size_t s, bool variant, std::string* /*why*/) {
    const bool zero = variant;
    CpuBlock b(t_, site_.cpu, zero ? site_.At(s, U(0, 0.1)) : site_.End(s));
    UserFrame(&b);
    if (zero) {
      b.Py("torch/optim/optimizer.py", 803, "zero_grad");
      b.Op("Optimizer.zero_grad#SGD.zero_grad", EventKind::kUserAnnotation);
    } else {
      b.Py("torch/optim/optimizer.py", 485, "wrapper");
      b.Op("Optimizer.step#SGD.step", EventKind::kUserAnnotation);
      if (spec_.fixed) {
        b.Py("torch/optim/sgd.py", 352, "_multi_tensor_sgd");
      } else {
        b.Py("torch/optim/sgd.py", 286, "_single_tensor_sgd");
      }
    }
    const int params = 30 + static_cast<int>(300 * sev_ * U(0.7, 1.3));
    if (zero) {
      for (int p = 0; p < params; ++p) {
        ElementwiseOp(&b, {"aten::zero_", "aten::fill_"}, "at::native::FillFunctor<float>", 1,
                      {2, 5}, {3.5, 7}, {1.2, 2.8});
      }
    } else {
      // Drawn alike for both forms: per parameter and update (mul_, add_, add_) its CPU gap,
      // launch call and kernel time; and the GPU's fixed cost of a kernel. The fixed form
      // (foreach=True: `_multi_tensor_sgd`) makes each update one _foreach_ op that launches a
      // multi-tensor kernel per chunk of kForeachChunk parameters, which does the same work
      // as the chunk's kernels less all but one of their fixed costs.
      constexpr int kUpdates = 3, kForeachChunk = 64;
      const char* kOps[kUpdates] = {"aten::mul_", "aten::add_", "aten::add_"};
      const double fixed_gpu_us = U(0.9, 1.4);
      std::vector<double> gap_us(params * kUpdates), call_us(params * kUpdates),
          gpu_us(params * kUpdates);
      for (size_t i = 0; i < gap_us.size(); ++i) {
        gap_us[i] = U(2, 5);
        call_us[i] = U(3.5, 7);
        gpu_us[i] = U(1.5, 4);
      }
      auto functor = [&](int u) {
        return u == 0 ? std::string("at::native::MulFunctor<float>")
                      : std::string("at::native::CUDAFunctor_add<float>");
      };
      if (spec_.fixed) {
        for (int u = 0; u < kUpdates; ++u) {
          b.Cpu(Us(U(8, 15)));  // grouping the tensors by device and dtype
          b.Op(u == 0 ? "aten::_foreach_mul_" : "aten::_foreach_add_");
          for (int first = 0; first < params; first += kForeachChunk) {
            const int last = std::min(params, first + kForeachChunk);
            double kernel_us = fixed_gpu_us;
            for (int p = first; p < last; ++p) {
              kernel_us += std::max(0.1, gpu_us[p * kUpdates + u] - fixed_gpu_us);
            }
            b.Cpu(Us(0.15 * (last - first)));  // filling the chunk's tensor list
            b.Launch(
                LaunchName(), Us(call_us[first * kUpdates + u]), EventKind::kKernel,
                "void at::native::multi_tensor_apply_kernel<at::native::TensorListMetadata<2>, "
                "at::native::BinaryOpListAlphaFunctor<float, 2, 2, 0>>(" +
                    functor(u) + ")",
                Us(kernel_us), site_.gpu);
          }
          b.End();
        }
      } else {
        for (int p = 0; p < params; ++p) {
          for (int u = 0; u < kUpdates; ++u) {
            const size_t i = static_cast<size_t>(p * kUpdates + u);
            DrawnOp(&b, kOps[u], functor(u), 2, gap_us[i], call_us[i], gpu_us[i]);
          }
        }
      }
    }
    b.Commit(false);
    Keep(b);
    return true;
  }

  // TTA007: bursts of kernels shorter than their launches.
  bool InjectLaunchBursts(size_t s, bool /*variant*/, std::string* /*why*/) {
    CpuBlock b(t_, site_.cpu, site_.At(s, U(0.3, 0.7)));
    UserFrame(&b);
    const int ops = 60 + static_cast<int>(700 * sev_ * U(0.7, 1.3));
    // Drawn alike for both forms. The fixed form (the region captured in a CUDA graph) runs
    // the same kernels, each enqueued by the graph's replay in a fraction of a microsecond,
    // with no op dispatch on the CPU.
    std::vector<double> gap_us(ops), call_us(ops), gpu_us(ops);
    for (int i = 0; i < ops; ++i) {
      gap_us[i] = U(2, 6);
      call_us[i] = U(4, 8);
      gpu_us[i] = U(1.2, 2.6);
    }
    for (int i = 0; i < ops; ++i) {
      const bool mul = i % 2 == 0;
      const std::string functor =
          mul ? "at::native::MulFunctor<float>" : "at::native::CUDAFunctor_add<float>";
      if (spec_.fixed) {
        b.Cpu(Us(0.1));
        b.Launch(LaunchName(), Us(0.3), EventKind::kKernel, KernelName(functor, 3), Us(gpu_us[i]),
                 site_.gpu);
        continue;
      }
      DrawnOp(&b, mul ? "aten::mul" : "aten::add", functor, 3, gap_us[i], call_us[i], gpu_us[i]);
    }
    b.Commit(false);
    Keep(b);
    return true;
  }

  // TTA008: host work that launches nothing while the GPU idles.
  bool InjectIdleCpuWork(size_t s, bool /*variant*/, std::string* /*why*/) {
    const double L = static_cast<double>(site_.Length(s)) / 1000.0;  // us
    CpuBlock b(t_, site_.cpu, site_.At(s, U(0.3, 0.7)));
    UserFrame(&b);
    b.Py("utils/metrics.py", 88, "log_histograms");
    const double total = L * (0.1 + 0.9 * sev_);
    const int parts = 4 + static_cast<int>(U(0, 8));
    for (int i = 0; i < parts; ++i) {
      b.Py("utils/metrics.py", 41, "histogram");
      b.Op("aten::histc");
      b.Cpu(Us(total / parts * U(0.7, 1.3)));
      b.End();
      b.End();
    }
    b.Commit(false);
    Keep(b);
    return true;
  }

  // TTA011 (one collective, overlapped when fixed) and TTA012 (variant: one per
  // parameter, bucketed when fixed).
  bool InjectCollectives(size_t s, bool variant, std::string* /*why*/) {
    const double L = static_cast<double>(site_.Length(s)) / 1000.0;  // us
    const bool amd = t_->amd;
    const bool per_param = variant;
    const int64_t block_start = site_.End(s);
    CpuBlock b(t_, site_.cpu, block_start);
    UserFrame(&b);
    const int calls =
        per_param ? 40 + static_cast<int>(240 * sev_ * U(0.7, 1.3)) : 1 + static_cast<int>(U(0, 2));
    // Each call: its launch, and on the GPU a fixed cost (latency, a small message's protocol)
    // plus its payload's transfer. Drawn alike for both forms, so the fixed form differs only
    // in how the calls are grouped: DDP's buckets carry kCallsPerBucket gradients per call.
    std::vector<double> launch_us(calls), fixed_us(calls), payload_us(calls);
    for (int k = 0; k < calls; ++k) {
      launch_us[k] = U(5, 9);
      if (per_param) {
        fixed_us[k] = U(6, 12);
        payload_us[k] = U(4, 18);
      } else {
        fixed_us[k] = 0;
        payload_us[k] = L * (0.1 + 0.6 * sev_) / calls;
      }
    }
    constexpr int kCallsPerBucket = 32;
    const int group = per_param && spec_.fixed ? kCallsPerBucket : 1;
    const uint32_t comm = CommTrack();
    // The collective waits for the gradients: the compute work launched so far.
    size_t last_compute = SIZE_MAX;
    int64_t last_ts = INT64_MIN;
    for (size_t i = 0; i < t_->events.size(); ++i) {
      const EditEvent& e = t_->events[i];
      if (e.track == site_.gpu && IsGpuKind(e.kind) && e.ts < b.now() && e.ts > last_ts) {
        last_ts = e.ts;
        last_compute = i;
      }
    }
    // The fixed form of TTA011: the collectives issued as backward produces the gradients
    // (DDP's buckets): launched when the step's backward begins, on their own stream after its
    // first GPU work, so they run beside backward; the step still waits for them at the end.
    const bool overlapped = !per_param && spec_.fixed;
    int64_t launch_at = block_start;
    size_t gradients_from = SIZE_MAX;
    if (overlapped) {
      int64_t backward = INT64_MAX;
      for (const EditEvent& e : t_->events) {
        if (e.ts >= site_.Start(s) && e.ts < block_start && e.ts < backward &&
            !t_->tracks[e.track].gpu &&
            (e.name.rfind("autograd::engine::evaluate_function", 0) == 0 ||
             Has(e.name, "Backward"))) {
          backward = e.ts;
        }
      }
      if (backward == INT64_MAX) backward = site_.Start(s);
      // The first GPU work launched once backward began.
      int64_t first_launch = INT64_MAX, correlation = -1;
      for (const EditEvent& e : t_->events) {
        if (IsLaunchKind(e.kind) && !t_->tracks[e.track].gpu && e.correlation >= 0 &&
            e.ts >= backward && e.ts < block_start && e.ts < first_launch) {
          first_launch = e.ts;
          correlation = e.correlation;
        }
      }
      for (size_t i = 0; i < t_->events.size() && correlation >= 0; ++i) {
        const EditEvent& e = t_->events[i];
        if (t_->tracks[e.track].gpu && IsGpuKind(e.kind) && e.correlation == correlation) {
          gradients_from = i;
          break;
        }
      }
      launch_at = backward;
    }
    CpuBlock early(t_, site_.cpu, launch_at);
    CpuBlock* calls_block = overlapped ? &early : &b;
    std::vector<size_t> locals;
    for (int first = 0; first < calls; first += group) {
      const int last = std::min(calls, first + group);
      double us = fixed_us[first];
      for (int k = first; k < last; ++k) us += payload_us[k];
      calls_block->Py("torch/distributed/distributed_c10d.py", 2501, "all_reduce");
      calls_block->Op("record_param_comms");
      calls_block->Op("nccl:all_reduce");
      locals.push_back(
          calls_block->Launch(LaunchName(), Us(launch_us[first]), EventKind::kKernel,
                              amd ? "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"
                                  : "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, "
                                    "unsigned long, ncclWork*)",
                              Us(us), comm));
      calls_block->End();
      calls_block->End();
      calls_block->End();
    }
    size_t last_collective = SIZE_MAX;
    if (overlapped) {
      const auto [a, e] = early.Commit(false);
      last_collective = early.gpu_index(locals.back());
      if (gradients_from != SIZE_MAX) t_->barriers.push_back({comm, a, gradients_from});
      // The step's wait, where the injected form has it (later by the inserted launches).
      CpuBlock wait(t_, site_.cpu, block_start + (e - a));
      UserFrame(&wait);
      wait.Op("aten::wait");
      wait.Runtime(t_->amd ? "hipStreamWaitEvent" : "cudaStreamWaitEvent", Us(3));
      wait.End();
      const int64_t wait_at = wait.now() - Us(3);
      wait.Commit(false);
      t_->barriers.push_back({site_.gpu, wait_at, last_collective});
      return true;
    }
    b.Op("aten::wait");
    b.Runtime(t_->amd ? "hipStreamWaitEvent" : "cudaStreamWaitEvent", Us(3));
    b.End();
    const int64_t wait_at = b.now() - Us(3);
    b.Commit(false);
    if (last_compute != SIZE_MAX) t_->barriers.push_back({comm, block_start, last_compute});
    t_->barriers.push_back({site_.gpu, wait_at, b.gpu_index(locals.back())});
    Keep(b);
    return true;
  }

  // TTA013: cudaMalloc/cudaFree in the step (an empty_cache()).
  bool InjectAllocatorCalls(size_t s, bool /*variant*/, std::string* /*why*/) {
    const bool amd = t_->amd;
    CpuBlock b(t_, site_.cpu, site_.At(s, U(0.2, 0.8)));
    UserFrame(&b);
    b.Py("torch/cuda/memory.py", 192, "empty_cache");
    const int n = 4 + static_cast<int>(30 * sev_ * U(0.7, 1.3));
    for (int i = 0; i < n; ++i) b.Runtime(amd ? "hipFree" : "cudaFree", Us(U(60, 400)));
    b.End();
    for (int i = 0; i < n; ++i) {
      b.Op("aten::empty");
      b.Runtime(amd ? "hipMalloc" : "cudaMalloc", Us(U(40, 300)));
      b.End();
    }
    b.Commit(false);
    Keep(b);
    return true;
  }

  // TTA014: a tensor copied to the host and back.
  bool InjectRoundTrips(size_t s, bool /*variant*/, std::string* /*why*/) {
    const bool amd = t_->amd;
    CpuBlock b(t_, site_.cpu, site_.At(s, U(0.3, 0.7)));
    UserFrame(&b);
    const int64_t bytes = static_cast<int64_t>(U(0.5, 8) * (0.3 + 1.5 * sev_) * 1048576.0);
    const int rounds = 1 + static_cast<int>(U(0, 2.99));
    for (int r = 0; r < rounds; ++r) {
      Copy(&b, amd ? "Memcpy DtoH (Device -> Host)" : "Memcpy DtoH (Device -> Pinned)", bytes,
           U(10, 20), U(6, 10));
      b.Runtime(SyncName(), Us(3));
      b.Py("numpy/core/fromnumeric.py", 2313, "clip");
      b.Cpu(Us(U(30, 300)));
      b.End();
      Copy(&b, amd ? "Memcpy HtoD (Host -> Device)" : "Memcpy HtoD (Pinned -> Device)", bytes,
           U(10, 20), U(6, 10));
    }
    b.Commit(true);
    Keep(b);
    return true;
  }

  void Finish(std::vector<InjectedInterval>* out) {
    for (const Pending& p : pending_) {
      const EditEvent& root = t_->events[p.root];
      int64_t a = root.ts, b = root.ts + root.dur;
      for (size_t k = 0; k < p.gpu_count; ++k) {
        const EditEvent& g = t_->events[p.gpu_first + k];
        b = std::max(b, g.ts + g.dur);
      }
      if (p.to_gpu_resume) {  // first GPU work after the CPU block
        int64_t resume = INT64_MAX;
        for (const EditEvent& e : t_->events) {
          if (IsGpuKind(e.kind) && e.ts >= root.ts + root.dur) resume = std::min(resume, e.ts);
        }
        if (resume != INT64_MAX) b = std::max(b, resume);
      }
      out->push_back({p.code, a, b, spec_.script, Line()});
    }
  }

  // Per step: the extent of the GPU events |rows| launched in it.
  void PerStepIntervals(const std::vector<size_t>& rows, std::vector<InjectedInterval>* out) {
    std::map<int64_t, size_t> launch;
    for (size_t i = 0; i < t_->events.size(); ++i) {
      const EditEvent& e = t_->events[i];
      if (IsLaunchKind(e.kind) && e.correlation >= 0 && !t_->tracks[e.track].gpu)
        launch[e.correlation] = i;
    }
    std::vector<std::pair<int64_t, int64_t>> ext(site_.steps.size(), {INT64_MAX, INT64_MIN});
    for (size_t r : rows) {
      const EditEvent& g = t_->events[r];
      auto it = launch.find(g.correlation);
      const int64_t lts = it == launch.end() ? g.ts : t_->events[it->second].ts;
      for (size_t s = 0; s < site_.steps.size(); ++s) {
        if (lts >= site_.Start(s) && lts < site_.End(s)) {
          ext[s].first = std::min(ext[s].first, g.ts);
          ext[s].second = std::max(ext[s].second, g.ts + g.dur);
          break;
        }
      }
    }
    for (auto [a, b] : ext) {
      if (a < b) out->push_back({spec_.code, a, b, "", 0});
    }
  }

  static bool IsMatrix(const std::string& n) {
    return Has(n, "gemm") || Has(n, "xmma") || Has(n, "cudnn") || Has(n, "conv") ||
           Has(n, "cutlass");
  }

  // How much longer a tensor-core matrix kernel of |ns| runs as an fp32 SIMT one. On the
  // datacenter parts (compute capability 7.0, 8.0, 9.0) the curve is the one measured on an
  // H200 (bench/record/calib.json: TF32 and fp32 times of GEMMs from 256^3 to 8192^3),
  // interpolated by the TF32 time in log space; other parts keep a 1.4-3.6x stretch.
  double Fp32Slowdown(int64_t ns, int major) {
    if (major != 7 && major != 8 && major != 9) return 1.4 + 2.2 * sev_;
    static const double kMeasured[][2] = {// (TF32 us, fp32 us)
                                          {19.0, 30.5},
                                          {27.3, 56.3},
                                          {48.9, 341.0},
                                          {340.0, 2674.0},
                                          {2667.0, 21436.0}};
    const double us = std::max(1.0, ns / 1000.0);
    const size_t n = sizeof(kMeasured) / sizeof(kMeasured[0]);
    if (us <= kMeasured[0][0]) return kMeasured[0][1] / kMeasured[0][0];
    if (us >= kMeasured[n - 1][0]) return kMeasured[n - 1][1] / kMeasured[n - 1][0];
    for (size_t k = 0; k + 1 < n; ++k) {
      if (us > kMeasured[k + 1][0]) continue;
      const double a = kMeasured[k][1] / kMeasured[k][0],
                   b = kMeasured[k + 1][1] / kMeasured[k + 1][0];
      const double x =
          std::log(us / kMeasured[k][0]) / std::log(kMeasured[k + 1][0] / kMeasured[k][0]);
      return a + (b - a) * x;
    }
    return 1.0;
  }

  bool StretchMatrixKernels(std::vector<InjectedInterval>* out, std::string* why) {
    if (t_->amd) {
      *why = "fp32 SIMT kernel names are NVIDIA's";
      return false;
    }
    int major = 8;
    for (const DeviceInfo& d : t_->devices) {
      if (d.id == site_.device && d.compute_major > 0) major = d.compute_major;
    }
    static const char* const kTc[] = {"h884",     "h1688",    "h16816",    "s1688",  "s16816",
                                      "hmma",     "gmma",     "bf16",      "f16",    "half",
                                      "tensorop", "1688gemm", "16816gemm", "884gemm"};
    std::vector<size_t> rows;
    for (size_t i = 0; i < t_->events.size(); ++i) {
      const EditEvent& e = t_->events[i];
      if (e.kind != EventKind::kKernel) continue;
      const std::string n = Lower(e.name);
      if (!IsMatrix(n)) continue;
      bool tc = false;
      for (const char* m : kTc) tc = tc || Has(n, m);
      if (tc) rows.push_back(i);
    }
    if (rows.empty()) {
      *why = "no tensor-core matrix kernels to turn into fp32 ones";
      return false;
    }
    const double share = 0.3 + 0.7 * sev_;
    std::vector<size_t> changed;
    for (size_t i : rows) {
      if (U(0, 1) > share) continue;
      EditEvent& e = t_->events[i];
      const bool conv = Has(Lower(e.name), "conv") || Has(Lower(e.name), "cudnn") ||
                        Has(Lower(e.name), "fprop") || Has(Lower(e.name), "grad");
      const std::string tile = U(0, 1) < 0.5 ? "128x64" : "128x128";
      if (major >= 9) {
        e.name = std::string("sm90_xmma_") + (conv ? "fprop_implicit_gemm" : "gemm") +
                 "_f32f32_f32f32_f32_nn_n_tilesize" + tile +
                 "x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas";
      } else if (major == 8) {
        e.name = conv ? "ampere_scudnn_" + tile + "_relu_interior_nn_v1"
                      : "ampere_sgemm_" + tile + "_nn";
      } else {
        e.name =
            conv ? "volta_scudnn_" + tile + "_relu_interior_nn_v1" : "volta_sgemm_" + tile + "_nn";
      }
      e.dur = static_cast<int64_t>(static_cast<double>(e.dur) * Fp32Slowdown(e.dur, major) *
                                   U(0.9, 1.1));
      changed.push_back(i);
    }
    if (changed.empty()) changed.push_back(rows.front());
    ReflowGpu(t_);
    PerStepIntervals(changed, out);
    return !out->empty() || (*why = "no step launched the changed kernels", false);
  }

  bool LayoutConversions(std::vector<InjectedInterval>* out, std::string* why) {
    if (t_->amd) {
      *why = "the cuDNN layout kernels are NVIDIA's";
      return false;
    }
    std::map<int64_t, size_t> gpu_by_corr;
    for (size_t i = 0; i < t_->events.size(); ++i) {
      const EditEvent& e = t_->events[i];
      if (e.kind == EventKind::kKernel && e.correlation >= 0) gpu_by_corr[e.correlation] = i;
    }
    std::vector<std::pair<size_t, size_t>> convs;  // (launch row, kernel row)
    for (size_t i = 0; i < t_->events.size(); ++i) {
      const EditEvent& e = t_->events[i];
      if (e.track != site_.cpu || !IsLaunchKind(e.kind) || e.correlation < 0) continue;
      auto it = gpu_by_corr.find(e.correlation);
      if (it == gpu_by_corr.end()) continue;
      const std::string n = Lower(t_->events[it->second].name);
      if ((Has(n, "conv") || Has(n, "fprop") || Has(n, "implicit_gemm") || Has(n, "scudnn") ||
           Has(n, "h884cudnn")) &&
          !Has(n, "nchwtonhwc")) {
        convs.push_back({i, it->second});
      }
    }
    if (convs.empty()) {
      *why = "no convolutions";
      return false;
    }
    const double share = 0.3 + 0.7 * sev_;
    std::vector<size_t> added;
    // Later launches first, so earlier launch rows keep their place while blocks go in.
    std::sort(convs.begin(), convs.end(),
              [&](auto& a, auto& b) { return t_->events[a.first].ts > t_->events[b.first].ts; });
    for (auto [launch_row, kernel_row] : convs) {
      if (U(0, 1) > share) continue;
      const int64_t conv_ns = t_->events[kernel_row].dur;
      const int64_t launch_ts = t_->events[launch_row].ts;
      const int64_t launch_end = launch_ts + t_->events[launch_row].dur;
      {  // after the convolution: back to NCHW
        CpuBlock b(t_, site_.cpu, launch_end);
        b.Launch(LaunchName(), Us(U(3.5, 6)), EventKind::kKernel,
                 "void cudnn::ops::nhwcToNchwKernel<__half, __half, float, true, false, "
                 "(cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, __half const*, "
                 "__half*)",
                 std::max<int64_t>(
                     2000, static_cast<int64_t>(static_cast<double>(conv_ns) * U(0.1, 0.4))),
                 site_.gpu);
        b.Commit(false);
        added.push_back(b.gpu_index(0));
      }
      {  // before it: to NHWC
        CpuBlock b(t_, site_.cpu, launch_ts);
        b.Launch(LaunchName(), Us(U(3.5, 6)), EventKind::kKernel,
                 "void cudnn::ops::nchwToNhwcKernel<__half, __half, float, false, true, "
                 "(cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, __half const*, "
                 "__half*)",
                 std::max<int64_t>(
                     2000, static_cast<int64_t>(static_cast<double>(conv_ns) * U(0.1, 0.4))),
                 site_.gpu);
        b.Commit(false);
        added.push_back(b.gpu_index(0));
      }
    }
    if (added.empty()) {
      *why = "no convolution chosen";
      return false;
    }
    ReflowGpu(t_);
    PerStepIntervals(added, out);
    return true;
  }

  EditableTrace* t_;
  InjectionSpec spec_;
  Site site_;
  std::mt19937_64 rng_;
  double sev_ = 0.5;
  std::vector<Pending> pending_;
};

// Every injectable code, one line each (the catalogue's TTA001..TTA014, in code order).
const std::vector<InjectorSpec>& Injectors() {
  using I = Injector;
  static const std::vector<InjectorSpec> k = {
      {"TTA001", &I::InjectDataLoaderStall, nullptr, false, false, 21},
      {"TTA002", &I::InjectHostSync, nullptr, false, false, 30},
      {"TTA003", &I::InjectPageableCopies, nullptr, false, true, 22, true},
      {"TTA004", &I::InjectSmallCopies, nullptr, false, true, 23},
      {"TTA005", &I::InjectPerParameterOps, nullptr, true, false, 24},
      {"TTA006", &I::InjectPerParameterOps, nullptr, false, true, 33},
      {"TTA007", &I::InjectLaunchBursts, nullptr, false, true, 27},
      {"TTA008", &I::InjectIdleCpuWork, nullptr, false, false, 31},
      {"TTA009", nullptr, &I::StretchMatrixKernels, false, false, 0},
      {"TTA010", nullptr, &I::LayoutConversions, false, false, 0},
      {"TTA011", &I::InjectCollectives, nullptr, false, true, 32},
      {"TTA012", &I::InjectCollectives, nullptr, true, true, 32},
      {"TTA013", &I::InjectAllocatorCalls, nullptr, false, false, 28},
      {"TTA014", &I::InjectRoundTrips, nullptr, false, false, 29},
  };
  return k;
}

const InjectorSpec* FindInjector(const std::string& code) {
  for (const InjectorSpec& inj : Injectors()) {
    if (code == inj.code) return &inj;
  }
  return nullptr;
}

}  // namespace

bool HasFixedForm(const std::string& code) {
  const InjectorSpec* inj = FindInjector(code);
  return inj && inj->fixed_form;
}

const std::vector<std::string>& InjectableCodes() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> codes;
    for (const InjectorSpec& inj : Injectors()) codes.push_back(inj.code);
    return codes;
  }();
  return k;
}

int InjectedScriptLine(const std::string& code) {
  const InjectorSpec* inj = FindInjector(code);
  return inj ? inj->script_line : 0;
}

std::string GeneratedScript(const std::string& workload) {
  // Line numbers are InjectedScriptLine's; keep them in step.
  return "# Generated by `ttap gen` for workload " + workload +
         ": the user code that the injected\n"
         "# anti-patterns' python frames point at.\n"
         "import torch\n"
         "import torch.distributed as dist\n"
         "from utils.metrics import log_histograms\n"
         "\n"
         "\n"
         "def compute_loss(outputs, terms, weights):\n"
         "    return sum(w * t for w, t in zip(weights, terms))\n"
         "\n"
         "\n"
         "def sync_gradients(model):\n"
         "    for p in model.parameters():\n"
         "        dist.all_reduce(p.grad)\n"
         "\n"
         "\n"
         "def train(model, loader, optimizer, device, extras, weights):\n"
         "    model.train()\n"
         "    step = 0\n"
         "    while True:\n"
         "        for batch in loader:  # 21: num_workers=0\n"
         "            inputs = batch.to(device)  # 22: pageable source\n"
         "            feats = {k: v.to(device) for k, v in extras.items()}  # 23\n"
         "            optimizer.zero_grad(set_to_none=False)  # 24\n"
         "            outputs = model(inputs)  # 25\n"
         "            terms = model.loss_terms(outputs)  # 26\n"
         "            loss = compute_loss(outputs, terms, weights)  # 27\n"
         "            torch.cuda.empty_cache()  # 28\n"
         "            mask = torch.from_numpy(outputs.cpu().numpy().clip(0, 1)).to(device)  # 29\n"
         "            print(loss.item())  # 30\n"
         "            log_histograms(model)  # 31\n"
         "            sync_gradients(model)  # 32\n"
         "            optimizer.step()  # 33: foreach=False\n"
         "            step += 1\n";
}

bool InjectAntiPattern(EditableTrace* trace, const InjectionSpec& spec,
                       std::vector<InjectedInterval>* out, std::string* why) {
  Site site;
  if (!FindSite(trace, &site, why)) return false;
  Injector inj(trace, spec, site);
  const int unsettled = trace->unsettled_reflows;
  if (!inj.Run(out, why)) return false;
  if (trace->unsettled_reflows != unsettled) {
    *why = "the GPU reflow did not settle (the injection made a sync wait for its own delay)";
    return false;
  }
  return true;
}

}  // namespace ttap

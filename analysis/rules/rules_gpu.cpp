// Detectors for GPU kernel efficiency: TTA007 launch-bound, TTA009 no-tensor-cores,
// TTA010 layout-conversion (docs/antipatterns.md).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "analysis/base/string_util.h"
#include "analysis/rules/rule_util.h"

namespace ttap {

namespace {

// A kernel's short display name: without "void ", template arguments and parameters.
std::string ShortKernelName(std::string_view n) {
  if (StartsWith(n, "void ")) n.remove_prefix(5);
  size_t cut = n.find_first_of("<(");
  if (cut != std::string_view::npos && cut > 0) n = n.substr(0, cut);
  if (n.size() > 80) n = n.substr(0, 80);
  return std::string(n);
}

// The CPU op that launched a GPU activity: the innermost cpu_op around its runtime call (e.g.
// aten::addmm, aten::cudnn_convolution), else the user-level op, else the runtime call; -1 when
// the launch is not in the trace.
int32_t LaunchingOp(const RuleContext& ctx, size_t gpu_row) {
  const int32_t launch = ctx.LaunchOf(gpu_row);
  if (launch < 0) return -1;
  const EventTable& ev = ctx.ev();
  for (int32_t p = ev.parent[launch], g = 0; p >= 0 && g < 256; p = ev.parent[p], ++g) {
    if (ev.kind[p] == EventKind::kCpuOp) return p;
  }
  int32_t top = ctx.TopOp(launch);
  return top >= 0 ? top : launch;
}

// Whether a runtime call (|call|: its flags) launches exactly one kernel the way a CPU-bound loop
// does: a kernel launch, not a CUDA graph (whose kernels share one launch call; graphs are the
// fix).
bool IsKernelLaunch(uint32_t call) {
  return (call & kRuntimeKernelLaunch) && !(call & kRuntimeGraphLaunch);
}

// Gathers raw findings of one step keyed by cause; adds those passing the step threshold.
struct StepFindings {
  std::map<std::string, Finding> by_cause;
  double lost_us = 0;

  Finding& For(const RuleContext& ctx, const char* code, int step, int64_t a, int64_t b,
               int32_t anchor) {
    std::string key = anchor >= 0 ? CauseKey(ctx, anchor) : "(launch not traced)";
    return CauseFinding(&by_cause, ctx, code, step, a, b, anchor, key);
  }
  void Flush(const AnalysedStep& step, double min_share, std::vector<Finding>* out) {
    if (step.duration() <= 0 || lost_us * 1000.0 < min_share * step.duration()) return;
    for (auto& [key, f] : by_cause) out->push_back(std::move(f));
  }
};

// ---- TTA009 ----

// Tensor-core kernels: HMMA/IMMA shapes, TF32, half/bfloat16 data, WMMA, CUTLASS tensorop,
// Hopper GMMA. Lower-case names.
bool IsTensorCoreName(const std::string& n) {
  static const char* const kMarkers[] = {
      "h884",   "h1688", "h16816", "s884",     "s1688",     "s16816",  "s161616",  "i8816",
      "i16832", "hmma",  "imma",   "gmma",     "tf32",      "wmma",    "tensorop", "bf16",
      "f16",    "half",  "bfloat", "1688gemm", "16816gemm", "884gemm", "_tc_",     "tensorcore"};
  for (const char* m : kMarkers) {
    if (n.find(m) != std::string::npos) return true;
  }
  return false;
}

// fp32 GEMM/convolution kernels that run on the SIMT (FFMA) pipe. Lower-case names.
bool IsFp32MatrixName(const std::string& n) {
  if (IsTensorCoreName(n)) return false;
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  // cuBLAS/cuDNN/CUTLASS single-precision GEMMs and implicit-GEMM convolutions:
  // volta_sgemm_128x64_nt, ampere_sgemm_*, implicit_convolve_sgemm, cutlass simt_sgemm,
  // volta_scudnn_128x128_*, cudnn_ampere_scudnn_*.
  if (has("sgemm") || has("scudnn")) return true;
  // xmma/cublasLt fp32 kernels: sm80_xmma_gemm_f32f32_f32f32_f32_*.
  if (has("f32f32_f32") && (has("gemm") || has("fprop") || has("dgrad") || has("wgrad"))) {
    return true;
  }
  // cuDNN's fp32 convolution gradient engines.
  if ((has("dgrad_engine") || has("wgrad_alg") || has("dgrad2d_alg") || has("dgrad_alg") ||
       has("wgrad2d")) &&
      has("<float")) {
    return true;
  }
  return false;
}

// Architecture (major*10+minor) suggested by a kernel name, or -1.
int ArchFromName(const std::string& n) {
  if (n.find("sm90") != std::string::npos || n.find("hopper") != std::string::npos) return 90;
  if (n.find("sm89") != std::string::npos) return 89;
  if (n.find("sm86") != std::string::npos) return 86;
  if (n.find("ampere_") != std::string::npos || n.find("sm80") != std::string::npos) return 80;
  if (n.find("turing_") != std::string::npos || n.find("sm75") != std::string::npos) return 75;
  if (n.find("volta_") != std::string::npos || n.find("sm70") != std::string::npos) return 70;
  return -1;
}

// ---- TTA010 ----

// Explicit NCHW<->NHWC conversion kernels (cuDNN nchwToNhwcKernel/nhwcToNchwKernel and their
// nchw2nhwc params, convertTensor kernels). Lower-case names.
bool IsLayoutConversionName(const std::string& n) {
  return n.find("nchwtonhwc") != std::string::npos || n.find("nhwctonchw") != std::string::npos ||
         n.find("nchw2nhwc") != std::string::npos || n.find("nhwc2nchw") != std::string::npos ||
         n.find("converttensor") != std::string::npos;
}

// Generic transpose kernels (MIOpen's batched_transpose_*, cuDNN transposes) and PyTorch's
// strided copies (direct_copy_kernel through the non-vectorized elementwise_kernel: a permuting
// .contiguous() / .to(); a plain or dtype copy is vectorized): a layout conversion only when a
// convolution launched them (forward or backward converting its input or gradient to the weight's
// memory format: measured on an H200, NCHW activations on a channels_last ResNet-50 cost 38% of
// the step, bench/record).
bool IsTransposeName(const std::string& n) {
  return n.find("transpose") != std::string::npos ||
         (n.find("direct_copy_kernel") != std::string::npos &&
          n.find("vectorized") == std::string::npos);
}

// What surrounds a GPU activity's launch, in one walk up its CPU ancestors: the innermost
// convolution op (a cpu_op whose name contains "conv"), and the outermost aten::contiguous /
// aten::clone whose recorded strides and memory format convert between NCHW and channels_last
// (kLayoutCopy, set by the parser: the user's contiguous() rather than the clone() inside it; a
// layout conversion wherever it is called from, a forward hook's too). -1 for none.
struct LaunchAncestry {
  int32_t conv = -1;
  int32_t layout_copy = -1;
};
// |is_conv| caches the name test per string id (-1 unknown).
LaunchAncestry AncestryOf(const RuleContext& ctx, size_t gpu_row, std::vector<int8_t>* is_conv) {
  LaunchAncestry out;
  const int32_t launch = ctx.LaunchOf(gpu_row);
  const EventTable& ev = ctx.ev();
  for (int32_t p = launch >= 0 ? ev.parent[launch] : -1, g = 0; p >= 0 && g < 256;
       p = ev.parent[p], ++g) {
    if (ev.flags[p] & kLayoutCopy) out.layout_copy = p;
    if (out.conv >= 0 || ev.kind[p] != EventKind::kCpuOp) continue;
    int8_t& conv = (*is_conv)[ev.name[p]];
    if (conv < 0) conv = Lower(ctx.Name(p)).find("conv") != std::string::npos ? 1 : 0;
    if (conv) out.conv = p;
  }
  return out;
}

}  // namespace

// TTA007: bursts of >= launch_bound_min_burst consecutive kernels, each shorter than its own
// launch call (HTA's short kernel), with the GPU idle between them. Lost: the GPU idle gaps
// between consecutive kernels of such bursts (gaps above launch_bound_max_gap_us end a burst:
// longer stalls are another rule's business).
void DetectLaunchBound(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("launch_bound_share", 0.05);
  // Bursts whose launching takes this share of the step on the CPU are candidates too: the
  // replay decides what CUDA graphs would save (under 1% of the run: a hint).
  const double min_cpu_share = o.Get("launch_bound_cpu_share", 0.01);
  const size_t min_burst = static_cast<size_t>(std::max(2.0, o.Get("launch_bound_min_burst", 8)));
  const int64_t max_gap_ns = static_cast<int64_t>(o.Get("launch_bound_max_gap_us", 200) * 1000);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    struct Burst {
      std::vector<uint32_t> rows;
      int64_t idle_ns = 0;
      int64_t last_end = 0;
    };
    // The bursts of one step, grouped by the user-level op that launched most of each burst's
    // kernels: zero_grad's, the optimizer's and the model's own bursts are separate findings, so
    // one that is another finding's symptom is costed as such and the others on their own.
    struct Group {
      int64_t lost_ns = 0, kernels = 0, bursts = 0, kernel_ns = 0, launch_ns = 0;
      int64_t cpu_span_ns = 0;  // the CPU time from each burst's first launch to its last
      int64_t first = INT64_MAX, last = INT64_MIN;
      int32_t op = -1;
      std::vector<int32_t> rows;
      std::map<std::string, std::pair<int64_t, double>> kernel_names;  // name -> (count, us)
    };
    std::map<std::string, Group> groups;
    std::map<int32_t, Burst> open;  // per device
    auto close = [&](Burst& b) {
      if (b.rows.size() >= min_burst) {
        std::map<std::string, std::pair<int64_t, int32_t>> ops;  // cause -> (kernels, op row)
        for (uint32_t r : b.rows) {
          const int32_t launch = ctx.LaunchOf(r);
          const int32_t top = ctx.TopOp(launch);
          const int32_t op = top >= 0 ? top : launch;
          auto& e = ops[CauseKey(ctx, op)];
          if (e.first++ == 0) e.second = op;
        }
        auto most = std::max_element(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
          return a.second.first < b.second.first;
        });
        Group& g = groups[most->first];
        if (g.op < 0) g.op = most->second.second;
        ++g.bursts;
        g.lost_ns += b.idle_ns;
        const int32_t first_launch = ctx.LaunchOf(b.rows.front());
        const int32_t last_launch = ctx.LaunchOf(b.rows.back());
        if (first_launch >= 0 && last_launch >= 0) {
          g.cpu_span_ns += std::max<int64_t>(0, ev.end(last_launch) - ev.ts[first_launch]);
        }
        g.first = std::min(g.first, ev.ts[b.rows.front()]);
        g.last = std::max(g.last, b.last_end);
        for (uint32_t r : b.rows) {
          g.rows.push_back(static_cast<int32_t>(r));
          ++g.kernels;
          g.kernel_ns += ev.dur[r];
          g.launch_ns += ev.dur[ctx.LaunchOf(r)];
          auto& k = g.kernel_names[ShortKernelName(ctx.Name(r))];
          k.first++;
          k.second += ev.dur[r] / 1000.0;
        }
      }
      b.rows.clear();
      b.idle_ns = 0;
    };
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kKernel) continue;
      const int32_t device = ctx.trace().tracks[ev.track[i]].device;
      Burst& b = open[device];
      const int32_t launch = ctx.LaunchOf(i);
      const bool is_short =
          launch >= 0 && IsKernelLaunch(ctx.RuntimeFlags(launch)) && ev.dur[i] < ev.dur[launch];
      if (!is_short) {
        close(b);
        continue;
      }
      if (!b.rows.empty()) {
        if (ev.ts[i] - b.last_end > max_gap_ns) {
          close(b);
        } else if (ev.ts[i] > b.last_end) {
          b.idle_ns += ctx.GpuIdle(b.last_end, ev.ts[i]);
        }
      }
      if (b.rows.empty()) b.last_end = ev.end(i);
      b.rows.push_back(i);
      b.last_end = std::max(b.last_end, ev.end(i));
    }
    for (auto& [d, b] : open) close(b);
    // The bursts cost the step their GPU idle time where the GPU waits for them, or the CPU
    // time that launches them where queued GPU work hides that wait but the CPU's path runs
    // through them (the replay decides which, and how much CUDA graphs would save).
    for (auto& [key, g] : groups) {
      if (g.kernels == 0 || step.duration() <= 0 ||
          (g.lost_ns < min_share * static_cast<double>(step.duration()) &&
           g.cpu_span_ns < min_cpu_share * static_cast<double>(step.duration()))) {
        continue;
      }
      Finding f = MakeRawFinding(ctx, "TTA007", static_cast<int>(s), g.first, g.last,
                                 g.lost_ns / 1000.0, g.op, "launch-bound " + key);
      f.rows = std::move(g.rows);
      AddNumber(&f, "short_kernels", static_cast<double>(g.kernels));
      AddNumber(&f, "bursts", static_cast<double>(g.bursts));
      AddNumber(&f, "gpu_idle_between_us", g.lost_ns / 1000.0);
      AddNumber(&f, "kernel_us", g.kernel_ns / 1000.0);
      AddNumber(&f, "launch_us", g.launch_ns / 1000.0);
      const double n = static_cast<double>(g.kernels);
      const std::string op_name = g.op >= 0 ? std::string(ctx.Name(g.op)) : "";
      AddText(&f, "detail",
              std::to_string(g.kernels) + " kernels in " + std::to_string(g.bursts) +
                  " burst(s) average " + FormatNumber("%.1f", g.kernel_ns / 1000.0 / n) +
                  " us on the GPU but " + FormatNumber("%.1f", g.launch_ns / 1000.0 / n) +
                  " us to launch; the GPU idles " + FormatNumber("%.1f", g.lost_ns / 1000.0 / n) +
                  " us between them" + (op_name.empty() ? "" : " (launched by " + op_name + ")"));
      if (!op_name.empty()) AddText(&f, "op", op_name);
      for (auto& [name, e] : g.kernel_names) AddEvent(&f, name, e.first, e.second);
      out->push_back(std::move(f));
    }
  }
}

// TTA009: fp32 GEMM/convolution kernels on the SIMT pipe of a GPU with tensor cores (NVIDIA
// compute capability >= 7.0: fp16/bf16 autocast; >= 8.0: TF32 as well). Lost: each kernel's time
// minus its time on tensor cores (TensorCoreNs at the GPU's TensorCoreRatio, or the configured
// tensor_core_speedup).
void DetectNoTensorCores(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu() || ctx.amd()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("no_tensor_cores_share", 0.01);
  // Classify each kernel name once.
  std::unordered_map<StringId, char> fp32;
  int arch_from_names = -1;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev.kind[i] != EventKind::kKernel) continue;
    auto [it, fresh] = fp32.emplace(ev.name[i], 0);
    if (!fresh) continue;
    std::string n = Lower(ctx.Name(i));
    it->second = IsFp32MatrixName(n) ? 1 : 0;
    arch_from_names = std::max(arch_from_names, ArchFromName(n));
  }
  int arch = ctx.compute_major() >= 0 ? ctx.compute_major() * 10 + std::max(0, ctx.compute_minor())
                                      : arch_from_names;
  if (arch < 70) return;  // unknown, or no tensor cores
  const double ratio = o.Get("tensor_core_speedup", 0.0) > 1.0
                           ? o.Get("tensor_core_speedup", 0.0)
                           : TensorCoreRatio(arch, ctx.device_name());
  if (ratio <= 1.0) return;
  const bool tf32 = arch >= 80;
  const std::string sm = "sm_" + std::to_string(arch);
  const std::string remedy =
      tf32 ? "TF32 (torch.backends.cuda.matmul.allow_tf32 / cudnn.allow_tf32) or bf16 autocast"
           : "fp16 autocast (torch.autocast(\"cuda\", dtype=torch.float16))";
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    StepFindings sf;
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kKernel || !fp32[ev.name[i]]) continue;
      const double kernel_us = ev.dur[i] / 1000.0;
      const double saving_us = (ev.dur[i] - TensorCoreNs(ev.dur[i], ratio)) / 1000.0;
      Finding& f =
          sf.For(ctx, "TTA009", static_cast<int>(s), ev.ts[i], ev.end(i), LaunchingOp(ctx, i));
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += saving_us;
      sf.lost_us += saving_us;
      AccumulateNumber(&f, "fp32_kernels", 1);
      AccumulateNumber(&f, "fp32_kernel_us", kernel_us);
      AddEvent(&f, ShortKernelName(ctx.Name(i)), 1, kernel_us);
    }
    for (auto& [key, f] : sf.by_cause) {
      std::string kernels;
      std::vector<EvidenceEvent> top = f.top_events;
      std::sort(top.begin(), top.end(), [](const EvidenceEvent& a, const EvidenceEvent& b) {
        return a.total_us > b.total_us;
      });
      for (size_t k = 0; k < top.size() && k < 2; ++k) kernels += (k ? ", " : "") + top[k].name;
      if (top.size() > 2) kernels += ", ...";
      std::string op = f.anchor_row >= 0 ? std::string(ctx.Name(f.anchor_row)) : "";
      AddText(&f, "arch", sm);
      AddText(&f, "precision", tf32 ? "tf32" : "fp16");
      if (!op.empty()) AddText(&f, "op", op);
      // The kernels' speedup as a whole (small kernels gain less than the GPU's ratio).
      const double fp32_us = Num(f, "fp32_kernel_us");
      const double speedup =
          fp32_us > f.per_step[0].second ? fp32_us / (fp32_us - f.per_step[0].second) : 1.0;
      AddNumber(&f, "tensor_core_ratio", ratio);
      AddNumber(&f, "speedup", speedup);
      AddText(&f, "detail",
              "fp32 SIMT kernels (" + kernels + ")" + (op.empty() ? "" : " in " + op) + " on " +
                  sm + (ctx.device_name().empty() ? "" : " (" + ctx.device_name() + ")") +
                  " without tensor cores; " + remedy + " would run them ~" +
                  FormatNumber("%.1f", speedup) + "x faster");
    }
    sf.Flush(step, min_share, out);
  }
}

// TTA010: NCHW<->NHWC conversion kernels (cuDNN's nchwToNhwc/nhwcToNchw, convertTensor, and
// transposes launched by a convolution). Lost: their GPU time.
void DetectLayoutConversion(const RuleContext& ctx, const RuleOptions& o,
                            std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_share = o.Get("layout_conversion_share", 0.01);
  // 1: always a conversion; 2: a conversion when a convolution launched it; 3: a copy kernel,
  // a conversion when a layout-converting contiguous() / clone() launched it.
  std::unordered_map<StringId, char> kind;
  std::vector<int8_t> is_conv(ctx.trace().strings.size(), -1);
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    StepFindings sf;
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kKernel) continue;
      auto [it, fresh] = kind.emplace(ev.name[i], 0);
      if (fresh) {
        std::string n = Lower(ctx.Name(i));
        it->second = IsLayoutConversionName(n)             ? 1
                     : IsTransposeName(n)                  ? 2
                     : n.find("copy") != std::string::npos ? 3
                                                           : 0;
      }
      if (it->second == 0) continue;
      const LaunchAncestry up = AncestryOf(ctx, i, &is_conv);
      const int32_t copy = it->second >= 2 ? up.layout_copy : -1;
      if (it->second >= 2 && copy < 0 && (it->second == 3 || up.conv < 0)) continue;
      // Named by the convolution that converts, else by the contiguous() / clone() that does
      // (a hook's), else by the launching op.
      const int32_t op = up.conv >= 0 ? up.conv : copy >= 0 ? copy : LaunchingOp(ctx, i);
      const double us = ev.dur[i] / 1000.0;
      Finding& f = sf.For(ctx, "TTA010", static_cast<int>(s), ev.ts[i], ev.end(i), op);
      f.rows.push_back(static_cast<int32_t>(i));
      f.per_step[0].second += us;
      sf.lost_us += us;
      AccumulateNumber(&f, "conversions", 1);
      AccumulateNumber(&f, "conversion_us", us);
      AddEvent(&f, ShortKernelName(ctx.Name(i)), 1, us);
    }
    for (auto& [key, f] : sf.by_cause) {
      std::string op = f.anchor_row >= 0 ? std::string(ctx.Name(f.anchor_row)) : "";
      if (!op.empty()) AddText(&f, "op", op);
      AddText(&f, "detail",
              std::to_string(static_cast<int>(f.evidence["conversions"].number)) +
                  " layout conversion kernel(s) (" + f.top_events.front().name + ")" +
                  (op.empty() ? "" : " around " + op) +
                  " in the step: the tensors are NCHW while the kernels want NHWC");
    }
    sf.Flush(step, min_share, out);
  }
}

}  // namespace ttap

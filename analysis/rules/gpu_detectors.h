// The helpers shared by the gpu family of detectors (detectors for GPU kernel efficiency), one file
// per code (tta0NN_<name>.cpp), in namespace gpu_detail. Internal to analysis/rules/.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "analysis/base/string_util.h"
#include "analysis/rules/rule_util.h"

namespace ttap::gpu_detail {

// A kernel's short display name: without "void ", template arguments and parameters. A generic
// wrapper's first template argument is the kernel itself, and stays:
// "cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>", not "cutlass::Kernel2".
inline std::string ShortKernelName(std::string_view n) {
  if (StartsWith(n, "void ")) n.remove_prefix(5);
  size_t cut = n.find_first_of("<(");
  if (cut != std::string_view::npos && cut > 0 && n[cut] == '<' &&
      (EndsWith(n.substr(0, cut), "::Kernel") || EndsWith(n.substr(0, cut), "::Kernel2"))) {
    const size_t arg_end = n.find_first_of(",<>(", cut + 1);
    if (arg_end != std::string_view::npos && n[arg_end] == '>') cut = arg_end + 1;
  }
  if (cut != std::string_view::npos && cut > 0) n = n.substr(0, cut);
  return CutWithEllipsis(n, 100);
}

// The CPU op that launched a GPU activity: the innermost cpu_op around its runtime call (e.g.
// aten::addmm, aten::cudnn_convolution), else the user-level op, else the runtime call; -1 when
// the launch is not in the trace.
inline int32_t LaunchingOp(const RuleContext& ctx, size_t gpu_row) {
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
inline bool IsKernelLaunch(uint32_t call) {
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
inline bool IsTensorCoreName(const std::string& n) {
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
inline bool IsFp32MatrixName(const std::string& n) {
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
inline int ArchFromName(const std::string& n) {
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
inline bool IsLayoutConversionName(const std::string& n) {
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
inline bool IsTransposeName(const std::string& n) {
  return n.find("transpose") != std::string::npos ||
         (n.find("direct_copy_kernel") != std::string::npos &&
          n.find("vectorized") == std::string::npos);
}

// Whether op |row|'s name names a convolution ("conv" in any case); |cache| holds the answer per
// string id (-1 unknown).
inline bool IsConvolutionOp(const RuleContext& ctx, int32_t row, std::vector<int8_t>* cache) {
  int8_t& conv = (*cache)[ctx.ev().name[row]];
  if (conv < 0) conv = Lower(ctx.Name(row)).find("conv") != std::string::npos ? 1 : 0;
  return conv != 0;
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
inline LaunchAncestry AncestryOf(const RuleContext& ctx, size_t gpu_row,
                                 std::vector<int8_t>* is_conv) {
  LaunchAncestry out;
  const int32_t launch = ctx.LaunchOf(gpu_row);
  const EventTable& ev = ctx.ev();
  for (int32_t p = launch >= 0 ? ev.parent[launch] : -1, g = 0; p >= 0 && g < 256;
       p = ev.parent[p], ++g) {
    if (ev.flags[p] & kLayoutCopy) out.layout_copy = p;
    if (out.conv >= 0 || ev.kind[p] != EventKind::kCpuOp) continue;
    if (IsConvolutionOp(ctx, p, is_conv)) out.conv = p;
  }
  return out;
}

}  // namespace ttap::gpu_detail

// TTA009 no-tensor-cores: fp32 matrix kernels where tensor cores exist. Its detector; registered in
// rule_registry.cpp, documented in docs/antipatterns.md#tta009-no-tensor-cores.
#include "analysis/rules/gpu_detectors.h"

namespace ttap {

// The gpu family's helpers it uses (gpu_detectors.h).
using gpu_detail::ArchFromName;
using gpu_detail::IsConvolutionOp;
using gpu_detail::IsFp32MatrixName;
using gpu_detail::LaunchingOp;
using gpu_detail::ShortKernelName;
using gpu_detail::StepFindings;

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
  const int arch = ctx.compute_capability() >= 0 ? ctx.compute_capability() : arch_from_names;
  if (arch < 70) return;  // unknown, or no tensor cores
  const double ratio = o.Get("tensor_core_speedup", 0.0) > 1.0
                           ? o.Get("tensor_core_speedup", 0.0)
                           : TensorCoreRatio(arch, ctx.device_name());
  if (ratio <= 1.0) return;
  const bool tf32 = arch >= 80;
  // A GeForce card's tensor cores run TF32 at its fp32 SIMT rate (an RTX 3090: 35.6 TFLOPS both;
  // an RTX 4090: 82.6): only fp16/bf16 gains there.
  const bool tf32_gains = tf32 && !IsGeForceName(ctx.device_name());
  const std::string sm = "sm_" + std::to_string(arch);
  const std::string remedy =
      tf32_gains
          ? "TF32 (torch.backends.cuda.matmul.allow_tf32 / cudnn.allow_tf32) or bf16 autocast"
      : tf32 ? "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16); TF32 would not: a "
               "GeForce runs it at its fp32 rate)"
             : "fp16 autocast (torch.autocast(\"cuda\", dtype=torch.float16))";
  // Whether TF32 is on already, for convolutions (cudnn.allow_tf32) and for matrix products
  // (matmul.allow_tf32): other kernels of that kind run TF32. Then the library picked fp32
  // kernels for these shapes, and only bf16 autocast moves them to tensor cores.
  std::vector<int8_t> conv_name(ctx.trace().strings.size(), -1);
  auto is_conv = [&](int32_t op) { return op >= 0 && IsConvolutionOp(ctx, op, &conv_name); };
  bool tf32_conv = false, tf32_matmul = false;
  if (tf32) {
    std::unordered_map<StringId, char> tf32_name;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev.kind[i] != EventKind::kKernel) continue;
      auto [it, fresh] = tf32_name.emplace(ev.name[i], 0);
      if (fresh) it->second = Contains(Lower(ctx.Name(i)), "tf32") ? 1 : 0;
      if (!it->second) continue;
      (is_conv(LaunchingOp(ctx, i)) ? tf32_conv : tf32_matmul) = true;
    }
  }
  const std::string bf16_only =
      "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16); TF32 is on already: other ";
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    StepFindings sf;
    // One fix (autocast, or TF32) covers every op's fp32 kernels: one finding for the
    // convolutions and one for the matrix products (TF32 may be on for one kind only), anchored
    // at the op that loses the most (an MLP's forward aten::addmm and backward aten::mm had been
    // two findings, neither saying the 42% of the step they lose together).
    struct OpLoss {
      int32_t row = -1;  // its first launching op
      double lost_us = 0;
    };
    std::map<std::string, std::map<StringId, OpLoss>> ops_of;  // per finding key, per op name
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] != EventKind::kKernel || !fp32[ev.name[i]]) continue;
      const double kernel_us = ev.dur[i] / 1000.0;
      const double saving_us = (ev.dur[i] - TensorCoreNs(ev.dur[i], ratio)) / 1000.0;
      const int32_t op = LaunchingOp(ctx, i);
      const std::string key = is_conv(op) ? "fp32 convolutions" : "fp32 matrix products";
      if (op >= 0) {
        OpLoss& l = ops_of[key][ev.name[op]];
        if (l.row < 0) l.row = op;
        l.lost_us += saving_us;
      }
      Finding& f = CauseFinding(&sf.by_cause, ctx, "TTA009", static_cast<int>(s), ev.ts[i],
                                ev.end(i), op, key);
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
      // The ops by what they lose, the first the anchor.
      std::vector<OpLoss> ops;
      for (const auto& [name, l] : ops_of[key]) ops.push_back(l);
      std::sort(ops.begin(), ops.end(),
                [](const OpLoss& a, const OpLoss& b) { return a.lost_us > b.lost_us; });
      if (!ops.empty()) f.anchor_row = ops.front().row;
      std::string op;
      for (size_t k = 0; k < ops.size() && k < 3; ++k) {
        op += (k ? ", " : "") + std::string(ctx.Name(ops[k].row));
      }
      if (ops.size() > 3) op += ", ...";
      AddText(&f, "arch", sm);
      AddText(&f, "precision", tf32_gains ? "tf32" : tf32 ? "bf16" : "fp16");
      if (!op.empty()) AddText(&f, "op", op);
      // The kernels' speedup as a whole (small kernels gain less than the GPU's ratio).
      const double fp32_us = Num(f, "fp32_kernel_us");
      const double speedup =
          fp32_us > f.per_step[0].second ? fp32_us / (fp32_us - f.per_step[0].second) : 1.0;
      AddMean(&f, "tensor_core_ratio", ratio);
      AddMean(&f, "speedup", speedup);
      const bool conv = is_conv(f.anchor_row);
      const bool on_already = conv ? tf32_conv : tf32_matmul;
      if (on_already) AddText(&f, "tf32_on", "yes");
      AddText(&f, "detail",
              "fp32 SIMT kernels (" + kernels + ")" + (op.empty() ? "" : " in " + op) + " on " +
                  sm + (ctx.device_name().empty() ? "" : " (" + ctx.device_name() + ")") +
                  ", not on its tensor cores; " +
                  (on_already
                       ? bf16_only +
                             (conv ? std::string("convolutions") : std::string("matrix products")) +
                             " run TF32 kernels, these shapes got fp32 ones)"
                       : remedy) +
                  " would run them ~" + FormatNumber("%.1f", speedup) + "x faster");
    }
    sf.Flush(step, min_share, out);
  }
}

}  // namespace ttap

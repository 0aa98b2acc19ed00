// TraceSim (trace_sim.h): simulates a computer-vision training/inference loop step by step -- a
// CPU cursor issuing python frames, aten op hierarchies and launches, a GPU stream that runs the
// work after its launch -- and writes the Kineto JSON (through KinetoWriter, kineto_writer.h) with
// ground-truth labels of the injected anti-patterns. Called by `ttap gen` and the tests.
#include "bench/harness/trace_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "bench/harness/kineto_writer.h"

namespace ttap {

namespace {

struct Hw {
  const char* key;
  const char* gpu_name;
  int major, minor, sms;
  double speed;  // kernel duration multiplier (V100 = 1)
  double pcie;   // GB/s for the batch copy
  bool amd;
};

const Hw kHw[] = {
    {"V100", "Tesla V100-SXM2-32GB", 7, 0, 80, 1.0, 11.0, false},
    {"A100", "NVIDIA A100-SXM4-80GB", 8, 0, 108, 0.5, 22.0, false},
    {"H100", "NVIDIA H100 80GB HBM3", 9, 0, 132, 0.3, 45.0, false},
    {"MI300", "AMD Instinct MI300X", 9, 4, 304, 0.35, 45.0, true},
};

struct Task {
  const char* key;
  int blocks;   // conv-bn-relu blocks of the encoder
  int decoder;  // upsample-conv-bn-relu blocks
  double work;  // kernel duration multiplier
  int batch, res;
  const char* loss;  // loss op
};

const Task kTasks[] = {
    {"classification", 16, 0, 1.0, 32, 224, "aten::cross_entropy_loss"},
    {"detection", 26, 2, 1.6, 8, 512, "aten::smooth_l1_loss"},
    {"segmentation", 20, 8, 1.8, 8, 512, "aten::cross_entropy_loss"},
    {"pose", 20, 4, 1.3, 16, 256, "aten::mse_loss"},
    {"depth", 20, 6, 1.5, 8, 384, "aten::l1_loss"},
    {"generation", 30, 0, 0.7, 16, 64, "aten::mse_loss"},
};

enum class Layer { kConv, kBn, kRelu, kUpsample, kPool, kLinear };

// Lines of the generated script.
constexpr int kLineLoop = 52, kLineTo = 53, kLineZeroGrad = 54, kLineForward = 55, kLineLoss = 56,
              kLineItem = 57, kLineBackward = 58, kLineStep = 59, kLineCustom = 62;

struct Ev {
  const char* cat;
  std::string name;
  int pid, tid;
  int64_t ts, dur;
  KinetoArgs args;
  char ph = 'X';   // X, or an ac2g flow's s / f
  int64_t id = 0;  // flows: the correlation
};

// The anti-patterns the simulator writes, each labelled with its code: the one place that names
// their codes (TTX1xx: the zero-shot families no rule knows, benchmark.md).
enum class SimPattern : uint8_t {
  kDataLoader,
  kHostSync,
  kZeroGrad,
  kOptimizer,
  kFp32,
  kRecompute,
  kSlowKernel,
  kSerialStreams,
};
struct SimPatternInfo {
  SimPattern pattern;
  const char* code;
  bool training_only;       // needs a backward pass and an optimizer
  bool needs_tensor_cores;  // NVIDIA only (the MI300 model has no fp32/TF32 split)
};
constexpr SimPatternInfo kSimPatterns[] = {
    // in SimPattern order
    {SimPattern::kDataLoader, "TTA001", false, false},
    {SimPattern::kHostSync, "TTA002", false, false},
    {SimPattern::kZeroGrad, "TTA005", true, false},
    {SimPattern::kOptimizer, "TTA006", true, false},
    {SimPattern::kFp32, "TTA009", false, true},
    {SimPattern::kRecompute, "TTX101", false, false},
    {SimPattern::kSlowKernel, "TTX102", false, false},
    {SimPattern::kSerialStreams, "TTX103", false, false},
};
const SimPatternInfo* FindSimPattern(const std::string& code) {
  for (const SimPatternInfo& i : kSimPatterns) {
    if (code == i.code) return &i;
  }
  return nullptr;
}
const char* CodeOf(SimPattern p) { return kSimPatterns[static_cast<size_t>(p)].code; }

class Sim {
 public:
  explicit Sim(const SimSpec& s) : spec_(s), rng_(s.seed * 0x9E3779B97F4A7C15ull + 17) {
    for (const Hw& h : kHw) {
      if (spec_.hardware == h.key) hw_ = &h;
    }
    if (!hw_) hw_ = &kHw[1];
    for (const Task& t : kTasks) {
      if (spec_.task == t.key) task_ = &t;
    }
    if (!task_) task_ = &kTasks[0];
    for (const auto& c : spec_.anti_patterns) {
      if (SimCanInject(spec_, c)) inject_.push_back(c);
    }
    sev_ = std::clamp(spec_.severity, 0.0, 1.0);
    fp32_ = Has(SimPattern::kFp32);
    serial_streams_ = Has(SimPattern::kSerialStreams);
    // Host speed of this run (CPU model, Python version, profiler overhead): from GPU-bound to
    // partly CPU-bound loops, so that the GPU is not always saturated.
    cpu_scale_ = std::uniform_real_distribution<double>(1.0, 2.5)(rng_);
    script_ = std::string("train_") + task_->key + ".py";
    pid_ = 1000 + static_cast<int>(spec_.seed % 50000);
    main_tid_ = pid_;
    bwd_tid_ = pid_ + 57;
    tid_ = main_tid_;
    c_ = (int64_t{1414400000000} + static_cast<int64_t>(spec_.seed % 1000000) * 1000) * 1000;
    g_ = c_;
  }

  SimTrace Run() {
    BuildModel();
    Py(script_, 98, "<module>");
    Py(script_, 40, "train_one_epoch");
    Cpu(200);
    for (int s = 0; s < std::max(1, spec_.steps); ++s) Step(10 + s);
    Cpu(50);
    End();
    End();
    SimTrace out;
    out.script_path = script_;
    out.labels = labels_;
    out.json = Json();
    return out;
  }

 private:
  bool Has(SimPattern p) const {
    return std::find(inject_.begin(), inject_.end(), CodeOf(p)) != inject_.end();
  }
  double U(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng_); }
  static int64_t Ns(double us) { return static_cast<int64_t>(std::llround(us * 1000.0)); }
  void Cpu(double us) { c_ += Ns(us * cpu_scale_ * U(0.85, 1.15)); }

  void BuildModel() {
    static const double kDepth[] = {1.0, 0.6, 1.4, 0.8}, kWidth[] = {1.0, 0.7, 1.3, 0.9};
    const int v = std::clamp(spec_.variant, 0, 3);
    width_ = kWidth[v];
    const int blocks = std::max(4, static_cast<int>(std::lround(task_->blocks * kDepth[v])));
    for (int b = 0; b < blocks; ++b) {
      double scale = (0.6 + 0.8 * (b % 4) / 3.0) * width_;
      layers_.push_back({Layer::kConv, scale});
      layers_.push_back({Layer::kBn, scale});
      layers_.push_back({Layer::kRelu, scale});
    }
    for (int b = 0; b < task_->decoder; ++b) {
      layers_.push_back({Layer::kUpsample, 1.0});
      layers_.push_back({Layer::kConv, 1.2});
      layers_.push_back({Layer::kBn, 1.0});
      layers_.push_back({Layer::kRelu, 1.0});
    }
    layers_.push_back({Layer::kPool, 0.3});
    layers_.push_back({Layer::kLinear, 0.5});
    for (auto& l : layers_) {
      if (l.first == Layer::kConv) params_ += 1;
      if (l.first == Layer::kBn || l.first == Layer::kLinear) params_ += 2;
      est_step_us_ += BaseUs(l.first, false) * l.second * task_->work * hw_->speed *
                      (spec_.training ? 3.2 : 1.0);
    }
  }

  // V100 fp16 duration of one layer's forward (or backward) kernels, in us.
  static double BaseUs(Layer l, bool backward) {
    switch (l) {
      case Layer::kConv:
        return backward ? 380 : 180;
      case Layer::kBn:
        return backward ? 60 : 40;
      case Layer::kRelu:
        return backward ? 30 : 25;
      case Layer::kUpsample:
        return backward ? 50 : 40;
      case Layer::kPool:
        return 20;
      case Layer::kLinear:
        return backward ? 120 : 60;
    }
    return 20;
  }
  double KernelUs(double base, bool matrix) {
    double d = base * task_->work * hw_->speed * U(0.9, 1.1);
    if (matrix && fp32_) d *= 2.0;
    return std::max(d, 4.0 + U(0, 1.5));
  }

  // ---- events ----
  size_t Push(const char* cat, std::string name, KinetoArgs args) {
    ev_.push_back({cat, std::move(name), pid_, tid_, c_, 0, std::move(args)});
    return ev_.size() - 1;
  }
  void Begin(const char* cat, const std::string& name) {
    KinetoArgs args;
    if (std::string(cat) == "cpu_op" || std::string(cat) == "user_annotation") {
      int ext = next_ext_++;
      args.Int("External id", ext).Int("Record function id", 0);
      ext_stack_.push_back(ext);
    } else {
      ext_stack_.push_back(ext_stack_.empty() ? 0 : ext_stack_.back());
    }
    open_.push_back(Push(cat, name, args));
    Cpu(1.5);
  }
  void Py(const std::string& file, int line, const std::string& func) {
    int id = next_py_++;
    int parent = py_stack_.empty() ? -1 : py_stack_.back();
    py_stack_.push_back(id);
    open_.push_back(Push(
        "python_function", file + "(" + std::to_string(line) + "): " + func,
        KinetoArgs().Int("Python id", id).Int("Python parent id", parent).Int("Python thread", 0)));
    ext_stack_.push_back(ext_stack_.empty() ? 0 : ext_stack_.back());
    Cpu(1.0);
  }
  void End() {
    Cpu(0.8);
    Ev& e = ev_[open_.back()];
    e.dur = c_ - e.ts;
    if (std::string(e.cat) == "python_function") py_stack_.pop_back();
    open_.pop_back();
    ext_stack_.pop_back();
  }
  // A launch at the CPU cursor and its GPU work; returns the GPU interval.
  std::pair<int64_t, int64_t> Launch(const std::string& gpu_name, double gpu_us,
                                     const char* gpu_cat = "kernel", int64_t bytes = -1,
                                     const char* runtime = nullptr, int stream = 7) {
    if (!runtime) runtime = hw_->amd ? "hipLaunchKernel" : "cudaLaunchKernel";
    int corr = next_corr_++;
    int ext = ext_stack_.empty() ? 0 : ext_stack_.back();
    double launch_us = (hw_->amd ? U(5, 9) : U(3.5, 6.5)) * cpu_scale_;
    const bool aux = stream != 7;
    int64_t start = std::max(aux ? g_aux_ : g_, c_ + Ns(U(2.0, 5.0)));
    if (aux && serial_streams_) start = std::max(start, g_);  // waits for the main stream
    int64_t dur = Ns(gpu_us);
    Push("cuda_runtime", runtime,
         KinetoArgs().Int("External id", ext).Int("cbid", 211).Int("correlation", corr));
    ev_.back().dur = Ns(launch_us);
    Ev flow_s{"ac2g", "ac2g", pid_, tid_, c_, 0, {}, 's', corr};
    KinetoArgs gargs;
    gargs.Int("External id", ext).Int("device", 0).Int("context", 1).Int("stream", stream);
    gargs.Int("correlation", corr);
    if (bytes >= 0) {
      gargs.Int("bytes", bytes).Fixed("memory bandwidth (GB/s)", bytes / std::max<double>(1, dur));
    } else {
      gargs.Int("registers per thread", 64).Int("shared memory", 0);
      gargs.Ints("grid", {hw_->sms * 2, 1, 1}).Ints("block", {256, 1, 1});
    }
    ev_.push_back({gpu_cat, gpu_name, 0, stream, start, dur, gargs});
    ev_.push_back(flow_s);
    ev_.push_back({"ac2g", "ac2g", 0, stream, start, 0, {}, 'f', corr});
    c_ += Ns(launch_us);
    if (aux) {
      g_aux_ = start + dur;
      if (serial_streams_) g_ = std::max(g_, g_aux_);  // and the main stream waits for it
    } else {
      g_ = start + dur;
    }
    return {start, start + dur};
  }
  void Sync() {
    Push("cuda_runtime", hw_->amd ? "hipStreamSynchronize" : "cudaStreamSynchronize",
         KinetoArgs().Int("cbid", 131).Int("correlation", next_corr_++));
    int64_t end = std::max({g_, g_aux_, c_}) + Ns(U(2, 5));
    ev_.back().dur = end - c_;
    c_ = end;
  }
  // aten ops nested in each other, the innermost launching |kernels|.
  template <typename F>
  void Chain(std::initializer_list<const char*> ops, F&& inner) {
    for (const char* op : ops) Begin("cpu_op", op);
    inner();
    for (size_t i = 0; i < ops.size(); ++i) End();
  }
  void Label(SimPattern pattern, int64_t a, int64_t b, int line) {
    SimLabel l;
    l.code = CodeOf(pattern);
    l.start_us = a / 1000;
    l.end_us = (b + 999) / 1000;
    l.file = script_;
    l.line = line;
    labels_.push_back(l);
  }

  // ---- kernel names ----
  std::string MatrixKernel(const char* what, int variant) {
    const std::string tile = variant % 2 ? "128x128" : "256x64";
    if (hw_->amd) {
      if (std::string(what) == "gemm")
        return "Cijk_Alik_Bljk_HHS_BH_MT" + tile + "x32_MI32x32x8x1_SN_1LDSB0_GRVW8_K1";
      return std::string("igemm_") +
             (std::string(what) == "fprop"   ? "fwd"
              : std::string(what) == "dgrad" ? "bwd"
                                             : "wrw") +
             "_gtcx3_nhwc_fp16_bx0_ex1_bt" + tile + "x32_wt32x32x8_ws1x1_wl2x2";
    }
    const std::string w = what;
    if (spec_.hardware == "V100") {
      if (fp32_) {
        if (w == "gemm") return "volta_sgemm_" + tile + "_nn";
        if (w == "fprop") return "volta_scudnn_" + tile + "_relu_interior_nn_v1";
        if (w == "dgrad")
          return "void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int, "
                 "int, float const*, int, float const*, int, float*, kernel_grad_params, unsigned "
                 "long long, int, unsigned long long, int, float, int, int, int)";
        return "void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 8, 3, 3, 5, false, 512>(int, "
               "int, int, float const*, int, float*, float const*, kernel_grad_params, unsigned "
               "long long, int, float, int, int, int, int)";
      }
      if (w == "gemm") return "volta_fp16_h884gemm_fp16_" + tile + "_ldg8_f2f_nn";
      return "volta_h884cudnn_" + tile + "_ldg8_" +
             (w == "fprop" ? "relu_exp_small_nhwc_tn_v1" : w + "_exp_nhwc_v1");
    }
    const std::string sm = spec_.hardware == "H100" ? "sm90" : "sm80";
    if (fp32_) {
      if (w == "gemm")
        return (sm == "sm90" ? std::string("sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize") +
                                   tile + "x32_cublas"
                             : "ampere_sgemm_" + tile + "_nn");
      if (sm == "sm80" && w == "fprop") return "ampere_scudnn_" + tile + "_relu_interior_nn_v1";
      return sm + "_xmma_" + w + "_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize" + tile +
             "x32_stage3_g1_kernel";
    }
    const std::string dt = sm == "sm90" ? "bf16bf16_bf16f32_f32" : "f16f16_f16f32_f32";
    if (w == "gemm")
      return sm == "sm90" ? "sm90_xmma_gemm_" + dt + "_tn_n_tilesize" + tile +
                                "x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
                          : "ampere_fp16_s16816gemm_fp16_" + tile + "_ldg8_f2f_stages_32x5_nn";
    return sm + "_xmma_" + w + "_implicit_gemm_" + dt + "_nhwckrsc_nhwc_tilesize" + tile +
           "x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel";
  }
  std::string Dtype() const {
    return hw_->amd || !fp32_ ? (spec_.hardware == "H100" ? "c10::BFloat16" : "c10::Half")
                              : "float";
  }
  std::string Elementwise(const std::string& functor) {
    return "void at::native::vectorized_elementwise_kernel<4, " + functor +
           ", at::detail::Array<char*, 2> >(int, " + functor + ", at::detail::Array<char*, 2>)";
  }

  // ---- the loop ----
  // The model's forward; |limit| layers only (a recomputation), with the auxiliary-stream work
  // (GPU augmentation / EMA teacher, stream 13) interleaved unless |aux| is false.
  void Forward(size_t limit = SIZE_MAX, bool aux = true) {
    int k = 0;
    int aux_launched = 0;
    for (const auto& layer : layers_) {
      if (static_cast<size_t>(k) >= limit) break;
      if (aux && k % 3 == 1 && aux_launched < 8) {
        ++aux_launched;
        Chain({"aten::mul_"}, [&] {
          auto [a, b] = Launch(Elementwise("at::native::MulFunctor<float>"),
                               KernelUs(60 * width_, false), "kernel", -1, nullptr, 13);
          if (serial_streams_) {
            aux_first_ = std::min(aux_first_, a);
            aux_last_ = std::max(aux_last_, b);
          }
        });
      }
      // Plain copies, not structured bindings: lambdas below capture them (C++17 forbids
      // capturing bindings, which clang enforces).
      const auto type = layer.first;
      const double scale = layer.second;
      ++k;
      switch (type) {
        case Layer::kConv:
          Py("torch/nn/modules/conv.py", 456, "_conv_forward");
          Chain({"aten::conv2d", "aten::convolution", "aten::_convolution",
                 hw_->amd ? "aten::miopen_convolution" : "aten::cudnn_convolution"},
                [&] {
                  Launch(MatrixKernel("fprop", k), KernelUs(BaseUs(type, false) * scale, true));
                });
          End();
          break;
        case Layer::kBn:
          Py("torch/nn/modules/batchnorm.py", 171, "forward");
          Chain({"aten::batch_norm", "aten::_batch_norm_impl_index",
                 hw_->amd ? "aten::miopen_batch_norm" : "aten::cudnn_batch_norm"},
                [&] {
                  Launch(hw_->amd ? "MIOpenBatchNormFwdTrainSpatial"
                                  : "void cudnn::bn_fw_tr_1C11_kernel_NCHW<" + Dtype() +
                                        ", float, 512, true, 1>(cudnnTensorStruct, " + Dtype() +
                                        " const*, cudnnTensorStruct, " + Dtype() +
                                        "*, float const*, float const*, float, float, float*, "
                                        "float*, float*, float*, float, float)",
                         KernelUs(BaseUs(type, false) * scale, false));
                });
          End();
          break;
        case Layer::kRelu:
          Py("torch/nn/modules/activation.py", 101, "forward");
          Chain({"aten::relu_", "aten::clamp_min_"}, [&] {
            Launch(Elementwise(
                       "at::native::(anonymous "
                       "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, "
                       "c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
                       "const::{lambda()#4}::operator()() const::{lambda(" +
                       Dtype() + ")#1}"),
                   KernelUs(BaseUs(type, false) * scale, false));
          });
          End();
          break;
        case Layer::kUpsample:
          Py("torch/nn/functional.py", 4047, "interpolate");
          Chain({"aten::upsample_bilinear2d"}, [&] {
            Launch(
                "void at::native::(anonymous namespace)::upsample_bilinear2d_out_frame<" + Dtype() +
                    ", float>(int, float, float, bool, at::GenericPackedTensorAccessor<" + Dtype() +
                    ", 4ul, at::DefaultPtrTraits, long>, at::GenericPackedTensorAccessor<" +
                    Dtype() + ", 4ul, at::DefaultPtrTraits, long>)",
                KernelUs(BaseUs(type, false) * scale, false));
          });
          End();
          break;
        case Layer::kPool:
          Py("torch/nn/modules/pooling.py", 1194, "forward");
          Chain({"aten::adaptive_avg_pool2d", "aten::mean"}, [&] {
            Launch("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<" + Dtype() +
                       ", at::native::MeanOps<float, float, float, float>, unsigned int, " +
                       Dtype() + ", 4> >(at::native::ReduceOp<" + Dtype() +
                       ", at::native::MeanOps<float, float, float, float>, unsigned int, " +
                       Dtype() + ", 4>)",
                   KernelUs(BaseUs(type, false) * scale, false));
          });
          End();
          break;
        case Layer::kLinear:
          Py("torch/nn/modules/linear.py", 116, "forward");
          Begin("cpu_op", "aten::linear");
          Chain({"aten::t", "aten::transpose", "aten::as_strided"}, [] {});
          Chain({"aten::addmm"}, [&] {
            Launch(MatrixKernel("gemm", k), KernelUs(BaseUs(type, false) * scale, true));
          });
          End();
          End();
          break;
      }
    }
  }

  void Backward(bool accumulate_kernels) {
    tid_ = bwd_tid_;
    int k = static_cast<int>(layers_.size()) + 1;
    for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
      --k;
      auto [type, scale] = *it;
      const char* fn = "ReluBackward0";
      if (type == Layer::kConv)
        fn = hw_->amd ? "MiopenConvolutionBackward0" : "ConvolutionBackward0";
      if (type == Layer::kBn)
        fn = hw_->amd ? "MiopenBatchNormBackward0" : "CudnnBatchNormBackward0";
      if (type == Layer::kUpsample) fn = "UpsampleBilinear2DBackward0";
      if (type == Layer::kPool) fn = "MeanBackward1";
      if (type == Layer::kLinear) fn = "AddmmBackward0";
      Begin("cpu_op", std::string("autograd::engine::evaluate_function: ") + fn);
      Begin("cpu_op", fn);
      double b = BaseUs(type, true) * scale;
      switch (type) {
        case Layer::kConv:
          Chain({"aten::convolution_backward"}, [&] {
            if (k > 1) Launch(MatrixKernel("dgrad", k), KernelUs(b * 0.5, true));
            Launch(MatrixKernel("wgrad", k), KernelUs(b * 0.5, true));
          });
          break;
        case Layer::kBn:
          Chain(
              {hw_->amd ? "aten::miopen_batch_norm_backward" : "aten::cudnn_batch_norm_backward"},
              [&] {
                Launch(
                    hw_->amd
                        ? "MIOpenBatchNormBwdSpatial"
                        : "void cudnn::bn_bw_1C11_kernel_new<" + Dtype() +
                              ", float, float2, 512, true, 1>(" + Dtype() + ", " + Dtype() + ", " +
                              Dtype() + ", " + Dtype() + ", cudnnTensorStruct, " + Dtype() +
                              " const*, cudnnTensorStruct, " + Dtype() +
                              " const*, cudnnTensorStruct, " + Dtype() +
                              "*, float const*, float*, float*, float const*, float const*, float)",
                    KernelUs(b, false));
              });
          break;
        case Layer::kLinear:
          Chain({"aten::mm"}, [&] { Launch(MatrixKernel("gemm", k), KernelUs(b * 0.5, true)); });
          Chain({"aten::mm"},
                [&] { Launch(MatrixKernel("gemm", k + 1), KernelUs(b * 0.5, true)); });
          break;
        default:
          Chain({type == Layer::kRelu   ? "aten::threshold_backward"
                 : type == Layer::kPool ? "aten::div"
                                        : "aten::upsample_bilinear2d_backward"},
                [&] {
                  Launch(Elementwise("at::native::(anonymous namespace)::threshold_kernel_impl<" +
                                     Dtype() + ">(at::TensorIteratorBase&, " + Dtype() + ", " +
                                     Dtype() + ")::{lambda(" + Dtype() + ", " + Dtype() + ")#1}"),
                         KernelUs(b, false));
                });
      }
      End();
      End();
      int np = type == Layer::kConv ? 1 : (type == Layer::kBn || type == Layer::kLinear) ? 2 : 0;
      for (int p = 0; p < np; ++p) {
        Begin("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
        Begin("cpu_op", "torch::autograd::AccumulateGrad");
        if (accumulate_kernels) {
          Chain({"aten::add_"}, [&] {
            Launch(Elementwise("at::native::CUDAFunctor_add<float>"), KernelUs(6, false));
          });
        } else {
          Chain({"aten::detach"}, [] {});
        }
        End();
        End();
      }
    }
    tid_ = main_tid_;
  }

  void Step(int n) {
    Begin("user_annotation", "ProfilerStep#" + std::to_string(n));
    // for batch in loader:
    Py(script_, kLineLoop, "train_one_epoch");
    Py("torch/utils/data/dataloader.py", 631, "__next__");
    Begin("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
    int64_t load_start = ev_[open_.back()].ts;
    Py("torch/utils/data/dataloader.py", 675, "_next_data");
    if (Has(SimPattern::kDataLoader)) {
      const double total = est_step_us_ * (0.15 + 1.35 * sev_);
      Py("torch/utils/data/_utils/fetch.py", 51, "fetch");
      int items = task_->batch;
      for (int i = 0; i < items; ++i) {
        Py("torchvision/transforms/transforms.py", 95, "__call__");
        Cpu(total * 0.9 / items);
        End();
      }
      Chain({"aten::stack", "aten::cat"}, [&] { Cpu(total * 0.05); });
      End();
    } else {
      Cpu(U(20, 60));
    }
    End();
    End();
    int64_t load_end = c_;
    End();
    End();
    if (Has(SimPattern::kDataLoader))
      Label(SimPattern::kDataLoader, load_start, load_end, kLineLoop);
    // images = images.to(device, non_blocking=True)
    Py(script_, kLineTo, "train_one_epoch");
    Chain({"aten::to", "aten::_to_copy", "aten::copy_"}, [&] {
      int64_t bytes = int64_t{task_->batch} * 3 * task_->res * task_->res * 4;
      Launch("Memcpy HtoD (Pinned -> Device)", bytes / (hw_->pcie * 1000.0), "gpu_memcpy", bytes,
             hw_->amd ? "hipMemcpyAsync" : "cudaMemcpyAsync");
    });
    End();
    if (spec_.training) {
      Py(script_, kLineZeroGrad, "train_one_epoch");
      Py("torch/optim/optimizer.py", 803, "zero_grad");
      Begin("user_annotation", "Optimizer.zero_grad#SGD.zero_grad");
      int64_t zg_start = ev_[open_.back()].ts, zg_end = 0;
      if (Has(SimPattern::kZeroGrad)) {
        for (int p = 0; p < params_; ++p) {
          Cpu(4 + 20 * sev_);
          Chain({"aten::zero_", "aten::fill_"}, [&] {
            zg_end =
                Launch(Elementwise("at::native::FillFunctor<float>"), KernelUs(8, false)).second;
          });
        }
      } else {
        Cpu(U(15, 40));
      }
      End();
      End();
      End();
      if (Has(SimPattern::kZeroGrad))
        Label(SimPattern::kZeroGrad, zg_start, std::max(zg_end, c_), kLineZeroGrad);
    }
    // out = model(images)
    Py(script_, kLineForward, "train_one_epoch");
    Py("torch/nn/modules/module.py", 1747, "_call_impl");
    size_t first_gpu = ev_.size();
    aux_first_ = INT64_MAX;
    aux_last_ = 0;
    Forward();
    if (Has(SimPattern::kRecompute)) {  // the same layers run twice (a misplaced checkpoint /
                                        // double call)
      int64_t a = INT64_MAX;
      const size_t before = ev_.size();
      Forward(static_cast<size_t>(std::lround(layers_.size() * (0.3 + 0.7 * sev_))), false);
      for (size_t i = before; i < ev_.size(); ++i) {
        if (ev_[i].pid == 0 && ev_[i].ph == 'X') a = std::min(a, ev_[i].ts);
      }
      if (a != INT64_MAX) Label(SimPattern::kRecompute, a, g_, kLineForward);
    }
    End();
    End();
    if (serial_streams_ && aux_last_ > 0)
      Label(SimPattern::kSerialStreams, aux_first_, aux_last_, kLineForward);
    // out = custom_block(out): a custom kernel in every trace; TTX102 makes it dominate the step.
    Py(script_, kLineCustom, "train_one_epoch");
    Chain({"myops::fused_block"}, [&] {
      const double us = Has(SimPattern::kSlowKernel) ? est_step_us_ * (0.25 + 1.0 * sev_)
                                                     : est_step_us_ * U(0.01, 0.03);
      auto [a, b] = Launch("triton_red_fused_custom_block_0", us);
      if (Has(SimPattern::kSlowKernel)) Label(SimPattern::kSlowKernel, a, b, kLineCustom);
    });
    End();
    Py(script_, kLineLoss, "train_one_epoch");
    Chain({task_->loss}, [&] {
      Chain({"aten::log_softmax", "aten::_log_softmax"}, [&] {
        Launch(
            "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous "
            "namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
            KernelUs(12, false));
      });
      Chain({"aten::nll_loss_nd", "aten::nll_loss_forward"}, [&] {
        Launch(
            "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, "
            "float, long>(float*, float*, float const*, long const*, float const*, bool, long, "
            "long, long, long)",
            KernelUs(8, false));
      });
    });
    End();
    if (Has(SimPattern::kHostSync)) {
      Py(script_, kLineItem, "train_one_epoch");
      int64_t sync_start = 0;
      Chain({"aten::item", "aten::_local_scalar_dense"}, [&] {
        Launch("Memcpy DtoH (Device -> Pageable)", 2.0, "gpu_memcpy", 4,
               hw_->amd ? "hipMemcpyAsync" : "cudaMemcpyAsync");
        sync_start = c_;
        Sync();
      });
      Py("tqdm/std.py", 1196, "update");
      Cpu(est_step_us_ * (0.02 + 0.25 * sev_));
      End();
      End();
      pending_sync_ = sync_start;
    }
    if (spec_.training) {
      Py(script_, kLineBackward, "train_one_epoch");
      Py("torch/_tensor.py", 626, "backward");
      Py("torch/autograd/__init__.py", 347, "backward");
      Py("torch/autograd/graph.py", 823, "_engine_run_backward");
      Cpu(10);
      size_t before = ev_.size();
      Backward(Has(SimPattern::kZeroGrad));
      CloseSyncLabel(before);
      c_ = std::max(c_, g_ - Ns(U(200, 600)));  // the engine returns when its last op is queued
      End();
      End();
      End();
      End();
      // optimizer.step()
      Py(script_, kLineStep, "train_one_epoch");
      Py("torch/optim/optimizer.py", 485, "wrapper");
      Begin("user_annotation", "Optimizer.step#SGD.step");
      int64_t st_start = ev_[open_.back()].ts, st_end = c_;
      Py("torch/optim/sgd.py", 123, "step");
      if (Has(SimPattern::kOptimizer)) {
        Py("torch/optim/sgd.py", 286, "_single_tensor_sgd");
        for (int p = 0; p < params_; ++p) {
          for (const char* op : {"aten::mul_", "aten::add_", "aten::add_"}) {
            Cpu(6 + 30 * sev_);
            Chain({op}, [&] {
              st_end =
                  Launch(
                      Elementwise(std::string("at::native::") +
                                  (op[6] == 'm' ? "MulFunctor<float>" : "CUDAFunctor_add<float>")),
                      KernelUs(7, false))
                      .second;
            });
          }
        }
        End();
      } else {
        Py("torch/optim/sgd.py", 361, "_multi_tensor_sgd");
        for (const char* op :
             {"aten::_foreach_mul_", "aten::_foreach_add_", "aten::_foreach_add_"}) {
          Chain({op}, [&] {
            for (int ch = 0; ch < (params_ + 47) / 48; ++ch) {
              Launch(
                  "void at::native::(anonymous "
                  "namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                  "namespace)::TensorListMetadata<2>, at::native::(anonymous "
                  "namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, "
                  "float>(at::native::(anonymous namespace)::TensorListMetadata<2>, "
                  "at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, "
                  "std::plus<float>, float)",
                  KernelUs(30, false));
            }
          });
        }
        End();
      }
      End();
      End();
      End();
      End();
      if (Has(SimPattern::kOptimizer))
        Label(SimPattern::kOptimizer, st_start, std::max(st_end, c_), kLineStep);
    } else {
      CloseSyncLabel(ev_.size());
      Py(script_, 60, "train_one_epoch");
      Chain({"aten::argmax"}, [&] {
        Launch(
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
            "at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, "
            "at::native::ArgMaxOps<float>, unsigned int, long, 4>)",
            KernelUs(10, false));
      });
      End();
      // The benchmark harness synchronises at the end of each inference step (as the real
      // "synchronize_each_step" traces do), so the CPU never runs steps ahead.
      Py(script_, 61, "evaluate");
      Py("torch/cuda/__init__.py", 954, "synchronize");
      Push("cuda_runtime", hw_->amd ? "hipDeviceSynchronize" : "cudaDeviceSynchronize",
           KinetoArgs().Int("cbid", 165).Int("correlation", next_corr_++));
      {
        int64_t end = std::max({g_, g_aux_, c_}) + Ns(U(3, 8));
        ev_.back().dur = end - c_;
        c_ = end;
      }
      End();
      End();
    }
    if (fp32_) {
      int64_t a = INT64_MAX, b = 0;
      for (size_t i = first_gpu; i < ev_.size(); ++i) {
        const std::string& nm = ev_[i].name;
        if (std::string(ev_[i].cat) == "kernel" &&
            (nm.find("sgemm") != std::string::npos || nm.find("scudnn") != std::string::npos ||
             nm.find("f32f32_f32") != std::string::npos ||
             nm.find("<float, 128") != std::string::npos)) {
          a = std::min(a, ev_[i].ts);
          b = std::max(b, ev_[i].ts + ev_[i].dur);
        }
      }
      if (b > 0) Label(SimPattern::kFp32, a, b, kLineForward);
    }
    Cpu(spec_.training ? 20 : 1);  // inference: prof.step() right after the harness sync
    End();
  }
  // The TTA002 label ends where the GPU resumes: the first GPU event after the sync.
  void CloseSyncLabel(size_t from) {
    if (pending_sync_ < 0) return;
    int64_t resume = -1;
    for (size_t i = from; i < ev_.size(); ++i) {
      if (ev_[i].pid == 0 && ev_[i].ph == 'X') {
        resume = ev_[i].ts;
        break;
      }
    }
    if (resume < 0) resume = c_;
    Label(SimPattern::kHostSync, pending_sync_, resume, kLineItem);
    pending_sync_ = -1;
  }

  std::string Json() const {
    KinetoWriter w;
    w.BeginDocument(KinetoWriter::DeviceList::kInline);
    KinetoDevice d;
    d.id = 0;
    d.name = hw_->gpu_name;
    d.total_global_mem = 85899345920;
    d.compute_major = hw_->major;
    d.compute_minor = hw_->minor;
    d.max_threads_per_block = 1024;
    d.max_threads_per_multiprocessor = 2048;
    d.regs_per_block = 65536;
    d.warp_size = hw_->amd ? 64 : 32;
    d.shared_mem_per_block = 49152;
    d.num_sms = hw_->sms;
    w.Device(d);
    w.DistributedInfo("nccl", 0, 1);
    const int64_t meta_ts = ev_.empty() ? 0 : ev_[0].ts;
    w.Metadata("process_name", pid_, 0, "python", meta_ts);
    w.Metadata("thread_name", pid_, main_tid_, "thread " + std::to_string(main_tid_) + " (python)",
               meta_ts);
    if (spec_.training)
      w.Metadata("thread_name", pid_, bwd_tid_,
                 "thread " + std::to_string(bwd_tid_) + " (pt_autograd_0)", meta_ts);
    w.Metadata("process_name", 0, 0, "GPU 0", meta_ts);
    w.Metadata("thread_name", 0, 7, "stream 7", meta_ts);
    w.Metadata("thread_name", 0, 13, "stream 13", meta_ts);
    for (const Ev& e : ev_) {
      if (e.ph == 'X') {
        w.Complete(e.cat, e.name, e.pid, e.tid, e.ts, e.dur, e.args);
      } else if (e.ph == 's') {
        w.FlowStart(e.id, e.pid, e.tid, e.ts);
      } else {
        w.FlowFinish(e.id, e.pid, e.tid, e.ts);
      }
    }
    w.EndDocument(script_);
    return w.Take();
  }

  SimSpec spec_;
  std::mt19937_64 rng_;
  const Hw* hw_ = nullptr;
  const Task* task_ = nullptr;
  std::vector<std::string> inject_;
  double sev_ = 1;
  bool fp32_ = false;
  std::string script_;
  int pid_, main_tid_, bwd_tid_, tid_;
  int64_t c_, g_, g_aux_ = 0;
  bool serial_streams_ = false;
  double width_ = 1.0;
  double cpu_scale_ = 1.0;
  int64_t aux_first_ = INT64_MAX, aux_last_ = 0;
  std::vector<std::pair<Layer, double>> layers_;
  int params_ = 0;
  double est_step_us_ = 0;
  std::vector<Ev> ev_;
  std::vector<size_t> open_;
  std::vector<int> ext_stack_, py_stack_;
  int next_corr_ = 1, next_ext_ = 1, next_py_ = 1;
  int64_t pending_sync_ = -1;
  std::vector<SimLabel> labels_;
};

}  // namespace

const std::vector<std::string>& SimTasks() {
  static const std::vector<std::string> k = {"classification", "detection", "segmentation",
                                             "pose",           "depth",     "generation"};
  return k;
}
const std::vector<std::string>& SimHardware() {
  static const std::vector<std::string> k = {"V100", "A100", "H100", "MI300"};
  return k;
}

const std::vector<std::string>& SimVariants() {
  static const std::vector<std::string> k = {"resnet", "mobilenet", "convnext", "efficientnet"};
  return k;
}
const std::vector<std::string>& SimUnseenFamilies() {
  static const std::vector<std::string> k = {"TTX101", "TTX102", "TTX103"};
  return k;
}

bool SimCanInject(const SimSpec& spec, const std::string& code) {
  const SimPatternInfo* p = FindSimPattern(code);
  return p && (!p->training_only || spec.training) &&
         (!p->needs_tensor_cores || spec.hardware != "MI300");
}

SimTrace SimulateTrace(const SimSpec& spec) { return Sim(spec).Run(); }

}  // namespace ttap

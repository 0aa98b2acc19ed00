// What a GPU's tensor cores would make of its fp32 matrix kernels: the speed-up per architecture
// and a kernel's time on them. TTA009's detector (rules/tta009_no_tensor_cores.cpp) and its what-if
// (causal/what_if.cpp) share it.
#pragma once

#include <cstdint>
#include <string_view>

namespace ttap {

// TTA009's model of fp32 matrix kernels moved to tensor cores (TF32, or fp16/bf16 autocast).
// How many times faster the GPU's tensor cores run them than its fp32 SIMT pipe: datacenter parts
// (V100, T4, A100/A30, H100/H200/GH200, B200) about 8x; workstation, inference and GeForce parts
// of compute capability 8.6/8.9/12.x (A10, A40, L4, L40, RTX 30/40/50) about 2x; GeForce Turing
// (fp16 with fp32 accumulation) 4x. Measured on an H200 (bench/record/record_calib.py): a 4096^3
// GEMM 2.67 ms fp32, 0.34 ms TF32.
double TensorCoreRatio(int arch, std::string_view device_name);
// A consumer card (GeForce, TITAN): its tensor cores run TF32 no faster than its fp32 pipe, and
// fp16/bf16 with fp32 accumulation at half their datacenter rate.
bool IsGeForceName(std::string_view device_name);
// A kernel of |fp32_ns| on tensor cores: its work |ratio| times faster plus kTensorCoreFloorNs (a
// small GEMM is bound by latency, not arithmetic: 256^3 took 30 us fp32, 19 us TF32), never
// slower than it was.
int64_t TensorCoreNs(int64_t fp32_ns, double ratio);
constexpr int64_t kTensorCoreFloorNs = 15000;

}  // namespace ttap

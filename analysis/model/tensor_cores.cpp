// Tensor-core speed-ups; see tensor_cores.h.
#include "analysis/model/tensor_cores.h"

#include <algorithm>

namespace ttap {

bool IsGeForceName(std::string_view device_name) {
  return device_name.find("GeForce") != std::string_view::npos ||
         device_name.find("TITAN") != std::string_view::npos;
}

double TensorCoreRatio(int arch, std::string_view device_name) {
  if (arch < 70) return 1.0;
  const bool geforce = IsGeForceName(device_name);
  if (arch == 75 && geforce) return 4.0;
  switch (arch) {
    case 70:   // V100
    case 75:   // T4
    case 80:   // A100, A30
    case 90:   // H100, H200, GH200
    case 100:  // B200
    case 103:
      return geforce ? 2.0 : 8.0;
    default:  // 8.6, 8.7, 8.9, 12.x: A10, A40, L4, L40, Orin, RTX 30/40/50
      return 2.0;
  }
}

int64_t TensorCoreNs(int64_t fp32_ns, double ratio) {
  if (ratio <= 1.0) return fp32_ns;
  const int64_t on_tensor_cores = static_cast<int64_t>(fp32_ns / ratio) + kTensorCoreFloorNs;
  return std::min(fp32_ns, on_tensor_cores);
}

}  // namespace ttap

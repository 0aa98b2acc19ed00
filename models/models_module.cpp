// The models module's exported functions; see models_api.h.
#include <torch/torch.h>

#include <cstdio>
#include <string>

#include "models/models_api.h"

extern "C" {

int ttap_models_api_version(void) { return TTAP_MODELS_API_VERSION; }

size_t ttap_models_describe(char* buf, size_t size) {
  std::string d = std::string("libtorch ") + TORCH_VERSION + ", " +
                  (torch::cuda::is_available()
                       ? "CUDA (" + std::to_string(torch::cuda::device_count()) + " devices)"
                       : std::string("CPU")) +
                  ", " + std::to_string(at::get_num_threads()) + " intra-op threads";
  if (buf && size > 0) std::snprintf(buf, size, "%s", d.c_str());
  return d.size();
}

}  // extern "C"

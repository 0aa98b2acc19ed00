// ModelsLibrary: loads the libtorch models module (libttap_models.so, see models/models_api.h)
// with dlopen on first use, so `ttap --version`, `ttap stats` and the LSP's start-up never map
// libtorch. Thread-safe; the module stays loaded for the process's life.
#pragma once

#include <string>

#include "analysis/base/status.h"
#include "models/models_api.h"

namespace ttap {

class ModelsLibrary {
 public:
  // Loads the module once: $TTAP_MODELS_LIB (only it, when set), else libttap_models.so beside the
  // executable, else
  // ../lib/ttap/ relative to it. The error says where it looked and why it failed.
  static StatusOr<const ModelsLibrary*> Get();
  std::string Describe() const;
  const std::string& path() const { return path_; }

  // The window scorer's entry points (models_api.h); server/window_model.h wraps them.
  decltype(&ttap_models_train) train = nullptr;
  decltype(&ttap_models_open) open = nullptr;
  decltype(&ttap_models_header) header = nullptr;
  decltype(&ttap_models_score) score = nullptr;
  decltype(&ttap_models_set_tuning) set_tuning = nullptr;
  decltype(&ttap_models_close) close = nullptr;

 private:
  std::string path_;
  int (*api_version_)() = nullptr;
  size_t (*describe_)(char*, size_t) = nullptr;
};

}  // namespace ttap

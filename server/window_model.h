// WindowModel: the learned window scorer (models/window_model.cpp, reached through the dlopen'ed
// module of server/models_loader.h) as `ttap train`, `ttap eval` and `ttap scan --model` use it:
// open a weights file, score every window of a Trace, and train from labelled traces. The
// featurisation is analysis/window_tensors.h; nothing here includes libtorch.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/status.h"
#include "analysis/trace.h"
#include "analysis/window_tensors.h"

namespace ttap {

class ModelsLibrary;

struct WindowPrediction {
  double score = 0;      // 0..1
  std::string category;  // the category head's code, "" for none
  double confidence = 0;
};

class WindowModel {
 public:
  // |device|: auto, cpu or cuda. Errors name the file and what is wrong with it.
  static StatusOr<std::unique_ptr<WindowModel>> Open(const std::string& path,
                                                     const std::string& device = "auto",
                                                     int threads = 0);
  ~WindowModel();
  // One prediction per Trace::windows entry. Thread-safe (scoring is serialised).
  StatusOr<std::vector<WindowPrediction>> Score(const Trace& trace) const;
  const std::string& path() const { return path_; }
  const std::string& trained_on() const { return trained_on_; }  // JSON text
  const std::vector<std::string>& codes() const { return codes_; }
  const std::string& device() const { return device_; }
  const std::string& config() const { return config_; }
  // The weights file `ttap` uses when none is named: $TTAP_MODEL, else
  // models/ttap-window-scorer.pt beside the executable's parent (the source tree), else
  // ../share/ttap/ttap-window-scorer.pt; "" when none exists.
  static std::string DefaultPath();

 private:
  WindowModel() = default;
  const ModelsLibrary* lib_ = nullptr;
  void* handle_ = nullptr;
  std::string path_, trained_on_, device_, config_;
  std::vector<std::string> codes_;
  mutable std::mutex mu_;
};

// One training trace: its window tensors, label and per-window category (0 none, k = codes[k-1],
// -1 unknown).
struct TrainExample {
  WindowTensors tensors;
  int label = 0;  // 0 clean, 1 anti-patterns, -1 unknown (only the labelled windows teach)
  std::vector<int32_t> categories;
};

struct TrainSettings {
  int epochs = 12;
  uint64_t seed = 1;
  int threads = 2;
  double max_seconds = 1800;
  std::string ablation;  // "", no-names, no-pos, no-relation, max-pool, no-features, no-augment
  std::string device = "auto";
  std::vector<std::string> codes;
  std::string trained_on;  // one-line JSON recorded in the file
};

Status TrainWindowModel(const std::vector<TrainExample>& train,
                        const std::vector<TrainExample>& val, const TrainSettings& settings,
                        const std::string& out_path,
                        const std::function<void(const std::string&)>& progress);

}  // namespace ttap

// WindowModel: the learned window scorer (models/window_model.cpp, reached through the dlopen'ed
// module of server/models_loader.h) as `ttap train`, `ttap eval` and `ttap scan --model` use it:
// open a weights file, score every window of a Trace, and train from labelled traces. The
// featurisation is analysis/model/window_tensors.h; nothing here includes libtorch.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/base/status.h"
#include "analysis/model/trace.h"
#include "analysis/model/window_tensors.h"

namespace ttap {

class ModelsLibrary;

struct WindowPrediction {
  double score = 0;      // 0..1: the noisy-OR of the parts the file's score_parts names
  std::string category;  // the category head's code, "" for none
  double confidence = 0;
  // The score's parts: the MIL head, P(category != none), the unusual-window term.
  double mil = 0, cat = 0, unusual = 0;
};

// Which parts a score_parts text ("mil", "cat", "unusual" joined by '+') names: mil, cat,
// unusual.
std::array<bool, 3> ScorePartsMask(const std::string& parts);
// The noisy-OR of the parts of |p| that |mask| names (what WindowModel::Score returns as score
// for the model's own parts).
double CombineScoreParts(const WindowPrediction& p, const std::array<bool, 3>& mask);

// What `ttap train` chooses on the validation split after training: the window score's parts
// ("mil", "cat", "unusual" joined by '+') and the score that flags a window (TTA900).
struct ScoreTuning {
  std::string parts = "mil+cat+unusual";
  double flag_threshold = 0.8;
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
  // The same from a trace's tensors (analysis/model/window_tensors.h), one prediction per window.
  StatusOr<std::vector<WindowPrediction>> Score(const WindowTensors& tensors) const;
  const std::string& path() const { return path_; }
  const std::string& trained_on() const { return trained_on_; }  // JSON text
  const std::vector<std::string>& codes() const { return codes_; }
  const std::string& device() const { return device_; }
  const std::string& config() const { return config_; }
  const std::string& score_parts() const { return score_parts_; }  // e.g. "mil+cat+unusual"
  // The window score at which `ttap scan` reports a window no rule explains (TTA900): the
  // file's flag_threshold, chosen on validation by `ttap train`; 0.8 for files made before it.
  double flag_threshold() const { return flag_threshold_; }
  // Writes this model to |out_path| with |tuning|'s score parts and flag threshold; the weights
  // are unchanged.
  Status SaveTuned(const ScoreTuning& tuning, const std::string& out_path) const;
  // The weights file `ttap` uses when none is named: $TTAP_MODEL, else
  // models/ttap-window-scorer.pt beside the executable's parent (the source tree), else
  // ../share/ttap/ttap-window-scorer.pt; "" when none exists.
  static std::string DefaultPath();

 private:
  WindowModel() = default;
  const ModelsLibrary* lib_ = nullptr;
  void* handle_ = nullptr;
  std::string path_, trained_on_, device_, config_, score_parts_ = "mil+cat+unusual";
  double flag_threshold_ = 0.8;
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
  std::string ablation;  // "", no-names, no-pos, no-relation, max-pool, no-features, no-augment,
                         // no-absolute
  std::string device = "auto";
  std::vector<std::string> codes;
  std::string trained_on;  // one-line JSON recorded in the file
};

Status TrainWindowModel(const std::vector<TrainExample>& train,
                        const std::vector<TrainExample>& val, const TrainSettings& settings,
                        const std::string& out_path,
                        const std::function<void(const std::string&)>& progress);

}  // namespace ttap

// WindowModel (window_model.h): marshals window tensors across the models module's C ABI.
#include "server/window_model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "models/models_api.h"
#include "server/models_loader.h"

namespace ttap {

namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string ExeDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.find_last_of('/'));
}

ttap_window_batch BatchOf(const WindowTensors& t) {
  ttap_window_batch b;
  b.windows = t.windows;
  b.events = t.events;
  b.tokens = t.tokens;
  b.token_ids = t.token_ids.data();
  b.kinds = t.kinds.data();
  b.numeric = t.numeric.data();
  b.lanes = t.lanes.data();
  b.mask = t.mask.data();
  b.features = t.features;
  b.window_features = t.window_features.empty() ? nullptr : t.window_features.data();
  return b;
}

std::vector<std::string> SplitCodes(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string c;
  while (std::getline(ss, c, ',')) {
    if (!c.empty()) out.push_back(c);
  }
  return out;
}

}  // namespace

std::string WindowModel::DefaultPath() {
  if (const char* env = std::getenv("TTAP_MODEL"); env && *env) return env;
  const std::string exe = ExeDir();
  for (const std::string& p :
       {exe + "/../models/ttap-window-scorer.pt", exe + "/../share/ttap/ttap-window-scorer.pt",
        std::string("models/ttap-window-scorer.pt")}) {
    if (Exists(p)) return p;
  }
  return "";
}

StatusOr<std::unique_ptr<WindowModel>> WindowModel::Open(const std::string& path,
                                                         const std::string& device, int threads) {
  if (path.empty()) {
    return Status::Error(
        "no window-scorer model: name one with --model FILE or TTAP_MODEL (`ttap train` makes "
        "one; the rules work without it)");
  }
  if (!Exists(path)) return Status::Error("model file " + path + " does not exist");
  TTAP_ASSIGN_OR_RETURN(const ModelsLibrary* lib, ModelsLibrary::Get());
  char err[1024] = {};
  void* h = lib->open(path.c_str(), device.c_str(), threads, err, sizeof(err));
  if (!h) return Status::Error(err[0] ? err : "cannot open model " + path);
  std::unique_ptr<WindowModel> m(new WindowModel());
  m->lib_ = lib;
  m->handle_ = h;
  m->path_ = path;
  std::string header(m->lib_->header(h, nullptr, 0) + 1, '\0');
  m->lib_->header(h, &header[0], header.size());
  std::stringstream hs(header.c_str());
  std::string line;
  while (std::getline(hs, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "trained_on") m->trained_on_ = v;
    if (k == "codes") m->codes_ = SplitCodes(v);
    if (k == "device") m->device_ = v;
    if (k == "config") m->config_ = v;
    if (k == "score_parts") m->score_parts_ = v;
    if (k == "flag_threshold") m->flag_threshold_ = std::strtod(v.c_str(), nullptr);
  }
  return m;
}

WindowModel::~WindowModel() {
  if (lib_ && handle_) lib_->close(handle_);
}

StatusOr<std::vector<WindowPrediction>> WindowModel::Score(const Trace& trace) const {
  if (trace.windows.empty()) return std::vector<WindowPrediction>{};
  return Score(BuildWindowTensors(trace));
}

StatusOr<std::vector<WindowPrediction>> WindowModel::Score(const WindowTensors& t) const {
  std::vector<WindowPrediction> out(static_cast<size_t>(std::max(t.windows, 0)));
  if (out.empty()) return out;
  ttap_window_batch b = BatchOf(t);
  std::vector<float> scores(out.size());
  std::vector<int32_t> cats(out.size());
  std::vector<float> conf(out.size());
  std::vector<float> parts(out.size() * TTAP_SCORE_PARTS);
  char err[1024] = {};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lib_->score(handle_, &b, scores.data(), cats.data(), conf.data(), parts.data(), err,
                    sizeof(err)) != 0) {
      return Status::Error(err[0] ? err : "scoring failed");
    }
  }
  for (size_t w = 0; w < out.size(); ++w) {
    out[w].score = scores[w];
    const int32_t k = cats[w];
    if (k > 0 && static_cast<size_t>(k) <= codes_.size()) out[w].category = codes_[k - 1];
    out[w].confidence = conf[w];
    out[w].mil = parts[w * TTAP_SCORE_PARTS];
    out[w].cat = parts[w * TTAP_SCORE_PARTS + 1];
    out[w].unusual = parts[w * TTAP_SCORE_PARTS + 2];
  }
  return out;
}

Status WindowModel::SaveTuned(const ScoreTuning& tuning, const std::string& out_path) const {
  char err[1024] = {};
  std::lock_guard<std::mutex> lock(mu_);
  if (lib_->set_tuning(handle_, tuning.parts.c_str(), tuning.flag_threshold, out_path.c_str(), err,
                       sizeof(err)) != 0) {
    return Status::Error(err[0] ? err : "cannot save the model");
  }
  return Status::Ok();
}

std::array<bool, 3> ScorePartsMask(const std::string& parts) {
  std::array<bool, 3> mask = {false, false, false};
  const char* names[] = {"mil", "cat", "unusual"};
  size_t at = 0;
  while (at <= parts.size()) {
    const size_t end = std::min(parts.find('+', at), parts.size());
    for (size_t k = 0; k < 3; ++k) mask[k] = mask[k] || parts.compare(at, end - at, names[k]) == 0;
    at = end + 1;
  }
  return mask;
}

double CombineScoreParts(const WindowPrediction& p, const std::array<bool, 3>& mask) {
  return 1 - (mask[0] ? 1 - p.mil : 1) * (mask[1] ? 1 - p.cat : 1) * (mask[2] ? 1 - p.unusual : 1);
}

Status TrainWindowModel(const std::vector<TrainExample>& train,
                        const std::vector<TrainExample>& val, const TrainSettings& settings,
                        const std::string& out_path,
                        const std::function<void(const std::string&)>& progress) {
  TTAP_ASSIGN_OR_RETURN(const ModelsLibrary* lib, ModelsLibrary::Get());
  auto examples = [](const std::vector<TrainExample>& xs) {
    std::vector<ttap_train_example> out;
    for (const TrainExample& x : xs) {
      ttap_train_example e;
      e.batch = BatchOf(x.tensors);
      e.trace_label = x.label;
      e.window_category = x.categories.empty() ? nullptr : x.categories.data();
      out.push_back(e);
    }
    return out;
  };
  const std::vector<ttap_train_example> tr = examples(train), va = examples(val);
  std::string codes;
  for (const std::string& c : settings.codes) codes += (codes.empty() ? "" : ",") + c;
  ttap_train_options o;
  o.epochs = settings.epochs;
  o.seed = settings.seed;
  o.threads = settings.threads;
  o.max_seconds = settings.max_seconds;
  o.ablation = settings.ablation.c_str();
  o.codes = codes.c_str();
  o.trained_on = settings.trained_on.c_str();
  o.device = settings.device.c_str();
  o.progress = [](void* ctx, const char* line) {
    (*static_cast<const std::function<void(const std::string&)>*>(ctx))(line);
  };
  o.progress_ctx = const_cast<std::function<void(const std::string&)>*>(&progress);
  char err[1024] = {};
  if (lib->train(tr.data(), static_cast<int>(tr.size()), va.data(), static_cast<int>(va.size()), &o,
                 out_path.c_str(), err, sizeof(err)) != 0) {
    return Status::Error(err[0] ? err : "training failed");
  }
  return Status::Ok();
}

}  // namespace ttap

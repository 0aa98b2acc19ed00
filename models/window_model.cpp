// The TorchTraceAP window scorer in libtorch (C ABI in models_api.h, used through
// server/window_model.h by `ttap train`, `ttap eval` and `ttap scan --model`):
//  - event encoder: hashed name sub-tokens (mean of learned embeddings + adapter), kind, launch
//    delay, duration and depth, d = 128 each, fused into one event vector;
//  - window encoder: a transformer layer over the window's events with a 2D positional encoding
//    (sinusoidal relative launch time, lane = stream/thread embedding), pooled to D = 256;
//  - relation model over the trace's windows: dilated 1D convolutions + multi-head self-attention;
//  - heads: a window anomaly score (trace score = mean of window scores) and a category head.
// Trained with the paper's weakly supervised MIL loss (BCE on the mean + margin between window
// embeddings of clean and anti-pattern traces + clustering of clean embeddings + temporal
// smoothness) plus cross-entropy for categories. After training, k-means centroids of clean
// window embeddings give an "unusual window" term that catches families never trained on.
// Weights are written in a plain tensor format (not torch::save) so any libtorch can read them.
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "models/models_api.h"

namespace {

namespace nn = torch::nn;
using torch::Tensor;

constexpr char kMagic[8] = {'T', 'T', 'A', 'P', 'W', 'S', '0', '1'};
// The window features come in two halves (analysis/model/window_tensors.h, which this module cannot
// include): the 14 of analysis/model/window_features.h, then each minus its median over the trace.
constexpr int64_t kFeatureHalf = 14;

struct Config {
  int64_t vocab = 4096, tokens = 6, kinds = 16, lanes = 16, d = 128, D = 256, heads = 4, codes = 0;
  int64_t features = 0;  // per-window summary features added to the window embedding (0 = none)
  bool names = true, pos = true, relation = true, max_pool = false;
  bool absolute = true;  // the window features' absolute half (false: trace-relative half only)

  std::string Text() const {
    std::ostringstream s;
    s << "vocab:" << vocab << " tokens:" << tokens << " kinds:" << kinds << " lanes:" << lanes
      << " d:" << d << " D:" << D << " heads:" << heads << " codes:" << codes << " names:" << names
      << " pos:" << pos << " relation:" << relation << " max_pool:" << max_pool
      << " features:" << features << " absolute:" << absolute;
    return s.str();
  }
  bool Parse(const std::string& text) {
    std::istringstream s(text);
    std::string item;
    int seen = 0;
    while (s >> item) {
      const size_t colon = item.find(':');
      if (colon == std::string::npos) return false;
      const std::string k = item.substr(0, colon);
      const long long v = std::atoll(item.c_str() + colon + 1);
      std::map<std::string, int64_t*> ints = {
          {"vocab", &vocab}, {"tokens", &tokens}, {"kinds", &kinds},
          {"lanes", &lanes}, {"d", &d},           {"D", &D},
          {"heads", &heads}, {"codes", &codes},   {"features", &features}};
      std::map<std::string, bool*> flags = {{"names", &names},
                                            {"pos", &pos},
                                            {"relation", &relation},
                                            {"max_pool", &max_pool},
                                            {"absolute", &absolute}};
      if (ints.count(k)) {
        *ints[k] = v;
      } else if (flags.count(k)) {
        *flags[k] = v != 0;
      } else {
        return false;
      }
      ++seen;
    }
    // Files written before window features had 12 items (features 0), before `absolute` 13.
    return (seen >= 12 && seen <= 14) && features >= 0 && vocab > 1 && d % 4 == 0 &&
           D % heads == 0 && d % heads == 0;
  }
};

struct ScorerImpl : nn::Module {
  Config c;
  nn::Embedding name_emb{nullptr}, kind_emb{nullptr}, lane_emb{nullptr};
  nn::Linear name_adapter{nullptr}, num_delay{nullptr}, num_dur{nullptr}, num_depth{nullptr},
      fuse{nullptr}, time_proj{nullptr}, to_window{nullptr}, score{nullptr}, category{nullptr},
      feature_proj{nullptr};
  Tensor feature_mean, feature_std;  // standardisation of the window features, set by training
  nn::LayerNorm ln_event{nullptr}, ln_rel1{nullptr}, ln_rel2{nullptr};
  nn::TransformerEncoderLayer encoder{nullptr};
  nn::Conv1d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  nn::MultiheadAttention attention{nullptr};
  Tensor time_freqs;

  explicit ScorerImpl(const Config& cfg) : c(cfg) {
    name_emb = register_module("name_emb",
                               nn::Embedding(nn::EmbeddingOptions(c.vocab, c.d).padding_idx(0)));
    name_adapter = register_module("name_adapter", nn::Linear(c.d, c.d));
    kind_emb = register_module("kind_emb",
                               nn::Embedding(nn::EmbeddingOptions(c.kinds, c.d).padding_idx(0)));
    num_delay = register_module("num_delay", nn::Linear(1, c.d));
    num_dur = register_module("num_dur", nn::Linear(1, c.d));
    num_depth = register_module("num_depth", nn::Linear(1, c.d));
    fuse = register_module("fuse", nn::Linear(5 * c.d, c.d));
    lane_emb = register_module("lane_emb", nn::Embedding(c.lanes, c.d / 2));
    time_proj = register_module("time_proj", nn::Linear(c.d / 2, c.d / 2));
    ln_event = register_module("ln_event", nn::LayerNorm(nn::LayerNormOptions({c.d})));
    encoder = register_module(
        "encoder", nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(c.d, c.heads)
                                                   .dim_feedforward(2 * c.d)
                                                   .dropout(0.1)));
    to_window = register_module("to_window", nn::Linear(c.d, c.D));
    conv1 =
        register_module("conv1", nn::Conv1d(nn::Conv1dOptions(c.D, c.D, 3).padding(1).dilation(1)));
    conv2 =
        register_module("conv2", nn::Conv1d(nn::Conv1dOptions(c.D, c.D, 3).padding(2).dilation(2)));
    conv3 =
        register_module("conv3", nn::Conv1d(nn::Conv1dOptions(c.D, c.D, 3).padding(4).dilation(4)));
    attention = register_module(
        "attention", nn::MultiheadAttention(nn::MultiheadAttentionOptions(c.D, c.heads)));
    ln_rel1 = register_module("ln_rel1", nn::LayerNorm(nn::LayerNormOptions({c.D})));
    ln_rel2 = register_module("ln_rel2", nn::LayerNorm(nn::LayerNormOptions({c.D})));
    score = register_module("score", nn::Linear(c.D, 1));
    category = register_module("category", nn::Linear(c.D, c.codes + 1));
    if (c.features > 0) {
      feature_proj = register_module("feature_proj", nn::Linear(c.features, c.D));
      feature_mean = register_parameter("feature_mean", torch::zeros({c.features}), false);
      feature_std = register_parameter("feature_std", torch::ones({c.features}), false);
    }
    // Frequencies of the sinusoidal time encoding: 1 .. 256 cycles over the window.
    time_freqs = register_buffer(
        "time_freqs", torch::exp(torch::linspace(0.0, std::log(256.0), c.d / 4)) * (2.0 * M_PI));
  }

  struct Out {
    Tensor logits, category_logits, embedding;
  };

  Out forward(const Tensor& tokens, const Tensor& kinds, const Tensor& numeric, const Tensor& lanes,
              const Tensor& mask, const Tensor& features) {
    const int64_t W = tokens.size(0), E = tokens.size(1);
    Tensor name;
    if (c.names) {
      Tensor tm = (tokens > 0).unsqueeze(-1).to(torch::kFloat);
      name = (name_emb(tokens) * tm).sum(2) / tm.sum(2).clamp_min(1.0);
      name = torch::gelu(name_adapter(name));
    } else {
      name = torch::zeros({W, E, c.d}, numeric.options());
    }
    Tensor x =
        fuse(torch::cat({name, kind_emb(kinds), num_delay(numeric.narrow(2, 0, 1)),
                         num_dur(numeric.narrow(2, 1, 1)), num_depth(numeric.narrow(2, 2, 1))},
                        -1));
    if (c.pos) {
      Tensor phase = numeric.narrow(2, 3, 1) * time_freqs;  // [W, E, d/4]
      Tensor time = time_proj(torch::cat({torch::sin(phase), torch::cos(phase)}, -1));
      x = x + torch::cat({time, lane_emb(lanes)}, -1);
    }
    x = ln_event(x);
    // Key padding: true = padding; one position always attends so empty windows stay finite.
    Tensor pad = mask.logical_not().clone();
    pad.select(1, 0).fill_(false);
    Tensor h = encoder(x.transpose(0, 1), Tensor(), pad).transpose(0, 1);  // [W, E, d]
    Tensor m = mask.unsqueeze(-1).to(torch::kFloat);
    Tensor pooled;
    if (c.max_pool) {
      Tensor any = (m.sum(1) > 0).to(torch::kFloat);
      pooled = (h + (m - 1.0) * 1e4).amax(1) * any;
    } else {
      pooled = (h * m).sum(1) / m.sum(1).clamp_min(1.0);
    }
    Tensor e = to_window(pooled);  // [W, D]
    // Standardised features are clipped to +-4 so that a workload far outside the training
    // range (a real trace much larger than any seen) cannot push the scores by extrapolation.
    if (c.features > 0) {
      Tensor z = ((features - feature_mean) / feature_std).clamp(-4.0, 4.0);
      // `--ablation no-absolute`: only the trace-relative half (each feature minus its trace
      // median) speaks; the absolute levels, which differ from workload to workload, are zero.
      if (!c.absolute && z.size(1) == 2 * kFeatureHalf) {
        z = torch::cat({torch::zeros_like(z.narrow(1, 0, kFeatureHalf)),
                        z.narrow(1, kFeatureHalf, kFeatureHalf)},
                       1);
      }
      e = e + feature_proj(z);
    }
    if (c.relation) {
      Tensor seq = e.t().unsqueeze(0);  // [1, D, W]
      Tensor r = conv3(torch::gelu(conv2(torch::gelu(conv1(seq)))));
      Tensor y = ln_rel1(e + r.squeeze(0).t());
      Tensor q = y.unsqueeze(1);  // [W, 1, D]
      Tensor att = std::get<0>(attention(q, q, q, Tensor(), false));
      e = ln_rel2(y + att.squeeze(1));
    }
    return {score(e).squeeze(-1), category(e), e};
  }
};
TORCH_MODULE(Scorer);

void SetError(char* err, size_t size, const std::string& message) {
  if (err && size > 0) std::snprintf(err, size, "%s", message.c_str());
}

struct Batch {
  Tensor tokens, kinds, numeric, lanes, mask, features;  // features: [W, F], or [W, 0]
  Batch To(const torch::Device& d) const {
    return {tokens.to(d), kinds.to(d), numeric.to(d), lanes.to(d), mask.to(d), features.to(d)};
  }
};

Batch ToTensors(const ttap_window_batch& b) {
  const int64_t W = b.windows, E = b.events, T = b.tokens;
  auto i32 = torch::TensorOptions().dtype(torch::kInt32);
  Batch t;
  // from_blob views the caller's arrays; the conversions copy once into tensor storage.
  t.tokens = torch::from_blob(const_cast<int32_t*>(b.token_ids), {W, E, T}, i32).to(torch::kLong);
  t.kinds = torch::from_blob(const_cast<int32_t*>(b.kinds), {W, E}, i32).to(torch::kLong);
  t.numeric = torch::from_blob(const_cast<float*>(b.numeric), {W, E, 4}, torch::kFloat).clone();
  t.lanes = torch::from_blob(const_cast<int32_t*>(b.lanes), {W, E}, i32).to(torch::kLong);
  t.mask = torch::from_blob(const_cast<uint8_t*>(b.mask), {W, E}, torch::kUInt8).to(torch::kBool);
  t.features =
      b.features > 0 && b.window_features
          ? torch::from_blob(const_cast<float*>(b.window_features), {W, b.features}, torch::kFloat)
                .clone()
          : torch::zeros({W, 0});
  return t;
}

bool ValidBatch(const ttap_window_batch& b, const Config& c, std::string* why) {
  if (b.windows < 1 || b.events < 1 || b.tokens != c.tokens) {
    *why = "window batch shape " + std::to_string(b.windows) + "x" + std::to_string(b.events) +
           "x" + std::to_string(b.tokens) + " does not fit the model (tokens " +
           std::to_string(c.tokens) + ")";
    return false;
  }
  if (!b.token_ids || !b.kinds || !b.numeric || !b.lanes || !b.mask) {
    *why = "window batch without data";
    return false;
  }
  // More features than the model reads is fine (newer inputs, older weights: the leading ones).
  if (c.features > 0 && (b.features < c.features || !b.window_features)) {
    *why = "window batch has " + std::to_string(b.features) + " window features, the model " +
           std::to_string(c.features);
    return false;
  }
  return true;
}

// Fits a batch to the model: clamps ids into the embedding ranges (inputs built for another
// vocabulary stay in range) and keeps the leading window features the model was trained on.
void FitToConfig(Batch* b, const Config& c) {
  b->tokens.clamp_(0, c.vocab - 1);
  b->kinds.clamp_(0, c.kinds - 1);
  b->lanes.clamp_(0, c.lanes - 1);
  if (c.features > 0 && b->features.size(1) > c.features) {
    b->features = b->features.narrow(1, 0, c.features).contiguous();
  }
}

// Training-time augmentation: the trace's launch delays and durations each rescaled by one random
// factor (e^N(0, 0.4): another GPU or host speed), and 10% of the name sub-tokens dropped (names
// a new workload would not share), so that the scorer leans on the structure of a window rather
// than on one workload's names and speeds. `--ablation no-augment` turns it off.
Batch Augment(const Batch& b, std::mt19937_64* rng) {
  std::normal_distribution<double> log_scale(0.0, 0.4);
  Batch a = b;
  a.numeric = b.numeric.clone();
  a.features = b.features.clone();
  auto rescale = [](Tensor x, double factor) {
    x.copy_(torch::log1p(torch::expm1(x).clamp_min(0) * factor));
  };
  // Event channels 0 log1p(delay us) and 1 log1p(duration us); the window features that are
  // logs of the same (analysis/model/window_features.h: 5 launch delay; 3, 4 kernel durations).
  const double delay = std::exp(log_scale(*rng)), duration = std::exp(log_scale(*rng));
  rescale(a.numeric.select(2, 0), delay);
  rescale(a.numeric.select(2, 1), duration);
  if (a.features.size(1) >= 6) {
    rescale(a.features.select(1, 5), delay);
    rescale(a.features.select(1, 3), duration);
    rescale(a.features.select(1, 4), duration);
  }
  // Their trace-relative copies (columns kFeatureHalf + j: the feature minus its median over the
  // trace's windows) follow the rescaled values.
  if (a.features.size(1) == 2 * kFeatureHalf && a.features.size(0) > 0) {
    const int64_t mid = a.features.size(0) / 2 + 1;  // the upper median, as window_tensors.cpp
    for (int64_t j : {3, 4, 5}) {
      Tensor column = a.features.select(1, j);
      a.features.select(1, kFeatureHalf + j).copy_(column - std::get<0>(column.kthvalue(mid)));
    }
  }
  Tensor keep =
      torch::rand(b.tokens.sizes(), torch::TensorOptions().device(b.tokens.device())) >= 0.1;
  a.tokens = b.tokens * keep.to(torch::kLong);
  return a;
}

torch::Device PickDevice(const std::string& want, std::string* why, bool* ok) {
  *ok = true;
  if (want == "cuda") {
    if (!torch::cuda::is_available()) {
      *ok = false;
      *why = "--device cuda: this libtorch has no CUDA or no GPU is visible";
    }
    return torch::Device(torch::kCUDA);
  }
  if (want == "auto" && torch::cuda::is_available()) return torch::Device(torch::kCUDA);
  if (want != "auto" && want != "cpu") {
    *ok = false;
    *why = "unknown device '" + want + "' (auto, cpu, cuda)";
  }
  return torch::Device(torch::kCPU);
}

double Auc(const std::vector<float>& s, const std::vector<int>& y) {
  std::vector<std::pair<float, int>> v;
  for (size_t i = 0; i < s.size(); ++i) v.push_back({s[i], y[i]});
  std::sort(v.begin(), v.end());
  double rank_sum = 0, pos = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j < v.size() && v[j].first == v[i].first) ++j;
    const double avg = (static_cast<double>(i + j - 1) / 2.0) + 1.0;
    for (size_t k = i; k < j; ++k) {
      if (v[k].second) {
        rank_sum += avg;
        pos += 1;
      }
    }
    i = j;
  }
  const double neg = static_cast<double>(v.size()) - pos;
  if (pos == 0 || neg == 0) return std::nan("");
  return (rank_sum - pos * (pos + 1) / 2.0) / (pos * neg);
}

// The loaded or trained model with its unusual-window statistics.
struct Model {
  Config config;
  Scorer net{nullptr};
  Tensor centroids;        // [k, D] of normalised clean window embeddings
  double threshold = 1.0;  // 99th percentile of clean distances
  std::string codes, trained_on;
  std::string score_parts = "mil+cat+unusual";  // chosen on validation by training
  double flag_threshold = 0.8;  // window score for TTA900; chosen on validation by training
  torch::Device device{torch::kCPU};

  // Window scores: the noisy-OR of the parts |score_parts| names -- the MIL head, the category
  // head's P(some catalogue code), and the distance to the clean centroids ("unusual", so that
  // windows unlike any clean window score high even for unseen families). |parts| gets all three
  // ([W, 3]) for callers that combine them otherwise.
  void Score(const Batch& b, Tensor* scores, Tensor* categories, Tensor* conf,
             Tensor* parts = nullptr) {
    auto out = net->forward(b.tokens, b.kinds, b.numeric, b.lanes, b.mask, b.features);
    Tensor probs = torch::softmax(out.category_logits, -1);
    Tensor all = torch::stack(
        {torch::sigmoid(out.logits), 1 - probs.select(-1, 0), Unusual(out.embedding)}, -1);
    *scores = Combine(all, score_parts);
    if (parts) *parts = all;
    auto [c, k] = probs.max(-1);
    *categories = k;
    *conf = c;
  }
  // Noisy-OR of the parts of |all| ([W, 3]: mil, cat, unusual) that |use| names.
  static Tensor Combine(const Tensor& all, const std::string& use) {
    std::array<bool, 3> mask;
    ParseParts(use, &mask);
    Tensor keep = torch::ones({all.size(0)}, all.options());
    for (int i = 0; i < 3; ++i) {
      if (mask[static_cast<size_t>(i)]) keep = keep * (1 - all.select(-1, i));
    }
    return 1 - keep;
  }
  // The parts |use| names ("mil", "cat", "unusual" joined by '+') as a mask over [mil, cat,
  // unusual]; false when it is empty or names anything else.
  static bool ParseParts(const std::string& use, std::array<bool, 3>* mask) {
    static const std::string kNames[] = {"mil", "cat", "unusual"};
    *mask = {false, false, false};
    if (use.empty()) return false;
    size_t at = 0;
    while (at <= use.size()) {
      const size_t end = std::min(use.find('+', at), use.size());
      const auto it = std::find(std::begin(kNames), std::end(kNames), use.substr(at, end - at));
      if (it == std::end(kNames)) return false;
      (*mask)[static_cast<size_t>(it - std::begin(kNames))] = true;
      at = end + 1;
    }
    return true;
  }
  static bool ValidParts(const std::string& use) {
    std::array<bool, 3> mask;
    return ParseParts(use, &mask);
  }
  Tensor Unusual(const Tensor& embedding) const {
    if (!centroids.defined() || centroids.size(0) == 0)
      return torch::zeros({embedding.size(0)}, embedding.options());
    Tensor e = torch::nn::functional::normalize(
        embedding, torch::nn::functional::NormalizeFuncOptions().dim(-1));
    Tensor d = torch::cdist(e, centroids.to(e.device())).amin(-1);
    const double t = std::max(threshold, 1e-6);
    // r / (1 + r) of the distance ratio r = d / t: 0.5 at the clean 99th percentile, and it never
    // saturates, so windows of an unfamiliar workload (all far from the centroids) keep their
    // order instead of tying at 1.0 in float.
    const Tensor r = d / t;
    return r / (1 + r);
  }

  std::string Header(const std::string& parts, double flag) const {
    return "format=1\nconfig=" + config.Text() + "\ncodes=" + codes +
           "\nthreshold=" + std::to_string(threshold) + "\nscore_parts=" + parts +
           "\nflag_threshold=" + std::to_string(flag) + "\ntrained_on=" + trained_on + "\n";
  }
  std::string Header() const { return Header(score_parts, flag_threshold); }

  // Writes the file with the window score made of |parts| (this model's own by default) to a
  // temporary beside |path|, then renames it over |path|: a failed write leaves the old file.
  bool Save(const std::string& path, std::string* why) const {
    return Save(path, score_parts, flag_threshold, why);
  }
  bool Save(const std::string& path, const std::string& parts, double flag,
            std::string* why) const {
    const std::string tmp = path + ".tmp";
    if (!WriteFile(tmp, parts, flag, why)) {
      std::remove(tmp.c_str());
      return false;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      *why = "cannot write " + path + ": " + std::strerror(errno);
      std::remove(tmp.c_str());
      return false;
    }
    return true;
  }
  bool WriteFile(const std::string& path, const std::string& parts, double flag,
                 std::string* why) const {
    std::ofstream f(path, std::ios::binary);
    if (!f) {
      *why = "cannot write " + path + ": " + std::strerror(errno);
      return false;
    }
    const std::string header = Header(parts, flag);
    f.write(kMagic, 8);
    uint32_t n = static_cast<uint32_t>(header.size());
    f.write(reinterpret_cast<const char*>(&n), 4);
    f.write(header.data(), n);
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const auto& p : net->named_parameters()) tensors.push_back({p.key(), p.value()});
    for (const auto& p : net->named_buffers()) tensors.push_back({p.key(), p.value()});
    tensors.push_back({"unusual.centroids", centroids});
    uint32_t count = static_cast<uint32_t>(tensors.size());
    f.write(reinterpret_cast<const char*>(&count), 4);
    for (const auto& [name, value] : tensors) {
      Tensor t = value.detach().to(torch::kCPU).to(torch::kFloat).contiguous();
      uint32_t len = static_cast<uint32_t>(name.size());
      f.write(reinterpret_cast<const char*>(&len), 4);
      f.write(name.data(), len);
      uint32_t dims = static_cast<uint32_t>(t.dim());
      f.write(reinterpret_cast<const char*>(&dims), 4);
      for (int64_t s : t.sizes()) f.write(reinterpret_cast<const char*>(&s), 8);
      f.write(reinterpret_cast<const char*>(t.data_ptr<float>()),
              static_cast<std::streamsize>(t.numel() * 4));
    }
    f.close();
    if (!f) {
      *why = "cannot write " + path + ": " + std::strerror(errno);
      return false;
    }
    return true;
  }

  static std::unique_ptr<Model> Load(const std::string& path, std::string* why) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      *why = "cannot open model file " + path + ": " + std::strerror(errno);
      return nullptr;
    }
    char magic[8] = {};
    f.read(magic, 8);
    if (!f || std::memcmp(magic, kMagic, 8) != 0) {
      *why = path + " is not a ttap window-scorer file (bad magic)";
      return nullptr;
    }
    auto fail = [&](const std::string& what) {
      *why = path + " is corrupt or truncated: " + what;
      return nullptr;
    };
    uint32_t n = 0;
    f.read(reinterpret_cast<char*>(&n), 4);
    if (!f || n > (1u << 20)) return fail("header");
    std::string header(n, '\0');
    f.read(header.data(), n);
    if (!f) return fail("header");
    auto model = std::make_unique<Model>();
    std::istringstream hs(header);
    std::string line;
    bool have_config = false;
    while (std::getline(hs, line)) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
      if (k == "config") have_config = model->config.Parse(v);
      if (k == "codes") model->codes = v;
      if (k == "threshold") model->threshold = std::atof(v.c_str());
      if (k == "trained_on") model->trained_on = v;
      if (k == "score_parts") {
        if (!ValidParts(v)) return fail("score_parts line");
        model->score_parts = v;
      }
      if (k == "flag_threshold") {
        char* end = nullptr;
        const double t = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || !(t > 0 && t <= 1)) return fail("flag_threshold line");
        model->flag_threshold = t;
      }
    }
    if (!have_config) return fail("config line");
    model->net = Scorer(model->config);
    std::map<std::string, Tensor> slots;
    for (auto& p : model->net->named_parameters()) slots[p.key()] = p.value();
    for (auto& p : model->net->named_buffers()) slots[p.key()] = p.value();
    uint32_t count = 0;
    f.read(reinterpret_cast<char*>(&count), 4);
    if (!f || count > 10000) return fail("tensor count");
    size_t filled = 0;
    torch::NoGradGuard no_grad;
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t len = 0, dims = 0;
      f.read(reinterpret_cast<char*>(&len), 4);
      if (!f || len > 4096) return fail("tensor name");
      std::string name(len, '\0');
      f.read(name.data(), len);
      f.read(reinterpret_cast<char*>(&dims), 4);
      if (!f || dims > 8) return fail("tensor " + name);
      std::vector<int64_t> shape(dims);
      int64_t numel = 1;
      for (auto& s : shape) {
        f.read(reinterpret_cast<char*>(&s), 8);
        if (!f || s < 0 || s > (int64_t{1} << 28)) return fail("tensor " + name);
        numel *= s;
      }
      if (numel > (int64_t{1} << 28)) return fail("tensor " + name);
      Tensor t = torch::empty(shape, torch::kFloat);
      f.read(reinterpret_cast<char*>(t.data_ptr<float>()), static_cast<std::streamsize>(numel * 4));
      if (!f) return fail("tensor " + name);
      if (name == "unusual.centroids") {
        model->centroids = t;
        continue;
      }
      auto it = slots.find(name);
      if (it == slots.end() || it->second.sizes() != t.sizes()) {
        return fail("tensor " + name + " does not match the model");
      }
      it->second.copy_(t);
      ++filled;
    }
    if (filled != slots.size()) return fail("missing tensors");
    model->net->eval();
    return model;
  }
};

struct Example {
  Batch batch;
  int label;
  Tensor categories;  // [W] long, -1 unknown
};

}  // namespace

extern "C" {

int ttap_models_train(const ttap_train_example* train, int n_train, const ttap_train_example* val,
                      int n_val, const ttap_train_options* o, const char* out_path, char* err,
                      size_t err_size) {
  try {
    if (!train || n_train < 2 || !o || !out_path) {
      SetError(err, err_size, "need at least two training traces");
      return 1;
    }
    auto say = [&](const std::string& line) {
      if (o->progress) o->progress(o->progress_ctx, line.c_str());
    };
    if (o->threads > 0) at::set_num_threads(o->threads);
    torch::manual_seed(o->seed);
    std::string why;
    bool ok = true;
    const torch::Device device = PickDevice(o->device ? o->device : "auto", &why, &ok);
    if (!ok) {
      SetError(err, err_size, why);
      return 1;
    }
    Model model;
    model.device = device;
    model.codes = o->codes ? o->codes : "";
    model.trained_on = o->trained_on ? o->trained_on : "{}";
    model.config.tokens = train[0].batch.tokens;
    model.config.codes =
        model.codes.empty()
            ? 0
            : 1 + static_cast<int64_t>(std::count(model.codes.begin(), model.codes.end(), ','));
    const std::string ablation = o->ablation ? o->ablation : "";
    static const char* const kAblations[] = {
        "",         "no-names",    "no-pos",     "no-relation",
        "max-pool", "no-features", "no-augment", "no-absolute"};
    if (std::find(std::begin(kAblations), std::end(kAblations), ablation) == std::end(kAblations)) {
      SetError(err, err_size, "unknown ablation '" + ablation + "'");
      return 1;
    }
    model.config.names = ablation != "no-names";
    model.config.pos = ablation != "no-pos";
    model.config.relation = ablation != "no-relation";
    model.config.max_pool = ablation == "max-pool";
    model.config.absolute = ablation != "no-absolute";
    model.config.features = ablation == "no-features" ? 0 : train[0].batch.features;
    const bool augment = ablation != "no-augment";
    model.net = Scorer(model.config);
    model.net->to(device);
    auto load = [&](const ttap_train_example* xs, int n, std::vector<Example>* out) -> bool {
      for (int i = 0; i < n; ++i) {
        if (!ValidBatch(xs[i].batch, model.config, &why)) return false;
        Example e;
        e.batch = ToTensors(xs[i].batch);
        FitToConfig(&e.batch, model.config);
        e.batch = e.batch.To(device);
        e.label = xs[i].trace_label < 0 ? -1 : xs[i].trace_label ? 1 : 0;
        std::vector<int64_t> cats(static_cast<size_t>(xs[i].batch.windows), -1);
        if (xs[i].window_category) {
          for (int w = 0; w < xs[i].batch.windows; ++w) {
            const int32_t k = xs[i].window_category[w];
            cats[static_cast<size_t>(w)] = k >= 0 && k <= model.config.codes ? k : -1;
          }
        }
        e.categories = torch::tensor(cats, torch::kLong).to(device);
        out->push_back(std::move(e));
      }
      return true;
    };
    std::vector<Example> train_set, val_set;
    if (!load(train, n_train, &train_set) || !load(val, n_val, &val_set)) {
      SetError(err, err_size, why);
      return 1;
    }
    if (model.config.features > 0) {  // standardise the window features over the train windows
      std::vector<Tensor> rows;
      for (const Example& e : train_set) rows.push_back(e.batch.features.to(torch::kCPU));
      Tensor all = torch::cat(rows, 0);
      torch::NoGradGuard no_grad;
      model.net->feature_mean.copy_(all.mean(0));
      model.net->feature_std.copy_(all.std(0).clamp_min(1e-3));
    }
    std::vector<Tensor> trainable;
    for (const auto& p : model.net->parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    torch::optim::Adam opt(trainable, torch::optim::AdamOptions(1e-3).weight_decay(1e-5));
    Tensor centre = torch::zeros({model.config.D}, torch::TensorOptions().device(device));
    bool centre_set = false;
    std::mt19937_64 rng(o->seed);
    const auto t0 = std::chrono::steady_clock::now();
    double best = -1;
    std::vector<Tensor> best_state;
    const int epochs = std::max(1, o->epochs);
    auto normalize = [](const Tensor& e) {
      return torch::nn::functional::normalize(
          e, torch::nn::functional::NormalizeFuncOptions().dim(-1));
    };
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      model.net->train();
      std::vector<size_t> order(train_set.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      double total = 0, bce_sum = 0;
      int accumulated = 0;
      size_t step = 0;
      opt.zero_grad();
      for (size_t i : order) {
        const Example& ex = train_set[i];
        const Batch in = augment ? Augment(ex.batch, &rng) : ex.batch;
        auto out =
            model.net->forward(in.tokens, in.kinds, in.numeric, in.lanes, in.mask, in.features);
        Tensor s = torch::sigmoid(out.logits);
        Tensor trace_score = s.mean().clamp(1e-6, 1 - 1e-6);
        // Label -1: the trace's own label is unknown (its real base already had anti-patterns:
        // what the rules found there is labelled, window by window). Its labelled windows teach
        // through the category head, and the windows no labelled interval touches form a clean
        // bag: the mean of their scores is pushed to 0 as a clean trace's would be. (Without the
        // bag the MIL head never saw a real workload's clean windows and scored every window of
        // an unfamiliar real trace near 1.)
        Tensor y = torch::full({}, static_cast<float>(std::max(ex.label, 0)), s.options());
        Tensor bce = torch::zeros({}, s.options());
        if (ex.label >= 0) {
          bce = torch::binary_cross_entropy(trace_score, y);
        } else {
          Tensor clean = ex.categories == 0;
          if (clean.any().item<bool>()) {
            Tensor bag = s.masked_select(clean).mean().clamp(1e-6, 1 - 1e-6);
            bce = torch::binary_cross_entropy(bag, torch::zeros({}, s.options()));
          }
        }
        Tensor loss = bce;
        Tensor en = normalize(out.embedding);
        if (ex.label == 0) {
          // Clustering: clean windows gather around the clean centre.
          Tensor mean = en.mean(0).detach();
          centre = centre_set ? 0.9 * centre + 0.1 * mean : mean;
          centre_set = true;
          loss = loss + 0.1 * (en - centre).pow(2).sum(-1).mean();
        } else if (ex.label == 1 && centre_set) {
          // Separation: the highest-scored windows of an anti-pattern trace keep a margin from it.
          const int64_t k = std::max<int64_t>(1, s.size(0) / 10);
          Tensor top = std::get<1>(s.topk(k));
          Tensor dist = (en.index_select(0, top) - centre).norm(2, -1);
          loss = loss + 0.1 * torch::relu(0.8 - dist).mean();
        }
        if (s.size(0) > 1) {  // temporal smoothness of adjacent window scores
          loss = loss + 0.05 * (s.slice(0, 1) - s.slice(0, 0, s.size(0) - 1)).pow(2).mean();
        }
        if ((ex.categories >= 0).any().item<bool>()) {
          loss =
              loss + 0.5 * torch::nn::functional::cross_entropy(
                               out.category_logits, ex.categories,
                               torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-1));
        }
        // Gradients of 4 traces per step; the learning rate decays linearly to 10%.
        (loss / 4.0).backward();
        if (++accumulated == 4) {
          const double progress =
              (static_cast<double>(epoch - 1) * static_cast<double>(order.size()) +
               static_cast<double>(step)) /
              (static_cast<double>(epochs) * static_cast<double>(order.size()));
          for (auto& group : opt.param_groups()) {
            static_cast<torch::optim::AdamOptions&>(group.options())
                .lr(2e-3 * (1.0 - 0.9 * progress));
          }
          torch::nn::utils::clip_grad_norm_(trainable, 1.0);
          opt.step();
          opt.zero_grad();
          accumulated = 0;
        }
        ++step;
        total += loss.item<double>();
        bce_sum += bce.item<double>();
      }
      if (accumulated > 0) {
        torch::nn::utils::clip_grad_norm_(trainable, 1.0);
        opt.step();
        opt.zero_grad();
      }
      // Validation: trace AUC of the mean window score, and window AUC against labelled windows.
      model.net->eval();
      std::vector<float> ts, ws;
      std::vector<int> tl, wl;
      {
        torch::NoGradGuard no_grad;
        for (const Example& ex : val_set) {
          auto out = model.net->forward(ex.batch.tokens, ex.batch.kinds, ex.batch.numeric,
                                        ex.batch.lanes, ex.batch.mask, ex.batch.features);
          // MIL head + category head (the unusual-window term is fitted after training, and
          // the score's parts are chosen after it, by the caller).
          Tensor named = 1 - torch::softmax(out.category_logits, -1).select(-1, 0);
          Tensor s = (1 - (1 - torch::sigmoid(out.logits)) * (1 - named)).to(torch::kCPU);
          if (ex.label >= 0) {
            ts.push_back(s.mean().item<float>());
            tl.push_back(ex.label);
          }
          Tensor cats = ex.categories.to(torch::kCPU);
          for (int64_t w = 0; w < s.size(0); ++w) {
            const int64_t k = cats[w].item<int64_t>();
            if (k < 0) continue;
            ws.push_back(s[w].item<float>());
            wl.push_back(k > 0 ? 1 : 0);
          }
        }
      }
      const double trace_auc = val_set.empty() ? std::nan("") : Auc(ts, tl);
      const double window_auc = val_set.empty() ? std::nan("") : Auc(ws, wl);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char line[256];
      std::snprintf(
          line, sizeof(line),
          "epoch %d/%d: loss %.4f (bce %.4f), val trace AUC %.3f, val window AUC %.3f, %.0f s",
          epoch, epochs, total / static_cast<double>(train_set.size()),
          bce_sum / static_cast<double>(train_set.size()), trace_auc, window_auc, secs);
      say(line);
      const double quality =
          (std::isnan(trace_auc) ? 0 : trace_auc) + (std::isnan(window_auc) ? 0 : window_auc);
      if (quality > best || best_state.empty()) {
        best = quality;
        best_state.clear();
        for (const auto& p : model.net->parameters()) best_state.push_back(p.detach().clone());
      }
      // Stop when another epoch (as long as the mean one so far) would pass the time limit.
      if (o->max_seconds > 0 && epoch < epochs &&
          secs + secs / static_cast<double>(epoch) > o->max_seconds) {
        say("time limit: stopping after epoch " + std::to_string(epoch));
        break;
      }
    }
    {
      torch::NoGradGuard no_grad;
      auto params = model.net->parameters();
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(best_state[i]);
    }
    // Unusual-window statistics: k-means (k = 8) of the training windows known to hold nothing:
    // every window of a clean trace, and the windows of an unlabelled real-base trace that no
    // labelled interval touches (the clean bag), so that a real workload's ordinary windows are
    // not "unusual" merely for being unlike the simulated ones.
    model.net->eval();
    {
      torch::NoGradGuard no_grad;
      std::vector<Tensor> clean;
      for (const Example& ex : train_set) {
        if (ex.label != 0 && ex.label != -1) continue;
        auto out = model.net->forward(ex.batch.tokens, ex.batch.kinds, ex.batch.numeric,
                                      ex.batch.lanes, ex.batch.mask, ex.batch.features);
        Tensor e = normalize(out.embedding);
        if (ex.label == -1) {
          e = e.index({ex.categories == 0});
          if (e.size(0) == 0) continue;
        }
        clean.push_back(e.to(torch::kCPU));
      }
      if (!clean.empty()) {
        Tensor x = torch::cat(clean, 0);
        const int64_t k = std::min<int64_t>(8, x.size(0));
        Tensor c =
            x.index_select(
                 0, torch::linspace(0, static_cast<double>(x.size(0) - 1), k).to(torch::kLong))
                .clone();
        for (int it = 0; it < 25; ++it) {
          Tensor assign = torch::cdist(x, c).argmin(-1);
          for (int64_t j = 0; j < k; ++j) {
            Tensor members = x.index({assign == j});
            if (members.size(0) > 0) c[j] = members.mean(0);
          }
        }
        model.centroids = c;
        Tensor d = torch::cdist(x, c).amin(-1);
        model.threshold =
            std::get<0>(d.sort())
                .index({static_cast<int64_t>(0.99 * static_cast<double>(d.size(0) - 1))})
                .item<double>();
      }
    }
    if (!model.Save(out_path, &why)) {
      SetError(err, err_size, why);
      return 1;
    }
    say(std::string("wrote ") + out_path);
    return 0;
  } catch (const std::exception& e) {
    SetError(err, err_size, std::string("training failed: ") + e.what());
    return 1;
  }
}

void* ttap_models_open(const char* path, const char* device, int threads, char* err,
                       size_t err_size) {
  try {
    if (threads > 0) at::set_num_threads(threads);
    std::string why;
    auto model = Model::Load(path ? path : "", &why);
    if (!model) {
      SetError(err, err_size, why);
      return nullptr;
    }
    bool ok = true;
    model->device = PickDevice(device ? device : "auto", &why, &ok);
    if (!ok) {
      SetError(err, err_size, why);
      return nullptr;
    }
    model->net->to(model->device);
    return model.release();
  } catch (const std::exception& e) {
    SetError(err, err_size, std::string("cannot load the model: ") + e.what());
    return nullptr;
  }
}

size_t ttap_models_header(void* handle, char* buf, size_t size) {
  if (!handle) return 0;
  const Model* m = static_cast<const Model*>(handle);
  const std::string h = m->Header() + "device=" + (m->device.is_cuda() ? "cuda" : "cpu") + "\n";
  if (buf && size > 0) std::snprintf(buf, size, "%s", h.c_str());
  return h.size();
}

int ttap_models_score(void* handle, const ttap_window_batch* batch, float* scores,
                      int32_t* categories, float* category_conf, float* parts, char* err,
                      size_t err_size) {
  try {
    if (!handle || !batch) {
      SetError(err, err_size, "no model or no batch");
      return 1;
    }
    Model* m = static_cast<Model*>(handle);
    std::string why;
    if (!ValidBatch(*batch, m->config, &why)) {
      SetError(err, err_size, why);
      return 1;
    }
    c10::InferenceMode guard;
    Batch b = ToTensors(*batch);
    FitToConfig(&b, m->config);
    b = b.To(m->device);
    Tensor s, k, c, p;
    m->Score(b, &s, &k, &c, &p);
    s = s.to(torch::kCPU).contiguous();
    p = p.to(torch::kCPU).contiguous();
    k = k.to(torch::kCPU).to(torch::kInt).contiguous();
    c = c.to(torch::kCPU).contiguous();
    const size_t W = static_cast<size_t>(batch->windows);
    std::memcpy(scores, s.data_ptr<float>(), W * sizeof(float));
    if (categories) std::memcpy(categories, k.data_ptr<int32_t>(), W * sizeof(int32_t));
    if (category_conf) std::memcpy(category_conf, c.data_ptr<float>(), W * sizeof(float));
    if (parts) std::memcpy(parts, p.data_ptr<float>(), W * TTAP_SCORE_PARTS * sizeof(float));
    return 0;
  } catch (const std::exception& e) {
    SetError(err, err_size, std::string("scoring failed: ") + e.what());
    return 1;
  }
}

int ttap_models_set_tuning(void* handle, const char* parts, double flag_threshold,
                           const char* out_path, char* err, size_t err_size) {
  try {
    if (!handle || !parts || !out_path) {
      SetError(err, err_size, "no model, parts or output path");
      return 1;
    }
    Model* m = static_cast<Model*>(handle);
    if (!Model::ValidParts(parts)) {
      SetError(err, err_size,
               std::string("bad score parts '") + parts + "' (mil, cat, unusual joined by '+')");
      return 1;
    }
    if (!(flag_threshold > 0 && flag_threshold <= 1)) {
      SetError(err, err_size,
               "flag threshold " + std::to_string(flag_threshold) + " not in (0, 1]");
      return 1;
    }
    std::string why;
    if (!m->Save(out_path, parts, flag_threshold, &why)) {
      SetError(err, err_size, why);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    SetError(err, err_size, std::string("cannot save the model: ") + e.what());
    return 1;
  }
}

void ttap_models_close(void* handle) { delete static_cast<Model*>(handle); }

}  // extern "C"

// Scoring latency of the window scorer (models/window_model.cpp) on one 100-window trace of
// synthetic events, through the same C ABI ttap uses: median of 20 calls after 3 warm-ups, on
// the device asked for. Built by bench/score/CMakeLists.txt with libtorch alone; run by
// bench/bench_score.sh. Usage: ttap_score_bench WEIGHTS [auto|cpu|cuda] [threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "models/models_api.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s WEIGHTS [auto|cpu|cuda] [threads]\n", argv[0]);
    return 2;
  }
  const std::string device = argc > 2 ? argv[2] : "auto";
  const int threads = argc > 3 ? std::atoi(argv[3]) : 0;
  char err[1024] = {};
  void* model = ttap_models_open(argv[1], device.c_str(), threads, err, sizeof(err));
  if (!model) {
    std::fprintf(stderr, "ttap_score_bench: %s\n", err);
    return 2;
  }
  const int W = 100, E = 64, T = 6;
  std::mt19937 rng(1);
  std::vector<int32_t> tokens(W * E * T), kinds(W * E), lanes(W * E);
  std::vector<float> numeric(W * E * 4);
  std::vector<uint8_t> mask(W * E, 1);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % 4095 + 1);
  for (auto& k : kinds) k = static_cast<int32_t>(rng() % 13 + 1);
  for (auto& l : lanes) l = static_cast<int32_t>(rng() % 15 + 1);
  for (auto& n : numeric) n = std::uniform_real_distribution<float>(0, 3)(rng);
  const int F =
      28;  // analysis/model/window_tensors.h kWindowTensorFeatures: 14 absolute + 14 relative
  std::vector<float> features(W * F);
  for (auto& f : features) f = std::uniform_real_distribution<float>(0, 3)(rng);
  ttap_window_batch b{W,
                      E,
                      T,
                      tokens.data(),
                      kinds.data(),
                      numeric.data(),
                      lanes.data(),
                      mask.data(),
                      F,
                      features.data()};
  std::vector<float> scores(W), conf(W);
  std::vector<int32_t> cats(W);
  std::vector<double> ms;
  for (int i = 0; i < 23; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (ttap_models_score(model, &b, scores.data(), cats.data(), conf.data(), nullptr, err,
                          sizeof(err)) != 0) {
      std::fprintf(stderr, "ttap_score_bench: %s\n", err);
      return 2;
    }
    const double d =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 3) ms.push_back(d);
  }
  std::sort(ms.begin(), ms.end());
  char desc[256];
  ttap_models_describe(desc, sizeof(desc));
  char header[4096];
  ttap_models_header(model, header, sizeof(header));
  const std::string h = header;
  const size_t dev = h.find("device=");
  std::printf(
      "%s; scored on %s: 100 windows x 64 events: median %.2f ms, min %.2f ms, max %.2f ms\n", desc,
      dev == std::string::npos ? "?" : h.substr(dev + 7, h.find('\n', dev) - dev - 7).c_str(),
      ms[ms.size() / 2], ms.front(), ms.back());
  ttap_models_close(model);
  return 0;
}

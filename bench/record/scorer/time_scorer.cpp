// Times the learned window scorer (models/, through its C ABI) on CPU and CUDA for window tensors
// dumped by dump_windows.cpp: opens the weights on each device, scores every file REPEAT times
// after a warm-up, and prints the median wall time per trace. Built with models/*.cpp against
// any libtorch (bench/record/scorer/CMakeLists.txt: a pip torch's on a lent GPU).
// Usage: time_scorer WEIGHTS REPEAT DUMP...
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models/models_api.h"

namespace {

struct Dump {
  int32_t windows = 0, events = 0, tokens = 0, features = 0;
  std::vector<int32_t> token_ids, kinds, lanes;
  std::vector<float> numeric, window_features;
  std::vector<uint8_t> mask;
};

template <typename T>
bool Read(std::FILE* f, std::vector<T>* v, size_t n) {
  v->resize(n);
  return std::fread(v->data(), sizeof(T), n, f) == n;
}

bool Load(const char* path, Dump* d) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  int32_t h[4];
  bool ok = std::fread(h, sizeof(int32_t), 4, f) == 4;
  if (ok) {
    d->windows = h[0], d->events = h[1], d->tokens = h[2], d->features = h[3];
    const size_t we = static_cast<size_t>(d->windows) * d->events;
    ok = Read(f, &d->token_ids, we * d->tokens) && Read(f, &d->kinds, we) &&
         Read(f, &d->numeric, we * 4) && Read(f, &d->lanes, we) && Read(f, &d->mask, we) &&
         Read(f, &d->window_features, static_cast<size_t>(d->windows) * d->features);
  }
  std::fclose(f);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: time_scorer WEIGHTS REPEAT DUMP...\n");
    return 2;
  }
  const int repeat = std::max(1, std::atoi(argv[2]));
  char desc[256];
  ttap_models_describe(desc, sizeof(desc));
  std::printf("backend: %s\n", desc);
  for (const char* device : {"cpu", "cuda"}) {
    char err[512] = "";
    void* model = ttap_models_open(argv[1], device, 0, err, sizeof(err));
    if (!model) {
      std::printf("%s: not opened (%s)\n", device, err);
      continue;
    }
    for (int a = 3; a < argc; ++a) {
      Dump d;
      if (!Load(argv[a], &d)) {
        std::printf("%s: unreadable\n", argv[a]);
        continue;
      }
      ttap_window_batch b{d.windows,      d.events,
                          d.tokens,       d.token_ids.data(),
                          d.kinds.data(), d.numeric.data(),
                          d.lanes.data(), d.mask.data(),
                          d.features,     d.window_features.data()};
      std::vector<float> scores(d.windows), conf(d.windows);
      std::vector<int32_t> cats(d.windows);
      std::vector<double> ms;
      for (int r = 0; r <= repeat; ++r) {  // the first is the warm-up
        const auto t0 = std::chrono::steady_clock::now();
        if (ttap_models_score(model, &b, scores.data(), cats.data(), conf.data(), nullptr, err,
                              sizeof(err)) != 0) {
          std::printf("%s %s: %s\n", device, argv[a], err);
          break;
        }
        const double t =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (r > 0) ms.push_back(t);
      }
      if (ms.empty()) continue;
      std::sort(ms.begin(), ms.end());
      std::printf("%-5s %-40s %6d windows: median %.2f ms, min %.2f ms (%d runs)\n", device,
                  argv[a], d.windows, ms[ms.size() / 2], ms.front(), static_cast<int>(ms.size()));
    }
    ttap_models_close(model);
  }
  return 0;
}

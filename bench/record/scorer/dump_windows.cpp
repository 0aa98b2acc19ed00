// Writes a trace's window tensors (analysis/model/window_tensors.h) as the learned scorer reads
// them, to time the scorer on a machine that has libtorch but not ttap's other dependencies (a lent
// GPU): time_scorer.cpp reads the file. Built here against build/analysis/libttap_analysis.a by
// bench/record/scorer/run.sh. Usage: dump_windows TRACE OUT
#include <cstdint>
#include <cstdio>
#include <vector>

#include "analysis/load/trace_loader.h"
#include "analysis/model/window_tensors.h"

template <typename T>
static void Write(std::FILE* f, const std::vector<T>& v) {
  std::fwrite(v.data(), sizeof(T), v.size(), f);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: dump_windows TRACE OUT\n");
    return 2;
  }
  auto trace = ttap::LoadTrace(argv[1]);
  if (!trace.ok()) {
    std::fprintf(stderr, "%s\n", trace.status().message().c_str());
    return 1;
  }
  const ttap::WindowTensors t = ttap::BuildWindowTensors(**trace);
  std::FILE* f = std::fopen(argv[2], "wb");
  if (!f) return 1;
  const int32_t header[4] = {t.windows, t.events, t.tokens, t.features};
  std::fwrite(header, sizeof(int32_t), 4, f);
  Write(f, t.token_ids);
  Write(f, t.kinds);
  Write(f, t.numeric);
  Write(f, t.lanes);
  Write(f, t.mask);
  Write(f, t.window_features);
  std::fclose(f);
  std::printf("%s: %d windows x %d events x %d tokens, %d features\n", argv[2], t.windows, t.events,
              t.tokens, t.features);
  return 0;
}

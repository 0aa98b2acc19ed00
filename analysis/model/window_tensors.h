// The learned window scorer's input (models/): every window of a Trace (Trace::windows)
// as a fixed-size set of events, each with hashed name sub-tokens, its kind, launch delay,
// duration, depth, relative time in the window and a lane (GPU stream or CPU thread), plus the
// window's summary features (analysis/model/window_features.h). Flat arrays
// that the models module turns into tensors without per-event work. Built by `ttap train`,
// `ttap eval` and `ttap scan --model`; pure, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model/trace.h"
#include "analysis/model/window_features.h"

namespace ttap {

struct WindowTensorSpec {
  int max_events = 64;  // cap per window: longer windows keep an even stride of their events
  int tokens = 6;       // name sub-tokens per event
  int vocab = 4096;     // hashing vocabulary (id 0 = padding)
  int lanes = 16;       // 1..7 GPU streams, 8..15 CPU threads (by activity), 0 = padding
};

struct WindowTensors {
  int windows = 0, events = 0, tokens = 0;
  std::vector<int32_t> token_ids;  // windows x events x tokens
  std::vector<int32_t> kinds;      // windows x events: EventKind + 1, 0 = padding
  std::vector<float> numeric;      // windows x events x 4: log1p(delay us), log1p(dur us),
                                   // depth / 8, start within the window (0..1)
  std::vector<int32_t> lanes;      // windows x events
  std::vector<uint8_t> mask;       // windows x events: 1 = an event
  // Per-window summary numbers: the kWindowFeatureCount features of
  // analysis/model/window_features.h, then the same minus their median over the trace's windows
  // (how the window differs from the trace's typical window; a model trained with fewer features
  // reads the leading ones).
  int features = 0;
  std::vector<float> window_features;  // windows x features
};

// Columns of WindowTensors::window_features: absolute features, then trace-relative ones.
constexpr int kWindowTensorFeatures = 2 * kWindowFeatureCount;

// Splits a kernel/op name into lower-case sub-tokens on "::", "_", "<", ",", digits, spaces and
// punctuation ("void at::native::vectorized_elementwise_kernel<4, ...>" -> void, at, native,
// vectorized, elementwise, kernel, ...).
std::vector<std::string> NameSubTokens(std::string_view name);
// FNV-1a of |token| into [1, vocab).
int32_t HashToken(std::string_view token, int vocab);

WindowTensors BuildWindowTensors(const Trace& trace, const WindowTensorSpec& spec = {});

}  // namespace ttap

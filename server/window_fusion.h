// How a window's rule score (its avoidable time, analysis/rules/rules.h) and the learned scorer's
// score combine into the one window score that `ttap scan`, the language server (both through
// server/scan) and `ttap eval`'s fused method publish. Eval tries every combination on the
// validation split and reports its choice; scan and the server use `window_fusion` from the
// config (kDefaultWindowFusion: eval's choice on the benchmark, models/MODEL_CARD.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ttap {

struct WindowFusion {
  const char* name;                       // "noisy-OR", "mean", "max", "noisy-OR m/2", ...
  double (*combine)(double r, double m);  // rule score r, model score m, both 0..1
};
// Every combination, in order of preference on ties.
const std::vector<WindowFusion>& WindowFusions();
// The combination named |name| (case-sensitive, as WindowFusions lists them); nullptr if none.
const WindowFusion* FindWindowFusion(std::string_view name);
inline constexpr const char* kDefaultWindowFusion = "noisy-OR m/2";
// The names, joined by ", " (for error messages and help).
std::string WindowFusionNames();

}  // namespace ttap

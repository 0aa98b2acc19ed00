// The window-score combinations; see window_fusion.h.
#include "server/window_fusion.h"

#include <algorithm>

namespace ttap {

const std::vector<WindowFusion>& WindowFusions() {
  static const std::vector<WindowFusion> kFusions = {
      {"noisy-OR", [](double r, double m) { return 1 - (1 - r) * (1 - m); }},
      {"mean", [](double r, double m) { return (r + m) / 2; }},
      {"max", [](double r, double m) { return std::max(r, m); }},
      {"noisy-OR m/2", [](double r, double m) { return 1 - (1 - r) * (1 - m / 2); }},
      {"noisy-OR m/4", [](double r, double m) { return 1 - (1 - r) * (1 - m / 4); }},
  };
  return kFusions;
}

const WindowFusion* FindWindowFusion(std::string_view name) {
  for (const WindowFusion& f : WindowFusions()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::string WindowFusionNames() {
  std::string out;
  for (const WindowFusion& f : WindowFusions())
    out += std::string(out.empty() ? "" : ", ") + f.name;
  return out;
}

}  // namespace ttap

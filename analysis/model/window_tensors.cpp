// Window tensors for the learned scorer (window_tensors.h).
#include "analysis/model/window_tensors.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>

#include "analysis/base/median.h"
#include "analysis/model/window_features.h"

namespace ttap {

std::vector<std::string> NameSubTokens(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.size() >= 2) out.push_back(cur);
    cur.clear();
  };
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) {
      cur += static_cast<char>(std::tolower(u));
    } else {
      flush();  // digits, '_', ':', '<', ',', spaces, punctuation all split
    }
  }
  flush();
  return out;
}

int32_t HashToken(std::string_view token, int vocab) {
  uint32_t h = 2166136261u;
  for (char c : token) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return 1 + static_cast<int32_t>(h % static_cast<uint32_t>(std::max(2, vocab) - 1));
}

WindowTensors BuildWindowTensors(const Trace& trace, const WindowTensorSpec& spec) {
  WindowTensors wt;
  const EventTable& ev = trace.events;
  wt.windows = static_cast<int>(trace.windows.size());
  wt.events = spec.max_events;
  wt.tokens = spec.tokens;
  const size_t cells = static_cast<size_t>(wt.windows) * static_cast<size_t>(wt.events);
  wt.token_ids.assign(cells * static_cast<size_t>(wt.tokens), 0);
  wt.kinds.assign(cells, 0);
  wt.numeric.assign(cells * 4, 0.f);
  wt.lanes.assign(cells, 0);
  wt.mask.assign(cells, 0);
  // Lanes: GPU tracks and CPU tracks each ranked by how many events they hold.
  std::vector<size_t> per_track(trace.tracks.size(), 0);
  for (size_t i = 0; i < ev.size(); ++i) per_track[ev.track[i]]++;
  std::vector<int32_t> lane_of(trace.tracks.size(), 0);
  for (int gpu = 0; gpu < 2; ++gpu) {
    std::vector<size_t> order;
    for (size_t t = 0; t < trace.tracks.size(); ++t) {
      if (trace.tracks[t].gpu == (gpu == 1)) order.push_back(t);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return per_track[a] > per_track[b]; });
    const int first = gpu ? 1 : spec.lanes / 2, count = spec.lanes / 2 - (gpu ? 1 : 0);
    for (size_t k = 0; k < order.size(); ++k) {
      lane_of[order[k]] = first + static_cast<int32_t>(std::min<size_t>(k, count - 1));
    }
  }
  // Name tokens once per distinct name.
  std::unordered_map<StringId, std::vector<int32_t>> name_tokens;
  auto tokens_of = [&](StringId id) -> const std::vector<int32_t>& {
    auto it = name_tokens.find(id);
    if (it != name_tokens.end()) return it->second;
    std::vector<int32_t> ids;
    for (const std::string& t : NameSubTokens(trace.strings.Get(id))) {
      if (static_cast<int>(ids.size()) == spec.tokens) break;
      ids.push_back(HashToken(t, spec.vocab));
    }
    return name_tokens.emplace(id, std::move(ids)).first->second;
  };
  for (int w = 0; w < wt.windows; ++w) {
    const Window& win = trace.windows[static_cast<size_t>(w)];
    // Half the cap for GPU events, half for CPU ones (CPU rows outnumber GPU rows several
    // times); each half keeps an even stride of its rows, and a short half lends the other.
    std::vector<uint32_t> gpu_rows, cpu_rows;
    for (uint32_t r = win.begin; r < win.end; ++r)
      (IsGpuKind(ev.kind[r]) ? gpu_rows : cpu_rows).push_back(r);
    const size_t cap = static_cast<size_t>(wt.events);
    size_t take_gpu = std::min(gpu_rows.size(), cap / 2),
           take_cpu = std::min(cpu_rows.size(), cap - take_gpu);
    take_gpu = std::min(gpu_rows.size(), cap - take_cpu);
    std::vector<uint32_t> rows;
    for (size_t k = 0; k < take_gpu; ++k) rows.push_back(gpu_rows[k * gpu_rows.size() / take_gpu]);
    for (size_t k = 0; k < take_cpu; ++k) rows.push_back(cpu_rows[k * cpu_rows.size() / take_cpu]);
    std::sort(rows.begin(), rows.end());
    const double span = static_cast<double>(std::max<int64_t>(1, win.end_ns - win.start_ns));
    for (size_t k = 0; k < rows.size(); ++k) {
      const size_t row = rows[k];
      const size_t cell = static_cast<size_t>(w) * static_cast<size_t>(wt.events) + k;
      wt.mask[cell] = 1;
      wt.kinds[cell] = static_cast<int32_t>(ev.kind[row]) + 1;
      wt.lanes[cell] = lane_of[ev.track[row]];
      const std::vector<int32_t>& ids = tokens_of(ev.name[row]);
      std::copy(ids.begin(), ids.end(),
                wt.token_ids.begin() + static_cast<long>(cell * static_cast<size_t>(wt.tokens)));
      int64_t delay = 0;
      if (ev.link[row] >= 0) {
        const size_t other = static_cast<size_t>(ev.link[row]);
        delay = IsGpuKind(ev.kind[row]) ? ev.ts[row] - ev.ts[other] : ev.ts[other] - ev.ts[row];
      }
      float* num = &wt.numeric[cell * 4];
      num[0] =
          static_cast<float>(std::log1p(std::max<double>(0, static_cast<double>(delay) / 1000.0)));
      num[1] = static_cast<float>(std::log1p(static_cast<double>(ev.dur[row]) / 1000.0));
      num[2] = static_cast<float>(ev.depth[row]) / 8.f;
      num[3] = static_cast<float>(
          std::clamp(static_cast<double>(ev.ts[row] - win.start_ns) / span, 0.0, 1.0));
    }
  }
  const std::vector<std::vector<double>> features = WindowFeatures(trace);
  const size_t F = static_cast<size_t>(kWindowFeatureCount);
  std::vector<double> median(F, 0.0);
  for (size_t j = 0; j < F && !features.empty(); ++j) {
    std::vector<double> column;
    column.reserve(features.size());
    for (const auto& row : features) column.push_back(row[j]);
    median[j] = Median(std::move(column));
  }
  wt.features = kWindowTensorFeatures;
  wt.window_features.reserve(features.size() * static_cast<size_t>(kWindowTensorFeatures));
  for (const auto& row : features) {
    for (double v : row) wt.window_features.push_back(static_cast<float>(v));
    for (size_t j = 0; j < F; ++j)
      wt.window_features.push_back(static_cast<float>(row[j] - median[j]));
  }
  return wt;
}

}  // namespace ttap

// The median of a sample, as every "typical run" in ttap is taken: the upper middle element
// (element n/2 of the sorted values), |fallback| for an empty sample. Used by the causal model
// (first calls, launch latency), the job analysis, window tensors and the detectors.
// Header-only; takes the sample by value (pass std::move(v) when it is not needed after); the
// fallback does not take part in deducing T (Median(durations, 5000)).
#pragma once

#include <algorithm>
#include <vector>

namespace ttap {

template <typename T>
T Median(std::vector<T> v, typename std::vector<T>::value_type fallback = T{}) {
  if (v.empty()) return fallback;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace ttap

// Small string helpers every module uses (name tests on trace event names, paths, Python text):
// one definition each instead of a private copy per file. Header-only, no allocation except
// Lower's result.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace ttap {

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
inline bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
// ASCII case-insensitive Contains; an empty |needle| is contained everywhere.
inline bool ContainsIgnoreCase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}
// |s| when it has at most |max| characters (bytes), else its first |max| - 3 and "...", so that a
// shortened name says it was cut (|max| > 3).
inline std::string CutWithEllipsis(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max - 3)) + "...";
}
// ASCII lower case.
inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Collective communication kernels: NCCL / RCCL, and the custom all-reduces of inference
// engines (vLLM's cross_device_reduce, SGLang / TensorRT-LLM's custom and one/two-shot
// all-reduces, quick reduce). Shared by RuleContext (TTA011 / TTA012) and the causal graph's
// causes.
inline bool IsCollectiveKernel(std::string_view n) {
  return Contains(n, "nccl") || Contains(n, "Nccl") || Contains(n, "rccl") ||
         Contains(n, "cross_device_reduce") || Contains(n, "custom_all_reduce") ||
         Contains(n, "customAllReduce") || Contains(n, "one_shot_all_reduce") ||
         Contains(n, "two_shot_all_reduce") || Contains(n, "oneShotAllReduce") ||
         Contains(n, "twoShotAllReduce") || Contains(n, "quickreduce");
}

// A collective the CPU runs itself: gloo's (its record_function "gloo:all_reduce", on the
// thread that runs it), as a CPU-only DDP job does. (NCCL's "nccl:*" annotations only enqueue
// GPU kernels.)
inline bool IsCpuCollectiveName(std::string_view n) { return StartsWith(n, "gloo:"); }

// |s| as a base-10 integer: an optional '-', then digits only (no spaces, no '+'); false when
// empty, anything else follows, or it would come near INT64_MAX. Ids and step numbers in traces.
inline bool ParseDecimalInt64(std::string_view s, int64_t* out) {
  size_t i = 0;
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) i = 1;
  if (i >= s.size()) return false;
  int64_t r = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9' || r > INT64_MAX / 10 - 10) return false;
    r = r * 10 + (s[i] - '0');
  }
  *out = neg ? -r : r;
  return true;
}

}  // namespace ttap

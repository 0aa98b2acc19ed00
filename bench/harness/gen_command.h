// `ttap gen`: writes the labelled benchmark: simulated Kineto traces (bench/harness/trace_sim.h)
// and real base traces with injected anti-patterns (bench/harness/trace_inject.h), split by
// workload group and validated. Dispatched by server/cli.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ttap {

// ttap gen --out DIR --seed S [--count N] [--bases PATH...] [--split-seed S2]
// [--only-splits LIST] [--weak-families LIST|none]; returns the exit code.
int RunGenCommand(const std::vector<std::string>& args);

// The split of each real workload group: a quarter "unseen" (never trained or tuned on), then
// "train" 50%, "val" 20%, "test" 30% of the rest, deterministic from |seed|. |clean_groups| are
// the groups with a base the rules find free of anti-patterns: their copies are the only real
// traces with a trace label, so they are stratified: when "val" holds none, the first of them in
// "train" (or else in "test") moves to "val", provided its split keeps another, and the last
// "val" group takes its place. "unseen" never changes.
std::map<std::string, std::string> SplitRealGroups(std::vector<std::string> groups,
                                                   const std::set<std::string>& clean_groups,
                                                   uint64_t seed);

}  // namespace ttap

// `ttap gen`: writes the labelled benchmark: simulated Kineto traces (analysis/trace_sim.h) and
// real base traces with injected anti-patterns (analysis/trace_inject.h), split by workload
// group and validated. Dispatched by server/cli.cpp.
#pragma once

#include <string>
#include <vector>

namespace ttap {

// ttap gen --out DIR --seed S [--count N] [--bases PATH...] [--split-seed S2]
// [--only-splits LIST] [--weak-families LIST|none]; returns the exit code.
int RunGenCommand(const std::vector<std::string>& args);

}  // namespace ttap

// `ttap gen`: writes a benchmark of simulated Kineto traces with ground-truth labels
// (analysis/trace_sim.h). Dispatched by server/cli.cpp.
#pragma once

#include <string>
#include <vector>

namespace ttap {

// ttap gen --out DIR --seed S [--count N]; returns the exit code.
int RunGenCommand(const std::vector<std::string>& args);

}  // namespace ttap

// `ttap train --data DIR --out FILE`: trains the learned window scorer (server/window_model.h)
// on the train split of a `ttap gen` dataset, validating on its val split, and records what it
// was trained on in the weights file (so `ttap eval` can refuse those groups). Dispatched by
// server/cli.cpp.
#pragma once

#include <string>
#include <vector>

namespace ttap {

int RunTrainCommand(const std::vector<std::string>& args);

}  // namespace ttap

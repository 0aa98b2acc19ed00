// What `ttap train` chooses on the validation split once the window scorer is trained
// (bench/harness/train_command.cpp): the window score's parts and the score that flags a window
// (TTA900). The choice is written into the weights file (WindowModel::SaveTuned), which is all
// the product reads of it.
#pragma once

#include <string>
#include <vector>

#include "analysis/base/status.h"
#include "server/window_model.h"

namespace ttap {

// The window-score compositions training chooses from, in order of preference on ties.
inline constexpr const char* kScoreParts[] = {"mil+cat+unusual", "mil+cat", "mil+unusual", "mil",
                                              "cat+unusual",     "cat",     "unusual"};

// The entry of kScoreParts with the best validation trace AUC (mean window score, traces with a
// label) + window AUC (windows with a known category: some code = positive) on |val|; |report|
// gets every entry's two numbers (|report| and |flag_report| must not be null). When no entry has a
// finite AUC (no labelled windows or traces), the first entry is returned. Then the flag threshold:
// the kFlagQuantile quantile of the chosen score over |val|'s windows known to hold nothing
// (category 0, clean and real-base traces alike), kept within [kMinFlagThreshold,
// kMaxFlagThreshold]; |flag_report| gets it and the windows it flags.
// `ttap train` calls it on the trained model and writes the choice into the file.
inline constexpr double kFlagQuantile = 0.99, kMinFlagThreshold = 0.5, kMaxFlagThreshold = 0.995;
StatusOr<ScoreTuning> ChooseScoreTuning(const WindowModel& model,
                                        const std::vector<TrainExample>& val, std::string* report,
                                        std::string* flag_report);

}  // namespace ttap

// The labels file of the benchmark, in one place: DIR/labels/<stem>.labels.json, one per trace
// that `ttap gen` writes (bench/harness/gen_command.cpp) and `ttap eval` / `ttap train` read
// (eval_command.cpp, train_command.cpp). The schema is the LabelsFile struct; WriteLabelsFile and
// ParseLabelsFile are its only writer and reader. Times are microseconds on the wire (integers:
// starts rounded down, ends up) and nanoseconds in memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/base/status.h"

namespace ttap {

inline constexpr char kLabelsSuffix[] = ".labels.json";
inline constexpr char kTraceSuffix[] = ".pt.trace.json.gz";

// One labelled interval, in the trace's own clock (ns).
struct EvalLabel {
  std::string code;
  std::string family = "catalogue";  // "catalogue", "no-rule" or "unseen" (no rule covers it)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::string file;  // the responsible user script, "" when unknown
  int line = 0;      // 1-based, 0 when unknown
};

// A labels file. Missing fields of older files get defaults when read: trace =
// <stem>.pt.trace.json.gz, split = "test", workload_group = task, family = "catalogue".
struct EvalLabels {
  std::string stem;           // the file's name without .labels.json (not written)
  std::string trace;          // file name relative to the dataset directory
  bool anti_pattern = false;  // trace_label == "anti-pattern"
  std::string source;         // "simulated" or "injected"
  std::string task, workload_group, hardware, split;
  // What gen records about the trace's making (written, not needed by eval): the simulator's
  // variant and training flag, an injected copy's base trace and generated script.
  std::string variant, base, script;
  std::optional<bool> training;
  uint64_t seed = 0;
  double severity = 0;
  std::vector<EvalLabel> labels;                // written with family, file and line
  std::vector<EvalLabel> pre_existing;          // anti-patterns the real base trace already had
  std::vector<std::string> pre_existing_codes;  // their codes (injected copies only)
  // Injected real-base copies: what the injection costs per analysed step, measured by the
  // injector's own timing (the copy minus the same copy without it), and the copy's step time.
  // -1 when the file does not say.
  double time_lost_us_per_step = -1;
  double run_us_per_step = -1;
};

// The file's text (JSON, two-space indent, keys sorted, ending in a newline).
std::string WriteLabelsFile(const EvalLabels& labels);
// Parses the text of a labels file; an error names what is wrong.
StatusOr<EvalLabels> ParseEvalLabels(const std::string& text, const std::string& stem);
// The names of the labels files (*.labels.json) in |label_dir|, sorted.
std::vector<std::string> ListLabelFiles(const std::string& label_dir);
// Reads and parses |label_dir|/|file| (a name from ListLabelFiles).
StatusOr<EvalLabels> ReadEvalLabels(const std::string& label_dir, const std::string& file);

}  // namespace ttap

// TraceSim: a simulator of computer-vision training/inference loops that writes realistic Kineto
// traces (JSON text) with ground-truth labels of injected anti-patterns. Used by `ttap gen`
// (bench/harness/gen_command.cpp) to build the benchmark, and by the tests (tests/analysis). Pure
// and deterministic: the same SimSpec (seed included) gives the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ttap {

struct SimSpec {
  std::string task = "classification";  // classification, detection, segmentation, pose, depth,
                                        // generation
  std::string hardware = "A100";        // V100, A100, H100, MI300
  bool training = true;
  int steps = 5;
  uint64_t seed = 1;
  int variant = 0;  // backbone variant 0..3 (SimVariants()): one workload group
                    // per task and variant
  std::vector<std::string> anti_patterns;  // codes to inject: TTA001, TTA002, TTA005, TTA006,
                                           // TTA009, and the families no rule covers (SimUnseen
                                           // Families(): TTX101 recompute, TTX102 slow custom
                                           // kernel, TTX103 serialised streams); others ignored
  double severity = 1.0;                   // 0..1, mild..severe
};

// One injected occurrence: an interval in the trace's own microsecond clock and the line of the
// generated script responsible.
struct SimLabel {
  std::string code;
  int64_t start_us = 0;
  int64_t end_us = 0;
  std::string file;
  int line = 0;
};

struct SimTrace {
  std::string json;
  std::vector<SimLabel> labels;
  std::string script_path;  // the generated user script the python frames name
};

// The task and hardware names SimulateTrace knows.
const std::vector<std::string>& SimTasks();
const std::vector<std::string>& SimHardware();
// Backbone variant names, indexed by SimSpec::variant.
const std::vector<std::string>& SimVariants();
// Anti-pattern families that no catalogue rule covers (benchmark test splits only).
const std::vector<std::string>& SimUnseenFamilies();
// Whether |code| can be injected for |spec| (training-only codes, no TTA009 on AMD).
bool SimCanInject(const SimSpec& spec, const std::string& code);

SimTrace SimulateTrace(const SimSpec& spec);

}  // namespace ttap

// Config: the one configuration shared by the CLI and the language server. Read from
// `[tool.ttap]` in the workspace's pyproject.toml, or a ttap.toml (keys at top level or under
// [ttap]), or a file named with --config; CLI flags and LSP settings override it afterwards.
// cpptoml's exceptions stay inside config.cpp.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/status.h"

namespace ttap {

struct Config {
  int windows = 100;  // windows per trace (the paper's N)
  int threads = 0;    // loader workers, 0 = all cores
  int rank = -1;      // rank to show, -1 = all (CLI) / 0 (LSP)
  std::vector<std::string> trace_globs = {"**/*.pt.trace.json", "**/*.pt.trace.json.gz",
                                          "**/*trace*.json", "**/*trace*.json.gz"};
  std::map<std::string, double> thresholds;  // rule parameter -> value
  // Frame paths as recorded (prefix) -> workspace prefix, e.g. "/workspace/proj/" -> "".
  std::vector<std::pair<std::string, std::string>> path_maps;
  std::vector<std::string> user_frames_include;  // fnmatch globs over recorded frame paths
  std::vector<std::string> user_frames_exclude;
  std::string source;  // file the values came from, empty for defaults
};

// Parses one TOML file. pyproject.toml contributes only its [tool.ttap] table.
StatusOr<Config> LoadConfigFile(const std::string& path);
// Looks for ttap.toml, then pyproject.toml with [tool.ttap], in |dir| and its parents.
// Returns the defaults when none is found; an error only for a file that exists and is broken.
StatusOr<Config> FindConfig(const std::string& dir);

}  // namespace ttap

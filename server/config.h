// Config: the one configuration shared by the CLI and the language server. Read from
// `[tool.ttap]` in the workspace's pyproject.toml, or a ttap.toml (keys at top level or under
// [ttap]), or a file named with --config; CLI flags and LSP settings override it afterwards.
// cpptoml's exceptions stay inside config.cpp.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/base/status.h"
#include "server/window_fusion.h"

namespace ttap {

// [tool.ttap.llm] (or [llm] in ttap.toml): the OpenAI-compatible endpoint for LLM drafts
// (server/llm/). Settings only: drafting is turned on by `ttap scan --llm` or the editor's
// `llm` settings, never by this file alone.
struct LlmConfig {
  std::string base_url;  // with the version path, e.g. "http://127.0.0.1:11434/v1"
  std::string model;
  std::string api_key_env;             // NAME of the environment variable holding the key
  std::string auth_header = "bearer";  // "bearer" (Authorization: Bearer) or "api-key" (Azure)
  double timeout_s = 60;
  int max_concurrent = 2;
  int max_tokens = 1024;
  double temperature = 0.1;
  int retries = 3;
  int max_drafts = 8;           // findings drafted per trace
  double min_confidence = 0.6;  // below it, ask again with the neighbouring windows
  int feedback_rounds = 2;
  std::string
      cache_dir;  // default: $TTAP_LLM_CACHE_DIR, $XDG_CACHE_HOME/ttap/llm, ~/.cache/ttap/llm
  int cache_max_mb = 64;
};

// The bounds a setting has wherever it comes from (ttap.toml, pyproject.toml, the editor).
constexpr int kMinWindows = 1, kMaxWindows = 100000;

struct Config {
  int windows = 100;  // windows per trace (the paper's N), kMinWindows..kMaxWindows
  int threads = 0;    // loader workers, 0 = all cores
  int rank = -1;      // rank to show, -1 = all (CLI) / 0 (LSP)
  std::vector<std::string> trace_globs = {"**/*.pt.trace.json", "**/*.pt.trace.json.gz",
                                          "**/*trace*.json", "**/*trace*.json.gz"};
  std::map<std::string, double> thresholds;  // rule parameter -> value
  // Frame paths as recorded (prefix) -> workspace prefix, e.g. "/workspace/proj/" -> "".
  std::vector<std::pair<std::string, std::string>> path_maps;
  std::vector<std::string> user_frames_include;  // fnmatch globs over recorded frame paths
  std::vector<std::string> user_frames_exclude;
  // Codes reported, as ruff's lint.select / lint.ignore: codes or prefixes ("TTA00") or "ALL";
  // empty select: every code; ignore wins.
  std::vector<std::string> select, ignore;
  std::string source;  // file the values came from, empty for defaults
  LlmConfig llm;
  // How window scores combine the rules' and the learned scorer's (server/window_fusion.h).
  std::string window_fusion = kDefaultWindowFusion;
};

// Parses one TOML file. pyproject.toml contributes only its [tool.ttap] table.
StatusOr<Config> LoadConfigFile(const std::string& path);
// Looks for ttap.toml, then pyproject.toml with [tool.ttap], in |dir| and its parents.
// Returns the defaults when none is found; an error only for a file that exists and is broken.
StatusOr<Config> FindConfig(const std::string& dir);

}  // namespace ttap

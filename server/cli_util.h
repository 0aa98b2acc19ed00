// Small pieces shared by the CLI commands (cli.cpp, scan.cpp, gen/train/eval_command.cpp): usage
// errors, number arguments, expanding a TRACE_OR_DIR argument into trace files, and the options
// scan and eval share.
#pragma once

#include <string>
#include <vector>

#include "analysis/base/status.h"
#include "server/llm/llm_config.h"

namespace ttap {

// Prints "ttap: MSG" and the --help hint to stderr; returns exit code 2.
int UsageError(const std::string& message);

// The whole of |s| as a number (strtod syntax); false when empty or anything follows it.
bool ParseNumber(const std::string& s, double* out);
// The whole of |s| as a base-10 integer; false when empty, out of range or anything follows it.
bool ParseInteger(const std::string& s, long long* out);

struct TraceTarget {
  std::vector<std::string> files;
  bool directory = false;
};
// A file stands for itself; a directory for its *.json / *.json.gz files (one per rank).
StatusOr<TraceTarget> ExpandTraceTarget(const std::string& target);

// Handles a positional TRACE_OR_DIR argument of |command|; returns 0, or the usage-error exit
// code for an unknown option or a second positional argument.
int TakeTraceArgument(const std::string& command, const std::string& arg, std::string* target);

// The options `scan` and `eval` share, parsed in one place: the learned window scorer's weights
// and device (--model FILE, --device auto|cpu|cuda) and the LLM endpoint overrides
// (--llm-base-url URL, --llm-model NAME, --llm-api-key-env VAR).
struct SharedFlags {
  std::string model_path;       // "" unless --model was given
  std::string device = "auto";  // --device
  llm::LlmOverrides llm;        // --llm-*
};
// 1 when args[*i] is one of the shared options (then *i is past its value), 0 when it is not,
// and the usage-error exit code (2) when its value is missing or not allowed.
int TakeSharedFlag(const std::vector<std::string>& args, size_t* i, SharedFlags* flags);

}  // namespace ttap

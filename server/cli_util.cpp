// CLI helpers; see cli_util.h.
#include "server/cli_util.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "analysis/load/trace_loader.h"

namespace ttap {

int UsageError(const std::string& message) {
  std::fprintf(stderr, "ttap: %s\n(run 'ttap --help' for usage)\n", message.c_str());
  return 2;
}

bool ParseNumber(const std::string& s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

bool ParseInteger(const std::string& s, long long* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0) return false;
  *out = v;
  return true;
}

StatusOr<TraceTarget> ExpandTraceTarget(const std::string& target) {
  TraceTarget t;
  struct stat st;
  t.directory = stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (!t.directory) {
    t.files.push_back(target);
    return t;
  }
  t.files = ListTraceFiles(target);
  if (t.files.empty()) return Status::Error(target + ": no trace files (*.json, *.json.gz)");
  return t;
}

int TakeTraceArgument(const std::string& command, const std::string& arg, std::string* target) {
  // "-" alone is standard input (ByteSource streams it).
  if (arg.size() > 1 && arg[0] == '-') return UsageError(command + ": unknown option " + arg);
  if (!target->empty()) {
    return UsageError(command + ": one trace file or directory, got a second: " + arg);
  }
  *target = arg;
  return 0;
}

int TakeSharedFlag(const std::vector<std::string>& args, size_t* i, SharedFlags* flags) {
  const std::string& a = args[*i];
  const bool model = a == "--model", device = a == "--device";
  const bool llm = a == "--llm-base-url" || a == "--llm-model" || a == "--llm-api-key-env";
  if (!model && !device && !llm) return 0;
  if (*i + 1 >= args.size()) return UsageError(a + " needs a value");
  const std::string& value = args[++*i];
  if (model) {
    flags->model_path = value;
  } else if (device) {
    if (value != "auto" && value != "cpu" && value != "cuda")
      return UsageError("--device is auto, cpu or cuda");
    flags->device = value;
  } else {
    (a == "--llm-base-url" ? flags->llm.base_url
     : a == "--llm-model"  ? flags->llm.model
                           : flags->llm.api_key_env) = value;
  }
  return 1;
}

}  // namespace ttap

// Config loading with cpptoml; see config.h.
#include "server/config.h"

#include <cpptoml.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <tuple>
#include <utility>

#include "analysis/base/nesting_depth.h"
#include "mapping/suppressions.h"

namespace ttap {

namespace {

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status ApplyLlm(const cpptoml::table& t, LlmConfig* llm) {
  for (auto [key, dst] : {std::pair<const char*, std::string*>{"base_url", &llm->base_url},
                          {"model", &llm->model},
                          {"api_key_env", &llm->api_key_env},
                          {"auth_header", &llm->auth_header},
                          {"cache_dir", &llm->cache_dir}}) {
    if (!t.contains(key)) continue;
    auto v = t.get_as<std::string>(key);
    if (!v) return Status::Error(std::string("llm.") + key + " must be a string");
    *dst = *v;
  }
  if (llm->auth_header != "bearer" && llm->auth_header != "api-key")
    return Status::Error("llm.auth_header must be \"bearer\" or \"api-key\"");
  for (auto [key, dst, lo, hi] :
       {std::tuple<const char*, double*, double, double>{"timeout_s", &llm->timeout_s, 0.1, 3600},
        {"temperature", &llm->temperature, 0, 2},
        {"min_confidence", &llm->min_confidence, 0, 1}}) {
    if (!t.contains(key)) continue;
    double v;
    if (auto d = t.get_as<double>(key)) {
      v = *d;
    } else if (auto i = t.get_as<int64_t>(key)) {
      v = static_cast<double>(*i);
    } else {
      return Status::Error(std::string("llm.") + key + " must be a number");
    }
    if (v < lo || v > hi)
      return Status::Error(std::string("llm.") + key + " must be between " + std::to_string(lo) +
                           " and " + std::to_string(hi));
    *dst = v;
  }
  for (auto [key, dst, lo, hi] :
       {std::tuple<const char*, int*, int, int>{"max_concurrent", &llm->max_concurrent, 1, 64},
        {"max_tokens", &llm->max_tokens, 16, 1000000},
        {"retries", &llm->retries, 0, 10},
        {"max_drafts", &llm->max_drafts, 0, 1000},
        {"feedback_rounds", &llm->feedback_rounds, 0, 5},
        {"cache_max_mb", &llm->cache_max_mb, 0, 100000}}) {
    if (!t.contains(key)) continue;
    auto v = t.get_as<int64_t>(key);
    if (!v || *v < lo || *v > hi)
      return Status::Error(std::string("llm.") + key + " must be an integer between " +
                           std::to_string(lo) + " and " + std::to_string(hi));
    *dst = static_cast<int>(*v);
  }
  return Status::Ok();
}

Status Apply(const cpptoml::table& t, Config* c) {
  for (const char* key : {"windows", "threads", "rank"}) {
    if (t.contains(key) && !t.get_as<int64_t>(key))
      return Status::Error(std::string(key) + " must be an integer");
  }
  if (t.contains("trace_globs") && !t.get_array_of<std::string>("trace_globs")) {
    return Status::Error("trace_globs must be an array of strings");
  }
  if (auto v = t.get_as<int64_t>("windows")) {
    if (*v < kMinWindows || *v > kMaxWindows) {
      return Status::Error("windows must be between " + std::to_string(kMinWindows) + " and " +
                           std::to_string(kMaxWindows));
    }
    c->windows = static_cast<int>(*v);
  }
  if (auto v = t.get_as<int64_t>("threads")) {
    if (*v < 0 || *v > 1024) return Status::Error("threads must be between 0 and 1024");
    c->threads = static_cast<int>(*v);
  }
  if (auto v = t.get_as<int64_t>("rank")) c->rank = static_cast<int>(*v);
  if (t.contains("window_fusion")) {
    auto v = t.get_as<std::string>("window_fusion");
    if (!v || !FindWindowFusion(*v)) {
      return Status::Error("window_fusion must be one of: " + WindowFusionNames());
    }
    c->window_fusion = *v;
  }
  if (auto v = t.get_array_of<std::string>("trace_globs")) c->trace_globs = *v;
  for (const char* key : {"select", "ignore"}) {
    if (!t.contains(key)) continue;
    auto v = t.get_array_of<std::string>(key);
    if (!v) return Status::Error(std::string(key) + " must be an array of codes");
    const std::string wrong = CheckCodeList(*v);
    if (!wrong.empty()) return Status::Error(std::string(key) + ": " + wrong);
    (std::string(key) == "select" ? c->select : c->ignore) = *v;
  }
  for (const char* key : {"user_frames_include", "user_frames_exclude"}) {
    if (!t.contains(key)) continue;
    auto v = t.get_array_of<std::string>(key);
    if (!v) return Status::Error(std::string(key) + " must be an array of strings");
    (std::string(key) == "user_frames_include" ? c->user_frames_include : c->user_frames_exclude) =
        *v;
  }
  if (t.contains("path_maps")) {
    auto maps = t.get_table("path_maps");
    if (!maps)
      return Status::Error(
          "path_maps must be a table of \"recorded prefix\" = \"workspace prefix\"");
    for (const auto& [from, value] : *maps) {
      auto to = maps->get_as<std::string>(from);
      if (!to) return Status::Error("path_maps." + from + " must be a string");
      c->path_maps.emplace_back(from, *to);
    }
  }
  if (t.contains("llm")) {
    auto llm = t.get_table("llm");
    if (!llm) return Status::Error("llm must be a table ([tool.ttap.llm])");
    TTAP_RETURN_IF_ERROR(ApplyLlm(*llm, &c->llm));
  }
  if (auto th = t.get_table("thresholds")) {
    for (const auto& [key, value] : *th) {
      if (auto d = th->get_as<double>(key))
        c->thresholds[key] = *d;
      else if (auto i = th->get_as<int64_t>(key))
        c->thresholds[key] = static_cast<double>(*i);
      else
        return Status::Error("thresholds." + key + " must be a number");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Config> LoadConfigFile(const std::string& path) {
  Config c;
  // Read once: the nesting guard (cpptoml recurses per level, so a 200k-deep array would overflow
  // the stack) and the parser see the same text.
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": " + path + " could not be opened for parsing");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (NestingExceeds(text, kMaxTomlNesting, TextSyntax::kToml)) {
    return Status::Error(path + ": arrays or inline tables nested deeper than " +
                         std::to_string(kMaxTomlNesting) + " levels");
  }
  std::shared_ptr<cpptoml::table> root;
  try {
    std::istringstream stream(text);
    cpptoml::parser parser(stream);
    root = parser.parse();
  } catch (const std::exception& e) {
    return Status::Error(path + ": " + e.what());
  }
  std::shared_ptr<cpptoml::table> t;
  bool pyproject = path.size() >= 14 && path.compare(path.size() - 14, 14, "pyproject.toml") == 0;
  if (pyproject) {
    t = root->get_table_qualified("tool.ttap");
    if (!t) return c;  // a pyproject without our table: defaults
  } else {
    t = root->get_table("ttap");
    if (!t) t = root;
  }
  Status s;
  try {
    s = Apply(*t, &c);
  } catch (const std::exception& e) {
    s = Status::Error(e.what());
  }
  if (!s.ok()) return Status::Error(path + ": " + s.message());
  c.source = path;
  return c;
}

StatusOr<Config> FindConfig(const std::string& start) {
  std::string dir = start.empty() ? "." : start;
  for (int guard = 0; guard < 64; ++guard) {
    for (const char* name : {"ttap.toml", "pyproject.toml"}) {
      std::string p = dir + "/" + name;
      if (!IsFile(p)) continue;
      auto c = LoadConfigFile(p);
      if (!c.ok() || !c->source.empty()) return c;
    }
    char resolved[4096];
    if (!realpath(dir.c_str(), resolved)) break;
    std::string r = resolved;
    if (r == "/") break;
    size_t slash = r.rfind('/');
    dir = slash == 0 ? "/" : r.substr(0, slash);
  }
  return Config();
}

}  // namespace ttap

// The labels file's one writer and reader; see labels.h.
#include "bench/harness/labels.h"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/base/string_util.h"

namespace ttap {

namespace {

// Microseconds of |ns|, rounded down (starts) or up (ends), exactly (ns values of real traces
// exceed a double's 53 bits).
long long FloorUs(int64_t ns) { return ns / 1000 - (ns % 1000 < 0 ? 1 : 0); }
long long CeilUs(int64_t ns) { return ns / 1000 + (ns % 1000 > 0 ? 1 : 0); }

double Round3(double v) { return std::round(v * 1000.0) / 1000.0; }

nlohmann::json IntervalJson(const EvalLabel& l, bool with_place) {
  nlohmann::json j = {
      {"code", l.code}, {"start_us", FloorUs(l.start_ns)}, {"end_us", CeilUs(l.end_ns)}};
  if (with_place) {
    j["family"] = l.family;
    j["file"] = l.file;
    j["line"] = l.line;
  }
  return j;
}

std::string StringField(const nlohmann::json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// Microseconds (integer or fractional) to ns; false when not a number.
bool TimeField(const nlohmann::json& j, const char* key, int64_t* ns) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return false;
  const double us = it->get<double>();
  if (!std::isfinite(us) || std::fabs(us) > 4e15) return false;
  *ns = it->is_number_integer() ? it->get<int64_t>() * 1000 : std::llround(us * 1000.0);
  return true;
}

Status ParseIntervals(const nlohmann::json& j, const char* key, std::vector<EvalLabel>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Status::Error(std::string("\"") + key + "\" is not an array");
  for (const auto& e : *it) {
    if (!e.is_object())
      return Status::Error(std::string("an entry of \"") + key + "\" is not an object");
    EvalLabel l;
    l.code = StringField(e, "code", "");
    if (l.code.empty())
      return Status::Error(std::string("an entry of \"") + key + "\" has no code");
    l.family = StringField(e, "family", "catalogue");
    if (!TimeField(e, "start_us", &l.start_ns) || !TimeField(e, "end_us", &l.end_ns)) {
      return Status::Error(l.code + ": start_us/end_us missing or not numbers");
    }
    l.file = StringField(e, "file", "");
    auto line = e.find("line");
    if (line != e.end() && line->is_number_integer()) l.line = line->get<int>();
    out->push_back(std::move(l));
  }
  return Status::Ok();
}

}  // namespace

std::string WriteLabelsFile(const EvalLabels& l) {
  nlohmann::json doc = {{"source", l.source}, {"task", l.task}, {"hardware", l.hardware}};
  if (!l.variant.empty()) doc["variant"] = l.variant;
  if (l.training) doc["training"] = *l.training;
  if (!l.base.empty()) doc["base"] = l.base;
  if (!l.script.empty()) doc["script"] = l.script;
  doc["trace"] = l.trace;
  doc["trace_label"] = l.anti_pattern ? "anti-pattern" : "clean";
  doc["workload_group"] = l.workload_group;
  doc["split"] = l.split;
  doc["seen"] = l.split != "unseen";
  doc["seed"] = l.seed;
  doc["severity"] = Round3(l.severity);
  nlohmann::json labels = nlohmann::json::array(), pre = nlohmann::json::array();
  for (const EvalLabel& x : l.labels) labels.push_back(IntervalJson(x, true));
  for (const EvalLabel& x : l.pre_existing) pre.push_back(IntervalJson(x, false));
  doc["labels"] = labels;
  if (l.time_lost_us_per_step >= 0 || l.run_us_per_step >= 0) {
    doc["time_lost_us_per_step"] = Round3(l.time_lost_us_per_step);
    doc["run_us_per_step"] = Round3(l.run_us_per_step);
  }
  doc["pre_existing"] = pre;
  if (l.source == "injected") doc["pre_existing_codes"] = l.pre_existing_codes;
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

StatusOr<EvalLabels> ParseEvalLabels(const std::string& text, const std::string& stem) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Error("not valid JSON");
  if (!j.is_object()) return Status::Error("not a JSON object");
  EvalLabels l;
  l.stem = stem;
  l.trace = StringField(j, "trace", stem + kTraceSuffix);
  const std::string label = StringField(j, "trace_label", "");
  if (label != "clean" && label != "anti-pattern") {
    return Status::Error("\"trace_label\" is neither \"clean\" nor \"anti-pattern\"");
  }
  l.anti_pattern = label == "anti-pattern";
  l.source = StringField(j, "source", "simulated");
  l.task = StringField(j, "task", "");
  l.workload_group = StringField(j, "workload_group", l.task);
  l.hardware = StringField(j, "hardware", "");
  l.split = StringField(j, "split", "test");
  l.variant = StringField(j, "variant", "");
  l.base = StringField(j, "base", "");
  l.script = StringField(j, "script", "");
  if (auto it = j.find("training"); it != j.end() && it->is_boolean()) l.training = it->get<bool>();
  if (auto it = j.find("seed"); it != j.end() && it->is_number_unsigned()) {
    l.seed = it->get<uint64_t>();
  }
  if (auto it = j.find("severity"); it != j.end() && it->is_number()) {
    l.severity = it->get<double>();
  }
  if (j.contains("time_lost_us_per_step") && j["time_lost_us_per_step"].is_number()) {
    l.time_lost_us_per_step = j["time_lost_us_per_step"].get<double>();
  }
  if (j.contains("run_us_per_step") && j["run_us_per_step"].is_number()) {
    l.run_us_per_step = j["run_us_per_step"].get<double>();
  }
  TTAP_RETURN_IF_ERROR(ParseIntervals(j, "labels", &l.labels));
  TTAP_RETURN_IF_ERROR(ParseIntervals(j, "pre_existing", &l.pre_existing));
  if (j.contains("pre_existing_codes") && j["pre_existing_codes"].is_array()) {
    for (const auto& c : j["pre_existing_codes"]) {
      if (c.is_string()) l.pre_existing_codes.push_back(c.get<std::string>());
    }
  }
  return l;
}

std::vector<std::string> ListLabelFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (EndsWith(name, kLabelsSuffix)) out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

StatusOr<EvalLabels> ReadEvalLabels(const std::string& label_dir, const std::string& file) {
  std::ifstream in(label_dir + "/" + file, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  if (!in) return Status::Error("unreadable");
  return ParseEvalLabels(buf.str(), file.substr(0, file.size() - std::strlen(kLabelsSuffix)));
}

}  // namespace ttap

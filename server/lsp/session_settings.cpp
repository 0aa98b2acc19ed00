// The session's settings (see session.h): ttap's own section of the editor's configuration
// (pushed with didChangeConfiguration or pulled with workspace/configuration) and the workspace
// folders; a change re-analyses.
#include <cmath>

#include "server/lsp/session.h"

namespace ttap::lsp {

void Session::OnDidChangeConfiguration(const proto::DidChangeConfigurationParams& params) {
  if (params.settings && params.settings->is_object() && params.settings->contains("ttap")) {
    ApplySettings((*params.settings)["ttap"]);
    RequestAnalysis(true);
  } else if (workspace_configuration_) {
    PullConfiguration();
  }
}

void Session::OnDidChangeWorkspaceFolders(const proto::DidChangeWorkspaceFoldersParams& params) {
  {
    std::lock_guard<std::mutex> lock(settings_mu_);
    for (const auto& f : params.event.removed) {
      std::string p = UriToPath(f.uri);
      roots_.erase(std::remove(roots_.begin(), roots_.end(), p), roots_.end());
    }
    for (const auto& f : params.event.added) roots_.push_back(UriToPath(f.uri));
  }
  RequestAnalysis(true);
}

void Session::ApplySettings(const json& s) {
  if (!s.is_object()) return;
  std::lock_guard<std::mutex> lock(settings_mu_);
  if (s.contains("traceGlobs") && s["traceGlobs"].is_array()) {
    config_.trace_globs.clear();
    for (const auto& g : s["traceGlobs"])
      if (g.is_string()) config_.trace_globs.push_back(g);
  }
  // Every value is checked as the config file's is: one out of its bounds is refused (and said),
  // never clamped into something the user did not ask for.
  std::vector<std::string> refused;
  if (s.contains("rank")) {
    if (s["rank"].is_number_integer() && s["rank"].get<int64_t>() >= -1 &&
        s["rank"].get<int64_t>() <= 1 << 20) {
      rank_ = s["rank"];
    } else if (!s["rank"].is_null()) {
      refused.push_back("ttap.rank must be an integer between -1 and 1048576");
    }
  }
  if (s.contains("windows") && !s["windows"].is_null()) {
    if (s["windows"].is_number_integer() && s["windows"].get<int64_t>() >= kMinWindows &&
        s["windows"].get<int64_t>() <= kMaxWindows) {
      config_.windows = s["windows"];
    } else {
      refused.push_back("ttap.windows must be an integer between " + std::to_string(kMinWindows) +
                        " and " + std::to_string(kMaxWindows));
    }
  }
  if (s.contains("thresholds") && s["thresholds"].is_object()) {
    for (auto& [k, v] : s["thresholds"].items()) {
      if (v.is_number() && std::isfinite(v.get<double>()) && std::abs(v.get<double>()) <= 1e12) {
        config_.thresholds[k] = v;
      } else {
        refused.push_back("ttap.thresholds." + k + " must be a number");
      }
    }
  }
  if (!refused.empty()) {
    std::string text = "ttap: settings ignored: ";
    for (size_t i = 0; i < refused.size() && i < 5; ++i) text += (i ? "; " : "") + refused[i];
    Log(text);
    out_.Notify("window/showMessage", proto::ShowMessageParams{proto::MessageType::kWarning, text});
  }
  if (s.contains("pathMaps") && s["pathMaps"].is_object()) {
    config_.path_maps.clear();
    for (auto& [k, v] : s["pathMaps"].items())
      if (v.is_string()) config_.path_maps.emplace_back(k, v);
  }
  if (s.contains("llm") && s["llm"].is_object()) {
    const json& l = s["llm"];
    auto text = [&](const char* key) -> std::optional<std::string> {
      if (!l.contains(key) || !l[key].is_string() || l[key].get<std::string>().empty())
        return std::nullopt;
      return l[key].get<std::string>();
    };
    llm_editor_.base_url = text("baseUrl");
    llm_editor_.model = text("model");
    llm_editor_.api_key_env = text("apiKeyEnv");
    if (auto auth = text("authHeader"))
      config_.llm.auth_header = *auth == "api-key" ? "api-key" : "bearer";
    if (l.contains("maxDrafts") && l["maxDrafts"].is_number_integer())
      config_.llm.max_drafts = std::clamp(l["maxDrafts"].get<int>(), 0, 100);
    if (l.contains("timeoutSeconds") && l["timeoutSeconds"].is_number())
      config_.llm.timeout_s = std::clamp(l["timeoutSeconds"].get<double>(), 0.1, 3600.0);
    llm_enabled_ = l.contains("enabled") && l["enabled"].is_boolean()
                       ? l["enabled"].get<bool>()
                       : llm_editor_.base_url.has_value();
  }
  if (s.contains("model") && s["model"].is_object()) {
    const json& m = s["model"];
    if (m.contains("enabled") && m["enabled"].is_boolean()) model_enabled_ = m["enabled"];
    if (m.contains("path") && m["path"].is_string()) model_path_ = m["path"];
    if (m.contains("device") && m["device"].is_string()) {
      const std::string d = m["device"];
      model_device_ = d == "cpu" || d == "cuda" ? d : "auto";
    }
    if (m.contains("threshold")) {  // null (or out of [0, 1]): the file's own
      const double t = m["threshold"].is_number() ? m["threshold"].get<double>() : -1;
      model_threshold_ = t >= 0 && t <= 1 ? t : -1;
    }
  }
  for (const char* key : {"select", "ignore"}) {
    if (!s.contains(key) || !s[key].is_array()) continue;
    std::vector<std::string> codes;
    for (const auto& c : s[key])
      if (c.is_string()) codes.push_back(c);
    // Empty (the editor's default) keeps the project's list.
    if (!codes.empty() && CheckCodeList(codes).empty())
      (std::string(key) == "select" ? config_.select : config_.ignore) = codes;
  }
  for (const char* key : {"userFramesInclude", "userFramesExclude"}) {
    if (!s.contains(key) || !s[key].is_array()) continue;
    auto& dst = std::string(key) == "userFramesInclude" ? config_.user_frames_include
                                                        : config_.user_frames_exclude;
    dst.clear();
    for (const auto& g : s[key])
      if (g.is_string()) dst.push_back(g);
  }
}

void Session::PullConfiguration() {
  out_.Call("workspace/configuration",
            proto::ConfigurationParams{{proto::ConfigurationItem{"ttap"}}},
            [this](const json& result, const json& error) {
              if (error.is_null() && result.is_array() && !result.empty()) ApplySettings(result[0]);
              RequestAnalysis(true);
            });
}

}  // namespace ttap::lsp

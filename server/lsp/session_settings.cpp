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
  UpdateSettings([&](SessionSettings& s) {
    for (const auto& f : params.event.removed) {
      std::string p = UriToPath(f.uri);
      s.roots.erase(std::remove(s.roots.begin(), s.roots.end(), p), s.roots.end());
    }
    for (const auto& f : params.event.added) s.roots.push_back(UriToPath(f.uri));
  });
  RequestAnalysis(true);
}

namespace {

// |settings| as the editor's `ttap` section |s| amends them; what is out of bounds goes to
// |refused|.
void EditSettings(const json& s, SessionSettings* settings_out,
                  std::vector<std::string>* refused_out) {
  SessionSettings& settings = *settings_out;
  std::vector<std::string>& refused = *refused_out;
  if (s.contains("traceGlobs") && s["traceGlobs"].is_array()) {
    settings.config.trace_globs.clear();
    for (const auto& g : s["traceGlobs"])
      if (g.is_string()) settings.config.trace_globs.push_back(g);
  }
  // Every value is checked as the config file's is: one out of its bounds is refused (and said),
  // never clamped into something the user did not ask for.
  if (s.contains("rank")) {
    if (s["rank"].is_number_integer() && s["rank"].get<int64_t>() >= -1 &&
        s["rank"].get<int64_t>() <= 1 << 20) {
      settings.rank = s["rank"];
    } else if (!s["rank"].is_null()) {
      refused.push_back("ttap.rank must be an integer between -1 and 1048576");
    }
  }
  if (s.contains("windows") && !s["windows"].is_null()) {
    if (s["windows"].is_number_integer() && s["windows"].get<int64_t>() >= kMinWindows &&
        s["windows"].get<int64_t>() <= kMaxWindows) {
      settings.config.windows = s["windows"];
    } else {
      refused.push_back("ttap.windows must be an integer between " + std::to_string(kMinWindows) +
                        " and " + std::to_string(kMaxWindows));
    }
  }
  if (s.contains("thresholds") && s["thresholds"].is_object()) {
    for (auto& [k, v] : s["thresholds"].items()) {
      if (v.is_number() && std::isfinite(v.get<double>()) && std::abs(v.get<double>()) <= 1e12) {
        settings.config.thresholds[k] = v;
      } else {
        refused.push_back("ttap.thresholds." + k + " must be a number");
      }
    }
  }
  if (s.contains("pathMaps") && s["pathMaps"].is_object()) {
    settings.config.path_maps.clear();
    for (auto& [k, v] : s["pathMaps"].items())
      if (v.is_string()) settings.config.path_maps.emplace_back(k, v);
  }
  if (s.contains("llm") && s["llm"].is_object()) {
    const json& l = s["llm"];
    auto text = [&](const char* key) -> std::optional<std::string> {
      if (!l.contains(key) || !l[key].is_string() || l[key].get<std::string>().empty())
        return std::nullopt;
      return l[key].get<std::string>();
    };
    settings.llm_editor.base_url = text("baseUrl");
    settings.llm_editor.model = text("model");
    settings.llm_editor.api_key_env = text("apiKeyEnv");
    if (auto auth = text("authHeader"))
      settings.config.llm.auth_header = *auth == "api-key" ? "api-key" : "bearer";
    if (l.contains("maxDrafts") && l["maxDrafts"].is_number_integer())
      settings.config.llm.max_drafts = std::clamp(l["maxDrafts"].get<int>(), 0, 100);
    if (l.contains("timeoutSeconds") && l["timeoutSeconds"].is_number())
      settings.config.llm.timeout_s = std::clamp(l["timeoutSeconds"].get<double>(), 0.1, 3600.0);
    settings.llm_enabled = l.contains("enabled") && l["enabled"].is_boolean()
                               ? l["enabled"].get<bool>()
                               : settings.llm_editor.base_url.has_value();
  }
  if (s.contains("model") && s["model"].is_object()) {
    const json& m = s["model"];
    if (m.contains("enabled") && m["enabled"].is_boolean()) settings.model_enabled = m["enabled"];
    if (m.contains("path") && m["path"].is_string()) settings.model_path = m["path"];
    if (m.contains("device") && m["device"].is_string()) {
      const std::string d = m["device"];
      settings.model_device = d == "cpu" || d == "cuda" ? d : "auto";
    }
    if (m.contains("threshold")) {  // null (or out of [0, 1]): the file's own
      const double t = m["threshold"].is_number() ? m["threshold"].get<double>() : -1;
      settings.model_threshold = t >= 0 && t <= 1 ? t : -1;
    }
  }
  for (const char* key : {"select", "ignore"}) {
    if (!s.contains(key) || !s[key].is_array()) continue;
    std::vector<std::string> codes;
    for (const auto& c : s[key])
      if (c.is_string()) codes.push_back(c);
    // Empty (the editor's default) keeps the project's list.
    if (!codes.empty() && CheckCodeList(codes).empty())
      (std::string(key) == "select" ? settings.config.select : settings.config.ignore) = codes;
  }
  for (const char* key : {"userFramesInclude", "userFramesExclude"}) {
    if (!s.contains(key) || !s[key].is_array()) continue;
    auto& dst = std::string(key) == "userFramesInclude" ? settings.config.user_frames_include
                                                        : settings.config.user_frames_exclude;
    dst.clear();
    for (const auto& g : s[key])
      if (g.is_string()) dst.push_back(g);
  }
}

}  // namespace

void Session::ApplySettings(const json& s) {
  if (!s.is_object()) return;
  std::vector<std::string> refused;
  UpdateSettings([&](SessionSettings& settings) {
    refused.clear();
    EditSettings(s, &settings, &refused);
  });
  if (!refused.empty()) {
    std::string text = "ttap: settings ignored: ";
    for (size_t i = 0; i < refused.size() && i < 5; ++i) text += (i ? "; " : "") + refused[i];
    Log(text);
    out_.Notify("window/showMessage", proto::ShowMessageParams{proto::MessageType::kWarning, text});
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

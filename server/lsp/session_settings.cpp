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

// |settings| as the editor's (typed) `ttap` section amends them.
void ApplyTtapSettings(const proto::TtapSettings& t, SessionSettings* settings) {
  Config& config = settings->config;
  if (t.trace_globs) config.trace_globs = *t.trace_globs;
  if (t.rank) settings->rank = *t.rank;
  if (t.windows) config.windows = *t.windows;
  for (const auto& [key, value] : t.thresholds) config.thresholds[key] = value;
  if (t.path_maps) config.path_maps = *t.path_maps;
  if (t.llm) {
    // The editor's values win over TTAP_LLM_* variables, which win over [tool.ttap.llm].
    settings->llm_editor.base_url = t.llm->base_url;
    settings->llm_editor.model = t.llm->model;
    settings->llm_editor.api_key_env = t.llm->api_key_env;
    if (t.llm->auth_header) config.llm.auth_header = *t.llm->auth_header;
    if (t.llm->max_drafts) config.llm.max_drafts = *t.llm->max_drafts;
    if (t.llm->timeout_s) config.llm.timeout_s = *t.llm->timeout_s;
    settings->llm_enabled = t.llm->enabled.value_or(t.llm->base_url.has_value());
  }
  if (t.model) {
    if (t.model->path) settings->model_path = *t.model->path;
    // Naming weights turns the scorer on unless enabled says otherwise.
    settings->model_enabled =
        t.model->enabled.value_or(settings->model_enabled || !settings->model_path.empty());
    if (t.model->device) settings->model_device = *t.model->device;
    if (t.model->threshold) settings->model_threshold = *t.model->threshold;
  }
  if (t.select) config.select = *t.select;
  if (t.ignore) config.ignore = *t.ignore;
  if (t.user_frames_include) config.user_frames_include = *t.user_frames_include;
  if (t.user_frames_exclude) config.user_frames_exclude = *t.user_frames_exclude;
}

}  // namespace

void Session::ApplySettings(const json& s) {
  if (!s.is_object()) return;
  const proto::TtapSettings typed = proto::ReadTtapSettings(s);
  UpdateSettings([&](SessionSettings& settings) { ApplyTtapSettings(typed, &settings); });
  const std::vector<std::string>& refused = typed.refused;
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

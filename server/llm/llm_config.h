// Where the LLM settings come from: command-line flags win over the environment variables
// TTAP_LLM_BASE_URL / TTAP_LLM_MODEL / TTAP_LLM_API_KEY_ENV, which win over the configuration
// file's [tool.ttap.llm] (server/config.h). Used by `ttap scan --llm` and the language server.
#pragma once

#include <optional>
#include <string>

#include "analysis/base/status.h"
#include "server/config.h"
#include "server/llm/drafter.h"
#include "server/llm/llm_client.h"

namespace ttap::llm {

struct LlmOverrides {
  std::optional<std::string> base_url;
  std::optional<std::string> model;
  std::optional<std::string> api_key_env;
};

// The settings for an endpoint that is being turned on: an error names what is missing (the
// base URL or the model) and where it can be given.
StatusOr<LlmSettings> ResolveLlmSettings(const LlmConfig& file, const LlmOverrides& flags);
DraftOptions DraftOptionsFrom(const LlmConfig& file);

}  // namespace ttap::llm

// LLM settings resolution; see llm_config.h.
#include "server/llm/llm_config.h"

#include <cstdlib>

namespace ttap::llm {

namespace {

std::string Pick(const std::optional<std::string>& flag, const char* env, const std::string& file) {
  if (flag) return *flag;
  if (const char* v = std::getenv(env); v && *v) return v;
  return file;
}

}  // namespace

StatusOr<LlmSettings> ResolveLlmSettings(const LlmConfig& file, const LlmOverrides& flags) {
  LlmSettings s;
  s.base_url = Pick(flags.base_url, "TTAP_LLM_BASE_URL", file.base_url);
  s.model = Pick(flags.model, "TTAP_LLM_MODEL", file.model);
  s.api_key_env = Pick(flags.api_key_env, "TTAP_LLM_API_KEY_ENV", file.api_key_env);
  if (s.base_url.empty())
    return Status::Error(
        "LLM drafting needs an endpoint: --llm-base-url URL, TTAP_LLM_BASE_URL or base_url in "
        "[tool.ttap.llm] (e.g. http://127.0.0.1:11434/v1 for Ollama)");
  if (s.base_url.rfind("http://", 0) != 0 && s.base_url.rfind("https://", 0) != 0)
    return Status::Error("the LLM base URL must start with http:// or https://");
  if (s.model.empty())
    return Status::Error(
        "LLM drafting needs a model: --llm-model NAME, TTAP_LLM_MODEL or model in "
        "[tool.ttap.llm]");
  s.auth_header = file.auth_header == "api-key" ? AuthHeader::kApiKey : AuthHeader::kBearer;
  s.timeout_ms = static_cast<int>(file.timeout_s * 1000);
  s.max_concurrent = file.max_concurrent;
  s.max_tokens = file.max_tokens;
  s.temperature = file.temperature;
  s.retries = file.retries;
  return s;
}

DraftOptions DraftOptionsFrom(const LlmConfig& file) {
  DraftOptions o;
  o.max_drafts = file.max_drafts;
  o.min_confidence = file.min_confidence;
  o.feedback_rounds = file.feedback_rounds;
  return o;
}

}  // namespace ttap::llm

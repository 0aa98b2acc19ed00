// LlmClient: asks an OpenAI-compatible `/v1/chat/completions` endpoint (OpenAI, Azure OpenAI,
// vLLM, Ollama, llama.cpp server, LM Studio) for a *draft* about one finding: a catalogue code,
// a confidence, a Markdown explanation and optionally a fix as line/column edits. Requests run on
// a small pool of worker threads (libcurl easy handles, TLS verification on), so callers never
// block on the network; each one can be cancelled, is retried with exponential backoff on 429
// and 5xx (honouring a small Retry-After), gives up cleanly on timeouts and on replies larger
// than a cap, and its reply is validated against the draft schema (ParseChatReply). Rejections
// are logged to stderr with the reason.
//
// The API key is read from the environment variable *named* in the settings at request time,
// sent only in the auth header to the configured endpoint (never over plain http to a host that
// is not loopback), and never logged, echoed in an error or written anywhere.
//
// Used by the drafter (drafter.h) for `ttap scan --llm` and the language server; nothing here is
// used unless the user turned drafting on. Thread-safe: Submit from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/base/cancel.h"
#include "analysis/base/parallel.h"
#include "analysis/base/status.h"

namespace ttap::llm {

enum class AuthHeader {
  kBearer,
  kApiKey
};  // `Authorization: Bearer KEY` or Azure's `api-key: KEY`

struct LlmSettings {
  std::string base_url;     // with the version path, e.g. http://127.0.0.1:11434/v1; empty = off
  std::string model;        // e.g. "qwen2.5-coder:7b"
  std::string api_key_env;  // the NAME of the environment variable holding the key; empty = none
  AuthHeader auth_header = AuthHeader::kBearer;
  int timeout_ms = 60000;  // whole request (connect + reply)
  int connect_timeout_ms = 10000;
  int max_concurrent = 2;  // worker threads, i.e. requests in flight at once
  int max_tokens = 1024;
  double temperature = 0.1;
  int retries = 3;                   // extra attempts after a 429 / 5xx
  int retry_base_ms = 500;           // backoff: base * 2^attempt
  int max_retry_after_ms = 20000;    // a longer Retry-After gives up instead of waiting
  size_t max_reply_bytes = 4 << 20;  // larger replies are rejected
  bool enabled() const { return !base_url.empty(); }
};

// One edit of a drafted fix: 1-based lines, 1-based columns in Unicode code points, end
// exclusive, against the file of the source snippet the prompt showed.
struct DraftEdit {
  int start_line = 0;
  int start_column = 0;
  int end_line = 0;
  int end_column = 0;
  std::string new_text;
};

struct DraftFix {
  std::string description;
  std::vector<DraftEdit> edits;
};

// A validated reply.
struct Draft {
  std::string model;
  std::string category;   // a catalogue code (TTA001..) or TTA900 (unusual window)
  double confidence = 0;  // 0..1
  std::string explanation_markdown;
  std::optional<DraftFix> fix;
  std::string fix_dropped;          // why the reply's fix was not kept ("" when none was)
  bool wants_more_context = false;  // the reply set "need_more_context": true
};

enum class ReplyError {
  kNone,
  kCancelled,  // the caller's cancel flag (or the client's shutdown)
  kTimeout,    // no complete reply within timeout_ms
  kConnect,    // connection refused, host not found
  kHttp,       // a non-2xx status that is not retried, or retries exhausted
  kTooLarge,   // the reply exceeded max_reply_bytes
  kNotJson,    // the body, or the message content, is not JSON
  kOffSchema,  // JSON, but not the draft schema
  kKey,        // the named key variable is unset, or it would go over plain http
  kTransport,  // any other transfer failure
};
const char* ReplyErrorName(ReplyError e);

struct LlmReply {
  ReplyError error = ReplyError::kNone;
  std::string message;  // why it failed (never contains the key)
  int http_status = 0;  // of the last attempt, 0 when none
  int attempts = 0;     // HTTP requests made
  std::optional<Draft> draft;
  bool ok() const { return error == ReplyError::kNone && draft.has_value(); }
};

struct ChatRequest {
  std::string system;
  std::string user;
};

using CancelFlag = CancelToken;  // analysis/base/cancel.h: the one cancellation type

// The catalogue codes a draft may name: RuleCatalogue() plus TTA900.
bool IsDraftCategory(const std::string& code);

// Validates one draft object (the message content, or a cache entry): category, confidence in
// 0..1, explanation_markdown (non-empty, at most 32 KiB), fix null or {description, edits[1..20]
// with 1 <= start <= end}. The error names the offending field.
// "" when libcurl (opened at run time, only for LLM drafts) can be loaded; else why not.
std::string LibcurlProblem();

StatusOr<Draft> DraftFromJson(const nlohmann::json& j, const std::string& model);
nlohmann::json DraftToJson(
    const Draft& d);  // {model, category, confidence, explanation_markdown, fix}

// Parses a chat-completions response body: choices[0].message.content must hold one JSON object
// (a ```json fence around it is tolerated) that DraftFromJson accepts. Sets error kNotJson or
// kOffSchema and the message on failure.
LlmReply ParseChatReply(const std::string& body, const std::string& model);

// base_url + "/chat/completions", keeping a query string at the end (Azure's
// ".../deployments/NAME?api-version=2024-06-01").
std::string ChatCompletionsUrl(const std::string& base_url);

// The request body: model, the two messages, max_tokens, temperature, and
// response_format {"type": "json_object"}.
std::string ChatRequestBody(const LlmSettings& settings, const ChatRequest& request);

class LlmClient {
 public:
  using Log = std::function<void(const std::string&)>;
  // |log| receives one line per rejected reply, retry or give-up (default: stderr, prefixed
  // "ttap: llm: ").
  explicit LlmClient(LlmSettings settings, Log log = nullptr);
  // Cancels what is queued or in flight and joins the workers.
  ~LlmClient();
  LlmClient(const LlmClient&) = delete;
  LlmClient& operator=(const LlmClient&) = delete;

  // Queues |request|; the future is set (and |on_done| called, on a worker thread) when it ends.
  // Cancelling |cancel| aborts it promptly, queued or in flight.
  std::future<LlmReply> Submit(ChatRequest request, CancelFlag cancel = {},
                               std::function<void(const LlmReply&)> on_done = nullptr);
  // Submit and wait.
  LlmReply Complete(ChatRequest request, CancelFlag cancel = {});

  const LlmSettings& settings() const { return settings_; }

 private:
  struct Job {
    ChatRequest request;
    CancelFlag cancel;
    std::promise<LlmReply> promise;
    std::function<void(const LlmReply&)> on_done;
  };
  void WorkerLoop();
  LlmReply Run(void* curl, const ChatRequest& request, const CancelToken& cancel);
  // Sleeps |ms| unless cancelled or shutting down; false when interrupted.
  bool Backoff(int ms, const CancelToken& cancel);
  void Emit(const std::string& line, const std::string& key);

  const LlmSettings settings_;
  Log log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  WorkerGroup workers_;  // grown on demand, up to the configured parallelism
  bool stopping_ = false;
  std::atomic<bool> shutdown_{false};
};

// |text| with every occurrence of |secret| replaced by "[redacted]" (no-op for an empty secret).
std::string Redact(std::string text, const std::string& secret);

}  // namespace ttap::llm

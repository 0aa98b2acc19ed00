// The chat-completions client over libcurl and the draft schema; see llm_client.h.
#include "server/llm/llm_client.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "analysis/base/nesting_depth.h"
#include "analysis/rules/rules.h"

namespace ttap::llm {

namespace {

constexpr size_t kMaxExplanationBytes = 32 * 1024;
constexpr size_t kMaxEdits = 20;
constexpr size_t kMaxNewTextBytes = 8 * 1024;

// libcurl, opened on first use (dlopen): a machine without it gets everything but LLM drafts,
// and the binary carries no libcurl dependency (nor its ~35 libraries) for the editor packages.
struct CurlApi {
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  void (*easy_reset)(CURL*) = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  std::string error;  // why it could not be opened ("" when it was)
};

const CurlApi& Curl() {
  static const CurlApi api = [] {
    CurlApi a;
    void* lib = nullptr;
    for (const char* name : {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (!lib) {
      a.error = "libcurl is not installed (LLM drafts need libcurl.so.4: apt-get install libcurl4)";
      return a;
    }
    auto load = [&](auto* fn, const char* symbol) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(lib, symbol));
      if (!*fn && a.error.empty()) a.error = std::string("libcurl lacks ") + symbol;
    };
    load(&a.global_init, "curl_global_init");
    load(&a.easy_init, "curl_easy_init");
    load(&a.easy_cleanup, "curl_easy_cleanup");
    load(&a.easy_reset, "curl_easy_reset");
    load(&a.easy_setopt, "curl_easy_setopt");
    load(&a.easy_perform, "curl_easy_perform");
    load(&a.easy_getinfo, "curl_easy_getinfo");
    load(&a.easy_strerror, "curl_easy_strerror");
    load(&a.slist_append, "curl_slist_append");
    load(&a.slist_free_all, "curl_slist_free_all");
    if (a.error.empty()) a.global_init(CURL_GLOBAL_DEFAULT);
    return a;
  }();
  return api;
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// The content without a surrounding ```json ... ``` fence.
std::string Unfence(const std::string& content) {
  std::string t = Trim(content);
  if (t.rfind("```", 0) != 0) return t;
  size_t first_nl = t.find('\n');
  size_t last = t.rfind("```");
  if (first_nl == std::string::npos || last <= first_nl) return t;
  return Trim(t.substr(first_nl + 1, last - first_nl - 1));
}

// A short, single-line excerpt of a body for error messages.
std::string Excerpt(const std::string& body, size_t max = 160) {
  std::string s = body.substr(0, max);
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (body.size() > max) s += "...";
  return s;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// "http://HOST:PORT/path" -> scheme "http", host "HOST".
void SplitUrl(const std::string& url, std::string* scheme, std::string* host) {
  size_t sep = url.find("://");
  if (sep == std::string::npos) {
    *scheme = "";
    *host = "";
    return;
  }
  *scheme = url.substr(0, sep);
  for (char& c : *scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string rest = url.substr(sep + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  size_t at = rest.rfind('@');
  if (at != std::string::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest[0] == '[') {
    *host = rest.substr(0, rest.find(']') + 1);
  } else {
    *host = rest.substr(0, rest.find(':'));
  }
}

struct Transfer {
  std::string body;
  size_t cap = 0;
  bool too_large = false;
  std::string retry_after;
  const CancelToken* cancel = nullptr;
  const std::atomic<bool>* shutdown = nullptr;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  if (t->body.size() + n > t->cap) {
    t->too_large = true;
    return 0;  // CURLE_WRITE_ERROR: stop reading
  }
  t->body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  std::string line(data, n);
  if (line.size() > 12 && strncasecmp(line.c_str(), "retry-after:", 12) == 0) {
    t->retry_after = Trim(line.substr(12));
  }
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if ((t->cancel && t->cancel->cancelled()) || (t->shutdown && t->shutdown->load())) return 1;
  return 0;
}

bool Retryable(long status) { return status == 429 || (status >= 500 && status <= 599); }

}  // namespace

const char* ReplyErrorName(ReplyError e) {
  switch (e) {
    case ReplyError::kNone:
      return "ok";
    case ReplyError::kCancelled:
      return "cancelled";
    case ReplyError::kTimeout:
      return "timeout";
    case ReplyError::kConnect:
      return "connect";
    case ReplyError::kHttp:
      return "http";
    case ReplyError::kTooLarge:
      return "too-large";
    case ReplyError::kNotJson:
      return "not-json";
    case ReplyError::kOffSchema:
      return "off-schema";
    case ReplyError::kKey:
      return "api-key";
    case ReplyError::kTransport:
      return "transport";
  }
  return "?";
}

std::string Redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (size_t p = text.find(secret); p != std::string::npos; p = text.find(secret, p)) {
    text.replace(p, secret.size(), "[redacted]");
    p += 10;
  }
  return text;
}

bool IsDraftCategory(const std::string& code) { return FindRule(code) != nullptr; }

// The draft's "fix" object; an error names what is wrong with it.
StatusOr<DraftFix> DraftFixFromJson(const nlohmann::json& f) {
  if (!f.is_object()) return Status::Error("fix: not an object or null");
  DraftFix fix;
  if (!f.contains("description") || !f["description"].is_string())
    return Status::Error("fix.description: missing or not a string");
  fix.description = f["description"].get<std::string>();
  if (!f.contains("edits") || !f["edits"].is_array())
    return Status::Error("fix.edits: missing or not an array");
  if (f["edits"].empty() || f["edits"].size() > kMaxEdits)
    return Status::Error("fix.edits: needs 1 to " + std::to_string(kMaxEdits) + " edits");
  for (size_t i = 0; i < f["edits"].size(); ++i) {
    const nlohmann::json& e = f["edits"][i];
    std::string where = "fix.edits[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::Error(where + ": not an object");
    DraftEdit edit;
    int* fields[] = {&edit.start_line, &edit.start_column, &edit.end_line, &edit.end_column};
    const char* names[] = {"start_line", "start_column", "end_line", "end_column"};
    for (int k = 0; k < 4; ++k) {
      if (!e.contains(names[k]) || !e[names[k]].is_number_integer())
        return Status::Error(where + "." + names[k] + ": missing or not an integer");
      int64_t v = e[names[k]].get<int64_t>();
      if (v < 1 || v > 10000000)
        return Status::Error(where + "." + names[k] + ": must be >= 1 (1-based)");
      *fields[k] = static_cast<int>(v);
    }
    if (edit.end_line < edit.start_line ||
        (edit.end_line == edit.start_line && edit.end_column < edit.start_column))
      return Status::Error(where + ": ends before it starts");
    if (!e.contains("new_text") || !e["new_text"].is_string())
      return Status::Error(where + ".new_text: missing or not a string");
    edit.new_text = e["new_text"].get<std::string>();
    if (edit.new_text.size() > kMaxNewTextBytes)
      return Status::Error(where + ".new_text: over " + std::to_string(kMaxNewTextBytes) +
                           " bytes");
    fix.edits.push_back(std::move(edit));
  }
  return fix;
}

std::string LibcurlProblem() { return Curl().error; }

StatusOr<Draft> DraftFromJson(const nlohmann::json& j, const std::string& model) {
  if (!j.is_object()) return Status::Error("the draft is not a JSON object");
  Draft d;
  d.model = model;
  if (!j.contains("category") || !j["category"].is_string())
    return Status::Error("category: missing or not a string");
  d.category = j["category"].get<std::string>();
  if (!IsDraftCategory(d.category))
    return Status::Error("category: '" + Excerpt(d.category, 40) +
                         "' is not a catalogue code (TTA001..TTA014, TTA900)");
  if (!j.contains("confidence") || !j["confidence"].is_number())
    return Status::Error("confidence: missing or not a number");
  d.confidence = j["confidence"].get<double>();
  if (!(d.confidence >= 0 && d.confidence <= 1))
    return Status::Error("confidence: " + std::to_string(d.confidence) + " is outside 0..1");
  if (!j.contains("explanation_markdown") || !j["explanation_markdown"].is_string())
    return Status::Error("explanation_markdown: missing or not a string");
  d.explanation_markdown = j["explanation_markdown"].get<std::string>();
  if (Trim(d.explanation_markdown).empty()) return Status::Error("explanation_markdown: empty");
  if (d.explanation_markdown.size() > kMaxExplanationBytes)
    return Status::Error("explanation_markdown: " + std::to_string(d.explanation_markdown.size()) +
                         " bytes, over the " + std::to_string(kMaxExplanationBytes) + " limit");
  if (j.contains("need_more_context")) {
    if (!j["need_more_context"].is_boolean())
      return Status::Error("need_more_context: not a boolean");
    d.wants_more_context = j["need_more_context"].get<bool>();
  }
  // A fix that does not hold up is dropped, and why is kept: the category and the
  // explanation stand on their own (local models often draft a fix with no edits).
  if (j.contains("fix") && !j["fix"].is_null()) {
    auto fix = DraftFixFromJson(j["fix"]);
    if (fix.ok())
      d.fix = std::move(fix.value());
    else
      d.fix_dropped = fix.status().message();
  }
  return d;
}

nlohmann::json DraftToJson(const Draft& d) {
  nlohmann::json fix = nullptr;
  if (d.fix) {
    nlohmann::json edits = nlohmann::json::array();
    for (const DraftEdit& e : d.fix->edits) {
      edits.push_back({{"start_line", e.start_line},
                       {"start_column", e.start_column},
                       {"end_line", e.end_line},
                       {"end_column", e.end_column},
                       {"new_text", e.new_text}});
    }
    fix = {{"description", d.fix->description}, {"edits", edits}};
  }
  return {{"model", d.model},
          {"category", d.category},
          {"confidence", d.confidence},
          {"explanation_markdown", d.explanation_markdown},
          {"fix", fix}};
}

LlmReply ParseChatReply(const std::string& body, const std::string& model) {
  LlmReply r;
  if (NestingExceeds(body, kMaxJsonNesting, TextSyntax::kJson)) {
    r.error = ReplyError::kNotJson;
    r.message = "the reply nests deeper than " + std::to_string(kMaxJsonNesting) + " levels";
    return r;
  }
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.error = ReplyError::kNotJson;
    r.message = "the reply is not a JSON object: " + Excerpt(body);
    return r;
  }
  const nlohmann::json* content = nullptr;
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty() &&
      j["choices"][0].is_object() && j["choices"][0].contains("message") &&
      j["choices"][0]["message"].is_object() && j["choices"][0]["message"].contains("content")) {
    content = &j["choices"][0]["message"]["content"];
  }
  if (!content || !content->is_string()) {
    r.error = ReplyError::kOffSchema;
    r.message = "the reply has no choices[0].message.content string";
    return r;
  }
  const std::string text = Unfence(content->get<std::string>());
  nlohmann::json draft = NestingExceeds(text, kMaxJsonNesting, TextSyntax::kJson)
                             ? nlohmann::json(nlohmann::json::value_t::discarded)
                             : nlohmann::json::parse(text, nullptr, false);
  if (draft.is_discarded()) {
    r.error = ReplyError::kNotJson;
    r.message = "the message content is not JSON: " + Excerpt(content->get<std::string>());
    return r;
  }
  auto d = DraftFromJson(draft, model);
  if (!d.ok()) {
    r.error = ReplyError::kOffSchema;
    r.message = "the draft is off the schema: " + d.status().message();
    return r;
  }
  r.draft = std::move(d.value());
  return r;
}

std::string ChatRequestBody(const LlmSettings& settings, const ChatRequest& request) {
  nlohmann::json body = {{"model", settings.model},
                         {"messages",
                          {{{"role", "system"}, {"content", request.system}},
                           {{"role", "user"}, {"content", request.user}}}},
                         {"max_tokens", settings.max_tokens},
                         {"temperature", settings.temperature},
                         {"response_format", {{"type", "json_object"}}},
                         {"stream", false}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ChatCompletionsUrl(const std::string& base_url) {
  size_t query = base_url.find('?');
  std::string base = base_url.substr(0, query);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/chat/completions" + (query == std::string::npos ? "" : base_url.substr(query));
}

// ---- LlmClient ----

LlmClient::LlmClient(LlmSettings settings, Log log)
    : settings_(std::move(settings)), log_(std::move(log)) {
  Curl();
}

LlmClient::~LlmClient() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    shutdown_.store(true);
  }
  cv_.notify_all();
  workers_.Join();
  for (Job& job : queue_) {
    LlmReply r;
    r.error = ReplyError::kCancelled;
    r.message = "the client shut down";
    if (job.on_done) job.on_done(r);
    job.promise.set_value(std::move(r));
  }
}

void LlmClient::Emit(const std::string& line, const std::string& key) {
  std::string safe = Redact(line, key);
  if (log_) {
    log_(safe);
  } else {
    std::fprintf(stderr, "ttap: llm: %s\n", safe.c_str());
  }
}

std::future<LlmReply> LlmClient::Submit(ChatRequest request, CancelFlag cancel,
                                        std::function<void(const LlmReply&)> on_done) {
  Job job;
  job.request = std::move(request);
  job.cancel = std::move(cancel);
  job.on_done = std::move(on_done);
  std::future<LlmReply> f = job.promise.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      LlmReply r;
      r.error = ReplyError::kCancelled;
      r.message = "the client shut down";
      job.promise.set_value(r);
      return f;
    }
    queue_.push_back(std::move(job));
    const size_t want = static_cast<size_t>(std::max(1, settings_.max_concurrent));
    if (workers_.size() < want) workers_.Start(1, [this](size_t) { WorkerLoop(); });
  }
  cv_.notify_one();
  return f;
}

LlmReply LlmClient::Complete(ChatRequest request, CancelFlag cancel) {
  return Submit(std::move(request), std::move(cancel)).get();
}

void LlmClient::WorkerLoop() {
  // One easy handle per worker: connections to the endpoint are reused between requests.
  const CurlApi& api = Curl();
  CURL* curl = api.error.empty() ? api.easy_init() : nullptr;
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    LlmReply r;
    if (!curl) {
      r.error = ReplyError::kTransport;
      r.message = api.error.empty() ? "curl_easy_init failed" : api.error;
    } else {
      r = Run(curl, job.request, job.cancel);
    }
    if (job.on_done) job.on_done(r);
    job.promise.set_value(std::move(r));
  }
  if (curl) api.easy_cleanup(curl);
}

bool LlmClient::Backoff(int ms, const CancelToken& cancel) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (shutdown_.load() || cancel.cancelled()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return !(shutdown_.load() || cancel.cancelled());
}

LlmReply LlmClient::Run(void* handle, const ChatRequest& request, const CancelToken& cancel) {
  CURL* curl = static_cast<CURL*>(handle);
  const CurlApi& api = Curl();
  LlmReply r;
  const std::string url = ChatCompletionsUrl(settings_.base_url);
  // The key: read now, from the variable the settings name; only ever placed in a header.
  std::string key;
  auto fail = [&](ReplyError error, const std::string& message) {
    r.error = error;
    r.message = Redact(message, key);
    Emit(r.message, key);
    return r;
  };
  if (!settings_.api_key_env.empty()) {
    const char* v = std::getenv(settings_.api_key_env.c_str());
    if (!v || !*v) {
      return fail(ReplyError::kKey,
                  "the API key variable " + settings_.api_key_env + " is not set");
    }
    key = v;
    std::string scheme, host;
    SplitUrl(url, &scheme, &host);
    if (scheme != "https" && !IsLoopbackHost(host)) {
      return fail(ReplyError::kKey, "refusing to send the API key over " + scheme + " to " + host +
                                        " (use https, or a loopback address for a local server)");
    }
  }
  const std::string body = ChatRequestBody(settings_, request);
  for (int attempt = 0;; ++attempt) {
    if (cancel.cancelled() || shutdown_.load()) {
      r.error = ReplyError::kCancelled;
      r.message = "cancelled";
      return r;
    }
    Transfer t;
    t.cap = settings_.max_reply_bytes;
    t.cancel = &cancel;
    t.shutdown = &shutdown_;
    t.body.reserve(16 * 1024);
    char errbuf[CURL_ERROR_SIZE] = {0};
    std::string auth = settings_.auth_header == AuthHeader::kApiKey
                           ? "api-key: " + key
                           : "Authorization: Bearer " + key;
    curl_slist* headers = nullptr;
    headers = api.slist_append(headers, "Content-Type: application/json");
    headers = api.slist_append(headers, "Accept: application/json");
    headers = api.slist_append(headers, "Expect:");  // no 100-continue round trip
    if (!key.empty()) headers = api.slist_append(headers, auth.c_str());
    api.easy_reset(curl);
    api.easy_setopt(curl, CURLOPT_URL, url.c_str());
    api.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    api.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // the key never follows a redirect
    api.easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    api.easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    api.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    api.easy_setopt(curl, CURLOPT_POST, 1L);
    api.easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    api.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    api.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    api.easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(settings_.timeout_ms));
    api.easy_setopt(
        curl, CURLOPT_CONNECTTIMEOUT_MS,
        static_cast<long>(std::min(settings_.connect_timeout_ms, settings_.timeout_ms)));
    api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
    api.easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    api.easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    api.easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    api.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    api.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
    api.easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    api.easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    api.easy_setopt(curl, CURLOPT_USERAGENT, "ttap-llm/1");
    CURLcode rc = api.easy_perform(curl);
    long status = 0;
    api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    api.easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
    api.slist_free_all(headers);
    std::fill(auth.begin(), auth.end(), '\0');
    ++r.attempts;
    r.http_status = static_cast<int>(status);
    // A server that echoes the key (in an error, or in the draft) must not carry it further.
    t.body = Redact(std::move(t.body), key);
    if (rc != CURLE_OK) {
      std::string detail = errbuf[0] ? errbuf : api.easy_strerror(rc);
      if (t.too_large) {
        return fail(ReplyError::kTooLarge, "the reply is larger than " +
                                               std::to_string(settings_.max_reply_bytes) +
                                               " bytes; rejected");
      }
      if (rc == CURLE_ABORTED_BY_CALLBACK) {
        r.error = ReplyError::kCancelled;
        r.message = "cancelled";
        return r;  // not worth a log line
      }
      if (rc == CURLE_OPERATION_TIMEDOUT) {
        return fail(ReplyError::kTimeout, "no reply from " + url + " within " +
                                              std::to_string(settings_.timeout_ms) +
                                              " ms; giving up");
      }
      if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
          rc == CURLE_COULDNT_RESOLVE_PROXY) {
        return fail(ReplyError::kConnect, "cannot connect to " + url + ": " + detail);
      }
      return fail(ReplyError::kTransport, "request to " + url + " failed: " + detail);
    }
    if (Retryable(status) && attempt < settings_.retries) {
      int wait_ms = settings_.retry_base_ms << std::min(attempt, 16);
      if (!t.retry_after.empty()) {
        char* end = nullptr;
        long secs = std::strtol(t.retry_after.c_str(), &end, 10);
        if (end && *end == '\0' && secs >= 0) {
          if (secs * 1000 > settings_.max_retry_after_ms) {
            return fail(ReplyError::kHttp, "HTTP " + std::to_string(status) + " from " + url +
                                               ": the server asks to retry after " +
                                               std::to_string(secs) + " s; giving up");
          }
          wait_ms = static_cast<int>(secs * 1000);
        }
      }
      Emit("HTTP " + std::to_string(status) + " from " + url + "; retry " +
               std::to_string(attempt + 1) + "/" + std::to_string(settings_.retries) + " in " +
               std::to_string(wait_ms) + " ms",
           key);
      if (!Backoff(wait_ms, cancel)) {
        r.error = ReplyError::kCancelled;
        r.message = "cancelled";
        return r;
      }
      continue;
    }
    if (status < 200 || status > 299) {
      return fail(ReplyError::kHttp,
                  "HTTP " + std::to_string(status) + " from " + url +
                      (attempt > 0 ? " after " + std::to_string(attempt + 1) + " attempts" : "") +
                      ": " + Excerpt(t.body));
    }
    LlmReply parsed = ParseChatReply(t.body, settings_.model);
    parsed.attempts = r.attempts;
    parsed.http_status = r.http_status;
    if (!parsed.ok()) {
      parsed.message = Redact(parsed.message, key);
      Emit("rejected the reply of " + settings_.model + ": " + parsed.message, key);
    }
    return parsed;
  }
}

}  // namespace ttap::llm

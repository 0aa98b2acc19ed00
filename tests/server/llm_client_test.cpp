// LLM drafts (server/llm/) against a real HTTP/1.1 server on 127.0.0.1 started by each test
// (http_test_server.h; no mocked client): a normal reply, a body that is not JSON, a reply off
// the schema, a slow reply past the timeout, 429 then success, a 5 MB reply, connection
// refused and a cancelled request, each followed by a request that works on the same client;
// the API key reaching the server but never the logs, errors or cache files; the draft cache,
// the prompt, the feedback rounds, the fix checks; and `ttap scan --llm --format json` end to
// end.
#include "server/llm/llm_client.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>

#include "analysis/load/trace_loader.h"
#include "fixture_traces.h"
#include "http_test_server.h"
#include "lsp_client.h"
#include "lsp_fixtures.h"
#include "mapping/workspace_index.h"
#include "server/config.h"
#include "server/llm/draft_cache.h"
#include "server/llm/drafter.h"
#include "server/llm/llm_config.h"
#include "server/llm/prompt.h"
#include "server/scan.h"
#include "test_support.h"

using nlohmann::json;
using ttap::llm::CancelFlag;
using ttap::llm::LlmClient;
using ttap::llm::LlmReply;
using ttap::llm::LlmSettings;
using ttap::llm::ReplyError;
using ttap_test::HttpRequest;
using ttap_test::HttpResponse;
using ttap_test::HttpTestServer;

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

using ttap_test::kTrainPy;  // train.py of the LSP fixtures (lsp_fixtures.h)

json GoodDraft(double confidence = 0.82) {
  return {{"category", "TTA001"},
          {"confidence", confidence},
          {"explanation_markdown",
           "The input pipeline holds the GPU idle: `DataLoader` runs in the main process."},
          {"fix",
           {{"description", "Load batches in worker processes"},
            {"edits",
             {{{"start_line", 5},
               {"start_column", 38},
               {"end_line", 5},
               {"end_column", 38},
               {"new_text", ", num_workers=4"}}}}}}};
}

// A chat-completions response whose message content is |content|.
std::string ChatBody(const std::string& content) {
  return json({{"id", "chatcmpl-1"},
               {"object", "chat.completion"},
               {"model", "test-model"},
               {"choices",
                {{{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", content}}},
                  {"finish_reason", "stop"}}}}})
      .dump();
}
std::string ChatBody(const json& draft) { return ChatBody(draft.dump()); }

HttpResponse Ok(const json& draft = GoodDraft()) { return {200, ChatBody(draft), {}, 0}; }

LlmSettings SettingsFor(const HttpTestServer& server) {
  LlmSettings s;
  s.base_url = server.base_url();
  s.model = "test-model";
  s.timeout_ms = 5000;
  s.retry_base_ms = 20;
  return s;
}

// Redirects this process's stderr (fd 2) to a file until Finish().
class StderrCapture {
 public:
  StderrCapture() {
    path_ = ttap_test::MakeTempDir() + "/stderr.txt";
    std::fflush(stderr);
    saved_ = dup(2);
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
  }
  ~StderrCapture() { Finish(); }
  std::string Finish() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      dup2(saved_, 2);
      close(saved_);
      saved_ = -1;
    }
    return ttap_test::ReadFile(path_);
  }

 private:
  std::string path_;
  int saved_ = -1;
};

// After a failure scenario: the same client still completes a normal request.
void CheckStillWorks(LlmClient& client) {
  LlmReply r = client.Complete({"system", "user"});
  INFO(r.message);
  CHECK(r.ok());
}

// Every regular file under |dir| (recursively), concatenated.
std::string ReadTree(const std::string& dir) {
  std::string all;
  DIR* d = opendir(dir.c_str());
  if (!d) return all;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string p = dir + "/" + n;
    struct stat st;
    if (stat(p.c_str(), &st) != 0) continue;
    all += S_ISDIR(st.st_mode) ? ReadTree(p) : ttap_test::ReadFile(p);
  }
  closedir(d);
  return all;
}

size_t CountFiles(const std::string& dir) {
  size_t n = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// StallTrace scanned against a workspace holding kTrainPy.
struct ScannedWorkspace {
  std::string dir;
  ttap::ScanResult scan;
};
ScannedWorkspace ScanStallWorkspace() {
  ScannedWorkspace w;
  w.dir = ttap_test::MakeTempDir();
  ttap_test::WriteFile(w.dir + "/train.py", kTrainPy);
  ttap_test::WriteFile(w.dir + "/trace.json", ttap_test::StallTrace());
  ttap::LoadOptions lo;
  lo.window_count = 10;
  auto t = ttap::LoadTrace(w.dir + "/trace.json", lo);
  REQUIRE(t.ok());
  ttap::WorkspaceIndex index = ttap::WorkspaceIndex::Build(w.dir);
  ttap::ScanOptions so;
  so.workspace = &index;
  ttap::SourceCache sources;
  so.sources = &sources;
  w.scan = ttap::ScanTrace(std::move(t.value()), so);
  REQUIRE(!w.scan.findings.empty());
  REQUIRE(w.scan.findings[0].finding.code == "TTA001");
  REQUIRE(w.scan.findings[0].line == 12);
  return w;
}

ttap::llm::SourceProvider FileSources() {
  auto cache = std::make_shared<ttap::SourceCache>();
  return [cache](const std::string& path) { return cache->GetFile(path); };
}

}  // namespace

TEST_CASE("llm: a normal reply becomes a validated draft, the request asks for JSON", "[llm]") {
  HttpTestServer server([](const HttpRequest&) { return Ok(); });
  LlmClient client(SettingsFor(server));
  LlmReply r = client.Complete({"You are...", "Classify this window."});
  INFO(r.message);
  REQUIRE(r.ok());
  CHECK(r.attempts == 1);
  CHECK(r.http_status == 200);
  CHECK(r.draft->model == "test-model");
  CHECK(r.draft->category == "TTA001");
  CHECK(r.draft->confidence == Approx(0.82));
  CHECK(r.draft->explanation_markdown.find("DataLoader") != std::string::npos);
  REQUIRE(r.draft->fix);
  REQUIRE(r.draft->fix->edits.size() == 1);
  CHECK(r.draft->fix->edits[0].start_line == 5);
  CHECK(r.draft->fix->edits[0].new_text == ", num_workers=4");
  auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].method == "POST");
  CHECK(reqs[0].path == "/v1/chat/completions");
  CHECK(reqs[0].headers.count("authorization") == 0);  // no key configured: none sent
  json body = json::parse(reqs[0].body);
  CHECK(body["model"] == "test-model");
  CHECK(body["response_format"]["type"] == "json_object");
  CHECK(body["messages"].size() == 2);
  CHECK(body["messages"][0]["role"] == "system");
  CHECK(body["messages"][1]["content"] == "Classify this window.");
  CHECK(body["max_tokens"].is_number_integer());
  CHECK(body["temperature"].is_number());
  // A fenced reply is accepted too; a reply without a fix parses with fix == nullopt.
  json no_fix = GoodDraft();
  no_fix["fix"] = nullptr;
  CHECK(ttap::llm::ChatCompletionsUrl("http://h:1/v1/") == "http://h:1/v1/chat/completions");
  CHECK(ttap::llm::ChatCompletionsUrl(
            "https://r.openai.azure.com/openai/deployments/d?api-version=1") ==
        "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=1");
  auto fenced = ttap::llm::ParseChatReply(ChatBody("```json\n" + no_fix.dump() + "\n```"), "m");
  REQUIRE(fenced.ok());
  CHECK_FALSE(fenced.draft->fix);
}

TEST_CASE("llm: a reply that is not JSON is rejected with a logged reason", "[llm]") {
  int calls = 0;
  HttpTestServer server([&](const HttpRequest&) {
    ++calls;
    if (calls == 1) return HttpResponse{200, "<html><body>502 Bad Gateway</body></html>", {}, 0};
    if (calls == 2) return HttpResponse{200, ChatBody(std::string("Sure! It is TTA001.")), {}, 0};
    return Ok();
  });
  LlmClient client(SettingsFor(server));
  StderrCapture capture;
  LlmReply body_not_json = client.Complete({"s", "u"});
  LlmReply content_not_json = client.Complete({"s", "u"});
  std::string log = capture.Finish();
  CHECK(body_not_json.error == ReplyError::kNotJson);
  CHECK(body_not_json.message.find("not a JSON object") != std::string::npos);
  CHECK(content_not_json.error == ReplyError::kNotJson);
  CHECK(content_not_json.message.find("content is not JSON") != std::string::npos);
  CHECK(log.find("rejected the reply") != std::string::npos);
  CHECK(log.find("502 Bad Gateway") != std::string::npos);
  CheckStillWorks(client);
}

TEST_CASE("llm: replies off the schema are rejected, naming the field", "[llm]") {
  std::vector<std::pair<json, std::string>> cases;
  json d = GoodDraft();
  d["category"] = "TTA999";
  cases.push_back({d, "category"});
  d = GoodDraft();
  d["confidence"] = 1.7;
  cases.push_back({d, "confidence"});
  d = GoodDraft();
  d.erase("explanation_markdown");
  cases.push_back({d, "explanation_markdown"});
  cases.push_back({json::array({GoodDraft()}), "not a JSON object"});
  size_t next = 0;
  HttpTestServer server([&](const HttpRequest&) {
    size_t k = next++;
    return k < cases.size() ? Ok(cases[k].first) : Ok();
  });
  LlmClient client(SettingsFor(server));
  StderrCapture capture;
  for (const auto& [draft, field] : cases) {
    LlmReply r = client.Complete({"s", "u"});
    INFO(draft.dump() << " -> " << r.message);
    CHECK(r.error == ReplyError::kOffSchema);
    CHECK(r.message.find(field) != std::string::npos);
  }
  // The envelope itself off the schema: no choices.
  auto no_choices = ttap::llm::ParseChatReply(R"({"object":"chat.completion","choices":[]})", "m");
  CHECK(no_choices.error == ReplyError::kOffSchema);
  std::string log = capture.Finish();
  CHECK(log.find("off the schema: category") != std::string::npos);
  CheckStillWorks(client);
}

TEST_CASE("llm: a fix off the schema is dropped, the category and explanation kept", "[llm]") {
  std::vector<std::pair<json, std::string>> cases;
  json d = GoodDraft();
  d["fix"]["edits"] = json::array();  // what local models often send
  cases.push_back({d, "fix.edits: needs 1 to"});
  d = GoodDraft();
  d["fix"]["edits"][0]["start_line"] = 0;
  cases.push_back({d, "fix.edits[0].start_line"});
  d = GoodDraft();
  d["fix"]["edits"][0]["end_line"] = 4;  // ends before it starts
  cases.push_back({d, "fix.edits[0]"});
  d = GoodDraft();
  d["fix"] = "add num_workers";
  cases.push_back({d, "fix: not an object"});
  size_t next = 0;
  HttpTestServer server([&](const HttpRequest&) {
    size_t k = next++;
    return k < cases.size() ? Ok(cases[k].first) : Ok();
  });
  LlmClient client(SettingsFor(server));
  for (const auto& [draft, why] : cases) {
    LlmReply r = client.Complete({"s", "u"});
    INFO(draft.dump() << " -> " << r.message);
    REQUIRE(r.ok());
    CHECK(r.draft->category == GoodDraft()["category"]);
    CHECK_FALSE(r.draft->explanation_markdown.empty());
    CHECK_FALSE(r.draft->fix.has_value());
    CHECK(r.draft->fix_dropped.find(why) != std::string::npos);
  }
}

TEST_CASE("llm: a slow reply past the timeout gives up cleanly", "[llm]") {
  int calls = 0;
  HttpTestServer server([&](const HttpRequest&) {
    HttpResponse r = Ok();
    if (++calls == 1) r.delay_ms = 3000;
    return r;
  });
  LlmSettings s = SettingsFor(server);
  s.timeout_ms = 400;
  LlmClient client(s);
  StderrCapture capture;
  auto t0 = Clock::now();
  LlmReply r = client.Complete({"s", "u"});
  double took = SecondsSince(t0);
  std::string log = capture.Finish();
  CHECK(r.error == ReplyError::kTimeout);
  CHECK(r.attempts == 1);  // timeouts are not retried
  CHECK(took < 2.0);
  CHECK(log.find("within 400 ms") != std::string::npos);
  CheckStillWorks(client);
}

TEST_CASE("llm: 429 and 5xx are retried with backoff, a long Retry-After gives up", "[llm]") {
  int calls = 0;
  HttpTestServer server([&](const HttpRequest&) {
    ++calls;
    if (calls == 1) return HttpResponse{429, R"({"error":"slow down"})", {{"Retry-After", "0"}}, 0};
    if (calls == 2) return HttpResponse{503, R"({"error":"overloaded"})", {}, 0};
    if (calls == 4) return HttpResponse{429, "{}", {{"Retry-After", "3600"}}, 0};
    return Ok();
  });
  LlmClient client(SettingsFor(server));
  StderrCapture capture;
  LlmReply r = client.Complete({"s", "u"});
  INFO(r.message);
  CHECK(r.ok());
  CHECK(r.attempts == 3);
  CHECK(server.request_count() == 3);
  auto t0 = Clock::now();
  LlmReply too_long = client.Complete({"s", "u"});
  CHECK(SecondsSince(t0) < 1.0);
  std::string log = capture.Finish();
  CHECK(too_long.error == ReplyError::kHttp);
  CHECK(too_long.message.find("retry after 3600 s") != std::string::npos);
  CHECK(log.find("HTTP 429") != std::string::npos);
  CHECK(log.find("retry 1/3") != std::string::npos);
  CheckStillWorks(client);
  // Retries run out: the last status is reported.
  HttpTestServer failing([](const HttpRequest&) { return HttpResponse{500, "{}", {}, 0}; });
  LlmSettings s = SettingsFor(failing);
  s.retries = 2;
  LlmClient client2(s);
  StderrCapture capture2;
  LlmReply gave_up = client2.Complete({"s", "u"});
  capture2.Finish();
  CHECK(gave_up.error == ReplyError::kHttp);
  CHECK(gave_up.http_status == 500);
  CHECK(gave_up.attempts == 3);
}

TEST_CASE("llm: a 5 MB reply is rejected with a reason, or validated when the cap allows it",
          "[llm]") {
  json huge = GoodDraft();
  huge["explanation_markdown"] = std::string(5 << 20, 'x');
  const std::string huge_body = ChatBody(huge);
  REQUIRE(huge_body.size() > (5u << 20));
  int calls = 0;
  HttpTestServer server([&](const HttpRequest&) {
    ++calls;
    return calls <= 1 ? HttpResponse{200, huge_body, {}, 0} : Ok();
  });
  {
    LlmClient client(SettingsFor(server));  // default cap: 4 MiB
    StderrCapture capture;
    auto t0 = Clock::now();
    LlmReply r = client.Complete({"s", "u"});
    std::string log = capture.Finish();
    CHECK(r.error == ReplyError::kTooLarge);
    CHECK(SecondsSince(t0) < 3.0);
    CHECK(log.find("larger than") != std::string::npos);
    CheckStillWorks(client);
  }
  {
    calls = 0;
    LlmSettings s = SettingsFor(server);
    s.max_reply_bytes = 16 << 20;
    LlmClient client(s);
    StderrCapture capture;
    LlmReply r = client.Complete({"s", "u"});  // read whole, then off the schema
    capture.Finish();
    CHECK(r.error == ReplyError::kOffSchema);
    CHECK(r.message.find("explanation_markdown") != std::string::npos);
    CheckStillWorks(client);
  }
}

TEST_CASE("llm: connection refused fails fast and cleanly", "[llm]") {
  LlmSettings s;
  s.base_url = "http://127.0.0.1:" + std::to_string(HttpTestServer::UnusedPort()) + "/v1";
  s.model = "m";
  s.timeout_ms = 5000;
  LlmClient client(s);
  StderrCapture capture;
  auto t0 = Clock::now();
  LlmReply r = client.Complete({"s", "u"});
  std::string log = capture.Finish();
  CHECK(r.error == ReplyError::kConnect);
  CHECK(SecondsSince(t0) < 2.0);
  CHECK(log.find("cannot connect") != std::string::npos);
  // The same client works once a server is there.
  HttpTestServer server([](const HttpRequest&) { return Ok(); });
  LlmSettings s2 = SettingsFor(server);
  LlmClient client2(s2);
  CheckStillWorks(client2);
}

TEST_CASE("llm: a request can be cancelled in flight or while queued, callers never block",
          "[llm]") {
  HttpTestServer server([](const HttpRequest& req) {
    HttpResponse r = Ok();
    if (req.body.find("slow") != std::string::npos) r.delay_ms = 5000;
    if (req.body.find("brief") != std::string::npos) r.delay_ms = 300;
    return r;
  });
  LlmClient client(SettingsFor(server));
  CancelFlag cancel = CancelFlag::Cancellable();
  auto t0 = Clock::now();
  auto f = client.Submit({"s", "slow"}, cancel);
  CHECK(SecondsSince(t0) < 0.1);  // Submit returns at once
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cancel.Cancel();
  LlmReply r = f.get();
  CHECK(r.error == ReplyError::kCancelled);
  CHECK(SecondsSince(t0) < 2.5);
  // Cancelled before it starts: nothing is sent.
  size_t before = server.request_count();
  CancelFlag early = CancelFlag::Cancellable();
  early.Cancel();
  CHECK(client.Complete({"s", "u"}, early).error == ReplyError::kCancelled);
  CHECK(server.request_count() == before);
  CheckStillWorks(client);
  // Two workers (max_concurrent = 2): four 300 ms replies take about two rounds, not four.
  t0 = Clock::now();
  std::vector<std::future<LlmReply>> futures;
  for (int i = 0; i < 4; ++i) futures.push_back(client.Submit({"s", "brief"}));
  CHECK(SecondsSince(t0) < 0.1);
  int done = 0;
  std::atomic<int> callbacks{0};
  for (auto& fut : futures) done += fut.get().ok();
  CHECK(done == 4);
  CHECK(SecondsSince(t0) < 1.1);
  // on_done runs on the worker.
  client.Submit({"s", "u"}, CancelFlag(), [&](const LlmReply& reply) { callbacks += reply.ok(); })
      .get();
  CHECK(callbacks == 1);
}

TEST_CASE("llm: the API key reaches the server but never logs, errors or cache files", "[llm]") {
  const std::string key = "sk-ttap-test-9f8e7d6c5b4a3210";
  setenv("TTAP_TEST_LLM_KEY", key.c_str(), 1);
  std::vector<std::string> seen_auth;
  int calls = 0;
  HttpTestServer server([&](const HttpRequest& req) {
    ++calls;
    std::string auth = req.headers.count("authorization") ? req.headers.at("authorization")
                       : req.headers.count("api-key")     ? "api-key " + req.headers.at("api-key")
                                                          : "";
    seen_auth.push_back(auth);
    if (auth != "Bearer " + key && auth != "api-key " + key)
      return HttpResponse{401, R"({"error":"bad key"})", {}, 0};
    if (calls == 2)  // a server that echoes the key in an error
      return HttpResponse{401, "{\"error\":\"invalid key " + key + "\"}", {}, 0};
    if (calls == 3) {  // ... in an off-schema reply
      json d = GoodDraft();
      d["category"] = key;
      return Ok(d);
    }
    if (calls == 4) {  // ... in the explanation itself
      json d = GoodDraft();
      d["explanation_markdown"] = "Your key " + key + " works.";
      return Ok(d);
    }
    return Ok();
  });
  LlmSettings s = SettingsFor(server);
  s.api_key_env = "TTAP_TEST_LLM_KEY";
  std::vector<std::string> messages;
  std::string cache_dir = ttap_test::MakeTempDir() + "/cache";
  StderrCapture capture;
  {
    LlmClient client(s);
    LlmReply ok = client.Complete({"s", "u"});
    CHECK(ok.ok());
    LlmReply echoed = client.Complete({"s", "u"});
    CHECK(echoed.error == ReplyError::kHttp);
    messages.push_back(echoed.message);
    LlmReply off = client.Complete({"s", "u"});
    CHECK(off.error == ReplyError::kOffSchema);
    messages.push_back(off.message);
    LlmReply in_draft = client.Complete({"s", "u"});
    REQUIRE(in_draft.ok());
    CHECK(in_draft.draft->explanation_markdown.find(key) == std::string::npos);
    // Drafting through the cache, then from it.
    ScannedWorkspace w = ScanStallWorkspace();
    ttap::llm::DraftCache cache(cache_dir);
    auto drafts = ttap::llm::DraftFindings(w.scan, &client, &cache, FileSources(), {});
    REQUIRE(drafts[0]);
    auto again = ttap::llm::DraftFindings(w.scan, &client, &cache, FileSources(), {});
    REQUIRE(again[0]);
    CHECK(again[0]->from_cache);
    CHECK(json(ttap::llm::FindingDraftToJson(*again[0])).dump().find(key) == std::string::npos);
  }
  {
    // Azure style header.
    LlmSettings azure = s;
    azure.auth_header = ttap::llm::AuthHeader::kApiKey;
    LlmClient client(azure);
    CHECK(client.Complete({"s", "u"}).ok());
  }
  {
    // The variable named but unset: an error naming the variable, nothing sent.
    size_t before = server.request_count();
    LlmSettings missing = s;
    missing.api_key_env = "TTAP_TEST_LLM_KEY_UNSET";
    unsetenv("TTAP_TEST_LLM_KEY_UNSET");
    LlmClient client(missing);
    LlmReply r = client.Complete({"s", "u"});
    CHECK(r.error == ReplyError::kKey);
    CHECK(r.message.find("TTAP_TEST_LLM_KEY_UNSET") != std::string::npos);
    CHECK(server.request_count() == before);
    // Plain http to a host that is not loopback: refused before any connection.
    LlmSettings remote = s;
    remote.base_url = "http://llm.example.invalid/v1";
    LlmClient remote_client(remote);
    LlmReply refused = remote_client.Complete({"s", "u"});
    CHECK(refused.error == ReplyError::kKey);
    messages.push_back(refused.message);
  }
  std::string log = capture.Finish();
  unsetenv("TTAP_TEST_LLM_KEY");
  // It was sent: in the Authorization header (and in api-key for the Azure style).
  REQUIRE(seen_auth.size() >= 5);
  CHECK(seen_auth[0] == "Bearer " + key);
  CHECK(std::count(seen_auth.begin(), seen_auth.end(), "api-key " + key) == 1);
  // And nowhere else.
  CHECK_FALSE(log.empty());
  CHECK(log.find(key) == std::string::npos);
  CHECK(log.find("[redacted]") != std::string::npos);
  for (const auto& m : messages) CHECK(m.find(key) == std::string::npos);
  CHECK(CountFiles(cache_dir) >= 1);
  std::string cached = ReadTree(cache_dir);
  CHECK_FALSE(cached.empty());
  CHECK(cached.find(key) == std::string::npos);
  CHECK(cached.find("sk-ttap") == std::string::npos);
}

TEST_CASE("llm: the draft cache round-trips, ignores corrupt entries and stays bounded", "[llm]") {
  std::string dir = ttap_test::MakeTempDir() + "/c";
  ttap::llm::Draft d;
  d.model = "m";
  d.category = "TTA005";
  d.confidence = 0.5;
  d.explanation_markdown = std::string(1000, 'e');
  ttap::llm::DraftCache cache(dir, 6000);
  const std::string k1 = ttap::llm::DraftCache::Key("window", "snippet", "m", "window_v1");
  CHECK(k1.size() == 32);
  CHECK(k1 != ttap::llm::DraftCache::Key("window", "snippet", "m2", "window_v1"));
  CHECK(k1 != ttap::llm::DraftCache::Key("windo", "wsnippet", "m", "window_v1"));
  CHECK_FALSE(cache.Get(k1));
  REQUIRE(cache.Put(k1, d).ok());
  auto back = cache.Get(k1);
  REQUIRE(back);
  CHECK(back->category == "TTA005");
  CHECK(back->model == "m");
  // Corrupt: ignored and removed.
  ttap_test::WriteFile(dir + "/" + k1 + ".json", "{\"category\": 5");
  CHECK_FALSE(cache.Get(k1));
  // Bounded: ten ~1 KB entries in a 6000-byte cache keep only the newest few.
  for (int i = 0; i < 10; ++i) {
    REQUIRE(cache.Put(ttap::llm::DraftCache::Key(std::to_string(i), "", "m", "v"), d).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  size_t files = CountFiles(dir);
  CHECK(files >= 1);
  CHECK(files <= 5);
  CHECK(cache.Get(ttap::llm::DraftCache::Key("9", "", "m", "v")));
  CHECK_FALSE(cache.Get(ttap::llm::DraftCache::Key("0", "", "m", "v")));
  // Default location honours TTAP_LLM_CACHE_DIR, then XDG_CACHE_HOME.
  setenv("TTAP_LLM_CACHE_DIR", "/tmp/x-ttap-cache", 1);
  CHECK(ttap::llm::DraftCache::DefaultDir() == "/tmp/x-ttap-cache");
  unsetenv("TTAP_LLM_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  CHECK(ttap::llm::DraftCache::DefaultDir() == "/tmp/xdg/ttap/llm");
  unsetenv("XDG_CACHE_HOME");
}

TEST_CASE("llm: the window prompt is condensed, versioned and never holds whole files", "[llm]") {
  ScannedWorkspace w = ScanStallWorkspace();
  const ttap::LocatedFinding& lf = w.scan.findings[0];
  auto src = ttap::PythonSource::Parse(kTrainPy);
  auto snippet = ttap::llm::SnippetAround(*src, "train.py", 12, 5);
  CHECK(snippet.first_line == 7);
  CHECK(snippet.lines.size() == 8);  // lines 7..14 (14: the empty line after the last break)
  CHECK(snippet.text.find(">   12 | for batch in loader:") != std::string::npos);
  int window = lf.finding.window_indices.empty() ? 0 : lf.finding.window_indices[0];
  auto p = ttap::llm::BuildWindowPrompt(w.scan, lf, window, snippet, {});
  const std::string& u = p.request.user;
  CHECK(std::string(ttap::llm::kPromptVersion) == "window_v1");
  CHECK(p.request.system.find("\"category\"") != std::string::npos);
  CHECK(u.find("{{") == std::string::npos);
  CHECK(u.find("TTA001 dataloader-stall") != std::string::npos);  // the catalogue
  CHECK(u.find("TTA014") != std::string::npos);
  CHECK(u.find("TTA900") != std::string::npos);
  CHECK(u.find("GPU busy") != std::string::npos);
  CHECK(u.find("ProfilerStep#") != std::string::npos);
  CHECK(u.find("us total") != std::string::npos);  // top events with durations
  CHECK(u.find("time lost per step") != std::string::npos);
  CHECK(u.find("for batch in loader:") != std::string::npos);
  CHECK(u.find("import torch") == std::string::npos);  // line 1: outside the snippet
  CHECK(u.find("Neighbouring windows") == std::string::npos);
  auto with_neighbours = ttap::llm::BuildWindowPrompt(w.scan, lf, window, snippet, {window + 1});
  CHECK(with_neighbours.request.user.find("Neighbouring windows") != std::string::npos);
  CHECK(with_neighbours.fingerprint == p.fingerprint);
  CHECK(ttap::llm::FillTemplate("a {{x}} b {{y}}", {{"x", "1"}}) == "a 1 b ");
}

TEST_CASE("llm: low confidence asks again with neighbouring windows, bounded", "[llm]") {
  int calls = 0;
  std::vector<std::string> prompts;
  HttpTestServer server([&](const HttpRequest& req) {
    prompts.push_back(json::parse(req.body)["messages"][1]["content"]);
    ++calls;
    return Ok(GoodDraft(calls == 1 ? 0.3 : 0.9));
  });
  LlmClient client(SettingsFor(server));
  ScannedWorkspace w = ScanStallWorkspace();
  ttap::llm::DraftOptions o;
  o.max_drafts = 1;
  auto drafts = ttap::llm::DraftFindings(w.scan, &client, nullptr, FileSources(), o);
  REQUIRE(drafts.size() == w.scan.findings.size());
  size_t drafted =
      std::count_if(drafts.begin(), drafts.end(), [](auto& d) { return d.has_value(); });
  CHECK(drafted == 1);
  REQUIRE(prompts.size() == 2);
  CHECK(prompts[0].find("Neighbouring windows") == std::string::npos);
  CHECK(prompts[1].find("Neighbouring windows") != std::string::npos);
  const auto& d =
      *std::find_if(drafts.begin(), drafts.end(), [](auto& d) { return d.has_value(); });
  CHECK(d->draft.confidence == Approx(0.9));
  CHECK(d->requests == 2);
  // Always unsure: 1 + feedback_rounds requests, no more.
  HttpTestServer unsure([&](const HttpRequest&) { return Ok(GoodDraft(0.1)); });
  LlmClient client2(SettingsFor(unsure));
  o.feedback_rounds = 2;
  ttap::llm::DraftFindings(w.scan, &client2, nullptr, FileSources(), o);
  CHECK(unsure.request_count() == 3);
}

TEST_CASE("llm: drafted fixes are kept only when they apply near the finding and parse", "[llm]") {
  auto src = ttap::PythonSource::Parse(kTrainPy);
  ttap::llm::FixCheck check;
  check.finding_line = 12;
  auto fix = [](int line, int c0, int c1, std::string text, int end_line = 0) {
    ttap::llm::DraftFix f;
    f.description = "d";
    f.edits.push_back({line, c0, end_line ? end_line : line, c1, std::move(text)});
    return f;
  };
  auto good = ttap::llm::CheckDraftFix(*src, fix(5, 38, 38, ", num_workers=4"), check);
  REQUIRE(good.ok());
  CHECK(ttap::ApplyEdits(src->text(), good.value()).find("batch_size=32, num_workers=4)") !=
        std::string::npos);
  auto far = ttap::llm::CheckDraftFix(*src, fix(1, 1, 1, "import os\n"), check);
  REQUIRE_FALSE(far.ok());
  CHECK(far.status().message().find("further than 10 lines") != std::string::npos);
  auto broken = ttap::llm::CheckDraftFix(*src, fix(12, 20, 21, ""), check);  // drops the ':'
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.status().message().find("does not parse") != std::string::npos);
  auto past_end = ttap::llm::CheckDraftFix(*src, fix(12, 40, 41, "x"), check);
  CHECK_FALSE(past_end.ok());
  auto outside = ttap::llm::CheckDraftFix(*src, fix(15, 1, 1, "x"), check);  // 14 lines
  CHECK_FALSE(outside.ok());
  auto noop = ttap::llm::CheckDraftFix(*src, fix(12, 1, 4, "for"), check);
  CHECK_FALSE(noop.ok());
  // Lines shifted by an edit above (the language server's buffer): the same fix moves with
  // them; once the touched line itself changed it no longer applies.
  std::vector<std::string> expected = {"loader = DataLoader(ds, batch_size=32)"};
  auto shifted = ttap::PythonSource::Parse("# new header\n" + std::string(kTrainPy));
  ttap::llm::FixCheck moved = check;
  moved.finding_line = 13;
  moved.line_shift = 1;
  moved.expected_first_line = 5;
  moved.expected_lines = &expected;
  CHECK(ttap::llm::CheckDraftFix(*shifted, fix(5, 38, 38, ", num_workers=4"), moved).ok());
  std::string changed_text = kTrainPy;
  changed_text.replace(changed_text.find("batch_size=32"), 13, "batch_size=64");
  auto changed = ttap::PythonSource::Parse(changed_text);
  moved.line_shift = 0;
  moved.finding_line = 12;
  auto stale = ttap::llm::CheckDraftFix(*changed, fix(5, 38, 38, ", num_workers=4"), moved);
  REQUIRE_FALSE(stale.ok());
  CHECK(stale.status().message().find("changed since") != std::string::npos);
}

TEST_CASE("llm: settings come from flags, then TTAP_LLM_* variables, then the config file",
          "[llm]") {
  ttap::LlmConfig file;
  file.base_url = "http://127.0.0.1:1/v1";
  file.model = "file-model";
  file.api_key_env = "FILE_KEY";
  unsetenv("TTAP_LLM_BASE_URL");
  unsetenv("TTAP_LLM_MODEL");
  unsetenv("TTAP_LLM_API_KEY_ENV");
  auto from_file = ttap::llm::ResolveLlmSettings(file, {});
  REQUIRE(from_file.ok());
  CHECK(from_file->model == "file-model");
  setenv("TTAP_LLM_MODEL", "env-model", 1);
  setenv("TTAP_LLM_API_KEY_ENV", "ENV_KEY", 1);
  auto from_env = ttap::llm::ResolveLlmSettings(file, {});
  CHECK(from_env->model == "env-model");
  CHECK(from_env->api_key_env == "ENV_KEY");
  CHECK(from_env->base_url == "http://127.0.0.1:1/v1");
  ttap::llm::LlmOverrides flags;
  flags.model = "flag-model";
  flags.base_url = "https://example.invalid/v1";
  auto from_flags = ttap::llm::ResolveLlmSettings(file, flags);
  CHECK(from_flags->model == "flag-model");
  CHECK(from_flags->base_url == "https://example.invalid/v1");
  unsetenv("TTAP_LLM_MODEL");
  unsetenv("TTAP_LLM_API_KEY_ENV");
  auto none = ttap::llm::ResolveLlmSettings(ttap::LlmConfig(), {});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("--llm-base-url") != std::string::npos);
  // The config file's [tool.ttap.llm].
  std::string dir = ttap_test::MakeTempDir();
  WriteOrFail(dir + "/pyproject.toml",
              "[tool.ttap.llm]\nbase_url = \"http://127.0.0.1:8000/v1\"\nmodel = \"m\"\n"
              "auth_header = \"api-key\"\ntimeout_s = 12\nmax_drafts = 3\n");
  auto config = ttap::LoadConfigFile(dir + "/pyproject.toml");
  REQUIRE(config.ok());
  CHECK(config->llm.base_url == "http://127.0.0.1:8000/v1");
  CHECK(config->llm.max_drafts == 3);
  auto s = ttap::llm::ResolveLlmSettings(config->llm, {});
  REQUIRE(s.ok());
  CHECK(s->auth_header == ttap::llm::AuthHeader::kApiKey);
  CHECK(s->timeout_ms == 12000);
  WriteOrFail(dir + "/pyproject.toml", "[tool.ttap.llm]\nauth_header = \"basic\"\n");
  CHECK_FALSE(ttap::LoadConfigFile(dir + "/pyproject.toml").ok());
}

TEST_CASE("llm: ttap scan --llm --format json adds drafts, nothing is sent without --llm",
          "[llm][cli]") {
  std::vector<std::string> prompts;
  std::mutex mu;
  bool far_fix = false;
  HttpTestServer server([&](const HttpRequest& req) {
    std::lock_guard<std::mutex> lock(mu);
    prompts.push_back(req.body);
    json d = GoodDraft(0.9);
    if (far_fix)
      d["fix"]["edits"][0] = {{"start_line", 1},
                              {"start_column", 1},
                              {"end_line", 1},
                              {"end_column", 1},
                              {"new_text", "import os\n"}};
    return Ok(d);
  });
  std::string dir = ttap_test::MakeTempDir();
  WriteOrFail(dir + "/train.py", kTrainPy);
  mkdir((dir + "/log").c_str(), 0755);
  WriteOrFail(dir + "/log/host_1.1700000000000.pt.trace.json", ttap_test::StallTrace());
  // The config file names a dead endpoint and another model: the flag and the variable win.
  WriteOrFail(dir + "/ttap.toml", "[llm]\nbase_url = \"http://127.0.0.1:" +
                                      std::to_string(HttpTestServer::UnusedPort()) +
                                      "/v1\"\nmodel = \"file-model\"\n");
  setenv("TTAP_LLM_CACHE_DIR", (dir + "/cache").c_str(), 1);
  setenv("TTAP_LLM_MODEL", "env-model", 1);
  const std::string trace = "'" + dir + "/log/host_1.1700000000000.pt.trace.json'";
  // Rule findings only (the learned scorer's TTA900 windows have no source line to send).
  const std::string common =
      "scan --format json --no-model --windows 10 --workspace '" + dir + "' " + trace;

  // Without --llm: no request, no "draft", even with an endpoint in the file and variables.
  setenv("TTAP_LLM_BASE_URL", server.base_url().c_str(), 1);
  auto off = ttap_test::RunTtap(common, dir);
  unsetenv("TTAP_LLM_BASE_URL");
  REQUIRE(off.exit_code == 1);
  CHECK(server.request_count() == 0);
  CHECK(off.out.find("\"draft\"") == std::string::npos);

  auto r = ttap_test::RunTtap(common + " --llm --llm-base-url " + server.base_url(), dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 1);
  auto j = json::parse(r.out);
  REQUIRE(j["findings"].size() >= 1);
  const json& f = j["findings"][0];
  CHECK(f["code"] == "TTA001");
  REQUIRE(f.contains("draft"));
  const json& d = f["draft"];
  CHECK(d["model"] == "env-model");
  CHECK(d["category"] == "TTA001");
  CHECK(d["confidence"].get<double>() == Approx(0.9));
  CHECK(d["explanation_markdown"].get<std::string>().find("DataLoader") != std::string::npos);
  REQUIRE(d["fix"].is_object());
  CHECK(d["fix"]["description"] == "Load batches in worker processes");
  CHECK(d["fix"]["edits"][0] == json({{"start_line", 5},
                                      {"start_column", 38},
                                      {"end_line", 5},
                                      {"end_column", 38},
                                      {"new_text", ", num_workers=4"}}));
  CHECK(r.err.find("drafting up to") != std::string::npos);
  size_t sent = server.request_count();
  REQUIRE(sent >= 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    json body = json::parse(prompts[0]);
    CHECK(body["model"] == "env-model");
    std::string user = body["messages"][1]["content"];
    CHECK(user.find("for batch in loader:") != std::string::npos);
    CHECK(user.find("import torch") == std::string::npos);  // never the whole file
  }
  // Again: every draft comes from the cache; nothing is sent.
  auto cached = ttap_test::RunTtap(common + " --llm --llm-base-url " + server.base_url(), dir);
  REQUIRE(cached.exit_code == 1);
  CHECK(server.request_count() == sent);
  auto jc = json::parse(cached.out);
  CHECK(jc["findings"][0]["draft"]["cached"] == true);
  CHECK(jc["findings"][0]["draft"]["fix"] == d["fix"]);

  // A drafted fix far from the finding is dropped with a logged reason; the draft stays.
  {
    std::lock_guard<std::mutex> lock(mu);
    far_fix = true;
  }
  auto far = ttap_test::RunTtap(
      common + " --llm --llm-model other-model --llm-base-url " + server.base_url(), dir);
  INFO(far.err);
  REQUIRE(far.exit_code == 1);
  auto jf = json::parse(far.out);
  const json& df = jf["findings"][0]["draft"];
  CHECK(df["model"] == "other-model");
  CHECK(df["fix"].is_null());
  CHECK(df["fix_dropped"].get<std::string>().find("further than 10 lines") != std::string::npos);
  CHECK(far.err.find("dropped the fix drafted by other-model for TTA001 at train.py:12") !=
        std::string::npos);
  // Text output shows the draft under the finding; --llm with no endpoint is a usage error.
  auto text = ttap_test::RunTtap("scan --windows 10 --workspace '" + dir + "' " + trace +
                                     " --llm --llm-base-url " + server.base_url(),
                                 dir);
  CHECK(text.out.find("  drafted by env-model (TTA001, confidence 0.90") != std::string::npos);
  unsetenv("TTAP_LLM_MODEL");
  WriteOrFail(dir + "/ttap.toml", "");
  auto no_endpoint = ttap_test::RunTtap(common + " --llm", dir);
  CHECK(no_endpoint.exit_code == 2);
  CHECK(no_endpoint.err.find("needs an endpoint") != std::string::npos);
  unsetenv("TTAP_LLM_CACHE_DIR");
}

TEST_CASE("llm: the language server shows drafts in hovers and offers drafted fixes",
          "[llm][lsp]") {
  HttpTestServer server([](const HttpRequest&) {
    HttpResponse r = Ok(GoodDraft(0.9));
    r.delay_ms = 800;  // slow enough to see that the server keeps answering meanwhile
    return r;
  });
  std::string root = ttap_test::MakeTempDir();
  WriteOrFail(root + "/train.py", kTrainPy);
  mkdir((root + "/log").c_str(), 0755);
  WriteOrFail(root + "/log/host_1.1700000000000.pt.trace.json", ttap_test::StallTrace());
  setenv("TTAP_LLM_CACHE_DIR", (root + "/cache").c_str(), 1);
  ttap_test::LspClient c(ttap_test::Binary(), {}, /*quiet_stderr=*/true);
  unsetenv("TTAP_LLM_CACHE_DIR");
  const std::string uri = "file://" + root + "/train.py";
  json caps;
  caps["textDocument"]["hover"]["contentFormat"] = {"markdown"};
  caps["textDocument"]["codeAction"]["codeActionLiteralSupport"]["codeActionKind"]["valueSet"] = {
      "quickfix"};
  c.Call("initialize",
         {{"processId", nullptr},
          {"rootUri", "file://" + root},
          {"capabilities", caps},
          {"initializationOptions",
           {{"windows", 10}, {"llm", {{"baseUrl", server.base_url()}, {"model", "lsp-model"}}}}}});
  c.Notify("initialized", json::object());
  auto pub = c.WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
  });
  REQUIRE_FALSE(pub.is_null());
  json hover_params = {{"textDocument", {{"uri", uri}}},
                       {"position", {{"line", 11}, {"character", 4}}}};
  // While the draft is being requested, hovers still answer at once (without it).
  auto drafting = c.WaitFor([](const json& m) {
    return m.value("method", "") == "ttap/status" && m["params"]["state"] == "drafting";
  });
  REQUIRE_FALSE(drafting.is_null());
  auto t0 = Clock::now();
  auto early = c.Call("textDocument/hover", hover_params);
  CHECK(SecondsSince(t0) < 0.5);
  REQUIRE(early["result"].is_object());
  CHECK(early["result"]["contents"]["value"].get<std::string>().find("Drafted by") ==
        std::string::npos);
  c.Call("$/sync", nullptr);
  CHECK(server.request_count() >= 1);
  auto hover = c.Call("textDocument/hover", hover_params);
  const std::string md = hover["result"]["contents"]["value"];
  INFO(md);
  CHECK(md.find("saves per step") != std::string::npos);  // the rule's numbers first
  CHECK(md.find("**Drafted by lsp-model**") != std::string::npos);
  CHECK(md.find("**Drafted by") > md.find("saves per step"));
  CHECK(md.find("runs in the main process") != std::string::npos);

  auto actions_at = [&](int line) {
    return c.Call("textDocument/codeAction",
                  {{"textDocument", {{"uri", uri}}},
                   {"range",
                    {{"start", {{"line", line}, {"character", 0}}},
                     {"end", {{"line", line}, {"character", 0}}}}},
                   {"context", {{"diagnostics", json::array()}}}})["result"];
  };
  auto drafted_action = [](const json& actions) {
    for (const auto& a : actions) {
      if (a["title"].get<std::string>().find("drafted by lsp-model") != std::string::npos) return a;
    }
    return json();
  };
  json a = drafted_action(actions_at(11));
  REQUIRE_FALSE(a.is_null());
  CHECK(a["kind"] == "quickfix");
  CHECK(a["isPreferred"] == false);
  const json& e = a["edit"]["changes"][uri][0];
  CHECK(e["range"]["start"] == json({{"line", 4}, {"character", 37}}));
  CHECK(e["newText"] == ", num_workers=4");
  // An edit above moves the finding and the drafted edits with it.
  c.Notify("textDocument/didOpen",
           {{"textDocument",
             {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", kTrainPy}}}});
  auto change = [&](int version, int line0, int c0, int line1, int c1, const std::string& text) {
    json edit;
    edit["range"]["start"] = {{"line", line0}, {"character", c0}};
    edit["range"]["end"] = {{"line", line1}, {"character", c1}};
    edit["text"] = text;
    json params;
    params["textDocument"] = {{"uri", uri}, {"version", version}};
    params["contentChanges"] = json::array({edit});
    c.Notify("textDocument/didChange", params);
  };
  change(2, 0, 0, 0, 0, "# header\n");
  json moved = drafted_action(actions_at(12));
  REQUIRE_FALSE(moved.is_null());
  CHECK(moved["edit"]["changes"][uri][0]["range"]["start"] ==
        json({{"line", 5}, {"character", 37}}));
  // Once the line the fix edits has changed, the drafted fix is no longer offered.
  change(3, 5, 35, 5, 37, "64");  // batch_size=32 -> 64
  CHECK(drafted_action(actions_at(12)).is_null());
  c.Call("shutdown", nullptr);
  c.Notify("exit", nullptr);
  CHECK(c.WaitExit() == 0);
}

TEST_CASE("llm: ttap eval --llm reports the drafts' category accuracy beside the rules'",
          "[llm][cli]") {
  std::atomic<int> requests{0};
  HttpTestServer server([&](const HttpRequest&) {
    ++requests;
    return Ok(GoodDraft(0.9));  // always names TTA001
  });
  const std::string dir = ttap_test::MakeTempDir();
  // Seed 5: some of the six traces carry catalogue anti-patterns for the rules to find.
  REQUIRE(ttap_test::RunTtap("gen --out '" + dir + "/ds' --seed 5 --count 6").exit_code == 0);
  // Every trace in the held-out "test" split, so that all six are reported.
  for (const std::string& name : ttap_test::ListDir(dir + "/ds/labels")) {
    const std::string path = dir + "/ds/labels/" + name;
    json j = json::parse(ttap_test::ReadFile(path));
    j["split"] = "test";
    WriteOrFail(path, j.dump());
  }
  setenv("TTAP_LLM_CACHE_DIR", (dir + "/cache").c_str(), 1);
  auto r = ttap_test::RunTtap("eval '" + dir +
                              "/ds' --methods rules --split seen --bootstrap 10 "
                              "--llm --llm-model test-model --llm-base-url " +
                              server.base_url());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(requests.load() > 0);
  CHECK(r.out.find("| llm |") != std::string::npos);
  json report = json::parse(ttap_test::ReadFile(dir + "/ds/eval/eval.json"));
  bool found = false;
  for (const auto& m : report["sections"][0]["methods"]) {
    if (m["method"] != "llm") continue;
    found = true;
    CHECK(m["category_accuracy"]["n"].get<int>() > 0);
  }
  CHECK(found);
  // Without an endpoint --llm is a usage error that names what is missing.
  unsetenv("TTAP_LLM_BASE_URL");
  auto none = ttap_test::RunTtap("eval '" + dir + "/ds' --methods rules --llm --llm-model m");
  CHECK(none.exit_code == 2);
}

// The LSP structs' JSON; see protocol.h.
#include "server/lsp/protocol.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "mapping/suppressions.h"
#include "server/config.h"

namespace ttap::lsp::proto {

// ---- Reading ----

bool JsonPath::Fail(const std::string& what) const {
  if (!error_->empty()) return false;
  std::vector<const JsonPath*> chain;
  for (const JsonPath* p = this; p; p = p->parent_) chain.push_back(p);
  std::string text;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const JsonPath& p = **it;
    if (!p.key_)
      text += "[" + std::to_string(p.index_) + "]";
    else
      text += (text.empty() ? "" : ".") + std::string(p.key_);
  }
  *error_ = text + ": " + what;
  return false;
}

bool FromJson(const json& j, bool* out, const JsonPath& path) {
  if (!j.is_boolean()) return path.Fail("expected true or false");
  *out = j.get<bool>();
  return true;
}

bool FromJson(const json& j, int64_t* out, const JsonPath& path) {
  if (!j.is_number_integer() ||
      (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    return path.Fail("expected an integer");
  *out = j.get<int64_t>();
  return true;
}

bool FromJson(const json& j, int* out, const JsonPath& path) {
  int64_t v;
  if (!FromJson(j, &v, path)) return false;
  if (v < INT_MIN || v > INT_MAX) return path.Fail("out of range");
  *out = static_cast<int>(v);
  return true;
}

bool FromJson(const json& j, size_t* out, const JsonPath& path) {
  if (!j.is_number_integer() || (!j.is_number_unsigned() && j.get<int64_t>() < 0))
    return path.Fail("expected a non-negative integer");
  *out = j.get<size_t>();
  return true;
}

bool FromJson(const json& j, std::string* out, const JsonPath& path) {
  if (!j.is_string()) return path.Fail("expected a string");
  *out = j.get<std::string>();
  return true;
}

namespace {

// An integer in [lo, hi] read as the enum |E|.
template <typename E>
bool EnumFromJson(const json& j, E* out, int lo, int hi, const JsonPath& path) {
  int v;
  if (!FromJson(j, &v, path)) return false;
  if (v < lo || v > hi)
    return path.Fail("expected " + std::to_string(lo) + " to " + std::to_string(hi));
  *out = static_cast<E>(v);
  return true;
}

// A value read leniently: the wrong type reads as absent (initialize).
template <typename T>
void Lenient(const json& j, const char* key, T* out) {
  if (!j.is_object()) return;
  auto it = j.find(key);
  if (it == j.end()) return;
  std::string ignored;
  T value;
  if (FromJson(*it, &value, JsonPath(key, &ignored))) *out = std::move(value);
}

// The value at |keys| below |j|, or null.
const json& At(const json& j, std::initializer_list<const char*> keys) {
  static const json kNull;
  const json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object()) return kNull;
    auto it = at->find(k);
    if (it == at->end()) return kNull;
    at = &*it;
  }
  return *at;
}

// A capability flag: a boolean as it is; any other value than null (an options object) is on.
bool Flag(const json& caps, std::initializer_list<const char*> keys) {
  const json& v = At(caps, keys);
  return v.is_boolean() ? v.get<bool>() : !v.is_null();
}

// The strings of an array (other elements skipped); empty when |v| is no array.
std::vector<std::string> Strings(const json& v) {
  std::vector<std::string> out;
  if (!v.is_array()) return out;
  for (const json& e : v)
    if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

}  // namespace

// ---- Basic structures ----

void to_json(json& j, const Position& p) { j = {{"line", p.line}, {"character", p.character}}; }
bool FromJson(const json& j, Position* out, const JsonPath& path) {
  ObjectReader o(j, path);
  if (!o.IsObject() || !o.Required("line", &out->line) || !o.Required("character", &out->character))
    return false;
  if (out->line < 0) return path.Field("line").Fail("must not be negative");
  if (out->character < 0) return path.Field("character").Fail("must not be negative");
  return true;
}

void to_json(json& j, const Range& r) { j = {{"start", r.start}, {"end", r.end}}; }
bool FromJson(const json& j, Range* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("start", &out->start) && o.Required("end", &out->end);
}

void to_json(json& j, const Location& l) { j = {{"uri", l.uri}, {"range", l.range}}; }
bool FromJson(const json& j, Location* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("uri", &out->uri) && o.Required("range", &out->range);
}

bool FromJson(const json& j, TextDocumentIdentifier* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("uri", &out->uri);
}

bool FromJson(const json& j, VersionedTextDocumentIdentifier* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("uri", &out->uri) && o.Optional("version", &out->version);
}

bool FromJson(const json& j, TextDocumentItem* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("uri", &out->uri) &&
         o.Optional("languageId", &out->languageId) && o.Optional("version", &out->version) &&
         o.Required("text", &out->text);
}

bool FromJson(const json& j, TextDocumentPositionParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("textDocument", &out->textDocument) &&
         o.Required("position", &out->position);
}

void to_json(json& j, const TextEdit& e) { j = {{"range", e.range}, {"newText", e.newText}}; }

void to_json(json& j, const WorkspaceEdit& e) { j = {{"changes", e.changes}}; }

void to_json(json& j, const Command& c) {
  j = {{"title", c.title}, {"command", c.command}};
  if (c.arguments) j["arguments"] = *c.arguments;
}

// ---- Documents ----

bool FromJson(const json& j, DidOpenTextDocumentParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("textDocument", &out->textDocument);
}

bool FromJson(const json& j, TextDocumentContentChangeEvent* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Optional("range", &out->range) && o.Required("text", &out->text);
}

bool FromJson(const json& j, DidChangeTextDocumentParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("textDocument", &out->textDocument) &&
         o.Required("contentChanges", &out->contentChanges);
}

bool FromJson(const json& j, DidCloseTextDocumentParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("textDocument", &out->textDocument);
}

// ---- Diagnostics ----

void to_json(json& j, DiagnosticSeverity s) { j = static_cast<int>(s); }
bool FromJson(const json& j, DiagnosticSeverity* out, const JsonPath& path) {
  return EnumFromJson(j, out, 1, 4, path);
}

void to_json(json& j, DiagnosticTag t) { j = static_cast<int>(t); }
// Tags added to the spec later are kept as their numbers (a code action's context can carry other
// servers' diagnostics).
bool FromJson(const json& j, DiagnosticTag* out, const JsonPath& path) {
  return EnumFromJson(j, out, 1, INT_MAX, path);
}

void to_json(json& j, const CodeDescription& c) { j = {{"href", c.href}}; }
bool FromJson(const json& j, CodeDescription* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("href", &out->href);
}

void to_json(json& j, const DiagnosticRelatedInformation& r) {
  j = {{"location", r.location}, {"message", r.message}};
}
bool FromJson(const json& j, DiagnosticRelatedInformation* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("location", &out->location) &&
         o.Required("message", &out->message);
}

void to_json(json& j, const Diagnostic& d) {
  j = {{"range", d.range}, {"message", d.message}};
  if (d.severity) j["severity"] = *d.severity;
  if (d.code) j["code"] = *d.code;
  if (d.codeDescription) j["codeDescription"] = *d.codeDescription;
  if (d.source) j["source"] = *d.source;
  if (!d.tags.empty()) j["tags"] = d.tags;
  if (d.relatedInformation) j["relatedInformation"] = *d.relatedInformation;
  if (d.data) j["data"] = *d.data;
}
bool FromJson(const json& j, Diagnostic* out, const JsonPath& path) {
  ObjectReader o(j, path);
  if (!o.IsObject()) return false;
  // The spec allows an integer code; read as its digits.
  auto code = j.find("code");
  const bool numeric_code = code != j.end() && code->is_number_integer();
  if (numeric_code) out->code = code->dump();
  return o.Required("range", &out->range) && o.Required("message", &out->message) &&
         o.Optional("severity", &out->severity) &&
         (numeric_code || o.Optional("code", &out->code)) &&
         o.Optional("codeDescription", &out->codeDescription) &&
         o.Optional("source", &out->source) && o.Optional("tags", &out->tags) &&
         o.Optional("relatedInformation", &out->relatedInformation) &&
         o.Optional("data", &out->data);
}

void to_json(json& j, const PublishDiagnosticsParams& p) {
  j = {{"uri", p.uri}, {"diagnostics", p.diagnostics}};
  if (p.version) j["version"] = *p.version;
}

bool FromJson(const json& j, DocumentDiagnosticParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("textDocument", &out->textDocument);
}

void to_json(json& j, const FullDocumentDiagnosticReport& r) {
  j = {{"kind", "full"}, {"items", r.items}};
}

bool FromJson(const json& j, WorkspaceDiagnosticParams*, const JsonPath& path) {
  return ObjectReader(j, path).IsObject();
}

void to_json(json& j, const WorkspaceFullDocumentDiagnosticReport& r) {
  j = {{"uri", r.uri}, {"kind", "full"}, {"version", nullptr}, {"items", r.items}};
  if (r.version) j["version"] = *r.version;
}

void to_json(json& j, const WorkspaceDiagnosticReport& r) { j = {{"items", r.items}}; }

// ---- Code actions and code lenses ----

bool FromJson(const json& j, CodeActionContext* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Optional("diagnostics", &out->diagnostics) &&
         o.Optional("only", &out->only);
}

bool FromJson(const json& j, CodeActionParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("textDocument", &out->textDocument) &&
         o.Required("range", &out->range) && o.Optional("context", &out->context);
}

void to_json(json& j, const CodeAction& a) {
  j = {{"title", a.title}};
  if (a.kind) j["kind"] = *a.kind;
  if (a.diagnostics) j["diagnostics"] = *a.diagnostics;
  if (a.isPreferred) j["isPreferred"] = *a.isPreferred;
  if (a.edit) j["edit"] = *a.edit;
  if (a.command) j["command"] = *a.command;
  if (a.data) j["data"] = *a.data;
}

void to_json(json& j, const CodeActionData& d) {
  j = {{"uri", d.uri}, {"finding", d.finding}, {"title", d.title}};
}
bool FromJson(const json& j, CodeActionData* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("uri", &out->uri) && o.Required("finding", &out->finding) &&
         o.Optional("title", &out->title);
}

bool FromJson(const json& j, CodeActionResolveParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  out->action = j;
  return o.IsObject() && o.Optional("data", &out->data);
}

bool FromJson(const json& j, CodeLensParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("textDocument", &out->textDocument);
}

void to_json(json& j, const CodeLens& l) {
  j = {{"range", l.range}};
  if (l.command) j["command"] = *l.command;
}

bool FromJson(const json& j, ExecuteCommandParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("command", &out->command) &&
         o.Optional("arguments", &out->arguments);
}

// ---- Hover ----

void to_json(json& j, MarkupKind k) { j = k == MarkupKind::kMarkdown ? "markdown" : "plaintext"; }
void to_json(json& j, const MarkupContent& c) { j = {{"kind", c.kind}, {"value", c.value}}; }
void to_json(json& j, const Hover& h) {
  j = {{"contents", h.contents}};
  if (h.range) j["range"] = *h.range;
}

// ---- Lifecycle, workspace and window ----

bool FromJson(const json& j, InitializeParams* out, const JsonPath& path) {
  if (!ObjectReader(j, path).IsObject()) return false;
  Lenient(j, "processId", &out->processId);
  Lenient(j, "rootUri", &out->rootUri);
  Lenient(j, "rootPath", &out->rootPath);
  const json& folders = At(j, {"workspaceFolders"});
  if (folders.is_array()) {
    for (const json& f : folders) {
      if (!f.is_object()) continue;
      WorkspaceFolder folder;
      Lenient(f, "uri", &folder.uri);
      Lenient(f, "name", &folder.name);
      out->workspaceFolders.push_back(std::move(folder));
    }
  }
  Lenient(j, "initializationOptions", &out->initializationOptions);
  const json& caps = At(j, {"capabilities"});
  ClientCapabilities& c = out->capabilities;
  c.positionEncodings = Strings(At(caps, {"general", "positionEncodings"}));
  c.diagnosticPull = Flag(caps, {"textDocument", "diagnostic"});
  c.diagnosticRefresh = Flag(caps, {"workspace", "diagnostics", "refreshSupport"});
  c.relatedInformation = Flag(caps, {"textDocument", "publishDiagnostics", "relatedInformation"});
  c.codeDescriptionSupport =
      Flag(caps, {"textDocument", "publishDiagnostics", "codeDescriptionSupport"});
  c.dataSupport = Flag(caps, {"textDocument", "publishDiagnostics", "dataSupport"});
  c.codeActionResolveProperties =
      Strings(At(caps, {"textDocument", "codeAction", "resolveSupport", "properties"}));
  c.workspaceConfiguration = Flag(caps, {"workspace", "configuration"});
  c.watchedFilesDynamicRegistration =
      Flag(caps, {"workspace", "didChangeWatchedFiles", "dynamicRegistration"});
  c.workDoneProgress = Flag(caps, {"window", "workDoneProgress"});
  c.codeLensRefresh = Flag(caps, {"workspace", "codeLens", "refreshSupport"});
  c.hoverContentFormat = Strings(At(caps, {"textDocument", "hover", "contentFormat"}));
  return true;
}

void to_json(json& j, TextDocumentSyncKind k) { j = static_cast<int>(k); }

bool FromJson(const json& j, DidChangeConfigurationParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Optional("settings", &out->settings);
}

bool FromJson(const json& j, FileChangeType* out, const JsonPath& path) {
  return EnumFromJson(j, out, 1, 3, path);
}

bool FromJson(const json& j, FileEvent* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("uri", &out->uri) && o.Required("type", &out->type);
}

bool FromJson(const json& j, DidChangeWatchedFilesParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("changes", &out->changes);
}

bool FromJson(const json& j, WorkspaceFolder* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("uri", &out->uri) && o.Optional("name", &out->name);
}

bool FromJson(const json& j, WorkspaceFoldersChangeEvent* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Optional("added", &out->added) && o.Optional("removed", &out->removed);
}

bool FromJson(const json& j, DidChangeWorkspaceFoldersParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  return o.IsObject() && o.Required("event", &out->event);
}

void to_json(json& j, const FileSystemWatcher& w) {
  j = {{"globPattern", w.globPattern}};
  if (w.kind) j["kind"] = *w.kind;
}

void to_json(json& j, const Registration& r) {
  j = {{"id", r.id}, {"method", r.method}};
  if (r.registerOptions) j["registerOptions"] = *r.registerOptions;
}

void to_json(json& j, const RegistrationParams& p) { j = {{"registrations", p.registrations}}; }

void to_json(json& j, const ConfigurationItem& i) {
  j = json::object();
  if (i.section) j["section"] = *i.section;
}

void to_json(json& j, const ConfigurationParams& p) { j = {{"items", p.items}}; }

bool FromJson(const json& j, CancelParams* out, const JsonPath& path) {
  ObjectReader o(j, path);
  if (!o.IsObject() || !o.Required("id", &out->id)) return false;
  if (!out->id.is_number_integer() && !out->id.is_string())
    return path.Field("id").Fail("expected an integer or a string");
  return true;
}

TtapSettings ReadTtapSettings(const json& s) {
  TtapSettings out;
  if (!s.is_object()) return out;
  auto strings = [](const json& a) {
    std::vector<std::string> v;
    for (const auto& x : a)
      if (x.is_string()) v.push_back(x);
    return v;
  };
  if (s.contains("traceGlobs") && s["traceGlobs"].is_array())
    out.trace_globs = strings(s["traceGlobs"]);
  if (s.contains("rank")) {
    if (s["rank"].is_number_integer() && s["rank"].get<int64_t>() >= -1 &&
        s["rank"].get<int64_t>() <= 1 << 20) {
      out.rank = s["rank"].get<int>();
    } else if (!s["rank"].is_null()) {
      out.refused.push_back("ttap.rank must be an integer between -1 and 1048576");
    }
  }
  if (s.contains("windows") && !s["windows"].is_null()) {
    if (s["windows"].is_number_integer() && s["windows"].get<int64_t>() >= kMinWindows &&
        s["windows"].get<int64_t>() <= kMaxWindows) {
      out.windows = s["windows"].get<int>();
    } else {
      out.refused.push_back("ttap.windows must be an integer between " +
                            std::to_string(kMinWindows) + " and " + std::to_string(kMaxWindows));
    }
  }
  if (s.contains("thresholds") && s["thresholds"].is_object()) {
    for (auto& [k, v] : s["thresholds"].items()) {
      if (v.is_number() && std::isfinite(v.get<double>()) && std::abs(v.get<double>()) <= 1e12) {
        out.thresholds[k] = v;
      } else {
        out.refused.push_back("ttap.thresholds." + k + " must be a number");
      }
    }
  }
  if (s.contains("pathMaps") && s["pathMaps"].is_object()) {
    out.path_maps.emplace();
    for (auto& [k, v] : s["pathMaps"].items())
      if (v.is_string()) out.path_maps->emplace_back(k, v);
  }
  if (s.contains("llm") && s["llm"].is_object()) {
    const json& l = s["llm"];
    auto text = [&](const char* key) -> std::optional<std::string> {
      if (!l.contains(key) || !l[key].is_string() || l[key].get<std::string>().empty())
        return std::nullopt;
      return l[key].get<std::string>();
    };
    TtapLlmSettings llm;
    llm.base_url = text("baseUrl");
    llm.model = text("model");
    llm.api_key_env = text("apiKeyEnv");
    if (auto auth = text("authHeader")) llm.auth_header = *auth == "api-key" ? "api-key" : "bearer";
    if (l.contains("maxDrafts") && l["maxDrafts"].is_number_integer())
      llm.max_drafts = std::clamp(l["maxDrafts"].get<int>(), 0, 100);
    if (l.contains("timeoutSeconds") && l["timeoutSeconds"].is_number())
      llm.timeout_s = std::clamp(l["timeoutSeconds"].get<double>(), 0.1, 3600.0);
    if (l.contains("enabled") && l["enabled"].is_boolean()) llm.enabled = l["enabled"].get<bool>();
    out.llm = llm;
  }
  if (s.contains("model") && s["model"].is_object()) {
    const json& m = s["model"];
    TtapModelSettings model;
    if (m.contains("enabled") && m["enabled"].is_boolean())
      model.enabled = m["enabled"].get<bool>();
    if (m.contains("path") && m["path"].is_string()) model.path = m["path"].get<std::string>();
    if (m.contains("device") && m["device"].is_string()) {
      const std::string d = m["device"];
      model.device = d == "cpu" || d == "cuda" ? d : "auto";
    }
    if (m.contains("threshold")) {  // null (or out of [0, 1]): the file's own
      const double t = m["threshold"].is_number() ? m["threshold"].get<double>() : -1;
      model.threshold = t >= 0 && t <= 1 ? t : -1;
    }
    out.model = model;
  }
  for (const char* key : {"select", "ignore"}) {
    if (!s.contains(key) || !s[key].is_array()) continue;
    std::vector<std::string> codes = strings(s[key]);
    if (!codes.empty() && CheckCodeList(codes).empty())
      (std::string(key) == "select" ? out.select : out.ignore) = codes;
  }
  if (s.contains("userFramesInclude") && s["userFramesInclude"].is_array())
    out.user_frames_include = strings(s["userFramesInclude"]);
  if (s.contains("userFramesExclude") && s["userFramesExclude"].is_array())
    out.user_frames_exclude = strings(s["userFramesExclude"]);
  return out;
}

void to_json(json& j, MessageType t) { j = static_cast<int>(t); }
void to_json(json& j, const ShowMessageParams& p) {
  j = {{"type", p.type}, {"message", p.message}};
}
void to_json(json& j, const WorkDoneProgressCreateParams& p) { j = {{"token", p.token}}; }
void to_json(json& j, const WorkDoneProgress& p) {
  static const char* const kKinds[] = {"begin", "report", "end"};
  j = {{"kind", kKinds[static_cast<int>(p.kind)]}};
  if (p.title) j["title"] = *p.title;
  if (p.message) j["message"] = *p.message;
  if (p.percentage) j["percentage"] = *p.percentage;
  if (p.cancellable) j["cancellable"] = *p.cancellable;
}
void to_json(json& j, const ProgressParams& p) { j = {{"token", p.token}, {"value", p.value}}; }
void to_json(json& j, const TtapStatusParams& p) {
  j = {{"state", p.state}, {"rank", p.rank}, {"model", p.model}};
  if (p.trace) j["trace"] = *p.trace;
  if (p.findings) j["findings"] = *p.findings;
  if (p.findings_total) j["findings_total"] = *p.findings_total;
  if (p.detail) j["detail"] = *p.detail;
}

}  // namespace ttap::lsp::proto

// The LSP messages the server reads and writes, as structs named as on the wire, with their enums
// (DiagnosticSeverity, MessageType, MarkupKind, ...) instead of bare numbers. Writing: nlohmann's
// to_json (`json j = diagnostic;`); optional fields left empty are omitted, as the spec allows.
// Reading: FromJson never throws and, on failure, names the field and what was wrong
// ("params.position.line: expected an integer"); binder.h turns that into an InvalidParams reply.
// Used by the session's dispatch (lsp_server.cpp) and its feature_*.cpp files.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mapping/python_source.h"

namespace ttap::lsp::proto {

using json = nlohmann::json;

// ---- Reading ----

// Where a value sits in a message ("params.contentChanges[2].range"), for error messages. Paths
// are built on the stack as a parse descends; the text is made only when something fails.
class JsonPath {
 public:
  // The root, named |name|; the first failure below it is written to |error|.
  JsonPath(const char* name, std::string* error) : key_(name), error_(error) {}
  JsonPath Field(const char* key) const { return JsonPath(this, key, 0); }
  JsonPath Index(size_t index) const { return JsonPath(this, nullptr, index); }
  // Records "<path>: <what>" unless a failure is already recorded; returns false.
  bool Fail(const std::string& what) const;

 private:
  JsonPath(const JsonPath* parent, const char* key, size_t index)
      : parent_(parent), key_(key), index_(index), error_(parent->error_) {}
  const JsonPath* parent_ = nullptr;
  const char* key_ = nullptr;  // null: an array element, |index_|
  size_t index_ = 0;
  std::string* error_;
};

bool FromJson(const json& j, bool* out, const JsonPath& path);
bool FromJson(const json& j, int* out, const JsonPath& path);
bool FromJson(const json& j, int64_t* out, const JsonPath& path);
bool FromJson(const json& j, size_t* out, const JsonPath& path);
bool FromJson(const json& j, std::string* out, const JsonPath& path);
inline bool FromJson(const json& j, json* out, const JsonPath&) {
  *out = j;
  return true;
}
template <typename T>
bool FromJson(const json& j, std::vector<T>* out, const JsonPath& path) {
  if (!j.is_array()) return path.Fail("expected an array");
  out->clear();
  out->resize(j.size());
  for (size_t i = 0; i < j.size(); ++i)
    if (!FromJson(j[i], &(*out)[i], path.Index(i))) return false;
  return true;
}
// null reads as absent.
template <typename T>
bool FromJson(const json& j, std::optional<T>* out, const JsonPath& path) {
  if (j.is_null()) {
    out->reset();
    return true;
  }
  return FromJson(j, &out->emplace(), path);
}

// The fields of one object: Required fails when the field is missing, Optional leaves |out| as it
// is when the field is missing or null.
class ObjectReader {
 public:
  ObjectReader(const json& j, const JsonPath& path) : j_(j), path_(path) {}
  // False (and the failure recorded) when the value is not an object.
  bool IsObject() const { return j_.is_object() || path_.Fail("expected an object"); }
  template <typename T>
  bool Required(const char* key, T* out) const {
    auto it = j_.find(key);
    if (it == j_.end()) return path_.Field(key).Fail("missing");
    return FromJson(*it, out, path_.Field(key));
  }
  template <typename T>
  bool Optional(const char* key, T* out) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return true;
    return FromJson(*it, out, path_.Field(key));
  }

 private:
  const json& j_;
  const JsonPath& path_;
};

// ---- Basic structures ----

struct Position {
  int line = 0;       // 0-based
  int character = 0;  // in the negotiated encoding's units
  SourcePosition ToSource() const { return {line, character}; }
  static Position From(SourcePosition p) { return {p.line, p.character}; }
};
struct Range {
  Position start, end;
  static Range From(const SourceRange& r) {
    return {Position::From(r.start), Position::From(r.end)};
  }
};
struct Location {
  std::string uri;
  Range range;
};
struct TextDocumentIdentifier {
  std::string uri;
};
struct VersionedTextDocumentIdentifier {
  std::string uri;
  std::optional<int64_t> version;
};
struct TextDocumentItem {
  std::string uri;
  std::string languageId;
  std::optional<int64_t> version;
  std::string text;
};
struct TextDocumentPositionParams {
  TextDocumentIdentifier textDocument;
  Position position;
};
using HoverParams = TextDocumentPositionParams;
struct TextEdit {
  Range range;
  std::string newText;
};
struct WorkspaceEdit {
  std::map<std::string, std::vector<TextEdit>> changes;  // uri -> edits
};
struct Command {
  std::string title;
  std::string command;
  std::optional<json> arguments;
};

// ---- Documents ----

struct DidOpenTextDocumentParams {
  TextDocumentItem textDocument;
};
struct TextDocumentContentChangeEvent {
  std::optional<Range> range;  // absent: |text| is the whole document
  std::string text;
};
struct DidChangeTextDocumentParams {
  VersionedTextDocumentIdentifier textDocument;
  std::vector<TextDocumentContentChangeEvent> contentChanges;
};
struct DidCloseTextDocumentParams {
  TextDocumentIdentifier textDocument;
};

// ---- Diagnostics ----

enum class DiagnosticSeverity { kError = 1, kWarning = 2, kInformation = 3, kHint = 4 };
enum class DiagnosticTag { kUnnecessary = 1, kDeprecated = 2 };
struct CodeDescription {
  std::string href;
};
struct DiagnosticRelatedInformation {
  Location location;
  std::string message;
};
struct Diagnostic {
  Range range;
  std::optional<DiagnosticSeverity> severity;
  std::optional<std::string> code;  // an integer code reads as its digits
  std::optional<CodeDescription> codeDescription;
  std::optional<std::string> source;
  std::string message;
  std::vector<DiagnosticTag> tags;  // omitted when empty
  std::optional<std::vector<DiagnosticRelatedInformation>> relatedInformation;
  std::optional<json> data;
};
struct PublishDiagnosticsParams {
  std::string uri;
  std::optional<int64_t> version;
  std::vector<Diagnostic> diagnostics;
};
struct DocumentDiagnosticParams {
  TextDocumentIdentifier textDocument;
};
// textDocument/diagnostic's answer: {"kind": "full", "items": [...]}.
struct FullDocumentDiagnosticReport {
  std::vector<Diagnostic> items;
};
struct WorkspaceDiagnosticParams {};  // previousResultIds and the rest are not read
// One file of workspace/diagnostic's answer; |version| is written as null when absent.
struct WorkspaceFullDocumentDiagnosticReport {
  std::string uri;
  std::optional<int64_t> version;
  std::vector<Diagnostic> items;
};
struct WorkspaceDiagnosticReport {
  std::vector<WorkspaceFullDocumentDiagnosticReport> items;
};

// ---- Code actions and code lenses ----

namespace code_action_kind {
inline constexpr char kQuickFix[] = "quickfix";
inline constexpr char kSourceFixAllTtap[] = "source.fixAll.ttap";
}  // namespace code_action_kind

struct CodeActionContext {
  std::vector<Diagnostic> diagnostics;
  std::optional<std::vector<std::string>> only;  // kinds, matched by prefix
};
struct CodeActionParams {
  TextDocumentIdentifier textDocument;
  Range range;
  CodeActionContext context;
};
struct CodeAction {
  std::string title;
  std::optional<std::string> kind;
  std::optional<std::vector<Diagnostic>> diagnostics;
  std::optional<bool> isPreferred;
  std::optional<WorkspaceEdit> edit;
  std::optional<Command> command;
  std::optional<json> data;
};
// The server's `data` on a code action whose edit codeAction/resolve computes.
struct CodeActionData {
  std::string uri;
  size_t finding = 0;  // index into the analysis' findings
  std::string title;   // which of the finding's fixes
};
// codeAction/resolve's params: the action as the client has it (answered with its edit added, the
// client's other fields kept as sent) and the server's data on it.
struct CodeActionResolveParams {
  json action;
  std::optional<CodeActionData> data;
};
struct CodeLensParams {
  TextDocumentIdentifier textDocument;
};
struct CodeLens {
  Range range;
  std::optional<Command> command;
};
struct ExecuteCommandParams {
  std::string command;
  std::optional<json> arguments;
};

// ---- Hover ----

enum class MarkupKind { kPlainText, kMarkdown };  // "plaintext", "markdown"
struct MarkupContent {
  MarkupKind kind = MarkupKind::kMarkdown;
  std::string value;
};
struct Hover {
  MarkupContent contents;
  std::optional<Range> range;
};

// ---- Lifecycle, workspace and window ----

// The client capabilities the server reads, flattened (the wire path of each in its comment). A
// capability of the wrong type reads as absent: a client's odd capability never fails initialize.
struct ClientCapabilities {
  std::vector<std::string> positionEncodings;  // general.positionEncodings
  bool diagnosticPull = false;                 // textDocument.diagnostic
  bool diagnosticRefresh = false;              // workspace.diagnostics.refreshSupport
  // textDocument.publishDiagnostics.{relatedInformation, codeDescriptionSupport, dataSupport}
  bool relatedInformation = false;
  bool codeDescriptionSupport = false;
  bool dataSupport = false;
  // textDocument.codeAction.resolveSupport.properties
  std::vector<std::string> codeActionResolveProperties;
  bool workspaceConfiguration = false;           // workspace.configuration
  bool watchedFilesDynamicRegistration = false;  // workspace.didChangeWatchedFiles.dyn...
  bool workDoneProgress = false;                 // window.workDoneProgress
  bool codeLensRefresh = false;                  // workspace.codeLens.refreshSupport
  std::vector<std::string> hoverContentFormat;   // textDocument.hover.contentFormat
};
struct WorkspaceFolder {
  std::string uri;  // "" when the client sent none
  std::string name;
};
// Read leniently, like the capabilities: a field of the wrong type reads as absent.
struct InitializeParams {
  std::optional<int64_t> processId;
  std::optional<std::string> rootUri;
  std::optional<std::string> rootPath;
  std::vector<WorkspaceFolder> workspaceFolders;
  std::optional<json> initializationOptions;
  ClientCapabilities capabilities;
};
enum class TextDocumentSyncKind { kNone = 0, kFull = 1, kIncremental = 2 };
struct DidChangeConfigurationParams {
  std::optional<json> settings;  // the editor's settings; ttap's own under "ttap"
};
enum class FileChangeType { kCreated = 1, kChanged = 2, kDeleted = 3 };
struct FileEvent {
  std::string uri;
  FileChangeType type = FileChangeType::kChanged;
};
struct DidChangeWatchedFilesParams {
  std::vector<FileEvent> changes;
};
struct WorkspaceFoldersChangeEvent {
  std::vector<WorkspaceFolder> added, removed;
};
struct DidChangeWorkspaceFoldersParams {
  WorkspaceFoldersChangeEvent event;
};
// A bit set: which events a file watcher reports.
enum WatchKind : int { kWatchCreate = 1, kWatchChange = 2, kWatchDelete = 4 };
struct FileSystemWatcher {
  std::string globPattern;
  std::optional<int> kind;  // WatchKind bits; absent: all three
};
struct Registration {
  std::string id;
  std::string method;
  std::optional<json> registerOptions;
};
struct RegistrationParams {
  std::vector<Registration> registrations;
};
struct ConfigurationItem {
  std::optional<std::string> section;
};
struct ConfigurationParams {
  std::vector<ConfigurationItem> items;
};
struct CancelParams {
  json id;  // a number or a string
};
enum class MessageType { kError = 1, kWarning = 2, kInfo = 3, kLog = 4 };
// window/showMessage and window/logMessage.
struct ShowMessageParams {
  MessageType type = MessageType::kInfo;
  std::string message;
};
using LogMessageParams = ShowMessageParams;
// window/workDoneProgress/create.
struct WorkDoneProgressCreateParams {
  std::string token;
};
// $/progress of a work-done token: begin (title, cancellable), report, end.
enum class ProgressKind { kBegin, kReport, kEnd };
struct WorkDoneProgress {
  ProgressKind kind = ProgressKind::kBegin;
  std::optional<std::string> title;  // begin only
  std::optional<std::string> message;
  std::optional<int> percentage;    // begin and report
  std::optional<bool> cancellable;  // begin only
};
struct ProgressParams {
  std::string token;
  WorkDoneProgress value;
};
// ttap's section of the editor's settings (didChangeConfiguration, workspace/configuration,
// initializationOptions), as read: each value checked as the config file's is, one out of its
// bounds refused (said in |refused|), never clamped into something the user did not ask for;
// values of the wrong type are ignored.
struct TtapLlmSettings {
  std::optional<std::string> base_url, model, api_key_env;  // empty strings read as absent
  std::optional<std::string> auth_header;                   // "api-key" or "bearer"
  std::optional<int> max_drafts;                            // clamped to 0..100
  std::optional<double> timeout_s;                          // clamped to 0.1..3600
  std::optional<bool> enabled;
};
struct TtapModelSettings {
  std::optional<bool> enabled;
  std::optional<std::string> path;
  std::optional<std::string> device;  // "cpu", "cuda" or "auto"
  std::optional<double> threshold;    // given: -1 (the file's own) unless in [0, 1]
};
struct TtapSettings {
  std::optional<std::vector<std::string>> trace_globs;
  std::optional<int> rank;     // -1..2^20
  std::optional<int> windows;  // kMinWindows..kMaxWindows
  std::map<std::string, double> thresholds;
  std::optional<std::vector<std::pair<std::string, std::string>>> path_maps;
  std::optional<TtapLlmSettings> llm;
  std::optional<TtapModelSettings> model;
  // Code lists: set only when non-empty and valid (the editor's empty default keeps the
  // project's lists).
  std::optional<std::vector<std::string>> select, ignore;
  std::optional<std::vector<std::string>> user_frames_include, user_frames_exclude;
  std::vector<std::string> refused;  // "ttap.windows must be ..." per refused value
};
TtapSettings ReadTtapSettings(const json& section);

// ttap/status, ttap's own notification (editors/ show it in the status line): the state
// ("loading", "analyzing", "ready", "drafting", "waiting", "no-trace"), this session's rank, the
// trace shown, the count the Problems view shows and every finding, what the state is about, and
// the window scorer's state.
struct TtapStatusParams {
  std::string state;
  int rank = 0;
  std::optional<std::string> trace;
  std::optional<size_t> findings;        // as the Problems view shows them
  std::optional<size_t> findings_total;  // hints and findings without a line included
  std::optional<std::string> detail;
  std::string model;
};

// ---- Conversions ----

void to_json(json& j, const Position& p);
void to_json(json& j, const Range& r);
void to_json(json& j, const Location& l);
void to_json(json& j, const TextEdit& e);
void to_json(json& j, const WorkspaceEdit& e);
void to_json(json& j, const Command& c);
void to_json(json& j, DiagnosticSeverity s);
void to_json(json& j, DiagnosticTag t);
void to_json(json& j, const CodeDescription& c);
void to_json(json& j, const DiagnosticRelatedInformation& r);
void to_json(json& j, const Diagnostic& d);
void to_json(json& j, const PublishDiagnosticsParams& p);
void to_json(json& j, const FullDocumentDiagnosticReport& r);
void to_json(json& j, const WorkspaceFullDocumentDiagnosticReport& r);
void to_json(json& j, const WorkspaceDiagnosticReport& r);
void to_json(json& j, const CodeAction& a);
void to_json(json& j, const CodeActionData& d);
void to_json(json& j, const CodeLens& l);
void to_json(json& j, MarkupKind k);
void to_json(json& j, const MarkupContent& c);
void to_json(json& j, const Hover& h);
void to_json(json& j, TextDocumentSyncKind k);
void to_json(json& j, const FileSystemWatcher& w);
void to_json(json& j, const Registration& r);
void to_json(json& j, const RegistrationParams& p);
void to_json(json& j, const ConfigurationItem& i);
void to_json(json& j, const ConfigurationParams& p);
void to_json(json& j, MessageType t);
void to_json(json& j, const ShowMessageParams& p);
void to_json(json& j, const WorkDoneProgressCreateParams& p);
void to_json(json& j, const WorkDoneProgress& p);
void to_json(json& j, const ProgressParams& p);
void to_json(json& j, const TtapStatusParams& p);

bool FromJson(const json& j, Position* out, const JsonPath& path);
bool FromJson(const json& j, Range* out, const JsonPath& path);
bool FromJson(const json& j, Location* out, const JsonPath& path);
bool FromJson(const json& j, TextDocumentIdentifier* out, const JsonPath& path);
bool FromJson(const json& j, VersionedTextDocumentIdentifier* out, const JsonPath& path);
bool FromJson(const json& j, TextDocumentItem* out, const JsonPath& path);
bool FromJson(const json& j, TextDocumentPositionParams* out, const JsonPath& path);
bool FromJson(const json& j, DidOpenTextDocumentParams* out, const JsonPath& path);
bool FromJson(const json& j, TextDocumentContentChangeEvent* out, const JsonPath& path);
bool FromJson(const json& j, DidChangeTextDocumentParams* out, const JsonPath& path);
bool FromJson(const json& j, DidCloseTextDocumentParams* out, const JsonPath& path);
bool FromJson(const json& j, DiagnosticSeverity* out, const JsonPath& path);
bool FromJson(const json& j, DiagnosticTag* out, const JsonPath& path);
bool FromJson(const json& j, CodeDescription* out, const JsonPath& path);
bool FromJson(const json& j, DiagnosticRelatedInformation* out, const JsonPath& path);
bool FromJson(const json& j, Diagnostic* out, const JsonPath& path);
bool FromJson(const json& j, DocumentDiagnosticParams* out, const JsonPath& path);
bool FromJson(const json& j, WorkspaceDiagnosticParams* out, const JsonPath& path);
bool FromJson(const json& j, CodeActionContext* out, const JsonPath& path);
bool FromJson(const json& j, CodeActionParams* out, const JsonPath& path);
bool FromJson(const json& j, CodeActionData* out, const JsonPath& path);
bool FromJson(const json& j, CodeActionResolveParams* out, const JsonPath& path);
bool FromJson(const json& j, CodeLensParams* out, const JsonPath& path);
bool FromJson(const json& j, ExecuteCommandParams* out, const JsonPath& path);
bool FromJson(const json& j, InitializeParams* out, const JsonPath& path);
bool FromJson(const json& j, DidChangeConfigurationParams* out, const JsonPath& path);
bool FromJson(const json& j, FileChangeType* out, const JsonPath& path);
bool FromJson(const json& j, FileEvent* out, const JsonPath& path);
bool FromJson(const json& j, DidChangeWatchedFilesParams* out, const JsonPath& path);
bool FromJson(const json& j, WorkspaceFolder* out, const JsonPath& path);
bool FromJson(const json& j, WorkspaceFoldersChangeEvent* out, const JsonPath& path);
bool FromJson(const json& j, DidChangeWorkspaceFoldersParams* out, const JsonPath& path);
bool FromJson(const json& j, CancelParams* out, const JsonPath& path);

}  // namespace ttap::lsp::proto

// FeatureView: what an LSP feature reads, and the features as functions of (view, params), as
// clangd's features take a ParsedAST and their params rather than the server. The view gives the
// snapshot the scheduler published (read-only), its findings placed in a file as the buffer has
// them now (lines moved by edits), the buffers, the cached explanations and LLM drafts, and what
// the client negotiated. The Session (session.h) implements it and replies with what these
// return; the feature files include this header, not session.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/base/cancel.h"
#include "analysis/base/status.h"
#include "mapping/python_source.h"
#include "mapping/quick_fixes.h"
#include "server/lsp/protocol.h"
#include "server/lsp/snapshot.h"

namespace ttap::lsp {

using json = nlohmann::json;

// What the client negotiated that the features read.
struct ClientCaps {
  PositionEncoding encoding = PositionEncoding::kUtf16;
  bool code_description = false;
  bool related_information = false;
  bool diagnostic_data = false;
  bool resolve_code_actions = false;
  bool hover_markdown = true;  // false when the client asks for plaintext hovers (eglot)
};

class FeatureView {
 public:
  virtual ~FeatureView() = default;
  // The snapshot shown (null when none).
  virtual std::shared_ptr<const Snapshot> View() = 0;
  // A copy of |snap|'s findings placed in |path|, each on the line it has moved to.
  virtual std::vector<Placed> PlacedIn(const Snapshot& snap, const std::string& path) = 0;
  // The file as the editor has it (or as on disk): Session::SourceFor.
  virtual std::shared_ptr<const PythonSource> SourceFor(const std::string& path,
                                                        int64_t* version = nullptr,
                                                        int exact_through = -1,
                                                        int* edited_from = nullptr) = 0;
  // |snap|'s finding explained (FindingMarkdown), made once per finding.
  virtual std::string Explanation(const Snapshot& snap, size_t finding) = 0;
  // |snap|'s LLM draft of |finding|, null when none.
  virtual std::shared_ptr<const llm::FindingDraft> DraftOf(const Snapshot& snap,
                                                           size_t finding) = 0;
  virtual void ClientLog(const std::string& message) = 0;  // to the client's log
  virtual const ClientCaps& client() const = 0;
};

// ---- Features (feature_*.cpp) ----

// False when the finding cannot be placed in |path| now, or a comment there suppresses it.
// |exact_through|: as SourceFor's (hovers read one line); a finding placed at or below the first
// line edited since that parse is then not placed (false).
bool RangeOf(FeatureView& view, const std::string& path, const Placed& p, const LocatedFinding& lf,
             SourceRange* range, ByteRange* bytes, std::shared_ptr<const PythonSource>* src_out,
             bool* stale, int exact_through = -1);
// textDocument/publishDiagnostics and the pull diagnostics of |path|: one per code and line, of
// the snapshot shown (DiagnosticsFor) or of |snap| (DiagnosticsOf).
std::vector<proto::Diagnostic> DiagnosticsFor(FeatureView& view, const std::string& path);
std::vector<proto::Diagnostic> DiagnosticsOf(FeatureView& view, const Snapshot& snap,
                                             const std::string& path);
// What the Problems view shows of |snap| (DiagnosticsFor every file, hints aside).
size_t CountProblemsShown(FeatureView& view, const Snapshot& snap);
// textDocument/hover: the explanations of the findings under the position; nullopt for none.
std::optional<proto::Hover> HoverAt(FeatureView& view, const proto::HoverParams& params);
// textDocument/codeAction: quick fixes, drafted fixes, suppressions, source.fixAll.ttap.
std::vector<proto::CodeAction> CodeActionsFor(FeatureView& view,
                                              const proto::CodeActionParams& params);
// codeAction/resolve: the action with its edit; an error when the analysis or buffer changed.
StatusOr<json> ResolveCodeAction(FeatureView& view, const proto::CodeActionResolveParams& params);
// textDocument/codeLens: one lens per function holding findings.
std::vector<proto::CodeLens> CodeLensesFor(FeatureView& view, const proto::CodeLensParams& params);
// The trace summary (ttap.showTraceSummary), each finding on the line the Problems view shows.
std::string TraceSummaryMarkdown(FeatureView& view, const CancelToken& cancel);

}  // namespace ttap::lsp

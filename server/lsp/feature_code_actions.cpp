// textDocument/codeAction and codeAction/resolve (see session.h): catalogue quick fixes, drafted
// fixes, "suppress on this line", and source.fixAll.ttap.
#include <set>

#include "mapping/suppressions.h"
#include "server/core/scan_trace.h"
#include "server/lsp/feature_view.h"
#include "server/lsp/uri.h"

namespace ttap::lsp {

// ---- Code actions ----

namespace {

// A quick fix, for |diagnostic| when there is one; its edit (or data to resolve it) comes after.
proto::CodeAction QuickFixAction(std::string title, bool preferred,
                                 const std::optional<proto::Diagnostic>& diagnostic) {
  proto::CodeAction action;
  action.title = std::move(title);
  action.kind = proto::code_action_kind::kQuickFix;
  action.isPreferred = preferred;
  if (diagnostic) action.diagnostics = std::vector<proto::Diagnostic>{*diagnostic};
  return action;
}

// The finding's LLM-drafted fix as a code action, when it still applies to |src|.
void AddDraftedFix(FeatureView& view, const std::string& uri, const Placed& p,
                   const LocatedFinding& lf, const PythonSource& src,
                   const std::optional<proto::Diagnostic>& diagnostic, bool with_edits,
                   std::vector<proto::CodeAction>* actions);

// |edits| of |src| in the client's position encoding.
proto::WorkspaceEdit WorkspaceEditOf(FeatureView& view, const std::string& uri,
                                     const PythonSource& src, const std::vector<TextEdit>& edits) {
  proto::WorkspaceEdit edit;
  auto& lsp_edits = edit.changes[uri];
  for (const TextEdit& e : edits)
    lsp_edits.push_back(
        {proto::Range::From(src.ToRange(e.range, view.client().encoding)), e.new_text});
  return edit;
}

// The finding's quick fixes (for |diagnostic| when given), with their edits or the data
// codeAction/resolve computes them from.
std::vector<proto::CodeAction> FixesFor(FeatureView& view, const std::string& uri,
                                        const std::string& path, const Placed& p,
                                        const LocatedFinding& lf,
                                        const std::optional<proto::Diagnostic>& diagnostic,
                                        bool with_edits) {
  std::vector<proto::CodeAction> actions;
  auto src = view.SourceFor(path);
  if (!src) return actions;
  AddDraftedFix(view, uri, p, lf, *src, diagnostic, with_edits, &actions);
  if (lf.finding.fix.empty()) return actions;
  const std::shared_ptr<const Snapshot> shown = view.View();
  const bool has_gpu = shown && shown->facts.has_gpu;
  // The same request `ttap scan --format sarif` makes, on the line the buffer has it now.
  FixRequest req = FixRequestFor(lf, has_gpu);
  req.line = p.line;
  auto fixes = ComputeFixes(*src, req);
  if (!fixes.ok()) {
    view.ClientLog("no mechanical fix for " + lf.finding.code + ": " + fixes.status().message());
    return actions;
  }
  std::vector<proto::CodeAction> mechanical;
  for (const QuickFix& fx : *fixes) {
    proto::CodeAction action = QuickFixAction(fx.title, fx.preferred, diagnostic);
    if (with_edits)
      action.edit = WorkspaceEditOf(view, uri, *src, fx.edits);
    else
      action.data = json(proto::CodeActionData{uri, p.finding, fx.title});
    mechanical.push_back(std::move(action));
  }
  // The catalogue's fixes first, the drafted one after them.
  for (auto& a : actions) mechanical.push_back(std::move(a));
  return mechanical;
}

// The finding's LLM-drafted fix as a code action, when it still applies to |src|.
void AddDraftedFix(FeatureView& view, const std::string& uri, const Placed& p,
                   const LocatedFinding& lf, const PythonSource& src,
                   const std::optional<proto::Diagnostic>& diagnostic, bool with_edits,
                   std::vector<proto::CodeAction>* actions) {
  // Only the snapshot |lf| belongs to holds its draft.
  const std::shared_ptr<const Snapshot> shown = view.View();
  if (!shown || p.finding >= shown->scan->findings.size() ||
      &shown->scan->findings[p.finding] != &lf)
    return;
  const std::shared_ptr<const llm::FindingDraft> d = view.DraftOf(*shown, p.finding);
  if (!d) return;
  if (!d->draft.fix) return;
  // The buffer may have changed since the draft: the edits move with the finding's line and
  // apply only while the lines they touch are unchanged and the result still parses.
  llm::FixCheck check;
  check.finding_line = p.line;
  check.line_shift = p.line - d->finding_line;
  check.expected_first_line = d->fix_first_line;
  check.expected_lines = &d->fix_lines;
  auto edits = llm::CheckDraftFix(src, *d->draft.fix, check);
  if (!edits.ok()) {
    view.ClientLog("llm: dropped the fix drafted by " + d->draft.model + " for " + lf.finding.code +
                   ": " + edits.status().message());
    return;
  }
  const std::string title =
      "Apply the fix drafted by " + d->draft.model + ": " + d->draft.fix->description;
  proto::CodeAction action = QuickFixAction(title, false, diagnostic);
  if (with_edits)
    action.edit = WorkspaceEditOf(view, uri, src, *edits);
  else
    action.data = json(proto::CodeActionData{uri, p.finding, title});
  actions->push_back(std::move(action));
}

}  // namespace

std::vector<proto::CodeAction> CodeActionsFor(FeatureView& view,
                                              const proto::CodeActionParams& params) {
  const std::string& uri = params.textDocument.uri;
  const std::string path = UriToPath(uri);
  const int first = params.range.start.line, last = params.range.end.line;
  const std::vector<std::string> only = params.context.only.value_or(std::vector<std::string>());
  auto wants = [&](const std::string& kind) {
    if (only.empty()) return true;
    for (const auto& o : only)
      if (kind.rfind(o, 0) == 0) return true;
    return false;
  };
  const std::shared_ptr<const Snapshot> snap = view.View();
  std::vector<proto::CodeAction> actions;
  if (!snap) return actions;
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return actions;
  std::vector<proto::TextEdit> all_edits;
  std::set<std::pair<std::string, int>> suppress_offered;  // (code, line)
  std::vector<proto::CodeAction> suppressions;             // after every fix
  for (const Placed& p : view.PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    SourceRange r;
    ByteRange b;
    bool stale;
    std::shared_ptr<const PythonSource> src;
    if (!RangeOf(view, path, p, lf, &r, &b, &src, &stale) || stale) continue;
    if (wants(proto::code_action_kind::kQuickFix) && r.start.line <= last && r.end.line >= first) {
      proto::Diagnostic diag;
      diag.range = proto::Range::From(r);
      diag.code = lf.finding.code;
      diag.source = "ttap";
      diag.message = lf.finding.name + ": " + lf.finding.message;
      for (auto& a : FixesFor(view, uri, path, p, lf, diag, !view.client().resolve_code_actions))
        actions.push_back(std::move(a));
      if (suppress_offered.insert({lf.finding.code, r.start.line}).second) {
        proto::CodeAction suppress = QuickFixAction(
            "Suppress " + lf.finding.code + " on this line (# ttap: ignore)", false, diag);
        suppress.edit = WorkspaceEditOf(view, uri, *src,
                                        {SuppressionEdit(*src, r.start.line, lf.finding.code)});
        suppressions.push_back(std::move(suppress));
      }
    }
    if (wants(proto::code_action_kind::kSourceFixAllTtap) && !only.empty()) {
      for (auto& a : FixesFor(view, uri, path, p, lf, std::nullopt, true)) {
        if (a.isPreferred.value_or(false) && a.edit)
          for (auto& e : a.edit->changes[uri]) all_edits.push_back(std::move(e));
      }
    }
  }
  for (auto& a : suppressions) actions.push_back(std::move(a));
  if (!all_edits.empty()) {
    proto::CodeAction fix_all;
    fix_all.title = "ttap: apply every safe fix in this file";
    fix_all.kind = proto::code_action_kind::kSourceFixAllTtap;
    fix_all.edit = proto::WorkspaceEdit{{{uri, std::move(all_edits)}}};
    actions.push_back(std::move(fix_all));
  }
  return actions;
}

StatusOr<json> ResolveCodeAction(FeatureView& view, const proto::CodeActionResolveParams& params) {
  json resolved = params.action;
  if (!params.data) return resolved;
  const std::string& uri = params.data->uri;
  const size_t index = params.data->finding;
  const std::shared_ptr<const Snapshot> snap = view.View();
  if (!snap || index >= snap->scan->findings.size()) return Status::Error("the analysis changed");
  const std::string path = UriToPath(uri);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return Status::Error("the analysis changed");
  for (const Placed& p : view.PlacedIn(*snap, path)) {
    if (p.finding != index) continue;
    for (auto& a : FixesFor(view, uri, path, p, snap->scan->findings[index], std::nullopt, true)) {
      if (a.title == params.data->title && a.edit) {
        resolved["edit"] = *a.edit;
        return resolved;
      }
    }
  }
  return Status::Error("the fix no longer applies to this buffer");
}

}  // namespace ttap::lsp

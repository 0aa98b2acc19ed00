// textDocument/codeAction and codeAction/resolve (see session.h): catalogue quick fixes, drafted
// fixes, "suppress on this line", and source.fixAll.ttap.
#include "server/lsp/session.h"

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

}  // namespace

proto::WorkspaceEdit Session::WorkspaceEditOf(const std::string& uri, const PythonSource& src,
                                              const std::vector<TextEdit>& edits) const {
  proto::WorkspaceEdit edit;
  auto& lsp_edits = edit.changes[uri];
  for (const TextEdit& e : edits)
    lsp_edits.push_back({proto::Range::From(src.ToRange(e.range, encoding_)), e.new_text});
  return edit;
}

std::vector<proto::CodeAction> Session::FixesFor(const std::string& uri, const std::string& path,
                                                 const Placed& p, const LocatedFinding& lf,
                                                 const std::optional<proto::Diagnostic>& diagnostic,
                                                 bool with_edits) {
  std::vector<proto::CodeAction> actions;
  auto src = SourceFor(path);
  if (!src) return actions;
  AddDraftedFix(uri, p, lf, *src, diagnostic, with_edits, &actions);
  if (lf.finding.fix.empty()) return actions;
  bool has_gpu = false;
  {
    auto locked = scheduler_.LockState();
    has_gpu = locked->snapshot && locked->snapshot->facts.has_gpu;
  }
  // The same request `ttap scan --format sarif` makes, on the line the buffer has it now.
  FixRequest req = FixRequestFor(lf, has_gpu);
  req.line = p.line;
  auto fixes = ComputeFixes(*src, req);
  if (!fixes.ok()) {
    ClientLog("no mechanical fix for " + lf.finding.code + ": " + fixes.status().message());
    return actions;
  }
  std::vector<proto::CodeAction> mechanical;
  for (const QuickFix& fx : *fixes) {
    proto::CodeAction action = QuickFixAction(fx.title, fx.preferred, diagnostic);
    if (with_edits)
      action.edit = WorkspaceEditOf(uri, *src, fx.edits);
    else
      action.data = json(proto::CodeActionData{uri, p.finding, fx.title});
    mechanical.push_back(std::move(action));
  }
  // The catalogue's fixes first, the drafted one after them.
  for (auto& a : actions) mechanical.push_back(std::move(a));
  return mechanical;
}

void Session::AddDraftedFix(const std::string& uri, const Placed& p, const LocatedFinding& lf,
                            const PythonSource& src,
                            const std::optional<proto::Diagnostic>& diagnostic, bool with_edits,
                            std::vector<proto::CodeAction>* actions) {
  std::shared_ptr<const llm::FindingDraft> d;
  {
    auto locked = scheduler_.LockState();
    // Only the snapshot |lf| belongs to holds its draft.
    if (!locked->snapshot || p.finding >= locked->snapshot->scan->findings.size() ||
        &locked->snapshot->scan->findings[p.finding] != &lf)
      return;
    auto it = locked->drafts.find(p.finding);
    if (it == locked->drafts.end()) return;
    d = it->second;
  }
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
    ClientLog("llm: dropped the fix drafted by " + d->draft.model + " for " + lf.finding.code +
              ": " + edits.status().message());
    return;
  }
  const std::string title =
      "Apply the fix drafted by " + d->draft.model + ": " + d->draft.fix->description;
  proto::CodeAction action = QuickFixAction(title, false, diagnostic);
  if (with_edits)
    action.edit = WorkspaceEditOf(uri, src, *edits);
  else
    action.data = json(proto::CodeActionData{uri, p.finding, title});
  actions->push_back(std::move(action));
}

void Session::OnCodeAction(const proto::CodeActionParams& params, Reply reply) {
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
  const std::shared_ptr<const Snapshot> snap = scheduler_.View();
  std::vector<proto::CodeAction> actions;
  if (!snap) return reply->Result(actions);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Result(actions);
  std::vector<proto::TextEdit> all_edits;
  std::set<std::pair<std::string, int>> suppress_offered;  // (code, line)
  std::vector<proto::CodeAction> suppressions;             // after every fix
  for (const Placed& p : PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    SourceRange r;
    ByteRange b;
    bool stale;
    std::shared_ptr<const PythonSource> src;
    if (!RangeOf(path, p, lf, &r, &b, &src, &stale) || stale) continue;
    if (wants(proto::code_action_kind::kQuickFix) && r.start.line <= last && r.end.line >= first) {
      proto::Diagnostic diag;
      diag.range = proto::Range::From(r);
      diag.code = lf.finding.code;
      diag.source = "ttap";
      diag.message = lf.finding.name + ": " + lf.finding.message;
      for (auto& a : FixesFor(uri, path, p, lf, diag, !resolve_code_actions_))
        actions.push_back(std::move(a));
      if (suppress_offered.insert({lf.finding.code, r.start.line}).second) {
        proto::CodeAction suppress = QuickFixAction(
            "Suppress " + lf.finding.code + " on this line (# ttap: ignore)", false, diag);
        suppress.edit =
            WorkspaceEditOf(uri, *src, {SuppressionEdit(*src, r.start.line, lf.finding.code)});
        suppressions.push_back(std::move(suppress));
      }
    }
    if (wants(proto::code_action_kind::kSourceFixAllTtap) && !only.empty()) {
      for (auto& a : FixesFor(uri, path, p, lf, std::nullopt, true)) {
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
  reply->Result(actions);
}

void Session::OnCodeActionResolve(const proto::CodeActionResolveParams& params, Reply reply) {
  json resolved = params.action;
  if (!params.data) return reply->Result(resolved);
  const std::string& uri = params.data->uri;
  const size_t index = params.data->finding;
  const std::shared_ptr<const Snapshot> snap = scheduler_.View();
  if (!snap || index >= snap->scan->findings.size())
    return reply->Error(kContentModified, "the analysis changed");
  const std::string path = UriToPath(uri);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Error(kContentModified, "the analysis changed");
  for (const Placed& p : PlacedIn(*snap, path)) {
    if (p.finding != index) continue;
    for (auto& a : FixesFor(uri, path, p, snap->scan->findings[index], std::nullopt, true)) {
      if (a.title == params.data->title && a.edit) {
        resolved["edit"] = *a.edit;
        return reply->Result(resolved);
      }
    }
  }
  reply->Error(kContentModified, "the fix no longer applies to this buffer");
}

}  // namespace ttap::lsp

// textDocument/codeAction and codeAction/resolve (see session.h): catalogue quick fixes, drafted
// fixes, "suppress on this line", and source.fixAll.ttap.
#include "server/lsp/session.h"

namespace ttap::lsp {

// ---- Code actions ----

json Session::WorkspaceEditJson(const std::string& uri, const PythonSource& src,
                                const std::vector<TextEdit>& edits) const {
  json lsp_edits = json::array();
  for (const TextEdit& e : edits)
    lsp_edits.push_back(
        {{"range", RangeJson(src.ToRange(e.range, encoding_))}, {"newText", e.new_text}});
  return {{"changes", {{uri, lsp_edits}}}};
}

json Session::FixesFor(const std::string& uri, const std::string& path, const Placed& p,
                       const LocatedFinding& lf, const json& diagnostic, bool with_edits) {
  json actions = json::array();
  auto src = SourceFor(path);
  if (!src) return actions;
  AddDraftedFix(uri, p, lf, *src, diagnostic, with_edits, &actions);
  if (lf.finding.fix.empty()) return actions;
  FixRequest req;
  req.recipe = lf.finding.fix;
  req.line = p.line;
  // What the trace proves: per-parameter fill kernels under zero_grad mean set_to_none was off
  // (the default before torch 2.0); GPU activity means the step runs on a CUDA/ROCm device.
  if (lf.finding.code == "TTA005") req.facts["torch_before_2"] = "1";
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    if (snapshot_ && snapshot_->has_gpu) req.facts["device"] = "cuda";
  }
  auto fixes = ComputeFixes(*src, req);
  if (!fixes.ok()) {
    ClientLog("no mechanical fix for " + lf.finding.code + ": " + fixes.status().message());
    return actions;
  }
  json mechanical = json::array();
  for (const QuickFix& fx : *fixes) {
    json action = {{"title", fx.title}, {"kind", "quickfix"}, {"isPreferred", fx.preferred}};
    if (!diagnostic.is_null()) action["diagnostics"] = json::array({diagnostic});
    if (with_edits) {
      action["edit"] = WorkspaceEditJson(uri, *src, fx.edits);
    } else {
      action["data"] = {{"uri", uri}, {"finding", p.finding}, {"title", fx.title}};
    }
    mechanical.push_back(std::move(action));
  }
  // The catalogue's fixes first, the drafted one after them.
  for (auto& a : actions) mechanical.push_back(std::move(a));
  return mechanical;
}

void Session::AddDraftedFix(const std::string& uri, const Placed& p, const LocatedFinding& lf,
                            const PythonSource& src, const json& diagnostic, bool with_edits,
                            json* actions) {
  std::shared_ptr<const llm::FindingDraft> d;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    // Only the snapshot |lf| belongs to holds its draft.
    if (!snapshot_ || p.finding >= snapshot_->scan->findings.size() ||
        &snapshot_->scan->findings[p.finding] != &lf)
      return;
    auto it = snapshot_->drafts.find(p.finding);
    if (it == snapshot_->drafts.end()) return;
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
  json action = {{"title", title}, {"kind", "quickfix"}, {"isPreferred", false}};
  if (!diagnostic.is_null()) action["diagnostics"] = json::array({diagnostic});
  if (with_edits) {
    action["edit"] = WorkspaceEditJson(uri, src, *edits);
  } else {
    action["data"] = {{"uri", uri}, {"finding", p.finding}, {"title", title}};
  }
  actions->push_back(std::move(action));
}

void Session::OnCodeAction(const json& params, Reply reply) {
  const std::string uri = params.at("textDocument").at("uri");
  const std::string path = UriToPath(uri);
  const json& range = params.at("range");
  int first = range.at("start").at("line"), last = range.at("end").at("line");
  std::vector<std::string> only;
  if (params.contains("context") && params["context"].contains("only")) {
    for (const auto& k : params["context"]["only"]) only.push_back(k);
  }
  auto wants = [&](const std::string& kind) {
    if (only.empty()) return true;
    for (const auto& o : only)
      if (kind.rfind(o, 0) == 0) return true;
    return false;
  };
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  json actions = json::array();
  if (!snap) return reply->Result(actions);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Result(actions);
  json all_edits = json::array();
  std::set<std::pair<std::string, int>> suppress_offered;  // (code, line)
  json suppressions = json::array();                       // after every fix
  for (const Placed& p : PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    SourceRange r;
    ByteRange b;
    bool stale;
    std::shared_ptr<const PythonSource> src;
    if (!RangeOf(path, p, lf, &r, &b, &src, &stale) || stale) continue;
    if (wants("quickfix") && r.start.line <= last && r.end.line >= first) {
      json diag = {{"range", RangeJson(r)},
                   {"code", lf.finding.code},
                   {"source", "ttap"},
                   {"message", lf.finding.name + ": " + lf.finding.message}};
      for (auto& a : FixesFor(uri, path, p, lf, diag, !resolve_code_actions_)) actions.push_back(a);
      if (suppress_offered.insert({lf.finding.code, r.start.line}).second) {
        suppressions.push_back(
            {{"title", "Suppress " + lf.finding.code + " on this line (# ttap: ignore)"},
             {"kind", "quickfix"},
             {"isPreferred", false},
             {"diagnostics", json::array({diag})},
             {"edit", WorkspaceEditJson(uri, *src,
                                        {SuppressionEdit(*src, r.start.line, lf.finding.code)})}});
      }
    }
    if (wants("source.fixAll.ttap") && !only.empty()) {
      for (auto& a : FixesFor(uri, path, p, lf, nullptr, true)) {
        if (a.value("isPreferred", false))
          for (auto& e : a["edit"]["changes"][uri]) all_edits.push_back(e);
      }
    }
  }
  for (auto& a : suppressions) actions.push_back(std::move(a));
  if (!all_edits.empty()) {
    actions.push_back({{"title", "ttap: apply every safe fix in this file"},
                       {"kind", "source.fixAll.ttap"},
                       {"edit", {{"changes", {{uri, all_edits}}}}}});
  }
  reply->Result(actions);
}

void Session::OnCodeActionResolve(const json& action, Reply reply) {
  json resolved = action;
  if (!action.contains("data")) return reply->Result(resolved);
  const std::string uri = action["data"].at("uri");
  size_t index = action["data"].at("finding");
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  if (!snap || index >= snap->scan->findings.size())
    return reply->Error(kContentModified, "the analysis changed");
  const std::string path = UriToPath(uri);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Error(kContentModified, "the analysis changed");
  for (const Placed& p : PlacedIn(*snap, path)) {
    if (p.finding != index) continue;
    for (auto& a : FixesFor(uri, path, p, snap->scan->findings[index], nullptr, true)) {
      if (a["title"] == action["data"].value("title", "")) {
        resolved["edit"] = a["edit"];
        return reply->Result(resolved);
      }
    }
  }
  reply->Error(kContentModified, "the fix no longer applies to this buffer");
}

}  // namespace ttap::lsp

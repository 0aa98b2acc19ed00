// The session's LSP feature handlers (see session.h): each asks its feature (feature_view.h, a
// function of the view and the params) and replies; the FeatureView the session gives them
// (placed findings, explanations, drafts); publishing diagnostics.
#include "server/lsp/session.h"

namespace ttap::lsp {

std::vector<Placed> Session::PlacedIn(const Snapshot& snap, const std::string& path) {
  auto locked = scheduler_.LockState();
  auto it = snap.by_file.find(path);
  if (it == snap.by_file.end()) return {};
  std::vector<Placed> placed = it->second;
  auto moved = locked->moved_lines.find(path);
  if (&snap == locked->snapshot.get() && moved != locked->moved_lines.end() &&
      moved->second.size() == placed.size()) {
    for (size_t i = 0; i < placed.size(); ++i) placed[i].line = moved->second[i];
  }
  return placed;
}

std::string Session::Explanation(const Snapshot& snap, size_t finding) {
  {
    auto locked = scheduler_.LockState();
    auto it = locked->hover_markdown.find(finding);
    if (locked->snapshot.get() == &snap && it != locked->hover_markdown.end()) return it->second;
  }
  std::string md =
      FindingMarkdown(*snap.scan, snap.facts, snap.job, snap.rank, snap.scan->findings[finding]);
  auto locked = scheduler_.LockState();
  if (locked->snapshot.get() != &snap) return md;  // a newer analysis replaced it meanwhile
  return locked->hover_markdown.emplace(finding, std::move(md)).first->second;
}

void Session::PublishAll() {
  if (pull_diagnostics_) {
    {
      const std::shared_ptr<const Snapshot> snap = scheduler_.View();
      problems_shown_ = snap ? CountProblemsShown(*this, *snap) : 0;
    }
    if (diagnostic_refresh_)
      out_.Call("workspace/diagnostic/refresh", nullptr, [](const json&, const json&) {});
    if (code_lens_refresh_)
      out_.Call("workspace/codeLens/refresh", nullptr, [](const json&, const json&) {});
    return;
  }
  const std::shared_ptr<const Snapshot> snap = scheduler_.View();
  std::set<std::string> now;
  size_t shown = 0;
  if (snap) {
    for (const auto& [path, placed] : snap->by_file) {
      now.insert(path);
      std::vector<proto::Diagnostic> diags = DiagnosticsFor(*this, path);
      for (const auto& d : diags) shown += d.severity != proto::DiagnosticSeverity::kHint;
      out_.Notify("textDocument/publishDiagnostics",
                  proto::PublishDiagnosticsParams{PathToUri(path), std::nullopt, std::move(diags)});
    }
  }
  problems_shown_ = shown;
  // Files whose problems are gone get an empty list, so their squiggles disappear.
  for (const auto& path : published_) {
    if (!now.count(path))
      out_.Notify("textDocument/publishDiagnostics",
                  proto::PublishDiagnosticsParams{PathToUri(path), std::nullopt, {}});
  }
  published_ = now;
  if (code_lens_refresh_)
    out_.Call("workspace/codeLens/refresh", nullptr, [](const json&, const json&) {});
}

void Session::OnDocumentDiagnostic(const proto::DocumentDiagnosticParams& params, Reply reply) {
  std::string path = UriToPath(params.textDocument.uri);
  reply->Result(proto::FullDocumentDiagnosticReport{DiagnosticsFor(*this, path)});
}

void Session::OnWorkspaceDiagnostic(const proto::WorkspaceDiagnosticParams&, Reply reply) {
  const std::shared_ptr<const Snapshot> snap = scheduler_.View();
  proto::WorkspaceDiagnosticReport report;
  if (snap) {
    for (const auto& [path, placed] : snap->by_file)
      report.items.push_back({PathToUri(path), std::nullopt, DiagnosticsFor(*this, path)});
  }
  reply->Result(report);
}

void Session::OnHover(const proto::HoverParams& params, Reply reply) {
  std::optional<proto::Hover> hover = HoverAt(*this, params);
  if (!hover) return reply->Result(nullptr);
  reply->Result(*hover);
}

void Session::OnCodeAction(const proto::CodeActionParams& params, Reply reply) {
  reply->Result(CodeActionsFor(*this, params));
}

void Session::OnCodeActionResolve(const proto::CodeActionResolveParams& params, Reply reply) {
  StatusOr<json> resolved = ResolveCodeAction(*this, params);
  if (!resolved.ok()) return reply->Error(kContentModified, resolved.status().message());
  reply->Result(*resolved);
}

void Session::OnCodeLens(const proto::CodeLensParams& params, Reply reply) {
  reply->Result(CodeLensesFor(*this, params));
}

void Session::OnExecuteCommand(const proto::ExecuteCommandParams& params, Reply reply,
                               const CancelFlag& cancelled) {
  const std::string& cmd = params.command;
  if (cmd == "ttap.rescan" || cmd == "ttap.server.rescan") {
    RequestAnalysis(true);
    return reply->Result(nullptr);
  }
  if (cmd == "ttap.showTraceSummary" || cmd == "ttap.server.showTraceSummary") {
    // On its own thread: a summary of a large trace must not hold up hovers behind it.
    const std::string key = reply->id().dump();
    // The editor plugins ask with the server's id and show the result themselves; a client that
    // sends the code lens's id (eglot, lsp-mode) gets it as a message too.
    const bool show = cmd == "ttap.showTraceSummary";
    return RunSlow([this, reply, cancelled, key, show] {
      std::string md = cancelled.cancelled() ? "" : TraceSummaryMarkdown(*this, cancelled);
      if (cancelled.cancelled()) {
        reply->Error(kRequestCancelled, "cancelled");
      } else {
        if (show)
          out_.Notify("window/showMessage",
                      proto::ShowMessageParams{proto::MessageType::kInfo, md});
        reply->Result({{"markdown", md}});
      }
      ForgetRequest(key);
    });
  }
  reply->Error(kInvalidParams, "unknown command " + cmd);
}

}  // namespace ttap::lsp

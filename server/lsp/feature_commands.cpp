// textDocument/codeLens and workspace/executeCommand (see session.h): per-function lenses, the
// trace summary, rescan.
#include <map>
#include <set>

#include "server/lsp/session.h"

namespace ttap::lsp {

// ---- Code lens and commands ----

void Session::OnCodeLens(const proto::CodeLensParams& params, Reply reply) {
  const std::string path = UriToPath(params.textDocument.uri);
  const std::shared_ptr<const Snapshot> snap = scheduler_.View();
  std::vector<proto::CodeLens> lenses;
  auto src = SourceFor(path);
  if (!snap || !src) return reply->Result(lenses);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Result(lenses);
  // One lens per enclosing function (or the module's first line), summing its findings.
  std::map<uint32_t, std::pair<double, double>> per_scope;  // start byte -> (share, ms/step)
  for (const Placed& p : PlacedIn(*snap, path)) {
    const Finding& f = snap->scan->findings[p.finding].finding;
    SourceRange r;
    ByteRange b;
    bool stale;
    if (!RangeOf(path, p, snap->scan->findings[p.finding], &r, &b, nullptr, &stale)) continue;
    TSNode stmt = StatementAtLine(*src, p.line - 1);
    uint32_t at = 0;
    if (!IsNull(stmt)) {
      TSNode scope = EnclosingScope(stmt);
      if (NodeType(scope) == "function_definition") at = ts_node_start_byte(scope);
    }
    auto& acc = per_scope[at];
    acc.first += f.share_of_step;
    acc.second += f.time_lost_us_per_step / 1000.0;
  }
  for (const auto& [at, acc] : per_scope) {
    SourcePosition pos = src->ToPosition(at, encoding_);
    char title[128];
    std::snprintf(title, sizeof(title), "ttap: %s of the step lost here · %.1f ms/step",
                  FormatPercent(std::min(1.0, acc.first)).c_str(), acc.second);
    lenses.push_back({proto::Range::From({pos, pos}),
                      proto::Command{title, "ttap.showTraceSummary", std::nullopt}});
  }
  reply->Result(lenses);
}

std::string Session::SummaryMarkdown(const CancelToken& cancel) {
  const std::shared_ptr<const Snapshot> snap = scheduler_.View();
  if (!snap) return "No trace analysed yet.";
  // What the Problems view shows: findings at info or above, one per code and line; the hints
  // (and findings that save nothing measurable) are counted, not listed four times over.
  // Each on the line the Problems view shows it: where the buffer was edited since the trace
  // was analysed, the line it moved to, not the trace's.
  std::map<size_t, int> line_now;  // finding -> 1-based line in the current buffer
  for (const auto& [path, unused] : snap->by_file) {
    for (const Placed& p : PlacedIn(*snap, path)) {
      SourceRange r;
      ByteRange b;
      bool stale = false;
      if (RangeOf(path, p, snap->scan->findings[p.finding], &r, &b, nullptr, &stale)) {
        line_now.emplace(p.finding, r.start.line + 1);
      }
    }
  }
  return ttap::SummaryMarkdown(snap->summary_head, *snap->scan, line_now, cancel);
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
      std::string md = cancelled.cancelled() ? "" : SummaryMarkdown(cancelled);
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

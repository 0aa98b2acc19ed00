// textDocument/codeLens and workspace/executeCommand (see session.h): per-function lenses, the
// trace summary, rescan.
#include <map>
#include <set>

#include "mapping/syntax_util.h"
#include "server/core/explain.h"
#include "server/lsp/feature_view.h"
#include "server/lsp/uri.h"

namespace ttap::lsp {

// ---- Code lens and commands ----

std::vector<proto::CodeLens> CodeLensesFor(FeatureView& view, const proto::CodeLensParams& params) {
  const std::string path = UriToPath(params.textDocument.uri);
  const std::shared_ptr<const Snapshot> snap = view.View();
  std::vector<proto::CodeLens> lenses;
  auto src = view.SourceFor(path);
  if (!snap || !src) return lenses;
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return lenses;
  // One lens per enclosing function (or the module's first line), summing its findings.
  std::map<uint32_t, std::pair<double, double>> per_scope;  // start byte -> (share, ms/step)
  for (const Placed& p : view.PlacedIn(*snap, path)) {
    const Finding& f = snap->scan->findings[p.finding].finding;
    SourceRange r;
    ByteRange b;
    bool stale;
    if (!RangeOf(view, path, p, snap->scan->findings[p.finding], &r, &b, nullptr, &stale)) continue;
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
    SourcePosition pos = src->ToPosition(at, view.client().encoding);
    char title[128];
    std::snprintf(title, sizeof(title), "ttap: %s of the step lost here · %.1f ms/step",
                  FormatPercent(std::min(1.0, acc.first)).c_str(), acc.second);
    lenses.push_back({proto::Range::From({pos, pos}),
                      proto::Command{title, "ttap.showTraceSummary", std::nullopt}});
  }
  return lenses;
}

std::string TraceSummaryMarkdown(FeatureView& view, const CancelToken& cancel) {
  const std::shared_ptr<const Snapshot> snap = view.View();
  if (!snap) return "No trace analysed yet.";
  // What the Problems view shows: findings at info or above, one per code and line; the hints
  // (and findings that save nothing measurable) are counted, not listed four times over.
  // Each on the line the Problems view shows it: where the buffer was edited since the trace
  // was analysed, the line it moved to, not the trace's.
  std::map<size_t, int> line_now;  // finding -> 1-based line in the current buffer
  for (const auto& [path, unused] : snap->by_file) {
    for (const Placed& p : view.PlacedIn(*snap, path)) {
      SourceRange r;
      ByteRange b;
      bool stale = false;
      if (RangeOf(view, path, p, snap->scan->findings[p.finding], &r, &b, nullptr, &stale)) {
        line_now.emplace(p.finding, r.start.line + 1);
      }
    }
  }
  return ttap::SummaryMarkdown(snap->summary_head, *snap->scan, line_now, cancel);
}

}  // namespace ttap::lsp

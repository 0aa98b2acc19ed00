// textDocument/hover as a function of (view, params) (feature_view.h): the explanations of the
// findings under the position (FindingMarkdown, server/core/explain.h, cached by the view), a
// repeated code on one line as one line each, drafted explanations; Markdown or plain text.
#include <cstdio>
#include <map>

#include "analysis/rules/rule_registry.h"
#include "server/core/markdown_text.h"
#include "server/lsp/feature_view.h"
#include "server/lsp/uri.h"

namespace ttap::lsp {

// ---- Hover ----

std::optional<proto::Hover> HoverAt(FeatureView& view, const proto::HoverParams& params) {
  std::string path = UriToPath(params.textDocument.uri);
  const SourcePosition pos = params.position.ToSource();
  const std::shared_ptr<const Snapshot> snap = view.View();
  if (!snap) return std::nullopt;
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return std::nullopt;
  std::string md;
  proto::Range range;
  // A code repeated on one line (as its diagnostic is published once) is shown in full once;
  // the others follow it as one line each.
  std::map<std::pair<std::string, int>, std::string> more;  // (code, line) -> their lines
  for (const Placed& p : view.PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    SourceRange r;
    ByteRange b;
    bool stale;
    if (!RangeOf(view, path, p, lf, &r, &b, nullptr, &stale, pos.line)) continue;
    bool inside =
        (pos.line > r.start.line ||
         (pos.line == r.start.line && pos.character >= r.start.character)) &&
        (pos.line < r.end.line || (pos.line == r.end.line && pos.character <= r.end.character));
    if (!inside) continue;
    const auto key = std::make_pair(lf.finding.code, r.start.line);
    auto repeated = more.find(key);
    if (repeated != more.end()) {
      repeated->second += "- " + lf.finding.message + " (saves " +
                          FormatMs(lf.finding.time_lost_us_per_step) + "/step)\n";
      continue;
    }
    more[key];
    if (!md.empty()) md += "\n\n---\n\n";
    md += view.Explanation(*snap, p.finding);
    if (auto d = view.DraftOf(*snap, p.finding)) {
      char conf[16];
      std::snprintf(conf, sizeof(conf), "%.0f%%", 100 * d->draft.confidence);
      const RuleInfo* cat = FindRule(d->draft.category);
      md += "\n\n**Drafted by " + d->draft.model + "** (unverified; " + d->draft.category +
            (cat ? std::string(" ") + cat->name : std::string(" unusual-window")) +
            ", confidence " + conf + ")\n\n" + d->draft.explanation_markdown;
      if (d->draft.fix) md += "\n\nDrafted fix: " + d->draft.fix->description + " (code action)";
    }
    range = proto::Range::From(r);
  }
  for (const auto& [key, lines] : more) {
    if (!lines.empty()) md += "\n\n---\n\nAlso " + key.first + " on this line:\n\n" + lines;
  }
  if (md.empty()) return std::nullopt;
  proto::MarkupContent contents{proto::MarkupKind::kMarkdown, std::move(md)};
  if (!view.client().hover_markdown)
    contents = {proto::MarkupKind::kPlainText, MarkdownToPlainText(contents.value)};
  return proto::Hover{std::move(contents), range};
}

}  // namespace ttap::lsp

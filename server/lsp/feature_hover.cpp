// textDocument/hover (see session.h): the finding's numbers, where its steps' time went, what
// the fix saves, drafted explanations; Markdown or plain text.
#include "analysis/rules/rule_registry.h"
#include "server/lsp/session.h"

namespace ttap::lsp {

// ---- Hover ----

std::string Session::HoverOf(const Snapshot& snap, size_t finding) {
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

void Session::OnHover(const proto::HoverParams& params, Reply reply) {
  std::string path = UriToPath(params.textDocument.uri);
  const SourcePosition pos = params.position.ToSource();
  const std::shared_ptr<const Snapshot> snap = scheduler_.View();
  if (!snap) return reply->Result(nullptr);
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return reply->Result(nullptr);
  std::string md;
  proto::Range range;
  // A code repeated on one line (as its diagnostic is published once) is shown in full once;
  // the others follow it as one line each.
  std::map<std::pair<std::string, int>, std::string> more;  // (code, line) -> their lines
  for (const Placed& p : PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    SourceRange r;
    ByteRange b;
    bool stale;
    if (!RangeOf(path, p, lf, &r, &b, nullptr, &stale, pos.line)) continue;
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
    md += HoverOf(*snap, p.finding);
    if (auto d = DraftOf(*snap, p.finding)) {
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
  if (md.empty()) return reply->Result(nullptr);
  proto::MarkupContent contents{proto::MarkupKind::kMarkdown, std::move(md)};
  if (!hover_markdown_)
    contents = {proto::MarkupKind::kPlainText, MarkdownToPlainText(contents.value)};
  reply->Result(proto::Hover{std::move(contents), range});
}

}  // namespace ttap::lsp

// textDocument/hover (see session.h): the finding's numbers, where its steps' time went, what
// the fix saves, drafted explanations; Markdown or plain text.
#include "analysis/rules/rule_registry.h"
#include "server/lsp/session.h"

namespace ttap::lsp {

// ---- Hover ----

std::string Session::HoverMarkdown(const Snapshot& snap, const LocatedFinding& lf) {
  const Finding& f = lf.finding;
  char buf[256];
  // The diagnostic's own sentence is shown by the editor beside the hover: the hover adds what
  // it does not say (the numbers, where the time went, the fix), and states the saving once.
  std::string md = "**" + f.code + " " + f.name + "** (" + SeverityName(f.severity) + ")";
  if (const RuleInfo* rule = FindRule(f.code)) md += ": " + std::string(rule->summary);
  md += "\n\n";
  auto occurs = f.evidence.find("occurs");
  const std::string steps =
      f.step_ids.empty()
          ? "-"
          : "ProfilerStep " + std::to_string(f.step_ids.front()) +
                (f.step_ids.size() > 1 ? "-" + std::to_string(f.step_ids.back()) : "");
  std::snprintf(buf, sizeof(buf),
                "| saves per step | share of step | steps | occurs |\n|---:|---:|---|---|\n| "
                "%s | %s | %s | %s |\n\n",
                FormatMs(f.time_lost_us_per_step).c_str(), FormatPercent(f.share_of_step).c_str(),
                steps.c_str(), occurs == f.evidence.end() ? "-" : occurs->second.text.c_str());
  md += buf;
  if (!f.top_events.empty()) {
    md += "Top events: ";
    for (size_t i = 0; i < f.top_events.size() && i < 3; ++i) {
      std::snprintf(buf, sizeof(buf), "%s`%s` x%lld (%s)", i ? ", " : "",
                    f.top_events[i].name.substr(0, 60).c_str(),
                    static_cast<long long>(f.top_events[i].count),
                    FormatMs(f.top_events[i].total_us).c_str());
      md += buf;
    }
    md += "\n\n";
  }
  // GPU busy share across the finding's extent, as a sparkline of 24 slices.
  int64_t a = f.start_ns, b = std::max(f.end_ns, f.start_ns + 1);
  std::vector<double> slices;
  for (int k = 0; k < 24; ++k) {
    int64_t s0 = a + (b - a) * k / 24, s1 = a + (b - a) * (k + 1) / 24;
    slices.push_back(s1 > s0 ? static_cast<double>(ClippedLength(snap.gpu_busy, s0, s1)) / (s1 - s0)
                             : 0);
  }
  md += "GPU busy over the finding: `" + Sparkline(slices) + "`\n\n";
  // Where the finding's steps spent their time (critical path) and what the fix would save.
  const RuleResult& rr = snap.scan->rules;
  StepAttribution steps_time;  // every step's (the overall) when the finding names none
  if (f.step_ids.empty()) {
    steps_time.ns = rr.time.overall.ns;
  } else {
    for (int64_t number : std::set<int64_t>(f.step_ids.begin(), f.step_ids.end())) {
      auto it = snap.step_index.find(number);
      if (it == snap.step_index.end()) continue;
      for (int c = 0; c < kCauseCount; ++c) steps_time.ns[c] += rr.time.steps[it->second].ns[c];
    }
  }
  if (steps_time.total() > 0) {
    md += "Where these steps' time went (critical path): " + FormatCauses(steps_time, 4) + "\n\n";
  }
  const RuleSpec* spec = FindRuleSpec(f.code);
  if (spec && spec->from_job_analysis) {
    md +=
        "The saving is the job's: each collective would start when the last of the other ranks "
        "arrives (`ttap scan` on the traces' directory lists every rank's lateness and wait).\n\n";
  } else if (rr.run_ns > 0) {
    std::snprintf(buf, sizeof(buf), "%.2fx", rr.speedup);
    md += "The saving is replayed on this run's dependency graph, without the profiler's own cost";
    if (rr.ProfilerCostMatters() && !rr.time.steps.empty()) {
      const double steps = static_cast<double>(rr.time.steps.size());
      md += " (it added " + FormatMs(rr.profiler_overhead_ns / 1000.0 / steps) +
            " to each recorded step of " + FormatMs(rr.traced_run_ns / 1000.0 / steps) + ")";
    }
    md += "; all fixes together: this run could be " + std::string(buf) + " faster.\n\n";
  }
  // The call chain above the line, as text: the recording machine's files (its site-packages)
  // need not exist here, so they are no links (related information links only local files).
  if (f.frames.size() > 1) {
    std::string chain;
    int listed = 0;
    for (size_t k = 0; k < f.frames.size() && listed < 4; ++k) {
      if (static_cast<int>(k) == f.user_frame || f.frames[k].file.empty()) continue;
      chain += std::string(listed ? ", " : "") + "`" + f.frames[k].function + "` (" +
               f.frames[k].file + ":" + std::to_string(f.frames[k].line) + ")";
      ++listed;
    }
    if (!chain.empty()) md += "Stack (innermost first, this line aside): " + chain + "\n\n";
  }
  const std::string job_note = JobNoteFor(snap.job, snap.rank, f);
  if (!job_note.empty()) md += job_note + "\n\n";
  if (lf.located_by_shape)
    md +=
        "Placed on the one statement of the workspace with this fix's shape: the trace has no "
        "Python stacks (record with `with_stack=True` for exact lines).\n\n";
  if (!f.fix.empty()) md += "Fix: `" + f.fix + "` (quick fix available). ";
  md += "[Docs](" + RuleDocsUrl(f.code, f.name) + ")";
  return md;
}

std::string Session::HoverOf(Snapshot& snap, size_t finding) {
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    auto it = snap.hover_markdown.find(finding);
    if (it != snap.hover_markdown.end()) return it->second;
  }
  std::string md = HoverMarkdown(snap, snap.scan->findings[finding]);
  std::lock_guard<std::mutex> lock(snap_mu_);
  return snap.hover_markdown.emplace(finding, std::move(md)).first->second;
}

void Session::OnHover(const proto::HoverParams& params, Reply reply) {
  std::string path = UriToPath(params.textDocument.uri);
  const SourcePosition pos = params.position.ToSource();
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
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

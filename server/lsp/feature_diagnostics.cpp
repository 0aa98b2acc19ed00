// textDocument/publishDiagnostics, textDocument/diagnostic and workspace/diagnostic (see
// session.h): one diagnostic per code and line, suppressions as the buffer has them.
#include "server/lsp/session.h"

namespace ttap::lsp {

// ---- Diagnostics ----

namespace {

int LspSeverity(Severity s) {
  switch (s) {
    case Severity::kError:
      return 1;
    case Severity::kWarning:
      return 2;
    case Severity::kInfo:
      return 3;
    case Severity::kHint:
      return 4;
  }
  return 3;
}

}  // namespace

bool Session::RangeOf(const std::string& path, const Placed& p, const LocatedFinding& lf,
                      SourceRange* range, ByteRange* bytes,
                      std::shared_ptr<const PythonSource>* src_out, bool* stale) {
  auto src = SourceFor(path);
  if (!src) return false;
  RangeQuery q;
  q.line = p.line;
  q.function = p.function;
  q.code = lf.finding.code;
  MappedRange m = MapToSource(*src, q);
  // `# ttap: ignore[...]` as the buffer has it now: typed or deleted, it applies at once.
  if (SuppressedAt(*src, m, p.line, lf.finding.code)) return false;
  *bytes = m.range;
  *range = src->ToRange(m.range, encoding_);
  *stale = m.stale;
  if (src_out) *src_out = src;
  return true;
}

std::vector<Session::Placed> Session::PlacedIn(const Snapshot& snap, const std::string& path) {
  std::lock_guard<std::mutex> lock(snap_mu_);
  auto it = snap.by_file.find(path);
  return it == snap.by_file.end() ? std::vector<Placed>() : it->second;
}

json Session::DiagnosticsFor(const std::string& path) {
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  json diags = json::array();
  if (!snap) return diags;
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return diags;
  // One diagnostic per code and line (a loop can hold fifteen TTA009 findings): the first
  // (findings come most severe first) stands for the others, which its hover lists.
  std::map<std::pair<std::string, int>, std::pair<size_t, int>> shown;  // -> (diag, others)
  for (const Placed& p : PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    const Finding& f = lf.finding;
    SourceRange r;
    ByteRange b;
    bool stale = false;
    if (!RangeOf(path, p, lf, &r, &b, nullptr, &stale)) continue;
    auto [slot, first] =
        shown.emplace(std::make_pair(f.code, r.start.line), std::make_pair(diags.size(), 0));
    if (!first) {
      ++slot->second.second;
      continue;
    }
    json d = {{"range", RangeJson(r)},
              {"severity", LspSeverity(f.severity)},
              {"code", f.code},
              {"source", "ttap"},
              {"message",
               f.name + ": " + f.message +
                   (stale ? " (source changed since the trace; this location may be stale)" : "") +
                   (lf.located_by_shape
                        ? " (placed by code shape: the trace has no Python stacks; record with "
                          "with_stack=True for exact lines)"
                        : "")}};
    if (code_description_) d["codeDescription"] = {{"href", RuleDocsUrl(f.code, f.name)}};
    if (related_information_) {
      json rel = json::array();
      for (size_t k = 0; k < f.frames.size() && rel.size() < 8; ++k) {
        if (static_cast<int>(k) == f.user_frame) continue;
        // A frame the trace names by a relative path (`torch/nn/modules/module.py`) has no URI:
        // "file://torch/..." would name a host.
        if (f.frames[k].file.empty() || f.frames[k].file[0] != '/') continue;
        rel.push_back({{"location",
                        {{"uri", PathToUri(f.frames[k].file)},
                         {"range", RangeJson({{std::max(0, f.frames[k].line - 1), 0},
                                              {std::max(0, f.frames[k].line - 1), 0}})}}},
                       {"message", "called from " + f.frames[k].function + " (" + f.frames[k].file +
                                       ":" + std::to_string(f.frames[k].line) + ")"}});
      }
      if (!rel.empty()) d["relatedInformation"] = rel;
    }
    if (diagnostic_data_)
      d["data"] = {{"finding", p.finding}, {"fix", f.fix}, {"trace", snap->trace_path}};
    diags.push_back(std::move(d));
  }
  for (const auto& [key, slot] : shown) {
    if (slot.second == 0) continue;
    diags[slot.first]["message"] = diags[slot.first]["message"].get<std::string>() + " (and " +
                                   std::to_string(slot.second) + " more " + key.first + " finding" +
                                   (slot.second > 1 ? "s" : "") +
                                   " on this line: the hover lists each one's saving)";
  }
  return diags;
}

void Session::PublishAll() {
  if (pull_diagnostics_) {
    if (diagnostic_refresh_)
      out_.Call("workspace/diagnostic/refresh", nullptr, [](const json&, const json&) {});
    if (code_lens_refresh_)
      out_.Call("workspace/codeLens/refresh", nullptr, [](const json&, const json&) {});
    return;
  }
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  std::set<std::string> now;
  if (snap) {
    for (const auto& [path, placed] : snap->by_file) {
      now.insert(path);
      out_.Notify("textDocument/publishDiagnostics",
                  {{"uri", PathToUri(path)}, {"diagnostics", DiagnosticsFor(path)}});
    }
  }
  // Files whose problems are gone get an empty list, so their squiggles disappear.
  for (const auto& path : published_) {
    if (!now.count(path))
      out_.Notify("textDocument/publishDiagnostics",
                  {{"uri", PathToUri(path)}, {"diagnostics", json::array()}});
  }
  published_ = now;
  if (code_lens_refresh_)
    out_.Call("workspace/codeLens/refresh", nullptr, [](const json&, const json&) {});
}

void Session::OnDocumentDiagnostic(const json& params, Reply reply) {
  std::string path = UriToPath(params.at("textDocument").at("uri"));
  reply->Result({{"kind", "full"}, {"items", DiagnosticsFor(path)}});
}

void Session::OnWorkspaceDiagnostic(const json& params, Reply reply) {
  std::shared_ptr<Snapshot> snap;
  {
    std::lock_guard<std::mutex> lock(snap_mu_);
    snap = snapshot_;
  }
  json items = json::array();
  if (snap) {
    for (const auto& [path, placed] : snap->by_file) {
      items.push_back({{"uri", PathToUri(path)},
                       {"kind", "full"},
                       {"version", nullptr},
                       {"items", DiagnosticsFor(path)}});
    }
  }
  reply->Result({{"items", items}});
}

}  // namespace ttap::lsp

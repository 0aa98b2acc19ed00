// textDocument/publishDiagnostics, textDocument/diagnostic and workspace/diagnostic
// (feature_view.h): one diagnostic per code and line, suppressions as the buffer has them.
#include <climits>
#include <filesystem>

#include "mapping/source_ranges.h"
#include "mapping/suppressions.h"
#include "server/core/scan_trace.h"
#include "server/lsp/feature_view.h"
#include "server/lsp/uri.h"

namespace ttap::lsp {

// ---- Diagnostics ----

namespace {

proto::DiagnosticSeverity LspSeverity(Severity s) {
  switch (s) {
    case Severity::kError:
      return proto::DiagnosticSeverity::kError;
    case Severity::kWarning:
      return proto::DiagnosticSeverity::kWarning;
    case Severity::kInfo:
      return proto::DiagnosticSeverity::kInformation;
    case Severity::kHint:
      return proto::DiagnosticSeverity::kHint;
  }
  return proto::DiagnosticSeverity::kInformation;
}

}  // namespace

bool RangeOf(FeatureView& view, const std::string& path, const Placed& p, const LocatedFinding& lf,
             SourceRange* range, ByteRange* bytes, std::shared_ptr<const PythonSource>* src_out,
             bool* stale, int exact_through) {
  int edited_from = INT_MAX;
  auto src = view.SourceFor(path, nullptr, exact_through, &edited_from);
  if (!src) return false;
  // An older parse, exact above the edits only: a finding at or below them is elsewhere now.
  if (p.line - 1 >= edited_from) return false;
  RangeQuery q;
  q.line = p.line;
  q.function = p.function;
  q.code = lf.finding.code;
  q.file_newer_than_trace = p.source_newer_than_trace;
  MappedRange m = MapToSource(*src, q);
  // `# ttap: ignore[...]` as the buffer has it now: typed or deleted, it applies at once.
  if (SuppressedAt(*src, m, p.line, lf.finding.code)) return false;
  *bytes = m.range;
  *range = src->ToRange(m.range, view.client().encoding);
  *stale = m.stale;
  if (src_out) *src_out = src;
  return true;
}

std::vector<proto::Diagnostic> DiagnosticsFor(FeatureView& view, const std::string& path) {
  const std::shared_ptr<const Snapshot> snap = view.View();
  if (!snap) return {};
  return DiagnosticsOf(view, *snap, path);
}

std::vector<proto::Diagnostic> DiagnosticsOf(FeatureView& view, const Snapshot& of,
                                             const std::string& path) {
  const Snapshot* snap = &of;
  std::vector<proto::Diagnostic> diags;
  auto it = snap->by_file.find(path);
  if (it == snap->by_file.end()) return diags;
  // One diagnostic per code and line (a loop can hold fifteen TTA009 findings): the first
  // (findings come most severe first) stands for the others, which its hover lists.
  std::map<std::pair<std::string, int>, std::pair<size_t, int>> shown;  // -> (diag, others)
  for (const Placed& p : view.PlacedIn(*snap, path)) {
    const LocatedFinding& lf = snap->scan->findings[p.finding];
    const Finding& f = lf.finding;
    SourceRange r;
    ByteRange b;
    bool stale = false;
    if (!RangeOf(view, path, p, lf, &r, &b, nullptr, &stale)) continue;
    auto [slot, first] =
        shown.emplace(std::make_pair(f.code, r.start.line), std::make_pair(diags.size(), 0));
    if (!first) {
      ++slot->second.second;
      continue;
    }
    proto::Diagnostic d;
    d.range = proto::Range::From(r);
    d.severity = LspSeverity(f.severity);
    d.code = f.code;
    d.source = "ttap";
    d.message = f.name + ": " + f.message +
                (stale ? " (source changed since the trace; this location may be stale)" : "") +
                (lf.located_by_shape
                     ? " (placed by code shape: the trace has no Python stacks; record with "
                       "with_stack=True for exact lines)"
                     : "");
    if (view.client().code_description)
      d.codeDescription = proto::CodeDescription{RuleDocsUrl(f.code, f.name)};
    if (view.client().related_information) {
      std::vector<proto::DiagnosticRelatedInformation> rel;
      for (size_t k = 0; k < f.frames.size() && rel.size() < 8; ++k) {
        if (static_cast<int>(k) == f.user_frame) continue;
        // A frame the trace names by a relative path (`torch/nn/modules/module.py`) has no URI:
        // "file://torch/..." would name a host. A file of the recording machine that is not
        // here (its site-packages) would be a dead link: the hover lists it as text.
        if (f.frames[k].file.empty() || f.frames[k].file[0] != '/') continue;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(f.frames[k].file, ec)) continue;
        const proto::Position line_start{std::max(0, f.frames[k].line - 1), 0};
        rel.push_back({{PathToUri(f.frames[k].file), {line_start, line_start}},
                       "called from " + f.frames[k].function + " (" + f.frames[k].file + ":" +
                           std::to_string(f.frames[k].line) + ")"});
      }
      if (!rel.empty()) d.relatedInformation = std::move(rel);
    }
    if (view.client().diagnostic_data)
      d.data = json{{"finding", p.finding}, {"fix", f.fix}, {"trace", snap->trace_path}};
    diags.push_back(std::move(d));
  }
  for (const auto& [key, slot] : shown) {
    if (slot.second == 0) continue;
    diags[slot.first].message += " (and " + std::to_string(slot.second) + " more " + key.first +
                                 " finding" + (slot.second > 1 ? "s" : "") +
                                 " on this line: the hover lists each one's saving)";
  }
  return diags;
}

size_t CountProblemsShown(FeatureView& view, const Snapshot& snap) {
  size_t shown = 0;
  for (const auto& [path, placed] : snap.by_file) {
    for (const auto& d : DiagnosticsOf(view, snap, path))
      shown += d.severity != proto::DiagnosticSeverity::kHint;
  }
  return shown;
}

}  // namespace ttap::lsp

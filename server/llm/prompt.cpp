// Prompt building for LLM drafts; see prompt.h. The templates come from
// server/llm/prompts/*.txt through a header that CMake generates at configure time.
#include "server/llm/prompt.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "analysis/model/trace_stats.h"
#include "analysis/rules/rules.h"
#include "server/llm/draft_cache.h"
#include "ttap_llm_prompts.h"  // generated: kPrompt_system_v1, kPrompt_window_v1

namespace ttap::llm {

const char* const kPromptVersion = "window_v1";

std::string_view SystemTemplate() { return kPrompt_system_v1; }
std::string_view WindowTemplate() { return kPrompt_window_v1; }

namespace {

constexpr size_t kMaxLineBytes = 240;
constexpr size_t kMaxNameBytes = 100;
constexpr int kTopEvents = 8;

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string Cut(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // whole code points
  return std::string(s.substr(0, n)) + "...";
}

}  // namespace

std::string FillTemplate(std::string_view tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(tmpl.size() + 1024);
  size_t pos = 0;
  while (pos < tmpl.size()) {
    size_t open = tmpl.find("{{", pos);
    if (open == std::string_view::npos) break;
    size_t close = tmpl.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    out.append(tmpl.substr(pos, open - pos));
    auto it = values.find(std::string(tmpl.substr(open + 2, close - open - 2)));
    if (it != values.end()) out += it->second;
    pos = close + 2;
  }
  out.append(tmpl.substr(pos));
  return out;
}

SourceSnippet SnippetAround(const PythonSource& src, const std::string& file, int line,
                            int radius) {
  SourceSnippet s;
  s.file = file;
  s.focus_line = line;
  if (line < 1 || line > src.line_count()) return s;
  s.first_line = std::max(1, line - radius);
  const int last = std::min(src.line_count(), line + radius);
  std::string raw;
  for (int l = s.first_line; l <= last; ++l) {
    std::string text = Cut(src.LineText(l - 1), kMaxLineBytes);
    raw += text + "\n";
    char prefix[32];
    std::snprintf(prefix, sizeof(prefix), "%c%5d | ", l == line ? '>' : ' ', l);
    s.text += prefix + text + "\n";
    s.lines.push_back(std::move(text));
  }
  s.hash = HashHex(file + "\n" + std::to_string(s.first_line) + "\n" + raw);
  return s;
}

std::string CatalogueText() {
  std::string out;
  for (const RuleInfo& r : RuleCatalogue()) {
    out += std::string("- ") + r.code + " " + r.name + ": " + r.summary + "\n";
  }
  out += "- TTA900 unusual-window: the window is anomalous but no code above fits\n";
  return out;
}

std::string DescribeWindow(const ScanResult& scan, int window) {
  const Trace& t = *scan.trace;
  if (window < 0 || static_cast<size_t>(window) >= t.windows.size()) return "(no such window)\n";
  const Window& w = t.windows[static_cast<size_t>(window)];
  const EventTable& ev = t.events;
  const int64_t origin = t.span_start();
  std::string out = "Window " + std::to_string(window) + " of " + std::to_string(t.windows.size()) +
                    ": " + Fmt("%.1f", (w.start_ns - origin) / 1000.0) + " us to " +
                    Fmt("%.1f", (w.end_ns - origin) / 1000.0) + " us after the profile start (" +
                    Fmt("%.1f", (w.end_ns - w.start_ns) / 1000.0) + " us long).\n";
  const int64_t mid = w.start_ns + (w.end_ns - w.start_ns) / 2;
  for (const Step& s : t.steps) {
    if (s.start() <= mid && mid < s.end()) {
      out += "Step: ProfilerStep#" + std::to_string(s.number) + " (" +
             Fmt("%.1f", (s.end() - s.start()) / 1000.0) + " us).\n";
      break;
    }
  }
  if (static_cast<size_t>(window) < scan.rules.windows.size()) {
    const WindowScore& ws = scan.rules.windows[static_cast<size_t>(window)];
    out += "Rule score: " + Fmt("%.3f", ws.score) +
           (ws.category.empty() ? "" : " (strongest finding " + ws.category + ")") + ".\n";
  }
  // GPU busy share and the top events by total duration, with their launch delays.
  std::vector<Interval> busy;
  struct Agg {
    int64_t count = 0;
    int64_t total_ns = 0;
    int64_t delay_ns = 0;
    int64_t delays = 0;
    EventKind kind = EventKind::kOther;
  };
  std::unordered_map<StringId, Agg> by_name;
  for (uint32_t i = w.begin; i < w.end && i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    if (k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset) {
      busy.push_back({ev.ts[i], ev.end(i)});
    }
    if (k == EventKind::kInstant || k == EventKind::kTraceSpan) continue;
    Agg& a = by_name[ev.name[i]];
    a.kind = k;
    ++a.count;
    a.total_ns += ev.dur[i];
    if (IsGpuKind(k) && ev.link[i] >= 0) {
      a.delay_ns += std::max<int64_t>(0, ev.ts[i] - ev.ts[static_cast<size_t>(ev.link[i])]);
      ++a.delays;
    }
  }
  MergeIntervals(&busy);
  const int64_t len = std::max<int64_t>(1, w.end_ns - w.start_ns);
  out += "GPU busy (kernels, copies, memsets): " +
         Fmt("%.1f", 100.0 * ClippedLength(busy, w.start_ns, w.end_ns) / len) +
         "% of the window.\n";
  out += "Events starting in the window: " + std::to_string(w.end - w.begin) + ".\n";
  std::vector<std::pair<StringId, Agg>> top(by_name.begin(), by_name.end());
  std::sort(top.begin(), top.end(), [&](const auto& a, const auto& b) {
    if (a.second.total_ns != b.second.total_ns) return a.second.total_ns > b.second.total_ns;
    return t.strings.Get(a.first) < t.strings.Get(b.first);
  });
  if (top.size() > static_cast<size_t>(kTopEvents)) top.resize(kTopEvents);
  if (!top.empty()) out += "Top events by total duration:\n";
  for (const auto& [name, a] : top) {
    out += "- [" + std::string(EventKindName(a.kind)) + "] " +
           Cut(t.strings.Get(name), kMaxNameBytes) + ": x" + std::to_string(a.count) + ", " +
           Fmt("%.1f", a.total_ns / 1000.0) + " us total";
    if (a.delays > 0)
      out += ", mean launch delay " + Fmt("%.1f", a.delay_ns / 1000.0 / a.delays) + " us";
    out += "\n";
  }
  return out;
}

std::string DescribeFindings(const ScanResult& scan, int window, const LocatedFinding& focus) {
  std::vector<const LocatedFinding*> shown = {&focus};
  for (const LocatedFinding& lf : scan.findings) {
    if (&lf == &focus || shown.size() >= 6) continue;
    const auto& wi = lf.finding.window_indices;
    if (window < 0 || std::find(wi.begin(), wi.end(), window) != wi.end()) shown.push_back(&lf);
  }
  std::string out;
  for (const LocatedFinding* lf : shown) {
    const Finding& f = lf->finding;
    out += "- " + f.code + " " + f.name + " (" + SeverityName(f.severity) + "): " + f.message +
           "\n  time lost per step " + Fmt("%.1f", f.time_lost_us_per_step) +
           " us, share of step " + Fmt("%.1f", 100.0 * f.share_of_step) + "%";
    if (!lf->file.empty() && lf->line > 0)
      out += ", blamed line " + lf->file + ":" + std::to_string(lf->line);
    if (!f.fix.empty()) out += ", catalogue fix recipe " + f.fix;
    out += "\n";
    std::string evidence;
    for (const auto& [k, v] : f.evidence) {
      if (evidence.size() > 400) break;
      evidence += (evidence.empty() ? "" : ", ") + k + "=" +
                  (v.is_number ? Fmt("%.4g", v.number) : Cut(v.text, 60));
    }
    if (!evidence.empty()) out += "  evidence: " + evidence + "\n";
    for (size_t i = 0; i < f.top_events.size() && i < 3; ++i) {
      out += "  top event: " + Cut(f.top_events[i].name, kMaxNameBytes) + " x" +
             std::to_string(f.top_events[i].count) + ", " + Fmt("%.1f", f.top_events[i].total_us) +
             " us\n";
    }
  }
  return out;
}

WindowPrompt BuildWindowPrompt(const ScanResult& scan, const LocatedFinding& focus, int window,
                               const SourceSnippet& snippet, const std::vector<int>& neighbours) {
  const std::string window_text = DescribeWindow(scan, window);
  const std::string findings_text = DescribeFindings(scan, window, focus);
  std::string neighbour_text;
  if (!neighbours.empty()) {
    neighbour_text = "\n## Neighbouring windows\n";
    for (int n : neighbours) neighbour_text += DescribeWindow(scan, n) + "\n";
  }
  std::map<std::string, std::string> values = {
      {"catalogue", CatalogueText()},
      {"window", window_text},
      {"findings", findings_text},
      {"neighbours", neighbour_text},
      {"source_file", snippet.empty() ? "not available" : snippet.file},
      {"source",
       snippet.empty() ? "(the source of the blamed line is not available)\n" : snippet.text}};
  for (auto& [name, value] : values) {
    while (!value.empty() && value.back() == '\n') value.pop_back();  // the template spaces them
  }
  if (!values["neighbours"].empty()) values["neighbours"] += "\n";
  WindowPrompt p;
  p.request.system = std::string(SystemTemplate());
  p.request.user = FillTemplate(WindowTemplate(), values);
  p.fingerprint = HashHex(window_text + "\n" + findings_text);
  return p;
}

}  // namespace ttap::llm

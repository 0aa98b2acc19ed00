// The drafter; see drafter.h.
#include "server/llm/drafter.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "analysis/base/parallel.h"
#include "server/llm/prompt.h"

namespace ttap::llm {

namespace {

int CodePoints(std::string_view s) {
  int n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The finding's score: its best window's rule score, then the time it costs.
double WindowScoreOf(const ScanResult& scan, const Finding& f, int* best_window) {
  double best = -1;
  *best_window = -1;
  for (int w : f.window_indices) {
    if (w < 0 || static_cast<size_t>(w) >= scan.rules.windows.size()) continue;
    double s = scan.rules.windows[static_cast<size_t>(w)].score;
    if (s > best) {
      best = s;
      *best_window = w;
    }
  }
  if (*best_window < 0) {
    // No window recorded: the one holding the finding's start.
    const auto& ws = scan.trace->windows;
    for (size_t i = 0; i < ws.size(); ++i) {
      if (ws[i].start_ns <= f.start_ns && f.start_ns < ws[i].end_ns)
        *best_window = static_cast<int>(i);
    }
    best = 0;
  }
  return best;
}

void DefaultLog(const std::string& line) { std::fprintf(stderr, "ttap: llm: %s\n", line.c_str()); }

}  // namespace

StatusOr<std::vector<TextEdit>> CheckDraftFix(const PythonSource& src, const DraftFix& fix,
                                              const FixCheck& check) {
  std::vector<TextEdit> edits;
  const int lines = src.line_count();
  int first = 0, last = 0;
  for (size_t i = 0; i < fix.edits.size(); ++i) {
    const DraftEdit& e = fix.edits[i];
    const std::string where = "edit " + std::to_string(i + 1);
    const int sl = e.start_line + check.line_shift, el = e.end_line + check.line_shift;
    if (sl < 1 || el > lines || sl > el)
      return Status::Error(where + ": lines " + std::to_string(sl) + "-" + std::to_string(el) +
                           " are outside the file (" + std::to_string(lines) + " lines)");
    if (std::abs(sl - check.finding_line) > check.radius ||
        std::abs(el - check.finding_line) > check.radius)
      return Status::Error(
          where + ": touches line " +
          std::to_string(std::abs(sl - check.finding_line) > check.radius ? sl : el) +
          ", further than " + std::to_string(check.radius) + " lines from the finding (line " +
          std::to_string(check.finding_line) + ")");
    const int sc_max = CodePoints(src.LineText(sl - 1)) + 1;
    const int ec_max = CodePoints(src.LineText(el - 1)) + 1;
    if (e.start_column > sc_max || e.end_column > ec_max)
      return Status::Error(where + ": a column is past the end of its line");
    TextEdit te;
    te.range.start = src.ToByte({sl - 1, e.start_column - 1}, PositionEncoding::kUtf32);
    te.range.end = src.ToByte({el - 1, e.end_column - 1}, PositionEncoding::kUtf32);
    te.new_text = e.new_text;
    if (te.range.end < te.range.start) return Status::Error(where + ": ends before it starts");
    edits.push_back(std::move(te));
    first = i == 0 ? sl : std::min(first, sl);
    last = i == 0 ? el : std::max(last, el);
  }
  if (edits.empty()) return Status::Error("the fix has no edits");
  if (check.expected_lines) {
    const int from = check.expected_first_line + check.line_shift;
    for (size_t k = 0; k < check.expected_lines->size(); ++k) {
      const int l = from + static_cast<int>(k);
      if (l < 1 || l > lines || src.LineText(l - 1) != (*check.expected_lines)[k])
        return Status::Error("line " + std::to_string(l) +
                             " changed since the fix was drafted; it no longer applies");
    }
  }
  std::vector<TextEdit> sorted = edits;
  std::sort(sorted.begin(), sorted.end(),
            [](const TextEdit& a, const TextEdit& b) { return a.range.start < b.range.start; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].range.start < sorted[i - 1].range.end) return Status::Error("edits overlap");
  }
  std::string result = ApplyEdits(src.text(), edits);
  if (result == src.text()) return Status::Error("the edits change nothing");
  auto reparsed = PythonSource::Parse(result);
  if (reparsed->error_count() > src.error_count())
    return Status::Error("the edited code does not parse (" +
                         std::to_string(reparsed->error_count() - src.error_count()) +
                         " new syntax errors)");
  return edits;
}

std::vector<std::optional<FindingDraft>> DraftFindings(const ScanResult& scan, LlmClient* client,
                                                       DraftCache* cache,
                                                       const SourceProvider& sources,
                                                       const DraftOptions& options,
                                                       CancelFlag cancel) {
  std::vector<std::optional<FindingDraft>> out(scan.findings.size());
  if (!client || !scan.trace) return out;
  auto log = options.log ? options.log : DefaultLog;
  // Highest window scores first, then most time lost; a bounded number per trace.
  struct Pick {
    size_t finding;
    int window;
    double score;
  };
  std::vector<Pick> picks;
  for (size_t i = 0; i < scan.findings.size(); ++i) {
    Pick p{i, -1, 0};
    p.score = WindowScoreOf(scan, scan.findings[i].finding, &p.window);
    picks.push_back(p);
  }
  std::stable_sort(picks.begin(), picks.end(), [&](const Pick& a, const Pick& b) {
    if (a.score != b.score) return a.score > b.score;
    return scan.findings[a.finding].finding.time_lost_us_per_step >
           scan.findings[b.finding].finding.time_lost_us_per_step;
  });
  if (picks.size() > static_cast<size_t>(std::max(0, options.max_drafts)))
    picks.resize(static_cast<size_t>(std::max(0, options.max_drafts)));

  const std::string& model = client->settings().model;
  auto draft_one = [&](const Pick& pick) {
    const LocatedFinding& lf = scan.findings[pick.finding];
    std::shared_ptr<const PythonSource> src;
    if (!lf.absolute_path.empty() && lf.line > 0 && sources) src = sources(lf.absolute_path);
    SourceSnippet snippet;
    if (src) snippet = SnippetAround(*src, lf.file, lf.line, options.snippet_radius);
    WindowPrompt prompt = BuildWindowPrompt(scan, lf, pick.window, snippet, {});
    const std::string key =
        DraftCache::Key(prompt.fingerprint, snippet.hash, model, kPromptVersion);
    FindingDraft fd;
    fd.window = pick.window;
    fd.source_path = lf.absolute_path;
    fd.finding_line = lf.line;
    std::optional<Draft> best;
    if (cache) {
      best = cache->Get(key);
      fd.from_cache = best.has_value();
    }
    for (int round = 0; !fd.from_cache && round <= options.feedback_rounds; ++round) {
      if (cancel.cancelled()) break;
      if (round > 0) {
        // Iterative feedback: only when the answer is unsure or asks for more context.
        if (!best || (best->confidence >= options.min_confidence && !best->wants_more_context))
          break;
        std::vector<int> neighbours;
        const int n = static_cast<int>(scan.trace->windows.size());
        for (int d = 1; d <= round; ++d) {
          if (pick.window - d >= 0) neighbours.push_back(pick.window - d);
          if (pick.window >= 0 && pick.window + d < n) neighbours.push_back(pick.window + d);
        }
        if (neighbours.empty()) break;
        std::sort(neighbours.begin(), neighbours.end());
        prompt = BuildWindowPrompt(scan, lf, pick.window, snippet, neighbours);
      }
      LlmReply reply = client->Complete(prompt.request, cancel);
      ++fd.requests;
      if (!reply.ok()) break;  // the client logged why
      if (!best || reply.draft->confidence >= best->confidence) best = reply.draft;
    }
    if (!best) return;
    if (cache && !fd.from_cache) {
      Status s = cache->Put(key, *best);
      if (!s.ok()) log("draft cache: " + s.message());
    }
    fd.draft = *best;
    if (!fd.draft.fix_dropped.empty()) {
      fd.fix_dropped = fd.draft.fix_dropped;
      log("dropped the fix drafted by " + model + " for " + lf.finding.code + ": " +
          fd.fix_dropped + " (the category and explanation are kept)");
    }
    if (fd.draft.fix) {
      Status why = Status::Ok();
      if (!src) {
        why = Status::Error("the source file is not available");
      } else {
        FixCheck check;
        check.finding_line = lf.line;
        check.radius = options.fix_line_radius;
        auto edits = CheckDraftFix(*src, *fd.draft.fix, check);
        if (!edits.ok()) {
          why = edits.status();
        } else {
          int first = fd.draft.fix->edits[0].start_line, last = fd.draft.fix->edits[0].end_line;
          for (const DraftEdit& e : fd.draft.fix->edits) {
            first = std::min(first, e.start_line);
            last = std::max(last, e.end_line);
          }
          fd.fix_first_line = first;
          for (int l = first; l <= last; ++l) fd.fix_lines.emplace_back(src->LineText(l - 1));
        }
      }
      if (!why.ok()) {
        fd.fix_dropped = why.message();
        log("dropped the fix drafted by " + model + " for " + lf.finding.code + " at " +
            (lf.file.empty() ? scan.trace_path : lf.file + ":" + std::to_string(lf.line)) + ": " +
            why.message());
        fd.draft.fix.reset();
      }
    }
    out[pick.finding] = std::move(fd);
  };

  ParallelFor(picks.size(), static_cast<size_t>(std::max(1, client->settings().max_concurrent)),
              [&](size_t k) { draft_one(picks[k]); });
  return out;
}

nlohmann::json FindingDraftToJson(const FindingDraft& d) {
  nlohmann::json j = DraftToJson(d.draft);
  if (!d.fix_dropped.empty()) j["fix_dropped"] = d.fix_dropped;
  if (d.from_cache) j["cached"] = true;
  return j;
}

}  // namespace ttap::llm

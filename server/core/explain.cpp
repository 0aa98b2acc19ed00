// What a run's findings mean, in words and numbers, for both front-ends; see explain.h.
#include "server/core/explain.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "analysis/base/string_util.h"
#include "analysis/rules/rule_registry.h"
#include "server/core/markdown_text.h"

namespace ttap {

RunFacts RunFactsOf(const ScanResult& scan) {
  RunFacts facts;
  const Trace& t = *scan.trace;
  const EventTable& ev = t.events;
  facts.span_start_ns = t.span_start();
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    if (IsGpuKind(k)) facts.has_gpu = true;
    if (k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset)
      facts.gpu_busy.push_back({ev.ts[i], ev.end(i)});
  }
  MergeIntervals(&facts.gpu_busy);
  facts.gpu_busy.shrink_to_fit();
  const RuleResult& rr = scan.rules;
  for (size_t k = 0; k < rr.time.step_numbers.size(); ++k)
    facts.step_index.emplace(rr.time.step_numbers[k], k);
  return facts;
}

std::string SummaryHead(const ScanResult& scan, const JobAnalysis& job, int rank) {
  const Trace& t = *scan.trace;
  const RuleResult& rr = scan.rules;
  // The summary's head: the trace's own counts (no second replay: the rules' is reused).
  TraceSummary s = Summarize(t, 5, /*hta=*/false);
  std::string md = "**" + scan.trace_path + "** (rank " + std::to_string(t.rank) + ", " +
                   s.device_type + ", " + std::to_string(t.steps.size()) + " steps)\n\n";
  md += "GPU active " + FormatPercent(s.overall.Pct(s.overall.kernel_ns) / 100) +
        ", data movement " + FormatPercent(s.overall.Pct(s.overall.data_movement_ns) / 100) +
        ", idle " + FormatPercent(s.overall.Pct(s.overall.idle_ns) / 100) + "\n\n";
  const StepAttribution& all = rr.time.overall;  // the steps added up
  if (rr.cold_steps > 0) {
    md += "The first " + std::to_string(rr.cold_steps) + " step(s) (" +
          FormatMs(rr.cold_ns / 1000.0) +
          ") hold one-time work (compilation, start-up): they are analysed apart, and the "
          "numbers below are the steady steps'.\n\n";
  } else if (rr.cold_ns > 0) {
    md += "The run's first " + FormatMs(rr.cold_ns / 1000.0) +
          " hold one-time work (compilation, start-up): they are analysed apart, and the "
          "numbers below are the warm part's.\n\n";
  }
  if (all.total() > 0)
    md += "Where the steps' time went (critical path): " + FormatCauses(all, 5) + "\n\n";
  if (rr.run_ns > 0 && !rr.time.steps.empty()) {
    const double steps = static_cast<double>(rr.time.steps.size());
    if (rr.ProfilerCostMatters()) {
      md += "The profiler itself added " + FormatMs(rr.profiler_overhead_ns / 1000.0 / steps) +
            " to each recorded step of " + FormatMs(rr.traced_run_ns / 1000.0 / steps) + " (" +
            std::to_string(static_cast<size_t>(rr.profiled_ops / steps)) +
            " recorded ops a step): without it a step takes " +
            FormatMs(rr.run_ns / 1000.0 / steps) + ", and every saving below is of that run. ";
    }
    md += "The fixes together save " + FormatMs(rr.joint_saving_ns / 1000.0 / steps) +
          " a step: " + rr.SavingsVerdict() + ".\n\n";
  }
  const std::string stall = HostStallsText(t, rr.host_stalls);
  if (!stall.empty()) md += "Note: " + stall + ".\n\n";
  if (!rr.cpu_run_beside_gpu.empty()) md += "Note: " + rr.cpu_run_beside_gpu + ".\n\n";
  if (job.ok) {
    md += "This is rank " + std::to_string(rank) + " of a job of " + std::to_string(job.ranks) +
          " ranks (the traces beside it): ";
    if (job.late_ranks.empty()) {
      md += "they arrive at the collectives together.\n\n";
    } else {
      std::string late;
      for (size_t i = 0; i < job.late_ranks.size(); ++i) {
        late += (i == 0 ? "" : ", ") + std::to_string(job.late_ranks[i]);
      }
      char speedup[32];
      std::snprintf(speedup, sizeof(speedup), "%.2fx", job.speedup());
      md += "the others wait at the collectives for rank(s) " + late + " (TTA018); without that " +
            "the job would save " + FormatMs(job.saving_us_per_step) + " a step (" + speedup +
            "). `ttap scan` on the directory reports every rank.\n\n";
    }
  }
  return md;
}

std::string FindingMarkdown(const ScanResult& scan, const RunFacts& facts, const JobAnalysis& job,
                            int rank, const LocatedFinding& lf) {
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
      const std::string name = CutWithEllipsis(f.top_events[i].name, 60);
      std::snprintf(buf, sizeof(buf), "%s`%s` x%lld (%s)", i ? ", " : "", name.c_str(),
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
    slices.push_back(
        s1 > s0 ? static_cast<double>(ClippedLength(facts.gpu_busy, s0, s1)) / (s1 - s0) : 0);
  }
  md += "GPU busy over the finding: `" + Sparkline(slices) + "`\n\n";
  // Where the finding's steps spent their time (critical path) and what the fix would save.
  const RuleResult& rr = scan.rules;
  StepAttribution steps_time;  // every step's (the overall) when the finding names none
  if (f.step_ids.empty()) {
    steps_time.ns = rr.time.overall.ns;
  } else {
    for (int64_t number : std::set<int64_t>(f.step_ids.begin(), f.step_ids.end())) {
      auto it = facts.step_index.find(number);
      if (it == facts.step_index.end()) continue;
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
    md += "The saving is replayed on this run's dependency graph, without the profiler's own cost";
    if (rr.ProfilerCostMatters() && !rr.time.steps.empty()) {
      const double steps = static_cast<double>(rr.time.steps.size());
      md += " (it added " + FormatMs(rr.profiler_overhead_ns / 1000.0 / steps) +
            " to each recorded step of " + FormatMs(rr.traced_run_ns / 1000.0 / steps) + ")";
    }
    md += "; all fixes together: " + rr.SavingsVerdict() + ".\n\n";
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
  const std::string job_note = JobNoteFor(job, rank, f);
  if (!job_note.empty()) md += job_note + "\n\n";
  if (lf.located_at_setting)
    md +=
        "Placed on the statement that turns this on: the trace's stack points at the ops it "
        "slows down.\n\n";
  if (lf.located_by_shape)
    md +=
        "Placed on the one statement of the workspace with this fix's shape: the trace has no "
        "Python stacks (record with `with_stack=True` for exact lines).\n\n";
  if (!f.fix.empty()) md += "Fix: `" + f.fix + "` (quick fix available). ";
  md += "[Docs](" + RuleDocsUrl(f.code, f.name) + ")";
  return md;
}

std::string SummaryMarkdown(const std::string& head, const ScanResult& scan,
                            const std::map<size_t, int>& line_now, const CancelToken& cancel) {
  std::string md = head;
  std::set<std::string> listed;
  size_t not_listed = 0;
  for (size_t i = 0; i < scan.findings.size() && !cancel.cancelled(); ++i) {
    const LocatedFinding& lf = scan.findings[i];
    const Finding& f = lf.finding;
    auto now = line_now.find(i);
    const std::string at =
        lf.file + ":" + std::to_string(now != line_now.end() ? now->second : lf.line);
    if (f.severity == Severity::kHint || f.time_lost_us_per_step < 1.0 ||
        !listed.insert(f.code + "\n" + at).second) {
      ++not_listed;
      continue;
    }
    md += "- " + f.code + " " + f.name + (lf.file.empty() ? "" : " (" + at + ")") + ": " +
          f.message + "\n";
  }
  if (not_listed > 0) {
    md += "\n" + std::to_string(not_listed) +
          " more at hint level, saving under 1 us/step, or repeating a listed one on its line "
          "(`ttap scan --min-severity hint` lists every one).\n";
  }
  return md;
}

}  // namespace ttap

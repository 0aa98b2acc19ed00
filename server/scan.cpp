// `ttap scan`; see scan.h.
#include "server/scan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "analysis/base/parallel.h"
#include "analysis/base/string_util.h"
#include "analysis/load/trace_loader.h"
#include "analysis/model/job_analysis.h"
#include "analysis/rules/rule_registry.h"
#include "mapping/python_frames.h"
#include "mapping/python_source.h"
#include "mapping/shape_locator.h"
#include "mapping/source_ranges.h"
#include "mapping/suppressions.h"
#include "server/cli_util.h"
#include "server/core/analysis_core.h"
#include "server/llm/drafter.h"
#include "server/llm/llm_config.h"
#include "server/window_model.h"
#include "version.h"

namespace ttap {

namespace {

double Us(int64_t ns) { return ns / 1000.0; }

double Round3(double v) { return std::round(v * 1000.0) / 1000.0; }

nlohmann::json EvidenceJson(const Finding& f) {
  nlohmann::json e = nlohmann::json::object();
  for (const auto& [k, v] : f.evidence) {
    if (v.is_number)
      e[k] = Round3(v.number);
    else
      e[k] = v.text;
  }
  nlohmann::json top = nlohmann::json::array();
  for (const auto& t : f.top_events) {
    top.push_back({{"name", t.name}, {"count", t.count}, {"total_us", Round3(t.total_us)}});
  }
  e["top_events"] = top;
  return e;
}

}  // namespace

// The run as a whole: step time, where it went, what all the fixes save together.
nlohmann::json RunJson(const Trace& trace, const RuleResult& rr) {
  const double steps = std::max<size_t>(1, rr.time.steps.size());
  nlohmann::json stalls = nlohmann::json::array();  // HostStallsText's, each
  for (const HostStall& h : rr.host_stalls) {
    stalls.push_back({{"op", std::string(trace.Name(h.row))},
                      {"start_us", Us(trace.events.ts[h.row])},
                      {"dur_us", Round3(trace.events.dur[h.row] / 1000.0)},
                      {"other_calls", h.others},
                      {"longest_other_us", Round3(h.longest_other_ns / 1000.0)}});
  }
  nlohmann::json causes = nlohmann::json::object();
  for (int c = 0; c < kCauseCount; ++c) {
    if (rr.time.overall.ns[c] > 0) {
      causes[CauseName(static_cast<Cause>(c))] = Round3(rr.time.overall.ns[c] / 1000.0 / steps);
    }
  }
  nlohmann::json run = {
      {"steps", rr.time.steps.size()},
      {"step_us", Round3(rr.run_ns / 1000.0 / steps)},
      {"traced_step_us", Round3(rr.traced_run_ns / 1000.0 / steps)},
      {"profiler_overhead_us_per_step", Round3(rr.profiler_overhead_ns / 1000.0 / steps)},
      {"critical_path_us_per_step", causes},
      {"fixes_save_us_per_step", Round3(rr.joint_saving_ns / 1000.0 / steps)},
      {"speedup", Round3(rr.speedup)},
      {"host_stalls", stalls},
      // Of fixes_save: one-time start-up (TTA015), which the process pays once anyway.
      {"one_time_saves_us_per_step", Round3(rr.one_time_saving_ns / 1000.0 / steps)},
      // The cold start analysed apart (RunRulesSteadyFirst): the leading steps, or in a run
      // without steps (cold_steps 0) the time before its warm part.
      {"cold_steps", rr.cold_steps},
      {"cold_us", Round3(rr.cold_ns / 1000.0)}};
  // Every op on the CPU beside a listed GPU (CpuRunBesideGpuText): only where it applies.
  if (!rr.cpu_run_beside_gpu.empty()) run["cpu_run_beside_gpu"] = rr.cpu_run_beside_gpu;
  return run;
}

nlohmann::json ScanResultToJson(const ScanResult& r) {
  const Trace& t = *r.trace;
  nlohmann::json windows = nlohmann::json::array();
  for (size_t i = 0; i < t.windows.size(); ++i) {
    const WindowScore& ws = r.rules.windows[i];
    nlohmann::json w = {
        {"index", i},
        {"start_us", Us(t.windows[i].start_ns)},
        {"end_us", Us(t.windows[i].end_ns)},
        {"score", Round3(ws.score)},
        {"category", ws.category.empty() ? nlohmann::json() : nlohmann::json(ws.category)}};
    if (i < r.model_window_scores.size()) {
      w["rule_score"] = Round3(r.rule_window_scores[i]);
      w["model_score"] = Round3(r.model_window_scores[i]);
    }
    windows.push_back(std::move(w));
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const LocatedFinding& lf : r.findings) {
    const Finding& f = lf.finding;
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& fr : f.frames) {
      frames.push_back({{"file", fr.file}, {"line", fr.line}, {"function", fr.function}});
    }
    nlohmann::json per_step = nlohmann::json::array();
    for (const auto& [step, lost] : f.per_step) {
      per_step.push_back({{"step", step}, {"time_lost_us", Round3(lost)}});
    }
    nlohmann::json j = {
        {"code", f.code},
        {"name", f.name},
        {"severity", SeverityName(f.severity)},
        {"message", f.message},
        {"start_us", Us(f.start_ns)},
        {"end_us", Us(f.end_ns)},
        {"time_lost_us_per_step", Round3(f.time_lost_us_per_step)},
        {"share_of_step", Round3(f.share_of_step * 1000.0) / 1000.0},
        {"file", lf.file.empty() ? nlohmann::json() : nlohmann::json(lf.file)},
        {"line", lf.line > 0 ? nlohmann::json(lf.line) : nlohmann::json()},
        {"column", lf.column > 0 ? nlohmann::json(lf.column) : nlohmann::json()},
        {"end_line", lf.end_line > 0 ? nlohmann::json(lf.end_line) : nlohmann::json()},
        {"end_column", lf.end_column > 0 ? nlohmann::json(lf.end_column) : nlohmann::json()},
        {"frames", frames},
        {"step_ids", f.step_ids},
        {"window_indices", f.window_indices},
        {"per_step", per_step},
        {"evidence", EvidenceJson(f)},
        {"fix", f.fix.empty() ? nlohmann::json() : nlohmann::json(f.fix)}};
    if (!lf.ambiguous.empty()) j["ambiguous_files"] = lf.ambiguous;
    if (lf.stale) {
      j["stale"] = true;
      j["stale_reason"] = lf.stale_reason;
    }
    if (lf.located_by_shape) j["located_by"] = "code shape (the trace has no Python stacks)";
    if (lf.located_at_setting) j["located_by"] = "the setting that causes it";
    findings.push_back(std::move(j));
  }
  return {{"trace", r.trace_path},
          {"rank", t.rank_source == "default" ? nlohmann::json() : nlohmann::json(t.rank)},
          {"steps", t.steps.size()},
          {"trace_score", Round3(r.rules.trace_score)},
          {"run", RunJson(*r.trace, r.rules)},
          {"window_fusion",
           r.window_fusion.empty() ? nlohmann::json() : nlohmann::json(r.window_fusion)},
          {"windows", windows},
          {"findings", findings},
          {"suppressed", r.suppressed}};
}

namespace {

// One finding of ScanResultToText, with its line break.
std::string FindingText(const ScanResult& r, const LocatedFinding& lf) {
  std::string out;
  const Finding& f = lf.finding;
  std::string where;
  if (!lf.file.empty() && lf.line > 0) {
    where = lf.file + ":" + std::to_string(lf.line) + ":" +
            std::to_string(lf.column > 0 ? lf.column : 1);
  } else {
    where = r.trace_path;
  }
  out += where + ": " + SeverityName(f.severity) + "[" + f.code + " " + f.name + "]: " + f.message;
  if (f.step_ids.size() > 0 && f.step_ids.front() >= 0) {
    out += " (steps " + std::to_string(f.step_ids.front()) +
           (f.step_ids.size() > 1 ? "-" + std::to_string(f.step_ids.back()) : "") + ")";
  }
  if (!lf.ambiguous.empty())
    out += " [ambiguous source: " + std::to_string(lf.ambiguous.size()) + " files match]";
  if (lf.stale) out += " [stale location: " + lf.stale_reason + "]";
  if (lf.located_by_shape) out += " [located by code shape: the trace has no Python stacks]";
  if (lf.located_at_setting) out += " [placed at the setting that causes it]";
  out += "\n";
  return out;
}

}  // namespace

std::string RunSummaryText(const ScanResult& r) {
  const RuleResult& rr = r.rules;
  if (rr.run_ns <= 0 || rr.time.steps.empty()) return "";
  const double steps = static_cast<double>(rr.time.steps.size());
  const bool whole = rr.time.step_numbers.size() == 1 && rr.time.step_numbers[0] < 0;
  const std::string per = whole ? "" : "/step";
  std::string profiler;
  if (rr.ProfilerCostMatters()) {
    profiler = "; the profiler itself added " + FormatMs(rr.profiler_overhead_ns / 1000.0 / steps) +
               per + " (" + std::to_string(static_cast<size_t>(rr.profiled_ops / steps)) +
               " recorded ops" + per + "): without it " +
               (!whole           ? "a step takes "
                : rr.cold_ns > 0 ? "the warm part takes "
                                 : "the run takes ") +
               FormatMs(rr.run_ns / 1000.0 / steps);
  }
  std::string stall = HostStallsText(*r.trace, rr.host_stalls);
  if (!stall.empty()) stall = "; " + stall;
  if (!rr.cpu_run_beside_gpu.empty()) stall += "; " + rr.cpu_run_beside_gpu;
  // The cold steps analysed apart (RunRulesSteadyFirst).
  std::string cold;
  if (rr.cold_steps > 0) {
    cold = " (after " +
           (rr.cold_steps == 1 ? std::string("the first step's ")
                               : "the first " + std::to_string(rr.cold_steps) + " steps' ") +
           FormatMs(rr.cold_ns / 1000.0) + " of one-time work, analysed apart)";
  } else if (rr.cold_ns > 0) {
    cold = " (after the run's first " + FormatMs(rr.cold_ns / 1000.0) +
           " of one-time work, analysed apart)";
  }
  return r.trace_path +
         (whole && !cold.empty() ? ": where the warm part's "
          : whole                ? ": where the run's "
          : cold.empty()         ? ": where each step's "
                                 : ": where each steady step's ") +
         FormatMs(rr.traced_run_ns / 1000.0 / steps) + " went" + cold + ": " +
         FormatCauses(rr.time.overall, 4) + profiler +
         (rr.cpu_side_missing
              ? "; "
              : "; the findings together save " + FormatMs(rr.joint_saving_ns / 1000.0 / steps) +
                    std::string(whole ? "" : "/step") + ": ") +
         rr.SavingsVerdict() + stall + "\n";
}

std::string ScanResultToText(const ScanResult& r) {
  std::string out;
  for (const LocatedFinding& lf : r.findings) out += FindingText(r, lf);
  return out + RunSummaryText(r);
}

namespace {

// A finding's mechanical fixes as SARIF fix objects: each edit a replacement of a region (lines
// and columns 1-based, columns in code points, as the run's columnKind says).
nlohmann::json SarifFixes(const LocatedFinding& lf, bool trace_has_gpu) {
  nlohmann::json out = nlohmann::json::array();
  if (lf.finding.fix.empty() || lf.absolute_path.empty() || lf.line <= 0 || lf.stale) return out;
  auto src = ProcessSourceCache().GetFile(lf.absolute_path);
  if (!src) return out;
  auto fixes = ComputeFixes(*src, FixRequestFor(lf, trace_has_gpu));
  if (!fixes.ok()) return out;
  for (const QuickFix& fx : *fixes) {
    nlohmann::json replacements = nlohmann::json::array();
    for (const TextEdit& e : fx.edits) {
      const SourcePosition a = src->ToPosition(e.range.start, PositionEncoding::kUtf32);
      const SourcePosition b = src->ToPosition(e.range.end, PositionEncoding::kUtf32);
      replacements.push_back({{"deletedRegion",
                               {{"startLine", a.line + 1},
                                {"startColumn", a.character + 1},
                                {"endLine", b.line + 1},
                                {"endColumn", b.character + 1}}},
                              {"insertedContent", {{"text", e.new_text}}}});
    }
    if (replacements.empty()) continue;
    out.push_back(
        {{"description", {{"text", fx.title}}},
         {"artifactChanges", nlohmann::json::array({{{"artifactLocation", {{"uri", lf.file}}},
                                                     {"replacements", replacements}}})}});
  }
  return out;
}

}  // namespace

std::string ScanResultToMarkdown(const ScanResult& r, const JobAnalysis& job) {
  if (!r.trace) return "";
  const int rank = r.trace->rank;
  const RunFacts facts = RunFactsOf(r);
  std::string md = "## ttap: " + r.trace_path + "\n\n" +
                   SummaryMarkdown(SummaryHead(r, job, rank), r, {}, CancelToken());
  for (const LocatedFinding& lf : r.findings) {
    const Finding& f = lf.finding;
    md += "\n### " + f.code + " " + f.name +
          (lf.file.empty() ? "" : " at `" + lf.file + ":" + std::to_string(lf.line) + "`") +
          "\n\n" + f.message + "\n\n" + FindingMarkdown(r, facts, job, rank, lf) + "\n";
  }
  return md + "\n";
}

nlohmann::json ScanResultsToSarif(const std::vector<const ScanResult*>& results,
                                  const JobAnalysis& job) {
  nlohmann::json rules = nlohmann::json::array();
  std::vector<RuleInfo> catalogue;  // every registered code (analysis/rules/rule_registry.h)
  for (const RuleSpec& spec : RuleRegistry()) catalogue.push_back(spec.info);
  for (const RuleInfo& ri : catalogue) {
    rules.push_back({{"id", ri.code},
                     {"name", ri.name},
                     {"shortDescription", {{"text", ri.summary}}},
                     {"helpUri", RuleDocsUrl(ri.code, ri.name)}});
  }
  nlohmann::json sarif_results = nlohmann::json::array();
  for (const ScanResult* r : results) {
    // The explanation the editor's hover shows (server/core/explain.h), after the message; the
    // fixes read the same facts (GPU activity) as the editor's.
    const RunFacts facts = r->trace ? RunFactsOf(*r) : RunFacts{};
    const bool has_gpu = facts.has_gpu;
    const int rank = r->trace ? r->trace->rank : 0;
    for (const LocatedFinding& lf : r->findings) {
      const Finding& f = lf.finding;
      const char* level = f.severity == Severity::kError     ? "error"
                          : f.severity == Severity::kWarning ? "warning"
                                                             : "note";
      nlohmann::json location;
      if (!lf.file.empty() && lf.line > 0) {
        nlohmann::json region = {{"startLine", lf.line}};
        if (lf.column > 0) region["startColumn"] = lf.column;
        if (lf.end_line > 0) region["endLine"] = lf.end_line;
        if (lf.end_column > 0) region["endColumn"] = lf.end_column;
        location = {
            {"physicalLocation", {{"artifactLocation", {{"uri", lf.file}}}, {"region", region}}}};
      } else {
        location = {{"physicalLocation", {{"artifactLocation", {{"uri", r->trace_path}}}}}};
      }
      nlohmann::json props = {{"time_lost_us_per_step", Round3(f.time_lost_us_per_step)},
                              {"share_of_step", f.share_of_step},
                              {"trace", r->trace_path},
                              {"step_ids", f.step_ids}};
      if (!f.fix.empty()) props["fix"] = f.fix;
      if (lf.stale) props["stale_location"] = lf.stale_reason;
      if (lf.located_by_shape) props["located_by"] = "code shape";
      if (lf.located_at_setting) props["located_by"] = "setting";
      size_t rule_index = 0;
      for (size_t i = 0; i < catalogue.size(); ++i) {
        if (f.code == catalogue[i].code) rule_index = i;
      }
      sarif_results.push_back(
          {{"ruleId", f.code},
           {"ruleIndex", rule_index},
           {"level", level},
           {"message",
            {{"text", f.message},
             {"markdown", f.message + "\n\n" + FindingMarkdown(*r, facts, job, rank, lf)}}},
           {"locations", nlohmann::json::array({location})},
           {"properties", props}});
      nlohmann::json fixes = SarifFixes(lf, has_gpu);
      if (!fixes.empty()) sarif_results.back()["fixes"] = std::move(fixes);
    }
  }
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           nlohmann::json::array({{{"tool",
                                    {{"driver",
                                      {{"name", "ttap"},
                                       {"version", TTAP_VERSION},
                                       {"informationUri", "https://github.com/torchtraceap/ttap"},
                                       {"rules", rules}}}}},
                                   {"columnKind", "unicodeCodePoints"},
                                   {"results", sarif_results}}})}};
}

namespace {

std::string CurrentDir() {
  char buf[4096];
  return getcwd(buf, sizeof(buf)) ? std::string(buf) : std::string(".");
}

using FindingDrafts = std::vector<std::optional<llm::FindingDraft>>;

// ScanResultToJson with each drafted finding's "draft" (`ttap scan --llm`).
nlohmann::json ScanResultToJsonWithDrafts(const ScanResult& r, const FindingDrafts& drafts) {
  nlohmann::json j = ScanResultToJson(r);
  for (size_t i = 0; i < drafts.size() && i < j["findings"].size(); ++i) {
    if (drafts[i]) j["findings"][i]["draft"] = llm::FindingDraftToJson(*drafts[i]);
  }
  return j;
}

// ScanResultToText with an indented line under each drafted finding.
std::string ScanResultToTextWithDrafts(const ScanResult& r, const FindingDrafts& drafts) {
  std::string out;
  for (size_t i = 0; i < r.findings.size(); ++i) {
    out += FindingText(r, r.findings[i]);
    if (i >= drafts.size() || !drafts[i]) continue;
    const llm::Draft& d = drafts[i]->draft;
    std::string first = d.explanation_markdown.substr(0, d.explanation_markdown.find('\n'));
    first = CutWithEllipsis(first, 200);
    char conf[32];
    std::snprintf(conf, sizeof(conf), "%.2f", d.confidence);
    out += "  drafted by " + d.model + " (" + d.category + ", confidence " + conf +
           (d.fix ? ", fix: " + d.fix->description : "") + "): " + first + "\n";
  }
  return out + RunSummaryText(r);
}

}  // namespace

namespace {

// One rank of a job as the table and the job analysis need it: what `ttap scan DIR` keeps of a
// scanned trace, and what `ttap scan --format rank-summary` ships to `ttap job`.
struct RankRow {
  std::string file;
  bool usable = false;
  int rank = 0;
  size_t steps = 0, findings = 0;
  std::string top;          // "TTA017 cpu-overhead-bound 25.5%", "-" for none
  std::string text;         // the rank's findings as `ttap scan` prints them
  bool rank_known = false;  // named by the trace (distributedInfo or file name)
  RankTimeline timeline;
  // Its largest finding whose time may be a wait for other ranks (TTA011), "" for none.
  std::string peer_wait_finding;
  double peer_wait_us = 0;
};

RankRow RankRowOf(const ScanResult& r, const FindingDrafts& drafts) {
  RankRow row;
  row.file = r.trace_path;
  row.usable = true;
  row.rank = r.trace ? r.trace->rank : 0;
  row.steps = r.trace ? r.trace->steps.size() : 0;
  row.findings = r.findings.size();
  row.top = r.findings.empty() ? "-"
                               : r.findings[0].finding.code + " " + r.findings[0].finding.name +
                                     " " + FormatPercent(r.findings[0].finding.share_of_step);
  row.text = ScanResultToTextWithDrafts(r, drafts);
  if (r.trace) {
    row.rank_known = r.trace->rank_source != "default";
    row.timeline = ExtractRankTimeline(*r.trace);
    const size_t steps = std::max<size_t>(1, r.rules.time.steps.size());
    row.timeline.step_us = r.rules.run_ns / 1000.0 / static_cast<double>(steps);
    if (!r.findings.empty()) {
      const Finding& f = r.findings.front().finding;
      const LocatedFinding& top = r.findings.front();
      row.timeline.top_cause =
          f.code + " " + f.name + " (" + FormatMs(f.time_lost_us_per_step) + "/step" +
          (top.file.empty() || top.line <= 0 ? ""
                                             : ", " + top.file + ":" + std::to_string(top.line)) +
          ")";
    }
    for (const LocatedFinding& lf : r.findings) {
      const RuleSpec* spec = FindRuleSpec(lf.finding.code);
      if (!spec || !spec->may_wait_for_peers) continue;
      row.peer_wait_finding = lf.finding.code + " " + lf.finding.name;
      row.peer_wait_us = lf.finding.time_lost_us_per_step;
      break;
    }
  }
  return row;
}

// The job the ranks make (TTA018 straggler-rank): the traces that name their rank, read
// together. Not ok for traces of different jobs (their collectives do not end together).
JobAnalysis AnalyseJobOf(const std::vector<RankRow>& rows) {
  std::vector<RankTimeline> timelines;
  for (const RankRow& r : rows) {
    if (r.usable && r.rank_known) timelines.push_back(r.timeline);
  }
  return AnalyseJob(timelines);
}

// The per-rank table under the findings of a directory.
std::string RanksTable(const std::vector<RankRow>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "\n%-56s %5s %6s %9s  %s\n", "trace", "rank", "steps",
                "findings", "top finding");
  out += line;
  for (const RankRow& r : rows) {
    const std::string name = CutWithEllipsis(r.file.substr(r.file.rfind('/') + 1), 56);
    if (!r.usable) {
      std::snprintf(line, sizeof(line), "%-56s %5s %6s %9s  %s\n", name.c_str(), "-", "-", "-",
                    "unusable input");
    } else {
      std::snprintf(line, sizeof(line), "%-56s %5d %6zu %9zu  %s\n", name.c_str(), r.rank, r.steps,
                    r.findings, r.top.c_str());
    }
    out += line;
  }
  return out;
}

// A job-level finding's severity from its share of the job's step (TTA018, TTA019).

// The row of a rank the trace names, nullptr for none.
const RankRow* RowOfRank(const std::vector<RankRow>& rows, int rank) {
  for (const RankRow& r : rows) {
    if (r.usable && r.rank_known && r.rank == rank) return &r;
  }
  return nullptr;
}

nlohmann::json LatenessToJson(const RankLateness& l) {
  return {{"rank", l.rank},
          {"late_us_per_step", Round3(l.late_us_per_step)},
          {"wait_us_per_step", Round3(l.wait_us_per_step)},
          {"last_arrivals", l.last_arrivals}};
}

// The job's report under the per-rank table: each rank's lateness and wait, then TTA018.
std::string JobToText(const JobAnalysis& job, const std::vector<RankRow>& rows,
                      const std::string& target) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "\njob: %d ranks, %zu step(s), %zu collective(s) on every rank; a step of the job "
                "takes %s from its first rank's start to its last rank's end\n",
                job.ranks, job.steps, job.collectives, FormatMs(job.job_step_us).c_str());
  out += line;
  std::snprintf(line, sizeof(line), "%6s  %-12s  %-26s  %-22s  %-14s  %s\n", "rank", "step",
                "arrives after the median", "waits in collectives", "last to arrive",
                "kernels (collectives aside)");
  out += line;
  for (const RankLateness& l : job.per_rank) {
    const std::string last =
        std::to_string(l.last_arrivals) + " of " + std::to_string(job.collectives);
    const RankRow* row = RowOfRank(rows, l.rank);
    const double step_us = row ? row->timeline.step_us : 0;  // its own analysed step
    std::snprintf(line, sizeof(line), "%6d  %-12s  %-26s  %-22s  %-14s  %s\n", l.rank,
                  FormatMs(step_us).c_str(), (FormatMs(l.late_us_per_step) + "/step").c_str(),
                  (FormatMs(l.wait_us_per_step) + "/step").c_str(), last.c_str(),
                  (FormatMs(l.compute_us_per_step) + "/step").c_str());
    out += line;
  }
  // TTA019: the same work taking longer on some ranks (uneven batches or sequence lengths).
  std::string imbalance;
  if (!job.imbalanced.empty()) {
    std::vector<std::string> ranks;
    for (const auto& [rank, excess] : job.imbalanced) {
      ranks.push_back("rank " + std::to_string(rank) + " (" + FormatMs(excess) + "/step more)");
    }
    const RuleInfo* info = FindRule("TTA019");
    const double share = job.job_step_us > 0 ? job.imbalanced[0].second / job.job_step_us : 0;
    std::snprintf(line, sizeof(line), "%s: %s[TTA019 %s]: ", target.c_str(),
                  SeverityName(JobSeverity(share)), info ? info->name : "load-imbalance");
    imbalance = std::string(line) + "the GPU kernels of " + JoinAnd(ranks) +
                " take longer than the median rank's " + FormatMs(job.median_compute_us) +
                "/step, the collectives aside: uneven batches or sequence lengths give some ranks "
                "more work every step\n";
  }
  if (job.late_ranks.empty()) {
    return out + "no rank holds the others back: they arrive at the collectives together\n" +
           imbalance;
  }
  const double share = job.job_step_us > 0 ? job.saving_us_per_step / job.job_step_us : 0;
  std::vector<std::string> ranks, lates;
  std::string causes;
  for (int rank : job.late_ranks) {
    ranks.push_back(std::to_string(rank));
    const RankLateness* l = job.Of(rank);
    lates.push_back(FormatMs(l ? l->late_us_per_step : 0));
    const RankRow* row = RowOfRank(rows, rank);
    if (row && !row->timeline.top_cause.empty()) {
      causes += "; rank " + std::to_string(rank) + "'s own top cause: " + row->timeline.top_cause;
    }
  }
  const RankLateness& waits_most = *job.WaitsLongest();  // late ranks: per_rank is not empty
  // A waiting rank's own "communication" finding is the late ranks' cost, not its own.
  std::vector<std::string> waiting_ranks;
  for (const RankLateness& l : job.per_rank) {
    const RankRow* row = RowOfRank(rows, l.rank);
    if (job.IsLate(l.rank) || !row || row->peer_wait_finding.empty()) continue;
    if (l.wait_us_per_step < 0.5 * row->peer_wait_us) continue;
    waiting_ranks.push_back(std::to_string(l.rank) + " (" + FormatMs(row->peer_wait_us) + "/step)");
  }
  char speedup[32];
  std::snprintf(speedup, sizeof(speedup), "%.2f", job.speedup());
  const RuleInfo* info = FindRule("TTA018");
  std::snprintf(line, sizeof(line), "%s: %s[TTA018 %s]: ", target.c_str(),
                SeverityName(JobSeverity(share)), info ? info->name : "straggler-rank");
  out += line;
  out += (job.late_ranks.size() == 1 ? "rank " : "ranks ") + JoinAnd(ranks) +
         (job.late_ranks.size() == 1 ? " arrives" : " arrive") + " at the collectives " +
         JoinAnd(lates) + " per step after the median rank, and the others wait for " +
         (job.late_ranks.size() == 1 ? "it" : "them") + " (rank " +
         std::to_string(waits_most.rank) + " waits " + FormatMs(waits_most.wait_us_per_step) +
         "/step)" + causes + "; if " + (job.late_ranks.size() == 1 ? "it" : "they") +
         " arrived with the median rank the job would save " + FormatMs(job.saving_us_per_step) +
         "/step (" + FormatPercent(share) + " of its step): it could be " + speedup + "x faster\n";
  const std::string waiting = JoinAnd(waiting_ranks);
  out += imbalance;
  if (!waiting.empty()) {
    out += "  the exposed communication (TTA011) of rank" +
           std::string(waiting_ranks.size() == 1 ? " " : "s ") + waiting +
           " is mostly that wait: fix the late " + (job.late_ranks.size() == 1 ? "rank" : "ranks") +
           " first\n";
  }
  return out;
}

nlohmann::json JobToJson(const JobAnalysis& job, int rank) {
  nlohmann::json j = {{"ranks", job.ranks},
                      {"steps", job.steps},
                      {"collectives", job.collectives},
                      {"job_step_us", Round3(job.job_step_us)},
                      {"late_ranks", job.late_ranks},
                      {"saving_us_per_step", Round3(job.saving_us_per_step)},
                      {"speedup", Round3(job.speedup())}};
  if (const RankLateness* l = job.Of(rank)) j["this_rank"] = LatenessToJson(*l);
  return j;
}

// `ttap scan --format rank-summary`: one rank, small enough to ship from a worker (tools/
// ttap_dask.py) to the machine that runs `ttap job` over every rank.
nlohmann::json RankRowToJson(const RankRow& r) {
  nlohmann::json steps = nlohmann::json::array(), collectives = nlohmann::json::array();
  for (const RankTimeline::Step& s : r.timeline.steps) {
    steps.push_back({s.number, s.start_ns, s.end_ns, s.compute_ns});
  }
  for (const RankCollective& c : r.timeline.collectives) {
    collectives.push_back({c.step, c.kind, c.start_ns, c.end_ns});
  }
  return {{"ttap_rank_summary", 1},
          {"file", r.file},
          {"rank", r.rank},
          {"rank_known", r.rank_known},
          {"steps", r.steps},
          {"findings", r.findings},
          {"top", r.top},
          {"text", r.text},
          {"step_us", r.timeline.step_us},
          {"top_cause", r.timeline.top_cause},
          {"peer_wait_finding", r.peer_wait_finding},
          {"peer_wait_us", r.peer_wait_us},
          {"timeline", {{"steps", steps}, {"collectives", collectives}}}};
}

StatusOr<RankRow> RankRowFromJson(const nlohmann::json& j) {
  if (!j.is_object() || j.value("ttap_rank_summary", 0) != 1) {
    return Status::Error("not a ttap rank summary (ttap scan --format rank-summary)");
  }
  try {
    RankRow r;
    r.usable = true;
    r.file = j.at("file").get<std::string>();
    r.rank = j.at("rank").get<int>();
    r.rank_known = j.at("rank_known").get<bool>();
    r.steps = j.at("steps").get<size_t>();
    r.findings = j.at("findings").get<size_t>();
    r.top = j.at("top").get<std::string>();
    r.text = j.at("text").get<std::string>();
    r.timeline.rank = r.rank;
    r.timeline.file = r.file;
    r.timeline.step_us = j.at("step_us").get<double>();
    r.timeline.top_cause = j.at("top_cause").get<std::string>();
    r.peer_wait_finding = j.at("peer_wait_finding").get<std::string>();
    r.peer_wait_us = j.at("peer_wait_us").get<double>();
    for (const auto& s : j.at("timeline").at("steps")) {
      r.timeline.steps.push_back({s.at(0).get<int64_t>(), s.at(1).get<int64_t>(),
                                  s.at(2).get<int64_t>(), s.at(3).get<int64_t>()});
    }
    for (const auto& c : j.at("timeline").at("collectives")) {
      r.timeline.collectives.push_back({c.at(0).get<int64_t>(), c.at(1).get<std::string>(),
                                        c.at(2).get<int64_t>(), c.at(3).get<int64_t>()});
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status::Error(std::string("a rank summary field is missing or wrong: ") + e.what());
  }
}

}  // namespace

int RunScanCommand(const std::vector<std::string>& args, const Config& config) {
  std::string target, workspace_dir, format = "text";
  Severity min_severity = Severity::kInfo;
  bool timing = false;
  int windows = config.windows;
  bool use_llm = false;         // `--llm`: the only thing that turns drafting on
  SharedFlags shared;           // --model FILE (adds TTA900 unusual windows), --device, --llm-*
  double model_threshold = -1;  // `--model-threshold`; < 0: the file's
  bool no_model = false;        // `--no-model`: rules only (the default; kept for scripts)
  std::vector<std::string> select = config.select, ignore = config.ignore;  // --select / --ignore
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--workspace") {
      if (!next(&workspace_dir)) return UsageError("--workspace needs a directory");
    } else if (a == "--format") {
      if (!next(&format) || (format != "text" && format != "json" && format != "sarif" &&
                             format != "markdown" && format != "rank-summary")) {
        return UsageError("--format is text, json, sarif, markdown or rank-summary");
      }
    } else if (a == "--json") {
      format = "json";
    } else if (a == "--timing") {
      timing = true;
    } else if (a == "--llm") {
      use_llm = true;
    } else if (int taken = TakeSharedFlag(args, &i, &shared)) {
      if (taken != 1) return taken;
    } else if (a == "--no-model") {
      no_model = true;
    } else if (a == "--model-threshold") {
      if (!next(&v) || !ParseNumber(v, &model_threshold) ||
          !(model_threshold >= 0 && model_threshold <= 1)) {
        return UsageError("--model-threshold needs a score in [0, 1]");
      }
    } else if (a == "--select" || a == "--ignore") {
      if (!next(&v)) return UsageError(a + " needs codes, e.g. TTA001,TTA9");
      std::vector<std::string> codes;
      std::stringstream list(v);
      for (std::string c; std::getline(list, c, ',');)
        if (!c.empty()) codes.push_back(c);
      const std::string wrong = CheckCodeList(codes);
      if (!wrong.empty()) return UsageError(a + ": " + wrong);
      (a == "--select" ? select : ignore) = codes;
    } else if (a == "--min-severity") {
      if (!next(&v) || !ParseSeverity(v, &min_severity)) {
        return UsageError("--min-severity is error, warning, info or hint");
      }
    } else if (a == "--windows") {
      if (!next(&v) || std::atoi(v.c_str()) < 1)
        return UsageError("--windows needs a positive number");
      windows = std::atoi(v.c_str());
    } else if (int rc = TakeTraceArgument("scan", a, &target)) {
      return rc;
    }
  }
  if (target.empty()) return UsageError("scan: missing TRACE_OR_DIR");
  std::optional<llm::LlmSettings> llm_settings;
  if (use_llm) {
    auto resolved = llm::ResolveLlmSettings(config.llm, shared.llm);
    if (!resolved.ok()) return UsageError(resolved.status().message());
    llm_settings = resolved.value();
  }
  auto expanded = ExpandTraceTarget(target);
  if (!expanded.ok()) {
    std::fprintf(stderr, "ttap: error: %s\n", expanded.status().message().c_str());
    return 2;
  }
  const std::vector<std::string>& files = expanded->files;
  const bool directory = expanded->directory;
  // What the language server does with a trace, done the same way (server/core/analysis_core.h).
  AnalysisCore core;
  ScanRequest request;
  request.config = config;
  request.workspace_root = workspace_dir.empty() ? CurrentDir() : workspace_dir;
  request.min_severity = min_severity;
  request.select = select;
  request.ignore = ignore;
  request.load_threads = files.size() == 1 ? config.threads : 1;
  request.windows = windows;
  request.model_threshold = model_threshold;
  // The learned scorer runs only when asked: `--model FILE`, or `--model shipped` for the weights
  // found beside the binary, in TTAP_MODEL or ./models. On traces nobody here simulated it added
  // nothing to the rules (models/MODEL_CARD.md, "Opt-in"), so it is off by default, as in the
  // language server. It opens while the traces load; one that cannot be used is a warning: the
  // rules still run.
  std::string model_path = no_model ? std::string() : shared.model_path;
  if (model_path == "shipped") {
    model_path = WindowModel::DefaultPath();
    if (model_path.empty()) {
      std::fprintf(stderr,
                   "ttap: warning: --model shipped: no models/ttap-window-scorer.pt beside the "
                   "binary, in ./models or in TTAP_MODEL; rules only\n");
    }
  }
  const WindowScorerFuture scorer = core.Scorer(model_path, shared.device);

  // Traces of a directory are scanned in parallel, one loader thread each.
  std::vector<ScanResult> results(files.size());
  std::vector<std::string> errors(files.size());
  ParallelFor(files.size(), files.size() == 1 ? 1 : HardwareThreads(), [&](size_t k) {
    double load_ms = 0;
    auto scanned = core.LoadAndScan(files[k], request, scorer, &load_ms);
    if (!scanned.ok()) {
      errors[k] = scanned.status().message();
      return;
    }
    results[k] = std::move(scanned.value());
    if (timing) {
      std::fprintf(stderr, "%s: load %.1f ms; rules %.1f ms; mapping %.1f ms (%zu findings)\n",
                   files[k].c_str(), load_ms, results[k].rules_ms, results[k].mapping_ms,
                   results[k].findings.size());
    }
  });
  if (scorer.valid()) scorer.wait();  // says why a model is unusable even when no trace loaded

  // LLM drafts (`--llm`): the best-scoring findings of each trace, through the draft cache.
  std::vector<FindingDrafts> drafts(files.size());
  if (llm_settings) {
    llm::DraftOptions draft_options = llm::DraftOptionsFrom(config.llm);
    std::fprintf(stderr,
                 "ttap: llm: drafting up to %d findings per trace with %s at %s (sent: window "
                 "summaries, rule findings, the catalogue and up to %d source lines per finding)\n",
                 draft_options.max_drafts, llm_settings->model.c_str(),
                 llm_settings->base_url.c_str(), 2 * draft_options.snippet_radius + 1);
    llm::LlmClient client(*llm_settings);
    llm::DraftCache cache(config.llm.cache_dir, static_cast<uint64_t>(config.llm.cache_max_mb)
                                                    << 20);
    llm::SourceProvider sources = [&](const std::string& path) {
      return ProcessSourceCache().GetFile(path);
    };
    for (size_t k = 0; k < files.size(); ++k) {
      if (!errors[k].empty() || !results[k].trace) continue;
      drafts[k] = llm::DraftFindings(results[k], &client, &cache, sources, draft_options);
    }
  }

  int exit_code = 0;
  std::vector<const ScanResult*> ok;
  std::vector<const FindingDrafts*> ok_drafts;
  for (size_t k = 0; k < files.size(); ++k) {
    if (!errors[k].empty()) {
      std::fprintf(stderr, "ttap: error: %s\n", errors[k].c_str());
      exit_code = 2;
      continue;
    }
    ok.push_back(&results[k]);
    ok_drafts.push_back(&drafts[k]);
    if (!results[k].findings.empty() && exit_code == 0) exit_code = 1;
  }
  // A directory's ranks read as one job (as the editor reads a rank beside its siblings): the
  // JSON's "job" per rank, and what the SARIF and Markdown explanations say of collective waits.
  auto directory_job = [&] {
    if (!directory) return JobAnalysis();
    std::vector<RankRow> rows;
    for (size_t i = 0; i < ok.size(); ++i) rows.push_back(RankRowOf(*ok[i], *ok_drafts[i]));
    return AnalyseJobOf(rows);
  };
  if (format == "rank-summary") {
    nlohmann::json arr = nlohmann::json::array();
    for (size_t i = 0; i < ok.size(); ++i)
      arr.push_back(RankRowToJson(RankRowOf(*ok[i], *ok_drafts[i])));
    const nlohmann::json out = directory || arr.empty() ? arr : arr[0];
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (format == "json") {
    if (!directory) {
      if (!ok.empty())
        std::cout << ScanResultToJsonWithDrafts(*ok[0], *ok_drafts[0])
                         .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "\n";
    } else {
      nlohmann::json arr = nlohmann::json::array();
      const JobAnalysis job = directory_job();
      for (size_t i = 0; i < ok.size(); ++i) {
        arr.push_back(ScanResultToJsonWithDrafts(*ok[i], *ok_drafts[i]));
        if (job.ok && ok[i]->trace) arr.back()["job"] = JobToJson(job, ok[i]->trace->rank);
      }
      std::cout << arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
  } else if (format == "markdown" || format == "sarif") {
    const JobAnalysis job = directory_job();
    if (format == "markdown") {
      for (const ScanResult* r : ok) std::cout << ScanResultToMarkdown(*r, job);
    } else {
      std::cout << ScanResultsToSarif(ok, job).dump(2, ' ', false,
                                                    nlohmann::json::error_handler_t::replace)
                << "\n";
    }
  } else {
    std::vector<RankRow> rows;
    for (size_t k = 0; k < files.size(); ++k) {
      if (!errors[k].empty()) {
        RankRow unusable;
        unusable.file = files[k];
        rows.push_back(unusable);
        continue;
      }
      rows.push_back(RankRowOf(results[k], drafts[k]));
      std::cout << rows.back().text;
    }
    if (directory) {
      std::cout << RanksTable(rows);
      const JobAnalysis job = AnalyseJobOf(rows);
      if (job.ok) std::cout << JobToText(job, rows, target);
    } else if (!ok.empty() && ok[0]->findings.empty()) {
      // The last line's saving counts every finding: when those it counts are all left out
      // (below the level, ignored, suppressed), it says so, or it reads "no findings" beside
      // "the findings together save 0.32 ms/step".
      const size_t hidden = ok[0]->rules.findings.size();
      std::cout << ok[0]->trace_path << ": no findings at or above " << SeverityName(min_severity)
                << (hidden > 0 && ok[0]->rules.joint_saving_ns > 0
                        ? " (the saving above is that of " + std::to_string(hidden) +
                              (hidden == 1 ? " finding" : " findings") +
                              " not shown: below that level, ignored or suppressed)"
                        : std::string())
                << "\n";
    }
  }
  return exit_code;
}

int RunJobCommand(const std::vector<std::string>& args) {
  std::vector<std::string> inputs;
  std::string format = "text";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--format") {
      if (i + 1 >= args.size() || (args[i + 1] != "text" && args[i + 1] != "json")) {
        return UsageError("job: --format is text or json");
      }
      format = args[++i];
    } else if (args[i].size() > 1 && args[i][0] == '-') {
      return UsageError("job: unknown option " + args[i]);
    } else {
      inputs.push_back(args[i]);
    }
  }
  if (inputs.empty()) return UsageError("job: give the ranks' summaries (SUMMARY.json ... or -)");
  // Each input holds one rank summary or an array of them; "-" is standard input.
  std::vector<RankRow> rows;
  for (const std::string& path : inputs) {
    std::stringstream text;
    if (path == "-") {
      text << std::cin.rdbuf();
    } else {
      std::ifstream in(path);
      if (!in) {
        std::fprintf(stderr, "ttap: error: %s: cannot read\n", path.c_str());
        return 2;
      }
      text << in.rdbuf();
    }
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded()) {
      std::fprintf(stderr, "ttap: error: %s: not JSON\n", path.c_str());
      return 2;
    }
    if (!j.is_array()) j = nlohmann::json::array({j});
    for (const nlohmann::json& one : j) {
      auto row = RankRowFromJson(one);
      if (!row.ok()) {
        std::fprintf(stderr, "ttap: error: %s: %s\n", path.c_str(), row.status().message().c_str());
        return 2;
      }
      rows.push_back(std::move(row.value()));
    }
  }
  // In the order `ttap scan DIR` lists the files.
  auto base = [](const std::string& f) { return f.substr(f.rfind('/') + 1); };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const RankRow& a, const RankRow& b) { return base(a.file) < base(b.file); });
  const JobAnalysis job = AnalyseJobOf(rows);
  if (format == "json") {
    nlohmann::json out = {{"ranks", rows.size()}};
    if (job.ok) {
      out["job"] = JobToJson(job, -1);
      nlohmann::json per_rank = nlohmann::json::array();
      for (const RankLateness& l : job.per_rank) per_rank.push_back(LatenessToJson(l));
      out["job"]["per_rank"] = per_rank;
      nlohmann::json per_collective = nlohmann::json::array();
      for (const CollectiveSkew& c : job.per_collective) {
        nlohmann::json waits = nlohmann::json::object();
        for (size_t k = 0; k < c.wait_us.size() && k < job.per_rank.size(); ++k) {
          waits[std::to_string(job.per_rank[k].rank)] = Round3(c.wait_us[k]);
        }
        per_collective.push_back(
            {{"step", c.step}, {"kind", c.kind}, {"last_rank", c.last_rank}, {"wait_us", waits}});
      }
      out["job"]["per_collective"] = per_collective;
    } else {
      out["not_a_job"] = job.why_not;
    }
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const RankRow& r : rows) std::cout << r.text;
    std::cout << RanksTable(rows);
    // Labelled as `ttap scan DIR` labels it: the ranks' directory.
    const std::string dir = rows.empty() || rows[0].file.find('/') == std::string::npos
                                ? std::string("job")
                                : rows[0].file.substr(0, rows[0].file.rfind('/'));
    if (job.ok) std::cout << JobToText(job, rows, dir);
  }
  size_t findings = 0;
  for (const RankRow& r : rows) findings += r.findings;
  return findings > 0 || (job.ok && !job.late_ranks.empty()) ? 1 : 0;
}

}  // namespace ttap

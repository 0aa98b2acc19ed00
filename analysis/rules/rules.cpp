// The catalogue, RunRules (merge across steps, severity, window scores); see rules.h.
#include "analysis/rules/rules.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>

#include "analysis/base/median.h"
#include "analysis/causal/what_if.h"
#include "analysis/rules/rule_registry.h"
#include "analysis/rules/rule_util.h"

namespace ttap {

const std::vector<RuleInfo>& RuleCatalogue() {
  static const std::vector<RuleInfo> kRules = [] {
    std::vector<RuleInfo> rules;
    for (const RuleSpec& s : RuleRegistry()) {
      if (s.learned_category) rules.push_back(s.info);
    }
    return rules;
  }();
  return kRules;
}

const std::vector<RuleInfo>& CauseRuleCatalogue() {
  static const std::vector<RuleInfo> kRules = [] {
    std::vector<RuleInfo> rules;
    for (const RuleSpec& s : RuleRegistry()) {
      if (!s.learned_category && s.detect_causal) rules.push_back(s.info);
    }
    return rules;
  }();
  return kRules;
}

const RuleInfo& UnusualWindowRule() {
  static const RuleInfo kRule = [] {
    for (const RuleSpec& s : RuleRegistry()) {
      if (s.from_window_scorer) return s.info;
    }
    return RuleInfo{"TTA900", "unusual-window", "", ""};
  }();
  return kRule;
}

const RuleInfo* FindRule(const std::string& code) {
  const RuleSpec* spec = FindRuleSpec(code);
  return spec ? &spec->info : nullptr;
}

namespace {

Severity SeverityFor(double share, const RuleOptions& o) {
  if (share >= o.Get("severity_error_share", 0.5)) return Severity::kError;
  if (share >= o.Get("severity_warning_share", 0.05)) return Severity::kWarning;
  if (share >= o.Get("severity_info_share", 0.01)) return Severity::kInfo;
  return Severity::kHint;
}

std::string Pct(double share) { return FormatPercent(share); }
std::string Ms(double us) { return FormatMs(us); }

// The profiler's own recording cost inside a finding's CPU rows (ops, annotations, Python calls):
// the ops and Python calls recorded under each outermost one, at what the what-if takes out for
// each (ProfilerCost), at most 90% of the row's time (as TakeOutProfilerCost leaves a tenth).
// *recorded: how many; *span_ns: the rows' time. Scans at most |*budget| rows (shared by the
// findings of a run).
int64_t RecordedCostUnder(const Trace& trace, const Finding& f, const ProfilerCost& cost,
                          size_t* recorded, int64_t* span_ns, size_t* budget) {
  const EventTable& ev = trace.events;
  const std::set<int32_t> rows(f.rows.begin(), f.rows.end());
  int64_t total = 0;
  for (int32_t r : rows) {
    if (r < 0 || static_cast<size_t>(r) >= ev.size() || !IsCpuSide(ev.kind[r])) continue;
    if (UnderAnyOf(ev, r, rows)) continue;  // counted with the row around it
    int64_t under = 0;
    for (size_t i = static_cast<size_t>(r) + 1; i < ev.size() && ev.ts[i] < ev.end(r); ++i) {
      if (*budget == 0) return total;
      --*budget;
      if (ev.track[i] != ev.track[r]) continue;
      if (ev.kind[i] == EventKind::kCpuOp) {
        under += cost.per_op_ns;
        ++*recorded;
      } else if (ev.kind[i] == EventKind::kPythonFunction) {
        under += cost.per_frame_ns;
        ++*recorded;
      }
    }
    total += std::min<int64_t>(under, static_cast<int64_t>(ev.dur[r] * 0.9));
    *span_ns += ev.dur[r];
  }
  return total;
}

// Merges raw per-step findings of one cause.
Finding Merge(std::vector<Finding>& group, const RuleContext& ctx) {
  Finding out = group.front();
  out.per_step.clear();
  out.step_ids.clear();
  out.window_indices.clear();
  out.occurrences.clear();
  out.rows.clear();
  out.top_events.clear();
  std::map<std::string, EvidenceValue> evidence;
  std::map<std::string, int> mean_counts;  // how many steps gave each kMean number
  std::map<std::string, EvidenceEvent> events;
  std::set<int> windows;
  std::map<int64_t, double> per_step;
  double total_lost_us = 0;
  for (const Finding& f : group) {
    out.rows.insert(out.rows.end(), f.rows.begin(), f.rows.end());
    out.occurrences.insert(out.occurrences.end(), f.occurrences.begin(), f.occurrences.end());
    out.start_ns = std::min(out.start_ns, f.start_ns);
    out.end_ns = std::max(out.end_ns, f.end_ns);
    for (auto& [step, lost] : f.per_step) per_step[step] += lost;
    for (auto& [k, v] : f.evidence) {
      auto it = evidence.find(k);
      if (v.is_number && v.merge == EvidenceMerge::kMean) ++mean_counts[k];
      if (it == evidence.end() || !v.is_number) {
        evidence[k] = v;
      } else if (v.merge == EvidenceMerge::kMax) {
        it->second.number = std::max(it->second.number, v.number);
      } else {
        it->second.number += v.number;  // a sum; a mean is divided below
      }
    }
    for (const auto& e : f.top_events) {
      EvidenceEvent& m = events[e.name];
      m.name = e.name;
      m.count += e.count;
      m.total_us += e.total_us;
    }
    if (f.occurrences.empty()) {
      for (int w : ctx.WindowsOf(f.start_ns, f.end_ns)) windows.insert(w);
    }
    for (const auto& [a, b] : f.occurrences) {
      for (int w : ctx.WindowsOf(a, b)) windows.insert(w);
    }
  }
  for (auto& [step, lost] : per_step) {
    out.per_step.emplace_back(step, lost);
    out.step_ids.push_back(step);
    total_lost_us += lost;
  }
  out.window_indices.assign(windows.begin(), windows.end());
  // A text's figures are one step's (a detail's "36.95 ms on the CPU"): those of the step that
  // loses the median, not the last step's (an optimizer step of 20-37 ms, 25 ms on average, had
  // read 36.95 ms: its last step).
  if (group.size() > 2) {
    std::vector<const Finding*> by_loss;
    for (const Finding& f : group) by_loss.push_back(&f);
    auto lost = [](const Finding* f) {
      double l = 0;
      for (const auto& [step, us] : f->per_step) l += us;
      return l;
    };
    std::stable_sort(by_loss.begin(), by_loss.end(),
                     [&](const Finding* a, const Finding* b) { return lost(a) < lost(b); });
    for (const auto& [k, v] : by_loss[by_loss.size() / 2]->evidence) {
      if (!v.is_number) evidence[k] = v;
    }
  }
  for (const auto& [k, n] : mean_counts) {
    auto it = evidence.find(k);
    if (it != evidence.end() && it->second.is_number && n > 0) it->second.number /= n;
  }
  out.evidence = std::move(evidence);
  for (auto& [name, e] : events) out.top_events.push_back(e);
  std::sort(out.top_events.begin(), out.top_events.end(),
            [](const EvidenceEvent& a, const EvidenceEvent& b) { return a.total_us > b.total_us; });
  if (out.top_events.size() > 5) out.top_events.resize(5);
  // Per step over all analysed steps: what a fix would save on an average step.
  const int64_t step_ns = StepsNs(ctx);
  const double n_steps = std::max<size_t>(1, ctx.steps().size());
  out.time_lost_us_per_step = total_lost_us / n_steps;
  out.share_of_step = step_ns > 0 ? std::min(1.0, total_lost_us * 1000.0 / step_ns) : 0.0;
  out.evidence["steps_affected"] = {true, static_cast<double>(out.per_step.size()), ""};
  return out;
}

}  // namespace

std::string FindingMessage(const Finding& f) {
  const RuleSpec* spec = FindRuleSpec(f.code);
  const RuleInfo* info = spec ? &spec->info : nullptr;
  const bool idle_time = spec && spec->plan.role == CostRole::kIdleTime;
  const bool whole_run = OfWholeRun(f);
  const std::string per = whole_run ? "" : "/step";
  // (Under half a microsecond reads 0.000 ms: say what that means.)
  const std::string per_step =
      f.time_lost_us_per_step < 0.5 ? "no measurable time" : Ms(f.time_lost_us_per_step) + per;
  const std::string share = Pct(f.share_of_step);
  const std::string detected = Ms(Num(f, "detected_us_per_step")) + per;
  // Once the fixes that save more are in, this one may add much less (they recover the same
  // time): say so.
  const double after = Num(f, "saving_after_larger_fixes_us_per_step");
  const std::string after_text =
      f.evidence.count("saving_after_larger_fixes_us_per_step") &&
              after < 0.5 * f.time_lost_us_per_step && f.time_lost_us_per_step >= 1
          ? (after < 0.5 ? std::string(", nothing") : ", " + Ms(after) + per) +
                " after the larger fixes"
          : "";
  // What the fix saves on this run (what_if.h), or why it saves little.
  std::string note = TextOf(f, "saving_note");
  // Why it saves less than was measured: the profiler recorded it at a cost (RunRules).
  std::string recording = TextOf(f, "recording_note");
  // Why it may save nothing: it rests on the profiler's cost taken out (RunRules).
  const std::string profiler = TextOf(f, "profiler_note");
  if (!profiler.empty()) recording += (recording.empty() ? "" : "; ") + profiler;
  // A symptom of another finding's cause claims only what it adds once that cause is fixed.
  const std::string symptom_of = TextOf(f, "symptom_of");
  if (!symptom_of.empty()) {
    note = "after " + symptom_of + "'s fix, which removes most of these " +
           (spec && spec->plan.symptom_of_removed_waits ? "waits" : "launches") +
           (note.empty() ? "" : "; " + note);
  }
  const std::string saving =
      !spec || spec->plan.model == FixModel::kNone ? ""
      : note.empty()
          ? std::string(idle_time ? whole_run ? "; moving that work out of " + TheRun(f)
                                              : "; moving that work out of the step"
                                  : "; a fix") +
                " saves " + per_step + " (" + share + " of " +
                (whole_run ? TheRun(f) : "the step") +
                (TextOf(f, "share_without_profiler") == "yes" ? " without the profiler" : "") +
                after_text + (recording.empty() ? "" : "; " + recording) + ")"
          : "; a fix saves " + per_step + " (" + note + ")";
  // Idle time one step holds nearly all of (RunRules): a one-off stall.
  const std::string one_off =
      f.evidence.count("one_off_step")
          ? "; step " + std::to_string(static_cast<int64_t>(Num(f, "one_off_step"))) +
                " holds most of it: a one-off stall, not every step's"
          : "";
  if (spec && spec->message) return spec->message(f, detected, saving) + one_off;
  std::string text = info ? info->summary : f.name;
  std::string detail = TextOf(f, "detail");  // a detector's own words, with its numbers
  return text + (detail.empty() ? "" : ": " + detail) + saving + one_off;
}

namespace {

bool IsOneTimeFinding(const Finding& f) {
  const RuleSpec* spec = FindRuleSpec(f.code);
  return spec && spec->one_time;
}

// The leading steps of |spans| (AnalysedSteps) that may hold the cold start, 0 for none: each
// 3x the median of the steps after it or more, three steady ones left.
size_t ColdLeadingSteps(const std::vector<StepSpan>& spans) {
  // Steps are ProfilerStep#'s or a training loop's iterations (inferred from its optimizer
  // steps); a serving engine's marks (vLLM's execute_*) are no iterations of one program.
  if (spans.empty() || (spans.front().inferred && !spans.front().optimizer_marked)) return 0;
  size_t cold_steps = 0;
  for (size_t k = 0; k + 3 < spans.size(); ++k) {
    std::vector<int64_t> rest;
    for (size_t j = k + 1; j < spans.size(); ++j)
      rest.push_back(spans[j].end_ns - spans[j].start_ns);
    const int64_t typical = Median(std::move(rest), 0);
    if (spans[k].end_ns - spans[k].start_ns < 3 * typical) break;
    cold_steps = k + 1;
  }
  return cold_steps;
}

// A run without steps (a script profiled from its start), or with one recorded step, whose
// first part is its cold start: the time from the run's start to the end of the one-time calls
// that hold 90% of |cold|'s time, when work that repeats follows it: GPU activity (or, without
// a GPU, top-level framework ops) of at least two runs a name on average. (The rest of one cold
// call, a single forward pass's remaining layers, repeats little: a warm part is later calls.)
// 0 for none.
int64_t ColdPrefixNs(const Trace& trace, const Finding& cold) {
  std::vector<std::pair<int64_t, int64_t>> calls = cold.occurrences;  // (start, end)
  std::sort(calls.begin(), calls.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  int64_t total = 0, so_far = 0, cut = trace.span_start();
  for (const auto& [start, end] : calls) total += end - start;
  for (const auto& [start, end] : calls) {
    so_far += end - start;
    cut = std::max(cut, end);
    if (10 * so_far >= 9 * total) break;
  }
  if (total <= 0) return 0;
  const EventTable& ev = trace.events;
  // A cut inside an optimizer step (a custom Adam's first mul_ loading its kernels), or well
  // inside another op that ends before the run does, leaves the rest of that call, not a warm
  // part. (A wrapper around the whole run, model_inference, does not count; nor the end of the
  // op whose first call the cut ends, a first conv2d.)
  const int64_t warm_ns = trace.span_end() - cut;
  for (size_t i = 0; i < ev.size() && ev.ts[i] < cut; ++i) {
    if ((ev.kind[i] != EventKind::kCpuOp && ev.kind[i] != EventKind::kUserAnnotation) ||
        ev.end(i) <= cut) {
      continue;
    }
    const std::string_view name = trace.Name(i);
    if (StartsWith(name, "ProfilerStep#")) continue;
    if (StartsWith(name, "Optimizer.step#") ||
        (10 * (ev.end(i) - cut) > warm_ns && 10 * (trace.span_end() - ev.end(i)) > warm_ns)) {
      return 0;
    }
  }
  std::map<StringId, int> gpu_after, ops_after;  // runs a name after the cut
  bool has_gpu = false;
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    const bool gpu = k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset;
    has_gpu |= gpu;
    if (ev.ts[i] < cut) continue;
    if (gpu) gpu_after[ev.name[i]]++;
    if (k == EventKind::kCpuOp && ev.depth[i] == 0) ops_after[ev.name[i]]++;
  }
  const std::map<StringId, int>& after = has_gpu ? gpu_after : ops_after;
  int runs = 0;
  for (const auto& [name, n] : after) runs += n;
  return runs >= 2 && runs >= 2 * static_cast<int>(after.size()) ? cut - trace.span_start() : 0;
}

}  // namespace

RuleResult RunRulesSteadyFirst(const Trace& trace, const RuleOptions& options) {
  RuleResult all = RunRules(trace, options);
  if (options.Get("skip_leading_steps", 0) > 0 || options.Get("cold_start_prefix_ns", 0) > 0)
    return all;
  const Finding* cold_finding = nullptr;
  for (const Finding& f : all.findings) {
    if (IsOneTimeFinding(f) && f.severity <= Severity::kWarning) {
      cold_finding = &f;
      break;
    }
  }
  if (!cold_finding) return all;
  // Steps: the leading ones that hold the cold start. One span (no steps): its first part.
  const bool whole_run = all.time.step_numbers.size() == 1 && all.time.step_numbers[0] < 0;
  size_t cold = 0;
  int64_t prefix_ns = 0;
  std::vector<StepSpan> spans;
  if (all.time.steps.size() >= 4) {
    spans = AnalysedSteps(trace);
    cold = ColdLeadingSteps(spans);
  } else if (whole_run || all.time.steps.size() == 1) {
    prefix_ns = ColdPrefixNs(trace, *cold_finding);
  }
  if (cold == 0 && prefix_ns == 0) return all;
  std::set<int64_t> cold_numbers;
  int64_t cold_ns = prefix_ns;
  if (cold > 0) {
    for (size_t k = 0; k < cold; ++k) {
      cold_numbers.insert(spans[k].number);
      cold_ns += spans[k].end_ns - spans[k].start_ns;
    }
  }
  // How much of a finding is in the cold start: of its time lost in the cold steps, or of its
  // occurrences' time before the warm part.
  const int64_t warm_from = trace.span_start() + prefix_ns;
  auto in_cold_share = [&](const Finding& f) {
    double total = 0, in_cold = 0;
    if (cold > 0) {
      for (const auto& [step, lost] : f.per_step) {
        total += lost;
        if (cold_numbers.count(step)) in_cold += lost;
      }
    } else {
      for (const auto& [start, end] : f.occurrences) {
        total += static_cast<double>(end - start);
        in_cold += static_cast<double>(std::max<int64_t>(0, std::min(end, warm_from) - start));
      }
    }
    return total > 0 ? in_cold / total : 0.0;
  };
  // Another cause's finding that is the cold start's: nearly all in the cold steps; before a
  // warm part, every occurrence (its one figure is the whole run's: a 983 ms first copy does
  // not make the nine copies after it the cold start's).
  auto of_cold_start = [&](const Finding& f) {
    if (cold > 0) return in_cold_share(f) >= 0.8;
    return !f.occurrences.empty() &&
           std::all_of(f.occurrences.begin(), f.occurrences.end(),
                       [&](const auto& o) { return o.second <= warm_from; });
  };
  if (cold > 0 && in_cold_share(*cold_finding) < 0.8) return all;
  RuleOptions steady_options = options;
  if (cold > 0) steady_options.values["skip_leading_steps"] = static_cast<double>(cold);
  if (prefix_ns > 0) steady_options.values["cold_start_prefix_ns"] = static_cast<double>(prefix_ns);
  RuleResult out = RunRules(trace, steady_options);
  // A warm part whose own analysis finds a cold start at warning is none: the run's first calls
  // are spread over it (one cold forward pass, each layer's first call).
  if (prefix_ns > 0 && std::any_of(out.findings.begin(), out.findings.end(), [](const Finding& f) {
        return IsOneTimeFinding(f) && f.severity <= Severity::kWarning;
      })) {
    return all;
  }
  out.cold_steps = cold;
  out.cold_ns = cold_ns;
  // The cold start's own findings (the one-time ones, and those nearly all in it), with their
  // numbers per recorded step as the whole run's analysis gave them (what --format json's
  // per-step fields mean everywhere), and the total the cold start holds.
  std::vector<Finding> once;
  const double all_steps = static_cast<double>(std::max<size_t>(1, all.time.steps.size()));
  for (Finding& f : all.findings) {
    const bool one_time = IsOneTimeFinding(f);
    if (!one_time && !of_cold_start(f)) continue;
    // Another cause's finding of the cold start alone is their set-up seen another way (the
    // first step's CPU-bound convolutions are cuDNN choosing kernels): once, so at most info.
    if (!one_time) {
      f.severity = std::max(f.severity, Severity::kInfo);
      f.evidence["occurs"] = {false, 0,
                              cold > 0 ? "once (the cold steps)" : "once (the cold start)"};
    }
    // Its message speaks of the run, not of a step: a per-step figure averaged over the
    // recorded steps (30.9 ms/step, 95% of the step) beside the steady step's 1.4 ms reads as
    // every step's. (Its fields stay per recorded step.)
    Finding of_run = f;
    for (const char* key : {"detected_us_per_step", "saving_alone_us_per_step",
                            "saving_after_larger_fixes_us_per_step"}) {
      auto it = of_run.evidence.find(key);
      if (it != of_run.evidence.end() && it->second.is_number) it->second.number *= all_steps;
    }
    of_run.time_lost_us_per_step *= all_steps;
    of_run.per_step = {{-1, of_run.time_lost_us_per_step}};
    const double in_cold = in_cold_share(f);
    const std::string where =
        cold > 0 ? "the cold first " +
                       (cold == 1 ? std::string("step") : std::to_string(cold) + " steps") +
                       " of the " + std::to_string(all.time.steps.size()) + " recorded"
                 : "the run's one-time start (its first " + Ms(prefix_ns / 1000.0) +
                       ", before the warm part)";
    f.message = FindingMessage(of_run) + "; " +
                (in_cold >= 0.995 ? std::string("all") : "nearly all (" + Pct(in_cold) + ")") +
                " of it in " + where + ", analysed apart";
    once.push_back(std::move(f));
  }
  std::vector<Finding> ordered;
  std::vector<bool> first(out.findings.size());
  for (size_t i = 0; i < out.findings.size(); ++i) {
    first[i] = out.findings[i].severity <= Severity::kWarning && !IsOneTimeFinding(out.findings[i]);
    if (first[i]) ordered.push_back(std::move(out.findings[i]));
  }
  for (Finding& f : once) ordered.push_back(std::move(f));
  for (size_t i = 0; i < out.findings.size(); ++i) {
    if (!first[i]) ordered.push_back(std::move(out.findings[i]));
  }
  out.findings = std::move(ordered);
  return out;
}

std::string RuleResult::SavingsVerdict() const {
  if (trace_incomplete && joint_saving_ns <= 0) {
    return "what fixes would save cannot be judged: the trace lacks the GPU's activity (TTA016)";
  }
  // The GPU idles while the CPU runs work the trace cannot name: whether it is start-up
  // (a script's imports, compilation) or the loop's, and so what removing it saves, is unknown
  // (an Inductor run's 14.4 s read "this run could be 563.96x faster").
  if (cpu_side_missing) {
    return "what fixes would save cannot be judged: the trace records no CPU op, so what the "
           "CPU did while the GPU waited is unknown (record with ProfilerActivity.CPU, after a "
           "warm-up)";
  }
  char buf[64];
  // A run without steps whose cold start is analysed apart: the figures are its warm part's.
  std::snprintf(buf, sizeof(buf), "%s could be %.2fx faster",
                cold_steps == 0 && cold_ns > 0 ? "its warm part" : "this run", speedup);
  // Part of the GPU's side is missing: the figure counts only what the trace holds.
  if (trace_incomplete)
    return std::string(buf) + " by what the trace holds (its GPU side is missing: TTA016)";
  // Start-up is most of the saving: the process pays it once whatever the program does, so the
  // figure that speaks of the program is the other fixes' on the run without it.
  const int64_t one_time = std::min(one_time_saving_ns, joint_saving_ns);
  if (one_time > 0 && 2 * one_time >= joint_saving_ns && speedup >= 1.5 && run_ns > one_time) {
    const int64_t rest_run = run_ns - one_time;
    const int64_t rest_saving = std::clamp<int64_t>(joint_saving_ns - one_time, 0, rest_run - 1);
    char rest[64];
    std::snprintf(rest, sizeof(rest), "%.2fx faster",
                  static_cast<double>(rest_run) / static_cast<double>(rest_run - rest_saving));
    return std::string(buf) + ", but " + Ms(one_time / 1000.0) +
           " of that is one-time start-up (TTA015) the process pays once: without it the run "
           "takes " +
           Ms(rest_run / 1000.0) + ", which the other fixes could make " + rest;
  }
  // Fixes that save more together than their figures add up to: each figure is what its fix
  // saves alone, and where two causes bound the step side by side, fixing one leaves the other.
  if (claims_ns > 0 && joint_saving_ns * 20 > claims_ns * 23 &&
      (joint_saving_ns - claims_ns) * 50 >= run_ns) {
    const bool whole = time.step_numbers.size() == 1 && time.step_numbers[0] < 0;
    const double steps = std::max<double>(1.0, static_cast<double>(time.steps.size()));
    return std::string(buf) + " (more than the findings' figures add up to, " +
           Ms(claims_ns / 1000.0 / steps) + (whole ? "" : "/step") +
           ": each is what its fix saves alone, and causes that bound the step side by side "
           "save more fixed together)";
  }
  return buf;
}

std::string CpuRunBesideGpuText(const Trace& trace) {
  if (trace.devices.empty() || trace.devices.front().name.empty()) return "";
  const EventTable& ev = trace.events;
  std::vector<int8_t> seen(trace.strings.size(), 0);  // 1 a CPU conv, 2 a GPU op, 3 neither
  std::string cpu_conv;
  for (size_t i = 0; i < ev.size(); ++i) {
    const EventKind k = ev.kind[i];
    if (IsGpuKind(k) || IsLaunchKind(k)) return "";
    if (k != EventKind::kCpuOp) continue;
    int8_t& c = seen[ev.name[i]];
    if (c == 0) {
      const std::string_view n = trace.Name(i);
      c = Contains(n, "mkldnn_convolution") || Contains(n, "slow_conv") || Contains(n, "thnn_conv")
              ? 1
          : Contains(n, "cudnn") || Contains(n, "cuda") || Contains(n, "miopen") ||
                  Contains(n, "nccl")
              ? 2
              : 3;
      if (c == 1 && cpu_conv.empty()) cpu_conv = std::string(n);
    }
    if (c == 2) return "";
  }
  if (cpu_conv.empty()) return "";
  return "every op ran on the CPU though the trace lists a GPU (" + trace.devices.front().name +
         "; no kernel, no CUDA call; convolutions ran as " + cpu_conv +
         "): if the GPU was meant to run it, move the model and its inputs there "
         "(model.to(\"cuda\"), x.to(\"cuda\"))";
}

std::string HostStallsText(const Trace& trace, const std::vector<HostStall>& stalls) {
  if (stalls.empty()) return "";
  const HostStall& most =
      *std::max_element(stalls.begin(), stalls.end(), [&](const HostStall& a, const HostStall& b) {
        return trace.events.dur[a.row] < trace.events.dur[b.row];
      });
  std::string text = "the host stalled " + Ms(trace.events.dur[most.row] / 1000.0) + " in one " +
                     std::string(trace.Name(most.row)) + " call, where its " +
                     std::to_string(most.others) + " other calls took at most " +
                     Ms(most.longest_other_ns / 1000.0);
  if (stalls.size() > 1) text += " (and " + std::to_string(stalls.size() - 1) + " more such)";
  return text +
         ": the machine (paging, throttling, another process), not the code; these figures "
         "include it";
}

RuleResult RunRules(const Trace& trace, const RuleOptions& options) {
  RuleResult result;
  auto phase_start = std::chrono::steady_clock::now();
  auto end_phase = [&](const char* name) {
    auto now = std::chrono::steady_clock::now();
    result.phases.emplace_back(
        name, std::chrono::duration<double, std::milli>(now - phase_start).count());
    phase_start = now;
  };
  result.windows.resize(trace.windows.size());
  if (trace.events.size() == 0) return result;
  result.host_stalls = OneOffHostStalls(trace);
  result.cpu_run_beside_gpu = CpuRunBesideGpuText(trace);
  // The context's per-kernel intervals are the size of the trace: it goes before the costing,
  // whose replays are the run's peak.
  ColdStartCut cut;  // the cold start analysed apart (RunRulesSteadyFirst)
  cut.leading_steps = static_cast<size_t>(std::max(0.0, options.Get("skip_leading_steps", 0)));
  cut.prefix_ns = static_cast<int64_t>(std::max(0.0, options.Get("cold_start_prefix_ns", 0)));
  auto ctx_holder = std::make_unique<RuleContext>(trace, cut);
  RuleContext& ctx = *ctx_holder;
  std::vector<Finding> raw;
  // A detector's findings go when the options disable their code (disable_TTA0xx = 1).
  auto run = [&](auto&& detect) {
    const size_t before = raw.size();
    detect();
    if (raw.size() > before && options.Get("disable_" + raw[before].code, 0) != 0) {
      raw.resize(before);
    }
  };
  for (const RuleSpec& spec : RuleRegistry()) {
    if (spec.detect) run([&] { spec.detect(ctx, options, &raw); });
  }
  end_phase("rule detectors");
  // The causal model of the run: the detectors that read it, then the costing of every finding.
  // The rows the findings name stay node boundaries: their fixes rescale exactly their time.
  std::vector<int32_t> finding_rows;
  for (const Finding& f : raw)
    finding_rows.insert(finding_rows.end(), f.rows.begin(), f.rows.end());
  CausalGraph graph = BuildCausalGraph(trace, finding_rows, &ctx.first_calls(), cut);
  end_phase("causal graph");
  Replay base = RunReplay(graph);
  end_phase("replay");
  result.time = WhereTimeWent(trace, graph, base);
  end_phase("attribution");
  auto has_code = [&raw](const char* code) {
    return std::any_of(raw.begin(), raw.end(), [code](const Finding& f) { return f.code == code; });
  };
  std::vector<const RuleSpec*> found_before_graph;  // the codes the per-step detectors reported
  for (const RuleSpec& spec : RuleRegistry()) {
    if (has_code(spec.info.code)) found_before_graph.push_back(&spec);
  }
  for (const RuleSpec& spec : RuleRegistry()) {
    if (!spec.detect_causal) continue;
    if (spec.causal_only_if_absent &&
        std::count(found_before_graph.begin(), found_before_graph.end(), &spec) > 0) {
      continue;
    }
    run([&] { spec.detect_causal(ctx, graph, result.time, options, &raw); });
  }
  // The windows the learned scorer flagged that no finding overlaps (TTA900), per step: their
  // idle GPU time, costed below like every finding's.
  // A window is explained when a finding's extent (from its first to its last occurrence, over
  // the steps it merges) overlaps it. Adjacent unexplained windows make one finding.
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> extents;
  for (const Finding& f : raw) {
    auto [it, added] = extents.try_emplace({f.code, f.cause_key}, f.start_ns, f.end_ns);
    if (!added) {
      it->second.first = std::min(it->second.first, f.start_ns);
      it->second.second = std::max(it->second.second, f.end_ns);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> unexplained;
  for (const auto& [a, b] : options.unusual_windows) {
    const bool explained = std::any_of(
        extents.begin(), extents.end(),
        [&, a = a, b = b](const auto& e) { return e.second.first < b && a < e.second.second; });
    if (explained) continue;
    if (!unexplained.empty() && unexplained.back().second >= a) {
      unexplained.back().second = std::max(unexplained.back().second, b);
    } else {
      unexplained.emplace_back(a, b);
    }
  }
  for (const auto& [a, b] : unexplained) {
    for (size_t s = 0; s < ctx.steps().size(); ++s) {
      const AnalysedStep& step = ctx.steps()[s];
      const int64_t lo = std::max(a, step.start_ns), hi = std::min(b, step.end_ns);
      if (hi <= lo) continue;
      const int64_t idle = ctx.GpuIdle(lo, hi);
      if (idle <= 0) continue;
      Finding f = MakeRawFinding(ctx, UnusualWindowRule().code, static_cast<int>(s), lo, hi,
                                 idle / 1000.0, -1, "window@" + std::to_string(a));
      f.occurrences.emplace_back(lo, hi);
      raw.push_back(std::move(f));
    }
  }
  // Without the GPU side, idle GPU time says nothing about the run, and launch calls whose work
  // is missing are not launch overhead.
  auto spec_of = [](const Finding& f) { return FindRuleSpec(f.code); };
  if (std::any_of(raw.begin(), raw.end(), [&](const Finding& f) {
        const RuleSpec* s = spec_of(f);
        return s && s->marks_trace_incomplete;
      })) {
    raw.erase(std::remove_if(raw.begin(), raw.end(),
                             [&](const Finding& f) {
                               const RuleSpec* s = spec_of(f);
                               return s && s->needs_gpu_activity;
                             }),
              raw.end());
  }

  // Group by (code, cause).
  std::map<std::pair<std::string, std::string>, std::vector<Finding>> groups;
  for (auto& f : raw) groups[{f.code, f.cause_key}].push_back(std::move(f));
  const double min_share = options.Get("min_share", 0.001);
  for (auto& [key, group] : groups) {
    Finding f = Merge(group, ctx);
    // The detector's own measure: too small to report (an incomplete trace costs nothing itself).
    const RuleSpec* spec = FindRuleSpec(f.code);
    if (f.share_of_step < min_share && !(spec && spec->marks_trace_incomplete)) continue;
    result.findings.push_back(std::move(f));
  }
  end_phase("causal detectors");
  // The GPU's own work in the analysed steps: the profiler's cost taken out leaves it as it is.
  int64_t gpu_busy_in_steps_ns = 0;
  for (const AnalysedStep& s : ctx.steps())
    gpu_busy_in_steps_ns += ctx.GpuBusy(s.start_ns, s.end_ns);
  ctx_holder.reset();
  // What each fix saves on this run: the causal graph replayed with and without it.
  ProfilerCost profiler_cost;
  profiler_cost.per_op_ns =
      static_cast<int64_t>(1000 * options.Get("profiler_op_us", kProfiledOpNs / 1000.0));
  profiler_cost.per_frame_ns =
      static_cast<int64_t>(1000 * options.Get("profiler_frame_us", kProfiledFrameNs / 1000.0));
  std::vector<FixPlan> plans;
  for (const Finding& f : result.findings) {
    const RuleSpec* spec = FindRuleSpec(f.code);
    plans.push_back(spec ? spec->plan : FixPlan{});
  }
  FixCosting costing = CostFindings(trace, &graph, std::move(base), result.time, &result.findings,
                                    plans, profiler_cost);
  result.run_ns = costing.run_ns;
  result.traced_run_ns = costing.traced_run_ns;
  result.profiler_overhead_ns = costing.profiler_overhead_ns;
  result.profiled_ops = costing.profiled_ops;
  result.safe_saving_ns = costing.safe_saving_ns;
  result.joint_saving_ns = costing.joint_saving_ns;
  result.speedup = costing.speedup();
  int64_t untraced_claims_ns = 0;  // idle time under CPU work a trace without CPU ops cannot name
  for (const Finding& f : result.findings) {  // their claims: share_of_step is of the run
    const RuleSpec* spec = FindRuleSpec(f.code);
    const auto claim = static_cast<int64_t>(f.share_of_step * static_cast<double>(result.run_ns));
    result.claims_ns += claim;
    if (spec && spec->one_time) result.one_time_saving_ns += claim;
    if (Num(f, "no_cpu_ops") > 0) untraced_claims_ns += claim;
  }
  // Recorded without CPU activity (activities=[CUDA]): GPU work and runtime calls, no op, no
  // Python call, no annotation, and the CPU time it cannot name is most of what the findings
  // save (a first launch's lazy load the runtime calls show is still judged).
  bool cpu_recorded = false, gpu_recorded = false;
  for (size_t i = 0; i < trace.events.size() && !cpu_recorded; ++i) {
    const EventKind k = trace.events.kind[i];
    cpu_recorded = k == EventKind::kCpuOp || k == EventKind::kPythonFunction ||
                   k == EventKind::kUserAnnotation;
    gpu_recorded = gpu_recorded || IsGpuKind(k);
  }
  result.cpu_side_missing =
      gpu_recorded && !cpu_recorded && 2 * untraced_claims_ns >= result.joint_saving_ns;
  const StepAttribution& all = result.time.overall;
  const double gpu_share =
      all.total() > 0 ? static_cast<double>(all.gpu_ns()) / static_cast<double>(all.total()) : 0.0;
  const double compute_share =
      all.total() > 0 ? static_cast<double>(all.ns[static_cast<int>(Cause::kGpuMatmul)] +
                                            all.ns[static_cast<int>(Cause::kGpuKernel)]) /
                            static_cast<double>(all.total())
                      : 0.0;
  const size_t analysed_steps = result.time.steps.size();
  size_t scan_budget = size_t{1} << 24;  // RecordedCostUnder's rows, for all findings together
  auto incomplete = [](const Finding& f) {
    const RuleSpec* spec = FindRuleSpec(f.code);
    return spec && spec->marks_trace_incomplete;
  };
  // Where the profiler's own cost is worth saying, a share of the step is of the step without
  // it (the replay's), not of the recorded one the user sees: the messages say so.
  const bool profiler_free_shares = result.ProfilerCostMatters();
  for (Finding& f : result.findings) {
    const RuleSpec* spec = FindRuleSpec(f.code);
    if (profiler_free_shares) f.evidence["share_without_profiler"] = {false, 0, "yes"};
    // A run without steps whose cold start is analysed apart: its figures are its warm part's.
    if (cut.prefix_ns > 0 && OfWholeRun(f)) f.evidence["of_part"] = {false, 0, "the warm part"};
    // Idle time that one step holds nearly all of (a one-off host stall: a 7 ms allocation in
    // one of five steps) is no step's steady state: it says so, and is at most info.
    int64_t one_off_step = -1;
    if (spec && spec->plan.role == CostRole::kIdleTime && analysed_steps >= 3) {
      double total = 0, most = 0;
      for (const auto& [step, lost] : f.per_step) {
        total += lost;
        if (lost > most) {
          most = lost;
          one_off_step = step;
        }
      }
      if (total <= 0 || most < 0.8 * total) one_off_step = -1;
    }
    if (one_off_step >= 0) {
      f.evidence["one_off_step"] = {true, static_cast<double>(one_off_step), ""};
    }
    // Whether it happens once per process or recurs: TTA015 is one-time by definition; the
    // others say how many of the analysed steps they occur in.
    const size_t in_steps = static_cast<size_t>(Num(f, "steps_affected"));
    f.evidence["occurs"] = {false, 0,
                            spec && spec->one_time ? "one-time"
                            : one_off_step >= 0 ? "once (step " + std::to_string(one_off_step) + ")"
                            : analysed_steps <= 1 || in_steps >= analysed_steps
                                ? "every step"
                                : "in " + std::to_string(in_steps) + " of " +
                                      std::to_string(analysed_steps) + " steps"};
    f.severity = SeverityFor(f.share_of_step, options);
    if (one_off_step >= 0) f.severity = std::max(f.severity, Severity::kInfo);
    // A fix that saves a few microseconds per step is not worth a warning, whatever its share of
    // a microbenchmark's step (a 13 us drain in a 0.3 ms step).
    if (f.severity <= Severity::kWarning &&
        f.time_lost_us_per_step < options.Get("severity_warning_min_us", 25)) {
      f.severity = std::max(f.severity, Severity::kInfo);
    }
    // A CPU-bound region where the GPU is busy most of the step once the profiler's cost is out:
    // whether the CPU bounds the step at all rests on that cost, an estimate (3.5 us per
    // recorded op; recorded runs needed 1.3-9.4 us, bench/record) that is off by more than the
    // saving when the saving is under half of it. An H200 control, GPU-bound at 35.2 ms without
    // the profiler, was recorded at 68 ms a step in one run and 43 ms in the other.
    if (spec && spec->plan.role == CostRole::kLaunchBound && f.severity <= Severity::kWarning &&
        result.profiler_overhead_ns > 0 && result.run_ns > 0 &&
        static_cast<double>(gpu_busy_in_steps_ns) >= 0.75 * static_cast<double>(result.run_ns) &&
        f.time_lost_us_per_step * 1000.0 * static_cast<double>(analysed_steps) <
            0.5 * static_cast<double>(result.profiler_overhead_ns)) {
      f.severity = Severity::kInfo;
      f.evidence["profiler_note"] = {
          false, 0,
          "the GPU is busy " +
              Pct(static_cast<double>(gpu_busy_in_steps_ns) / static_cast<double>(result.run_ns)) +
              " of the step without the profiler, so this rests on the " +
              Ms(result.profiler_overhead_ns / 1000.0 / static_cast<double>(analysed_steps)) +
              "/step of the profiler's own cost taken out, an estimate less certain than the "
              "saving"};
    }
    if (incomplete(f)) {
      // Nothing to save, but nothing else can be trusted either.
      f.severity = Severity::kWarning;
      f.message = FindingMessage(f);
      continue;
    }
    // A saving under half of what the detector measured, where most of that is the profiler
    // recording the calls inside it (with_stack=True records every Python call): the run
    // without the profiler pays little of it, and a finding it keeps at info or below says so.
    std::string recording;
    if (result.profiler_overhead_ns > 0 && f.severity >= Severity::kInfo &&
        f.time_lost_us_per_step < 0.5 * Num(f, "detected_us_per_step")) {
      size_t recorded = 0;
      int64_t span_ns = 0;
      const int64_t recording_ns =
          RecordedCostUnder(trace, f, profiler_cost, &recorded, &span_ns, &scan_budget);
      if (span_ns > 0 && recording_ns * 2 >= span_ns) {
        recording =
            "most of its recorded time is the profiler's own: recording the " +
            std::to_string(recorded) + " ops and Python calls inside it takes " +
            (recording_ns * 10 >= span_ns * 9 - span_ns / 100
                 ? std::string("nearly all of it")
                 : "about " +
                       Pct(static_cast<double>(recording_ns) / static_cast<double>(span_ns)) +
                       " of it") +
            ", which the run without the profiler does not pay";
      }
    }
    if (f.severity == Severity::kHint) {
      // Why it saves little: a fix that makes kernels faster (tensor cores, fewer conversions)
      // saves little where those kernels are a small part of the path; a host-side fix, where
      // the GPU's computing (or its communication and copies) holds the path.
      const FixModel model = spec ? spec->plan.model : FixModel::kNone;
      const bool faster_kernels =
          model == FixModel::kTensorCores || model == FixModel::kRemoveConversions;
      const bool communication = model == FixModel::kOverlapCommunication ||
                                 model == FixModel::kBucketCollectives ||
                                 model == FixModel::kPeersOnTime;
      const bool copies = model == FixModel::kPinnedNonBlocking ||
                          model == FixModel::kBatchCopies || model == FixModel::kKeepOnDevice;
      std::string note = !recording.empty() ? recording
                         : faster_kernels   ? "these kernels are a small part of the critical path"
                         : communication    ? "the step has little compute to hide it behind"
                         : compute_share >= 0.5
                             ? "GPU-bound: the GPU computes " + Pct(compute_share) +
                                   " of the critical path, so this costs little here"
                         : gpu_share >= 0.5 && !copies
                             ? "the GPU's communication and copies hold " + Pct(gpu_share) +
                                   " of the critical path, so this costs little here"
                             : "other work on the critical path hides it";
      if (f.evidence.count("symptom_of") == 0) f.evidence["saving_note"] = {false, 0, note};
    } else if (!recording.empty()) {
      f.evidence["recording_note"] = {false, 0, recording};
    }
    f.message = FindingMessage(f);
  }
  std::sort(result.findings.begin(), result.findings.end(),
            [&](const Finding& a, const Finding& b) {
              // An incomplete trace comes first: it qualifies everything after it.
              if (incomplete(a) != incomplete(b)) return incomplete(a);
              // Then by severity, which follows the saving but for the findings kept at info
              // (a one-off stall, a saving that rests on the profiler's cost): those come after
              // the warnings whatever they save.
              if (a.severity != b.severity) return a.severity < b.severity;
              if (a.time_lost_us_per_step != b.time_lost_us_per_step) {
                return a.time_lost_us_per_step > b.time_lost_us_per_step;
              }
              return a.code < b.code;
            });
  result.trace_incomplete = std::any_of(result.findings.begin(), result.findings.end(), incomplete);
  end_phase("what-ifs");
  // Window scores from each window's avoidable time: every finding's replayed saving is spread
  // over the windows its occurrences touch, in proportion to the overlap; a window scores 0.2
  // (something is there) plus 0.8 x the share of it the fixes would save. Its category is the
  // finding that saves the most in it.
  const size_t n_windows = result.windows.size();
  std::vector<double> avoidable(n_windows, 0.0), best(n_windows, 0.0);
  std::vector<bool> touched(n_windows, false);
  const double n_steps = std::max<size_t>(1, result.time.steps.size());
  for (const Finding& f : result.findings) {
    std::vector<std::pair<int64_t, int64_t>> occ = f.occurrences;
    if (occ.empty()) occ.emplace_back(f.start_ns, f.end_ns);
    std::vector<std::pair<int, double>> overlap;
    double total_overlap = 0;
    for (int w : f.window_indices) {
      if (w < 0 || static_cast<size_t>(w) >= n_windows) continue;
      const Window& win = trace.windows[w];
      double o = 0;
      for (const auto& [a, b] : occ) {
        o += static_cast<double>(
            std::max<int64_t>(0, std::min(b, win.end_ns) - std::max(a, win.start_ns)));
      }
      if (o <= 0) o = 1;  // an instant occurrence still counts
      overlap.emplace_back(w, o);
      total_overlap += o;
    }
    const double saving_ns = f.time_lost_us_per_step * 1000.0 * n_steps;
    for (const auto& [w, o] : overlap) {
      const double part = total_overlap > 0 ? saving_ns * o / total_overlap : 0.0;
      avoidable[w] += part;
      touched[w] = true;
      if (part > best[w] || result.windows[w].category.empty()) {
        best[w] = std::max(best[w], part);
        result.windows[w].category = f.code;
      }
    }
  }
  for (size_t w = 0; w < n_windows; ++w) {
    if (!touched[w]) continue;
    const double span = std::max<int64_t>(1, trace.windows[w].end_ns - trace.windows[w].start_ns);
    result.windows[w].score = 0.2 + 0.8 * std::min(1.0, avoidable[w] / span);
  }
  result.trace_score = result.run_ns > 0
                           ? std::min(1.0, static_cast<double>(result.joint_saving_ns) /
                                               static_cast<double>(result.run_ns))
                           : 0.0;
  end_phase("window scores");
  return result;
}

}  // namespace ttap

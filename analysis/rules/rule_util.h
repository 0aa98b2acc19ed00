// Small helpers shared by the detectors (tta0NN_*.cpp): building a raw per-step finding, the
// cause key that merges findings across steps, name tests. Internal to analysis/.
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "analysis/base/string_util.h"
#include "analysis/model/findings.h"
#include "analysis/model/runtime_calls.h"
#include "analysis/rules/rule_context.h"
#include "analysis/rules/rules.h"

namespace ttap {

// An event the CPU side records as a span of work: an op, an annotation or a Python call.
inline bool IsCpuSide(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
         k == EventKind::kPythonFunction;
}

// Whether an enclosing event of |row| (the row itself excluded) is one of |rows|: a finding's
// nested rows are counted with the outermost.
inline bool UnderAnyOf(const EventTable& ev, int32_t row, const std::set<int32_t>& rows) {
  for (int32_t p = ev.parent[row], d = 0; p >= 0 && d < 256; p = ev.parent[p], ++d) {
    if (rows.count(p) > 0) return true;
  }
  return false;
}

// A raw finding for one step (|step| indexes ctx.steps()); RunRules merges raw findings with
// the same code and cause key.
inline Finding MakeRawFinding(const RuleContext& ctx, const char* code, int step, int64_t start_ns,
                              int64_t end_ns, double lost_us, int32_t anchor_row,
                              std::string cause_key) {
  Finding f;
  const RuleInfo* info = FindRule(code);
  f.code = code;
  f.name = info ? info->name : "";
  f.fix = info ? info->fix : "";
  f.start_ns = start_ns;
  f.end_ns = end_ns;
  int64_t step_number = step >= 0 ? ctx.steps()[step].number : -1;
  f.per_step.emplace_back(step_number, lost_us);
  f.anchor_row = anchor_row;
  f.cause_key = std::move(cause_key);
  return f;
}

// The raw finding of |key| in |by_cause| (one step's findings by cause), created on first use,
// its extent widened to cover [a, b) and [a, b) added to its occurrences.
inline Finding& CauseFinding(std::map<std::string, Finding>* by_cause, const RuleContext& ctx,
                             const char* code, int step, int64_t a, int64_t b, int32_t anchor,
                             const std::string& key) {
  auto it = by_cause->find(key);
  if (it == by_cause->end()) {
    it = by_cause->emplace(key, MakeRawFinding(ctx, code, step, a, b, 0, anchor, key)).first;
  }
  Finding& f = it->second;
  f.start_ns = std::min(f.start_ns, a);
  f.end_ns = std::max(f.end_ns, b);
  f.occurrences.emplace_back(a, b);
  return f;
}

// The analysed steps' wall time together, ns.
inline int64_t StepsNs(const RuleContext& ctx) {
  int64_t ns = 0;
  for (const AnalysedStep& s : ctx.steps()) ns += s.duration();
  return ns;
}
// Whether a finding is of a trace without steps: its one analysed span is the whole run, so its
// numbers are the run's, not a step's (the messages say "of the run", not "/step").
inline bool OfWholeRun(const Finding& f) {
  return f.per_step.size() == 1 && f.per_step[0].first < 0;
}
// What a finding of a trace without steps is of: "the run", or "the warm part" when the run's
// cold start is analysed apart (RunRulesSteadyFirst).
inline std::string TheRun(const Finding& f) {
  auto it = f.evidence.find("of_part");
  return it == f.evidence.end() ? "the run" : it->second.text;
}
// " in the step", or " in the run" for a trace without steps (its one analysed span): the
// detectors' own words for where they counted.
inline const char* InTheStep(const RuleContext& ctx) {
  const auto& steps = ctx.steps();
  return steps.size() == 1 && steps[0].number < 0
             ? ctx.warm_part_only() ? " in the warm part" : " in the run"
             : " in the step";
}

// Whether |row| is an op that makes a tensor of random numbers on the host: a random factory
// (aten::randn, aten::rand, ...) that launches no GPU work. A step that makes its input with
// torch.randn on the CPU and copies it over (a common benchmark) is fixed by drawing it on the GPU,
// not by moving the work elsewhere or pinning the buffer.
inline bool HostRandomOp(const RuleContext& ctx, int32_t row) {
  // Factories only: an in-place draw (uniform_, normal_ on its own) is mostly a parameter's
  // initialisation, which the model's construction on the device fixes, not this.
  static constexpr std::string_view kRandom[] = {
      "aten::randn",     "aten::rand",       "aten::randint",   "aten::randperm",    "aten::normal",
      "aten::bernoulli", "aten::randn_like", "aten::rand_like", "aten::randint_like"};
  const EventTable& ev = ctx.ev();
  if (row < 0 || ev.kind[row] != EventKind::kCpuOp) return false;
  const std::string_view name = ctx.Name(row);
  if (std::find(std::begin(kRandom), std::end(kRandom), name) == std::end(kRandom)) return false;
  for (size_t j = static_cast<size_t>(row) + 1; j < ev.size() && ev.ts[j] < ev.end(row); ++j) {
    if (ev.track[j] == ev.track[row] && IsLaunchKind(ev.kind[j]) && ev.link[j] >= 0) return false;
  }
  return true;
}
inline constexpr char kDrawOnGpu[] =
    "draw them on the GPU instead, e.g. torch.randn(..., device=\"cuda\"), and there is no host "
    "tensor to copy";

// Identifies a cause by the user-level op and the innermost python frame around |row|, so the
// same call site merges across steps while different call sites stay apart.
inline std::string CauseKey(const RuleContext& ctx, int32_t row) {
  if (row < 0) return "";
  std::string key(ctx.Name(row));
  int32_t frame = ctx.ev().Frame(row);
  if (frame >= 0) key += "|" + std::string(ctx.Name(frame));
  int32_t cs = static_cast<int32_t>(ctx.ev().CallStack(row));
  if (cs != 0) key += "|" + std::string(ctx.trace().strings.Get(ctx.ev().CallStack(row)));
  return key;
}

inline double Us(int64_t ns) { return ns / 1000.0; }

// printf-style formatting of one number, for "detail" texts.
inline std::string FormatNumber(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// A duration given in us, as "12.3 us" or "4.56 ms".
inline std::string Dur(double us) {
  return us >= 1000 ? FormatNumber("%.2f ms", us / 1000.0) : FormatNumber("%.1f us", us);
}

// A cpu_op that is an operator, not a record_function label: 2021 traces write ProfilerStep#N,
// Optimizer.step#... and the like as cpu_op ("Operator") too.
inline bool IsOperator(const RuleContext& ctx, int32_t row) {
  return ctx.ev().kind[row] == EventKind::kCpuOp && !Contains(ctx.Name(row), "#");
}

inline void AddNumber(Finding* f, const std::string& key, double v) {
  f->evidence[key] = EvidenceValue{true, v, ""};
}
// A per-step rate or ratio (GB/s, a speedup): a merged finding shows the steps' mean.
inline void AddMean(Finding* f, const std::string& key, double v) {
  f->evidence[key] = EvidenceValue{true, v, "", EvidenceMerge::kMean};
}
// A per-step extreme (the longest gap): a merged finding shows the steps' maximum.
inline void AddMax(Finding* f, const std::string& key, double v) {
  f->evidence[key] = EvidenceValue{true, v, "", EvidenceMerge::kMax};
}
// A byte count as people read it: "36.8 MiB", "8.0 KiB", "112 B".
inline std::string Bytes(double b) {
  if (b >= 1024.0 * 1024.0) return FormatNumber("%.1f MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return FormatNumber("%.1f KiB", b / 1024.0);
  return FormatNumber("%.0f B", b);
}

// A numeric evidence entry, 0 when absent.
inline double Num(const Finding& f, const std::string& key) {
  auto it = f.evidence.find(key);
  return it == f.evidence.end() ? 0.0 : it->second.number;
}
// Adds |v| to a numeric evidence entry (creating it) and returns the new total.
inline double AccumulateNumber(Finding* f, const std::string& key, double v) {
  const double total = Num(*f, key) + v;
  AddNumber(f, key, total);
  return total;
}

// A text evidence entry, "" when absent.
inline std::string TextOf(const Finding& f, const std::string& key) {
  auto it = f.evidence.find(key);
  return it == f.evidence.end() ? std::string() : it->second.text;
}
inline void AddText(Finding* f, const std::string& key, std::string v) {
  f->evidence[key] = EvidenceValue{false, 0, std::move(v)};
}
inline void AddEvent(Finding* f, std::string name, int64_t count, double total_us) {
  for (auto& e : f->top_events) {
    if (e.name == name) {
      e.count += count;
      e.total_us += total_us;
      return;
    }
  }
  f->top_events.push_back({std::move(name), count, total_us});
}

}  // namespace ttap

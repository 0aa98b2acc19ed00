// TTA021 anomaly-detection: autograd's anomaly mode left on in a training run. Its detector;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta021-anomaly-detection.
#include "analysis/rules/causal_detectors.h"

namespace ttap {

namespace {

// Python's traceback capture (traceback.py's extract_stack, torch/fx/traceback.py's
// format_stack): what anomaly mode runs for every autograd node an op creates.
bool IsStackCapture(std::string_view n) {
  return Contains(n, "traceback.py(") &&
         (EndsWith(n, ": extract_stack") || EndsWith(n, ": format_stack"));
}

// The ops of anomaly mode's NaN check of each gradient in backward: isnan, any, item.
bool IsGradientCheckOp(std::string_view n) {
  return n == "aten::isnan" || n == "aten::_is_any_true" || n == "aten::item";
}

}  // namespace

// torch.autograd.set_detect_anomaly(True) / detect_anomaly(): in forward, every op that creates
// an autograd node captures the Python traceback (a traceback.py call inside the op, recorded
// with with_stack=True); in backward, every function's gradients are checked for NaN
// (aten::isnan, aten::_is_any_true and aten::item inside autograd::engine::evaluate_function), a
// device sync each. Reported per step with at least anomaly_min_events (20) captures or checks,
// costed by removing them (kRemoveDebugWork: the captures' and checks' CPU time and waits go).
void DetectAnomalyDetection(const RuleContext& ctx, const CausalGraph& g, const TimeBreakdown& time,
                            const RuleOptions& o, std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  const double min_events = o.Get("anomaly_min_events", 20);
  const double min_share = o.Get("anomaly_share", 0.01);
  constexpr std::string_view kBackwardFunction = "autograd::engine::evaluate_function";
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    // Backward functions that check their gradients (the check's own _is_any_true).
    std::set<int32_t> checking;
    for (uint32_t i = lo; i < hi; ++i) {
      if (ev.kind[i] == EventKind::kCpuOp && ctx.Name(i) == "aten::_is_any_true") {
        const int32_t fn = ctx.AncestorWithPrefix(static_cast<int32_t>(i), kBackwardFunction);
        if (fn >= 0) checking.insert(fn);
      }
    }
    std::vector<int32_t> captures, checks;
    int64_t capture_ns = 0, check_ns = 0;
    for (uint32_t i = lo; i < hi; ++i) {
      const std::string_view n = ctx.Name(i);
      if (ev.kind[i] == EventKind::kPythonFunction && IsStackCapture(n)) {
        // Inside an op (C++ calling back into Python), and not inside another capture.
        bool in_op = false, nested = false;
        for (int32_t p = ev.parent[i], guard = 0; p >= 0 && guard < 256;
             p = ev.parent[p], ++guard) {
          if (ev.kind[p] == EventKind::kPythonFunction && IsStackCapture(ctx.Name(p)))
            nested = true;
          if (ev.kind[p] == EventKind::kCpuOp) {
            in_op = true;
            break;
          }
        }
        if (in_op && !nested) {
          captures.push_back(static_cast<int32_t>(i));
          capture_ns += ev.dur[i];
        }
      } else if (ev.kind[i] == EventKind::kCpuOp && IsGradientCheckOp(n) &&
                 checking.count(
                     ctx.AncestorWithPrefix(static_cast<int32_t>(i), kBackwardFunction))) {
        // The check's own ops only (item's _local_scalar_dense is under it).
        const int32_t parent = ev.parent[i];
        if (parent >= 0 && IsGradientCheckOp(ctx.Name(parent))) continue;
        checks.push_back(static_cast<int32_t>(i));
        check_ns += ev.dur[i];
      }
    }
    if (static_cast<double>(std::max(captures.size(), checking.size())) < min_events) continue;
    const int64_t lost = capture_ns + check_ns;
    if (step.duration() <= 0 || static_cast<double>(lost) < min_share * step.duration()) continue;
    const int32_t anchor = !captures.empty() ? captures.front() : checks.front();
    Finding f = MakeRawFinding(ctx, "TTA021", static_cast<int>(s), step.start_ns, step.end_ns,
                               Us(lost), anchor, "anomaly-detection");
    f.rows = captures;
    f.rows.insert(f.rows.end(), checks.begin(), checks.end());
    f.occurrences.emplace_back(step.start_ns, step.end_ns);
    AddNumber(&f, "stack_captures", static_cast<double>(captures.size()));
    AddNumber(&f, "stack_capture_us", Us(capture_ns));
    AddNumber(&f, "gradient_checks", static_cast<double>(checking.size()));
    AddNumber(&f, "gradient_check_us", Us(check_ns));
    AddText(&f, "detail",
            std::to_string(captures.size()) + " op(s)" + std::string(InTheStep(ctx)) +
                " captured their Python traceback (" + FormatNumber("%.1f ms", capture_ns / 1e6) +
                ") and " + std::to_string(checking.size()) +
                " backward function(s) check their gradients for NaN with a device sync each (" +
                FormatNumber("%.1f ms", check_ns / 1e6) +
                "); torch.autograd.set_detect_anomaly(True) / detect_anomaly() is a debugging "
                "aid: turn it off for training and profiling runs");
    out->push_back(std::move(f));
  }
}

}  // namespace ttap

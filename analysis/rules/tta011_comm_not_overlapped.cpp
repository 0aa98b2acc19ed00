// TTA011 comm-not-overlapped: collectives run with little concurrent compute. Its detector;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta011-comm-not-overlapped.
#include "analysis/rules/comm_detectors.h"

namespace ttap {

// The comm family's helpers it uses (comm_detectors.h).
using comm_detail::CollectiveOp;
using comm_detail::CollectStep;
using comm_detail::ShortName;
using comm_detail::StepComm;

namespace {

// A flagged step's overlap figures, which CommNotOverlappedMessage gives as means over the
// flagged steps: the overlap ratio and its threshold, the exposed and total communication.
void AddStepOverlap(Finding* f, double ratio, double min_overlap, int64_t exposed_ns,
                    int64_t comm_ns) {
  AddText(f, "overlap", FormatNumber("%.1f%%", 100.0 * ratio));
  AddMean(f, "overlap_ratio", ratio);
  AddMean(f, "overlap_min", min_overlap);
  AddMean(f, "step_exposed_us", exposed_ns / 1000.0);
  AddMean(f, "step_comm_us", comm_ns / 1000.0);
}

// Collectives the CPU runs (gloo: a CPU-only DDP job), per step: their time against the CPU ops
// that run beside them (backward's, on the main or autograd thread). The same thresholds; the
// finding's rows are the collectives' own (the what-if shortens them by what backward hides).
void DetectCpuCommNotOverlapped(const RuleContext& ctx, const RuleOptions& o,
                                std::vector<Finding>* out) {
  const EventTable& ev = ctx.ev();
  const double min_overlap = o.Get("comm_overlap_min", 0.70);
  const double min_share = o.Get("comm_exposed_share", 0.02);
  std::vector<int8_t> collective(ctx.trace().strings.size(), -1);  // per name id
  auto is_collective = [&](uint32_t i) {
    int8_t& known = collective[ev.name[i]];
    if (known < 0) known = IsCpuCollectiveName(ctx.Name(i)) ? 1 : 0;
    return known == 1;
  };
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    if (step.duration() <= 0) continue;
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::vector<uint32_t> rows;
    std::vector<Interval> comm, compute;
    for (uint32_t i = lo; i < hi; ++i) {
      const EventKind k = ev.kind[i];
      if (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation) continue;
      const int64_t a = std::max(ev.ts[i], step.start_ns), b = std::min(ev.end(i), step.end_ns);
      if (b <= a) continue;
      if (is_collective(i)) {
        // The outermost of nested ones.
        bool nested = false;
        for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 256 && !nested; p = ev.parent[p], ++g)
          nested = is_collective(static_cast<uint32_t>(p));
        if (!nested) {
          rows.push_back(i);
          comm.push_back({a, b});
        }
      } else if (k == EventKind::kCpuOp) {
        // An outermost op (under annotations only): the step's computing.
        bool outermost = true;
        for (int32_t p = ev.parent[i], g = 0; p >= 0 && g < 256 && outermost;
             p = ev.parent[p], ++g) {
          outermost = ev.kind[p] != EventKind::kCpuOp;
        }
        if (outermost) compute.push_back({a, b});
      }
    }
    if (rows.empty()) continue;
    MergeIntervals(&comm);
    MergeIntervals(&compute);
    int64_t comm_ns = 0, overlap_ns = 0;
    for (const Interval& c : comm) {
      comm_ns += c.second - c.first;
      overlap_ns += ClippedLength(compute, c.first, c.second);
    }
    const int64_t exposed = comm_ns - overlap_ns;
    const double ratio = comm_ns > 0 ? static_cast<double>(overlap_ns) / comm_ns : 1.0;
    if (ratio >= min_overlap || exposed < min_share * static_cast<double>(step.duration())) {
      continue;
    }
    int64_t compute_ns = 0, rows_ns = 0;
    for (const Interval& c : compute) compute_ns += c.second - c.first;
    for (uint32_t r : rows) rows_ns += ev.dur[r];
    // Each collective's part of the step's (merged) communication and exposed time: concurrent
    // ones (DDP's buckets on two gloo threads) share them.
    auto part = [&](uint32_t r, int64_t ns) {
      return static_cast<double>(ns) / 1000.0 * static_cast<double>(ev.dur[r]) /
             static_cast<double>(std::max<int64_t>(1, rows_ns));
    };
    std::map<std::string, Finding> by_cause;
    for (uint32_t r : rows) {
      const int32_t row = static_cast<int32_t>(r);
      Finding& f = CauseFinding(&by_cause, ctx, "TTA011", static_cast<int>(s), ev.ts[r], ev.end(r),
                                row, std::string(ctx.Name(r)));
      f.rows.push_back(row);
      f.per_step[0].second += part(r, exposed);
      AccumulateNumber(&f, "collectives", 1);
      AccumulateNumber(&f, "comm_us", part(r, comm_ns));
      AccumulateNumber(&f, "exposed_us", part(r, exposed));
      AddEvent(&f, std::string(ctx.Name(r)), 1, ev.dur[r] / 1000.0);
    }
    for (auto& [key, f] : by_cause) {
      AddText(&f, "op", key);
      AddText(&f, "cpu_collectives", "yes");
      AddStepOverlap(&f, ratio, min_overlap, exposed, comm_ns);
      AddMean(&f, "step_compute_us", compute_ns / 1000.0);
      out->push_back(std::move(f));
    }
  }
}

}  // namespace

// TTA011: per step, overlap ratio = |comm ∩ compute| / |comm| over the merged intervals of
// collective kernels and of the other kernels; flagged when the ratio is below comm_overlap_min
// and the exposed (compute-free) collective time is at least comm_exposed_share of the step.
// Lost: the exposed time, attributed to the op that issued each collective. A run without GPU
// activity: its CPU collectives (DetectCpuCommNotOverlapped).
void DetectCommNotOverlapped(const RuleContext& ctx, const RuleOptions& o,
                             std::vector<Finding>* out) {
  if (!ctx.has_gpu()) {
    DetectCpuCommNotOverlapped(ctx, o, out);
    return;
  }
  const EventTable& ev = ctx.ev();
  const double min_overlap = o.Get("comm_overlap_min", 0.70);
  const double min_share = o.Get("comm_exposed_share", 0.02);
  const size_t first_out = out->size();
  // The fix (overlapping the collectives with backward) applies to every step: the collectives
  // of steps below the thresholds join the finding of their call site, for its what-if only
  // (the detector's figures stay those of the flagged steps; the replay decides what they
  // cost: one that overlaps compute may still hold the stream that waits for it).
  std::map<std::string, std::vector<int32_t>> unflagged_rows;
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    StepComm sc = CollectStep(ctx, step);
    // Without compute in the step there is nothing to overlap with. A step whose collectives
    // all run after it (a graph replay a step behind) is read by its launches alone.
    if ((sc.comm_ns <= 0 && sc.launched_comm_ns <= 0) || sc.compute.empty() ||
        step.duration() <= 0) {
      continue;
    }
    // Two readings of the step: its time (the collectives running in it, whoever launched
    // them) and its launches (those it launched, wherever they ran: a graph replay that runs a
    // step behind its launch).
    const double min_exposed = min_share * static_cast<double>(step.duration());
    auto flagged = [&](double r, int64_t e) { return r < min_overlap && e >= min_exposed; };
    double ratio = sc.comm_ns > 0 ? static_cast<double>(sc.overlap_ns) / sc.comm_ns : 1.0;
    int64_t exposed = sc.comm_ns - sc.overlap_ns;
    int64_t comm_ns = sc.comm_ns;
    if (!flagged(ratio, exposed) && sc.launched_comm_ns > 0) {
      const double launched_ratio =
          1.0 - static_cast<double>(sc.launched_exposed_ns) / sc.launched_comm_ns;
      if (flagged(launched_ratio, sc.launched_exposed_ns)) {
        ratio = launched_ratio;
        exposed = sc.launched_exposed_ns;
        comm_ns = sc.launched_comm_ns;
      }
    }
    if (!flagged(ratio, exposed)) {
      for (size_t k = 0; k < sc.comm_rows.size(); ++k) {
        const int32_t op = CollectiveOp(ctx, sc.comm_rows[k]);
        unflagged_rows[op >= 0 ? CauseKey(ctx, op) : "(launch not traced)"].push_back(
            static_cast<int32_t>(sc.comm_rows[k]));
      }
      continue;
    }
    std::map<std::string, Finding> by_cause;
    for (size_t k = 0; k < sc.comm_rows.size(); ++k) {
      const uint32_t r = sc.comm_rows[k];
      const int32_t op = CollectiveOp(ctx, r);
      std::string key = op >= 0 ? CauseKey(ctx, op) : "(launch not traced)";
      Finding& f =
          CauseFinding(&by_cause, ctx, "TTA011", static_cast<int>(s), ev.ts[r], ev.end(r), op, key);
      f.rows.push_back(static_cast<int32_t>(r));
      f.per_step[0].second += sc.exposed_ns[k] / 1000.0;
      AccumulateNumber(&f, "collectives", 1);
      AccumulateNumber(&f, "comm_us", ev.dur[r] / 1000.0);
      AccumulateNumber(&f, "exposed_us", sc.exposed_ns[k] / 1000.0);
      // Point-to-point transfers (pipeline parallelism's sends and receives between stages)
      // wait for the peer stage: a pipeline bubble, not a collective backward could hide.
      // (NCCL runs all_to_all as send/receive kernels too: the issuing op tells them apart.)
      const std::string_view kernel = ctx.Name(r);
      const std::string_view issued_by = op >= 0 ? ctx.Name(op) : std::string_view();
      const bool collective_op =
          Contains(issued_by, "all_to_all") || Contains(issued_by, "alltoall") ||
          Contains(issued_by, "all_gather") || Contains(issued_by, "allgather") ||
          Contains(issued_by, "reduce") || Contains(issued_by, "broadcast");
      if (op >= 0 && !collective_op &&
          (Contains(kernel, "SendRecv") || Contains(kernel, "_Send") ||
           Contains(kernel, "_Recv"))) {
        AccumulateNumber(&f, "p2p_exposed_us", sc.exposed_ns[k] / 1000.0);
      }
      AddEvent(&f, ShortName(kernel), 1, ev.dur[r] / 1000.0);
    }
    for (auto& [key, f] : by_cause) {
      if (f.per_step[0].second <= 0) {  // exposed in the next step: its fix still moves them
        auto& rows = unflagged_rows[key];
        rows.insert(rows.end(), f.rows.begin(), f.rows.end());
        continue;
      }
      std::string op = f.anchor_row >= 0 ? std::string(ctx.Name(f.anchor_row)) : "";
      if (!op.empty()) AddText(&f, "op", op);
      if (ctx.forward_only()) AddText(&f, "forward_only", "yes");
      AddStepOverlap(&f, ratio, min_overlap, exposed, comm_ns);
      out->push_back(std::move(f));
    }
  }
  for (size_t i = first_out; i < out->size(); ++i) {
    auto it = unflagged_rows.find((*out)[i].cause_key);
    if (it == unflagged_rows.end()) continue;
    auto& rows = (*out)[i].rows;
    rows.insert(rows.end(), it->second.begin(), it->second.end());
    unflagged_rows.erase(it);
  }
}

std::string CommNotOverlappedMessage(const Finding& f, const std::string& detected,
                                     const std::string& saving) {
  const std::string op = TextOf(f, "op");
  const bool whole_run = OfWholeRun(f);
  // This call site's own collectives (the step's overlap ratio is the step's), per flagged step.
  const double steps = std::max(1.0, Num(f, "steps_affected"));
  const double exposed_us = Num(f, "exposed_us") / steps;
  const bool p2p = Num(f, "p2p_exposed_us") * 2 >= Num(f, "exposed_us") && exposed_us > 0;
  // Inference (tensor / expert parallel): each collective carries a layer's output to the next,
  // so DDP's overlap with backward and bucketing do not apply.
  const bool forward = !p2p && TextOf(f, "forward_only") == "yes";
  // Collectives the CPU runs (gloo), longer than the compute beside them: no overlap hides
  // what exceeds the step's computing.
  const bool cpu = TextOf(f, "cpu_collectives") == "yes";
  const double compute_us = Num(f, "step_compute_us");
  const std::string cpu_text =
      !cpu ? std::string()
      : compute_us < 0.5 * Num(f, "step_comm_us")
          ? "; the CPU runs these collectives (gloo), and the step computes for only " +
                FormatNumber("%.1f ms", compute_us / 1000.0) +
                ", which no overlap can stretch to cover them: send half the bytes (a DDP "
                "communication hook such as fp16_compress_hook; the saving below assumes it), "
                "all-reduce less often (accumulate gradients over several batches under DDP's "
                "no_sync()), or use a faster backend or network"
          : "; the CPU runs these collectives (gloo): start them during backward (DDP's "
            "gradient buckets) so the compute hides them";
  return "collectives run with little concurrent compute: collectives" +
         (op.empty() ? std::string() : " from " + op) + " overlap compute " +
         FormatNumber("%.0f%%", 100.0 * Num(f, "overlap_ratio")) + " of their time (below " +
         FormatNumber("%.0f%%", 100.0 * Num(f, "overlap_min")) + "); " +
         FormatNumber("%.3f", exposed_us / 1000.0) + " ms of " +
         FormatNumber("%.3f", Num(f, "comm_us") / steps / 1000.0) + " ms of its communication " +
         (whole_run ? "in " + TheRun(f) : std::string("per step")) + " is exposed" +
         (p2p ? std::string(
                    "; most of it is point-to-point transfers between pipeline stages waiting "
                    "for the peer stage: a pipeline bubble, which more micro-batches or an "
                    "interleaved (1F1B) schedule shrink, not overlap with backward")
              : std::string()) +
         (forward ? std::string(
                        "; the run has no backward: these are the forward's tensor- or "
                        "expert-parallel collectives, each waiting for its layer's output (hide "
                        "them behind a second micro-batch's compute, or shorten them: a fused "
                        "all-reduce + norm, a one-shot custom all-reduce, a lower tensor-parallel "
                        "degree)")
                  : std::string()) +
         cpu_text + saving;
}

}  // namespace ttap

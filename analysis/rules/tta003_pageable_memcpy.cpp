// TTA003 pageable-memcpy: copies between pageable host memory and the GPU. Its detector; registered
// in rule_registry.cpp, documented in docs/antipatterns.md#tta003-pageable-memcpy.
#include "analysis/rules/memory_detectors.h"

namespace ttap {

// The memory family's helpers it uses (memory_detectors.h).
using memory_detail::Count;
using memory_detail::HostMemoryOfCopy;
using memory_detail::IsD2H;
using memory_detail::IsH2D;
using memory_detail::IsPageable;
using memory_detail::IsSyncCopyCall;
using memory_detail::LaunchingOp;
using memory_detail::PinnedBandwidth;

// TTA003. A copy from or to pageable host memory cannot overlap with compute: the driver stages
// it through a pinned bounce buffer, the CPU thread blocks while it does, and the copy runs at
// reduced bandwidth serialised on its stream. Time lost, per copy:
//   - the copy's GPU duration: with pinned memory and non_blocking=True it would overlap with
//     kernels (on a side stream or behind queued work) instead of occupying the stream;
//   - for host-to-device copies, also the GPU idle time while the CPU was blocked in the launching
//     call (staging the pageable buffer): with a pinned source the call returns at once and the
//     CPU goes on launching work. Device-to-host copies are not charged for their call: that call
//     mostly waits for the queued kernels, which is TTA002's drain, counted there.
// Synchronous cudaMemcpy/hipMemcpy calls block the CPU whatever the memory: charged the GPU idle
// during the call plus the copy's duration (the call's duration when no GPU copy is linked).
// This is an upper bound on what pinning saves: overlap is not guaranteed when the consumer of
// the copy is the very next kernel.
void DetectPageableMemcpy(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_us = o.Get("pageable_min_us", 0);
  const auto [pinned_gbps, pinned_source] = PinnedBandwidth(ctx);
  std::vector<char> counted(ev.size(), 0);  // launch rows already charged through their copy
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<std::string, Finding> by_cause;
    const uint32_t step_lo = lo;  // (a structured binding no lambda may capture in C++17)
    auto charge = [&](int32_t row, int32_t launch, int64_t a, int64_t b, int64_t lost_ns,
                      int64_t bytes, int64_t copy_ns, std::string_view what) {
      int32_t anchor = launch >= 0 ? LaunchingOp(ctx, launch) : -1;
      std::string key = anchor >= 0 ? CauseKey(ctx, anchor) : "(no launch)";
      Finding& f = CauseFinding(&by_cause, ctx, "TTA003", static_cast<int>(s), a, b, anchor, key);
      f.rows.push_back(row);
      f.per_step[0].second += Us(lost_ns);
      AccumulateNumber(&f, "copies", 1);
      if (bytes > 0) AccumulateNumber(&f, "bytes", static_cast<double>(bytes));
      AccumulateNumber(&f, "copy_us", Us(copy_ns));
      if (anchor >= 0) AddText(&f, "op", std::string(ctx.Name(anchor)));
      // A host-to-device copy of what the op just before it drew at random on the host.
      if (anchor >= 0 && IsH2D(what)) {
        for (int64_t j = static_cast<int64_t>(anchor) - 1; j >= step_lo; --j) {
          if (ev.track[j] != ev.track[anchor] || ev.end(j) > ev.ts[anchor]) continue;
          if (ev.kind[j] != EventKind::kCpuOp || ev.depth[j] != ev.depth[anchor]) continue;
          if (HostRandomOp(ctx, static_cast<int32_t>(j))) {
            AddText(&f, "host_random", std::string(ctx.Name(static_cast<int32_t>(j))));
          }
          break;
        }
      }
      AddEvent(&f, std::string(what), 1, Us(copy_ns));
    };
    for (uint32_t i = lo; i < hi; ++i) {
      const std::string_view name = ctx.Name(i);
      if (ev.kind[i] == EventKind::kMemcpy && IsPageable(name)) {
        const int32_t launch = ev.link[i];
        // `.item()`'s read-back of a scalar into a pageable buffer the user never sees: its wait
        // is TTA002's, and there is no buffer to pin.
        if (launch >= 0 && IsD2H(name) && ev.bytes[i] >= 0 &&
            ev.bytes[i] < kBandwidthCopyMinBytes &&
            ctx.AncestorWithPrefix(launch, "aten::_local_scalar_dense") >= 0) {
          counted[launch] = 1;
          continue;
        }
        // A one-time copy (a model's parameters moved to the device once, under its .to()):
        // TTA015's start-up, not a buffer copied every step.
        if (launch >= 0 && ctx.InModelSetup(launch)) {
          counted[launch] = 1;
          continue;
        }
        int64_t lost = ev.dur[i];
        int64_t a = ev.ts[i];
        if (launch >= 0) {
          counted[launch] = 1;
          a = std::min(a, ev.ts[launch]);
          if (IsH2D(name) || IsSyncCopyCall(ctx.RuntimeFlags(launch))) {
            lost += ctx.GpuIdle(ev.ts[launch], ev.end(launch));
          }
        }
        charge(static_cast<int32_t>(i), launch, a, ev.end(i), lost, ev.bytes[i], ev.dur[i], name);
      }
    }
    // Synchronous copy calls whose copy was not pageable (or is not in the trace).
    for (uint32_t i = lo; i < hi; ++i) {
      if (!IsLaunchKind(ev.kind[i]) || counted[i]) continue;
      const int32_t gpu = ev.link[i];
      // ROCm copies every host buffer with hipMemcpyWithStream, pinned or not, and names the
      // host side "Host": it counts when the call blocked well beyond its copy (waiting for the
      // stream), or when it waited for a copy of 1 MiB or more far slower than the pinned
      // bandwidth of the GPU's host link allows (staged from pageable memory: SlowerThanPinned).
      const bool any_host_copy = (ctx.RuntimeFlags(i) & kRuntimeAnyHostCopy) != 0;
      const bool staged =
          any_host_copy && gpu >= 0 && ev.ts[gpu] < ev.end(i) &&
          HostMemoryOfCopy(ctx, static_cast<uint32_t>(gpu), pinned_gbps) == HostMemory::kPageable;
      // A small read-back that blocks (ROCm's `.item()` is one hipMemcpyWithStream) is a host
      // sync, TTA002's: the host needs the value now, and pinning it saves nothing.
      const bool small_read = gpu >= 0 && IsD2H(ctx.Name(gpu)) && ev.bytes[gpu] >= 0 &&
                              ev.bytes[gpu] < kBandwidthCopyMinBytes;
      const bool blocked_rocm_copy =
          any_host_copy && !small_read &&
          (ev.dur[i] > 2 * (gpu >= 0 ? ev.dur[gpu] : 0) + 50000 || staged);
      if (!IsSyncCopyCall(ctx.RuntimeFlags(i)) && !blocked_rocm_copy) continue;
      if (gpu >= 0 && !IsHostCopy(ctx.Name(gpu))) continue;     // DtoD
      if (ctx.InModelSetup(static_cast<int32_t>(i))) continue;  // one-time (above)
      const int64_t copy_ns = gpu >= 0 ? ev.dur[gpu] : 0;
      const int64_t lost = gpu >= 0 ? ctx.GpuIdle(ev.ts[i], ev.end(i)) + copy_ns : ev.dur[i];
      const int64_t b = gpu >= 0 ? std::max(ev.end(i), ev.end(gpu)) : ev.end(i);
      charge(static_cast<int32_t>(i), static_cast<int32_t>(i), ev.ts[i], b, lost,
             gpu >= 0 ? ev.bytes[gpu] : -1, copy_ns, ctx.Name(i));
    }
    for (auto& [key, f] : by_cause) {
      if (f.per_step[0].second < min_us) continue;
      const double n = Num(f, "copies");
      std::string op = f.evidence.count("op") ? f.evidence["op"].text : "";
      const std::string random = TextOf(f, "host_random");
      AddText(&f, "detail",
              Count(n) + " pageable/synchronous cop" + (n == 1 ? "y" : "ies") + InTheStep(ctx) +
                  std::string(" (") + Bytes(Num(f, "bytes")) + ", " + Dur(Num(f, "copy_us")) +
                  " on the GPU)" + (op.empty() ? "" : " from " + op) +
                  (random.empty() ? "; pin the host buffer and copy with non_blocking=True"
                                  : ", of random numbers " + random +
                                        " drew on the CPU just before: " + kDrawOnGpu +
                                        "; else pin the host buffer and copy with "
                                        "non_blocking=True"));
      if (pinned_gbps > 0) {
        // The what-if (PinCopies) copies at this bandwidth.
        AddMean(&f, "pinned_gbps", pinned_gbps);
        AddText(&f, "pinned_bandwidth",
                FormatNumber("%.0f", pinned_gbps) + " GB/s (" + pinned_source + ")");
      }
      out->push_back(std::move(f));
    }
  }
}

}  // namespace ttap

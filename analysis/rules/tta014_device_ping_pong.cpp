// TTA014 device-ping-pong: the same data copied to the host and back every step. Its detector;
// registered in rule_registry.cpp, documented in docs/antipatterns.md#tta014-device-ping-pong.
#include "analysis/rules/memory_detectors.h"

namespace ttap {

// The memory family's helpers it uses (memory_detectors.h).
using memory_detail::Count;
using memory_detail::HostMemoryOfCopy;
using memory_detail::IsD2H;
using memory_detail::IsH2D;
using memory_detail::LaunchingOp;
using memory_detail::PinnedBandwidth;

// TTA014. The same tensors moved to the host and back within a step (CPU offload, .cpu() then
// .cuda(), numpy round trips): a device-to-host copy followed, later in the step, by a
// host-to-device copy of exactly the same size and the same host memory (pinned or pageable,
// where CUDA names it or, on ROCm, the timing tells: a copy into pinned memory and one from
// pageable memory are different tensors). Each host-to-device copy is paired with the earliest such
// unpaired device-to-host copy. A copy belongs to the step that launched it (its GPU time may fall
// in a later step where the stream runs far behind its launches). Flagged when the paired bytes
// reach ping_pong_min_bytes (1 MiB) in a step, so that a few scalars read back do not count. Time
// lost = the durations of both copies of every pair (keeping the data on the device removes them;
// the synchronisation of the device-to-host copy is TTA002's business).
void DetectDevicePingPong(const RuleContext& ctx, const RuleOptions& o, std::vector<Finding>* out) {
  if (!ctx.has_gpu()) return;
  const EventTable& ev = ctx.ev();
  const double min_bytes = o.Get("ping_pong_min_bytes", 1024.0 * 1024.0);
  const double pinned_gbps = PinnedBandwidth(ctx).first;
  for (size_t s = 0; s < ctx.steps().size(); ++s) {
    const AnalysedStep& step = ctx.steps()[s];
    auto [lo, hi] = ctx.RowsIn(step.start_ns, step.end_ns);
    std::map<int64_t, std::vector<uint32_t>> pending;  // bytes -> unpaired D2H rows, in order
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (uint32_t r = lo; r < hi; ++r) {
      // The copies the step launched, in launch order (and those without a launch call, where
      // they ran).
      uint32_t i = r;
      if (IsLaunchKind(ev.kind[r]) && ev.link[r] >= 0) {
        i = static_cast<uint32_t>(ev.link[r]);
      } else if (ev.link[r] >= 0) {
        continue;
      }
      if (ev.kind[i] != EventKind::kMemcpy || ev.bytes[i] <= 0) continue;
      const std::string_view name = ctx.Name(i);
      if (IsD2H(name)) {
        pending[ev.bytes[i]].push_back(i);
      } else if (IsH2D(name)) {
        auto it = pending.find(ev.bytes[i]);
        if (it == pending.end() || it->second.empty()) continue;
        // A buffer that goes out and comes back is one host buffer: a copy into pinned memory
        // and one from pageable memory are different tensors of the same size (named by CUDA,
        // told by their timing on ROCm).
        const HostMemory back = HostMemoryOfCopy(ctx, i, pinned_gbps);
        auto out_it = std::find_if(it->second.begin(), it->second.end(), [&](uint32_t d) {
          const HostMemory out = HostMemoryOfCopy(ctx, d, pinned_gbps);
          return out == HostMemory::kUnknown || back == HostMemory::kUnknown || out == back;
        });
        if (out_it == it->second.end()) continue;
        pairs.emplace_back(*out_it, i);
        it->second.erase(out_it);
      }
    }
    if (pairs.empty()) continue;
    double bytes = 0;
    int64_t d2h_ns = 0, h2d_ns = 0;
    for (auto& [d, h] : pairs) {
      bytes += static_cast<double>(ev.bytes[h]);
      d2h_ns += ev.dur[d];
      h2d_ns += ev.dur[h];
    }
    if (bytes < min_bytes) continue;
    const int32_t anchor = LaunchingOp(ctx, ev.link[pairs.front().first]);
    std::string key = anchor >= 0 ? CauseKey(ctx, anchor) : "(no launch)";
    Finding f = MakeRawFinding(ctx, "TTA014", static_cast<int>(s), ev.ts[pairs.front().first],
                               ev.end(pairs.back().second), Us(d2h_ns + h2d_ns), anchor, key);
    for (auto& [d, h] : pairs) {
      f.rows.push_back(static_cast<int32_t>(d));
      f.rows.push_back(static_cast<int32_t>(h));
      f.start_ns = std::min(f.start_ns, ev.ts[d]);
      f.end_ns = std::max(f.end_ns, ev.end(h));
      AddEvent(&f, std::string(ctx.Name(d)), 1, Us(ev.dur[d]));
      AddEvent(&f, std::string(ctx.Name(h)), 1, Us(ev.dur[h]));
    }
    AddNumber(&f, "round_trips", static_cast<double>(pairs.size()));
    AddNumber(&f, "bytes", bytes);
    AddNumber(&f, "d2h_us", Us(d2h_ns));
    AddNumber(&f, "h2d_us", Us(h2d_ns));
    if (anchor >= 0) AddText(&f, "op", std::string(ctx.Name(anchor)));
    AddText(&f, "detail",
            Count(static_cast<double>(pairs.size())) + " tensor" + (pairs.size() == 1 ? "" : "s") +
                " (" + Bytes(bytes) + ") copied to the host and back" +
                std::string(InTheStep(ctx)) + " (" + Dur(Us(d2h_ns)) + " out, " + Dur(Us(h2d_ns)) +
                " back)" + (anchor >= 0 ? ", out via " + std::string(ctx.Name(anchor)) : ""));
    out->push_back(std::move(f));
  }
}

}  // namespace ttap

// JSON and text rendering of trace statistics; see stats_report.h.
#include "server/stats_report.h"

#include <cmath>
#include <cstdio>

#include "analysis/base/string_util.h"

namespace ttap {

namespace {

double Us(int64_t ns) { return ns / 1000.0; }
double Round2(double v) { return std::round(v * 100.0) / 100.0; }

nlohmann::json BreakdownJson(const Breakdown& b) {
  return {{"span_us", Us(b.span_ns)},
          {"gpu_active_us", Us(b.kernel_ns)},
          {"data_movement_us", Us(b.data_movement_ns)},
          {"idle_us", Us(b.idle_ns)},
          {"gpu_active_pct", Round2(b.Pct(b.kernel_ns))},
          {"data_movement_pct", Round2(b.Pct(b.data_movement_ns))},
          {"idle_pct", Round2(b.Pct(b.idle_ns))}};
}

nlohmann::json NamesJson(const Trace& t, const std::vector<NameSummary>& v, int64_t total) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : v) {
    nlohmann::json j = {{"name", std::string(t.strings.Get(k.name))},
                        {"count", k.count},
                        {"total_us", Us(k.total_ns)},
                        {"mean_us", k.count ? Us(k.total_ns) / k.count : 0.0},
                        {"max_us", Us(k.max_ns)}};
    if (total > 0) j["share_pct"] = Round2(100.0 * k.total_ns / total);
    out.push_back(std::move(j));
  }
  return out;
}

std::string Fmt(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, a);
  return buf;
}

}  // namespace

nlohmann::json ImportStatsToJson(const ImportStats& s) {
  nlohmann::json j = {{"json_bytes", s.json_bytes},
                      {"elements", s.elements},
                      {"events", s.events},
                      {"metadata", s.metadata},
                      {"flows", s.flows},
                      {"counters", s.counters},
                      {"skipped_total", s.total_skipped()},
                      {"skipped", s.skipped},
                      {"unknown_categories", s.unknown_categories},
                      {"gpu_without_launch", s.gpu_without_launch}};
  if (!s.first_error.empty()) j["first_error"] = s.first_error;
  if (s.step_markers_ignored > 0) j["step_markers_ignored"] = s.step_markers_ignored;
  if (s.unknown_categories_other > 0) {
    j["unknown_categories_other"] = s.unknown_categories_other;  // beyond the first 256 names
  }
  return j;
}

nlohmann::json AttributionJson(const Trace& t, const StepAttribution& a) {
  nlohmann::json causes = nlohmann::json::object();
  for (int c = 0; c < kCauseCount; ++c) {
    if (a.ns[c] > 0) causes[CauseName(static_cast<Cause>(c))] = Us(a.ns[c]);
  }
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < a.cpu_ops.size() && i < 10; ++i) {
    ops.push_back({{"name", std::string(t.strings.Get(a.cpu_ops[i].first))},
                   {"us", Us(a.cpu_ops[i].second)}});
  }
  return {{"wall_us", Us(a.total())}, {"causes_us", causes}, {"cpu_work_by_op", ops}};
}

nlohmann::json TimeJson(const Trace& t, const TimeBreakdown& tb) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t k = 0; k < tb.steps.size(); ++k) {
    nlohmann::json sj = AttributionJson(t, tb.steps[k]);
    sj["step"] = tb.step_numbers[k];
    steps.push_back(std::move(sj));
  }
  return {{"overall", AttributionJson(t, tb.overall)},
          {"steps", steps},
          {"replay_max_error", Round2(tb.replay_max_error * 100.0) / 100.0}};
}

nlohmann::json RankStatsToJson(const Trace& t, const TraceSummary& s, const TimeBreakdown& time) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : t.devices) {
    if (!d.used) continue;
    nlohmann::json dj = {{"id", d.id}, {"name", d.name}};
    if (d.compute_major >= 0)
      dj["compute_capability"] =
          std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor);
    if (d.total_memory >= 0) dj["total_memory_bytes"] = d.total_memory;
    if (d.num_sms >= 0) dj["sms"] = d.num_sms;
    devices.push_back(std::move(dj));
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& st : s.steps) {
    nlohmann::json sj = BreakdownJson(st.breakdown);
    sj["step"] = st.number;
    sj["start_us"] = Us(st.start_ns);
    sj["end_us"] = Us(st.end_ns);
    sj["cpu_us"] = Us(st.cpu_ns);
    sj["gpu_activities"] = st.kernels;
    steps.push_back(std::move(sj));
  }
  nlohmann::json streams = nlohmann::json::array();
  for (const auto& ss : s.streams) {
    streams.push_back({{"device", ss.device},
                       {"stream", ss.stream},
                       {"activities", ss.count},
                       {"kernel_us", Us(ss.kernel_ns)},
                       {"memcpy_us", Us(ss.memcpy_ns)},
                       {"memset_us", Us(ss.memset_ns)},
                       {"busy_us", Us(ss.busy_ns)},
                       {"idle_us", Us(ss.span_ns - ss.busy_ns)}});
  }
  nlohmann::json counts = nlohmann::json::object();
  for (const auto& [k, v] : s.counts) counts[EventKindName(k)] = v;
  const HtaFigures& h = s.hta;
  nlohmann::json hta = {{"idle_time_us", h.idle_time_us},
                        {"compute_time_us", h.compute_time_us},
                        {"non_compute_time_us", h.non_compute_time_us},
                        {"kernel_time_us", h.kernel_time_us},
                        {"comm_comp_overlap_pct", nullptr},
                        {"iterations", h.iterations},
                        {"gpu_events_considered", h.gpu_events_considered},
                        {"last_step_filter_applied", h.last_step_filter_applied}};
  if (h.comm_comp_overlap_pct) hta["comm_comp_overlap_pct"] = *h.comm_comp_overlap_pct;
  nlohmann::json windows = {{"count", t.windows.size()},
                            {"span_start_us", Us(t.span_start())},
                            {"span_end_us", Us(t.span_end())}};
  return {{"rank", t.rank},
          {"rank_source", t.rank_source},
          {"world_size", t.world_size >= 0 ? nlohmann::json(t.world_size) : nlohmann::json()},
          {"device", {{"type", s.device_type}, {"devices", devices}}},
          {"format", t.bare_array ? "legacy array" : "kineto object"},
          {"events", t.events.size()},
          {"counts", counts},
          {"steps", steps},
          {"breakdown", BreakdownJson(s.overall)},
          {"streams", streams},
          {"top_kernels", NamesJson(t, s.top_kernels, s.total_kernel_ns)},
          {"top_cpu_ops", NamesJson(t, s.top_cpu_ops, 0)},
          {"windows", windows},
          {"hta", hta},
          {"where_the_time_went", TimeJson(t, time)}};
}

std::string RankStatsToText(const Trace& t, const TraceSummary& s, const TimeBreakdown& time) {
  std::string o;
  auto line = [&](const std::string& x) { o += x + "\n"; };
  std::string devs;
  for (const auto& d : t.devices) {
    if (!d.used) continue;
    if (!devs.empty()) devs += ", ";
    devs += (d.name.empty() ? "device " + std::to_string(d.id) : d.name);
  }
  line("rank " + std::to_string(t.rank) + " (" + t.rank_source + ") - " + s.device_type +
       (devs.empty() ? "" : " [" + devs + "]") + " - " +
       (t.steps.empty() && time.steps.size() > 1
            ? "no ProfilerStep, " + std::to_string(time.steps.size()) + " steps inferred"
            : std::to_string(t.steps.size()) + " steps") +
       " - " + std::to_string(t.events.size()) + " events");
  if (!s.steps.empty()) {
    line("  step        time(ms)  GPU active  data movement    idle  GPU activities");
    for (const auto& st : s.steps) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "  %-10lld %9.3f %10.1f%% %13.1f%% %6.1f%% %15lld",
                    static_cast<long long>(st.number), st.breakdown.span_ns / 1e6,
                    st.breakdown.Pct(st.breakdown.kernel_ns),
                    st.breakdown.Pct(st.breakdown.data_movement_ns),
                    st.breakdown.Pct(st.breakdown.idle_ns), static_cast<long long>(st.kernels));
      line(buf);
    }
  }
  const Breakdown& b = s.overall;
  line("  overall: GPU active " + Fmt("%.1f%%", b.Pct(b.kernel_ns)) + ", data movement " +
       Fmt("%.1f%%", b.Pct(b.data_movement_ns)) + ", idle " + Fmt("%.1f%%", b.Pct(b.idle_ns)) +
       " of " + Fmt("%.3f ms", b.span_ns / 1e6));
  if (!s.top_kernels.empty()) {
    line("  top kernels (GPU time):");
    for (const auto& k : s.top_kernels) {
      const std::string name = CutWithEllipsis(t.strings.Get(k.name), 90);
      line("    " + Fmt("%10.3f ms", k.total_ns / 1e6) +
           Fmt(" %5.1f%%", s.total_kernel_ns ? 100.0 * k.total_ns / s.total_kernel_ns : 0) + "  x" +
           std::to_string(k.count) + "  " + name);
    }
  }
  if (!s.top_cpu_ops.empty()) {
    line("  top CPU ops (self time):");
    for (const auto& k : s.top_cpu_ops) {
      line("    " + Fmt("%10.3f ms", k.total_ns / 1e6) + "  x" + std::to_string(k.count) + "  " +
           std::string(t.strings.Get(k.name)));
    }
  }
  if (time.overall.total() > 0) {
    line("  where the time went (critical path over " + Fmt("%.3f ms", time.overall.total() / 1e6) +
         "): " + FormatCauses(time.overall));
    if (time.steps.size() > 1) {
      for (size_t k = 0; k < time.steps.size(); ++k) {
        line("    step " + std::to_string(time.step_numbers[k]) + " " +
             Fmt("%.3f ms", time.steps[k].total() / 1e6) + ": " + FormatCauses(time.steps[k], 4));
      }
    }
    if (!time.overall.cpu_ops.empty()) {
      std::string ops;
      for (size_t i = 0; i < time.overall.cpu_ops.size() && i < 5; ++i) {
        const std::string name = CutWithEllipsis(t.strings.Get(time.overall.cpu_ops[i].first), 60);
        ops += (i ? ", " : "") + name + " " + Fmt("%.3f ms", time.overall.cpu_ops[i].second / 1e6);
      }
      line("    CPU work on the critical path: " + ops);
    }
  }
  const HtaFigures& h = s.hta;
  if (h.has_gpu_events) {
    // HTA's own figures, reproduced: it leaves the last step out (and its kernels), so they
    // can differ from the table above, which counts every step.
    line(std::string("  HTA temporal breakdown") +
         (h.last_step_filter_applied ? " (as HTA computes it: without the last step)" : "") +
         ": idle " + Fmt("%.1f", h.idle_time_us) + " us, compute " +
         Fmt("%.1f", h.compute_time_us) + " us, non-compute " + Fmt("%.1f", h.non_compute_time_us) +
         " us, kernel span " + Fmt("%.1f", h.kernel_time_us) + " us" +
         (h.comm_comp_overlap_pct ? ", comm/comp overlap " + Fmt("%.2f%%", *h.comm_comp_overlap_pct)
                                  : ""));
  }
  const ImportStats& is = t.stats;
  std::string skipped;
  for (const auto& [k, v] : is.skipped)
    skipped += (skipped.empty() ? "" : ", ") + k + " " + std::to_string(v);
  line(
      "  import: " + std::to_string(is.elements) + " elements, " + std::to_string(is.events) +
      " events, " + std::to_string(is.total_skipped()) + " skipped" +
      (skipped.empty() ? "" : " (" + skipped + ")") +
      (is.step_markers_ignored > 0
           ? "; " + std::to_string(is.step_markers_ignored) +
                 " ProfilerStep marker(s) ignored: they cover under 5% of the span of the CPU's ops"
           : ""));
  return o;
}

}  // namespace ttap

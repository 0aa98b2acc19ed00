// Tests for trace surgery and the injectors behind `ttap gen --bases` (bench/harness/trace_edit.h,
// bench/harness/trace_inject.h): a round trip through the writer keeps the trace; every injector
// produces a trace that loads, validates (no kernel before its launch, no stream overlap, HTA's
// format rules), has its labelled intervals inside the trace, and whose labelled windows really
// differ from the clean copy.
#include "bench/harness/trace_inject.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "analysis/load/trace_loader.h"
#include "analysis/rules/rules.h"
#include "analysis/tiny_trace.h"
#include "bench/harness/trace_edit.h"
#include "bench/harness/trace_sim.h"
#include "tests/test_support.h"

namespace {

using ttap::EventKind;

std::unique_ptr<ttap::Trace> LoadText(const std::string& json) {
  ttap::LoadOptions o;
  o.threads = 1;
  auto t = ttap::LoadTraceFromMemory(json, "edited.json", o);
  REQUIRE(t.ok());
  return std::move(t.value());
}

std::unique_ptr<ttap::Trace> LoadBase() {
  ttap::LoadOptions o;
  o.threads = 1;
  auto t = ttap::LoadTrace(
      ttap_test::SourceDir() + "/examples/resnet50_num_workers_0/worker0.pt.trace.json.gz", o);
  REQUIRE(t.ok());
  return std::move(t.value());
}

// GPU idle time (ns) inside [a, b).
int64_t GpuIdle(const ttap::Trace& t, int64_t a, int64_t b) {
  std::vector<std::pair<int64_t, int64_t>> iv;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (!ttap::IsGpuKind(t.events.kind[i])) continue;
    int64_t s = std::max(a, t.events.ts[i]), e = std::min(b, t.events.end(i));
    if (s < e) iv.push_back({s, e});
  }
  std::sort(iv.begin(), iv.end());
  int64_t busy = 0, cs = a, ce = a;
  for (auto [s, e] : iv) {
    if (s > ce) {
      busy += ce - cs;
      cs = s;
      ce = e;
    } else {
      ce = std::max(ce, e);
    }
  }
  busy += ce - cs;
  return (b - a) - busy;
}

size_t CountNames(const ttap::Trace& t, const char* part) {
  size_t n = 0;
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (std::string(t.Name(i)).find(part) != std::string::npos) ++n;
  }
  return n;
}

int64_t Span(const ttap::Trace& t) { return t.span_end() - t.span_start(); }

// |code| injected into a copy of |clean| (in its fixed form when |fixed|), written and loaded.
struct Injected {
  std::unique_ptr<ttap::Trace> trace;
  int64_t start_ns = 0;  // the first injected interval's start
};
Injected InjectForm(const ttap::EditableTrace& clean, const char* code, double severity,
                    uint64_t seed, bool fixed) {
  ttap::EditableTrace et = clean;
  ttap::InjectionSpec spec;
  spec.code = code;
  spec.severity = severity;
  spec.seed = seed;
  spec.fixed = fixed;
  std::vector<ttap::InjectedInterval> iv;
  std::string why;
  REQUIRE(ttap::InjectAntiPattern(&et, spec, &iv, &why));
  REQUIRE(!iv.empty());
  return {LoadText(ttap::WriteKineto(et)), iv.front().start_ns};
}

}  // namespace

TEST_CASE("an edited trace written back loads with the same events", "[inject]") {
  auto base = LoadBase();
  ttap::EditableTrace et = ttap::ToEditable(*base);
  const std::string json = ttap::WriteKineto(et);
  auto back = LoadText(json);
  CHECK(back->events.size() == base->events.size());
  CHECK(back->steps.size() == base->steps.size());
  CHECK(back->stats.total_skipped() == 0);
  size_t linked = 0, linked_back = 0;
  for (size_t i = 0; i < base->events.size(); ++i) linked += base->events.link[i] >= 0;
  for (size_t i = 0; i < back->events.size(); ++i) linked_back += back->events.link[i] >= 0;
  CHECK(linked_back == linked);
  auto v_base = ttap::ValidateTrace(*base, "\"rank\": 0");
  auto v_back = ttap::ValidateTrace(*back, json);
  CHECK(v_back.rank_ok);
  CHECK(v_back.ok_against(v_base));
}

TEST_CASE("inserted CPU time shifts later work and the GPU waits for its launches", "[inject]") {
  auto base = LoadBase();
  ttap::EditableTrace et = ttap::ToEditable(*base);
  std::mt19937_64 rng(3);
  ttap::Jitter(&et, &rng, 0.03);
  const std::string before = ttap::WriteKineto(et);
  auto t0 = LoadText(before);
  // 20 ms of CPU time at the start of step 2, on the thread that launches.
  const ttap::Step& st = t0->steps[2];
  ttap::CpuBlock b(&et, t0->events.track[st.event], st.cpu_start + 1000);
  b.Py("train.py", 21, "train");
  b.Cpu(20'000'000);
  auto [a, e] = b.Commit();
  auto t1 = LoadText(ttap::WriteKineto(et));
  CHECK(t1->events.size() == t0->events.size() + 1);
  CHECK(t1->span_end() - t1->span_start() > t0->span_end() - t0->span_start() + 10'000'000);
  CHECK(GpuIdle(*t1, a, e) > 5'000'000);  // the GPU drained its backlog, then waited
  auto v = ttap::ValidateTrace(*t1, ttap::WriteKineto(et));
  CHECK(v.ok_against(ttap::ValidateTrace(*t0, before)));
}

TEST_CASE("every injector yields a valid trace whose labelled windows differ", "[inject]") {
  // The 2021 ResNet-50 base runs fp32 already; TTA009 goes into a simulated fp16 A100 trace.
  ttap::SimSpec sim;
  sim.hardware = "A100";
  sim.steps = 3;
  auto real_base = LoadBase();
  auto sim_base = LoadText(ttap::SimulateTrace(sim).json);
  for (const std::string& code : ttap::InjectableCodes()) {
    INFO(code);
    ttap::EditableTrace clean = ttap::ToEditable(code == "TTA009" ? *sim_base : *real_base);
    std::mt19937_64 rng(11);
    ttap::Jitter(&clean, &rng, 0.03);
    const std::string clean_json = ttap::WriteKineto(clean);
    auto clean_trace = LoadText(clean_json);
    const auto clean_report = ttap::ValidateTrace(*clean_trace, clean_json);
    ttap::EditableTrace et = clean;
    ttap::InjectionSpec spec;
    spec.code = code;
    spec.severity = 0.6;
    spec.seed = 5;
    spec.script = "train_resnet.py";
    std::vector<ttap::InjectedInterval> labels;
    std::string why;
    const bool ok = ttap::InjectAntiPattern(&et, spec, &labels, &why);
    INFO(why);
    REQUIRE(ok);
    REQUIRE(!labels.empty());
    const std::string json = ttap::WriteKineto(et);
    auto t = LoadText(json);
    const auto report = ttap::ValidateTrace(*t, json);
    INFO(report.Describe() + " vs clean " + clean_report.Describe());
    CHECK(report.ok_against(clean_report));
    for (const auto& l : labels) {
      CHECK(l.start_ns < l.end_ns);
      CHECK(l.start_ns >= t->span_start() - 1000);
      CHECK(l.end_ns <= t->span_end() + 1000);
      if (ttap::InjectedScriptLine(code) > 0) {
        CHECK(l.file == "train_resnet.py");
        CHECK(l.line == ttap::InjectedScriptLine(code));
      }
    }
    // The labelled windows differ from the clean copy.
    int64_t idle = 0, length = 0;
    for (const auto& l : labels) {
      idle += GpuIdle(*t, l.start_ns, l.end_ns);
      length += l.end_ns - l.start_ns;
    }
    if (code == "TTA003") {
      CHECK(CountNames(*t, "Pageable -> Device") > CountNames(*clean_trace, "Pageable -> Device"));
    } else if (code == "TTA001" || code == "TTA002" || code == "TTA008" || code == "TTA013") {
      CHECK(idle > length / 3);
      CHECK(t->span_end() - t->span_start() > clean_trace->span_end() - clean_trace->span_start());
    } else if (code == "TTA009") {
      CHECK(CountNames(*t, "sgemm") + CountNames(*t, "scudnn") + CountNames(*t, "f32f32") >
            CountNames(*clean_trace, "sgemm") + CountNames(*clean_trace, "scudnn") +
                CountNames(*clean_trace, "f32f32"));
    } else if (code == "TTA010") {
      CHECK(CountNames(*t, "nchwToNhwc") > CountNames(*clean_trace, "nchwToNhwc"));
    } else if (code == "TTA011" || code == "TTA012") {
      CHECK(CountNames(*t, "ncclDevKernel") > CountNames(*clean_trace, "ncclDevKernel"));
    } else {
      CHECK(t->events.size() > clean_trace->events.size() + 20 * labels.size());
    }
    // The responsible rule sees a medium-severity injection into these bases.
    ttap::RuleResult rr = ttap::RunRules(*t, {});
    size_t found = 0;
    for (const auto& f : rr.findings) found += f.code == code;
    CHECK(found > 0);
  }
}

TEST_CASE("an injection whose GPU reflow cannot settle is refused, not written with runaway times",
          "[inject][real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  // On this step-less HTA trace, per-parameter collectives made a cudaStreamSynchronize wait for
  // work that moved with every fix of it: the reflow used to add ~26 s to a 10 ms trace.
  auto loaded = ttap::LoadTrace(ttap_test::RealTracesDir() +
                                "/hta--with_gpu_user_annotation__step_based_trace_2543932.json.gz");
  REQUIRE(loaded.ok());
  const ttap::EditableTrace base = ttap::ToEditable(**loaded);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    ttap::EditableTrace et = base;
    ttap::InjectionSpec spec;
    spec.code = "TTA012";
    spec.severity = 0.845;
    spec.seed = seed;
    std::vector<ttap::InjectedInterval> iv;
    std::string why;
    const bool ok = ttap::InjectAntiPattern(&et, spec, &iv, &why);
    INFO(why);
    if (!ok) {
      CHECK(why.find("did not settle") != std::string::npos);
      continue;
    }
    for (const auto& i : iv) CHECK(i.end_ns - i.start_ns < 1000000000);  // well under 1 s
  }
}

TEST_CASE("TTA012's fixed form: the same calls in buckets of 32, at the same place", "[inject]") {
  // The truth of a per-parameter collective is the injection minus what bucketing leaves: the
  // same draws, one call per 32 gradients carrying their payloads, each with one fixed cost.
  auto base = LoadBase();
  const ttap::EditableTrace clean = ttap::ToEditable(*base);
  CHECK(ttap::HasFixedForm("TTA012"));
  CHECK_FALSE(ttap::HasFixedForm("TTA002"));
  Injected per_param_form = InjectForm(clean, "TTA012", 0.6, 5, false);
  Injected bucketed_form = InjectForm(clean, "TTA012", 0.6, 5, true);
  CHECK(bucketed_form.start_ns == per_param_form.start_ns);
  auto& per_param = per_param_form.trace;
  auto& bucketed = bucketed_form.trace;
  const size_t calls = CountNames(*per_param, "ncclDevKernel");
  const size_t buckets = CountNames(*bucketed, "ncclDevKernel");
  const size_t steps = base->steps.size();
  CHECK(calls > 40 * steps);
  // Per step ceil(calls / 32) (each step draws its own number of calls).
  CHECK(buckets >= (calls + 31) / 32);
  CHECK(buckets <= calls / 32 + steps);
  // Shorter than per-parameter calls, longer than no collective at all.
  CHECK(Span(*bucketed) < Span(*per_param));
  CHECK(Span(*bucketed) > Span(*LoadText(ttap::WriteKineto(clean))));
}

TEST_CASE("a base whose GPU work mostly has no launch record is refused", "[inject]") {
  // Injected kernels queue behind the stream's work in launch order; work without a launch has
  // no place in it (clock-skewed or partial exports), so the injector must not guess.
  ttap::EditableTrace et = ttap::ToEditable(*LoadBase());
  for (ttap::EditEvent& e : et.events) {
    if (ttap::IsLaunchKind(e.kind) && !et.tracks[e.track].gpu) e.correlation = -1;
  }
  ttap::InjectionSpec spec;
  spec.code = "TTA002";
  spec.severity = 0.5;
  spec.seed = 1;
  std::vector<ttap::InjectedInterval> iv;
  std::string why;
  CHECK_FALSE(ttap::InjectAntiPattern(&et, spec, &iv, &why));
  CHECK(why.find("no launch record") != std::string::npos);
  // The same base with its launch records accepts the injection.
  ttap::EditableTrace intact = ttap::ToEditable(*LoadBase());
  iv.clear();
  why.clear();
  CHECK(ttap::InjectAntiPattern(&intact, spec, &iv, &why));
}

TEST_CASE("TTA004's fixed form: the same tensors made on the host, their bytes in one copy",
          "[inject]") {
  auto base = LoadBase();
  const ttap::EditableTrace clean = ttap::ToEditable(*base);
  CHECK(ttap::HasFixedForm("TTA004"));
  auto copies = InjectForm(clean, "TTA004", 0.6, 9, false).trace;
  auto batched = InjectForm(clean, "TTA004", 0.6, 9, true).trace;
  auto h2d = [](const ttap::Trace& t, int64_t* bytes) {
    size_t n = 0;
    *bytes = 0;
    for (size_t i = 0; i < t.events.size(); ++i) {
      if (t.events.kind[i] != EventKind::kMemcpy || t.Name(i).find("HtoD") == std::string::npos)
        continue;
      ++n;
      *bytes += std::max<int64_t>(0, t.events.bytes[i]);
    }
    return n;
  };
  int64_t base_bytes = 0, copy_bytes = 0, batch_bytes = 0;
  const size_t in_base = h2d(*LoadText(ttap::WriteKineto(clean)), &base_bytes);
  const size_t n_copies = h2d(*copies, &copy_bytes) - in_base;
  const size_t n_batched = h2d(*batched, &batch_bytes) - in_base;
  CHECK(n_copies > 24 * base->steps.size());
  CHECK(n_batched == base->steps.size());  // one copy per step
  CHECK(batch_bytes == copy_bytes);        // the same tensors
  CHECK(Span(*batched) < Span(*copies));
}

TEST_CASE("added GPU work queues with the stream's queue gap, not the launch-bound pace",
          "[inject]") {
  // A stream that mostly waits for its launches (a kernel every 10 us, 8 us apart on the GPU)
  // and once holds a backlog of five kernels 1.5 us apart: the queue gap is 1.5 us.
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  double cpu = 1000;
  for (int k = 0; k < 40; ++k, cpu += 10) t.Kernel("elementwise_kernel", cpu, 4, cpu + 6, 2);
  double gpu = cpu + 6;
  for (int k = 0; k < 5; ++k, cpu += 5, gpu += 21.5) {
    t.Kernel("ampere_sgemm_128x64_nn", cpu, 4, gpu, 20);  // queued behind the previous one
  }
  auto trace = t.Load();
  const ttap::EditableTrace et = ttap::ToEditable(*trace);
  REQUIRE(et.queue_gap.size() == 1);
  CHECK(et.queue_gap.begin()->second == 1500);
  // Launch-bound alone: no queued pair, so no measured gap (the reflow uses 1 us).
  ttap_test::TinyTrace bound;
  bound.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  for (int k = 0; k < 40; ++k)
    bound.Kernel("elementwise_kernel", 1000 + k * 10, 4, 1006 + k * 10, 2);
  CHECK(ttap::ToEditable(*bound.Load()).queue_gap.empty());
}

TEST_CASE("TTA007's fixed form: the same kernels replayed from a graph, no op dispatch",
          "[inject]") {
  auto base = LoadBase();
  const ttap::EditableTrace clean = ttap::ToEditable(*base);
  CHECK(ttap::HasFixedForm("TTA007"));
  auto eager = InjectForm(clean, "TTA007", 0.5, 4, false).trace;
  auto graphed = InjectForm(clean, "TTA007", 0.5, 4, true).trace;
  auto before = LoadText(ttap::WriteKineto(clean));
  const size_t kernels = CountNames(*eager, "MulFunctor") - CountNames(*before, "MulFunctor");
  CHECK(kernels > 30 * base->steps.size());
  CHECK(CountNames(*graphed, "MulFunctor") - CountNames(*before, "MulFunctor") == kernels);
  CHECK(CountNames(*graphed, "aten::mul") == CountNames(*before, "aten::mul"));
  CHECK(Span(*graphed) < Span(*eager));
}

TEST_CASE("TTA006's fixed form: the same updates as foreach ops, one kernel per chunk",
          "[inject]") {
  // The same draws: per update (mul_, add_, add_) one _foreach_ op launching a multi-tensor
  // kernel per 64 parameters, which does the per-parameter kernels' work less their fixed costs.
  auto base = LoadBase();
  const ttap::EditableTrace clean = ttap::ToEditable(*base);
  CHECK(ttap::HasFixedForm("TTA006"));
  auto single = InjectForm(clean, "TTA006", 0.5, 6, false).trace;
  auto foreach_form = InjectForm(clean, "TTA006", 0.5, 6, true).trace;
  auto before = LoadText(ttap::WriteKineto(clean));
  const size_t per_param = CountNames(*single, "aten::mul_") - CountNames(*before, "aten::mul_");
  CHECK(per_param > 30 * base->steps.size());
  CHECK(CountNames(*foreach_form, "aten::mul_") == CountNames(*before, "aten::mul_"));
  const size_t foreach_ops = CountNames(*foreach_form, "aten::_foreach_");
  CHECK(foreach_ops == 3 * base->steps.size());
  const size_t chunks = CountNames(*foreach_form, "multi_tensor_apply_kernel") -
                        CountNames(*before, "multi_tensor_apply_kernel");
  CHECK(chunks >= foreach_ops);
  CHECK(chunks < per_param);
  CHECK(Span(*foreach_form) < Span(*single));
}

TEST_CASE("a sync that waited keeps waiting only for its work: CPU time before it is absorbed",
          "[inject]") {
  // A GEMM of 1 ms queued at 1010, then the CPU waits for it in cudaStreamSynchronize from 1050
  // to 2025 (5 us after the GEMM ends) and runs 100 us of ops after. 200 us of CPU time inserted
  // before the sync is absorbed by the wait: the sync still returns 5 us after the GEMM.
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("ampere_sgemm_128x64_nn", 1005, 5, 1020, 1000);
  t.Runtime("cudaStreamSynchronize", 1050, 975);
  t.Cpu("aten::add", 2030, 100);
  auto trace = t.Load();
  ttap::EditableTrace et = ttap::ToEditable(*trace);
  uint32_t cpu_track = 0;
  for (const ttap::EditEvent& e : et.events) {
    if (e.name == "cudaStreamSynchronize") cpu_track = e.track;
  }
  ttap::InsertCpuTime(&et, cpu_track, 1040000, 200000);
  const ttap::EditEvent* sync = nullptr;
  const ttap::EditEvent* add = nullptr;
  for (const ttap::EditEvent& e : et.events) {
    if (e.name == "cudaStreamSynchronize") sync = &e;
    if (e.name == "aten::add") add = &e;
  }
  REQUIRE(sync != nullptr);
  REQUIRE(add != nullptr);
  CHECK(sync->ts == 1250000);
  CHECK(sync->ts + sync->dur == 2025000);
  CHECK(add->ts == 2030000);
  // 1.2 ms inserted: now the sync waits for nothing and costs its call.
  ttap::EditableTrace more = ttap::ToEditable(*trace);
  ttap::InsertCpuTime(&more, cpu_track, 1040000, 1200000);
  for (const ttap::EditEvent& e : more.events) {
    if (e.name == "cudaStreamSynchronize") CHECK(e.ts + e.dur == 2250000 + 2000);
  }
}

TEST_CASE("a pageable copy that waited for the queue is a sync: it waits only for its work",
          "[inject]") {
  // A GEMM runs 1020..2020; a pageable device-to-host copy launched at 1050 queues behind it
  // (its copy runs 2020..2023) and its call returns at 2025. With 1.2 ms of CPU inserted before
  // the call, the GEMM is long done when it is made: it returns once its own copy is, not
  // 975 us later (as a call that keeps its length would: another wait's cost counted twice).
  ttap_test::TinyTrace t;
  t.Device(0, "NVIDIA A100-SXM4-80GB", 8, 0);
  t.Kernel("ampere_sgemm_128x64_nn", 1005, 5, 1020, 1000);
  t.Launch("Memcpy DtoH (Device -> Pageable)", 1050, 975, 2020, 3, "gpu_memcpy", 7,
           "cudaMemcpyAsync", 4096);
  t.Cpu("aten::add", 2030, 100);
  auto trace = t.Load();
  ttap::EditableTrace et = ttap::ToEditable(*trace);
  uint32_t cpu_track = 0;
  for (const ttap::EditEvent& e : et.events) {
    if (e.name == "cudaMemcpyAsync") {
      cpu_track = e.track;
      CHECK(e.blocking_copy);
    }
  }
  ttap::InsertCpuTime(&et, cpu_track, 1040000, 1200000);
  for (const ttap::EditEvent& e : et.events) {
    if (e.name == "cudaMemcpyAsync") {
      CHECK(e.ts == 2250000);
      CHECK(e.ts + e.dur < 2250000 + 100000);
    }
  }
}

TEST_CASE("TTA003's fixed form: the same copy from pinned memory, the call returning at once",
          "[inject]") {
  auto base = LoadBase();
  const ttap::EditableTrace clean = ttap::ToEditable(*base);
  CHECK(ttap::HasFixedForm("TTA003"));
  auto before = LoadText(ttap::WriteKineto(clean));
  auto pageable = InjectForm(clean, "TTA003", 0.5, 3, false).trace;
  auto pinned = InjectForm(clean, "TTA003", 0.5, 3, true).trace;
  const size_t steps = base->steps.size();
  CHECK(CountNames(*pageable, "Pageable -> Device") ==
        CountNames(*before, "Pageable -> Device") + steps);
  CHECK(CountNames(*pinned, "Pageable -> Device") == CountNames(*before, "Pageable -> Device"));
  CHECK(CountNames(*pinned, "Pinned -> Device") == CountNames(*before, "Pinned -> Device") + steps);
  CHECK(Span(*pinned) < Span(*pageable));
}

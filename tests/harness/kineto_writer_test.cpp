// Tests for the harness's one Kineto writer (bench/harness/kineto_writer.h), which the simulator
// and WriteKineto share: its document loads with LoadTraceFromMemory and round-trips exact
// timestamps, args, escaped strings, string pids, both device-list layouts and an ac2g flow pair.
#include "bench/harness/kineto_writer.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analysis/load/trace_loader.h"

namespace {

std::unique_ptr<ttap::Trace> Load(const std::string& json) {
  ttap::LoadOptions o;
  o.threads = 1;
  o.keep_flows = true;
  auto t = ttap::LoadTraceFromMemory(json, "writer.json", o);
  REQUIRE(t.ok());
  return std::move(t.value());
}

int Row(const ttap::Trace& t, const std::string& name) {
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.Name(i) == name) return static_cast<int>(i);
  }
  FAIL("no event " << name);
  return -1;
}

const std::string kOddName = "op \"quoted\" back\\slash\nnew line\ttab";

// A CPU op launching one kernel: the op, its runtime call, the kernel and their ac2g flow pair.
std::string Document(ttap::KinetoWriter::DeviceList layout) {
  ttap::KinetoWriter w;
  w.BeginDocument(layout);
  ttap::KinetoDevice d;
  d.id = 0;
  d.name = "NVIDIA \"Test\" GPU";
  d.total_global_mem = 85899345920;
  d.compute_major = 9;
  d.compute_minor = 0;
  d.warp_size = 32;
  d.num_sms = 132;
  w.Device(d);
  d.id = 1;
  w.Device(d);
  w.DistributedInfo("gloo", 3, 4);
  w.Metadata("process_name", 4242, 0, "python", int64_t{1712195495519689047});
  w.Metadata("thread_name", 4242, 4242, "thread \"main\"");
  w.Metadata("process_name", 0, 0, "GPU 0");
  w.Metadata("thread_name", 0, 7, "stream 7");
  const int64_t ts = 1712195495519689047;  // ns: not a whole microsecond
  w.Complete("cpu_op", kOddName, 4242, 4242, ts, 12345,
             ttap::KinetoArgs()
                 .Int("External id", 7)
                 .Int("Python id", 11)
                 .Str("Call stack", "a.py(1): f\nb"));
  w.Complete("cuda_runtime", "cudaLaunchKernel", 4242, 4242, ts + 1000, 4001,
             ttap::KinetoArgs().Int("External id", 7).Int("cbid", 211).Int("correlation", 5));
  w.Complete("kernel", "my_kernel", 0, 7, ts + 9999, 20000,
             ttap::KinetoArgs()
                 .Int("External id", 7)
                 .Int("device", 0)
                 .Int("stream", 7)
                 .Int("correlation", 5)
                 .Fixed("memory bandwidth (GB/s)", 1.5)
                 .Ints("grid", {264, 1, 1}));
  w.FlowStart(5, 4242, 4242, ts + 1000);
  w.FlowFinish(5, 0, 7, ts + 9999);
  w.Instant("cpu_instant_event", "mark", ttap::KinetoId::Text("Traces"), 4242, ts - 1,
            ttap::KinetoArgs());
  w.EndDocument("train \"x\".py");
  return w.Take();
}

}  // namespace

TEST_CASE("the Kineto writer's document loads and round-trips events, args and flows",
          "[kineto_writer]") {
  for (auto layout :
       {ttap::KinetoWriter::DeviceList::kOnePerLine, ttap::KinetoWriter::DeviceList::kInline}) {
    const std::string json = Document(layout);
    INFO(json);
    auto t = Load(json);
    CHECK(t->stats.total_skipped() == 0);
    CHECK(t->rank == 3);
    CHECK(t->world_size == 4);
    CHECK(t->backend == "gloo");
    REQUIRE(t->devices.size() == 2);
    CHECK(t->devices[0].name == "NVIDIA \"Test\" GPU");
    CHECK(t->devices[1].id == 1);
    CHECK(t->devices[0].num_sms == 132);
    CHECK(t->devices[0].total_memory == 85899345920);

    const ttap::EventTable& ev = t->events;
    const int op = Row(*t, kOddName);  // escaping round-trips
    CHECK(ev.ts[op] == 1712195495519689047);
    CHECK(ev.dur[op] == 12345);
    CHECK(ev.external_id[op] == 7);
    CHECK(ev.PythonId(op) == 11);
    CHECK(t->strings.Get(ev.CallStack(op)) == "a.py(1): f\nb");
    CHECK(ev.kind[op] == ttap::EventKind::kCpuOp);

    const int launch = Row(*t, "cudaLaunchKernel");
    const int kernel = Row(*t, "my_kernel");
    CHECK(ev.kind[kernel] == ttap::EventKind::kKernel);
    CHECK(ev.ts[kernel] == 1712195495519689047 + 9999);
    CHECK(ev.dur[kernel] == 20000);
    CHECK(ev.stream[kernel] == 7);
    CHECK(ev.correlation[kernel] == 5);
    CHECK(ev.link[kernel] == launch);  // the flow pair (and correlation) link launch and kernel
    REQUIRE(t->flows.size() == 2);
    CHECK(t->flows[0].id == 5);
    CHECK(t->flows[1].id == 5);

    const int mark = Row(*t, "mark");
    CHECK(ev.kind[mark] == ttap::EventKind::kInstant);
    CHECK(ev.ts[mark] == 1712195495519689046);
    CHECK(t->tracks[ev.track[mark]].pid == "Traces");

    // What the loader does not keep: the document's own fields.
    const auto doc = nlohmann::json::parse(json);
    CHECK(doc["traceName"] == "train \"x\".py");
    CHECK(doc["displayTimeUnit"] == "ms");
    CHECK(doc["deviceProperties"][0]["warpSize"] == 32);
    CHECK_FALSE(doc["deviceProperties"][0].contains("regsPerBlock"));  // unset: not written
    const auto& events = doc["traceEvents"];
    REQUIRE(events.size() == 10);
    CHECK(events[0]["ts"].get<double>() > 1.7e15);  // a metadata event at a time
    CHECK(events[1]["ts"].dump() == "0");           // and one without
    CHECK(events[1]["args"]["name"] == "thread \"main\"");
    const auto& k = events[6]["args"];
    CHECK(k["memory bandwidth (GB/s)"].get<double>() == 1.5);
    CHECK(k["grid"] == nlohmann::json::array({264, 1, 1}));
    CHECK(events[7]["ph"] == "s");
    CHECK_FALSE(events[7].contains("bp"));
    CHECK(events[8]["ph"] == "f");
    CHECK(events[8]["bp"] == "e");
    CHECK(events[9]["s"] == "t");
    CHECK_FALSE(events[9].contains("args"));  // empty args are left out
  }
}

TEST_CASE("the Kineto writer closes an empty document", "[kineto_writer]") {
  ttap::KinetoWriter w;
  w.BeginDocument();
  w.EndDocument();
  const std::string json = w.Take();
  CHECK(json ==
        "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"traceEvents\": [\n  ],\n"
        "  \"displayTimeUnit\": \"ms\"\n}\n");
  const auto doc = nlohmann::json::parse(json);
  CHECK(doc["traceEvents"].empty());
}

TEST_CASE("MicrosText writes exact microseconds", "[kineto_writer]") {
  CHECK(ttap::MicrosText(0) == "0.000");
  CHECK(ttap::MicrosText(1712195495519689047) == "1712195495519689.047");
  CHECK(ttap::MicrosText(-1) == "-0.001");
  CHECK(ttap::MicrosText(INT64_MIN) == "-9223372036854775.808");
  CHECK(ttap::JsonEscape(std::string("a\"\\\x01")) == "a\\\"\\\\\\u0001");
}

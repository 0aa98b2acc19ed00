// trace_queries (analysis/model/trace_queries.h): what a python_function event calls, the name
// TTA008 gives an idle gap's Python work and the source mapping narrows a def to; the one-off
// host stalls a run's summary names.
#include "analysis/model/trace_queries.h"

#include <catch2/catch.hpp>
#include <string>

#include "analysis/rules/rules.h"
#include "analysis/tiny_trace.h"

using ttap::OneOffHostStalls;
using ttap::PythonCallOf;
using ttap_test::TinyTrace;

TEST_CASE("PythonCallOf: built-ins, frames, and names that call nothing nameable",
          "[model][trace_queries]") {
  CHECK(PythonCallOf("<built-in function collect>") == "collect");
  CHECK(PythonCallOf("<built-in method write of _io.TextIOWrapper object at 0x7f89>") == "write");
  CHECK(PythonCallOf("torch/_tensor.py(576): backward") == "backward");
  CHECK(PythonCallOf("train.py(42): Trainer.step") == "Trainer.step");
  // Not a frame: no parenthesised line number, or nothing to call by name.
  CHECK(PythonCallOf("nn.Module: Linear_0").empty());
  CHECK(PythonCallOf("train.py(x1): step").empty());
  CHECK(PythonCallOf("train.py(3): <lambda>").empty());
  CHECK(PythonCallOf("").empty());
}

// Ten CPU forwards of one convolution (8 ms each, an aten::empty of 0.1 ms under it); the call of
// |stalled| (-1: none) takes |stall_ms| instead, |under_ms| of it in an op under it.
TinyTrace ConvForwards(const std::string& op, int stalled, double stall_ms, double under_ms = 0) {
  TinyTrace t;
  double ts = 1000;
  for (int k = 0; k < 10; ++k) {
    const double dur = k == stalled ? stall_ms * 1000 : 8000;
    t.Cpu(op, ts, dur);
    t.Cpu("aten::empty", ts + 1, k == stalled && under_ms > 0 ? under_ms * 1000 : 100);
    ts += dur + 50;
  }
  return t;
}

TEST_CASE("OneOffHostStalls: one call far longer than every other of its op is the machine",
          "[model][trace_queries]") {
  // A CPU ResNet-18's stem convolution took 7,842 ms once, its 199 other calls at most 192 ms.
  auto trace = ConvForwards("aten::mkldnn_convolution", 7, 900).Load();
  auto stalls = OneOffHostStalls(*trace);
  REQUIRE(stalls.size() == 1);
  CHECK(trace->Name(stalls[0].row) == "aten::mkldnn_convolution");
  CHECK(stalls[0].others == 9);
  CHECK(stalls[0].longest_other_ns == 8000000);
  CHECK(ttap::HostStallsText(*trace, stalls) ==
        "the host stalled 900.0 ms in one aten::mkldnn_convolution call, where its 9 other calls "
        "took at most 8.0 ms: the machine (paging, throttling, another process), not the code; "
        "these figures include it");
  CHECK(ttap::RunRules(*trace, {}).host_stalls.size() == 1);
  // Not a stall: the op's first call (set-up, TTA015's), a call under 10x the others or under
  // 100 ms, one whose time is in an op under it (that op stalled), and an op that moves data (a
  // large copy).
  CHECK(OneOffHostStalls(*ConvForwards("aten::mkldnn_convolution", 0, 900).Load()).empty());
  CHECK(OneOffHostStalls(*ConvForwards("aten::mkldnn_convolution", 5, 79).Load()).empty());
  auto inner = ConvForwards("aten::mkldnn_convolution", 5, 900, 850).Load();
  auto inner_stalls = OneOffHostStalls(*inner);
  REQUIRE(inner_stalls.size() == 1);
  CHECK(inner->Name(inner_stalls[0].row) == "aten::empty");
  CHECK(OneOffHostStalls(*ConvForwards("aten::copy_", 5, 900).Load()).empty());
  CHECK(ttap::HostStallsText(*trace, {}).empty());
}

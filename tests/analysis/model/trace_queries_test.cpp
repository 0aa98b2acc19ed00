// trace_queries (analysis/model/trace_queries.h): what a python_function event calls, the name
// TTA008 gives an idle gap's Python work and the source mapping narrows a def to.
#include "analysis/model/trace_queries.h"

#include <catch2/catch.hpp>

using ttap::PythonCallOf;

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

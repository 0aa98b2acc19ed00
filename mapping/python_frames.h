// Python frames of trace events, from both profiler generations: python_function events
// ("path/file.py(42): func", nested in time on the CPU thread) and the 2021 format's
// args["Call stack"] strings ("a.py(611): __init__;b.py(312): step"). The mapping layer resolves
// them to workspace files; the rules attach them to findings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/model/trace.h"

namespace ttap {

struct PythonFrame {
  std::string file;  // as recorded (may be relative to a sys.path entry)
  int line = 0;      // 1-based; 0 when unknown
  std::string function;
};

// Parses "file.py(42): func". Returns false for names of another shape (e.g. "<built-in ...>").
bool ParsePythonFrame(std::string_view text, PythonFrame* frame);
// Splits a "Call stack" string; innermost first, as written.
std::vector<PythonFrame> ParseCallStack(std::string_view text);
// The python frames of |row|, innermost first: the enclosing python_function events, or the
// row's (or its nearest ancestor's) Call stack string in old traces.
std::vector<PythonFrame> FramesOf(const Trace& trace, size_t row);
// The name of what frame |frame_index| of FramesOf(trace, row) called on the way to |row|: the
// next inner python_function event, a built-in's too ("<built-in function collect>" ->
// "collect", "a.py(9): log" -> "log"), or the next inner frame of a Call stack string; "" when
// there is none. PyTorch's tracer names a frame by its def line, so this callee is what tells
// the statement inside the def (source_ranges.h, RangeQuery::callee).
std::string CalleeOfFrame(const Trace& trace, size_t row, int frame_index);

}  // namespace ttap

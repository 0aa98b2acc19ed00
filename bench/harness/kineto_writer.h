// Text pieces of the Kineto JSON that ttap writes (the simulator, trace_sim.cpp, and the trace
// surgery writer, trace_edit.cpp): JSON string escaping and exact microsecond timestamps.
#pragma once

#include <cstdint>
#include <string>

namespace ttap {

// |s| escaped for a JSON string: quote, backslash and control characters (\u00XX).
std::string JsonEscape(const std::string& s);
// |ns| as microseconds with three exact decimals ("1712195495519689.047"; negative values too).
std::string MicrosText(int64_t ns);

}  // namespace ttap

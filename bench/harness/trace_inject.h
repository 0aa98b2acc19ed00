// Anti-pattern injection into real traces (the benchmark, `ttap gen --bases`): one injector per
// catalogue code that a trace can express, each a consistent surgery on an EditableTrace
// (trace_edit.h) with a magnitude from mild (hard to see) to severe, and python frames that name
// a line of a generated user script (GeneratedScript) recorded in the label. Called by
// bench/harness/gen_command.cpp and the tests. Pure, deterministic from the seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/harness/trace_edit.h"

namespace ttap {

struct InjectionSpec {
  std::string code;       // TTA001..TTA014
  double severity = 0.5;  // 0 mild .. 1 severe
  uint64_t seed = 1;
  std::string script = "train.py";  // the generated script the frames name
  // Write what the catalogue fix leaves instead (the counterfactual the truth is measured
  // against), for codes whose fix does not remove the injected work (HasFixedForm).
  bool fixed = false;
};

// True when the fix of |code| leaves part of the injected work (TTA003: the same copy from pinned
// memory, asynchronous; TTA004: one batched copy and the host work that makes the tensors;
// TTA007: the same kernels replayed from a CUDA graph; TTA012: bucketed collectives instead of
// none), so the truth is the injection minus its fixed form rather than minus nothing.
bool HasFixedForm(const std::string& code);

struct InjectedInterval {
  std::string code;
  int64_t start_ns = 0, end_ns = 0;
  std::string file;  // empty when the injection changes existing GPU work (no new user line)
  int line = 0;
};

// Every code InjectAntiPattern knows, in catalogue order.
const std::vector<std::string>& InjectableCodes();
// The script line each code's python frames name (0 for in-place GPU changes).
int InjectedScriptLine(const std::string& code);
// A user training script whose lines InjectedScriptLine names (written beside the dataset).
std::string GeneratedScript(const std::string& workload);

// Injects |spec.code| into every step (or three pseudo-steps when the trace has no
// ProfilerStep) and appends one interval per occurrence. False, with |why|, when the base cannot
// express it (no GPU work, no convolutions for TTA010, ROCm names for TTA003 ...).
bool InjectAntiPattern(EditableTrace* trace, const InjectionSpec& spec,
                       std::vector<InjectedInterval>* out, std::string* why);

}  // namespace ttap

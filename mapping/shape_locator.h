// Where a finding of a trace recorded without Python stacks (`with_stack=False`, the profiler's
// default) most likely sits: the one statement in the workspace with the shape the code's fix
// edits. TTA001: a `for` loop over a DataLoader; TTA005: a `.zero_grad(...)` call; TTA006: an
// optimizer's `.step()` (not a scheduler's or a GradScaler's); TTA013: an `empty_cache()` call;
// TTA017 by its region (ShapeKeyOf).
// Only a unique match is returned, and callers say the place was inferred from code, not read
// from the trace. Used by `ttap scan` (server/scan.cpp), hence by the language server too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/findings.h"
#include "mapping/python_source.h"

namespace ttap {

struct ShapeLocation {
  std::string path;      // absolute
  int line = 0;          // 1-based
  std::string function;  // the enclosing def's name, or "<module>"
};

// True for the shapes LocateByShape knows: the codes above and "backward" (a `.backward()` call).
bool HasCodeShape(const std::string& code);
// The shape a finding's fix edits (a code or "backward"), "" for none. TTA017 (CPU-overhead-
// bound) by its region: backward -> `.backward()`, the optimizer step -> TTA006's shape,
// zero_grad -> TTA005's, the step's eager ops -> the training loop (TTA001's).
std::string ShapeKeyOf(const Finding& f);

// Searches |files| (absolute .py paths, parsed through |cache|) for |code|'s shape; returns the
// location when exactly one statement has it. |matches| (optional) gets how many did.
std::optional<ShapeLocation> LocateByShape(const std::vector<std::string>& files,
                                           SourceCache* cache, const std::string& code,
                                           int* matches = nullptr);

}  // namespace ttap

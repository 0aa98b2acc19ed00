// Where a finding of a trace recorded without Python stacks (`with_stack=False`, the profiler's
// default) most likely sits: the one statement in the workspace with the shape the code's fix
// edits (its SourceShape in analysis/rules/rule_registry.h, ShapeOf): a `for` loop over a
// DataLoader (TTA001), a `.zero_grad(...)` call (TTA005), an optimizer's `.step()` (TTA006; not a
// scheduler's or a GradScaler's), an `empty_cache()` call (TTA013), `.backward()`; TTA017 by its
// region.
// Only a unique match is returned, and callers say the place was inferred from code, not read
// from the trace. Used by `ttap scan` (server/scan.cpp), hence by the language server too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/model/findings.h"
#include "analysis/rules/rule_registry.h"
#include "mapping/python_source.h"

namespace ttap {

struct ShapeLocation {
  std::string path;      // absolute
  int line = 0;          // 1-based
  std::string function;  // the enclosing def's name, or "<module>"
};

// True for the shapes LocateByShape can find in a workspace.
bool IsLocatableShape(SourceShape shape);

// Searches |files| (absolute .py paths, parsed through |cache|) for |shape|; returns the
// location when exactly one statement has it. |matches| (optional) gets how many did.
std::optional<ShapeLocation> LocateByShape(const std::vector<std::string>& files,
                                           SourceCache* cache, SourceShape shape,
                                           int* matches = nullptr);

}  // namespace ttap

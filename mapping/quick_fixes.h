// Quick fixes: text edits computed from the tree-sitter syntax tree that rewrite the Python line a
// finding points at (and the DataLoader / optimizer / model construction it depends on) following
// the finding's fix recipe. Every fix is applied and re-parsed before it is returned; fixes are
// idempotent and refuse code shapes they do not understand. Called by the language server's code
// actions; tests in tests/mapping/quick_fixes_test.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/base/status.h"
#include "mapping/python_source.h"

namespace ttap {

struct FixRequest {
  std::string recipe;  // fix id from the catalogue ("zero-grad-set-to-none", ...)
  int line = 0;        // 1-based line of the finding (the responsible statement)
  // Context from the trace:
  //   "torch_before_2" -> "1": per-parameter fill kernels from a bare zero_grad() (torch < 2.0)
  //   "device"         -> "cuda" (or "cpu", "xpu", ...): where the step runs
  //   "cpu_count"      -> "8": CPUs of the machine; num_workers defaults to min(8, cpu_count)
  //   "num_workers"    -> "4": overrides the suggested worker count
  //   "sync_every"     -> "100": logging interval for defer-host-sync (default 100)
  std::map<std::string, std::string> facts;
};

struct QuickFix {
  std::string recipe;
  std::string title;            // "Use zero_grad() (set_to_none=True)", shown in the editor
  std::vector<TextEdit> edits;  // against src.text(), byte ranges, non-overlapping
  bool preferred = false;
};

// The recipes ComputeFixes knows: zero-grad-set-to-none, optimizer-foreach, dataloader-workers,
// pin-memory-non-blocking, channels-last, defer-host-sync (the ids of QuickFixRegistry(), one
// recipe per file in mapping/fixes/; see quick_fix_registry.h).
const std::vector<std::string>& QuickFixRecipes();

// The fixes that apply at the request's line, preferred first. An empty vector when the code is
// already in the fixed form; an error Status saying why when the shape is not understood (or the
// recipe has no quick fix). Each returned fix changes the text and re-parses with no more
// ERROR/MISSING nodes than the original.
StatusOr<std::vector<QuickFix>> ComputeFixes(const PythonSource& src, const FixRequest& req);

// src.text() with the fix's edits applied.
std::string ApplyFix(const PythonSource& src, const QuickFix& fix);

}  // namespace ttap

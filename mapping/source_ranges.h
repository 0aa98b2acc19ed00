// Range narrowing: from a finding's responsible frame (a 1-based line and the frame's function) to
// what the user should look at in the current version of the file: the call expression
// (`optimizer.zero_grad()`), the `for` header of a loop, the `.item()` call, with the
// DataLoader(...) a loop iterates or the optimizer's constructor as a related location. When the
// file changed after the trace, the finding is re-anchored by function name and statement shape,
// or marked stale. Called by scan (server/scan.cpp) and the language server's diagnostics; the
// quick fixes start from the statement it finds.
#pragma once

#include <string>
#include <string_view>

#include "mapping/python_source.h"

namespace ttap {

struct RangeQuery {
  int line = 0;          // 1-based line of the responsible frame
  std::string function;  // the frame's function ("<module>", "main", "train_step", ...)
  std::string code;      // finding code, e.g. "TTA005"; picks what to narrow to
  // What the frame called on the way to the finding ("backward", "collect"; CalleeOfFrame).
  // When |line| is the def line of |function| (PyTorch's tracer names frames by it), the range
  // narrows to the one statement of the def's body with the code's shape (an `.item()` for
  // TTA002; the file not edited since the trace), or for a code without a shape to the def's
  // first call of that name.
  std::string callee;
  bool file_newer_than_trace = false;  // the file's mtime is after the trace file's
};

enum class RangeKind {
  kCall,       // a call expression, e.g. `optimizer.zero_grad(set_to_none=False)`
  kForHeader,  // `for batch in loader:` (through the colon)
  kStatement,  // the statement (a compound statement's header), without trailing comments
  kLine,       // no statement: first non-blank character to the end of the line
};
const char* RangeKindName(RangeKind k);  // "call", "for-header", "statement", "line"

struct MappedRange {
  ByteRange range;  // what to underline
  RangeKind kind = RangeKind::kLine;
  ByteRange statement;  // the enclosing statement (a compound statement's header only)
  bool has_related = false;
  ByteRange related;          // the DataLoader(...) a for loop iterates, the optimizer constructor
  std::string related_label;  // "DataLoader defined here", "optimizer created here"
  int line = 0;               // 1-based: the frame's line, or the new one after re-anchoring
  bool reanchored = false;    // the file changed and the finding moved to |line|
  bool stale = false;         // the file changed and re-anchoring failed: |range| is the old line
  bool past_end = false;      // stale because the line is past the end of the file (range empty)
  std::string stale_reason;
};

// Narrowing by finding code (the statement at the frame's line is searched for):
//   TTA001  the `for ... in X:` header (related: the DataLoader(...) X was assigned from, through
//           enumerate()/tqdm()/iter() and `self.X`), or a `next(it)` / `iter(loader)` call
//   TTA002  `.item()` `.cpu()` `.tolist()` `.numpy()` `torch.cuda.synchronize()`
//   TTA003, TTA014  `.to(...)` `.cuda()` `.cpu()`
//   TTA004  `torch.tensor(...)` / `as_tensor` / `from_numpy` / `.to` / `.cuda`
//   TTA005  `zero_grad()`, or the header of a `for p in ...: p.grad.zero_()` loop (from its
//           header or its body; a lone `w.grad.zero_()` is the call)
//   TTA006  `.step()` (related: the optimizer's constructor, via the receiver or, for
//           `scaler.step(opt)`, the argument)
//   TTA010  the model / conv call
//   TTA013  `torch.cuda.empty_cache()`
//   others  the statement; for a statement over several lines, the first call on the line
// Without a match: kStatement, or kLine when no statement starts at or covers the line.
//
// Staleness: when the file is newer than the trace and the line has no matching statement, or
// when the frame's function does not enclose the line, the finding is re-anchored to the
// matching statement nearest the old line inside the function(s) of that name ("<module>":
// module-level code). A line past the end of the file is re-anchored the same way. When that
// fails, |stale| is set and the range stays on the old line (empty when past the end).
MappedRange MapToSource(const PythonSource& src, const RangeQuery& q);

}  // namespace ttap

// ComputeFixes and ApplyFix (see quick_fixes.h): finds the statements at the finding's line,
// runs the recipe registered for the request (quick_fix_registry.h; one file per recipe in
// mapping/fixes/) and validates every fix by applying and re-parsing it. Called by the language
// server and scan; the shared helpers the recipes use are in mapping/fixes/fix_util.h.
#include "mapping/quick_fixes.h"

#include <algorithm>

#include "analysis/base/string_util.h"
#include "mapping/fixes/fix_util.h"
#include "mapping/quick_fix_registry.h"
#include "mapping/syntax_util.h"

namespace ttap {
namespace {

using fixes::Ctx;
using fixes::EndRow;
using fixes::Fixes;
using fixes::HeaderEnd;
using fixes::Newline;
using fixes::ReadImports;
using fixes::Row;
using fixes::RowOf;
using fixes::Same;

// ---------------------------------------------------------------------------------------------
// Validation

enum class Verdict { kValid, kNoChange, kBroken };

Verdict Validate(const PythonSource& src, const QuickFix& fix, std::string* why) {
  std::vector<TextEdit> edits = fix.edits;
  std::sort(edits.begin(), edits.end(), [](const TextEdit& a, const TextEdit& b) {
    return a.range.start != b.range.start ? a.range.start < b.range.start
                                          : a.range.end < b.range.end;
  });
  for (size_t i = 0; i < edits.size(); ++i) {
    const TextEdit& e = edits[i];
    if (e.range.start > e.range.end || e.range.end > src.text().size()) {
      *why = "internal: an edit is out of range";
      return Verdict::kBroken;
    }
    if (i > 0 &&
        (e.range.start < edits[i - 1].range.end || e.range.start == edits[i - 1].range.start)) {
      *why = "internal: the edits overlap";
      return Verdict::kBroken;
    }
  }
  std::string out = ApplyEdits(src.text(), edits);
  if (out == src.text()) return Verdict::kNoChange;
  auto parsed = PythonSource::Parse(out);
  if (parsed->error_count() > src.error_count()) {
    *why = "the edited code would not parse (" + fix.title + ")";
    return Verdict::kBroken;
  }
  return Verdict::kValid;
}

bool IsStatementType(std::string_view t) {
  return EndsWith(t, "_statement") || t == "function_definition" || t == "class_definition" ||
         t == "decorated_definition";
}

// The outermost statements that start on |line0| (`a(); b()` gives both; a compound
// statement's header line gives the compound statement), else the innermost one that covers it
// (a continuation line). Unlike StatementAtLine, a loop starting on the line wins over the
// function around it.
std::vector<TSNode> StatementsOn(const PythonSource& src, int line0) {
  std::vector<TSNode> starting;
  TSNode covering{};
  const uint32_t row = static_cast<uint32_t>(std::max(0, line0));
  WalkRows(src.root(), row, row, [&](TSNode n) {
    if (Row(n) > line0 || EndRow(n) < line0) return false;
    if (!IsStatementType(NodeType(n))) return true;
    if (Row(n) == line0) {
      starting.push_back(n);
      return false;
    }
    covering = n;
    return true;
  });
  if (starting.empty() && !IsNull(covering)) starting.push_back(covering);
  return starting;
}

bool IsCompound(std::string_view t) {
  return t == "for_statement" || t == "while_statement" || t == "if_statement" ||
         t == "with_statement" || t == "try_statement" || t == "function_definition" ||
         t == "class_definition" || t == "decorated_definition" || t == "match_statement";
}

}  // namespace

const std::vector<std::string>& QuickFixRecipes() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> ids;
    for (const QuickFixRecipe* r : QuickFixRegistry()) ids.push_back(r->id);
    return ids;
  }();
  return k;
}

StatusOr<std::vector<QuickFix>> ComputeFixes(const PythonSource& src, const FixRequest& req) {
  const QuickFixRecipe* recipe = FindQuickFixRecipe(req.recipe);
  if (recipe == nullptr) return Status::Error("no quick fix for recipe `" + req.recipe + "`");
  if (req.line < 1 || req.line > src.line_count()) {
    return Status::Error("line " + std::to_string(req.line) + " is outside the file (" +
                         std::to_string(src.line_count()) + " lines)");
  }
  Ctx c{src, req, TSNode{}, ReadImports(src), Newline(src)};
  int line0 = req.line - 1;
  std::vector<TSNode> stmts = StatementsOn(src, line0);
  if (stmts.empty() || NodeType(stmts[0]) == "module" ||
      (IsCompound(NodeType(stmts[0])) && Row(stmts[0]) != line0 &&
       RowOf(src, HeaderEnd(stmts[0])) <= line0)) {
    return c.Error("no Python statement starts or continues here");
  }
  // With several statements on the line (`loss.backward(); opt.step()`), the first one the
  // recipe understands.
  StatusOr<Fixes> r = Status::Error("unreachable");
  for (TSNode stmt : stmts) {
    c.stmt = stmt;
    StatusOr<Fixes> one = recipe->compute(c);
    if (one.ok() || Same(stmt, stmts[0])) r = one;
    if (one.ok()) break;
  }
  if (!r.ok()) return r.status();

  std::vector<QuickFix> out;
  std::string broken;
  for (QuickFix& f : *r) {
    f.recipe = req.recipe;
    std::string why;
    Verdict v = Validate(src, f, &why);
    if (v == Verdict::kValid)
      out.push_back(std::move(f));
    else if (v == Verdict::kBroken && broken.empty())
      broken = why;
  }
  if (out.empty() && !broken.empty()) return c.Error(broken);
  std::stable_partition(out.begin(), out.end(), [](const QuickFix& f) { return f.preferred; });
  return out;
}

std::string ApplyFix(const PythonSource& src, const QuickFix& fix) {
  return ApplyEdits(src.text(), fix.edits);
}

}  // namespace ttap

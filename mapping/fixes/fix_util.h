// Internal to the quick fixes: the tree, line and argument-list helpers, the import and
// constructor lookups, and the request context (Ctx) that every recipe in mapping/fixes/ uses.
// Included by the recipes (mapping/fixes/*.cpp) and by ComputeFixes (mapping/quick_fixes.cpp)
// only; not an API for the rest of the server. Definitions in fix_util.cpp.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/base/status.h"
#include "analysis/base/string_util.h"
#include "mapping/python_source.h"
#include "mapping/quick_fixes.h"
#include "mapping/syntax_util.h"

namespace ttap::fixes {

using Fixes = std::vector<QuickFix>;

// ---------------------------------------------------------------------------------------------
// Tree helpers

TSNode Field(TSNode n, const char* name);
uint32_t Start(TSNode n);
uint32_t End(TSNode n);
int Row(TSNode n);
int EndRow(TSNode n);
TSNode Parent(TSNode n);
bool Same(TSNode a, TSNode b);
bool Contains(TSNode outer, TSNode inner);
ByteRange Range(TSNode n);

// The node's text; empty for a null node (NodeText would dereference it).
std::string_view View(const PythonSource& src, TSNode n);
std::string Text(const PythonSource& src, TSNode n);

// |s| without whitespace and line continuations, for comparing expressions.
std::string Compact(std::string_view s);
std::string CompactNode(const PythonSource& src, TSNode n);
std::string Join(const std::vector<std::string>& parts, const std::string& sep);

// Named children without comments.
std::vector<TSNode> Children(TSNode n);
TSNode FirstChild(TSNode n);
bool IsDefinition(std::string_view t);

// Where the header of a compound statement ends (its body starts); the end of a simple one.
uint32_t HeaderEnd(TSNode stmt);

// The calls of a statement, without those in a compound statement's body.
std::vector<TSNode> HeaderCalls(TSNode stmt);

// True when |name| is used as a variable in |n| (attribute names and keyword names aside).
bool ContainsIdentifier(const PythonSource& src, TSNode n, std::string_view name);

// The nearest for/while loop around |n| in the same function.
TSNode EnclosingLoop(TSNode n);

// The class definition around |n|, if any (for `self.x` lookups).
TSNode EnclosingClass(TSNode n);

// ---------------------------------------------------------------------------------------------
// Line helpers

int RowOf(const PythonSource& src, uint32_t byte);
uint32_t LineEnd(const PythonSource& src, int row);
bool OnlySpaceBefore(const PythonSource& src, uint32_t at);
std::string Newline(const PythonSource& src);

// True when |stmt| is alone on its lines (a trailing comment allowed).
bool OwnsItsLines(const PythonSource& src, TSNode stmt);

// ---------------------------------------------------------------------------------------------
// Argument lists

struct Args {
  TSNode list{};
  TSNode open{}, close{};
  std::vector<TSNode> items;     // arguments in order, comments excluded
  std::vector<TSNode> comments;  // comments between the parentheses
  int positional = 0;            // plain positional arguments
  bool star = false;             // *args
  bool star_star = false;        // **kwargs
};
std::optional<Args> ReadArgs(TSNode call);
TSNode KeywordValue(const PythonSource& src, TSNode call, std::string_view name);

// Inserts "name=value" arguments after the last argument, in the call's style: on their own
// lines with the previous argument's indentation when the call is multi-line (keeping a trailing
// comma and comments), inline otherwise (wrapped under the first argument when too long).
std::vector<TextEdit> InsertKeywords(const PythonSource& src, const Args& a,
                                     const std::vector<std::string>& kws);

// Removes argument |k| with its comma; a line holding only the argument goes with it, comments
// stay.
std::vector<TextEdit> RemoveArgument(const PythonSource& src, const Args& a, TSNode k);

// ---------------------------------------------------------------------------------------------
// Imports and constructors

// Local name -> qualified name, from every import in the file.
std::map<std::string, std::string> ReadImports(const PythonSource& src);

// What a recipe computes from: the request, the file's imports and newline, and the statement at
// the request's line (ComputeFixes sets stmt, trying each statement on the line in turn).
struct Ctx {
  const PythonSource& src;
  const FixRequest& req;
  TSNode stmt{};
  std::map<std::string, std::string> imports;
  std::string nl;

  std::string Fact(const std::string& key) const {
    auto it = req.facts.find(key);
    return it == req.facts.end() ? "" : it->second;
  }
  bool FactTrue(const std::string& key) const {
    std::string v = Lower(Fact(key));
    return v == "1" || v == "true" || v == "yes";
  }
  bool HasTorch() const {
    auto it = imports.find("torch");
    return it != imports.end() && it->second == "torch";
  }
  std::string Qualify(const std::string& dotted) const {
    std::string first = dotted.substr(0, dotted.find('.'));
    auto it = imports.find(first);
    if (it == imports.end()) return dotted;
    return it->second + dotted.substr(first.size());
  }
  Status Error(const std::string& msg) const {
    return Status::Error("line " + std::to_string(req.line) + ": " + msg);
  }
};

const std::set<std::string>& ForeachOptimizers();

// "Adam" for torch.optim.Adam(...) (also optim.Adam, a name imported from torch.optim, or
// LBFGS/SparseAdam, which have no foreach path); "" for anything else.
std::string OptimizerClass(const Ctx& c, TSNode call);
bool IsDataLoader(const Ctx& c, TSNode call);

// The call |name| was last assigned from before |at|: in |at|'s scope, in the enclosing class
// for `self.x` (any method), then anywhere in the module.
TSNode FindAssigned(const Ctx& c, std::string_view name, TSNode at);

// For `x = make_loader(...)`: the one constructor call that the file's `def make_loader` returns
// (directly or through a local name) and that |want| accepts; null otherwise.
TSNode FollowFactory(const Ctx& c, TSNode call, const std::function<bool(TSNode)>& want);

// The call |name| comes from, when |want| accepts it (following one factory function).
TSNode ResolveCall(const Ctx& c, std::string_view name, TSNode at,
                   const std::function<bool(TSNode)>& want);
bool IsNameOrAttribute(TSNode n);
bool IsLiteral(std::string_view v, std::initializer_list<std::string_view> values);
QuickFix MakeFix(std::string title, std::vector<TextEdit> edits, bool preferred);

// ---------------------------------------------------------------------------------------------
// Lookups shared by several recipes

TSNode Unparen(TSNode n);

// The DataLoader(...) call that the loop / next(...) on |stmt| iterates, or that |stmt| builds.
StatusOr<TSNode> FindLoaderCall(const Ctx& c, TSNode stmt);
bool ParseInt(const std::string& s, long* out);

}  // namespace ttap::fixes

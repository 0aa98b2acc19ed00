// Small tree-sitter queries over a PythonSource shared by the range narrowing and the quick
// fixes: the statement on a line, callee names, keyword arguments, the call a name was assigned
// from, enclosing functions. All pure; nodes are only valid while their PythonSource lives.
#pragma once

#include <tree_sitter/api.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "mapping/python_source.h"

namespace ttap {

std::string_view NodeType(TSNode n);
bool IsNull(TSNode n);
// Pre-order walk over the named nodes under |root| (|root| included) with a tree cursor, linear
// in the tree (indexed child access restarts from the first child each time: quadratic on long
// statement lists). |visit| returns whether to descend into a node's children.
void Walk(TSNode root, const std::function<bool(TSNode)>& visit);
// Walk restricted to the nodes that overlap rows [lo, hi] (0-based): tree-sitter seeks each level
// to the first child reaching |lo| and the walk stops at the first child starting past |hi|, so a
// large file costs what the rows hold, not the file.
void WalkRows(TSNode root, uint32_t lo, uint32_t hi, const std::function<bool(TSNode)>& visit);

// The innermost statement node (expression_statement, for_statement, assignment's statement,
// return_statement, ...) that starts on |line0| (0-based), else the innermost one covering it.
TSNode StatementAtLine(const PythonSource& src, int line0);
// Every call node inside |node| (pre-order), including |node| itself.
std::vector<TSNode> CallsIn(TSNode node);
// The callee text of a call: "optimizer.zero_grad", "torch.utils.data.DataLoader", "p.grad.zero_".
std::string CalleeText(const PythonSource& src, TSNode call);
// The last dotted component of the callee: "zero_grad", "DataLoader".
std::string CalleeName(const PythonSource& src, TSNode call);
// The argument_list node of a call.
TSNode CallArguments(TSNode call);
// The keyword_argument named |name| in a call's arguments, or a null node.
TSNode KeywordArgument(const PythonSource& src, TSNode call, std::string_view name);
// The function_definition / class_definition / module that encloses |node|.
TSNode EnclosingScope(TSNode node);
// The nearest `NAME = <call>` assignment to |name| before byte |before| in |scope| (searching the
// scope, then the module), returning the call node; null when none.
TSNode FindCallAssignedTo(const PythonSource& src, TSNode scope, std::string_view name,
                          uint32_t before);
// The function_definition named |name| anywhere in the file; null when none or ambiguous.
TSNode FindFunction(const PythonSource& src, std::string_view name);
// The indentation (leading whitespace) of the line containing byte |at|.
std::string IndentationAt(const PythonSource& src, uint32_t at);

}  // namespace ttap

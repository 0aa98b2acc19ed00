// Range narrowing and re-anchoring of findings to source lines; see source_ranges.h. Called by
// scan's ScanTrace and the language server.
#include "mapping/source_ranges.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <vector>

#include "analysis/base/string_util.h"
#include "analysis/rules/rule_registry.h"
#include "mapping/syntax_util.h"

namespace ttap {

const char* RangeKindName(RangeKind k) {
  switch (k) {
    case RangeKind::kCall:
      return "call";
    case RangeKind::kForHeader:
      return "for-header";
    case RangeKind::kStatement:
      return "statement";
    case RangeKind::kLine:
      return "line";
  }
  return "line";
}

namespace {

constexpr uint32_t kAnyByte = UINT32_MAX;

int Row(TSNode n) { return static_cast<int>(ts_node_start_point(n).row); }

bool IsCompound(std::string_view t) {
  return t == "for_statement" || t == "while_statement" || t == "if_statement" ||
         t == "with_statement" || t == "try_statement" || t == "match_statement" ||
         t == "function_definition" || t == "class_definition" || t == "decorated_definition";
}

bool IsStatementNode(std::string_view t) {
  return (t.size() > 10 && t.substr(t.size() - 10) == "_statement") || t == "function_definition" ||
         t == "class_definition" || t == "decorated_definition";
}

// Nodes statements can be nested in (expressions hold none).
bool MayHoldStatements(std::string_view t) {
  return t == "module" || t == "block" || IsStatementNode(t) ||
         (t.size() > 7 && t.substr(t.size() - 7) == "_clause");
}

bool IsDefinition(std::string_view t) {
  return t == "function_definition" || t == "class_definition";
}

// The end of a compound statement's header: just past its own ':' token.
uint32_t HeaderEnd(TSNode stmt) {
  if (NodeType(stmt) == "decorated_definition") {
    TSNode def = ts_node_child_by_field_name(stmt, "definition", 10);
    if (!IsNull(def)) return HeaderEnd(def);
  }
  for (uint32_t i = 0; i < ts_node_child_count(stmt); ++i) {
    TSNode c = ts_node_child(stmt, i);
    if (!ts_node_is_named(c) && NodeType(c) == ":") return ts_node_end_byte(c);
  }
  return ts_node_end_byte(stmt);
}

// The node's end without the comments tree-sitter attached at its end.
uint32_t TrimmedEnd(TSNode n) {
  for (uint32_t i = ts_node_child_count(n); i > 0; --i) {
    TSNode c = ts_node_child(n, i - 1);
    if (NodeType(c) == "comment") continue;
    return TrimmedEnd(c);
  }
  return ts_node_end_byte(n);
}

ByteRange StatementRange(TSNode stmt) {
  if (IsCompound(NodeType(stmt))) return {ts_node_start_byte(stmt), HeaderEnd(stmt)};
  return {ts_node_start_byte(stmt), TrimmedEnd(stmt)};
}

// Lines that hold text: a final line break does not start another line.
int RealLineCount(const PythonSource& src) {
  int n = src.line_count();
  if (n > 0 && src.LineStart(n - 1) >= src.text().size()) --n;
  return n;
}

// The statement the line belongs to: the outermost statement starting on the line (a compound
// statement rather than the one-line body after its colon), else the innermost one covering it
// (a continuation line); null for blank lines and comments, including those inside a compound
// statement's body (where StatementAtLine would give the compound statement).
TSNode StatementAt(const PythonSource& src, int line0) {
  // From the line's first non-blank character up through its ancestors (tree-sitter finds it
  // by position: no walk over the file's other statements, which a 6 MB buffer makes slow).
  if (line0 < 0 || line0 >= src.line_count()) return {};
  const std::string& text = src.text();
  size_t at = src.LineStart(line0);
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  const uint32_t column = static_cast<uint32_t>(at - src.LineStart(line0));
  const TSPoint point{static_cast<uint32_t>(line0), column};
  TSNode starting = {}, covering = {};
  for (TSNode n = ts_node_descendant_for_point_range(src.root(), point, point); !IsNull(n);
       n = ts_node_parent(n)) {
    if (!ts_node_is_named(n) || !IsStatementNode(NodeType(n))) continue;
    const int a = static_cast<int>(ts_node_start_point(n).row);
    const int b = static_cast<int>(ts_node_end_point(n).row);
    if (a > line0 || b < line0) continue;
    if (a == line0) {
      starting = n;  // the outermost one starting on the line wins
    } else if (IsNull(covering) && IsNull(starting)) {
      covering = n;  // the innermost one covering the line
    }
  }
  // A statement that starts later on a line where an earlier one ends (`f(a,\n b); g()`).
  if (IsNull(starting) && !IsNull(covering) &&
      static_cast<int>(ts_node_end_point(covering).row) == line0) {
    TSNode next = ts_node_next_named_sibling(covering);
    if (!IsNull(next) && static_cast<int>(ts_node_start_point(next).row) == line0 &&
        IsStatementNode(NodeType(next))) {
      return next;
    }
  }
  if (!IsNull(starting)) return starting;
  if (IsNull(covering)) return {};
  if (IsCompound(NodeType(covering))) {
    int header_end_row = src.ToPosition(HeaderEnd(covering), PositionEncoding::kUtf8).line;
    if (line0 > header_end_row) return {};
  }
  return covering;
}

// The calls of a statement; of a compound statement only those in its header.
std::vector<TSNode> StatementCalls(TSNode stmt) {
  std::vector<TSNode> calls = CallsIn(stmt);
  if (IsCompound(NodeType(stmt))) {
    uint32_t end = HeaderEnd(stmt);
    calls.erase(std::remove_if(calls.begin(), calls.end(),
                               [&](TSNode c) { return ts_node_start_byte(c) >= end; }),
                calls.end());
  }
  return calls;
}

bool Inside(TSNode inner, TSNode outer) {
  return !ts_node_eq(inner, outer) && ts_node_start_byte(inner) >= ts_node_start_byte(outer) &&
         ts_node_end_byte(inner) <= ts_node_end_byte(outer);
}

// The first matching call (pre-order, so outer calls first), preferring calls that start on
// |line0|; with |innermost|, a matching call nested in another matching one wins
// (`x.cpu().numpy()` -> `x.cpu()`, where the host waits).
TSNode PickCall(const std::vector<TSNode>& calls, int line0,
                const std::function<bool(TSNode)>& match, bool innermost) {
  std::vector<TSNode> matching, on_line;
  for (TSNode c : calls) {
    if (!match(c)) continue;
    matching.push_back(c);
    if (Row(c) == line0) on_line.push_back(c);
  }
  const std::vector<TSNode>& pool = on_line.empty() ? matching : on_line;
  if (pool.empty()) return {};
  if (innermost) {
    for (TSNode c : pool) {
      bool nested = std::any_of(pool.begin(), pool.end(), [&](TSNode d) { return Inside(d, c); });
      if (!nested) return c;
    }
  }
  return pool.front();
}

std::string Compact(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\\') out.push_back(c);
  }
  return out;
}

// "optimizer" of `optimizer.step()`, "" for a plain function call.
std::string Receiver(const PythonSource& src, TSNode call) {
  std::string callee = CalleeText(src, call);
  size_t dot = callee.rfind('.');
  return dot == std::string::npos ? std::string() : callee.substr(0, dot);
}

TSNode FirstPositionalArgument(TSNode call) {
  TSNode args = CallArguments(call);
  if (IsNull(args) || NodeType(args) != "argument_list") return {};
  for (uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
    TSNode a = ts_node_named_child(args, i);
    std::string_view t = NodeType(a);
    if (t == "comment") continue;
    if (t == "keyword_argument" || t == "list_splat" || t == "dictionary_splat") return {};
    return a;
  }
  return {};
}

TSNode Ancestor(TSNode n, std::string_view type) {
  for (TSNode p = ts_node_parent(n); !IsNull(p); p = ts_node_parent(p)) {
    if (NodeType(p) == type) return p;
  }
  return {};
}

// The call |name| was last assigned from before |before|: in the enclosing scope, then for
// `self.x` in the methods of the enclosing class, then anywhere at module level.
TSNode FindAssigned(const PythonSource& src, TSNode at, const std::string& name, uint32_t before) {
  TSNode scope = EnclosingScope(at);
  TSNode c = FindCallAssignedTo(src, scope, name, before);
  if (!IsNull(c)) return c;
  if (StartsWith(name, "self.") || StartsWith(name, "cls.")) {
    TSNode cls = Ancestor(at, "class_definition");
    TSNode body = IsNull(cls) ? TSNode{} : ts_node_child_by_field_name(cls, "body", 4);
    if (!IsNull(body)) {
      std::vector<TSNode> methods;
      for (uint32_t i = 0; i < ts_node_named_child_count(body); ++i) {
        TSNode m = ts_node_named_child(body, i);
        if (NodeType(m) == "decorated_definition") {
          m = ts_node_child_by_field_name(m, "definition", 10);
        }
        if (NodeType(m) != "function_definition") continue;
        TSNode id = ts_node_child_by_field_name(m, "name", 4);
        bool init = !IsNull(id) && src.NodeText(id) == "__init__";
        methods.insert(init ? methods.begin() : methods.end(), m);
      }
      for (TSNode m : methods) {
        c = FindCallAssignedTo(src, m, name, kAnyByte);
        if (!IsNull(c)) return c;
      }
    }
  }
  if (NodeType(scope) != "module") c = FindCallAssignedTo(src, src.root(), name, kAnyByte);
  return c;
}

// Where an iterable comes from: the DataLoader-like call it leads to (through assignments and
// the first argument of enumerate()/tqdm()/iter()/prepare()), and the first call it was assigned
// from.
struct Origin {
  TSNode loader = {};
  TSNode assigned = {};
  std::string assigned_name;
};

void FollowIterable(const PythonSource& src, TSNode expr, uint32_t before, int depth, Origin* o) {
  if (IsNull(expr) || depth > 6 || !IsNull(o->loader)) return;
  std::string_view t = NodeType(expr);
  if (t == "parenthesized_expression") {
    FollowIterable(src, ts_node_named_child(expr, 0), before, depth + 1, o);
  } else if (t == "identifier" || t == "attribute") {
    std::string name = Compact(src.NodeText(expr));
    TSNode c = FindAssigned(src, expr, name, before);
    if (IsNull(c)) return;
    if (IsNull(o->assigned)) {
      o->assigned = c;
      o->assigned_name = name;
    }
    // Names in the assigned call resolve before the assignment (`loader = wrap(loader)`).
    TSNode parent = ts_node_parent(c);
    uint32_t at = IsNull(parent) ? ts_node_start_byte(c) : ts_node_start_byte(parent);
    FollowIterable(src, c, at, depth + 1, o);
  } else if (t == "call") {
    if (ContainsIgnoreCase(CalleeName(src, expr), "loader")) {
      o->loader = expr;
      return;
    }
    FollowIterable(src, FirstPositionalArgument(expr), before, depth + 1, o);
  }
}

// The calls a code's shape narrows to; see the table in source_ranges.h.
struct CallSpec {
  SourceShape shape;
  std::vector<std::string_view> names;
  bool innermost;
  const char* what;  // for stale reasons
};

const std::vector<CallSpec>& CallSpecs() {
  static const std::vector<CallSpec> kSpecs = {
      {SourceShape::kHostReadCall,
       {"item", "cpu", "tolist", "numpy", "synchronize"},
       true,
       "an .item()/.cpu()/.tolist()/.numpy()/synchronize() call"},
      {SourceShape::kTransferCall, {"to", "cuda", "cpu"}, true, "a .to()/.cuda()/.cpu() call"},
      {SourceShape::kTensorCreation,
       {"tensor", "as_tensor", "from_numpy", "to", "cuda"},
       false,
       "a tensor creation or .to()/.cuda() call"},
      {SourceShape::kEmptyCacheCall, {"empty_cache"}, false, "an empty_cache() call"},
  };
  return kSpecs;
}

// The shape a finding code's statement narrows to (the registry's; a region-dependent shape,
// TTA017's, is not narrowed: its stack names the statement).
SourceShape ShapeOfCode(std::string_view code) {
  const RuleSpec* spec = FindRuleSpec(code);
  return spec && spec->shape != SourceShape::kByRegion ? spec->shape : SourceShape::kNone;
}

const CallSpec* SpecFor(SourceShape shape) {
  for (const CallSpec& s : CallSpecs()) {
    if (shape == s.shape) return &s;
  }
  return nullptr;
}

bool HasShape(SourceShape shape) {
  return SpecFor(shape) || shape == SourceShape::kDataLoaderLoop ||
         shape == SourceShape::kZeroGradCall || shape == SourceShape::kOptimizerStep ||
         shape == SourceShape::kModelCall;
}

std::string ShapeDescription(SourceShape shape) {
  if (const CallSpec* s = SpecFor(shape)) return s->what;
  switch (shape) {
    case SourceShape::kDataLoaderLoop:
      return "a loop over a DataLoader";
    case SourceShape::kZeroGradCall:
      return "a zero_grad() call";
    case SourceShape::kOptimizerStep:
      return "an optimizer .step() call";
    case SourceShape::kModelCall:
      return "a model call";
    default:
      return "the statement";
  }
}

// A narrowing of one statement: |strong| when it is the shape the code looks for, weak when only
// plausible (any `for` loop for TTA001, a scheduler's .step() for TTA006, any call for TTA010).
struct Narrowed {
  bool found = false;
  bool strong = false;
  TSNode stmt = {};  // the statement |range| belongs to
  ByteRange range;
  RangeKind kind = RangeKind::kCall;
  bool has_related = false;
  ByteRange related;
  std::string label;
};

Narrowed OfCall(TSNode stmt, TSNode call, bool strong) {
  Narrowed n;
  n.found = true;
  n.strong = strong;
  n.stmt = stmt;
  n.range = PythonSource::NodeRange(call);
  n.kind = RangeKind::kCall;
  return n;
}

Narrowed OfForHeader(TSNode loop, bool strong) {
  Narrowed n;
  n.found = true;
  n.strong = strong;
  n.stmt = loop;
  n.range = {ts_node_start_byte(loop), HeaderEnd(loop)};
  n.kind = RangeKind::kForHeader;
  return n;
}

void SetLoaderRelated(const Origin& o, Narrowed* n) {
  if (!IsNull(o.loader)) {
    n->has_related = true;
    n->related = PythonSource::NodeRange(o.loader);
    n->label = "DataLoader defined here";
  } else if (!IsNull(o.assigned)) {
    n->has_related = true;
    n->related = PythonSource::NodeRange(o.assigned);
    n->label = "'" + o.assigned_name + "' assigned here";
  }
}

Narrowed NarrowDataLoader(const PythonSource& src, TSNode stmt, int line0,
                          const std::vector<TSNode>& calls) {
  if (NodeType(stmt) == "for_statement") {
    TSNode iterable = ts_node_child_by_field_name(stmt, "right", 5);
    Origin o;
    FollowIterable(src, iterable, ts_node_start_byte(stmt), 0, &o);
    bool strong = !IsNull(o.loader) ||
                  (!IsNull(iterable) && ContainsIgnoreCase(src.NodeText(iterable), "loader"));
    Narrowed n = OfForHeader(stmt, strong);
    SetLoaderRelated(o, &n);
    return n;
  }
  TSNode call = PickCall(
      calls, line0,
      [&](TSNode c) {
        std::string callee = CalleeText(src, c);
        return callee == "next" || callee == "iter";
      },
      false);
  if (IsNull(call)) return {};
  TSNode arg = FirstPositionalArgument(call);
  Origin o;
  FollowIterable(src, arg, ts_node_start_byte(stmt), 0, &o);
  bool strong =
      !IsNull(o.loader) || (!IsNull(arg) && ContainsIgnoreCase(src.NodeText(arg), "loader"));
  Narrowed n = OfCall(stmt, call, strong);
  SetLoaderRelated(o, &n);
  return n;
}

// A call that zeroes one parameter's gradient: `p.grad.zero_()`, `p.grad.detach_().zero_()`.
bool ZeroesGrad(const PythonSource& src, TSNode call) {
  return CalleeName(src, call) == "zero_" &&
         CalleeText(src, call).find(".grad") != std::string::npos;
}

// A loop that zeroes the gradient of each element it iterates: `for p in params: p.grad.zero_()`,
// `for name, p in model.named_parameters(): ...`.
bool LoopZeroesItsGrads(const PythonSource& src, TSNode loop) {
  TSNode left = ts_node_child_by_field_name(loop, "left", 4);
  TSNode body = ts_node_child_by_field_name(loop, "body", 4);
  if (IsNull(left) || IsNull(body)) return false;
  std::vector<std::string> names;
  Walk(left, [&](TSNode n) {
    if (NodeType(n) == "identifier") names.emplace_back(src.NodeText(n));
    return true;
  });
  for (TSNode c : CallsIn(body)) {
    if (!ZeroesGrad(src, c)) continue;
    std::string callee = CalleeText(src, c);
    for (const std::string& name : names) {
      if (StartsWith(callee, name + ".")) return true;
    }
  }
  return false;
}

Narrowed NarrowZeroGrad(const PythonSource& src, TSNode stmt, int line0,
                        const std::vector<TSNode>& calls) {
  TSNode call = PickCall(
      calls, line0, [&](TSNode c) { return CalleeName(src, c) == "zero_grad"; }, false);
  if (!IsNull(call)) return OfCall(stmt, call, true);
  // A manual loop: the frame is the loop's header or the `p.grad.zero_()` in its body.
  if (NodeType(stmt) == "for_statement" && LoopZeroesItsGrads(src, stmt)) {
    return OfForHeader(stmt, true);
  }
  TSNode zero = PickCall(
      calls, line0, [&](TSNode c) { return ZeroesGrad(src, c); }, false);
  if (IsNull(zero)) return {};
  for (TSNode p = ts_node_parent(stmt); !IsNull(p); p = ts_node_parent(p)) {
    if (IsDefinition(NodeType(p))) break;
    if (NodeType(p) == "for_statement" && LoopZeroesItsGrads(src, p)) return OfForHeader(p, true);
  }
  return OfCall(stmt, zero, false);  // one gradient, not a loop over them
}

Narrowed NarrowOptimizerStep(const PythonSource& src, TSNode stmt, int line0,
                             const std::vector<TSNode>& calls) {
  auto is_step = [&](TSNode c) { return CalleeName(src, c) == "step"; };
  TSNode call = PickCall(
      calls, line0,
      [&](TSNode c) { return is_step(c) && !ContainsIgnoreCase(Receiver(src, c), "sched"); },
      false);
  bool strong = !IsNull(call);
  if (!strong) call = PickCall(calls, line0, is_step, false);
  if (IsNull(call)) return {};
  Narrowed n = OfCall(stmt, call, strong);
  // The optimizer: the receiver, or the argument of `scaler.step(optimizer)`.
  std::string receiver = Receiver(src, call);
  uint32_t before = ts_node_start_byte(stmt);
  TSNode ctor = receiver.empty() ? TSNode{} : FindAssigned(src, call, receiver, before);
  bool scaler = ContainsIgnoreCase(receiver, "scaler") ||
                (!IsNull(ctor) && ContainsIgnoreCase(CalleeName(src, ctor), "scaler"));
  if (scaler) {
    ctor = {};
    TSNode arg = FirstPositionalArgument(call);
    std::string_view t = NodeType(arg);
    if (t == "identifier" || t == "attribute") {
      ctor = FindAssigned(src, arg, Compact(src.NodeText(arg)), before);
    }
  }
  if (!IsNull(ctor)) {
    n.has_related = true;
    n.related = PythonSource::NodeRange(ctor);
    n.label = "optimizer created here";
  }
  return n;
}

Narrowed NarrowModelCall(const PythonSource& src, TSNode stmt, int line0,
                         const std::vector<TSNode>& calls) {
  TSNode call = PickCall(
      calls, line0,
      [&](TSNode c) {
        std::string name = CalleeName(src, c);
        return ContainsIgnoreCase(name, "conv") || ContainsIgnoreCase(name, "model") ||
               ContainsIgnoreCase(name, "net") || name == "forward";
      },
      false);
  if (!IsNull(call)) return OfCall(stmt, call, true);
  call = PickCall(
      calls, line0, [](TSNode) { return true; }, false);
  if (IsNull(call)) return {};
  return OfCall(stmt, call, false);
}

Narrowed Narrow(const PythonSource& src, TSNode stmt, int line0, SourceShape shape) {
  if (IsNull(stmt)) return {};
  std::vector<TSNode> calls = StatementCalls(stmt);
  if (shape == SourceShape::kDataLoaderLoop) return NarrowDataLoader(src, stmt, line0, calls);
  if (shape == SourceShape::kZeroGradCall) return NarrowZeroGrad(src, stmt, line0, calls);
  if (shape == SourceShape::kOptimizerStep) return NarrowOptimizerStep(src, stmt, line0, calls);
  if (shape == SourceShape::kModelCall) return NarrowModelCall(src, stmt, line0, calls);
  if (const CallSpec* spec = SpecFor(shape)) {
    TSNode call = PickCall(
        calls, line0,
        [&](TSNode c) {
          std::string name = CalleeName(src, c);
          return std::find(spec->names.begin(), spec->names.end(), name) != spec->names.end();
        },
        spec->innermost);
    if (!IsNull(call)) return OfCall(stmt, call, true);
  }
  return {};
}

// Narrow() over every statement starting on the line (`a = 1; loss = x.item()`), preferring a
// strong match.
Narrowed NarrowAt(const PythonSource& src, TSNode stmt, int line0, SourceShape shape) {
  Narrowed weak;
  for (TSNode s = stmt; !IsNull(s) && Row(s) == line0 && IsStatementNode(NodeType(s));
       s = ts_node_next_named_sibling(s)) {
    Narrowed n = Narrow(src, s, line0, shape);
    if (n.strong) return n;
    if (n.found && !weak.found) weak = n;
    if (IsCompound(NodeType(s))) break;
  }
  if (weak.found) return weak;
  return Narrow(src, stmt, line0, shape);
}

std::string DefinitionName(const PythonSource& src, TSNode def) {
  TSNode id = ts_node_child_by_field_name(def, "name", 4);
  return IsNull(id) ? std::string() : std::string(src.NodeText(id));
}

// The code object a node runs in: the innermost def or class, else "<module>".
std::string ScopeNameOf(const PythonSource& src, TSNode n) {
  for (TSNode p = ts_node_parent(n); !IsNull(p); p = ts_node_parent(p)) {
    if (IsDefinition(NodeType(p))) return DefinitionName(src, p);
  }
  return "<module>";
}

// "Trainer.train_step" -> "train_step"; "<module>" stays.
std::string FunctionKey(const std::string& function) {
  if (!function.empty() && function[0] == '<') return function;
  size_t dot = function.rfind('.');
  return dot == std::string::npos ? function : function.substr(dot + 1);
}

// Frames of lambdas and comprehensions ("<lambda>", "<listcomp>") name no def to check.
bool Unverifiable(const std::string& fn) {
  return fn.empty() || (fn[0] == '<' && fn != "<module>");
}

// The body of def |fn| when |stmt| is its header on |line0| (PyTorch's tracer names a frame by
// its def line); a null node otherwise.
TSNode DefBodyAt(const PythonSource& src, TSNode stmt, int line0, const std::string& fn) {
  if (IsNull(stmt) || Row(stmt) != line0) return {};
  if (NodeType(stmt) == "decorated_definition") {
    stmt = ts_node_child_by_field_name(stmt, "definition", 10);
  }
  if (IsNull(stmt) || NodeType(stmt) != "function_definition" || Row(stmt) != line0 ||
      DefinitionName(src, stmt) != fn) {
    return {};
  }
  return ts_node_child_by_field_name(stmt, "body", 4);
}

// The def's first call of |callee| when |stmt| is the header of def |fn| on |line0|: what the
// frame called says which statement ran.
Narrowed NarrowToCallee(const PythonSource& src, TSNode stmt, int line0, const std::string& fn,
                        const std::string& callee) {
  if (callee.empty()) return {};
  TSNode body = DefBodyAt(src, stmt, line0, fn);
  if (IsNull(body)) return {};
  TSNode call = PickCall(
      CallsIn(body), -1, [&](TSNode c) { return CalleeName(src, c) == callee; }, false);
  if (IsNull(call)) return {};
  TSNode owner = call;
  while (!IsNull(owner) && !IsStatementNode(NodeType(owner))) owner = ts_node_parent(owner);
  if (IsNull(owner)) return {};
  return OfCall(owner, call, true);
}

// The one statement of def |fn|'s own body (nested defs aside) with |shape|, when |stmt| is its
// header on |line0|: the frame is the function itself, with nothing it called in between (an
// `.item()` in train()'s body is aten::item's frame `train`); several such statements say
// nothing of which ran, and the def stays.
Narrowed NarrowToShapeInDef(const PythonSource& src, TSNode stmt, int line0, const std::string& fn,
                            SourceShape shape) {
  TSNode body = DefBodyAt(src, stmt, line0, fn);
  if (IsNull(body)) return {};
  Narrowed one;
  int matches = 0;
  WalkRows(body, Row(body), ts_node_end_point(body).row, [&](TSNode n) {
    std::string_view t = NodeType(n);
    if (IsDefinition(t) || t == "decorated_definition" || matches > 1) return false;
    if (IsStatementNode(t)) {
      Narrowed m = Narrow(src, n, Row(n), shape);
      if (m.found && m.strong && ++matches == 1) one = m;
    }
    return MayHoldStatements(t);
  });
  return matches == 1 ? one : Narrowed{};
}

bool Encloses(const PythonSource& src, TSNode stmt, int line0, const std::string& fn) {
  if (Unverifiable(fn)) return true;
  TSNode at = stmt;
  if (IsNull(at)) {
    std::string_view text = src.LineText(line0);
    size_t first = text.find_first_not_of(" \t");
    uint32_t b =
        src.LineStart(line0) + static_cast<uint32_t>(first == std::string_view::npos ? 0 : first);
    at = ts_node_descendant_for_byte_range(src.root(), b, b);
  }
  if (ScopeNameOf(src, at) == fn) return true;
  // A def's own header line may be reported as the function's line.
  std::string_view t = NodeType(at);
  if (t == "decorated_definition") at = ts_node_child_by_field_name(at, "definition", 10);
  return IsDefinition(NodeType(at)) && DefinitionName(src, at) == fn;
}

// How far (in lines) re-anchoring looks for the statement a finding names: a script edited since
// the trace moves statements by a few lines; a search over a whole 6 MB buffer on every keystroke
// is what a bound avoids.
constexpr int kReanchorLines = 1000;
uint32_t ReanchorLo(int line0) {
  return static_cast<uint32_t>(std::max(0, line0 - kReanchorLines));
}
uint32_t ReanchorHi(int line0) {
  return static_cast<uint32_t>(std::max(0, line0 + kReanchorLines));
}

// The bodies whose statements are searched when re-anchoring |fn| near |line0|.
std::vector<TSNode> ScopesNamed(const PythonSource& src, const std::string& fn, int line0) {
  std::vector<TSNode> scopes;
  if (fn == "<module>") {
    scopes.push_back(src.root());
    return scopes;
  }
  WalkRows(src.root(), ReanchorLo(line0), ReanchorHi(line0), [&](TSNode n) {
    if (IsDefinition(NodeType(n)) && DefinitionName(src, n) == fn) {
      TSNode body = ts_node_child_by_field_name(n, "body", 4);
      if (!IsNull(body)) scopes.push_back(body);
    }
    return MayHoldStatements(NodeType(n));
  });
  return scopes;
}

// The strong match nearest |line0| among the statements of |scopes| (nested defs and classes
// are other code objects and are skipped).
bool FindReanchor(const PythonSource& src, const std::vector<TSNode>& scopes, int line0,
                  SourceShape shape, Narrowed* best) {
  int best_distance = INT_MAX;
  const int center = std::min(line0, std::max(0, RealLineCount(src) - 1));
  for (TSNode scope : scopes) {
    WalkRows(scope, ReanchorLo(center), ReanchorHi(center), [&](TSNode n) {
      std::string_view t = NodeType(n);
      if (IsDefinition(t) || t == "decorated_definition") return false;
      if (IsStatementNode(t)) {
        Narrowed m = Narrow(src, n, Row(n), shape);
        if (m.found && m.strong) {
          int row = src.ToPosition(m.range.start, PositionEncoding::kUtf8).line;
          int distance = std::abs(row - line0);
          if (distance < best_distance) {
            best_distance = distance;
            *best = m;
          }
        }
      }
      return MayHoldStatements(t);
    });
  }
  return best_distance != INT_MAX;
}

void Apply(const PythonSource& src, const Narrowed& n, TSNode stmt, int line0, MappedRange* out) {
  out->has_related = false;
  out->related = {};
  out->related_label.clear();
  if (n.found) {
    out->range = n.range;
    out->kind = n.kind;
    out->statement = StatementRange(n.stmt);
    out->has_related = n.has_related;
    out->related = n.related;
    out->related_label = n.label;
    return;
  }
  if (!IsNull(stmt)) {
    out->statement = StatementRange(stmt);
    out->range = out->statement;
    out->kind = RangeKind::kStatement;
    SourcePosition a = src.ToPosition(out->statement.start, PositionEncoding::kUtf8);
    SourcePosition b = src.ToPosition(out->statement.end, PositionEncoding::kUtf8);
    if (!IsCompound(NodeType(stmt)) && a.line != b.line) {
      // Several lines: only the first call on the frame's line.
      for (TSNode c : CallsIn(stmt)) {
        if (Row(c) == line0) {
          out->range = PythonSource::NodeRange(c);
          out->kind = RangeKind::kCall;
          break;
        }
      }
    }
    return;
  }
  std::string_view text = src.LineText(line0);
  size_t first = text.find_first_not_of(" \t\f");
  size_t last = text.find_last_not_of(" \t\f");
  uint32_t start = src.LineStart(line0);
  if (first == std::string_view::npos) {
    out->range = {start, start};
  } else {
    out->range = {start + static_cast<uint32_t>(first), start + static_cast<uint32_t>(last) + 1};
  }
  out->kind = RangeKind::kLine;
  out->statement = out->range;
}

}  // namespace

MappedRange MapToSource(const PythonSource& src, const RangeQuery& q) {
  MappedRange out;
  out.line = q.line;
  const int line0 = q.line - 1;
  const std::string fn = FunctionKey(q.function);
  const SourceShape code_shape = ShapeOfCode(q.code);
  const bool has_shape = HasShape(code_shape);
  const std::string where = fn == "<module>" ? "module-level code" : "'" + fn + "'";
  const std::string shape = ShapeDescription(code_shape);

  enum class Failure { kUnverifiable, kNoFunction, kNoShape, kNoMatch };
  Failure failure = Failure::kNoMatch;
  auto reanchor = [&](Narrowed* found) {
    if (Unverifiable(fn)) {
      failure = Failure::kUnverifiable;
      return false;
    }
    std::vector<TSNode> scopes =
        ScopesNamed(src, fn, std::min(line0, std::max(0, RealLineCount(src) - 1)));
    if (scopes.empty()) {
      failure = Failure::kNoFunction;
      return false;
    }
    if (!has_shape) {
      failure = Failure::kNoShape;
      return false;
    }
    failure = Failure::kNoMatch;
    return FindReanchor(src, scopes, line0, code_shape, found);
  };
  auto why = [&]() -> std::string {
    switch (failure) {
      case Failure::kUnverifiable:
        return fn.empty() ? "the frame names no function to search"
                          : "a " + fn + " frame names no function to search";
      case Failure::kNoFunction:
        return "'" + fn + "' is no longer in the file";
      case Failure::kNoShape:
        return "";
      case Failure::kNoMatch:
        return where + " has no " + shape.substr(shape.find(' ') + 1);
    }
    return "";
  };
  auto take = [&](const Narrowed& n) {
    Apply(src, n, n.stmt, line0, &out);
    int row = src.ToPosition(n.range.start, PositionEncoding::kUtf8).line;
    if (row != line0) {
      out.reanchored = true;
      out.line = row + 1;
    }
  };
  auto join = [](std::string a, const std::string& b) { return b.empty() ? a : a + "; " + b; };

  if (q.line < 1 || line0 >= RealLineCount(src)) {
    Narrowed n;
    if (reanchor(&n)) {
      take(n);
      return out;
    }
    uint32_t end = static_cast<uint32_t>(src.text().size());
    out.range = out.statement = {end, end};
    out.kind = RangeKind::kLine;
    out.stale = out.past_end = true;
    out.stale_reason = join("line " + std::to_string(q.line) + " is past the end of the file (" +
                                std::to_string(RealLineCount(src)) + " lines)",
                            why());
    return out;
  }

  TSNode stmt = StatementAt(src, line0);
  {
    // A frame at its def line: the one statement of the code's shape in the def (a file edited
    // since the trace re-anchors by shape below), or for a code without a shape what the frame
    // called.
    Narrowed called;
    if (!has_shape) {
      called = NarrowToCallee(src, stmt, line0, fn, q.callee);
    } else if (!q.file_newer_than_trace) {
      called = NarrowToShapeInDef(src, stmt, line0, fn, code_shape);
    }
    if (called.found) {
      Apply(src, called, called.stmt, line0, &out);
      out.line = src.ToPosition(called.range.start, PositionEncoding::kUtf8).line + 1;
      return out;
    }
  }
  Narrowed here = NarrowAt(src, stmt, line0, code_shape);
  const bool encloses = Encloses(src, stmt, line0, fn);
  const bool verified = !q.file_newer_than_trace || !has_shape || here.strong;
  if (encloses && verified) {
    Apply(src, here, stmt, line0, &out);
    return out;
  }
  Narrowed moved;
  if (reanchor(&moved)) {
    take(moved);
    return out;
  }
  Apply(src, here, stmt, line0, &out);
  if (encloses && here.found) return out;  // a weak match on the line is still the best guess
  out.stale = true;
  if (!encloses) {
    TSNode at = stmt;
    if (IsNull(at)) {
      at =
          ts_node_descendant_for_byte_range(src.root(), src.LineStart(line0), src.LineStart(line0));
    }
    std::string now = ScopeNameOf(src, at);
    out.stale_reason =
        join("line " + std::to_string(q.line) + " is in " +
                 (now == "<module>" ? std::string("module-level code") : "'" + now + "'") +
                 ", not in " + where,
             why());
  } else {
    out.stale_reason =
        join("line " + std::to_string(q.line) + " is not " + shape + " any more", why());
  }
  return out;
}

}  // namespace ttap

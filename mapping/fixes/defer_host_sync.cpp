// Quick fix `defer-host-sync` (TTA002): a `.item()` read every step is deferred: accumulated as
// a tensor and converted when read, or logged every N steps. Listed in
// mapping/quick_fix_registry.cpp; called through ComputeFixes (mapping/quick_fixes.cpp).
#include "mapping/fixes/fix_util.h"
#include "mapping/quick_fix_registry.h"

namespace ttap::fixes {
namespace {

bool IsLoggingCall(const Ctx& c, TSNode call) {
  static const std::set<std::string> kLog = {
      "print",       "log",         "info",        "debug",           "warning",         "warn",
      "add_scalar",  "add_scalars", "set_postfix", "set_postfix_str", "set_description", "write",
      "log_metrics", "log_dict",    "pprint"};
  return NodeType(call) == "call" && kLog.count(CalleeName(c.src, call));
}

bool IsItemCall(const Ctx& c, TSNode call) {
  if (NodeType(Field(call, "function")) != "attribute" || CalleeName(c.src, call) != "item") {
    return false;
  }
  auto a = ReadArgs(call);
  return a && a->items.empty();
}

// True when |n| runs only under an `if` inside |loop| (not in its condition).
bool Guarded(TSNode n, TSNode loop) {
  for (TSNode p = Parent(n); !IsNull(p) && !Same(p, loop); p = Parent(p)) {
    if (NodeType(p) != "block") continue;
    std::string_view pt = NodeType(Parent(p));
    if (pt == "if_statement" || pt == "elif_clause" || pt == "else_clause") return true;
  }
  return false;
}

// The indentation one level deeper than |loop|'s header.
std::string IndentUnit(const Ctx& c, TSNode loop) {
  std::string outer = IndentationAt(c.src, Start(loop));
  TSNode first = FirstChild(Field(loop, "body"));
  if (!IsNull(first) && Row(first) > Row(loop)) {
    std::string inner = IndentationAt(c.src, Start(first));
    if (inner.size() > outer.size() && StartsWith(inner, outer)) return inner.substr(outer.size());
  }
  return outer.find('\t') != std::string::npos ? "\t" : "    ";
}

bool InsideString(const PythonSource& src, uint32_t byte) {
  for (TSNode n = ts_node_descendant_for_byte_range(src.root(), byte, byte); !IsNull(n);
       n = Parent(n)) {
    std::string_view t = NodeType(n);
    if (t == "string" || t == "concatenated_string") return Start(n) < byte;
  }
  return false;
}

// |stmt|'s text with its continuation lines indented by |unit| (not inside strings).
std::string Reindented(const PythonSource& src, TSNode stmt, const std::string& unit) {
  std::string out;
  const std::string& text = src.text();
  for (uint32_t b = Start(stmt); b < End(stmt); ++b) {
    out.push_back(text[b]);
    if (text[b] == '\n' && b + 1 < End(stmt) && text[b + 1] != '\n' && text[b + 1] != '\r' &&
        !InsideString(src, b + 1)) {
      out += unit;
    }
  }
  return out;
}

int SyncEvery(const Ctx& c) {
  long n = 0;
  if (ParseInt(c.Fact("sync_every"), &n) && n > 0) return static_cast<int>(n);
  return 100;
}

// `running += loss.item()`: accumulate the tensor instead; reads of the accumulator (only under
// an `if` inside the loop, or outside it) convert it with float()/int().
StatusOr<Fixes> Accumulate(const Ctx& c, TSNode e, TSNode item, TSNode loop) {
  const PythonSource& src = c.src;
  if (View(src, Field(e, "operator")) != "+=") {
    return c.Error("the .item() value is combined with `" +
                   std::string(View(src, Field(e, "operator"))) + "`, not summed");
  }
  TSNode left = Field(e, "left");
  if (NodeType(left) != "identifier") {
    return c.Error("the accumulator `" + CompactNode(src, left) + "` is not a plain variable");
  }
  const std::string acc = Text(src, left);
  for (TSNode call : CallsIn(Field(e, "right"))) {
    std::string cn = CalleeName(src, call);
    if (cn == "cpu" || cn == "tolist" || cn == "numpy" || (cn == "item" && !Same(call, item))) {
      return c.Error("the sum has other host copies (`" + CompactNode(src, call) + "`)");
    }
  }
  TSNode scope = EnclosingScope(c.stmt);
  if (NodeType(scope) == "class_definition") return c.Error("the loop is in a class body");
  std::vector<TSNode> reads;
  bool any_init = false, float_init = false;
  Status bad;
  auto where = [&](TSNode n) { return " (line " + std::to_string(Row(n) + 1) + ")"; };
  Walk(scope, [&](TSNode n) {
    if (!bad.ok()) return false;
    std::string_view t = NodeType(n);
    if (!Same(n, scope) && IsDefinition(t)) {
      if (ContainsIdentifier(src, n, acc)) {
        bad = c.Error("`" + acc + "` is used in a nested function or lambda" + where(n));
      }
      return false;
    }
    if (t != "identifier" || View(src, n) != acc) return true;
    if (Contains(c.stmt, n)) return false;
    TSNode p = Parent(n);
    std::string_view pt = NodeType(p);
    if (pt == "attribute" && Same(Field(p, "attribute"), n)) return false;
    if (pt == "keyword_argument" && Same(Field(p, "name"), n)) return false;
    if (pt == "assignment" && Same(Field(p, "left"), n)) {
      std::string_view rt = NodeType(Field(p, "right"));
      if (rt == "integer" || rt == "float") {
        any_init = true;
        float_init = float_init || rt == "float";
      } else {
        bad = c.Error("`" + acc + "` is assigned `" + CompactNode(src, Field(p, "right")) + "`" +
                      where(n));
      }
      return false;
    }
    if ((pt == "augmented_assignment" && Same(Field(p, "left"), n)) || pt == "global_statement" ||
        pt == "nonlocal_statement" || pt == "pattern_list" || pt == "tuple_pattern" ||
        pt == "list_pattern" || pt == "parameters" || pt == "default_parameter" ||
        pt == "typed_parameter" || pt == "for_in_clause" || pt == "as_pattern_target" ||
        (pt == "for_statement" && Same(Field(p, "left"), n))) {
      bad = c.Error("`" + acc + "` is also updated or rebound" + where(n));
      return false;
    }
    if (pt == "attribute") {
      bad = c.Error("`" + Text(src, p) + "` uses the accumulator as an object" + where(n));
      return false;
    }
    if (Contains(loop, n) && !Guarded(n, loop)) {
      bad = c.Error("`" + acc + "` is read every step" + where(n) + "; the sync would stay");
      return false;
    }
    reads.push_back(n);
    return false;
  });
  if (!bad.ok()) return bad;
  if (!any_init) return c.Error("`" + acc + "` has no numeric start value (`" + acc + " = 0.0`)");
  TSNode obj = Field(Field(item, "function"), "object");
  std::string obj_text = Text(src, obj);
  std::string compact = CompactNode(src, obj);
  std::string conv;
  if (float_init || Lower(compact).find("loss") != std::string::npos) {
    conv = "float";
  } else if (EndsWith(compact, ".sum()") &&
             (compact.find("==") != std::string::npos || compact.find("!=") != std::string::npos ||
              compact.find(".eq(") != std::string::npos)) {
    conv = "int";
  } else {
    return c.Error("cannot tell whether `" + acc + "` sums floats or integers");
  }
  std::vector<TextEdit> edits;
  edits.push_back(
      {Range(item), EndsWith(compact, ".detach()") ? obj_text : obj_text + ".detach()"});
  for (TSNode r : reads) edits.push_back({Range(r), conv + "(" + acc + ")"});
  return Fixes{
      MakeFix("Accumulate `" + acc + "` on the device; sync only where it is read", edits, true)};
}

// `print(loss.item())` every step: log every N steps instead.
StatusOr<Fixes> GuardLogging(const Ctx& c, TSNode loop) {
  const PythonSource& src = c.src;
  TSNode stmt = c.stmt;
  for (TSNode p = Parent(stmt); !IsNull(p) && !Same(p, loop); p = Parent(p)) {
    if (NodeType(p) == "if_statement" &&
        View(src, Field(p, "condition")).find('%') != std::string_view::npos) {
      return Fixes{};  // already logged every N steps
    }
  }
  if (!OwnsItsLines(src, stmt)) {
    return c.Error("the logging statement shares its line with other code");
  }
  std::vector<TextEdit> edits;
  std::string step;
  if (NodeType(loop) == "for_statement") {
    TSNode left = Field(loop, "left"), right = Field(loop, "right");
    std::string_view lt = NodeType(left);
    if (NodeType(right) == "call" && CalleeName(src, right) == "enumerate" &&
        (lt == "pattern_list" || lt == "tuple_pattern") &&
        NodeType(FirstChild(left)) == "identifier") {
      step = Text(src, FirstChild(left));
    }
  }
  if (step.empty()) {  // a `step += 1` counter in the loop body
    for (TSNode s : Children(Field(loop, "body"))) {
      TSNode e = FirstChild(s);
      if (NodeType(s) == "expression_statement" && NodeType(e) == "augmented_assignment" &&
          View(src, Field(e, "operator")) == "+=" && NodeType(Field(e, "left")) == "identifier" &&
          CompactNode(src, Field(e, "right")) == "1") {
        step = Text(src, Field(e, "left"));
        break;
      }
    }
  }
  if (step.empty()) {
    if (NodeType(loop) != "for_statement") {
      return c.Error("no step counter (`step += 1`) in the while loop");
    }
    TSNode left = Field(loop, "left"), right = Field(loop, "right");
    if (NodeType(right) == "expression_list") return c.Error("the loop iterates a tuple");
    TSNode scope = EnclosingScope(loop);
    for (const char* name : {"step", "step_idx", "batch_idx", "ttap_step"}) {
      if (!ContainsIdentifier(src, scope, name)) {
        step = name;
        break;
      }
    }
    if (step.empty()) return c.Error("no free name for a step counter");
    std::string target =
        NodeType(left) == "pattern_list" ? "(" + Text(src, left) + ")" : Text(src, left);
    edits.push_back({Range(left), step + ", " + target});
    edits.push_back({Range(right), "enumerate(" + Text(src, right) + ")"});
  }
  std::string indent = IndentationAt(src, Start(stmt));
  std::string unit = IndentUnit(c, loop);
  int every = SyncEvery(c);
  edits.push_back({Range(stmt), "if " + step + " % " + std::to_string(every) + " == 0:" + c.nl +
                                    indent + unit + Reindented(src, stmt, unit)});
  return Fixes{MakeFix("Log every " + std::to_string(every) + " steps (one .item() sync per " +
                           std::to_string(every) + " steps instead of every step)",
                       edits, true)};
}

StatusOr<Fixes> FixHostSync(const Ctx& c) {
  const PythonSource& src = c.src;
  std::vector<TSNode> items;
  for (TSNode call : HeaderCalls(c.stmt)) {
    if (IsItemCall(c, call)) items.push_back(call);
  }
  TSNode first = FirstChild(c.stmt);
  if (items.empty()) {
    // Already fixed: `running += loss.detach()`, or the logging under `if step % N == 0:`.
    if (NodeType(first) == "augmented_assignment") {
      for (TSNode call : CallsIn(Field(first, "right"))) {
        if (CalleeName(src, call) == "detach") return Fixes{};
      }
    }
    if (NodeType(c.stmt) == "if_statement" &&
        View(src, Field(c.stmt, "condition")).find('%') != std::string_view::npos) {
      for (TSNode call : CallsIn(Field(c.stmt, "consequence"))) {
        if (IsItemCall(c, call)) return Fixes{};
      }
    }
    return c.Error("no .item() call here");
  }
  TSNode loop = EnclosingLoop(c.stmt);
  if (IsNull(loop)) return c.Error("the .item() call is not inside a loop");
  if (NodeType(c.stmt) != "expression_statement") {
    return c.Error("the .item() value decides control flow; it is not only logged");
  }
  if (NodeType(first) == "augmented_assignment") {
    if (items.size() != 1) return c.Error("several .item() calls in the sum");
    return Accumulate(c, first, items[0], loop);
  }
  if (IsLoggingCall(c, first)) return GuardLogging(c, loop);
  return c.Error(
      "the .item() value is neither summed (`total += loss.item()`) nor logged "
      "(print/log); cannot tell it is only used for logging");
}

}  // namespace

const QuickFixRecipe& DeferHostSync() {
  static const QuickFixRecipe k{"defer-host-sync", {"TTA002"}, FixHostSync};
  return k;
}

}  // namespace ttap::fixes

// Quick fix `zero-grad-set-to-none` (TTA005): zero_grad(set_to_none=False), or a bare zero_grad()
// before torch 2.0, becomes zero_grad(set_to_none=True); a `for p in ...: p.grad.zero_()` loop
// becomes the optimizer's zero_grad() or one torch._foreach_zero_ call. Listed in
// mapping/quick_fix_registry.cpp; called through ComputeFixes (mapping/quick_fixes.cpp).
#include "mapping/fixes/fix_util.h"
#include "mapping/quick_fix_registry.h"

namespace ttap::fixes {
namespace {

StatusOr<Fixes> ZeroGradCall(const Ctx& c, TSNode call, bool before2) {
  const PythonSource& src = c.src;
  auto a = ReadArgs(call);
  if (!a) return c.Error("zero_grad's arguments are not a plain argument list");
  if (a->star || a->star_star) {
    return c.Error("zero_grad() gets *args/**kwargs; cannot tell what set_to_none is");
  }
  TSNode kw = KeywordArgument(src, call, "set_to_none");
  TSNode value{};
  bool positional = false;
  if (!IsNull(kw)) {
    value = Field(kw, "value");
    if (a->items.size() != 1) return c.Error("zero_grad(...) has arguments besides set_to_none");
  } else if (a->items.size() == 1 && a->positional == 1) {
    value = a->items[0];
    positional = true;
  } else if (!a->items.empty()) {
    return c.Error("zero_grad(...) has arguments besides set_to_none");
  }
  if (IsNull(value)) {
    if (!before2) return Fixes{};  // set_to_none=True is the default since torch 2.0
    return Fixes{MakeFix("Use zero_grad(set_to_none=True)",
                         InsertKeywords(src, *a, {"set_to_none=True"}), true)};
  }
  std::string v = CompactNode(src, value);
  if (v == "True") return Fixes{};
  if (v != "False") {
    return c.Error("set_to_none is computed (`" + v + "`); cannot tell its value");
  }
  Fixes fixes;
  if (!before2) {
    fixes.push_back(MakeFix("Use zero_grad() (set_to_none=True)",
                            RemoveArgument(src, *a, positional ? value : kw), true));
  }
  fixes.push_back(MakeFix("Use zero_grad(set_to_none=True)",
                          {{Range(value), positional ? "set_to_none=True" : "True"}}, before2));
  return fixes;
}

// An optimizer (`name = torch.optim.X(<params>, ...)`) whose parameters are |params|, visible
// from |at|: in its scope, its class (`self.x`), or the module. "" when none.
std::string OptimizerOver(const Ctx& c, TSNode at, const std::string& params) {
  std::string found;
  auto src_text = [&](TSNode n) { return View(c.src, n); };
  auto scan = [&](TSNode within, bool enter_functions, uint32_t before, std::string_view prefix) {
    Walk(within, [&](TSNode n) {
      if (!found.empty() || Start(n) >= before) return false;
      std::string_view t = NodeType(n);
      if (IsDefinition(t) && !Same(n, within) && !(enter_functions && t == "function_definition")) {
        return false;
      }
      if (t != "assignment") return true;
      TSNode left = Field(n, "left"), right = Field(n, "right");
      if (!IsNameOrAttribute(left) || !StartsWith(src_text(left), prefix) ||
          OptimizerClass(c, right).empty()) {
        return true;
      }
      TSNode p = KeywordValue(c.src, right, "params");
      auto a = ReadArgs(right);
      if (IsNull(p) && a && a->positional >= 1) p = a->items[0];
      if (!IsNull(p) && CompactNode(c.src, p) == params) found = CompactNode(c.src, left);
      return true;
    });
  };
  TSNode scope = EnclosingScope(at);
  scan(scope, false, Start(at), "");
  TSNode cls = EnclosingClass(scope);
  if (found.empty() && !IsNull(cls)) scan(cls, true, UINT32_MAX, "self.");
  if (found.empty()) scan(c.src.root(), false, UINT32_MAX, "");
  return found;
}

StatusOr<Fixes> ZeroGradLoop(const Ctx& c, bool before2) {
  const PythonSource& src = c.src;
  TSNode loop{};
  int depth = 0;
  for (TSNode n = c.stmt; !IsNull(n) && depth < 6; n = Parent(n), ++depth) {
    std::string_view t = NodeType(n);
    if (t == "for_statement") {
      loop = n;
      break;
    }
    if (IsDefinition(t) || t == "module" || t == "while_statement") break;
  }
  if (IsNull(loop)) {
    return c.Error("no zero_grad() call and no `for p in ...: p.grad.zero_()` loop here");
  }
  const std::string shape =
      "the loop does not only zero the gradients (`for p in ...: p.grad.zero_()`)";
  if (!IsNull(Field(loop, "alternative")) || NodeType(ts_node_child(loop, 0)) == "async") {
    return c.Error(shape);
  }
  TSNode target = Field(loop, "left"), iter = Field(loop, "right");
  std::vector<TSNode> body = Children(Field(loop, "body"));
  if (body.size() != 1) return c.Error(shape);
  TSNode s = body[0];
  std::string guard;
  if (NodeType(s) == "if_statement") {
    if (!IsNull(Field(s, "alternative"))) return c.Error(shape);
    guard = CompactNode(src, Field(s, "condition"));
    std::vector<TSNode> inner = Children(Field(s, "consequence"));
    if (inner.size() != 1) return c.Error(shape);
    s = inner[0];
  }
  if (NodeType(s) != "expression_statement") return c.Error(shape);
  TSNode e = FirstChild(s);
  if (NodeType(e) == "assignment" && EndsWith(CompactNode(src, Field(e, "left")), ".grad") &&
      CompactNode(src, Field(e, "right")) == "None") {
    return Fixes{};  // already sets the gradients to None
  }
  if (NodeType(e) != "call") return c.Error(shape);
  auto a = ReadArgs(e);
  std::string callee = CalleeText(src, e);
  std::string var;
  for (std::string_view suffix : {".grad.zero_", ".grad.data.zero_"}) {
    if (EndsWith(callee, suffix)) var = callee.substr(0, callee.size() - suffix.size());
  }
  if (var.empty() || !a || !a->items.empty()) return c.Error(shape);
  bool bound = false;
  Walk(target, [&](TSNode n) {
    if (NodeType(n) == "identifier" && View(src, n) == var) bound = true;
    return true;
  });
  if (!bound) return c.Error("the loop zeroes `" + var + ".grad`, which is not the loop variable");
  if (!guard.empty() && guard != Compact(var + ".grad is not None")) {
    return c.Error("the loop's condition `" + guard + "` is not `" + var + ".grad is not None`");
  }
  if (!OnlySpaceBefore(src, Start(loop))) return c.Error("the loop does not start its line");
  std::string trail;  // comments inside the loop follow the replacement on its line
  Walk(loop, [&](TSNode n) {
    if (NodeType(n) == "comment") trail += "  " + Text(src, n);
    return true;
  });
  Fixes fixes;
  std::string opt = OptimizerOver(c, loop, CompactNode(src, iter));
  if (!opt.empty()) {
    std::string call = opt + (before2 ? ".zero_grad(set_to_none=True)" : ".zero_grad()");
    fixes.push_back(MakeFix("Use " + call + " instead of zeroing each gradient",
                            {{Range(loop), call + trail}}, true));
  }
  if (c.HasTorch()) {
    std::string text = "torch._foreach_zero_([" + var + ".grad for " + Text(src, target) + " in " +
                       Text(src, iter) + " if " + var + ".grad is not None])";
    fixes.push_back(MakeFix("Zero all gradients in one call (torch._foreach_zero_)",
                            {{Range(loop), text + trail}}, opt.empty()));
  }
  if (fixes.empty()) {
    return c.Error("no optimizer over `" + Text(src, iter) +
                   "` in scope and torch is not imported as `torch`");
  }
  return fixes;
}

StatusOr<Fixes> FixZeroGrad(const Ctx& c) {
  bool before2 = c.FactTrue("torch_before_2");
  std::vector<TSNode> zero_grads;
  for (TSNode call : HeaderCalls(c.stmt)) {
    std::string name = CalleeName(c.src, call);
    if (name == "_foreach_zero_") return Fixes{};  // already one call
    if (name == "zero_grad") zero_grads.push_back(call);
  }
  if (zero_grads.size() > 1) return c.Error("several zero_grad() calls on the line");
  if (zero_grads.size() == 1) return ZeroGradCall(c, zero_grads[0], before2);
  return ZeroGradLoop(c, before2);
}

}  // namespace

const QuickFixRecipe& ZeroGradSetToNone() {
  static const QuickFixRecipe k{"zero-grad-set-to-none", {"TTA005"}, FixZeroGrad};
  return k;
}

}  // namespace ttap::fixes

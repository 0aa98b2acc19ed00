// Quick fix `optimizer-foreach` (TTA006): the torch.optim constructor behind the step (or built
// on the line) gets foreach=True, or fused=True for Adam/AdamW on CUDA. Listed in
// mapping/quick_fix_registry.cpp; called through ComputeFixes (mapping/quick_fixes.cpp).
#include "mapping/fixes/fix_util.h"
#include "mapping/quick_fix_registry.h"

namespace ttap::fixes {
namespace {

StatusOr<TSNode> FindOptimizerCall(const Ctx& c) {
  std::vector<TSNode> calls = HeaderCalls(c.stmt);
  for (TSNode call : calls) {
    if (!OptimizerClass(c, call).empty()) return call;
  }
  std::vector<std::string> names;
  for (TSNode call : calls) {
    std::string cn = CalleeName(c.src, call);
    if (cn != "step" && cn != "zero_grad") continue;
    TSNode f = Field(call, "function");
    if (NodeType(f) == "attribute" && IsNameOrAttribute(Field(f, "object"))) {
      names.push_back(CompactNode(c.src, Field(f, "object")));
    }
    auto a = ReadArgs(call);  // scaler.step(optimizer)
    if (a && a->positional >= 1 && IsNameOrAttribute(a->items[0])) {
      names.push_back(CompactNode(c.src, a->items[0]));
    }
  }
  if (names.empty()) return c.Error("no optimizer.step() call or optimizer constructor here");
  auto want = [&](TSNode x) { return !OptimizerClass(c, x).empty(); };
  for (const std::string& name : names) {
    TSNode call = ResolveCall(c, name, c.stmt, want);
    if (!IsNull(call)) return call;
  }
  return c.Error("cannot find the torch.optim constructor `" + names[0] +
                 "` comes from (only `name = torch.optim.X(...)` in this scope, its class or the "
                 "module is followed)");
}

StatusOr<Fixes> FixOptimizer(const Ctx& c) {
  const PythonSource& src = c.src;
  StatusOr<TSNode> found = FindOptimizerCall(c);
  if (!found.ok()) return found.status();
  TSNode call = *found;
  std::string cls = OptimizerClass(c, call);
  if (!ForeachOptimizers().count(cls)) {
    return c.Error("torch.optim." + cls + " has no foreach or fused implementation");
  }
  auto a = ReadArgs(call);
  if (!a) return c.Error("the optimizer's arguments are not a plain argument list");
  if (a->star_star) {
    return c.Error("the optimizer gets **kwargs; cannot tell whether foreach/fused are set");
  }
  TSNode fused = KeywordArgument(src, call, "fused");
  TSNode foreach = KeywordArgument(src, call, "foreach");
  auto value = [&](TSNode kw) {
    return IsNull(kw) ? std::string() : CompactNode(src, Field(kw, "value"));
  };
  if (value(fused) == "True" || value(foreach) == "True") return Fixes{};
  for (TSNode kw : {fused, foreach}) {
    if (!IsNull(kw) && !IsLiteral(value(kw), {"False", "None"})) {
      return c.Error("`" + CompactNode(src, kw) + "` is computed; cannot tell its value");
    }
  }
  std::string device = Lower(c.Fact("device"));
  bool cuda = StartsWith(device, "cuda");
  bool fused_ok = (cls == "Adam" || cls == "AdamW") && (cuda || device.empty()) &&
                  CompactNode(src, KeywordValue(src, call, "differentiable")) != "True";

  std::vector<TextEdit> foreach_edits =
      IsNull(foreach) ? InsertKeywords(src, *a, {"foreach=True"})
                      : std::vector<TextEdit>{{Range(Field(foreach, "value")), "True"}};
  QuickFix foreach_fix = MakeFix("Use the multi-tensor " + cls + " (foreach=True)", foreach_edits,
                                 !(fused_ok && cuda));
  if (!fused_ok) return Fixes{foreach_fix};
  std::vector<TextEdit> fused_edits;
  if (!IsNull(fused)) {
    fused_edits.push_back({Range(Field(fused, "value")), "True"});
    if (!IsNull(foreach)) {
      for (auto& e : RemoveArgument(src, *a, foreach)) fused_edits.push_back(e);
    }
  } else if (!IsNull(foreach)) {
    fused_edits.push_back({Range(foreach), "fused=True"});
  } else {
    fused_edits = InsertKeywords(src, *a, {"fused=True"});
  }
  QuickFix fused_fix = MakeFix("Use the fused CUDA " + cls + " (fused=True)", fused_edits, cuda);
  if (cuda) return Fixes{fused_fix, foreach_fix};
  return Fixes{foreach_fix, fused_fix};
}

}  // namespace

const QuickFixRecipe& OptimizerForeach() {
  static const QuickFixRecipe k{"optimizer-foreach", {"TTA006"}, FixOptimizer};
  return k;
}

}  // namespace ttap::fixes

// Quick fix `channels-last` (TTA010): the model and its input batches move with
// memory_format=torch.channels_last. Listed in mapping/quick_fix_registry.cpp; called through
// ComputeFixes (mapping/quick_fixes.cpp).
#include "mapping/fixes/fix_util.h"
#include "mapping/quick_fix_registry.h"

namespace ttap::fixes {
namespace {

bool HasChannelsLast(const Ctx& c, TSNode n) {
  if (IsNull(n)) return false;
  for (TSNode call : CallsIn(n)) {
    TSNode v = KeywordValue(c.src, call, "memory_format");
    if (!IsNull(v) && View(c.src, v).find("channels_last") != std::string_view::npos) return true;
  }
  return false;
}

// True when some `NAME.xxx(..., memory_format=torch.channels_last)` call exists in the file.
bool ConvertedSomewhere(const Ctx& c, const std::string& name) {
  for (TSNode call : CallsIn(c.src.root())) {
    if (StartsWith(CalleeText(c.src, call), name + ".") && HasChannelsLast(c, call)) return true;
  }
  return false;
}

bool IsMoveCall(const Ctx& c, TSNode n) {
  if (NodeType(n) != "call" || NodeType(Field(n, "function")) != "attribute") return false;
  std::string cn = CalleeName(c.src, n);
  return cn == "to" || cn == "cuda";
}

// Adds memory_format=torch.channels_last to a .to()/.cuda() call; false when it cannot.
bool AddMemoryFormat(const Ctx& c, TSNode call, std::vector<TextEdit>* edits) {
  auto a = ReadArgs(call);
  if (!a || a->star_star) return false;
  TSNode v = KeywordValue(c.src, call, "memory_format");
  if (!IsNull(v)) {
    edits->push_back({Range(v), "torch.channels_last"});
    return true;
  }
  for (auto& e : InsertKeywords(c.src, *a, {"memory_format=torch.channels_last"})) {
    edits->push_back(e);
  }
  return true;
}

StatusOr<Fixes> FixChannelsLast(const Ctx& c) {
  const PythonSource& src = c.src;
  if (!c.HasTorch()) {
    return c.Error("torch is not imported as `torch`; the fix needs torch.channels_last");
  }
  TSNode scope = EnclosingScope(c.stmt);
  if (NodeType(scope) == "function_definition" && View(src, Field(scope, "name")) == "forward") {
    return c.Error("the line is inside forward(); convert the model where it is built and called");
  }
  static const std::set<std::string> kWrappers = {
      "DistributedDataParallel",  "DDP",  "DataParallel",
      "FullyShardedDataParallel", "FSDP", "compile"};
  // The model call: `name(input, ...)` where name is assigned from a constructor that is not a
  // DataLoader, an optimizer, a loss or a single torch.nn layer; the innermost one wins.
  TSNode model_call{}, model_asg{};
  std::string model_name;
  for (TSNode call : HeaderCalls(c.stmt)) {
    TSNode f = Field(call, "function");
    if (!IsNameOrAttribute(f)) continue;
    auto a = ReadArgs(call);
    if (!a || a->items.empty()) continue;
    std::string name = CompactNode(src, f);
    TSNode asg = FindAssigned(c, name, c.stmt);
    if (IsNull(asg) || IsDataLoader(c, asg) || !OptimizerClass(c, asg).empty()) continue;
    std::string q = c.Qualify(CalleeText(src, asg));
    std::string last = q.substr(q.rfind('.') + 1);
    if (EndsWith(last, "Loss")) continue;
    if (StartsWith(q, "torch.nn.") && last != "Sequential" && !kWrappers.count(last)) continue;
    model_call = call;
    model_asg = asg;
    model_name = name;
  }
  if (IsNull(model_call)) {
    return c.Error("cannot find the model called here (`model(x)` with `model = Net(...)`)");
  }
  std::vector<TextEdit> edits;
  // The model: insert `model = model.to(memory_format=...)` after it is built (before any DDP /
  // FSDP / torch.compile wrapper).
  bool model_done = ConvertedSomewhere(c, model_name);
  TSNode target = model_asg;
  std::string target_name = model_name;
  for (int i = 0; i < 8 && !model_done; ++i) {
    if (HasChannelsLast(c, target)) {
      model_done = true;
      break;
    }
    if (!kWrappers.count(CalleeName(src, target))) break;
    auto a = ReadArgs(target);
    if (!a || a->positional < 1 || !IsNameOrAttribute(a->items[0])) {
      return c.Error("cannot see the model that `" + CalleeText(src, target) + "` wraps");
    }
    target_name = CompactNode(src, a->items[0]);
    if (ConvertedSomewhere(c, target_name)) {
      model_done = true;
      break;
    }
    TSNode inner = FindAssigned(c, target_name, target);
    if (IsNull(inner)) return c.Error("cannot find where `" + target_name + "` is built");
    target = inner;
  }
  if (!model_done) {
    // `model = Net().to(memory_format=...)` then `model = model.cuda()`: converted earlier.
    TSNode prev = target;
    for (int i = 0; i < 8; ++i) {
      TSNode f = Field(prev, "function");
      if (NodeType(f) != "attribute" ||
          !StartsWith(CompactNode(src, Field(f, "object")), target_name)) {
        break;
      }
      prev = FindAssigned(c, target_name, prev);
      if (IsNull(prev)) break;
      if (HasChannelsLast(c, prev)) {
        model_done = true;
        break;
      }
    }
  }
  if (!model_done) {
    TSNode assignment = Parent(target);
    TSNode st = Parent(assignment);
    if (NodeType(assignment) != "assignment" || NodeType(st) != "expression_statement") {
      return c.Error("`" + target_name + "` is not built by a plain assignment");
    }
    if (!OwnsItsLines(src, st)) {
      return c.Error("`" + CompactNode(src, st) + "` shares its line with other code");
    }
    uint32_t eol = LineEnd(src, EndRow(st));
    edits.push_back({{eol, eol},
                     c.nl + IndentationAt(src, Start(st)) + target_name + " = " + target_name +
                         ".to(memory_format=torch.channels_last)"});
  }
  // The input: its .to()/.cuda() (on the line or in its assignment inside the loop) gets
  // memory_format=; otherwise it is converted where it is passed.
  auto a = ReadArgs(model_call);
  if (!a || a->positional < 1 || NodeType(a->items[0]) == "keyword_argument") {
    return c.Error("the model gets no positional input here");
  }
  TSNode input = a->items[0];
  bool input_done = HasChannelsLast(c, input);
  if (!input_done) {
    bool added = false;
    if (IsMoveCall(c, input)) {
      added = AddMemoryFormat(c, input, &edits);
    } else if (NodeType(input) == "identifier") {
      TSNode asg = FindCallAssignedTo(src, scope, View(src, input), Start(c.stmt));
      TSNode loop = EnclosingLoop(c.stmt);
      bool near =
          !IsNull(asg) && Same(EnclosingScope(asg), scope) && (IsNull(loop) || Contains(loop, asg));
      if (near && HasChannelsLast(c, asg)) {
        input_done = added = true;
      } else if (near && IsMoveCall(c, asg)) {
        added = AddMemoryFormat(c, asg, &edits);
      }
    }
    if (!added) {
      std::string_view t = NodeType(input);
      bool primary = t == "identifier" || t == "attribute" || t == "call" || t == "subscript" ||
                     t == "parenthesized_expression";
      std::string text = Text(src, input);
      edits.push_back({Range(input), (primary ? text : "(" + text + ")") +
                                         ".to(memory_format=torch.channels_last)"});
    }
  }
  if (edits.empty()) return Fixes{};
  std::string title = model_done   ? "Convert the model's input to channels_last"
                      : input_done ? "Convert the model to channels_last"
                                   : "Use channels_last memory format for the model and its input";
  return Fixes{MakeFix(title, edits, true)};
}

}  // namespace

const QuickFixRecipe& ChannelsLast() {
  static const QuickFixRecipe k{"channels-last", {"TTA010"}, FixChannelsLast};
  return k;
}

}  // namespace ttap::fixes

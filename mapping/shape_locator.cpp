// LocateByShape; see shape_locator.h.
#include "mapping/shape_locator.h"

#include "analysis/string_util.h"
#include "mapping/syntax_util.h"

namespace ttap {

namespace {

std::string ScopeName(const PythonSource& src, TSNode n) {
  TSNode scope = EnclosingScope(n);
  if (NodeType(scope) != "function_definition") return "<module>";
  TSNode id = ts_node_child_by_field_name(scope, "name", 4);
  return IsNull(id) ? "<module>" : std::string(src.NodeText(id));
}

// A `for` over a DataLoader: its iterable names a loader, or is a name assigned from a call
// whose callee is *DataLoader*.
bool LoopsOverLoader(const PythonSource& src, TSNode loop) {
  TSNode it = ts_node_child_by_field_name(loop, "right", 5);
  if (IsNull(it)) return false;
  const std::string_view text = src.NodeText(it);
  if (ContainsIgnoreCase(text, "loader")) return true;
  if (NodeType(it) == "identifier") {
    TSNode call = FindCallAssignedTo(src, EnclosingScope(loop), text, ts_node_start_byte(loop));
    return !IsNull(call) && ContainsIgnoreCase(CalleeName(src, call), "dataloader");
  }
  if (NodeType(it) == "call") return ContainsIgnoreCase(CalleeName(src, it), "dataloader");
  return false;
}

bool MatchesCall(const PythonSource& src, TSNode call, const std::string& code) {
  const std::string name = CalleeName(src, call);
  if (code == "TTA005") return name == "zero_grad";
  if (code == "backward") return name == "backward";
  if (code == "TTA013") return name == "empty_cache";
  if (code == "TTA006") {
    if (name != "step") return false;
    const std::string callee = CalleeText(src, call);
    const std::string receiver = callee.size() > 5 ? callee.substr(0, callee.size() - 5) : "";
    return !receiver.empty() && !ContainsIgnoreCase(receiver, "sched") &&
           !ContainsIgnoreCase(receiver, "scaler") && !ContainsIgnoreCase(receiver, "prof") &&
           !ContainsIgnoreCase(receiver, "env");
  }
  return false;
}

}  // namespace

bool HasCodeShape(const std::string& code) {
  return code == "TTA001" || code == "TTA005" || code == "TTA006" || code == "TTA013" ||
         code == "backward";
}

std::string ShapeKeyOf(const Finding& f) {
  if (f.code == "TTA017") {
    // A CPU-overhead-bound region sits where the region is written: loss.backward(), the
    // optimizer's step, zero_grad, else the training loop whose step it is.
    auto it = f.evidence.find("region");
    const std::string region = it == f.evidence.end() ? "" : it->second.text;
    if (region == "backward") return "backward";
    if (region == "the optimizer step") return "TTA006";
    if (region == "zero_grad") return "TTA005";
    if (region == "the step's eager ops") return "TTA001";
    return "";
  }
  return HasCodeShape(f.code) ? f.code : "";
}

std::optional<ShapeLocation> LocateByShape(const std::vector<std::string>& files,
                                           SourceCache* cache, const std::string& code,
                                           int* matches) {
  int found = 0;
  std::optional<ShapeLocation> only;
  if (HasCodeShape(code)) {
    for (const auto& path : files) {
      auto src = cache->GetFile(path);
      if (!src) continue;
      Walk(src->root(), [&](TSNode n) {
        const std::string_view type = NodeType(n);
        const bool hit = code == "TTA001" ? type == "for_statement" && LoopsOverLoader(*src, n)
                                          : type == "call" && MatchesCall(*src, n, code);
        if (hit) {
          ++found;
          only = ShapeLocation{path, static_cast<int>(ts_node_start_point(n).row) + 1,
                               ScopeName(*src, n)};
        }
        return true;
      });
    }
  }
  if (matches) *matches = found;
  if (found != 1) return std::nullopt;
  return only;
}

}  // namespace ttap

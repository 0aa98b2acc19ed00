// LocateByShape; see shape_locator.h.
#include "mapping/shape_locator.h"

#include "analysis/base/string_util.h"
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

bool MatchesCall(const PythonSource& src, TSNode call, SourceShape shape) {
  const std::string name = CalleeName(src, call);
  switch (shape) {
    case SourceShape::kZeroGradCall:
      return name == "zero_grad";
    case SourceShape::kBackwardCall:
      return name == "backward";
    case SourceShape::kEmptyCacheCall:
      return name == "empty_cache";
    case SourceShape::kAnomalyDetectionOn: {
      if (name == "detect_anomaly") return true;
      if (name != "set_detect_anomaly") return false;
      TSNode args = CallArguments(call);
      TSNode first = IsNull(args) ? TSNode{} : ts_node_named_child(args, 0);
      return !IsNull(first) && src.NodeText(first) == "True";
    }
    case SourceShape::kOptimizerStep: {
      if (name != "step") return false;
      const std::string callee = CalleeText(src, call);
      const std::string receiver = callee.size() > 5 ? callee.substr(0, callee.size() - 5) : "";
      return !receiver.empty() && !ContainsIgnoreCase(receiver, "sched") &&
             !ContainsIgnoreCase(receiver, "scaler") && !ContainsIgnoreCase(receiver, "prof") &&
             !ContainsIgnoreCase(receiver, "env");
    }
    default:
      return false;
  }
}

// `torch.backends.cudnn.benchmark = True` (any receiver ending in cudnn.benchmark).
bool SetsCudnnBenchmark(const PythonSource& src, TSNode assignment) {
  TSNode left = ts_node_child_by_field_name(assignment, "left", 4);
  TSNode right = ts_node_child_by_field_name(assignment, "right", 5);
  if (IsNull(left) || IsNull(right)) return false;
  const std::string_view l = src.NodeText(left);
  return l.size() >= 15 && l.substr(l.size() - 15) == "cudnn.benchmark" &&
         src.NodeText(right) == "True";
}

}  // namespace

bool IsLocatableShape(SourceShape shape) {
  return shape == SourceShape::kDataLoaderLoop || shape == SourceShape::kZeroGradCall ||
         shape == SourceShape::kOptimizerStep || shape == SourceShape::kEmptyCacheCall ||
         shape == SourceShape::kBackwardCall || IsSettingShape(shape);
}

namespace {

bool Hit(const PythonSource& src, TSNode n, SourceShape shape) {
  const std::string_view type = NodeType(n);
  if (shape == SourceShape::kDataLoaderLoop) {
    return type == "for_statement" && LoopsOverLoader(src, n);
  }
  if (shape == SourceShape::kCudnnBenchmarkOn) {
    return type == "assignment" && SetsCudnnBenchmark(src, n);
  }
  return type == "call" && MatchesCall(src, n, shape);
}

}  // namespace

std::optional<ShapeLocation> LocateByShape(const std::vector<std::string>& files,
                                           SourceCache* cache, SourceShape shape, int* matches) {
  int found = 0;
  std::optional<ShapeLocation> only;
  if (IsLocatableShape(shape)) {
    for (const auto& path : files) {
      auto src = cache->GetFile(path);
      if (!src) continue;
      Walk(src->root(), [&](TSNode n) {
        if (Hit(*src, n, shape)) {
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

// Tree-sitter query helpers; see syntax_util.h.
#include "mapping/syntax_util.h"

#include <functional>

namespace ttap {

std::string_view NodeType(TSNode n) {
  return ts_node_is_null(n) ? std::string_view() : ts_node_type(n);
}
bool IsNull(TSNode n) { return ts_node_is_null(n); }

namespace {

bool IsStatement(std::string_view t) {
  return t.size() > 10 && t.substr(t.size() - 10) == "_statement";
}

}  // namespace

void Walk(TSNode root, const std::function<bool(TSNode)>& visit) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  bool descend = true;
  while (true) {
    TSNode n = ts_tree_cursor_current_node(&cursor);
    bool enter = descend && (!ts_node_is_named(n) || visit(n));
    if (enter && ts_tree_cursor_goto_first_child(&cursor)) continue;
    // Next sibling, or climb until one exists.
    bool moved = false;
    while (true) {
      if (ts_node_eq(ts_tree_cursor_current_node(&cursor), root)) break;
      if (ts_tree_cursor_goto_next_sibling(&cursor)) {
        moved = true;
        break;
      }
      if (!ts_tree_cursor_goto_parent(&cursor)) break;
    }
    if (!moved) break;
    descend = true;
  }
  ts_tree_cursor_delete(&cursor);
}

void WalkRows(TSNode root, uint32_t lo, uint32_t hi, const std::function<bool(TSNode)>& visit) {
  TSTreeCursor cursor = ts_tree_cursor_new(root);
  if (ts_tree_cursor_goto_first_child_for_point(&cursor, TSPoint{lo, 0}) >= 0) {
    do {
      TSNode n = ts_tree_cursor_current_node(&cursor);
      if (ts_node_start_point(n).row > hi) break;
      if (ts_node_end_point(n).row < lo) continue;
      if (ts_node_is_named(n) && visit(n)) WalkRows(n, lo, hi, visit);
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  ts_tree_cursor_delete(&cursor);
}

TSNode StatementAtLine(const PythonSource& src, int line0) {
  // The outermost statement that starts on the line (a compound statement's header line gives
  // the compound statement); else, for continuation lines, the innermost one covering it.
  TSNode starting = {}, covering = {};
  bool have_starting = false, have_covering = false;
  const uint32_t row = static_cast<uint32_t>(std::max(0, line0));
  WalkRows(src.root(), row, row, [&](TSNode n) {
    const int a = static_cast<int>(ts_node_start_point(n).row);
    const int b = static_cast<int>(ts_node_end_point(n).row);
    if (a > line0 || b < line0) return false;
    std::string_view t = NodeType(n);
    const bool statement = IsStatement(t) || t == "function_definition" ||
                           t == "class_definition" || t == "decorated_definition";
    if (statement && a == line0) {
      if (!have_starting) {
        starting = n;
        have_starting = true;
      }
      return false;  // nothing inside starts earlier on this line
    }
    if (statement) {
      covering = n;
      have_covering = true;
    }
    return true;
  });
  if (have_starting) return starting;
  return have_covering ? covering : TSNode{};
}

std::vector<TSNode> CallsIn(TSNode node) {
  std::vector<TSNode> calls;
  Walk(node, [&](TSNode n) {
    if (NodeType(n) == "call") calls.push_back(n);
    return true;
  });
  return calls;
}

std::string CalleeText(const PythonSource& src, TSNode call) {
  TSNode f = ts_node_child_by_field_name(call, "function", 8);
  if (ts_node_is_null(f)) return "";
  std::string s(src.NodeText(f));
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\n' && c != '\t' && c != '\\' && c != '\r') out.push_back(c);
  }
  return out;
}

std::string CalleeName(const PythonSource& src, TSNode call) {
  std::string t = CalleeText(src, call);
  size_t dot = t.rfind('.');
  return dot == std::string::npos ? t : t.substr(dot + 1);
}

TSNode CallArguments(TSNode call) { return ts_node_child_by_field_name(call, "arguments", 9); }

TSNode KeywordArgument(const PythonSource& src, TSNode call, std::string_view name) {
  TSNode args = CallArguments(call);
  if (ts_node_is_null(args)) return {};
  for (uint32_t i = 0; i < ts_node_named_child_count(args); ++i) {
    TSNode a = ts_node_named_child(args, i);
    if (NodeType(a) != "keyword_argument") continue;
    TSNode key = ts_node_child_by_field_name(a, "name", 4);
    if (!ts_node_is_null(key) && src.NodeText(key) == name) return a;
  }
  return {};
}

TSNode EnclosingScope(TSNode node) {
  for (TSNode n = ts_node_parent(node); !ts_node_is_null(n); n = ts_node_parent(n)) {
    std::string_view t = NodeType(n);
    if (t == "function_definition" || t == "class_definition" || t == "module") return n;
  }
  return node;
}

TSNode FindCallAssignedTo(const PythonSource& src, TSNode scope, std::string_view name,
                          uint32_t before) {
  auto search = [&](TSNode within) -> TSNode {
    TSNode found = {};
    bool have = false;
    WalkRows(within, 0, src.ToPosition(before, PositionEncoding::kUtf8).line, [&](TSNode n) {
      if (ts_node_start_byte(n) >= before) return false;
      std::string_view t = NodeType(n);
      // Nested functions and classes have their own scope.
      if ((t == "function_definition" || t == "class_definition") && !ts_node_eq(n, within)) {
        return false;
      }
      if (t == "assignment") {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        TSNode right = ts_node_child_by_field_name(n, "right", 5);
        if (!ts_node_is_null(left) && !ts_node_is_null(right) && src.NodeText(left) == name &&
            NodeType(right) == "call") {
          found = right;  // the last one before |before| wins
          have = true;
        }
      }
      return true;
    });
    return have ? found : TSNode{};
  };
  TSNode in_scope = search(scope);
  if (!ts_node_is_null(in_scope)) return in_scope;
  return search(src.root());
}

TSNode FindFunction(const PythonSource& src, std::string_view name) {
  TSNode found = {};
  int count = 0;
  Walk(src.root(), [&](TSNode n) {
    if (NodeType(n) == "function_definition") {
      TSNode id = ts_node_child_by_field_name(n, "name", 4);
      if (!ts_node_is_null(id) && src.NodeText(id) == name) {
        found = n;
        ++count;
      }
    }
    return true;
  });
  return count == 1 ? found : TSNode{};
}

std::string IndentationAt(const PythonSource& src, uint32_t at) {
  SourcePosition p = src.ToPosition(at, PositionEncoding::kUtf8);
  std::string_view line = src.LineText(p.line);
  size_t n = 0;
  while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return std::string(line.substr(0, n));
}

}  // namespace ttap

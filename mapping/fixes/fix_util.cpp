// The shared quick-fix helpers declared in fix_util.h (tree, lines, argument lists, imports and
// constructors). Used by every recipe in mapping/fixes/ and by ComputeFixes.
#include "mapping/fixes/fix_util.h"

#include <cctype>
#include <cstring>

namespace ttap::fixes {
namespace {

constexpr int kMaxLineWidth = 100;  // single-line calls longer than this get a continuation line

// The next sibling token or node, skipping comments.
TSNode NextToken(TSNode n) {
  TSNode s = ts_node_next_sibling(n);
  while (!IsNull(s) && NodeType(s) == "comment") s = ts_node_next_sibling(s);
  return s;
}

// The rest of |at|'s line, without the line break.
std::string_view RestOfLine(const PythonSource& src, uint32_t at) {
  uint32_t end = LineEnd(src, RowOf(src, at));
  return std::string_view(src.text()).substr(at, end > at ? end - at : 0);
}

size_t LeadingSpace(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && (s[n] == ' ' || s[n] == '\t' || s[n] == '\f')) ++n;
  return n;
}

bool BlankOrComment(std::string_view s) {
  size_t n = LeadingSpace(s);
  return n == s.size() || s[n] == '#';
}

// Whitespace that lines text up under byte |at|: tabs kept, every other character a space.
std::string AlignmentFor(const PythonSource& src, uint32_t at) {
  std::string out;
  for (uint32_t i = src.LineStart(RowOf(src, at)); i < at; ++i) {
    unsigned char c = static_cast<unsigned char>(src.text()[i]);
    if (c == '\t')
      out.push_back('\t');
    else if ((c & 0xC0) != 0x80)
      out.push_back(' ');  // one per code point
  }
  return out;
}

int DisplayWidth(std::string_view s) {
  int w = 0;
  for (unsigned char c : s) {
    if (c == '\t')
      w += 4;
    else if ((c & 0xC0) != 0x80)
      ++w;
  }
  return w;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tree helpers

TSNode Field(TSNode n, const char* name) {
  if (ts_node_is_null(n)) return n;
  return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(std::strlen(name)));
}

uint32_t Start(TSNode n) { return ts_node_start_byte(n); }

uint32_t End(TSNode n) { return ts_node_end_byte(n); }

int Row(TSNode n) { return static_cast<int>(ts_node_start_point(n).row); }

int EndRow(TSNode n) { return static_cast<int>(ts_node_end_point(n).row); }

TSNode Parent(TSNode n) { return ts_node_is_null(n) ? n : ts_node_parent(n); }

bool Same(TSNode a, TSNode b) { return !IsNull(a) && !IsNull(b) && ts_node_eq(a, b); }

bool Contains(TSNode outer, TSNode inner) {
  return Start(outer) <= Start(inner) && End(inner) <= End(outer);
}

ByteRange Range(TSNode n) { return PythonSource::NodeRange(n); }

std::string_view View(const PythonSource& src, TSNode n) {
  return ts_node_is_null(n) ? std::string_view() : src.NodeText(n);
}

std::string Text(const PythonSource& src, TSNode n) { return std::string(View(src, n)); }

std::string Compact(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\\' && c != '\f') out.push_back(c);
  }
  return out;
}

std::string CompactNode(const PythonSource& src, TSNode n) { return Compact(View(src, n)); }

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::vector<TSNode> Children(TSNode n) {
  std::vector<TSNode> out;
  if (IsNull(n)) return out;
  for (uint32_t i = 0; i < ts_node_named_child_count(n); ++i) {
    TSNode c = ts_node_named_child(n, i);
    if (NodeType(c) != "comment") out.push_back(c);
  }
  return out;
}

TSNode FirstChild(TSNode n) {
  auto c = Children(n);
  return c.empty() ? TSNode{} : c[0];
}

bool IsDefinition(std::string_view t) {
  return t == "function_definition" || t == "class_definition" || t == "lambda";
}

uint32_t HeaderEnd(TSNode stmt) {
  if (NodeType(stmt) == "decorated_definition") return HeaderEnd(Field(stmt, "definition"));
  for (const char* f : {"body", "consequence"}) {
    TSNode b = Field(stmt, f);
    if (!IsNull(b)) return Start(b);
  }
  return End(stmt);
}

std::vector<TSNode> HeaderCalls(TSNode stmt) {
  std::vector<TSNode> out;
  uint32_t end = HeaderEnd(stmt);
  for (TSNode c : CallsIn(stmt)) {
    if (Start(c) < end) out.push_back(c);
  }
  return out;
}

bool ContainsIdentifier(const PythonSource& src, TSNode n, std::string_view name) {
  bool found = false;
  Walk(n, [&](TSNode x) {
    if (found) return false;
    if (NodeType(x) != "identifier" || View(src, x) != name) return true;
    TSNode p = Parent(x);
    bool field = (NodeType(p) == "attribute" && Same(Field(p, "attribute"), x)) ||
                 (NodeType(p) == "keyword_argument" && Same(Field(p, "name"), x));
    if (!field) found = true;
    return true;
  });
  return found;
}

TSNode EnclosingLoop(TSNode n) {
  for (TSNode p = Parent(n); !IsNull(p); p = Parent(p)) {
    std::string_view t = NodeType(p);
    if (t == "for_statement" || t == "while_statement") return p;
    if (IsDefinition(t) || t == "module") break;
  }
  return {};
}

TSNode EnclosingClass(TSNode n) {
  for (TSNode p = Parent(n); !IsNull(p); p = Parent(p)) {
    if (NodeType(p) == "class_definition") return p;
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Line helpers

int RowOf(const PythonSource& src, uint32_t byte) {
  return src.ToPosition(byte, PositionEncoding::kUtf8).line;
}

uint32_t LineEnd(const PythonSource& src, int row) {
  return src.LineStart(row) + static_cast<uint32_t>(src.LineText(row).size());
}

bool OnlySpaceBefore(const PythonSource& src, uint32_t at) {
  uint32_t ls = src.LineStart(RowOf(src, at));
  for (uint32_t i = ls; i < at; ++i) {
    char c = src.text()[i];
    if (c != ' ' && c != '\t' && c != '\f') return false;
  }
  return true;
}

std::string Newline(const PythonSource& src) {
  return src.text().find("\r\n") != std::string::npos ? "\r\n" : "\n";
}

bool OwnsItsLines(const PythonSource& src, TSNode stmt) {
  return OnlySpaceBefore(src, Start(stmt)) && BlankOrComment(RestOfLine(src, End(stmt)));
}

// ---------------------------------------------------------------------------------------------
// Argument lists

std::optional<Args> ReadArgs(TSNode call) {
  Args a;
  a.list = CallArguments(call);
  if (IsNull(a.list) || NodeType(a.list) != "argument_list") return std::nullopt;
  for (uint32_t i = 0; i < ts_node_child_count(a.list); ++i) {
    TSNode ch = ts_node_child(a.list, i);
    std::string_view t = NodeType(ch);
    if (t == "(") {
      a.open = ch;
    } else if (t == ")") {
      a.close = ch;
    } else if (t == "comment") {
      a.comments.push_back(ch);
    } else if (ts_node_is_named(ch)) {
      a.items.push_back(ch);
      if (t == "list_splat")
        a.star = true;
      else if (t == "dictionary_splat")
        a.star_star = true;
      else if (t != "keyword_argument")
        ++a.positional;
    }
  }
  if (IsNull(a.open) || IsNull(a.close) || ts_node_is_missing(a.close)) return std::nullopt;
  return a;
}

TSNode KeywordValue(const PythonSource& src, TSNode call, std::string_view name) {
  return Field(KeywordArgument(src, call, name), "value");
}

std::vector<TextEdit> InsertKeywords(const PythonSource& src, const Args& a,
                                     const std::vector<std::string>& kws) {
  if (kws.empty()) return {};
  const std::string nl = Newline(src);
  if (a.items.empty()) return {{{End(a.open), End(a.open)}, Join(kws, ", ")}};
  TSNode last = a.items.back();
  TSNode after = NextToken(last);
  bool trailing_comma = NodeType(after) == ",";
  if (Row(last) > Row(a.open)) {
    TSNode first_on_row = last;
    for (TSNode it : a.items) {
      if (Row(it) == Row(last)) {
        first_on_row = it;
        break;
      }
    }
    std::string indent = AlignmentFor(src, Start(first_on_row));
    if (trailing_comma) {
      uint32_t pos = End(after);
      if (BlankOrComment(RestOfLine(src, pos))) {
        uint32_t eol = LineEnd(src, RowOf(src, pos));
        std::string ins;
        for (const auto& k : kws) ins += nl + indent + k + ",";
        return {{{eol, eol}, ins}};
      }
      std::string ins;
      for (const auto& k : kws) ins += " " + k + ",";
      return {{{pos, pos}, ins}};
    }
    std::string body;
    for (size_t i = 0; i < kws.size(); ++i) body += (i ? "," : "") + nl + indent + kws[i];
    std::string_view rest = RestOfLine(src, End(last));
    if (BlankOrComment(rest)) {
      uint32_t eol = End(last) + static_cast<uint32_t>(rest.size());
      if (LeadingSpace(rest) == rest.size()) return {{{End(last), eol}, "," + body}};
      return {{{End(last), End(last)}, ","}, {{eol, eol}, body}};  // after the comment
    }
    return {{{End(last), End(last)}, "," + body}};
  }
  if (trailing_comma) {
    std::string ins;
    for (const auto& k : kws) ins += " " + k + ",";
    return {{{End(after), End(after)}, ins}};
  }
  std::string ins = ", " + Join(kws, ", ");
  int width = DisplayWidth(src.LineText(RowOf(src, End(last)))) + DisplayWidth(ins);
  if (width > kMaxLineWidth && Row(a.items.front()) == Row(a.open)) {
    ins = "," + nl + AlignmentFor(src, Start(a.items.front())) + Join(kws, ", ");
  }
  return {{{End(last), End(last)}, ins}};
}

std::vector<TextEdit> RemoveArgument(const PythonSource& src, const Args& a, TSNode k) {
  size_t idx = 0;
  while (idx < a.items.size() && !Same(a.items[idx], k)) ++idx;
  TSNode after = NextToken(k);
  bool comma = NodeType(after) == ",";
  uint32_t tail = comma ? End(after) : End(k);
  auto comment_between = [&](uint32_t from, uint32_t to) {
    for (TSNode c : a.comments) {
      if (Start(c) >= from && Start(c) < to) return true;
    }
    return false;
  };
  if (a.items.size() == 1 && a.comments.empty()) return {{{End(a.open), Start(a.close)}, ""}};
  std::string_view rest = RestOfLine(src, tail);
  if (Row(k) > Row(a.open) && OnlySpaceBefore(src, Start(k)) && BlankOrComment(rest)) {
    size_t sp = LeadingSpace(rest);
    if (sp < rest.size()) return {{{Start(k), tail + static_cast<uint32_t>(sp)}, ""}};
    return {{{src.LineStart(Row(k)), src.LineStart(RowOf(src, tail) + 1)}, ""}};
  }
  if (idx + 1 < a.items.size()) {
    TSNode next = a.items[idx + 1];
    if (comma && !comment_between(Start(k), Start(next))) return {{{Start(k), Start(next)}, ""}};
    return {{{Start(k), tail}, ""}};
  }
  if (idx > 0 && !comment_between(End(a.items[idx - 1]), Start(k))) {
    return {{{End(a.items[idx - 1]), End(k)}, ""}};
  }
  return {{{Start(k), tail}, ""}};
}

// ---------------------------------------------------------------------------------------------
// Imports and constructors

std::map<std::string, std::string> ReadImports(const PythonSource& src) {
  std::map<std::string, std::string> m;
  Walk(src.root(), [&](TSNode n) {
    std::string_view t = NodeType(n);
    if (t == "import_statement") {
      for (TSNode c : Children(n)) {
        if (NodeType(c) == "dotted_name") {
          std::string full = CompactNode(src, c);
          std::string first = full.substr(0, full.find('.'));
          m[first] = first;
        } else if (NodeType(c) == "aliased_import") {
          m[CompactNode(src, Field(c, "alias"))] = CompactNode(src, Field(c, "name"));
        }
      }
      return false;
    }
    if (t == "import_from_statement") {
      TSNode module = Field(n, "module_name");
      std::string mod = CompactNode(src, module);
      for (TSNode c : Children(n)) {
        if (Same(c, module)) continue;
        if (NodeType(c) == "dotted_name") {
          m[CompactNode(src, c)] = mod + "." + CompactNode(src, c);
        } else if (NodeType(c) == "aliased_import") {
          m[CompactNode(src, Field(c, "alias"))] = mod + "." + CompactNode(src, Field(c, "name"));
        }
      }
      return false;
    }
    return true;
  });
  return m;
}

const std::set<std::string>& ForeachOptimizers() {
  static const std::set<std::string> k = {"SGD",  "Adam",  "AdamW", "Adagrad", "Adadelta", "Adamax",
                                          "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop"};
  return k;
}

std::string OptimizerClass(const Ctx& c, TSNode call) {
  if (NodeType(call) != "call") return "";
  std::string callee = CalleeText(c.src, call);
  std::string q = c.Qualify(callee);
  std::string name = q.substr(q.rfind('.') + 1);
  bool known = ForeachOptimizers().count(name) || name == "LBFGS" || name == "SparseAdam";
  if (!known) return "";
  if (StartsWith(q, "torch.optim.")) return name;
  if (StartsWith(callee, "optim.") && !c.imports.count("optim")) return name;  // snippet
  return "";
}

bool IsDataLoader(const Ctx& c, TSNode call) {
  return NodeType(call) == "call" && CalleeName(c.src, call) == "DataLoader";
}

TSNode FindAssigned(const Ctx& c, std::string_view name, TSNode at) {
  TSNode scope = EnclosingScope(at);
  TSNode found = FindCallAssignedTo(c.src, scope, name, Start(at));
  if (!IsNull(found)) return found;
  if (StartsWith(name, "self.")) {
    TSNode cls = EnclosingClass(scope);
    if (!IsNull(cls)) {
      TSNode first{}, init{};
      Walk(cls, [&](TSNode n) {
        if (NodeType(n) == "assignment" && View(c.src, Field(n, "left")) == name &&
            NodeType(Field(n, "right")) == "call") {
          if (IsNull(first)) first = Field(n, "right");
          TSNode fn = EnclosingScope(n);
          if (IsNull(init) && View(c.src, Field(fn, "name")) == "__init__") {
            init = Field(n, "right");
          }
        }
        return true;
      });
      if (!IsNull(init)) return init;
      if (!IsNull(first)) return first;
    }
  }
  return FindCallAssignedTo(c.src, c.src.root(), name, UINT32_MAX);
}

TSNode FollowFactory(const Ctx& c, TSNode call, const std::function<bool(TSNode)>& want) {
  TSNode f = Field(call, "function");
  if (NodeType(f) != "identifier") return {};
  TSNode fn = FindFunction(c.src, View(c.src, f));
  if (IsNull(fn)) return {};
  std::vector<TSNode> found;
  Walk(Field(fn, "body"), [&](TSNode n) {
    if (IsDefinition(NodeType(n))) return false;
    if (NodeType(n) != "return_statement") return true;
    TSNode e = FirstChild(n);
    if (NodeType(e) == "identifier") e = FindCallAssignedTo(c.src, fn, View(c.src, e), Start(n));
    if (!IsNull(e) && NodeType(e) == "call" && want(e)) found.push_back(e);
    return false;
  });
  if (found.empty()) return {};
  for (TSNode x : found) {
    if (!Same(x, found[0])) return {};
  }
  return found[0];
}

TSNode ResolveCall(const Ctx& c, std::string_view name, TSNode at,
                   const std::function<bool(TSNode)>& want) {
  TSNode call = FindAssigned(c, name, at);
  if (IsNull(call)) return {};
  if (want(call)) return call;
  return FollowFactory(c, call, want);
}

bool IsNameOrAttribute(TSNode n) {
  std::string_view t = NodeType(n);
  if (t == "identifier") return true;
  if (t != "attribute") return false;
  return IsNameOrAttribute(Field(n, "object"));
}

bool IsLiteral(std::string_view v, std::initializer_list<std::string_view> values) {
  for (auto x : values) {
    if (v == x) return true;
  }
  return false;
}

QuickFix MakeFix(std::string title, std::vector<TextEdit> edits, bool preferred) {
  QuickFix f;
  f.title = std::move(title);
  f.edits = std::move(edits);
  f.preferred = preferred;
  return f;
}

// ---------------------------------------------------------------------------------------------
// Lookups shared by several recipes

TSNode Unparen(TSNode n) {
  while (NodeType(n) == "parenthesized_expression") n = FirstChild(n);
  return n;
}

StatusOr<TSNode> FindLoaderCall(const Ctx& c, TSNode stmt) {
  const PythonSource& src = c.src;
  std::vector<TSNode> calls = HeaderCalls(stmt);
  for (TSNode call : calls) {
    if (IsDataLoader(c, call)) return call;
  }
  TSNode expr{};
  if (NodeType(stmt) == "for_statement") {
    expr = Field(stmt, "right");
  } else {
    for (TSNode call : calls) {
      std::string cn = CalleeName(src, call);
      auto a = ReadArgs(call);
      if ((cn == "next" || cn == "iter") && a && a->positional >= 1) {
        expr = a->items[0];
        break;
      }
    }
  }
  if (IsNull(expr)) {
    return c.Error("no `for batch in loader:` loop, next(...) or DataLoader(...) here");
  }
  TSNode at = stmt;
  auto want = [&](TSNode x) { return IsDataLoader(c, x); };
  for (int depth = 0; depth < 8; ++depth) {
    expr = Unparen(expr);
    if (NodeType(expr) == "call") {
      if (IsDataLoader(c, expr)) return expr;
      static const std::set<std::string> kWrappers = {"enumerate", "tqdm",  "iter",    "islice",
                                                      "trange",    "cycle", "prefetch"};
      auto a = ReadArgs(expr);
      if (kWrappers.count(CalleeName(src, expr)) && a && a->positional >= 1) {
        expr = a->items[0];
        continue;
      }
      TSNode made = FollowFactory(c, expr, want);
      if (!IsNull(made)) return made;
      return c.Error("`" + CalleeText(src, expr) + "(...)` is not a DataLoader this fix can see");
    }
    if (IsNameOrAttribute(expr)) {
      std::string name = CompactNode(src, expr);
      TSNode assigned = FindAssigned(c, name, at);
      if (IsNull(assigned)) {
        return c.Error("cannot find where `" + name +
                       "` is assigned (only `name = DataLoader(...)` in this scope, its class or "
                       "the module is followed)");
      }
      at = assigned;
      expr = assigned;
      continue;
    }
    break;
  }
  return c.Error("the loop does not iterate over a DataLoader this fix can see");
}

bool ParseInt(const std::string& s, long* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char ch : s) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
  }
  *out = std::stol(s);
  return true;
}

}  // namespace ttap::fixes

// Quick fixes for the fix recipes (see quick_fixes.h): each recipe reads the statement at the
// finding's line, follows simple assignments to the constructor it needs (DataLoader, optimizer,
// model), and computes byte edits that keep the surrounding formatting. ComputeFixes validates
// every fix by applying and re-parsing it. Called by the language server and scan; the generic
// tree and argument-list helpers here are private to this file.
#include "mapping/quick_fixes.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <optional>
#include <set>

#include "analysis/string_util.h"
#include "mapping/syntax_util.h"

namespace ttap {
namespace {

constexpr int kMaxLineWidth = 100;  // single-line calls longer than this get a continuation line

using Fixes = std::vector<QuickFix>;

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

// The node's text; empty for a null node (NodeText would dereference it).
std::string_view View(const PythonSource& src, TSNode n) {
  return ts_node_is_null(n) ? std::string_view() : src.NodeText(n);
}
std::string Text(const PythonSource& src, TSNode n) { return std::string(View(src, n)); }

// |s| without whitespace and line continuations, for comparing expressions.
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

// Named children without comments.
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

// The next sibling token or node, skipping comments.
TSNode NextToken(TSNode n) {
  TSNode s = ts_node_next_sibling(n);
  while (!IsNull(s) && NodeType(s) == "comment") s = ts_node_next_sibling(s);
  return s;
}

bool IsDefinition(std::string_view t) {
  return t == "function_definition" || t == "class_definition" || t == "lambda";
}

// Where the header of a compound statement ends (its body starts); the end of a simple one.
uint32_t HeaderEnd(TSNode stmt) {
  if (NodeType(stmt) == "decorated_definition") return HeaderEnd(Field(stmt, "definition"));
  for (const char* f : {"body", "consequence"}) {
    TSNode b = Field(stmt, f);
    if (!IsNull(b)) return Start(b);
  }
  return End(stmt);
}

// The calls of a statement, without those in a compound statement's body.
std::vector<TSNode> HeaderCalls(TSNode stmt) {
  std::vector<TSNode> out;
  uint32_t end = HeaderEnd(stmt);
  for (TSNode c : CallsIn(stmt)) {
    if (Start(c) < end) out.push_back(c);
  }
  return out;
}

// True when |name| is used as a variable in |n| (attribute names and keyword names aside).
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

// The nearest for/while loop around |n| in the same function.
TSNode EnclosingLoop(TSNode n) {
  for (TSNode p = Parent(n); !IsNull(p); p = Parent(p)) {
    std::string_view t = NodeType(p);
    if (t == "for_statement" || t == "while_statement") return p;
    if (IsDefinition(t) || t == "module") break;
  }
  return {};
}

// The class definition around |n|, if any (for `self.x` lookups).
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
// The rest of |at|'s line, without the line break.
std::string_view RestOfLine(const PythonSource& src, uint32_t at) {
  uint32_t end = LineEnd(src, RowOf(src, at));
  return std::string_view(src.text()).substr(at, end > at ? end - at : 0);
}
bool OnlySpaceBefore(const PythonSource& src, uint32_t at) {
  uint32_t ls = src.LineStart(RowOf(src, at));
  for (uint32_t i = ls; i < at; ++i) {
    char c = src.text()[i];
    if (c != ' ' && c != '\t' && c != '\f') return false;
  }
  return true;
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
std::string Newline(const PythonSource& src) {
  return src.text().find("\r\n") != std::string::npos ? "\r\n" : "\n";
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
// True when |stmt| is alone on its lines (a trailing comment allowed).
bool OwnsItsLines(const PythonSource& src, TSNode stmt) {
  return OnlySpaceBefore(src, Start(stmt)) && BlankOrComment(RestOfLine(src, End(stmt)));
}

// ---------------------------------------------------------------------------------------------
// Argument lists

struct Args {
  TSNode list{};
  TSNode open{}, close{};
  std::vector<TSNode> items;     // arguments in order, comments excluded
  std::vector<TSNode> comments;  // comments between the parentheses
  int positional = 0;            // plain positional arguments
  bool star = false;             // *args
  bool star_star = false;        // **kwargs
};

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

// Inserts "name=value" arguments after the last argument, in the call's style: on their own
// lines with the previous argument's indentation when the call is multi-line (keeping a trailing
// comma and comments), inline otherwise (wrapped under the first argument when too long).
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

// Removes argument |k| with its comma; a line holding only the argument goes with it, comments
// stay.
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

// Local name -> qualified name, from every import in the file.
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

struct Ctx {
  const PythonSource& src;
  const FixRequest& req;
  TSNode stmt{};
  std::map<std::string, std::string> imports;
  std::string nl;

  std::string Fact(const std::string& key) const {
    auto it = req.facts.find(key);
    return it == req.facts.end() ? "" : it->second;
  }
  bool FactTrue(const std::string& key) const {
    std::string v = Lower(Fact(key));
    return v == "1" || v == "true" || v == "yes";
  }
  bool HasTorch() const {
    auto it = imports.find("torch");
    return it != imports.end() && it->second == "torch";
  }
  std::string Qualify(const std::string& dotted) const {
    std::string first = dotted.substr(0, dotted.find('.'));
    auto it = imports.find(first);
    if (it == imports.end()) return dotted;
    return it->second + dotted.substr(first.size());
  }
  Status Error(const std::string& msg) const {
    return Status::Error("line " + std::to_string(req.line) + ": " + msg);
  }
};

const std::set<std::string>& ForeachOptimizers() {
  static const std::set<std::string> k = {"SGD",  "Adam",  "AdamW", "Adagrad", "Adadelta", "Adamax",
                                          "ASGD", "NAdam", "RAdam", "RMSprop", "Rprop"};
  return k;
}

// "Adam" for torch.optim.Adam(...) (also optim.Adam, a name imported from torch.optim, or
// LBFGS/SparseAdam, which have no foreach path); "" for anything else.
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

// The call |name| was last assigned from before |at|: in |at|'s scope, in the enclosing class
// for `self.x` (any method), then anywhere in the module.
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

// For `x = make_loader(...)`: the one constructor call that the file's `def make_loader` returns
// (directly or through a local name) and that |want| accepts; null otherwise.
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

// The call |name| comes from, when |want| accepts it (following one factory function).
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
// zero-grad-set-to-none

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

// ---------------------------------------------------------------------------------------------
// optimizer-foreach

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

// ---------------------------------------------------------------------------------------------
// dataloader-workers

TSNode Unparen(TSNode n) {
  while (NodeType(n) == "parenthesized_expression") n = FirstChild(n);
  return n;
}

// The DataLoader(...) call that the loop / next(...) on |stmt| iterates, or that |stmt| builds.
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

StatusOr<Fixes> FixDataLoader(const Ctx& c) {
  const PythonSource& src = c.src;
  StatusOr<TSNode> found = FindLoaderCall(c, c.stmt);
  if (!found.ok()) return found.status();
  TSNode call = *found;
  auto a = ReadArgs(call);
  if (!a) return c.Error("the DataLoader's arguments are not a plain argument list");
  if (a->star || a->star_star) {
    return c.Error("the DataLoader gets *args/**kwargs; cannot tell which options are set");
  }
  if (a->positional > 5) return c.Error("num_workers is passed positionally to the DataLoader");
  long workers = 8, cpus = 0;
  if (ParseInt(c.Fact("cpu_count"), &cpus) && cpus > 0) workers = std::min(8L, cpus);
  long forced = 0;
  if (ParseInt(c.Fact("num_workers"), &forced) && forced > 0) workers = forced;
  const std::string n = std::to_string(workers);

  std::vector<TextEdit> edits;
  std::vector<std::string> inserts, changes;
  bool workers_on = false;
  TSNode nw = KeywordValue(src, call, "num_workers");
  long current = 0;
  if (IsNull(nw)) {
    inserts.push_back("num_workers=" + n);
    changes.push_back("num_workers=" + n);
    workers_on = true;
  } else if (ParseInt(CompactNode(src, nw), &current)) {
    if (current == 0) {
      edits.push_back({Range(nw), n});
      changes.push_back("num_workers=" + n);
    }
    workers_on = true;
  }
  auto set_true = [&](const std::string& key) {
    TSNode v = KeywordValue(src, call, key);
    if (IsNull(v)) {
      inserts.push_back(key + "=True");
    } else if (CompactNode(src, v) == "False") {
      edits.push_back({Range(v), "True"});
    } else {
      return;  // True already, or computed
    }
    changes.push_back(key + "=True");
  };
  if (Lower(c.Fact("device")) != "cpu") set_true("pin_memory");
  if (workers_on) set_true("persistent_workers");
  for (auto& e : InsertKeywords(src, *a, inserts)) edits.push_back(e);
  if (edits.empty()) return Fixes{};
  std::string title = StartsWith(changes[0], "num_workers")
                          ? "Load batches in worker processes (" + Join(changes, ", ") + ")"
                          : "Set " + Join(changes, ", ") + " on the DataLoader";
  return Fixes{MakeFix(title, edits, true)};
}

// ---------------------------------------------------------------------------------------------
// pin-memory-non-blocking

enum class DeviceKind { kDevice, kCpu, kUnknown };

DeviceKind ClassifyDevice(const Ctx& c, TSNode n) {
  n = Unparen(n);
  std::string_view t = NodeType(n);
  std::string text = Lower(CompactNode(c.src, n));
  if (t == "string") {
    std::string s = text.size() >= 2 ? text.substr(1, text.size() - 2) : text;
    if (StartsWith(s, "cpu")) return DeviceKind::kCpu;
    if (StartsWith(s, "meta") || s.empty()) return DeviceKind::kUnknown;
    return DeviceKind::kDevice;
  }
  if (t == "integer") return DeviceKind::kDevice;
  if (t == "call") {
    std::string callee = CalleeText(c.src, n);
    auto a = ReadArgs(n);
    if ((callee == "torch.device" || callee == "device") && a && !a->items.empty()) {
      return ClassifyDevice(c, a->items[0]);
    }
    return DeviceKind::kUnknown;
  }
  if (!IsNameOrAttribute(n)) return DeviceKind::kUnknown;
  if (StartsWith(text, "torch.") || text.find("dtype") != std::string::npos) {
    return DeviceKind::kUnknown;
  }
  std::string last = text.substr(text.rfind('.') + 1);
  if (last.find("cpu") != std::string::npos) return DeviceKind::kCpu;
  for (const char* word : {"device", "dev", "gpu", "cuda", "rank"}) {
    if (last.find(word) != std::string::npos) return DeviceKind::kDevice;
  }
  return DeviceKind::kUnknown;
}

StatusOr<Fixes> FixPinnedCopy(const Ctx& c) {
  const PythonSource& src = c.src;
  std::vector<TextEdit> edits;
  int copies = 0;
  bool to_cpu = false;
  std::string unknown;
  for (TSNode call : HeaderCalls(c.stmt)) {
    std::string cn = CalleeName(src, call);
    if (NodeType(Field(call, "function")) != "attribute") continue;
    if (cn == "cpu") to_cpu = true;
    if (cn != "to" && cn != "cuda") continue;
    auto a = ReadArgs(call);
    if (!a) continue;
    size_t nb_index = 1;  // .cuda(device, non_blocking)
    if (cn == "to") {
      nb_index = 2;  // .to(device, dtype, non_blocking)
      TSNode dev = KeywordValue(src, call, "device");
      if (IsNull(dev) && a->positional >= 1) dev = a->items[0];
      if (IsNull(dev)) continue;  // .to(dtype=...) / .to(memory_format=...): no copy
      DeviceKind kind = ClassifyDevice(c, dev);
      if (kind == DeviceKind::kCpu) to_cpu = true;
      if (kind != DeviceKind::kDevice) {
        if (kind == DeviceKind::kUnknown && unknown.empty()) unknown = Text(src, call);
        continue;
      }
    }
    if (a->star_star) continue;
    ++copies;
    TSNode nb = KeywordValue(src, call, "non_blocking");
    if (IsNull(nb) && static_cast<size_t>(a->positional) > nb_index) nb = a->items[nb_index];
    if (IsNull(nb)) {
      for (auto& e : InsertKeywords(src, *a, {"non_blocking=True"})) edits.push_back(e);
    } else if (CompactNode(src, nb) == "False") {
      edits.push_back({Range(nb), "True"});
    }
  }
  if (copies == 0) {
    if (to_cpu) {
      return c.Error(
          "the copy goes to the CPU; non_blocking=True would let the host read the "
          "data before it arrives");
    }
    if (!unknown.empty()) return c.Error("cannot tell that `" + unknown + "` moves to a device");
    return c.Error("no .to(device) or .cuda() copy here");
  }
  // pin_memory=True on the DataLoader the enclosing loop iterates.
  bool loader_seen = false;
  for (TSNode loop = EnclosingLoop(c.stmt); !IsNull(loop); loop = EnclosingLoop(loop)) {
    if (NodeType(loop) != "for_statement") continue;
    StatusOr<TSNode> loader = FindLoaderCall(c, loop);
    if (!loader.ok()) continue;
    auto la = ReadArgs(*loader);
    if (!la || la->star_star) break;
    loader_seen = true;
    TSNode pin = KeywordValue(src, *loader, "pin_memory");
    if (IsNull(pin)) {
      for (auto& e : InsertKeywords(src, *la, {"pin_memory=True"})) edits.push_back(e);
    } else if (CompactNode(src, pin) == "False") {
      edits.push_back({Range(pin), "True"});
    }
    break;
  }
  if (edits.empty()) return Fixes{};
  if (loader_seen) {
    return Fixes{
        MakeFix("Copy with non_blocking=True from pinned memory (pin_memory=True on the "
                "DataLoader)",
                edits, true)};
  }
  return Fixes{MakeFix("Copy with non_blocking=True (the host tensor must be pinned to overlap)",
                       edits, false)};
}

// ---------------------------------------------------------------------------------------------
// channels-last

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

// ---------------------------------------------------------------------------------------------
// defer-host-sync

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

// ---------------------------------------------------------------------------------------------
// Validation

enum class Verdict { kValid, kNoChange, kBroken };

Verdict Validate(const PythonSource& src, const QuickFix& fix, std::string* why) {
  std::vector<TextEdit> edits = fix.edits;
  std::sort(edits.begin(), edits.end(), [](const TextEdit& a, const TextEdit& b) {
    return a.range.start != b.range.start ? a.range.start < b.range.start
                                          : a.range.end < b.range.end;
  });
  for (size_t i = 0; i < edits.size(); ++i) {
    const TextEdit& e = edits[i];
    if (e.range.start > e.range.end || e.range.end > src.text().size()) {
      *why = "internal: an edit is out of range";
      return Verdict::kBroken;
    }
    if (i > 0 &&
        (e.range.start < edits[i - 1].range.end || e.range.start == edits[i - 1].range.start)) {
      *why = "internal: the edits overlap";
      return Verdict::kBroken;
    }
  }
  std::string out = ApplyEdits(src.text(), edits);
  if (out == src.text()) return Verdict::kNoChange;
  auto parsed = PythonSource::Parse(out);
  if (parsed->error_count() > src.error_count()) {
    *why = "the edited code would not parse (" + fix.title + ")";
    return Verdict::kBroken;
  }
  return Verdict::kValid;
}

bool IsStatementType(std::string_view t) {
  return EndsWith(t, "_statement") || t == "function_definition" || t == "class_definition" ||
         t == "decorated_definition";
}

// The outermost statements that start on |line0| (`a(); b()` gives both; a compound
// statement's header line gives the compound statement), else the innermost one that covers it
// (a continuation line). Unlike StatementAtLine, a loop starting on the line wins over the
// function around it.
std::vector<TSNode> StatementsOn(const PythonSource& src, int line0) {
  std::vector<TSNode> starting;
  TSNode covering{};
  Walk(src.root(), [&](TSNode n) {
    if (Row(n) > line0 || EndRow(n) < line0) return false;
    if (!IsStatementType(NodeType(n))) return true;
    if (Row(n) == line0) {
      starting.push_back(n);
      return false;
    }
    covering = n;
    return true;
  });
  if (starting.empty() && !IsNull(covering)) starting.push_back(covering);
  return starting;
}

bool IsCompound(std::string_view t) {
  return t == "for_statement" || t == "while_statement" || t == "if_statement" ||
         t == "with_statement" || t == "try_statement" || t == "function_definition" ||
         t == "class_definition" || t == "decorated_definition" || t == "match_statement";
}

}  // namespace

const std::vector<std::string>& QuickFixRecipes() {
  static const std::vector<std::string> k = {"zero-grad-set-to-none", "optimizer-foreach",
                                             "dataloader-workers",    "pin-memory-non-blocking",
                                             "channels-last",         "defer-host-sync"};
  return k;
}

StatusOr<std::vector<QuickFix>> ComputeFixes(const PythonSource& src, const FixRequest& req) {
  const auto& recipes = QuickFixRecipes();
  if (std::find(recipes.begin(), recipes.end(), req.recipe) == recipes.end()) {
    return Status::Error("no quick fix for recipe `" + req.recipe + "`");
  }
  if (req.line < 1 || req.line > src.line_count()) {
    return Status::Error("line " + std::to_string(req.line) + " is outside the file (" +
                         std::to_string(src.line_count()) + " lines)");
  }
  Ctx c{src, req, TSNode{}, ReadImports(src), Newline(src)};
  int line0 = req.line - 1;
  std::vector<TSNode> stmts = StatementsOn(src, line0);
  if (stmts.empty() || NodeType(stmts[0]) == "module" ||
      (IsCompound(NodeType(stmts[0])) && Row(stmts[0]) != line0 &&
       RowOf(src, HeaderEnd(stmts[0])) <= line0)) {
    return c.Error("no Python statement starts or continues here");
  }
  // With several statements on the line (`loss.backward(); opt.step()`), the first one the
  // recipe understands.
  StatusOr<Fixes> r = Status::Error("unreachable");
  for (TSNode stmt : stmts) {
    c.stmt = stmt;
    StatusOr<Fixes> one = Status::Error("unreachable");
    if (req.recipe == "zero-grad-set-to-none")
      one = FixZeroGrad(c);
    else if (req.recipe == "optimizer-foreach")
      one = FixOptimizer(c);
    else if (req.recipe == "dataloader-workers")
      one = FixDataLoader(c);
    else if (req.recipe == "pin-memory-non-blocking")
      one = FixPinnedCopy(c);
    else if (req.recipe == "channels-last")
      one = FixChannelsLast(c);
    else if (req.recipe == "defer-host-sync")
      one = FixHostSync(c);
    if (one.ok() || Same(stmt, stmts[0])) r = one;
    if (one.ok()) break;
  }
  if (!r.ok()) return r.status();

  std::vector<QuickFix> out;
  std::string broken;
  for (QuickFix& f : *r) {
    f.recipe = req.recipe;
    std::string why;
    Verdict v = Validate(src, f, &why);
    if (v == Verdict::kValid)
      out.push_back(std::move(f));
    else if (v == Verdict::kBroken && broken.empty())
      broken = why;
  }
  if (out.empty() && !broken.empty()) return c.Error(broken);
  std::stable_partition(out.begin(), out.end(), [](const QuickFix& f) { return f.preferred; });
  return out;
}

std::string ApplyFix(const PythonSource& src, const QuickFix& fix) {
  return ApplyEdits(src.text(), fix.edits);
}

}  // namespace ttap

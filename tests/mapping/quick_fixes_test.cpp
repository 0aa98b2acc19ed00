// Quick fixes (mapping/quick_fixes.h): golden files in tests/mapping/fixes plus small inline cases.
// Each golden input <case>.py starts with a request comment:
//   # ttap-fix recipe=<id> at="<text on the flagged line>" [line=N] [facts=k:v,k:v]
//              [expect=fix|none|refuse] [pick=N]
// expect=fix (the default) compares the output of the preferred fix (or fix number `pick`) with
// <case>.expected.py; every returned fix must re-parse without errors and be idempotent (on the
// fixed text the same request, its line carried through the edits, yields nothing to change).
// TTAP_FIXES_ACTUAL_DIR=<dir> writes the actual outputs there, to review new golden files.
#include "mapping/quick_fixes.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace ttap;
namespace fs = std::filesystem;

namespace {

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct GoldenCase {
  std::string name;
  fs::path input, expected;
  FixRequest req;
  std::string expect = "fix";
  int pick = -1;
};

// Parses `key=value` and `key="value with spaces"` pairs of the first line.
std::map<std::string, std::string> ParseHeader(const std::string& line) {
  std::map<std::string, std::string> kv;
  size_t i = line.find("ttap-fix");
  if (i == std::string::npos) return kv;
  i += 8;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t eq = line.find('=', i);
    if (eq == std::string::npos) break;
    std::string key = line.substr(i, eq - i);
    std::string value;
    i = eq + 1;
    if (i < line.size() && line[i] == '"') {
      size_t close = line.find('"', i + 1);
      value = line.substr(i + 1, close - i - 1);
      i = close + 1;
    } else {
      size_t sp = line.find(' ', i);
      if (sp == std::string::npos) sp = line.size();
      value = line.substr(i, sp - i);
      i = sp;
    }
    kv[key] = value;
  }
  return kv;
}

std::vector<GoldenCase> LoadCases() {
  std::vector<GoldenCase> cases;
  fs::path dir = fs::path(TTAP_SOURCE_DIR) / "tests" / "mapping" / "fixes";
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".py" || file.find(".expected.") != std::string::npos) continue;
    GoldenCase k;
    k.name = entry.path().stem().string();
    k.input = entry.path();
    k.expected = dir / (k.name + ".expected.py");
    std::string text = ReadFile(k.input);
    std::string first = text.substr(0, text.find('\n'));
    auto kv = ParseHeader(first);
    k.req.recipe = kv["recipe"];
    if (kv.count("line")) k.req.line = std::stoi(kv["line"]);
    if (kv.count("at")) {  // first line after the header containing the text
      std::istringstream lines(text);
      std::string l;
      int n = 0;
      while (std::getline(lines, l)) {
        ++n;
        if (n > 1 && l.find(kv["at"]) != std::string::npos) {
          k.req.line = n;
          break;
        }
      }
    }
    if (kv.count("facts")) {
      std::stringstream ss(kv["facts"]);
      std::string fact;
      while (std::getline(ss, fact, ',')) {
        size_t colon = fact.find(':');
        k.req.facts[fact.substr(0, colon)] = fact.substr(colon + 1);
      }
    }
    if (kv.count("expect")) k.expect = kv["expect"];
    if (kv.count("pick")) k.pick = std::stoi(kv["pick"]);
    cases.push_back(k);
  }
  std::sort(cases.begin(), cases.end(),
            [](const GoldenCase& a, const GoldenCase& b) { return a.name < b.name; });
  return cases;
}

// Where byte |b| of the original text ends up after |edits| (the start of an edit covering it).
uint32_t MapOffset(uint32_t b, std::vector<TextEdit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const TextEdit& x, const TextEdit& y) { return x.range.start < y.range.start; });
  int64_t delta = 0;
  for (const TextEdit& e : edits) {
    if (e.range.end <= b) {
      delta += static_cast<int64_t>(e.new_text.size()) - (e.range.end - e.range.start);
    } else if (e.range.start <= b) {
      return static_cast<uint32_t>(e.range.start + delta);
    }
  }
  return static_cast<uint32_t>(b + delta);
}

// The line of the finding in the fixed text.
int MappedLine(const PythonSource& before, const PythonSource& after, const QuickFix& fix,
               int line) {
  uint32_t b = before.LineStart(line - 1);
  // Skip the indentation so an insertion at the line start moves the line down.
  std::string_view text = before.LineText(line - 1);
  size_t indent = text.find_first_not_of(" \t");
  if (indent != std::string_view::npos) b += static_cast<uint32_t>(indent);
  return after.ToPosition(MapOffset(b, fix.edits), PositionEncoding::kUtf8).line + 1;
}

// Every fix parses and is idempotent; returns the output of the chosen one.
void CheckFix(const PythonSource& src, const FixRequest& req, const QuickFix& fix) {
  INFO("fix: " << fix.title);
  CHECK(fix.recipe == req.recipe);
  CHECK_FALSE(fix.title.empty());
  REQUIRE_FALSE(fix.edits.empty());
  std::string out = ApplyFix(src, fix);
  CHECK(out != src.text());
  auto fixed = PythonSource::Parse(out);
  CHECK(fixed->error_count() <= src.error_count());
  if (!src.HasErrors()) CHECK_FALSE(fixed->HasErrors());
  FixRequest again = req;
  again.line = MappedLine(src, *fixed, fix, req.line);
  INFO("again at line " << again.line);
  auto second = ComputeFixes(*fixed, again);
  INFO("second: " << second.status().message());
  REQUIRE(second.ok());
  for (const QuickFix& f : *second) {
    INFO("second fix: " << f.title);
    CHECK(ApplyFix(*fixed, f) == out);
  }
}

}  // namespace

TEST_CASE("quick fixes: golden files", "[mapping][fixes]") {
  std::vector<GoldenCase> cases = LoadCases();
  REQUIRE(cases.size() >= 30);
  // Every recipe has fixed cases and refusals.
  std::map<std::string, std::set<std::string>> kinds;
  for (const auto& k : cases) kinds[k.req.recipe].insert(k.expect);
  for (const std::string& recipe : QuickFixRecipes()) {
    INFO(recipe);
    CHECK(kinds[recipe].count("fix"));
    CHECK(kinds[recipe].count("refuse"));
  }
  for (const GoldenCase& k : cases) {
    DYNAMIC_SECTION(k.name) {
      INFO(k.input.string() << " line " << k.req.line);
      REQUIRE(k.req.line > 1);
      auto src = PythonSource::Parse(ReadFile(k.input));
      auto fixes = ComputeFixes(*src, k.req);
      if (k.expect == "refuse") {
        CHECK_FALSE(fixes.ok());
        CHECK_FALSE(fixes.status().message().empty());
        CHECK(fs::exists(k.expected) == false);
        continue;
      }
      INFO("status: " << fixes.status().message());
      REQUIRE(fixes.ok());
      if (k.expect == "none") {
        CHECK(fixes->empty());
        continue;
      }
      REQUIRE_FALSE(fixes->empty());
      for (const QuickFix& f : *fixes) CheckFix(*src, k.req, f);
      size_t chosen = 0;
      if (k.pick >= 0) {
        chosen = static_cast<size_t>(k.pick);
      } else {
        CHECK(std::count_if(fixes->begin(), fixes->end(),
                            [](const QuickFix& f) { return f.preferred; }) <= 1);
      }
      REQUIRE(chosen < fixes->size());
      std::string out = ApplyFix(*src, (*fixes)[chosen]);
      if (const char* dir = std::getenv("TTAP_FIXES_ACTUAL_DIR")) {  // to review new goldens
        std::ofstream(fs::path(dir) / k.expected.filename(), std::ios::binary) << out;
      }
      CHECK(fs::exists(k.expected));
      if (fs::exists(k.expected)) CHECK(out == ReadFile(k.expected));
    }
  }
}

namespace {

struct InlineCase {
  const char* what;
  const char* recipe;
  const char* input;
  int line;
  std::map<std::string, std::string> facts;
  const char* expected;  // after the first (preferred) fix
};

void RunInline(const InlineCase& k) {
  INFO(k.what);
  auto src = PythonSource::Parse(k.input);
  FixRequest req;
  req.recipe = k.recipe;
  req.line = k.line;
  req.facts = k.facts;
  auto fixes = ComputeFixes(*src, req);
  INFO("status: " << fixes.status().message());
  REQUIRE(fixes.ok());
  REQUIRE_FALSE(fixes->empty());
  for (const QuickFix& f : *fixes) CheckFix(*src, req, f);
  CHECK(ApplyFix(*src, fixes->front()) == k.expected);
}

}  // namespace

TEST_CASE("quick fixes: keyword insertion and removal keep the call's layout", "[mapping][fixes]") {
  const std::vector<InlineCase> cases = {
      {"single line, trailing comma kept",
       "optimizer-foreach",
       "import torch\nopt = torch.optim.SGD(ps, lr=0.1,)\n",
       2,
       {},
       "import torch\nopt = torch.optim.SGD(ps, lr=0.1, foreach=True,)\n"},
      {"empty argument list",
       "dataloader-workers",
       "from torch.utils.data import DataLoader\nloader = DataLoader()\n",
       2,
       {{"cpu_count", "2"}},
       "from torch.utils.data import DataLoader\n"
       "loader = DataLoader(num_workers=2, pin_memory=True, persistent_workers=True)\n"},
      {"hanging indent, closing parenthesis on its own line",
       "dataloader-workers",
       "from torch.utils.data import DataLoader\n"
       "loader = DataLoader(\n"
       "    ds, batch_size=4\n"
       ")\n",
       2,
       {{"num_workers", "3"}, {"device", "cpu"}},
       "from torch.utils.data import DataLoader\n"
       "loader = DataLoader(\n"
       "    ds, batch_size=4,\n"
       "    num_workers=3,\n"
       "    persistent_workers=True\n"
       ")\n"},
      {"CRLF line endings stay CRLF",
       "dataloader-workers",
       "from torch.utils.data import DataLoader\r\n"
       "loader = DataLoader(\r\n"
       "    ds,\r\n"
       "    num_workers=0,\r\n"
       ")\r\n",
       2,
       {{"cpu_count", "64"}},
       "from torch.utils.data import DataLoader\r\n"
       "loader = DataLoader(\r\n"
       "    ds,\r\n"
       "    num_workers=8,\r\n"
       "    pin_memory=True,\r\n"
       "    persistent_workers=True,\r\n"
       ")\r\n"},
      {"False values flipped in place",
       "dataloader-workers",
       "from torch.utils.data import DataLoader\n"
       "loader = DataLoader(ds, num_workers=0, pin_memory=False, persistent_workers=False)\n",
       2,
       {{"cpu_count", "6"}},
       "from torch.utils.data import DataLoader\n"
       "loader = DataLoader(ds, num_workers=6, pin_memory=True, persistent_workers=True)\n"},
      {"computed num_workers left alone, no persistent_workers",
       "dataloader-workers",
       "from torch.utils.data import DataLoader\n"
       "loader = DataLoader(ds, num_workers=args.workers)\n",
       2,
       {},
       "from torch.utils.data import DataLoader\n"
       "loader = DataLoader(ds, num_workers=args.workers, pin_memory=True)\n"},
      {"fused replaces fused=False and removes foreach=False",
       "optimizer-foreach",
       "import torch\nopt = torch.optim.Adam(ps, fused=False, foreach=False)\n",
       2,
       {{"device", "cuda"}},
       "import torch\nopt = torch.optim.Adam(ps, fused=True)\n"},
      {"foreach=False before fused=False",
       "optimizer-foreach",
       "import torch\nopt = torch.optim.AdamW(ps, foreach=False, fused=False, lr=1e-3)\n",
       2,
       {{"device", "cuda"}},
       "import torch\nopt = torch.optim.AdamW(ps, fused=True, lr=1e-3)\n"},
      {"removed argument line keeps its comment",
       "optimizer-foreach",
       "import torch\n"
       "opt = torch.optim.Adam(\n"
       "    params,\n"
       "    fused=False,\n"
       "    foreach=False,  # slow path\n"
       ")\n",
       2,
       {{"device", "cuda"}},
       "import torch\n"
       "opt = torch.optim.Adam(\n"
       "    params,\n"
       "    fused=True,\n"
       "    # slow path\n"
       ")\n"},
      {"removed argument line goes entirely",
       "zero-grad-set-to-none",
       "def f(opt):\n"
       "    opt.zero_grad(\n"
       "        # keep\n"
       "        set_to_none=False,\n"
       "    )\n",
       2,
       {},
       "def f(opt):\n"
       "    opt.zero_grad(\n"
       "        # keep\n"
       "    )\n"},
      {"Adam without a known device: foreach first, fused offered",
       "optimizer-foreach",
       "import torch\nopt = torch.optim.Adam(ps)\n",
       2,
       {},
       "import torch\nopt = torch.optim.Adam(ps, foreach=True)\n"},
      {"a fix still applies next to an unrelated syntax error",
       "zero-grad-set-to-none",
       "import torch\n"
       "def broken(:\n"
       "    pass\n"
       "optimizer.zero_grad(set_to_none=False)\n",
       4,
       {},
       "import torch\n"
       "def broken(:\n"
       "    pass\n"
       "optimizer.zero_grad()\n"},
      {"host sync: while loop with a step counter",
       "defer-host-sync",
       "step = 0\n"
       "while step < 100:\n"
       "    loss = model(x)\n"
       "    print(loss.item())\n"
       "    step += 1\n",
       4,
       {{"sync_every", "10"}},
       "step = 0\n"
       "while step < 100:\n"
       "    loss = model(x)\n"
       "    if step % 10 == 0:\n"
       "        print(loss.item())\n"
       "    step += 1\n"},
      {"host sync: triple-quoted string lines are not re-indented",
       "defer-host-sync",
       "for i, x in enumerate(data):\n"
       "    print(\"\"\"loss\n"
       "%f\"\"\" % model(x).item())\n",
       2,
       {},
       "for i, x in enumerate(data):\n"
       "    if i % 100 == 0:\n"
       "        print(\"\"\"loss\n"
       "%f\"\"\" % model(x).item())\n"},
      {"two statements on the flagged line",
       "optimizer-foreach",
       "import torch\n"
       "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
       "for x in data:\n"
       "    model(x).sum().backward(); opt.step()\n",
       4,
       {},
       "import torch\n"
       "opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)\n"
       "for x in data:\n"
       "    model(x).sum().backward(); opt.step()\n"},
      {"pinned copy: positional non_blocking=False flipped",
       "pin-memory-non-blocking",
       "for x in batches:\n    x = x.cuda(0, False)\n",
       2,
       {},
       "for x in batches:\n    x = x.cuda(0, True)\n"},
  };
  for (const InlineCase& k : cases) {
    DYNAMIC_SECTION(k.what) { RunInline(k); }
  }
}

TEST_CASE("quick fixes: requests that cannot be served", "[mapping][fixes]") {
  auto src = PythonSource::Parse(
      "import torch\n"
      "\n"
      "# a comment\n"
      "optimizer.zero_grad(set_to_none=False\n");
  FixRequest req;
  req.recipe = "zero-grad-set-to-none";
  SECTION("unknown recipe") {
    req.recipe = "cuda-graphs-or-compile";
    req.line = 1;
    auto r = ComputeFixes(*src, req);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("no quick fix") != std::string::npos);
  }
  SECTION("line outside the file") {
    for (int line : {0, -3, 99}) {
      req.line = line;
      CHECK_FALSE(ComputeFixes(*src, req).ok());
    }
  }
  SECTION("blank and comment lines") {
    for (int line : {2, 3}) {
      req.line = line;
      auto r = ComputeFixes(*src, req);
      CHECK_FALSE(r.ok());
    }
  }
  SECTION("an unclosed call is refused, not patched") {
    REQUIRE(src->HasErrors());
    req.line = 4;
    auto r = ComputeFixes(*src, req);
    CHECK_FALSE(r.ok());
  }
  SECTION("the catalogue's recipes with quick fixes") { CHECK(QuickFixRecipes().size() == 6); }
}

TEST_CASE("quick fixes: ApplyFix applies every edit", "[mapping][fixes]") {
  auto src = PythonSource::Parse("a = f(x)\nb = g(y)\n");
  QuickFix fix;
  fix.edits = {{{6, 7}, "z"}, {{9, 9}, "# new\n"}, {{15, 16}, "w"}};
  CHECK(ApplyFix(*src, fix) == "a = f(z)\n# new\nb = g(w)\n");
}

TEST_CASE("quick fixes: every recipe at every line of the golden inputs", "[mapping][fixes]") {
  // Whatever the line, a recipe either refuses, finds nothing to do, or returns fixes that
  // re-parse and are idempotent.
  fs::path dir = fs::path(TTAP_SOURCE_DIR) / "tests" / "mapping" / "fixes";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  files.push_back(fs::path(TTAP_SOURCE_DIR) / "tests" / "data" / "lsp_workspace" / "train.py");
  std::sort(files.begin(), files.end());
  int served = 0;
  for (const fs::path& file : files) {
    auto src = PythonSource::Parse(ReadFile(file));
    for (const std::string& recipe : QuickFixRecipes()) {
      for (int line = 1; line <= src->line_count(); ++line) {
        FixRequest req;
        req.recipe = recipe;
        req.line = line;
        req.facts = {{"device", "cuda"}};
        auto fixes = ComputeFixes(*src, req);
        if (!fixes.ok()) {
          CHECK_FALSE(fixes.status().message().empty());
          continue;
        }
        INFO(file.filename().string() << " " << recipe << " line " << line);
        for (const QuickFix& f : *fixes) {
          CheckFix(*src, req, f);
          ++served;
        }
      }
    }
  }
  CHECK(served > 50);
}

TEST_CASE("quick fixes: truncated and damaged inputs", "[mapping][fixes]") {
  // Editors send half-typed code: no crash, and no fix adds parse errors.
  fs::path dir = fs::path(TTAP_SOURCE_DIR) / "tests" / "mapping" / "fixes";
  int calls = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string text = ReadFile(entry.path());
    for (int cut = 1; cut <= 4; ++cut) {
      std::string t = text.substr(0, text.size() * cut / 5);
      if (cut % 2 == 0) t.erase(t.size() / 2, 5);  // a hole in the middle
      auto src = PythonSource::Parse(t);
      for (const std::string& recipe : QuickFixRecipes()) {
        for (int line = 1; line <= src->line_count(); ++line) {
          FixRequest req;
          req.recipe = recipe;
          req.line = line;
          req.facts = {{"device", "cuda"}, {"torch_before_2", cut % 2 ? "1" : "0"}};
          auto fixes = ComputeFixes(*src, req);
          ++calls;
          if (!fixes.ok()) continue;
          for (const QuickFix& f : *fixes) {
            INFO(entry.path().filename().string()
                 << " cut " << cut << " " << recipe << " line " << line << ": " << f.title);
            CHECK(PythonSource::Parse(ApplyFix(*src, f))->error_count() <= src->error_count());
          }
        }
      }
    }
  }
  CHECK(calls > 1000);
}

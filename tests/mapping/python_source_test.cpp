// PythonSource: tree-sitter parsing, ERROR detection, LSP positions in UTF-16, UTF-8 and code
// points on non-ASCII lines, edits, and the per-version parse cache.
#include "mapping/python_source.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>

using namespace ttap;

TEST_CASE("python source parses and reports errors", "[mapping][source]") {
  auto ok = PythonSource::Parse("import torch\n\ndef f(x):\n    return x + 1\n");
  CHECK_FALSE(ok->HasErrors());
  CHECK(std::string(ts_node_type(ok->root())) == "module");
  CHECK(ok->line_count() == 5);
  CHECK(ok->LineText(2) == "def f(x):");
  auto bad = PythonSource::Parse("def f(:\n    return\n");
  CHECK(bad->HasErrors());
  CHECK(bad->error_count() >= 1);
}

TEST_CASE("positions in UTF-16, UTF-8 and code points", "[mapping][source]") {
  // "é" is 2 bytes / 1 UTF-16 unit; "𝛼" (U+1D6FC) is 4 bytes / 2 UTF-16 units / 1 code point.
  const std::string text = "x = 1\nname = \"é𝛼\"; loss.item()\n";
  auto s = PythonSource::Parse(text);
  uint32_t loss = static_cast<uint32_t>(text.find("loss"));
  CHECK(s->ToPosition(loss, PositionEncoding::kUtf8) == SourcePosition{1, 17});
  CHECK(s->ToPosition(loss, PositionEncoding::kUtf16) == SourcePosition{1, 14});
  CHECK(s->ToPosition(loss, PositionEncoding::kUtf32) == SourcePosition{1, 13});
  for (auto enc : {PositionEncoding::kUtf8, PositionEncoding::kUtf16, PositionEncoding::kUtf32}) {
    CHECK(s->ToByte(s->ToPosition(loss, enc), enc) == loss);
  }
  CHECK(s->ToByte({0, 100}, PositionEncoding::kUtf16) == 5);  // clamped to the line's end
  CHECK(s->ToByte({9, 0}, PositionEncoding::kUtf16) == text.size());
  // CRLF line breaks count as one.
  auto crlf = PythonSource::Parse("a = 1\r\nb = 2\r\n");
  CHECK(crlf->LineText(1) == "b = 2");
  CHECK(crlf->ToPosition(7, PositionEncoding::kUtf16) == SourcePosition{1, 0});
}

TEST_CASE("edits apply in any order", "[mapping][source]") {
  std::string text = "optimizer.zero_grad(set_to_none=False)\n";
  std::vector<TextEdit> edits = {{{20, 37}, ""}, {{0, 9}, "opt"}};
  CHECK(ApplyEdits(text, edits) == "opt.zero_grad()\n");
}

TEST_CASE("the source cache parses each file version once", "[mapping][source]") {
  char path[] = "/tmp/ttap_src_XXXXXX.py";
  int fd = mkstemps(path, 3);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, "x = 1\n", 6) == 6);
  close(fd);
  SourceCache cache;
  auto a = cache.GetFile(path);
  auto b = cache.GetFile(path);
  CHECK(a == b);
  CHECK(cache.parses() == 1);
  auto buf1 = cache.GetBuffer(path, 3, "y = 2\n");
  auto buf2 = cache.GetBuffer(path, 3, "y = 2\n");
  CHECK(buf1 == buf2);
  CHECK(buf1->text() == "y = 2\n");
  auto buf3 = cache.GetBuffer(path, 4, "y = 3\n");
  CHECK(buf3 != buf1);
  CHECK(cache.parses() == 3);
  CHECK(cache.GetFile("/nonexistent/x.py") == nullptr);
  std::remove(path);
}

TEST_CASE("byte offsets on plain text agree with the parsed source", "[mapping][source]") {
  const std::string text = "x = 1\r\nname = \"é𝛼\"; loss.item()\nlast";
  auto s = PythonSource::Parse(text);
  for (auto enc : {PositionEncoding::kUtf8, PositionEncoding::kUtf16, PositionEncoding::kUtf32}) {
    for (int line = -1; line <= 4; ++line) {
      for (int ch = 0; ch <= 30; ++ch) {
        INFO(line << ":" << ch);
        CHECK(ByteOffsetInText(text, {line, ch}, enc) == s->ToByte({line, ch}, enc));
      }
    }
  }
}

TEST_CASE("Reparse after edits gives the tree a full parse gives", "[mapping][source]") {
  std::string text =
      "import torch\n\ndef step(model, batch):\n    loss = model(batch)\n    loss.backward()\n"
      "    return loss.item()\n\nfor b in loader:\n    step(m, b)\n";
  auto current = PythonSource::Parse(text);
  // Inserts, deletions, replacements across lines, and an edit that breaks then mends the syntax.
  struct Change {
    std::string find, replace;
  };
  const std::vector<Change> changes = {{"loss.item()", "loss.detach()"},
                                       {"\n\nfor", "\n\n# loop\nfor"},
                                       {"def step(", "def step_fn("},
                                       {"    return", "    retur"},
                                       {"    retur", "    return"},
                                       {"import torch\n\n", ""},
                                       {"step(m, b)", "step_fn(m, b)\n    print(b)"}};
  for (const auto& c : changes) {
    const size_t at = text.find(c.find);
    REQUIRE(at != std::string::npos);
    BufferEdit e = DescribeEdit(text, at, at + c.find.size(), c.replace);
    std::string next = text;
    next.replace(at, c.find.size(), c.replace);
    current = PythonSource::Reparse(*current, next, {e});
    text = next;
    auto fresh = PythonSource::Parse(text);
    char* a = ts_node_string(current->root());
    char* b = ts_node_string(fresh->root());
    CHECK(std::string(a) == std::string(b));
    free(a);
    free(b);
    CHECK(current->line_count() == fresh->line_count());
    CHECK(current->HasErrors() == fresh->HasErrors());
  }
}

TEST_CASE("DescribeEdit gives tree-sitter's points", "[mapping][source]") {
  const std::string text = "ab\ncd\nef";
  BufferEdit e = DescribeEdit(text, 4, 7, "X\nYZ");  // "d\ne" -> "X\nYZ"
  CHECK(e.start == 4);
  CHECK(e.old_end == 7);
  CHECK(e.new_end == 8);
  CHECK(e.start_point.row == 1);
  CHECK(e.start_point.column == 1);
  CHECK(e.old_end_point.row == 2);
  CHECK(e.old_end_point.column == 1);
  CHECK(e.new_end_point.row == 2);
  CHECK(e.new_end_point.column == 2);
}

TEST_CASE("offsets found from the previous edit's line agree with a scan from the start",
          "[python_source][fuzz]") {
  std::mt19937_64 rng(5);
  const std::vector<std::string> pieces = {"a", "xy", "\n", "\r\n", "é", "😀", "    ", "#"};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
    for (int k = 0; k < 60; ++k) text += pieces[pick(rng)];
    ttap::LineHint hint;
    for (int k = 0; k < 40; ++k) {
      const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 2;
      ttap::SourcePosition pos{static_cast<int>(rng() % lines), static_cast<int>(rng() % 8)};
      for (auto enc : {ttap::PositionEncoding::kUtf16, ttap::PositionEncoding::kUtf8}) {
        TSPoint point;
        const uint32_t fast = ttap::ByteOffsetFrom(text, &hint, pos, enc, &point);
        INFO("round " << round << " line " << pos.line << " char " << pos.character);
        REQUIRE(fast == ttap::ByteOffsetInText(text, pos, enc));
        // The point is tree-sitter's (row, byte column) of that offset.
        const ttap::BufferEdit slow = ttap::DescribeEdit(text, fast, fast, "");
        CHECK(point.row == slow.start_point.row);
        CHECK(point.column == slow.start_point.column);
      }
    }
  }
}

// source_ranges: narrowing a finding's frame line to the call / for header / statement per code,
// following loops to their DataLoader and optimizer steps to their constructor, LSP positions on
// non-ASCII and tab-indented lines, re-anchoring after edits, stale findings; and ScanTrace's
// use of it (line/column/end, stale, file newer than the trace).
#include "mapping/source_ranges.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/load/trace_loader.h"
#include "mapping/quick_fixes.h"
#include "mapping/workspace_index.h"
#include "server/fixture_traces.h"
#include "server/scan.h"
#include "test_support.h"

using namespace ttap;

namespace {

// 1-based line of the |nth| line containing |needle|.
int LineOf(const std::string& text, std::string_view needle, int nth = 1) {
  int line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (std::string_view(text).substr(start, end - start).find(needle) != std::string_view::npos &&
        --nth == 0) {
      return line;
    }
    start = end + 1;
    ++line;
  }
  FAIL("no line contains " << needle);
  return 0;
}

MappedRange Map(const PythonSource& src, int line, const std::string& function,
                const std::string& code, bool newer = false) {
  RangeQuery q;
  q.line = line;
  q.function = function;
  q.code = code;
  q.file_newer_than_trace = newer;
  return MapToSource(src, q);
}

std::string Text(const PythonSource& src, ByteRange r) { return std::string(src.Slice(r)); }

// A training module written the way libraries write them: a class with methods, a decorator,
// calls over several lines with comments, a GradScaler in front of the optimizer.
const std::string kTrainer = R"(import torch
from torch.utils.data import DataLoader


class Trainer:
    """Wraps a model, its optimizer and its data."""

    def __init__(self, model, dataset):
        self.model = model
        self.loader = DataLoader(
            dataset,
            batch_size=64,  # per GPU
            num_workers=0,
        )
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        self.scaler = torch.cuda.amp.GradScaler()
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, 10)

    @torch.no_grad()
    def evaluate(self, batch):
        return self.model(batch).argmax(-1).cpu().numpy()

    def train_step(self, batch):
        self.optimizer.zero_grad(
            set_to_none=False,  # keep the buffers
        )
        loss = self.model(batch).mean()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        return loss.item()

    def fit(self, epochs):
        for epoch in range(epochs):

            for step, batch in enumerate(self.loader):  # the stall
                self.train_step(batch.to("cuda", non_blocking=False))
)";

// A script: module-level data and optimizer, a function using them, a manual gradient-zeroing
// loop, and an `if __name__ == "__main__":` block with its own loop.
const std::string kScript = R"(import torch
from torch.utils.data import DataLoader, TensorDataset

ds = TensorDataset(torch.randn(1024, 3, 224, 224))
loader = DataLoader(ds, batch_size=32, shuffle=True)  # 32 Bilder ≈ 19 MB
model = torch.nn.Conv2d(3, 8, 3).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def train(epochs=1):
    it = iter(loader)
    for _ in range(epochs):
        batch = next(it)
        opt.zero_grad()
        out = model(batch[0].cuda())
        for p in model.parameters():
            if p.grad is not None:
                p.grad.zero_()
        opt.step()
        # a comment line
    torch.cuda.synchronize()


if __name__ == "__main__":
    for (x,) in loader:
        model(x.cuda())
    train()
)";

// A notebook exported with `jupyter nbconvert --to script`.
const std::string kNotebook = R"(#!/usr/bin/env python
# coding: utf-8

# In[1]:


import torch
from torch.utils.data import DataLoader


# In[2]:


train_dl = DataLoader(dataset, batch_size=128, num_workers=0)
device = "cuda"


# In[3]:


for xb, yb in train_dl:
    xb, yb = xb.to(device), yb.to(device)
    loss = loss_fn(model(xb), yb)
    print(loss.item())


# In[ ]:




)";

}  // namespace

TEST_CASE("ranges: each code narrows to its call in a class", "[mapping][ranges]") {
  auto src = PythonSource::Parse(kTrainer);
  REQUIRE_FALSE(src->HasErrors());

  // TTA005: the whole zero_grad call, over its three lines, from any of them.
  for (int line : {LineOf(kTrainer, "zero_grad("), LineOf(kTrainer, "set_to_none=False")}) {
    MappedRange m = Map(*src, line, "train_step", "TTA005");
    CHECK(m.kind == RangeKind::kCall);
    CHECK(
        Text(*src, m.range) ==
        "self.optimizer.zero_grad(\n            set_to_none=False,  # keep the buffers\n        )");
    CHECK(m.statement.start == m.range.start);
    CHECK_FALSE(m.stale);
    CHECK_FALSE(m.reanchored);
    CHECK(m.line == line);
  }

  // TTA006: scaler.step(optimizer) -> the optimizer's constructor, through the argument.
  MappedRange step = Map(*src, LineOf(kTrainer, "scaler.step"), "train_step", "TTA006");
  CHECK(step.kind == RangeKind::kCall);
  CHECK(Text(*src, step.range) == "self.scaler.step(self.optimizer)");
  REQUIRE(step.has_related);
  CHECK(Text(*src, step.related) == "torch.optim.AdamW(model.parameters(), lr=3e-4)");
  CHECK(step.related_label == "optimizer created here");
  // A scheduler's step is only a weak match but still the call on its line.
  MappedRange sched = Map(*src, LineOf(kTrainer, "scheduler.step"), "train_step", "TTA006");
  CHECK(Text(*src, sched.range) == "self.scheduler.step()");

  // TTA002: .item(); in a chain, the .cpu() where the host waits.
  MappedRange item = Map(*src, LineOf(kTrainer, "loss.item()"), "train_step", "TTA002");
  CHECK(Text(*src, item.range) == "loss.item()");
  CHECK(Text(*src, item.statement) == "return loss.item()");
  MappedRange cpu = Map(*src, LineOf(kTrainer, ".cpu().numpy()"), "evaluate", "TTA002");
  CHECK(cpu.kind == RangeKind::kCall);
  CHECK(Text(*src, cpu.range) == "self.model(batch).argmax(-1).cpu()");

  // TTA010: the model call inside `.mean()`.
  MappedRange conv = Map(*src, LineOf(kTrainer, "loss = self.model"), "train_step", "TTA010");
  CHECK(Text(*src, conv.range) == "self.model(batch)");

  // TTA003 / TTA014: the .to(...) call inside the call to train_step.
  for (const char* code : {"TTA003", "TTA014"}) {
    MappedRange to = Map(*src, LineOf(kTrainer, "batch.to("), "fit", code);
    CHECK(Text(*src, to.range) == "batch.to(\"cuda\", non_blocking=False)");
  }

  // TTA001: the for header (without the comment), and the DataLoader behind enumerate(self.x),
  // assigned in __init__.
  MappedRange loop = Map(*src, LineOf(kTrainer, "for step, batch"), "fit", "TTA001");
  CHECK(loop.kind == RangeKind::kForHeader);
  CHECK(Text(*src, loop.range) == "for step, batch in enumerate(self.loader):");
  CHECK(Text(*src, loop.statement) == Text(*src, loop.range));
  REQUIRE(loop.has_related);
  CHECK(Text(*src, loop.related).rfind("DataLoader(\n            dataset,", 0) == 0);
  CHECK(loop.related_label == "DataLoader defined here");

  // Codes without a shape: the statement, or the first call on the line of a longer statement.
  MappedRange backward = Map(*src, LineOf(kTrainer, "backward()"), "train_step", "TTA008");
  CHECK(backward.kind == RangeKind::kStatement);
  CHECK(Text(*src, backward.range) == "self.scaler.scale(loss).backward()");
  MappedRange ctor = Map(*src, LineOf(kTrainer, "self.loader = DataLoader("), "__init__", "TTA007");
  CHECK(ctor.kind == RangeKind::kCall);
  CHECK(Text(*src, ctor.range).rfind("DataLoader(", 0) == 0);
  CHECK(Text(*src, ctor.statement).rfind("self.loader = DataLoader(", 0) == 0);
  // A code with a shape whose line holds something else: the statement.
  MappedRange other = Map(*src, LineOf(kTrainer, "self.scaler.update()"), "train_step", "TTA002");
  CHECK(other.kind == RangeKind::kStatement);
  CHECK(Text(*src, other.range) == "self.scaler.update()");
  CHECK_FALSE(other.stale);

  // No statement on the line: a blank line inside a loop, the docstring's neighbour.
  MappedRange blank = Map(*src, LineOf(kTrainer, "for epoch in") + 1, "fit", "TTA001");
  CHECK(blank.kind == RangeKind::kLine);
  CHECK(blank.range.start == blank.range.end);
  CHECK(blank.range.start == src->LineStart(LineOf(kTrainer, "for epoch in")));
  // A decorator line is the decorated definition's header.
  MappedRange deco = Map(*src, LineOf(kTrainer, "@torch.no_grad()"), "Trainer", "TTA008");
  CHECK(deco.kind == RangeKind::kStatement);
  CHECK(Text(*src, deco.range) == "@torch.no_grad()\n    def evaluate(self, batch):");
}

TEST_CASE("ranges: module-level scripts follow loaders, iterators and optimizers",
          "[mapping][ranges]") {
  auto src = PythonSource::Parse(kScript);
  REQUIRE_FALSE(src->HasErrors());
  const std::string dataloader = "DataLoader(ds, batch_size=32, shuffle=True)";

  // next(it) where it = iter(loader) and loader is module-level.
  MappedRange next = Map(*src, LineOf(kScript, "next(it)"), "train", "TTA001");
  CHECK(next.kind == RangeKind::kCall);
  CHECK(Text(*src, next.range) == "next(it)");
  REQUIRE(next.has_related);
  CHECK(Text(*src, next.related) == dataloader);
  MappedRange iter = Map(*src, LineOf(kScript, "iter(loader)"), "train", "TTA001");
  CHECK(Text(*src, iter.range) == "iter(loader)");
  CHECK(Text(*src, iter.related) == dataloader);
  // The loop of the __main__ block.
  MappedRange main_loop = Map(*src, LineOf(kScript, "for (x,) in loader:"), "<module>", "TTA001");
  CHECK(main_loop.kind == RangeKind::kForHeader);
  CHECK(Text(*src, main_loop.range) == "for (x,) in loader:");
  CHECK(Text(*src, main_loop.related) == dataloader);
  // A loop that is not over a loader still narrows to its header, without a related location.
  MappedRange epochs = Map(*src, LineOf(kScript, "for _ in range"), "train", "TTA001");
  CHECK(epochs.kind == RangeKind::kForHeader);
  CHECK(Text(*src, epochs.range) == "for _ in range(epochs):");
  CHECK_FALSE(epochs.has_related);

  // TTA005: the optimizer's zero_grad; the manual loop's header from its header or its body.
  CHECK(Text(*src, Map(*src, LineOf(kScript, "opt.zero_grad()"), "train", "TTA005").range) ==
        "opt.zero_grad()");
  for (const char* at : {"for p in model", "p.grad.zero_()"}) {
    MappedRange manual = Map(*src, LineOf(kScript, at), "train", "TTA005");
    CHECK(manual.kind == RangeKind::kForHeader);
    CHECK(Text(*src, manual.range) == "for p in model.parameters():");
    CHECK(manual.line == LineOf(kScript, at));
  }

  // Only a loop over the parameters whose grads it zeroes is the cause, not any enclosing loop.
  const std::string nested =
      "for batch in loader:\n"
      "    model.weight.grad.zero_()\n"
      "    for name, p in model.named_parameters():\n"
      "        p.grad.detach_().zero_()\n";
  auto nested_src = PythonSource::Parse(nested);
  MappedRange single = Map(*nested_src, 2, "<module>", "TTA005");
  CHECK(single.kind == RangeKind::kCall);
  CHECK(Text(*nested_src, single.range) == "model.weight.grad.zero_()");
  MappedRange named = Map(*nested_src, 4, "<module>", "TTA005");
  CHECK(named.kind == RangeKind::kForHeader);
  CHECK(Text(*nested_src, named.range) == "for name, p in model.named_parameters():");

  // TTA006: the module-level optimizer.
  MappedRange step = Map(*src, LineOf(kScript, "opt.step()"), "train", "TTA006");
  CHECK(Text(*src, step.range) == "opt.step()");
  CHECK(Text(*src, step.related) == "torch.optim.SGD(model.parameters(), lr=0.1)");

  // TTA002: torch.cuda.synchronize().
  CHECK(Text(*src, Map(*src, LineOf(kScript, "synchronize"), "train", "TTA002").range) ==
        "torch.cuda.synchronize()");
  // TTA003 vs TTA010 on one line: the copy, or the model call around it.
  int out_line = LineOf(kScript, "out = model(");
  CHECK(Text(*src, Map(*src, out_line, "train", "TTA003").range) == "batch[0].cuda()");
  CHECK(Text(*src, Map(*src, out_line, "train", "TTA010").range) == "model(batch[0].cuda())");
  // TTA013 has no empty_cache here: the statement.
  CHECK(Map(*src, out_line, "train", "TTA013").kind == RangeKind::kStatement);

  // kStatement is trimmed of the trailing comment (with non-ASCII text in it).
  MappedRange assign = Map(*src, LineOf(kScript, "loader = DataLoader"), "<module>", "TTA009");
  CHECK(assign.kind == RangeKind::kStatement);
  CHECK(Text(*src, assign.range) == "loader = " + dataloader);
  // A comment line has no statement: kLine from the first non-blank character.
  MappedRange comment = Map(*src, LineOf(kScript, "# a comment line"), "train", "TTA002");
  CHECK(comment.kind == RangeKind::kLine);
  CHECK(Text(*src, comment.range) == "# a comment line");
  CHECK_FALSE(comment.stale);
}

TEST_CASE("ranges: a notebook exported to .py", "[mapping][ranges]") {
  auto src = PythonSource::Parse(kNotebook);
  REQUIRE_FALSE(src->HasErrors());
  MappedRange loop = Map(*src, LineOf(kNotebook, "for xb, yb"), "<module>", "TTA001");
  CHECK(loop.kind == RangeKind::kForHeader);
  CHECK(Text(*src, loop.range) == "for xb, yb in train_dl:");
  REQUIRE(loop.has_related);
  CHECK(Text(*src, loop.related) == "DataLoader(dataset, batch_size=128, num_workers=0)");
  CHECK(loop.related_label == "DataLoader defined here");
  CHECK(Text(*src, Map(*src, LineOf(kNotebook, "xb.to("), "<module>", "TTA003").range) ==
        "xb.to(device)");
  CHECK(Text(*src, Map(*src, LineOf(kNotebook, "loss.item()"), "<module>", "TTA002").range) ==
        "loss.item()");
  // The cell marker is a comment.
  CHECK(Map(*src, LineOf(kNotebook, "# In[3]:"), "<module>", "TTA001").kind == RangeKind::kLine);
}

TEST_CASE("ranges: LSP positions on tab-indented non-ASCII lines", "[mapping][ranges]") {
  // "ö", "ß" are 2 bytes / 1 UTF-16 unit; "📏", "🔥" are 4 bytes / 2 UTF-16 units / 1 code point.
  const std::string text =
      "import torch\n"
      "\n"
      "def schritt(modell, daten, optimierer):\n"
      "\tverlust = modell(daten).sum()\n"
      "\tverlust.backward()\n"
      "\toptimierer.step()\n"
      "\tgröße = \"Größe 📏\"; wert = verlust.item()\n"
      "\tprint(f\"Verlust ≈ {verlust.item():.3f} 🔥\")\n"
      "\treturn wert\n";
  auto src = PythonSource::Parse(text);
  REQUIRE_FALSE(src->HasErrors());

  MappedRange m = Map(*src, 7, "schritt", "TTA002");
  REQUIRE(m.kind == RangeKind::kCall);
  CHECK(Text(*src, m.range) == "verlust.item()");
  CHECK(Text(*src, m.statement) == "wert = verlust.item()");
  SourceRange utf16 = src->ToRange(m.range, PositionEncoding::kUtf16);
  CHECK(utf16.start == SourcePosition{6, 28});
  CHECK(utf16.end == SourcePosition{6, 42});
  SourceRange utf8 = src->ToRange(m.range, PositionEncoding::kUtf8);
  CHECK(utf8.start == SourcePosition{6, 34});
  CHECK(utf8.end == SourcePosition{6, 48});
  SourceRange points = src->ToRange(m.range, PositionEncoding::kUtf32);
  CHECK(points.start == SourcePosition{6, 27});
  CHECK(points.end == SourcePosition{6, 41});
  // Back from the editor's UTF-16 position to the same byte.
  CHECK(src->ToByte(utf16.start, PositionEncoding::kUtf16) == m.range.start);

  // Inside an f-string's interpolation, after a non-BMP character on the line.
  MappedRange f = Map(*src, 8, "schritt", "TTA002");
  CHECK(Text(*src, f.range) == "verlust.item()");
  CHECK(src->ToRange(f.range, PositionEncoding::kUtf16).start == SourcePosition{7, 20});
  CHECK(src->ToRange(f.range, PositionEncoding::kUtf8).start == SourcePosition{7, 22});

  // Tabs are one character; the step call starts after one.
  MappedRange step = Map(*src, 6, "schritt", "TTA006");
  CHECK(src->ToRange(step.range, PositionEncoding::kUtf16).start == SourcePosition{5, 1});
  CHECK_FALSE(step.has_related);  // `optimierer` is a parameter
}

TEST_CASE("ranges: re-anchoring after the file was edited", "[mapping][ranges]") {
  auto old_src = PythonSource::Parse(kTrainer);
  const int zero_grad = LineOf(kTrainer, "zero_grad(");
  const int item = LineOf(kTrainer, "loss.item()");
  const int loop = LineOf(kTrainer, "for step, batch");

  // Four lines inserted above the class: the trace's lines now point four lines too high.
  const std::string edited = "# Copyright 2024\nimport os\nimport math\n\n" + kTrainer;
  auto src = PythonSource::Parse(edited);
  REQUIRE_FALSE(src->HasErrors());
  for (bool newer : {true, false}) {
    INFO("file newer than the trace: " << newer);
    // The old zero_grad line is now in evaluate(): re-anchored by function and shape.
    MappedRange m = Map(*src, zero_grad, "train_step", "TTA005", newer);
    CHECK(m.reanchored);
    CHECK_FALSE(m.stale);
    CHECK(m.line == zero_grad + 4);
    CHECK(m.kind == RangeKind::kCall);
    CHECK(Text(*src, m.range).rfind("self.optimizer.zero_grad(", 0) == 0);
  }
  // Newer file, the old line still inside the function but holding another statement.
  MappedRange it = Map(*src, item, "train_step", "TTA002", true);
  CHECK(it.reanchored);
  CHECK(it.line == item + 4);
  CHECK(Text(*src, it.range) == "loss.item()");
  // The loop and its DataLoader move together.
  MappedRange l = Map(*src, loop, "fit", "TTA001", true);
  CHECK(l.reanchored);
  CHECK(l.line == loop + 4);
  CHECK(Text(*src, l.range) == "for step, batch in enumerate(self.loader):");
  CHECK(l.has_related);
  // Not newer, the function still encloses the line, the line just holds something else: the
  // trace's line is trusted.
  MappedRange trusted =
      Map(*old_src, LineOf(kTrainer, "self.scaler.update()"), "train_step", "TTA005", false);
  CHECK_FALSE(trusted.reanchored);
  CHECK_FALSE(trusted.stale);
  CHECK(trusted.kind == RangeKind::kStatement);
  // Newer but unchanged at the line: verified in place.
  MappedRange same = Map(*old_src, zero_grad, "train_step", "TTA005", true);
  CHECK_FALSE(same.reanchored);
  CHECK_FALSE(same.stale);
  CHECK(same.line == zero_grad);
  // A weak match on the line (a loop over range()) gives way to the loader loop nearby.
  MappedRange weak = Map(*old_src, LineOf(kTrainer, "for epoch in"), "fit", "TTA001", true);
  CHECK(weak.reanchored);
  CHECK(weak.line == loop);

  // Lines inserted inside the function (a docstring): the nearest zero_grad in it.
  std::string docstring = kTrainer;
  docstring.insert(docstring.find("        self.optimizer.zero_grad("),
                   "        \"\"\"One optimisation step.\n\n        Returns the loss.\"\"\"\n");
  auto doc_src = PythonSource::Parse(docstring);
  MappedRange d = Map(*doc_src, zero_grad, "train_step", "TTA005", true);
  CHECK(d.reanchored);
  CHECK(d.line == zero_grad + 3);

  // The notebook gained a cell above the loop.
  std::string nb = kNotebook;
  nb.insert(nb.find("# In[3]:"), "# In[9]:\n\n\nprint(torch.__version__)\n\n\n");
  auto nb_src = PythonSource::Parse(nb);
  MappedRange cell = Map(*nb_src, LineOf(kNotebook, "for xb, yb"), "<module>", "TTA001", true);
  CHECK(cell.reanchored);
  CHECK(cell.line == LineOf(nb, "for xb, yb"));
  CHECK(Text(*nb_src, cell.related) == "DataLoader(dataset, batch_size=128, num_workers=0)");

  // Methods of the same name in two classes: the match nearest the old line.
  const std::string two = R"(class A:
    def forward(self, x):
        return x.cpu()


class B:
    def forward(self, x):
        y = x * 2
        return y.item()
)";
  auto two_src = PythonSource::Parse("import torch\n\n" + two);
  MappedRange near = Map(*two_src, LineOf(two, "y.item()"), "forward", "TTA002", true);
  CHECK(near.reanchored);
  CHECK(near.line == LineOf(two, "y.item()") + 2);
  CHECK(Text(*two_src, near.range) == "y.item()");
}

TEST_CASE("ranges: stale when the function or the statement is gone", "[mapping][ranges]") {
  const int zero_grad = LineOf(kTrainer, "zero_grad(");

  // train_step renamed and lines inserted: nothing to re-anchor to.
  std::string renamed = "import os\n\n" + kTrainer;
  renamed.replace(renamed.find("def train_step"), 14, "def training_step");
  auto src = PythonSource::Parse(renamed);
  MappedRange m = Map(*src, zero_grad, "train_step", "TTA005", true);
  CHECK(m.stale);
  CHECK_FALSE(m.reanchored);
  CHECK(m.stale_reason.find("'train_step' is no longer in the file") != std::string::npos);
  CHECK(m.line == zero_grad);
  // The range stays on the old line (now in evaluate()).
  CHECK(src->ToPosition(m.range.start, PositionEncoding::kUtf16).line == zero_grad - 1);

  // The function is there but its zero_grad call was removed.
  std::string removed = kTrainer;
  size_t at = removed.find("        self.optimizer.zero_grad(");
  removed.erase(at, removed.find("        loss = self.model") - at);
  auto removed_src = PythonSource::Parse(removed);
  MappedRange gone = Map(*removed_src, zero_grad, "train_step", "TTA005", true);
  CHECK(gone.stale);
  CHECK(gone.stale_reason.find("'train_step' has no zero_grad() call") != std::string::npos);
  CHECK(Text(*removed_src, gone.range) ==
        std::string(removed_src->LineText(zero_grad - 1)).substr(8));

  // A code without a shape: when the function no longer encloses the line, stale.
  MappedRange shapeless = Map(*src, zero_grad, "train_step", "TTA008", false);
  CHECK(shapeless.stale);
  MappedRange moved = Map(*PythonSource::Parse("import os\n\n\n" + kTrainer), zero_grad,
                          "train_step", "TTA008", true);
  CHECK(moved.stale);
  CHECK(moved.stale_reason.find("not in 'train_step'") != std::string::npos);
  CHECK(moved.kind == RangeKind::kStatement);

  // Past the end of the file.
  auto short_src = PythonSource::Parse("import torch\n\nx = torch.ones(3)\n");
  MappedRange past = Map(*short_src, 40, "<module>", "TTA002", true);
  CHECK(past.stale);
  CHECK(past.past_end);
  CHECK(past.range.start == short_src->text().size());
  CHECK(past.stale_reason.find("past the end of the file (3 lines)") != std::string::npos);
  // ...unless the statement can be found again.
  auto shorter = PythonSource::Parse("import torch\n\nx = torch.ones(3).cuda()\nprint(x.item())\n");
  MappedRange found = Map(*shorter, 40, "<module>", "TTA002", true);
  CHECK_FALSE(found.stale);
  CHECK(found.reanchored);
  CHECK(found.line == 4);
  CHECK(Text(*shorter, found.range) == "x.item()");
  // Lambdas and comprehensions name no function: the line is used as is when it matches.
  MappedRange lambda = Map(*shorter, 4, "<lambda>", "TTA002", true);
  CHECK_FALSE(lambda.stale);
  CHECK(Text(*shorter, lambda.range) == "x.item()");
}

namespace {

void SetMtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

const LocatedFinding* Stall(const ScanResult& r) {
  for (const LocatedFinding& lf : r.findings) {
    if (lf.finding.code == "TTA001") return &lf;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("scan: findings are narrowed, re-anchored or marked stale", "[mapping][ranges][scan]") {
  std::string dir = ttap_test::MakeTempDir();
  // The trace says line 5 in main(): `for step, (x, y) in enumerate(lädt):`.
  const std::string train =
      "from torch.utils.data import DataLoader\n"
      "\n"
      "def main():\n"
      "    lädt = DataLoader(ds, batch_size=8)\n"
      "    größe = 0; n = 0\n"
      "    for step, (x, y) in enumerate(lädt):\n"
      "        größe += x.numel()\n";
  const int loop_line = 6;
  WriteOrFail(dir + "/trace.json", ttap_test::StallTrace(loop_line, "main"));
  WriteOrFail(dir + "/train.py", train);
  SetMtime(dir + "/trace.json", 2000000000);
  SetMtime(dir + "/train.py", 1900000000);  // older than the trace
  WorkspaceIndex ws = WorkspaceIndex::Build(dir);
  SourceCache cache;
  ScanOptions opts;
  opts.workspace = &ws;
  opts.sources = &cache;
  auto scan = [&] {
    auto t = LoadTrace(dir + "/trace.json");
    REQUIRE(t.ok());
    return ScanTrace(std::move(t.value()), opts);
  };

  ScanResult r = scan();
  const LocatedFinding* f = Stall(r);
  REQUIRE(f);
  CHECK(f->file == "train.py");
  CHECK(f->line == loop_line);
  CHECK(f->column == 5);
  CHECK(f->end_line == loop_line);
  CHECK(f->end_column ==
        5 + static_cast<int>(std::string("for step, (x, y) in enumerate(lädt):").size()) -
            1);  // "ä" is one code point, two bytes
  CHECK_FALSE(f->stale);
  auto j = ScanResultToJson(r);
  const auto& jf = j["findings"][0];
  CHECK(jf["end_line"] == loop_line);
  CHECK(jf["end_column"] == f->end_column);
  CHECK_FALSE(jf.contains("stale"));
  CHECK(cache.parses() == 1);

  // Two lines inserted above, the file now newer than the trace: re-anchored to line 8.
  WriteOrFail(dir + "/train.py", "import torch\nimport os\n" + train);
  SetMtime(dir + "/train.py", 2100000000);
  r = scan();
  f = Stall(r);
  REQUIRE(f);
  CHECK(f->line == loop_line + 2);
  CHECK(f->column == 5);
  CHECK_FALSE(f->stale);

  // main() renamed: stale, reported at the trace's line, and marked in JSON and text.
  std::string renamed = "import torch\nimport os\n" + train;
  renamed.replace(renamed.find("def main"), 8, "def run");
  WriteOrFail(dir + "/train.py", renamed);
  SetMtime(dir + "/train.py", 2200000000);
  r = scan();
  f = Stall(r);
  REQUIRE(f);
  CHECK(f->stale);
  CHECK(f->line == loop_line);
  CHECK(f->stale_reason.find("'main' is no longer in the file") != std::string::npos);
  j = ScanResultToJson(r);
  CHECK(j["findings"][0]["stale"] == true);
  CHECK(ScanResultToText(r).find("[stale location: ") != std::string::npos);

  // A suppression on the re-anchored line counts.
  std::string suppressed = "import torch\nimport os\n" + train;
  const std::string header_end = "enumerate(lädt):";
  suppressed.insert(suppressed.find(header_end) + header_end.size(), "  # ttap: ignore[TTA001]");
  WriteOrFail(dir + "/train.py", suppressed);
  SetMtime(dir + "/train.py", 2300000000);
  r = scan();
  CHECK(Stall(r) == nullptr);
  CHECK(r.suppressed >= 1);
}

TEST_CASE("ranges: the innermost statement at the frame's line, at any nesting",
          "[mapping][ranges]") {
  // Profiling scripts wrap the loop in `with torch.profiler.profile(...)` at module level (or
  // inside for/while/try/if/match/async blocks and decorated functions): the finding belongs on
  // the statement the frame names, never on the block's header.
  const std::string script =
      "import torch\n"
      "with torch.profiler.profile() as prof:\n"
      "    for batch in loader:\n"
      "        loss = model(batch).sum()\n"
      "        print(loss.item())\n"
      "        prof.step()\n"
      "while True:\n"
      "    try:\n"
      "        if ready:\n"
      "            x = y.item()\n"
      "    except Exception:\n"
      "        z = w.item()\n"
      "    finally:\n"
      "        pass\n"
      "match mode:\n"
      "    case 'train':\n"
      "        v = t.item()\n"
      "@torch.no_grad()\n"
      "def evaluate():\n"
      "    with torch.autocast('cuda'):\n"
      "        for b in loader:\n"
      "            s = b.sum().item()\n"
      "async def serve():\n"
      "    async with lock:\n"
      "        async for req in queue:\n"
      "            r = req.item()\n";
  auto src = PythonSource::Parse(script);
  REQUIRE_FALSE(src->HasErrors());
  struct Case {
    const char* at;        // text on the frame's line
    const char* function;  // the frame's function
    const char* code;
    const char* expected;  // what is underlined
  };
  const Case cases[] = {
      {"for batch in loader:", "<module>", "TTA001", "for batch in loader:"},
      {"print(loss.item())", "<module>", "TTA002", "loss.item()"},
      {"loss = model", "<module>", "TTA013", "loss = model(batch).sum()"},
      {"x = y.item()", "<module>", "TTA002", "y.item()"},
      {"z = w.item()", "<module>", "TTA002", "w.item()"},
      {"v = t.item()", "<module>", "TTA002", "t.item()"},
      {"for b in loader:", "evaluate", "TTA001", "for b in loader:"},
      {"s = b.sum().item()", "evaluate", "TTA002", "b.sum().item()"},
      {"r = req.item()", "serve", "TTA002", "req.item()"},
  };
  for (const Case& c : cases) {
    INFO(c.at << " (" << c.code << ")");
    MappedRange m = Map(*src, LineOf(script, c.at), c.function, c.code);
    CHECK_FALSE(m.stale);
    CHECK(Text(*src, m.range) == c.expected);
  }
}

TEST_CASE("ranges: a tutorial-shaped profiling script, the loop inside `with profile(...)`",
          "[mapping][ranges][fixes]") {
  // Shaped like PyTorch's profiler recipes: everything at module level, the training loop
  // inside `with torch.profiler.profile(...) as prof:`. Each finding lands on its own statement,
  // never on the `with` line, and the DataLoader's quick fix is offered from the loop.
  const std::string script =
      "import torch\n"
      "import torchvision\n"
      "device = torch.device('cuda')\n"
      "model = torchvision.models.resnet18().to(device)\n"
      "optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
      "train_loader = torch.utils.data.DataLoader(train_set, batch_size=32, shuffle=True)\n"
      "with torch.profiler.profile(\n"
      "        schedule=torch.profiler.schedule(wait=1, warmup=1, active=3),\n"
      "        on_trace_ready=torch.profiler.tensorboard_trace_handler('./log'),\n"
      "        with_stack=True) as prof:\n"
      "    for step, (inputs, labels) in enumerate(train_loader):\n"
      "        inputs, labels = inputs.to(device), labels.to(device)\n"
      "        outputs = model(inputs)\n"
      "        loss = torch.nn.functional.cross_entropy(outputs, labels)\n"
      "        optimizer.zero_grad(set_to_none=False)\n"
      "        loss.backward()\n"
      "        optimizer.step()\n"
      "        prof.step()\n";
  auto src = PythonSource::Parse(script);
  REQUIRE_FALSE(src->HasErrors());
  const int with_line = LineOf(script, "with torch.profiler.profile(");
  struct Case {
    const char* at;
    const char* code;
    const char* expected;
  };
  const Case cases[] = {
      {"for step, (inputs, labels)", "TTA001",
       "for step, (inputs, labels) in enumerate(train_loader):"},
      {"inputs.to(device)", "TTA003", "inputs.to(device)"},
      {"optimizer.zero_grad", "TTA005", "optimizer.zero_grad(set_to_none=False)"},
      {"optimizer.step()", "TTA006", "optimizer.step()"},
  };
  for (const Case& c : cases) {
    INFO(c.code << " at " << c.at);
    const int line = LineOf(script, c.at);
    MappedRange m = Map(*src, line, "<module>", c.code);
    CHECK_FALSE(m.stale);
    CHECK(Text(*src, m.range) == c.expected);
    CHECK(src->ToPosition(m.range.start, PositionEncoding::kUtf8).line + 1 == line);
    CHECK(line != with_line);
  }
  // The DataLoader fix from the loop's line edits the DataLoader(...) the loop iterates.
  FixRequest req;
  req.recipe = "dataloader-workers";
  req.line = LineOf(script, "for step, (inputs, labels)");
  req.facts["device"] = "cuda";
  auto fixes = ComputeFixes(*src, req);
  REQUIRE(fixes.ok());
  REQUIRE_FALSE(fixes->empty());
  const std::string fixed = ApplyEdits(src->text(), fixes->front().edits);
  const size_t ctor = fixed.find("DataLoader(train_set, batch_size=32, shuffle=True,");
  REQUIRE(ctor != std::string::npos);
  CHECK(fixed.find("num_workers=", ctor) < fixed.find("with torch.profiler"));
  // The zero_grad fix from its own line.
  req.recipe = "zero-grad-set-to-none";
  req.line = LineOf(script, "optimizer.zero_grad");
  auto zero = ComputeFixes(*src, req);
  REQUIRE(zero.ok());
  REQUIRE_FALSE(zero->empty());
  CHECK(ApplyEdits(src->text(), zero->front().edits).find("optimizer.zero_grad()\n") !=
        std::string::npos);
}

TEST_CASE("ranges: a def line narrows to the def's one statement of the code's shape",
          "[mapping][ranges]") {
  // aten::item's only Python frame is the function that called .item() (the tracer names it by
  // its def line, and a C method has no frame of its own): the finding sat on `def train`.
  const std::string text =
      "def train(model, loader, opt):\n"
      "    for x, y in loader:\n"
      "        loss = model(x).sum()\n"
      "        loss.backward()\n"
      "        print(loss.item())\n"
      "\n"
      "    def report(t):\n"
      "        return t.cpu()\n"
      "\n"
      "\n"
      "def evaluate(model, xs):\n"
      "    a = xs[0].item()\n"
      "    b = xs[1].item()\n"
      "    return a + b\n";
  auto src = PythonSource::Parse(text);
  REQUIRE_FALSE(src->HasErrors());
  auto map = [&](int line, const std::string& fn, const std::string& code, bool edited = false) {
    RangeQuery q;
    q.line = line;
    q.function = fn;
    q.code = code;
    q.file_newer_than_trace = edited;
    return MapToSource(*src, q);
  };
  // One .item() in train's own body (report's .cpu() is a nested def's): that call.
  MappedRange item = map(LineOf(text, "def train"), "train", "TTA002");
  CHECK(Text(*src, item.range) == "loss.item()");
  CHECK(item.line == LineOf(text, "loss.item()"));
  CHECK_FALSE(item.stale);
  CHECK_FALSE(item.reanchored);
  // The for loop for a DataLoader stall.
  CHECK(map(LineOf(text, "def train"), "train", "TTA001").kind == RangeKind::kForHeader);
  // Two .item() calls: nothing says which ran, the def stays.
  CHECK(map(LineOf(text, "def evaluate"), "evaluate", "TTA002").line ==
        LineOf(text, "def evaluate"));
  // A statement line: as before.
  CHECK(Text(*src, map(LineOf(text, "a = xs"), "evaluate", "TTA002").range) == "xs[0].item()");
}

TEST_CASE("ranges: a def line and the frame's callee narrow to the call inside the def",
          "[mapping][ranges]") {
  // PyTorch's tracer names a frame by its def line; what the frame called tells the statement.
  const std::string text =
      "import gc\n"
      "\n"
      "@torch.no_grad()\n"
      "def step(model, x):\n"
      "    y = model(x)\n"
      "    log.write(' '.join(history))\n"
      "    gc.collect()\n"
      "    return y\n";
  auto src = PythonSource::Parse(text);
  REQUIRE_FALSE(src->HasErrors());
  const int def_line = LineOf(text, "def step");
  auto map = [&](const std::string& code, const std::string& callee, int line = 0,
                 const std::string& fn = "step") {
    RangeQuery q;
    q.line = line ? line : def_line;
    q.function = fn;
    q.code = code;
    q.callee = callee;
    return MapToSource(*src, q);
  };
  MappedRange gc = map("TTA008", "collect");
  CHECK(gc.kind == RangeKind::kCall);
  CHECK(Text(*src, gc.range) == "gc.collect()");
  CHECK(gc.line == LineOf(text, "gc.collect"));
  CHECK_FALSE(gc.stale);
  CHECK_FALSE(gc.reanchored);
  // A nested call: the call itself, not its statement.
  CHECK(Text(*src, map("TTA017", "join").range) == "' '.join(history)");
  // No call of that name in the def, another function's def, or a line that is not a def:
  // the frame's statement as before.
  CHECK(map("TTA008", "save").kind == RangeKind::kStatement);
  CHECK(map("TTA008", "collect", 0, "other").line == def_line);
  CHECK(Text(*src, map("TTA008", "collect", LineOf(text, "y = model")).range) == "y = model(x)");
  // A code with a shape of its own keeps its shape's narrowing (no zero_grad here: the def).
  CHECK(map("TTA005", "collect").line == def_line);
}

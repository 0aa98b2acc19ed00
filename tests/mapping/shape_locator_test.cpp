// LocateByShape (mapping/shape_locator.h): findings of traces without Python stacks go to the
// workspace's one statement with their fix's shape, and nowhere when there are none or several.
#include "mapping/shape_locator.h"

#include <catch2/catch.hpp>

#include "test_support.h"

using namespace ttap;

namespace {

Finding Coded(const char* code) {
  Finding f;
  f.code = code;
  return f;
}

}  // namespace

TEST_CASE("code shapes: a unique statement is found, several or none give nothing",
          "[mapping][shape]") {
  const std::string root = ttap_test::MakeTempDir();
  const std::string train = root + "/train.py", util = root + "/util.py";
  REQUIRE(ttap_test::WriteFile(train,
                               "import torch\n"
                               "data = torch.utils.data.DataLoader(ds, batch_size=8)\n"
                               "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                               "sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n"
                               "def train():\n"
                               "    for x in data:\n"
                               "        opt.zero_grad()\n"
                               "        model(x).sum().backward()\n"
                               "        opt.step()\n"
                               "        sched.step()\n"
                               "        scaler.step(opt)\n"));
  REQUIRE(ttap_test::WriteFile(util,
                               "def cleanup():\n"
                               "    torch.cuda.empty_cache()\n"
                               "for epoch in range(3):\n"
                               "    pass\n"));
  SourceCache cache;
  const std::vector<std::string> files = {train, util};
  int matches = 0;
  // The loop over a name assigned from DataLoader(...); `for epoch in range(3)` is not one.
  auto loop = LocateByShape(files, &cache, ShapeOf(Coded("TTA001")), &matches);
  REQUIRE(loop);
  CHECK(loop->path == train);
  CHECK(loop->line == 6);
  CHECK(loop->function == "train");
  auto zero = LocateByShape(files, &cache, ShapeOf(Coded("TTA005")));
  REQUIRE(zero);
  CHECK(zero->line == 7);
  // The optimizer's step, not the scheduler's or the GradScaler's.
  auto step = LocateByShape(files, &cache, ShapeOf(Coded("TTA006")), &matches);
  REQUIRE(step);
  CHECK(step->line == 9);
  CHECK(matches == 1);
  auto empty = LocateByShape(files, &cache, ShapeOf(Coded("TTA013")));
  REQUIRE(empty);
  CHECK(empty->path == util);
  CHECK(empty->function == "cleanup");
  // No shape for the code, or two statements with it: nowhere.
  CHECK_FALSE(LocateByShape(files, &cache, ShapeOf(Coded("TTA009"))));
  REQUIRE(ttap_test::WriteFile(root + "/eval.py", "for b in val_loader:\n    pass\n"));
  CHECK_FALSE(
      LocateByShape({train, util, root + "/eval.py"}, &cache, ShapeOf(Coded("TTA001")), &matches));
  CHECK(matches == 2);
}

TEST_CASE("code shapes: a CPU-overhead-bound region goes where the region is written",
          "[mapping][shape][TTA017]") {
  auto finding = [](const std::string& region) {
    Finding f;
    f.code = "TTA017";
    f.evidence["region"] = {false, 0, region};
    return f;
  };
  CHECK(ShapeOf(finding("backward")) == SourceShape::kBackwardCall);
  CHECK(ShapeOf(finding("the optimizer step")) == ShapeOf(Coded("TTA006")));
  CHECK(ShapeOf(finding("zero_grad")) == ShapeOf(Coded("TTA005")));
  CHECK(ShapeOf(finding("the step's eager ops")) == ShapeOf(Coded("TTA001")));
  // An annotation: only its stack knows.
  CHECK_FALSE(IsLocatableShape(ShapeOf(finding("## forward ##"))));
  CHECK_FALSE(IsLocatableShape(ShapeOf(Coded("TTA009"))));
  CHECK(IsLocatableShape(ShapeOf(Coded("TTA005"))));
  const std::string root = ttap_test::MakeTempDir();
  const std::string train = root + "/train.py";
  REQUIRE(ttap_test::WriteFile(train,
                               "for x in loader:\n"
                               "    loss = model(x).sum()\n"
                               "    loss.backward()\n"));
  SourceCache cache;
  auto bw = LocateByShape({train}, &cache, SourceShape::kBackwardCall);
  REQUIRE(bw);
  CHECK(bw->line == 3);
}

TEST_CASE("code shapes: the settings that are causes (cudnn.benchmark, anomaly mode)",
          "[mapping][shape]") {
  const std::string root = ttap_test::MakeTempDir();
  const std::string train = root + "/train.py";
  REQUIRE(ttap_test::WriteFile(train,
                               "import torch\n"
                               "from torch.backends import cudnn\n"
                               "cudnn.benchmark = True\n"
                               "torch.autograd.set_detect_anomaly(False)\n"
                               "def step():\n"
                               "    with torch.autograd.detect_anomaly():\n"
                               "        pass\n"));
  SourceCache cache;
  CHECK(IsLocatableShape(ShapeOf(Coded("TTA020"))));
  CHECK(IsSettingShape(ShapeOf(Coded("TTA021"))));
  auto bench = LocateByShape({train}, &cache, ShapeOf(Coded("TTA020")));
  REQUIRE(bench);
  CHECK(bench->line == 3);
  // set_detect_anomaly(False) turns it off: only the detect_anomaly() block counts.
  auto anomaly = LocateByShape({train}, &cache, ShapeOf(Coded("TTA021")));
  REQUIRE(anomaly);
  CHECK(anomaly->line == 6);
  CHECK(anomaly->function == "step");
  REQUIRE(ttap_test::WriteFile(root + "/off.py", "torch.backends.cudnn.benchmark = False\n"));
  int matches = 0;
  CHECK(LocateByShape({root + "/off.py"}, &cache, ShapeOf(Coded("TTA020")), &matches) ==
        std::nullopt);
  CHECK(matches == 0);
}

// The LSP features as functions of (view, params) (server/lsp/feature_view.h): driven by a view
// made by hand, with no session, transport or analysis thread.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>

#include "server/lsp/feature_view.h"

namespace {

using namespace ttap;
using namespace ttap::lsp;

// A view over one snapshot and one buffer.
class FakeView : public FeatureView {
 public:
  std::shared_ptr<Snapshot> snap = std::make_shared<Snapshot>();
  std::map<std::string, std::shared_ptr<const PythonSource>> files;
  ClientCaps caps;
  std::string logged;

  std::shared_ptr<const Snapshot> View() override { return snap; }
  std::vector<Placed> PlacedIn(const Snapshot& s, const std::string& path) override {
    auto it = s.by_file.find(path);
    return it == s.by_file.end() ? std::vector<Placed>{} : it->second;
  }
  std::shared_ptr<const PythonSource> SourceFor(const std::string& path, int64_t*, int,
                                                int*) override {
    auto it = files.find(path);
    return it == files.end() ? nullptr : it->second;
  }
  std::string Explanation(const Snapshot&, size_t finding) override {
    return "explained " + std::to_string(finding);
  }
  std::shared_ptr<const llm::FindingDraft> DraftOf(const Snapshot&, size_t) override {
    return nullptr;
  }
  void ClientLog(const std::string& message) override { logged += message + "\n"; }
  const ClientCaps& client() const override { return caps; }
};

FakeView ViewWithOneFinding() {
  FakeView v;
  v.files["/w/train.py"] = PythonSource::Parse(
      "import torch\n\nfor batch in loader:\n    loss = model(batch)  # ttap: ignore[TTA009]\n");
  v.snap->scan = std::make_unique<ScanResult>();
  LocatedFinding lf;
  lf.finding.code = "TTA001";
  lf.finding.name = "dataloader-stall";
  lf.finding.message = "the input pipeline runs 30% of each step";
  lf.finding.severity = Severity::kWarning;
  lf.finding.fix = "dataloader-workers";
  lf.absolute_path = "/w/train.py";
  lf.file = "train.py";
  lf.line = 3;
  v.snap->scan->findings.push_back(lf);
  LocatedFinding suppressed = lf;  // a comment on its line suppresses it as typed
  suppressed.finding.code = "TTA009";
  suppressed.line = 4;
  v.snap->scan->findings.push_back(suppressed);
  Placed p;
  p.finding = 0;
  p.line = 3;
  Placed q;
  q.finding = 1;
  q.line = 4;
  v.snap->by_file["/w/train.py"] = {p, q};
  return v;
}

}  // namespace

TEST_CASE("features: diagnostics, hover and code lens from a hand-made view", "[lsp][features]") {
  FakeView v = ViewWithOneFinding();
  const auto diags = DiagnosticsFor(v, "/w/train.py");
  REQUIRE(diags.size() == 1);  // TTA009 is suppressed by the buffer's comment
  CHECK(diags[0].code == "TTA001");
  CHECK(diags[0].range.start.line == 2);  // the `for` header, 0-based
  CHECK(diags[0].message.find("dataloader-stall: the input pipeline") == 0);
  CHECK_FALSE(diags[0].codeDescription);  // the client did not ask for links
  v.caps.code_description = true;
  CHECK(DiagnosticsFor(v, "/w/train.py")[0].codeDescription);
  CHECK(CountProblemsShown(v, *v.snap) == 1);
  CHECK(DiagnosticsFor(v, "/w/other.py").empty());

  proto::HoverParams hp;
  hp.textDocument.uri = "file:///w/train.py";
  hp.position = {2, 4};
  auto hover = HoverAt(v, hp);
  REQUIRE(hover);
  CHECK(hover->contents.value == "explained 0");
  CHECK(hover->contents.kind == proto::MarkupKind::kMarkdown);
  hp.position = {0, 0};
  CHECK_FALSE(HoverAt(v, hp));

  proto::CodeLensParams lp;
  lp.textDocument.uri = "file:///w/train.py";
  const auto lenses = CodeLensesFor(v, lp);
  REQUIRE(lenses.size() == 1);
  REQUIRE(lenses[0].command);
  CHECK(lenses[0].command->command == "ttap.showTraceSummary");
}

TEST_CASE("features: code actions and their resolution from a hand-made view", "[lsp][features]") {
  FakeView v = ViewWithOneFinding();
  proto::CodeActionParams cp;
  cp.textDocument.uri = "file:///w/train.py";
  cp.range = {{2, 0}, {2, 0}};
  const auto actions = CodeActionsFor(v, cp);
  REQUIRE_FALSE(actions.empty());
  bool suppress = false;
  for (const auto& a : actions) {
    if (a.title.find("Suppress TTA001 on this line") == 0) suppress = true;
  }
  CHECK(suppress);
  proto::CodeActionResolveParams rp;
  rp.action = json::object();
  rp.data = proto::CodeActionData{"file:///w/train.py", 5, "nothing"};
  auto resolved = ResolveCodeAction(v, rp);
  CHECK_FALSE(resolved.ok());
  CHECK(resolved.status().message() == "the analysis changed");
}

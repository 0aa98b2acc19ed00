// Shared fixtures of the language-server end-to-end tests: the workspace's train.py (its line 12,
// `for batch in loader:`, is where the StallTrace's DataLoader stall maps), the initialize
// params a typical client sends, and small transcript steps. Used by lsp_e2e_test.cpp and
// lsp_reliability_test.cpp.
#pragma once

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>

#include "fixture_traces.h"
#include "lsp_client.h"
#include "test_support.h"

namespace ttap_test {

inline const char* kTrainPy =
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    "ds = make_dataset()\n"
    "loader = DataLoader(ds, batch_size=32)\n"
    "model = make_model()\n"
    "\n"
    "\n"
    "\n"
    "\n"
    "# the training loop: é 𝛼\n"
    "for batch in loader:\n"
    "    loss = model(batch)\n";

inline json InitParams(const std::string& root, bool utf8 = false) {
  json caps = {
      {"textDocument",
       {{"publishDiagnostics",
         {{"relatedInformation", true}, {"codeDescriptionSupport", true}, {"dataSupport", true}}},
        {"hover", {{"contentFormat", {"markdown"}}}},
        {"codeAction",
         {{"codeActionLiteralSupport", {{"codeActionKind", {{"valueSet", {"quickfix"}}}}}}}}}},
      {"window", {{"workDoneProgress", true}}}};
  if (utf8) caps["general"] = {{"positionEncodings", {"utf-8", "utf-16"}}};
  return {{"processId", nullptr},
          {"rootUri", "file://" + root},
          {"workspaceFolders", {{{"uri", "file://" + root}, {"name", "ws"}}}},
          {"capabilities", caps},
          {"initializationOptions", {{"windows", 20}}}};
}

// A workspace with train.py and |trace| (by default the StallTrace) as its only trace, in log/.
inline std::string StallWorkspace(const std::string& trace = StallTrace()) {
  std::string root = MakeTempDir();
  REQUIRE(WriteFile(root + "/train.py", kTrainPy));
  mkdir((root + "/log").c_str(), 0755);
  REQUIRE(WriteFile(root + "/log/host_1.1700000000000.pt.trace.json", trace));
  return root;
}

// initialize (|root| the workspace, the window scorer off: the rules alone) and initialized.
inline void InitializeRulesOnly(LspClient* c, const std::string& root) {
  json params = InitParams(root);
  params["initializationOptions"]["model"] = {{"enabled", false}};
  c->Call("initialize", params);
  c->Notify("initialized", json::object());
}

// Waits for the non-empty diagnostics of |root|/train.py and checks they start with the
// StallTrace's TTA001.
inline void ExpectStallDiagnostic(LspClient* c, const std::string& root) {
  const std::string uri = "file://" + root + "/train.py";
  auto pub = c->WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" &&
           m["params"]["uri"] == uri && !m["params"]["diagnostics"].empty();
  });
  REQUIRE_FALSE(pub.is_null());
  CHECK(pub["params"]["diagnostics"][0]["code"] == "TTA001");
}

// Sends didOpen for |uri| (Python) with |text| at |version|.
inline void OpenDocument(LspClient* c, const std::string& uri, const std::string& text,
                         int version = 1) {
  c->Notify("textDocument/didOpen",
            {{"textDocument",
              {{"uri", uri}, {"languageId", "python"}, {"version", version}, {"text", text}}}});
}

// Opens |uri| with |text| and hovers at (|line|, |character|); returns the reply.
// Inserts two comment lines at the top of |uri|'s open buffer (as version 2) and returns the
// diagnostics the server publishes for that version (null when none come).
inline json InsertTwoLinesAtTop(LspClient* c, const std::string& uri) {
  c->Notify(
      "textDocument/didChange",
      {{"textDocument", {{"uri", uri}, {"version", 2}}},
       {"contentChanges",
        {{{"range",
           {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}},
          {"text", "# one\n# two\n"}}}}});
  return c->WaitFor([&](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" &&
           m["params"]["uri"] == uri && m["params"].value("version", 0) == 2;
  });
}

inline json OpenAndHover(LspClient* c, const std::string& uri, const std::string& text, int line,
                         int character) {
  c->Notify(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", text}}}});
  return c->Call("textDocument/hover", {{"textDocument", {{"uri", uri}}},
                                        {"position", {{"line", line}, {"character", character}}}});
}

}  // namespace ttap_test

// The drafter: turns a scan's findings into LLM drafts. For the findings whose windows score
// highest (a bounded number per trace) it builds the window prompt (prompt.h), looks the answer
// up in the DraftCache, else asks the LlmClient; when the reply's confidence is low or it asks
// for more context it asks again with the neighbouring windows (bounded rounds). A drafted fix
// is kept only if its edits apply to the current source text, touch only lines near the
// finding, and the result re-parses with tree-sitter without new ERROR nodes; otherwise it is
// dropped with a logged reason. Called by `ttap scan --llm` (scan.cpp) and the language server's
// worker (which re-checks fixes against the open buffer with CheckDraftFix). Blocking; the
// requests themselves run on the client's pool, several findings at once.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/base/status.h"
#include "mapping/python_source.h"
#include "server/core/scan_trace.h"
#include "server/llm/draft_cache.h"
#include "server/llm/llm_client.h"

namespace ttap::llm {

struct DraftOptions {
  int max_drafts = 8;           // findings drafted per trace, highest window score first
  double min_confidence = 0.6;  // below it, ask again with the neighbouring windows
  int feedback_rounds = 2;      // extra rounds at most (neighbours +-1, then +-2)
  int snippet_radius = 5;       // source lines shown on each side of the blamed line
  int fix_line_radius = 10;     // drafted edits must stay within this many lines of the finding
  std::function<void(const std::string&)> log;  // default: stderr, "ttap: llm: "
};

struct FindingDraft {
  Draft draft;  // draft.fix is reset when the fix did not pass CheckDraftFix
  bool from_cache = false;
  int requests = 0;         // chat requests this draft took (0 when it came from the cache)
  int window = -1;          // the window the prompt described
  std::string fix_dropped;  // why the drafted fix was dropped; "" when kept or none was drafted
  // What the fix was checked against: the file, the finding's line, and the text of the lines
  // the edits touch (first line, texts), so a later buffer can be checked to still hold them.
  std::string source_path;
  int finding_line = 0;
  int fix_first_line = 0;
  std::vector<std::string> fix_lines;
};

struct FixCheck {
  int finding_line = 0;  // 1-based, in the text being checked
  int radius = 10;
  int line_shift = 0;  // added to every edit line (the finding moved by this many lines)
  // When set: these lines (from fix_first_line + line_shift on) must be unchanged.
  int expected_first_line = 0;
  const std::vector<std::string>* expected_lines = nullptr;
};

// The drafted edits as byte edits against |src|, or why they cannot be used: a line or column
// outside the text, a line further than |radius| from the finding, overlapping edits, changed
// lines, no change at all, or more ERROR/MISSING nodes after re-parsing than before.
StatusOr<std::vector<TextEdit>> CheckDraftFix(const PythonSource& src, const DraftFix& fix,
                                              const FixCheck& check);

using SourceProvider = std::function<std::shared_ptr<const PythonSource>(const std::string&)>;

// Drafts for the findings of |scan| (same order and size as scan.findings; nullopt where no
// draft was made or the request failed). |sources| gives the current text of a file; |cache|
// may be null. Cancelling |cancel| stops what is queued or in flight.
std::vector<std::optional<FindingDraft>> DraftFindings(const ScanResult& scan, LlmClient* client,
                                                       DraftCache* cache,
                                                       const SourceProvider& sources,
                                                       const DraftOptions& options,
                                                       CancelFlag cancel = {});

// {"model", "category", "confidence", "explanation_markdown", "fix": {...}|null}, plus
// "fix_dropped" when a drafted fix was dropped and "cached" when it came from the cache.
nlohmann::json FindingDraftToJson(const FindingDraft& d);

}  // namespace ttap::llm

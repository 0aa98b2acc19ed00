// Prompt building for LLM drafts (the paper's stage 2): the condensed context of one flagged
// window (time range, step, rule score, GPU busy share, top events with durations and launch
// delays), the rule findings in it with their numbers, the catalogue of codes with one-line
// definitions (RuleCatalogue), optionally the neighbouring windows (feedback rounds), and a few
// lines of source around the blamed line (never whole files), filled into the versioned
// templates of server/llm/prompts/ (embedded at build time). Pure functions; any thread.
// Used by the drafter (drafter.h); tests in tests/server/llm_client_test.cpp.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mapping/python_source.h"
#include "server/core/scan_trace.h"
#include "server/llm/llm_client.h"

namespace ttap::llm {

// The version of the templates below; part of every cache key.
extern const char* const kPromptVersion;  // "window_v1"
std::string_view SystemTemplate();
std::string_view WindowTemplate();

// At most 2*radius+1 lines around |line| (1-based), each cut to 240 bytes.
struct SourceSnippet {
  std::string file;  // as shown to the model (workspace-relative)
  int focus_line = 0;
  int first_line = 0;              // 1-based line of lines[0]
  std::vector<std::string> lines;  // without line breaks
  std::string text;                // numbered, the focus line marked with '>'
  std::string hash;                // of the lines themselves
  bool empty() const { return lines.empty(); }
};
SourceSnippet SnippetAround(const PythonSource& src, const std::string& file, int line, int radius);

// The catalogue, one "CODE name: summary" line each, plus TTA900.
std::string CatalogueText();
// The facts of Trace::windows[|window|].
std::string DescribeWindow(const ScanResult& scan, int window);
// The findings whose windows include |window| (all of them when |window| < 0), |focus| first.
std::string DescribeFindings(const ScanResult& scan, int window, const LocatedFinding& focus);

struct WindowPrompt {
  ChatRequest request;
  std::string fingerprint;  // hash of the window's facts and findings (not the source)
};
// The prompt for |focus| in |window|, with |neighbours| (window indices) described as well.
WindowPrompt BuildWindowPrompt(const ScanResult& scan, const LocatedFinding& focus, int window,
                               const SourceSnippet& snippet, const std::vector<int>& neighbours);

// Replaces each {{name}} in |tmpl| by values[name] (unknown names become empty).
std::string FillTemplate(std::string_view tmpl, const std::map<std::string, std::string>& values);

}  // namespace ttap::llm

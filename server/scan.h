// `ttap scan` and `ttap job`, the command-line front-end: traces (files or directories, in
// parallel) through the core (server/core/scan_trace.h), rendered as text, JSON, SARIF (with the
// editor's quick fixes and hover explanations) or Markdown, and multi-rank job reports.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/config.h"
#include "server/core/explain.h"
#include "server/core/scan_trace.h"

namespace ttap {

nlohmann::json ScanResultToJson(const ScanResult& r);
std::string ScanResultToText(const ScanResult& r);
// Each result's message has the finding's explanation as markdown: what the editor's hover shows
// (with |job|, the ranks of a directory read together, what it says of the job).
nlohmann::json ScanResultsToSarif(const std::vector<const ScanResult*>& results,
                                  const JobAnalysis& job = JobAnalysis());
// `--format markdown` (a CI job summary): the run's summary, then each finding with its
// explanation, as the editor's trace summary and hovers show them.
std::string ScanResultToMarkdown(const ScanResult& r, const JobAnalysis& job = JobAnalysis());

// The `ttap scan` command line; returns the exit code (0 none, 1 findings, 2 unusable input).
int RunScanCommand(const std::vector<std::string>& args, const Config& config);
// `ttap job SUMMARY...`: the job report of `ttap scan DIR` from the ranks' summaries (`ttap scan
// --format rank-summary`, made where the traces are: tools/ttap_dask.py).
int RunJobCommand(const std::vector<std::string>& args);

}  // namespace ttap

// Renders a trace's statistics for `ttap stats`: JSON (the stable shape documented in README.md)
// and a terminal text form. Called by the CLI (cli.cpp); the LSP's ttap.showTraceSummary reuses it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/trace.h"
#include "analysis/trace_stats.h"

namespace ttap {

nlohmann::json RankStatsToJson(const Trace& trace, const TraceSummary& summary);
nlohmann::json ImportStatsToJson(const ImportStats& stats);
std::string RankStatsToText(const Trace& trace, const TraceSummary& summary);

}  // namespace ttap

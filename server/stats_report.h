// Renders a trace's statistics for `ttap stats`: JSON (the stable shape documented in README.md)
// and a terminal text form. Called by the CLI (cli.cpp); the LSP's ttap.showTraceSummary reuses it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/causal/causal_graph.h"
#include "analysis/model/trace.h"
#include "analysis/model/trace_stats.h"

namespace ttap {

// |time|: where each step's time went (WhereTimeWent, the causal replay).
nlohmann::json RankStatsToJson(const Trace& trace, const TraceSummary& summary,
                               const TimeBreakdown& time);
nlohmann::json ImportStatsToJson(const ImportStats& stats);
std::string RankStatsToText(const Trace& trace, const TraceSummary& summary,
                            const TimeBreakdown& time);

}  // namespace ttap

// Subcommand dispatch and `ttap stats`; see cli.h.
#include "server/cli.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/causal/causal_graph.h"
#include "analysis/load/trace_loader.h"
#include "analysis/model/trace_stats.h"
#include "analysis/rules/rules.h"
#include "server/cli_util.h"
#include "server/config.h"
#include "server/llm/llm_client.h"
#include "server/lsp/lsp_main.h"
#include "server/models_loader.h"
#include "server/scan.h"
#include "server/stats_report.h"
#include "version.h"

namespace ttap {

namespace {

constexpr const char* kUsage =
    "usage: ttap [--config FILE] <command> [options]\n"
    "\n"
    "TorchTraceAP: finds performance anti-patterns in PyTorch profiler traces.\n"
    "\n"
    "commands:\n"
    "  stats TRACE_OR_DIR [--json] [--windows N] [--threads N] [--rank N] [--timing]\n"
    "        load a trace (.json or .json.gz, Kineto object or legacy array) or a directory of\n"
    "        per-rank traces and print the per-step breakdown, top kernels and CPU ops, HTA's\n"
    "        temporal breakdown and import statistics\n"
    "  scan TRACE_OR_DIR [--workspace DIR] [--format text|json|sarif|rank-summary]\n"
    "       [--min-severity LEVEL]\n"
    "        find performance anti-patterns (docs/antipatterns.md), each with the Python line\n"
    "        responsible, the time it costs per step and the fix; a directory is scanned in\n"
    "        parallel with a summary table, and its ranks read as one job (TTA018: the ranks\n"
    "        the others wait for at the collectives). Exit code 1 when findings at or above\n"
    "        LEVEL (default info) remain; `# ttap: ignore[TTA005]` on a line suppresses them.\n"
    "        rank-summary: what `ttap job` needs of each rank (tools/ttap_dask.py)\n"
    "        [--select CODES] [--ignore CODES] report only these codes / not these (codes or\n"
    "        prefixes, comma-separated: TTA001,TTA9; [tool.ttap] select / ignore)\n"
    "        [--llm [--llm-base-url URL] [--llm-model NAME] [--llm-api-key-env VAR]]\n"
    "        adds LLM drafts (category, explanation, fix) from an OpenAI-compatible endpoint;\n"
    "        nothing is sent unless --llm is given (README: what is sent)\n"
    "        [--model FILE|shipped [--device auto|cpu|cuda] [--model-threshold T]]\n"
    "        opt-in: TTA900 \"unusual window\" findings, windows the learned scorer flags\n"
    "        (score >= T, by default the file's flag threshold) that no rule explains;\n"
    "        shipped: the weights beside the binary, in TTAP_MODEL or ./models. Off by\n"
    "        default (models/MODEL_CARD.md: it adds nothing to the rules on real traces)\n"
    "  job SUMMARY... [--format text|json]\n"
    "        the job report of `ttap scan DIR` (per-rank table, TTA018) from the ranks'\n"
    "        summaries (`ttap scan --format rank-summary`, a file or - each)\n"
    "  gen --out DIR --seed S [--count N] [--bases PATH...] [--max-base-mb M] [--threads T]\n"
    "        write N (default 600) labelled traces: simulated CV training/inference loops and,\n"
    "        with --bases, real traces with injected anti-patterns (labels in DIR/labels);\n"
    "        [--split-seed S2] assigns groups to splits as seed S2 does, [--only-splits\n"
    "        train,val] writes only those splits (more training data for the same groups);\n"
    "        [--weak-families TTX101,TTX103|none] families no rule covers that also appear in\n"
    "        train/val groups (trace labels only); the others appear only in held-out splits;\n"
    "        [--keep-counterfactual] also writes what each injected copy's truth is measured\n"
    "        against (DIR/counterfactual)\n"
    "  train --data DIR [--data DIR2...] --out FILE [--epochs N] [--seed S] [--threads T]\n"
    "        [--minutes M] [--pre-existing positive|windows] [--device auto|cpu|cuda] [--retune]\n"
    "        [--ablation no-names|no-pos|no-relation|max-pool|no-features|no-augment|no-absolute]\n"
    "        train the window-scoring model on the train split of `ttap gen` datasets;\n"
    "        --retune keeps the weights of --out and only re-chooses its score parts and\n"
    "        flag threshold on val\n"
    "  eval DATASET_DIR [--methods rules,clustering,zscore,random] [--split seen|unseen|all]\n"
    "       [--out DIR] [--bootstrap N] [--seed S] [--with-pre-existing] [--windows-tsv]\n"
    "        score the methods on a labelled dataset (`ttap gen`): trace and window AUC-ROC\n"
    "        with bootstrap CIs, per-code precision/recall, category and source-line accuracy\n"
    "        on held-out splits (train/val only fit); Markdown to stdout, OUT (default\n"
    "        DATASET_DIR/eval) gets eval.md and eval.json\n"
    "  lsp [--stdio | --socket=PORT | --listen HOST:PORT [--token T | --token-file F |\n"
    "       --no-token]]\n"
    "        the language server (LSP 3.17): diagnostics, hovers, quick fixes and code lenses\n"
    "        from the newest trace in the workspace; stdio by default. --listen off the\n"
    "        loopback interface needs initializationOptions.token (made and printed unless\n"
    "        given; --no-token: none)\n"
    "  doctor\n"
    "        report the build: version, configuration in use, and whether the libtorch\n"
    "        window-scoring module loads (and on which device)\n"
    "\n"
    "options:\n"
    "  --config FILE   read settings from FILE (default: ttap.toml or [tool.ttap] in\n"
    "                  pyproject.toml, searched from the current directory upwards)\n"
    "  -h, --help      show this help\n"
    "  --version       print the version\n"
    "\n"
    "exit codes: 0 ok, 1 findings (scan), 2 unusable input or bad usage\n";

// One command's help: its block of kUsage (the line naming it and the indented lines under it),
// then the options every command takes. Empty when |command| is not one.
std::string CommandUsage(const std::string& command) {
  const std::string usage = kUsage;
  const std::string head = "\n  " + command + " ";
  size_t at = usage.find(head);
  if (at == std::string::npos) at = usage.find("\n  " + command + "\n");
  if (at == std::string::npos) return "";
  size_t end = at + 1;
  while (true) {  // the block ends at the next command or the end of the list
    const size_t next = usage.find('\n', end);
    if (next == std::string::npos || next + 3 >= usage.size() || usage[next + 1] != ' ' ||
        usage[next + 2] != ' ' || usage[next + 3] != ' ') {
      end = next == std::string::npos ? usage.size() : next + 1;
      break;
    }
    end = next + 1;
  }
  std::string block = usage.substr(at + 3, end - at - 3);
  return "usage: ttap [--config FILE] " + block +
         "\noptions:\n"
         "  --config FILE   read settings from FILE (default: ttap.toml or [tool.ttap] in\n"
         "                  pyproject.toml, searched from the current directory upwards)\n"
         "  -h, --help      show this help ('ttap --help' lists every command)\n";
}

int RunStats(const std::vector<std::string>& args, Config config) {
  std::string target;
  bool json = false;
  bool timing = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](int* out) {
      long long v = 0;
      if (i + 1 >= args.size() || !ParseInteger(args[i + 1], &v) || v < -1 || v > 1000000) {
        return false;
      }
      *out = static_cast<int>(v);
      ++i;
      return true;
    };
    if (a == "--json") {
      json = true;
    } else if (a == "--timing") {
      timing = true;
    } else if (a == "--windows") {
      if (!value(&config.windows) || config.windows < 1)
        return UsageError("--windows needs a positive number");
    } else if (a == "--threads") {
      if (!value(&config.threads) || config.threads < 0)
        return UsageError("--threads needs a number >= 0");
    } else if (a == "--rank") {
      if (!value(&config.rank)) return UsageError("--rank needs a number");
    } else if (int rc = TakeTraceArgument("stats", a, &target)) {
      return rc;
    }
  }
  if (target.empty()) return UsageError("stats: missing TRACE_OR_DIR");
  auto expanded = ExpandTraceTarget(target);
  if (!expanded.ok()) {
    std::fprintf(stderr, "ttap: error: %s\n", expanded.status().message().c_str());
    return 2;
  }
  const std::vector<std::string>& files = expanded->files;
  LoadOptions opts;
  opts.threads = config.threads;
  opts.window_count = config.windows;
  std::vector<std::unique_ptr<Trace>> traces;
  for (const auto& f : files) {
    auto t = LoadTrace(f, opts);
    if (!t.ok()) {
      std::fprintf(stderr, "ttap: error: %s\n", t.status().message().c_str());
      return 2;
    }
    if (timing) {
      std::string line = f + ":";
      double load_ms = 0;
      for (const auto& [phase, ms] : (*t)->load_phases) {
        line += " " + phase + " " + std::to_string(ms) + " ms;";
        load_ms += ms;
      }
      // The rules and the causal model on top of the load, phase by phase; "causal" is what the
      // causal model adds (graph, unchanged replay, attribution, every fix replayed), which
      // bench/bench_causal.sh compares with the load.
      RuleResult rr = RunRules(**t, {});
      double causal_ms = 0;
      for (const auto& [phase, ms] : rr.phases) {
        line += " " + phase + " " + std::to_string(ms) + " ms;";
        if (phase == "causal graph" || phase == "replay" || phase == "attribution" ||
            phase == "what-ifs") {
          causal_ms += ms;
        }
      }
      line += " load " + std::to_string(load_ms) + " ms; causal " + std::to_string(causal_ms) +
              " ms (" + std::to_string(rr.findings.size()) + " findings);";
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    if (config.rank >= 0 && (*t)->rank != config.rank) continue;
    // Stats places no finding on a source line and runs no rule: what only those read goes
    // before the causal breakdown builds its graph (the peak).
    if (!timing) (*t)->events.ReleaseColumnsStatsSkips();
    traces.push_back(std::move(t.value()));
  }
  std::stable_sort(traces.begin(), traces.end(),
                   [](const auto& a, const auto& b) { return a->rank < b->rank; });
  if (json) {
    nlohmann::json ranks = nlohmann::json::array();
    ImportStats total;
    nlohmann::json per_file = nlohmann::json::array();
    for (const auto& t : traces) {
      TraceSummary s = Summarize(*t);
      nlohmann::json r = RankStatsToJson(*t, s, WhereTimeWent(*t));
      r["file"] = t->path;
      ranks.push_back(std::move(r));
      per_file.push_back({{"file", t->path}, {"stats", ImportStatsToJson(t->stats)}});
    }
    nlohmann::json out = {{"trace", target}, {"ranks", ranks}};
    out["import_stats"] = traces.size() == 1 ? ImportStatsToJson(traces[0]->stats)
                                             : nlohmann::json({{"files", per_file}});
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "trace: " << target << "\n";
    for (const auto& t : traces) {
      if (traces.size() > 1) std::cout << "file: " << t->path << "\n";
      const TraceSummary s = Summarize(*t);
      std::cout << RankStatsToText(*t, s, WhereTimeWent(*t));
    }
  }
  return 0;
}

}  // namespace

int RunCli(int argc, char** argv, const std::vector<CliCommand>& more_commands) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string config_path;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--version" || a == "-V") {
      std::printf("ttap %s\n", TTAP_VERSION);
      return 0;
    }
    if (a == "--help" || a == "-h" || a == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--config") {
      if (i + 1 >= args.size()) return UsageError("--config needs a file");
      config_path = args[++i];
      continue;
    }
    if (a.rfind("--config=", 0) == 0) {
      config_path = a.substr(9);
      continue;
    }
    break;
  }
  if (i >= args.size()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string command = args[i];
  std::vector<std::string> rest(args.begin() + i + 1, args.end());
  for (auto it = rest.begin(); it != rest.end(); ++it) {
    if (*it == "--help" || *it == "-h") {
      const std::string own = CommandUsage(command);
      std::fputs(own.empty() ? kUsage : own.c_str(), stdout);
      return 0;
    }
    if (*it == "--config" && it + 1 != rest.end()) {
      config_path = *(it + 1);
      rest.erase(it, it + 2);
      break;
    }
  }
  auto config = config_path.empty() ? FindConfig(".") : LoadConfigFile(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "ttap: error: %s\n", config.status().message().c_str());
    return 2;
  }
  if (command == "stats") return RunStats(rest, *config);
  if (command == "scan") return RunScanCommand(rest, *config);
  if (command == "job") return RunJobCommand(rest);
  for (const CliCommand& c : more_commands) {
    if (command == c.name) return c.run(rest);
  }
  if (command == "lsp") return lsp::RunLspCommand(rest);
  if (command == "doctor") {
    std::printf("ttap %s\nconfig: %s\n", TTAP_VERSION,
                config->source.empty() ? "defaults (no ttap.toml or [tool.ttap] found)"
                                       : config->source.c_str());
    auto models = ModelsLibrary::Get();
    if (models.ok()) {
      std::printf("models: %s (%s)\n", (*models)->Describe().c_str(), (*models)->path().c_str());
    } else {
      std::printf("models: %s\n", models.status().message().c_str());
    }
    const std::string curl = llm::LibcurlProblem();
    std::printf("llm: %s\n", curl.empty() ? "libcurl found (LLM drafts can run when turned on)"
                                          : (curl + "; everything else works").c_str());
    return 0;
  }
  return UsageError("unknown command '" + command + "'");
}

}  // namespace ttap

// The `ttap` command line: subcommand dispatch (stats, scan, gen, eval, train, lsp, doctor),
// --help, --version and --config. main() only calls RunCli, with the harness's commands. Exit
// codes: 0 success, 1 findings (scan), 2 unusable input or bad usage.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ttap {

// A subcommand that a library above server/ provides: the benchmark harness's gen, eval and
// train (bench/harness/), which main() passes in so that no product library depends on them.
struct CliCommand {
  std::string name;
  std::function<int(const std::vector<std::string>& args)> run;
};

int RunCli(int argc, char** argv, const std::vector<CliCommand>& more_commands = {});

}  // namespace ttap

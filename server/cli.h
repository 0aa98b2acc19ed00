// The `ttap` command line: subcommand dispatch (stats, scan, gen, eval, train, lsp, doctor),
// --help, --version and --config. main() only calls RunCli. Exit codes: 0 success, 1 findings
// (scan), 2 unusable input or bad usage.
#pragma once

namespace ttap {

int RunCli(int argc, char** argv);

}  // namespace ttap

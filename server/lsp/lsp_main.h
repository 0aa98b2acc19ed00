// Entry point of `ttap lsp` (called by cli.cpp).
#pragma once

#include <string>
#include <vector>

namespace ttap::lsp {

int RunLspCommand(const std::vector<std::string>& args);

}  // namespace ttap::lsp

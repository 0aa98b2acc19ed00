// file:// URIs <-> paths for the language server: percent-decoding that keeps a malformed escape
// (`50%off.py`, `%G1`) as it is instead of failing, and encoding of everything but unreserved
// characters and '/'. Used by lsp_server.cpp.
#pragma once

#include <string>

namespace ttap::lsp {

// The path of a file:// URI; "" for any other scheme.
std::string UriToPath(const std::string& uri);
// The file:// URI of an absolute path.
std::string PathToUri(const std::string& path);

}  // namespace ttap::lsp

// file:// URIs and paths; see uri.h.
#include "server/lsp/uri.h"

#include <cctype>

namespace ttap::lsp {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// A `%` not followed by two hex digits (`50%off.py`, `%G1`, a trailing `%`) is kept as it is: a
// client's malformed URI names a file, it must not bring the server down.
std::string UriToPath(const std::string& uri) {
  if (uri.rfind("file://", 0) != 0) return "";
  std::string out;
  for (size_t i = 7; i < uri.size(); ++i) {
    const int hi = uri[i] == '%' && i + 2 < uri.size() ? HexDigit(uri[i + 1]) : -1;
    const int lo = hi >= 0 ? HexDigit(uri[i + 2]) : -1;
    if (lo >= 0) {
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(uri[i]);
    }
  }
  return out;
}

std::string PathToUri(const std::string& path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace ttap::lsp

// Kineto JSON text pieces (kineto_writer.h).
#include "bench/harness/kineto_writer.h"

#include <cstdio>

namespace ttap {

std::string JsonEscape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o;
}

std::string MicrosText(int64_t ns) {
  char buf[48];
  const char* sign = ns < 0 ? "-" : "";
  const uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof(buf), "%s%llu.%03llu", sign, static_cast<unsigned long long>(a / 1000),
                static_cast<unsigned long long>(a % 1000));
  return buf;
}

}  // namespace ttap

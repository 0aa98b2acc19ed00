// The Finding type's small helpers (severity names, number formats); see findings.h.
#include "analysis/model/findings.h"

#include <cstdio>

namespace ttap {

std::string FormatPercent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * share);
  return buf;
}

std::string FormatMs(double us) {
  char buf[32];
  // Three significant digits below a millisecond (0.144 ms, not 0.1: a sub-millisecond step's
  // figures must add up), one decimal above.
  std::snprintf(buf, sizeof(buf),
                us >= 1000  ? "%.1f ms"
                : us >= 100 ? "%.2f ms"
                            : "%.3f ms",
                us / 1000.0);
  return buf;
}

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
    case Severity::kHint:
      return "hint";
  }
  return "info";
}

bool ParseSeverity(const std::string& text, Severity* out) {
  if (text == "error")
    *out = Severity::kError;
  else if (text == "warning")
    *out = Severity::kWarning;
  else if (text == "info" || text == "information")
    *out = Severity::kInfo;
  else if (text == "hint")
    *out = Severity::kHint;
  else
    return false;
  return true;
}

}  // namespace ttap

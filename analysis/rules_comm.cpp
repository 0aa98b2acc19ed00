// Detectors (comm family): placeholders until their implementation lands.
#include "analysis/rule_util.h"

namespace ttap {
void DetectCommNotOverlapped(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
void DetectCommPerParameter(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
}  // namespace ttap

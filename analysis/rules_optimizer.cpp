// Detectors (optimizer family): placeholders until their implementation lands.
#include "analysis/rule_util.h"

namespace ttap {
void DetectZeroGradPerParam(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
void DetectUnfusedOptimizer(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
}  // namespace ttap

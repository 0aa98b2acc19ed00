// Detectors (gpu family): placeholders until their implementation lands.
#include "analysis/rule_util.h"

namespace ttap {
void DetectLaunchBound(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
void DetectNoTensorCores(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
void DetectLayoutConversion(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
}  // namespace ttap

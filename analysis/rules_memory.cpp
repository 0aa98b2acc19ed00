// Detectors (memory family): placeholders until their implementation lands.
#include "analysis/rule_util.h"

namespace ttap {
void DetectPageableMemcpy(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
void DetectSmallH2DCopies(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
void DetectAllocatorChurn(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
void DetectDevicePingPong(const RuleContext&, const RuleOptions&, std::vector<Finding>*) {}
}  // namespace ttap

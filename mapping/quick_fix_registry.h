// The quick-fix registry: every recipe ComputeFixes knows, each a QuickFixRecipe defined in its own
// file under mapping/fixes/ and listed in one place, QuickFixRegistry() (an explicit list rather
// than static registration, which a static library would drop). Read by ComputeFixes and
// QuickFixRecipes (mapping/quick_fixes.cpp); tests in tests/mapping/quick_fix_registry_test.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/base/status.h"
#include "mapping/quick_fixes.h"

namespace ttap {

namespace fixes {
struct Ctx;  // the request and the statement being fixed (mapping/fixes/fix_util.h)
}  // namespace fixes

struct QuickFixRecipe {
  std::string id;                  // the catalogue's fix id (RuleInfo::fix, FixRequest::recipe)
  std::vector<std::string> codes;  // the catalogue codes whose fix it is ("TTA001")
  // The fixes for the statement c.stmt, unvalidated; ComputeFixes validates them, fills
  // QuickFix::recipe and puts the preferred ones first.
  StatusOr<std::vector<QuickFix>> (*compute)(const fixes::Ctx& c) = nullptr;
};

// Every recipe once, in QuickFixRecipes() order.
const std::vector<const QuickFixRecipe*>& QuickFixRegistry();

// The recipe with this id; nullptr when none.
const QuickFixRecipe* FindQuickFixRecipe(std::string_view id);

namespace fixes {
// The recipes, one per file in mapping/fixes/.
const QuickFixRecipe& ZeroGradSetToNone();     // zero_grad_set_to_none.cpp
const QuickFixRecipe& OptimizerForeach();      // optimizer_foreach.cpp
const QuickFixRecipe& DataLoaderWorkers();     // dataloader_workers.cpp
const QuickFixRecipe& PinMemoryNonBlocking();  // pin_memory_non_blocking.cpp
const QuickFixRecipe& ChannelsLast();          // channels_last.cpp
const QuickFixRecipe& DeferHostSync();         // defer_host_sync.cpp
}  // namespace fixes

}  // namespace ttap

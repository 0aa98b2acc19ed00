// The list of quick-fix recipes (see quick_fix_registry.h): a new recipe is a file in
// mapping/fixes/ plus one line here. Read by ComputeFixes and QuickFixRecipes.
#include "mapping/quick_fix_registry.h"

namespace ttap {

const std::vector<const QuickFixRecipe*>& QuickFixRegistry() {
  static const std::vector<const QuickFixRecipe*> k = {
      &fixes::ZeroGradSetToNone(),    &fixes::OptimizerForeach(), &fixes::DataLoaderWorkers(),
      &fixes::PinMemoryNonBlocking(), &fixes::ChannelsLast(),     &fixes::DeferHostSync(),
  };
  return k;
}

const QuickFixRecipe* FindQuickFixRecipe(std::string_view id) {
  for (const QuickFixRecipe* r : QuickFixRegistry()) {
    if (r->id == id) return r;
  }
  return nullptr;
}

}  // namespace ttap

// The quick-fix registry (mapping/quick_fix_registry.h): every recipe listed once, in the order
// QuickFixRecipes() has always had, each serving real catalogue codes whose fix id it carries.
#include "mapping/quick_fix_registry.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "analysis/rules/rules.h"
#include "mapping/quick_fixes.h"

using namespace ttap;

TEST_CASE("quick fix registry: every recipe once, in QuickFixRecipes order", "[mapping][fixes]") {
  const std::vector<const QuickFixRecipe*>& registry = QuickFixRegistry();
  const std::vector<std::string>& ids = QuickFixRecipes();
  REQUIRE(registry.size() == ids.size());
  std::set<std::string> seen;
  for (size_t i = 0; i < registry.size(); ++i) {
    const QuickFixRecipe* r = registry[i];
    REQUIRE(r != nullptr);
    INFO(r->id);
    CHECK(r->id == ids[i]);
    CHECK(r->compute != nullptr);
    CHECK(seen.insert(r->id).second);
    CHECK(FindQuickFixRecipe(r->id) == r);
  }
  CHECK(FindQuickFixRecipe("no-such-recipe") == nullptr);
  CHECK(FindQuickFixRecipe("") == nullptr);
  // The order the code actions and the tests have always seen.
  CHECK(ids == std::vector<std::string>{"zero-grad-set-to-none", "optimizer-foreach",
                                        "dataloader-workers", "pin-memory-non-blocking",
                                        "channels-last", "defer-host-sync"});
}

TEST_CASE("quick fix registry: every recipe serves catalogue codes whose fix it is",
          "[mapping][fixes]") {
  std::set<std::string> served;
  for (const QuickFixRecipe* r : QuickFixRegistry()) {
    INFO(r->id);
    CHECK_FALSE(r->codes.empty());
    for (const std::string& code : r->codes) {
      INFO(code);
      const RuleInfo* rule = FindRule(code);
      REQUIRE(rule != nullptr);
      CHECK(std::string(rule->fix) == r->id);
      CHECK(served.insert(code).second);  // no code served by two recipes
    }
  }
  // The other way round: a catalogue rule whose fix has a recipe is among that recipe's codes.
  int with_recipe = 0;
  for (const std::vector<RuleInfo>* catalogue : {&RuleCatalogue(), &CauseRuleCatalogue()}) {
    for (const RuleInfo& rule : *catalogue) {
      const QuickFixRecipe* r = FindQuickFixRecipe(rule.fix);
      if (r == nullptr) continue;
      INFO(rule.code);
      ++with_recipe;
      CHECK(std::count(r->codes.begin(), r->codes.end(), rule.code) == 1);
    }
  }
  CHECK(with_recipe == static_cast<int>(served.size()));
}

// The registry of anti-pattern codes (analysis/rules/rule_registry.h): every code has every part it
// needs (a detector, a fix model when it has a fix, a docs section, a recipe that exists or none),
// and the catalogues, FindRule and the source shapes are what the registry says.
#include "analysis/rules/rule_registry.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "mapping/quick_fix_registry.h"
#include "test_support.h"

using namespace ttap;

TEST_CASE("rule registry: every code has every part", "[rules][registry]") {
  std::ifstream docs_file(ttap_test::SourceDir() + "/docs/antipatterns.md");
  REQUIRE(docs_file);
  std::stringstream docs;
  docs << docs_file.rdbuf();
  std::set<std::string> codes;
  std::string previous;
  for (const RuleSpec& spec : RuleRegistry()) {
    const std::string code = spec.info.code;
    INFO(code);
    CHECK(std::regex_match(code, std::regex("TTA[0-9]{3}")));
    CHECK(code > previous);  // code order, each once
    previous = code;
    CHECK(codes.insert(code).second);
    CHECK(std::string(spec.info.name).size() > 3);
    CHECK(std::string(spec.info.summary).size() > 10);
    // Its section in docs/antipatterns.md, which the docs links point at.
    CHECK(docs.str().find("## " + code + " " + spec.info.name + "\n") != std::string::npos);
    CHECK(RuleDocsAnchor(spec.info).rfind("tta", 0) == 0);
    CHECK(FindRuleSpec(code) == &spec);
    CHECK(FindRule(code) == &spec.info);
    if (spec.from_window_scorer || spec.from_job_analysis) {
      CHECK(spec.detect == nullptr);
      CHECK(spec.detect_causal == nullptr);
      continue;
    }
    // Found by a detector; a per-step detector's code is one of the scorer's categories.
    CHECK((spec.detect != nullptr || spec.detect_causal != nullptr));
    // One file per code: its detector lives in analysis/rules/<code>_<name>.cpp.
    std::string file = code + "_" + spec.info.name + ".cpp";
    std::transform(file.begin(), file.end(), file.begin(),
                   [](char c) { return c == '-' ? '_' : static_cast<char>(std::tolower(c)); });
    CHECK(std::ifstream(ttap_test::SourceDir() + "/analysis/rules/" + file).good());
    CHECK(spec.learned_category == (spec.detect != nullptr));
    CHECK_FALSE((spec.causal_only_if_absent && (!spec.detect || !spec.detect_causal)));
    // Costed by a fix model, unless it only says the trace cannot be judged.
    CHECK((spec.plan.model != FixModel::kNone) != spec.marks_trace_incomplete);
    // A fix recipe id names a mechanical fix when one exists; idle time has no fix.
    if (spec.plan.role == CostRole::kIdleTime) CHECK(std::string(spec.info.fix).empty());
    if (spec.plan.role != CostRole::kIdleTime) CHECK_FALSE(std::string(spec.info.fix).empty());
    const QuickFixRecipe* recipe = FindQuickFixRecipe(spec.info.fix);
    if (recipe) CHECK(std::count(recipe->codes.begin(), recipe->codes.end(), code) == 1);
  }
  CHECK(FindRuleSpec("TTA999") == nullptr);
  CHECK(FindRule("TTA999") == nullptr);
  // The scorer's categories are TTA001..TTA014, in order (the model file's category head).
  REQUIRE(RuleCatalogue().size() == 14);
  CHECK(std::string(RuleCatalogue().front().code) == "TTA001");
  CHECK(std::string(RuleCatalogue().back().code) == "TTA014");
  CHECK(std::string(UnusualWindowRule().code) == "TTA900");
}

TEST_CASE("rule registry: a region-dependent shape follows the finding's region",
          "[rules][registry]") {
  Finding f;
  f.code = "TTA017";
  CHECK(ShapeOf(f) == SourceShape::kNone);
  f.evidence["region"] = {false, 0, "backward"};
  CHECK(ShapeOf(f) == SourceShape::kBackwardCall);
  f.evidence["region"] = {false, 0, "zero_grad"};
  CHECK(ShapeOf(f) == SourceShape::kZeroGradCall);
  f.code = "TTA001";
  CHECK(ShapeOf(f) == SourceShape::kDataLoaderLoop);
  f.code = "TTA999";
  CHECK(ShapeOf(f) == SourceShape::kNone);
}

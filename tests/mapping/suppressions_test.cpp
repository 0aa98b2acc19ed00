// Suppression comments, the project's select / ignore code lists, and the edit behind the
// "suppress on this line" code action (mapping/suppressions.h).
#include "mapping/suppressions.h"

#include <catch2/catch.hpp>

using namespace ttap;

TEST_CASE("suppression comments name codes or every code", "[mapping][suppress]") {
  CHECK(SuppressedOnLine("for b in loader:  # ttap: ignore", "TTA001"));
  CHECK(SuppressedOnLine("x()  # ttap: ignore[TTA001]", "TTA001"));
  CHECK(SuppressedOnLine("x()  #ttap:ignore[ TTA005 , TTA001 ]", "TTA001"));
  CHECK_FALSE(SuppressedOnLine("x()  # ttap: ignore[TTA005]", "TTA001"));
  CHECK_FALSE(SuppressedOnLine("x()  # ttap: ignore[TTA0011]", "TTA001"));
  CHECK_FALSE(SuppressedOnLine("x()  # noqa", "TTA001"));
  CHECK(SuppressedOnLine("s = '#'  # ttap: ignore[TTA001]", "TTA001"));  // a second '#'
}

TEST_CASE("select and ignore lists work as ruff's", "[mapping][suppress]") {
  CHECK(CodeSelected("TTA001", {}, {}));
  CHECK(CodeSelected("TTA001", {"TTA00"}, {}));
  CHECK_FALSE(CodeSelected("TTA900", {"TTA00"}, {}));
  CHECK(CodeSelected("TTA900", {"ALL"}, {}));
  CHECK_FALSE(CodeSelected("TTA009", {"ALL"}, {"TTA009"}));  // ignore wins
  CHECK_FALSE(CodeSelected("TTA900", {}, {"TTA9"}));
  CHECK(CheckCodeList({"TTA001", "TTA9", "TTA", "ALL"}).empty());
  CHECK(CheckCodeList({"E501"}).find("'E501' is not a code") != std::string::npos);
  CHECK_FALSE(CheckCodeList({"TTA00X"}).empty());
}

TEST_CASE("the suppress edit appends a comment or extends the line's list", "[mapping][suppress]") {
  auto src = PythonSource::Parse(
      "for b in loader:\n"
      "    x()  # ttap: ignore[TTA005]\n"
      "    y()  # ttap: ignore[]\n");
  auto apply = [&](int line) {
    return ApplyEdits(src->text(), {SuppressionEdit(*src, line, "TTA001")});
  };
  CHECK(apply(0).rfind("for b in loader:  # ttap: ignore[TTA001]\n", 0) == 0);
  CHECK(apply(1).find("x()  # ttap: ignore[TTA005, TTA001]\n") != std::string::npos);
  CHECK(apply(2).find("y()  # ttap: ignore[TTA001]\n") != std::string::npos);
  // What the edit writes, the check reads.
  auto after = PythonSource::Parse(apply(1));
  CHECK(SuppressedOnLine(after->LineText(1), "TTA001"));
  CHECK(SuppressedOnLine(after->LineText(1), "TTA005"));
}

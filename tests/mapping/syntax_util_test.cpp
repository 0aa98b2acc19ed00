// syntax_util: statements at a line, callees, keyword arguments, assignments followed to calls.
#include "mapping/syntax_util.h"

#include <catch2/catch.hpp>

using namespace ttap;

namespace {
const char* kTrain = R"(import torch
from torch.utils.data import DataLoader

def main():
    loader = DataLoader(ds, batch_size=64,
                        shuffle=True)  # comment
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for batch in loader:
            optimizer.zero_grad(set_to_none=False)
            loss = model(batch).sum()
            print(loss.item())

if __name__ == "__main__":
    main()
)";
}

TEST_CASE("statements, callees and assignments", "[mapping][syntax]") {
  auto src = PythonSource::Parse(kTrain);
  REQUIRE_FALSE(src->HasErrors());
  CHECK(NodeType(StatementAtLine(*src, 9)) == "expression_statement");   // zero_grad line
  CHECK(NodeType(StatementAtLine(*src, 8)) == "for_statement");          // for batch in loader:
  CHECK(NodeType(StatementAtLine(*src, 4)) == "expression_statement");   // loader = DataLoader(
  CHECK(NodeType(StatementAtLine(*src, 5)) == "expression_statement");   // continuation line
  CHECK(NodeType(StatementAtLine(*src, 14)) == "expression_statement");  // main() in __main__
  auto calls = CallsIn(StatementAtLine(*src, 9));
  REQUIRE(calls.size() == 1);
  CHECK(CalleeText(*src, calls[0]) == "optimizer.zero_grad");
  CHECK(CalleeName(*src, calls[0]) == "zero_grad");
  TSNode kw = KeywordArgument(*src, calls[0], "set_to_none");
  REQUIRE_FALSE(IsNull(kw));
  CHECK(src->NodeText(kw) == "set_to_none=False");
  auto print_calls = CallsIn(StatementAtLine(*src, 11));
  REQUIRE(print_calls.size() == 2);  // print(...), loss.item(), in pre-order
  CHECK(CalleeName(*src, print_calls[1]) == "item");
  TSNode loader =
      FindCallAssignedTo(*src, EnclosingScope(calls[0]), "loader", ts_node_start_byte(calls[0]));
  REQUIRE_FALSE(IsNull(loader));
  CHECK(CalleeName(*src, loader) == "DataLoader");
  TSNode opt = FindCallAssignedTo(*src, EnclosingScope(calls[0]), "optimizer", 100000);
  CHECK(CalleeText(*src, opt) == "torch.optim.SGD");
  CHECK_FALSE(IsNull(FindFunction(*src, "main")));
  CHECK(IsNull(FindFunction(*src, "nope")));
  CHECK(IndentationAt(*src, ts_node_start_byte(calls[0])) == "            ");
}

TEST_CASE("the statement at a compound header inside a function is the compound statement",
          "[mapping][syntax]") {
  auto src = PythonSource::Parse(
      "def train():\n"
      "    for batch in loader:\n"
      "        step(batch)\n"
      "    if done: stop(); log()\n");
  CHECK(NodeType(StatementAtLine(*src, 0)) == "function_definition");
  CHECK(NodeType(StatementAtLine(*src, 1)) == "for_statement");
  CHECK(NodeType(StatementAtLine(*src, 2)) == "expression_statement");
  CHECK(NodeType(StatementAtLine(*src, 3)) == "if_statement");
}

#include <catch2/catch.hpp>
#include "analysis/trace_loader.h"
TEST_CASE("placeholder") { REQUIRE(true); }

// server/cli_util: the number parsers every CLI command reads its options with (whole argument,
// no trailing text, no overflow), and the commands refusing malformed numbers with exit code 2.
#include "server/cli_util.h"

#include <catch2/catch.hpp>

#include "test_support.h"

TEST_CASE("cli numbers: the whole argument or nothing", "[cli]") {
  double d = -7;
  CHECK(ttap::ParseNumber("0.25", &d));
  CHECK(d == 0.25);
  CHECK(ttap::ParseNumber("1e-3", &d));
  CHECK(d == Approx(0.001));
  for (const char* bad : {"", "0.5x", "x", "1 "}) CHECK_FALSE(ttap::ParseNumber(bad, &d));

  long long n = -7;
  CHECK(ttap::ParseInteger("42", &n));
  CHECK(n == 42);
  CHECK(ttap::ParseInteger("-1", &n));
  CHECK(n == -1);
  for (const char* bad : {"", "2.5", "3x", "0x10", "99999999999999999999"}) {
    INFO(bad);
    CHECK_FALSE(ttap::ParseInteger(bad, &n));
  }
}

TEST_CASE("cli numbers: malformed option values are usage errors", "[cli]") {
  using ttap_test::RunTtap;
  const std::string dir = ttap_test::MakeTempDir();
  for (const std::string& args :
       {"gen --out " + dir + "/g --seed 1x", "gen --out " + dir + "/g --seed 1 --count 2.5",
        "eval " + dir + " --bootstrap -1", "eval " + dir + " --seed 3.5",
        "train --data " + dir + " --out " + dir + "/m.pt --epochs 2.5",
        "train --data " + dir + " --out " + dir + "/m.pt --threads 0",
        "stats " + dir + " --windows ten"}) {
    INFO(args);
    auto r = RunTtap(args);
    CHECK(r.exit_code == 2);
  }
}

// Tests of the comm-family detectors (filled in with the detectors).
#include <catch2/catch.hpp>

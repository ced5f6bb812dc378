// The one doctest main() shared (as an object library) by every tests/test_*.cpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

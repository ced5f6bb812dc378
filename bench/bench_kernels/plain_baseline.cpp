// Plain loops built with -O3 -march=x86-64 -mtune=generic (bench/CMakeLists.txt:
// *_baseline.cpp): what a portable binary ships.
#define QK_PLAIN_NS qk_plain_baseline
#define QK_PLAIN_NAME "plain_x86-64"
#define QK_PLAIN_FN plain_baseline
#include "plain_loops.inc"

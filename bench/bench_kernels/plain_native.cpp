// Plain loops built with -O3 -march=native (bench/CMakeLists.txt: *_native.cpp).
#define QK_PLAIN_NS qk_plain_native
#define QK_PLAIN_NAME "plain_native"
#define QK_PLAIN_FN plain_native
#include "plain_loops.inc"

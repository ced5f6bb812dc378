// QK_TEST_SANITIZED: 1 when a test program is built with AddressSanitizer (CI's Clang stage,
// -O0), where the largest calls and the targets that add no new loads or stores shrink to what
// still reaches the same code; the optimized builds run everything.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define QK_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QK_TEST_SANITIZED 1
#endif
#endif
#ifndef QK_TEST_SANITIZED
#define QK_TEST_SANITIZED 0
#endif

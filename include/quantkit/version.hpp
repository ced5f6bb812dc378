#pragma once

#define QUANTKIT_VERSION_MAJOR 0
#define QUANTKIT_VERSION_MINOR 1
#define QUANTKIT_VERSION_PATCH 0

namespace quantkit {
inline constexpr const char* version = "0.1.0";
}  // namespace quantkit

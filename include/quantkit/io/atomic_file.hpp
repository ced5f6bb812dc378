// Writing a whole file atomically: the bytes go to PATH.tmp-quantkit-PID-N in the same
// folder, which is flushed, closed and renamed over PATH. On any failure the temporary file is
// removed, PATH is left as it was, and the error names the file.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <unistd.h>

#include "quantkit/error.hpp"

namespace quantkit {
namespace io {

namespace detail {
inline std::atomic<unsigned>& temp_counter() {
  static std::atomic<unsigned> n{0};
  return n;
}
}  // namespace detail

inline void write_file_atomically(const std::string& path, const std::string& bytes) {
  if (path.empty()) quantkit::detail::fail("cannot write a file with an empty path");
  const std::string tmp = path + ".tmp-quantkit-" + std::to_string(static_cast<long>(::getpid())) + "-" +
                          std::to_string(detail::temp_counter()++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      quantkit::detail::fail("file '", path, "': cannot open '", tmp, "' for writing: ", std::strerror(errno),
                             " (does the folder exist and is it writable?)");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      quantkit::detail::fail("file '", path, "': writing ", bytes.size(), " bytes failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    quantkit::detail::fail("file '", path, "': cannot rename the temporary file into place: ", std::strerror(err));
  }
}

}  // namespace io
}  // namespace quantkit

// Writing whole files atomically — the one writer behind every file quantkit writes (ONNX models,
// .npy arrays, calibration profiles and state, reports, generated C++ headers).
//
// The bytes go to PATH.tmp-quantkit-PID-N in the same folder (created exclusively, so two
// processes or threads writing the same PATH never share a temporary file), which is flushed,
// fsync'ed, closed and renamed over PATH only when complete. A failure (or a kill) at any point
// leaves PATH as it was; on errors the temporary file is removed and the quantkit::Error names
// PATH, what failed and the system's reason.
//
//   quantkit::io::write_file_atomically("out.bin", bytes);
//   quantkit::io::AtomicFile f("out.npy");   // streaming: f.write(p, n) ...; f.commit();
//                                            // destroyed without commit(): PATH untouched
//
// Test hook: when the environment variable QUANTKIT_TEST_STALL_WRITE names a file, the first
// write of at least 2 bytes writes half its bytes to the temporary file, creates that file
// (the "stalled" marker) and sleeps forever, so a test can SIGKILL the process mid-write
// deterministically (tools/quantkit/tests/bad_inputs.py).
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
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

class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)) {
    if (path_.empty()) quantkit::detail::fail("cannot write a file with an empty path");
    for (int attempt = 0; fd_ < 0; ++attempt) {
      tmp_ = path_ + ".tmp-quantkit-" + std::to_string(static_cast<long>(::getpid())) + "-" +
             std::to_string(detail::temp_counter()++);
      fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && (errno != EEXIST || attempt > 100))
        quantkit::detail::fail("file '", path_, "': cannot create '", tmp_, "' for writing: ", std::strerror(errno),
                               "; expected an existing, writable folder");
    }
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() { abandon(); }

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

  void write(const void* data, std::size_t n) {
    if (fd_ < 0) quantkit::detail::fail("file '", path_, "': write after commit");
    const char* p = static_cast<const char*>(data);
    if (n >= 2) {
      if (const char* marker = std::getenv("QUANTKIT_TEST_STALL_WRITE")) {
        if (*marker) {
          write_all(p, n / 2);
          stall(marker);
        }
      }
    }
    write_all(p, n);
  }
  void write(const std::string& s) { write(s.data(), s.size()); }

  // Flushes to disk and renames the temporary file over PATH.
  void commit() {
    if (fd_ < 0) quantkit::detail::fail("file '", path_, "': committed twice");
    if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail_and_remove("flushing", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      quantkit::detail::fail("file '", path_, "': closing the temporary file failed: ", std::strerror(err),
                             " (disk full?)");
    }
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp_.c_str());
      quantkit::detail::fail("file '", path_, "': cannot rename the temporary file into place: ",
                             std::strerror(err));
    }
    committed_ = true;
  }

 private:
  void write_all(const char* p, std::size_t n) {
    while (n > 0) {
      const ::ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail_and_remove("writing", errno);
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }
  [[noreturn]] void fail_and_remove(const char* what, int err) {
    abandon();
    quantkit::detail::fail("file '", path_, "': ", what, " the temporary file failed: ", std::strerror(err),
                           " (disk full?)");
  }
  void abandon() noexcept {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (!committed_ && !tmp_.empty()) std::remove(tmp_.c_str());
    committed_ = true;  // nothing left to clean up
  }
  static void stall(const char* marker) {
    const int m = ::open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (m >= 0) ::close(m);
    for (;;) ::pause();
  }

  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

inline void write_file_atomically(const std::string& path, const void* data, std::size_t n) {
  AtomicFile f(path);
  f.write(data, n);
  f.commit();
}
inline void write_file_atomically(const std::string& path, const std::string& bytes) {
  write_file_atomically(path, bytes.data(), bytes.size());
}

}  // namespace io
}  // namespace quantkit

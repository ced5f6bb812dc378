// Out-of-core .npy data: read a calibration set larger than memory batch by batch.
//
//   npy::read_header(path)        the dtype, shape and data offset, from the header alone (the
//                                 file size is checked against the shape)
//   npy::Dataset::open({"data/part-*.npy"})
//                                 many .npy files (glob patterns, POSIX glob(3), each pattern's
//                                 matches sorted by name) seen as one array along axis 0: every
//                                 file must hold samples of the same shape and dtype
//   ds.read_rows(start, n, dst)   rows [start, start + n) of the concatenation, across file
//                                 boundaries, with pread(2): memory is what the caller's buffer
//                                 holds, whatever the files' sizes (no mmap: a mapping counts
//                                 against `ulimit -v` even when it is never touched)
//   ds.shard(rank, ranks)         the contiguous rows [N r / R, N (r + 1) / R) of rank r of R
//                                 (empty when N < R for some ranks; optionally in groups of
//                                 rows, see shard())
// POSIX only (open/pread/glob). Errors name the file (and the pattern), what was found and what
// was expected.
#pragma once

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "quantkit/error.hpp"
#include "quantkit/io/npy.hpp"
#include "quantkit/tensor/view.hpp"

namespace quantkit {
namespace npy {

struct Header {
  std::string file;
  DType dtype = DType::f32;
  Dims shape;
  std::uint64_t data_offset = 0;  // bytes before the first element

  std::int64_t rows() const { return shape.rank > 0 ? shape[0] : 1; }
  // The shape of one sample (the shape without axis 0).
  Dims sample_shape() const {
    Dims d;
    d.rank = shape.rank > 0 ? shape.rank - 1 : 0;
    for (int i = 0; i < d.rank; ++i) d[i] = shape[i + 1];
    return d;
  }
  std::size_t row_bytes() const {
    return static_cast<std::size_t>(sample_shape().product()) * item_size(dtype);
  }
};

namespace detail {
// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly n bytes at `offset` (pread loops over short reads and EINTR).
inline void pread_all(int fd, void* dst, std::size_t n, std::uint64_t offset, const std::string& file) {
  auto* p = static_cast<unsigned char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) quantkit::detail::fail("file '", file, "': read failed at byte ", offset, ": ", std::strerror(errno));
    if (got == 0) quantkit::detail::fail("file '", file, "': ends at byte ", offset, "; expected ", n, " more bytes");
    p += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}
}  // namespace detail

// The header of a .npy file; the file's size must be the header plus exactly the data the
// shape declares.
inline Header read_header(const std::string& path) {
  const detail::Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) quantkit::detail::fail("file '", path, "': cannot open for reading: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) quantkit::detail::fail("file '", path, "': cannot stat: ", std::strerror(errno));
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  // The preamble, then the header (the same grammar as npy::parse, which needs the whole file).
  unsigned char pre[12] = {};
  if (file_size < 10) quantkit::detail::fail("file '", path, "': ", file_size, " bytes; not a .npy file (too short)");
  detail::pread_all(f.fd, pre, file_size >= 12 ? 12 : 10, 0, path);
  static const unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (std::memcmp(pre, magic, 6) != 0) quantkit::detail::fail("file '", path, "': not a .npy file (bad magic); expected \\x93NUMPY");
  std::uint64_t header_len = 0, offset = 0;
  if (pre[6] == 1) {
    header_len = pre[8] | (std::uint64_t{pre[9]} << 8);
    offset = 10;
  } else if (pre[6] == 2 || pre[6] == 3) {
    header_len = pre[8] | (std::uint64_t{pre[9]} << 8) | (std::uint64_t{pre[10]} << 16) | (std::uint64_t{pre[11]} << 24);
    offset = 12;
  } else {
    quantkit::detail::fail("file '", path, "': .npy format version ", int{pre[6]}, "; expected 1, 2 or 3");
  }
  if (header_len > file_size - offset) quantkit::detail::fail("file '", path, "': truncated .npy header");
  std::vector<unsigned char> head(static_cast<std::size_t>(offset + header_len));
  detail::pread_all(f.fd, head.data(), head.size(), 0, path);
  const std::string text(reinterpret_cast<const char*>(head.data() + offset), static_cast<std::size_t>(header_len));
  Header h;
  h.file = path;
  const std::string d = npy::detail::header_value(text, "descr", path);
  bool found = false;
  for (DType t : {DType::f32, DType::f64, DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::i64}) {
    const std::string s = descr(t);
    if (d == "'" + s + "'" || (s[0] == '|' && d == "'<" + s.substr(1) + "'")) {
      h.dtype = t;
      found = true;
    }
  }
  if (!found)
    quantkit::detail::fail("file '", path, "': dtype ", d,
                           "; expected little-endian float32, float64, int8, uint8, int16, uint16, int32 or int64");
  if (npy::detail::header_value(text, "fortran_order", path).find("False") == std::string::npos)
    quantkit::detail::fail("file '", path, "': Fortran-order array; expected C order (numpy.ascontiguousarray)");
  const std::string shape_text = npy::detail::header_value(text, "shape", path);
  std::vector<std::int64_t> dims;
  std::size_t i = 1;
  while (i < shape_text.size()) {
    while (i < shape_text.size() && (shape_text[i] == ' ' || shape_text[i] == ',')) ++i;
    if (i >= shape_text.size() || shape_text[i] == ')') break;
    std::int64_t v = 0;
    bool digit = false;
    while (i < shape_text.size() && shape_text[i] >= '0' && shape_text[i] <= '9') {
      if (v > (std::int64_t{1} << 50)) quantkit::detail::fail("file '", path, "': shape ", shape_text, " is too large");
      v = v * 10 + (shape_text[i++] - '0');
      digit = true;
    }
    if (!digit) quantkit::detail::fail("file '", path, "': malformed shape ", shape_text);
    dims.push_back(v);
  }
  if (dims.size() > static_cast<std::size_t>(max_rank))
    quantkit::detail::fail("file '", path, "': shape ", shape_text, " has rank ", dims.size(), "; expected at most ", max_rank);
  h.shape = Dims::from(dims.begin(), dims.end());
  h.data_offset = offset + header_len;
  std::uint64_t count = 1;
  for (auto v : dims) {
    if (v != 0 && count > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(v))
      quantkit::detail::fail("file '", path, "': shape ", shape_text, " overflows");
    count *= static_cast<std::uint64_t>(v);
  }
  const std::uint64_t payload = file_size - h.data_offset;
  if (count * item_size(h.dtype) != payload)
    quantkit::detail::fail("file '", path, "': shape ", shape_text, " needs ", count * item_size(h.dtype),
                           " bytes of data; the file has ", payload);
  return h;
}

// Files matching glob patterns, each pattern's matches sorted by name; a pattern matching
// nothing is an error naming it. A name without wildcards must exist.
inline std::vector<std::string> glob_files(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const auto& pattern : patterns) {
    glob_t g{};
    const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
    std::unique_ptr<glob_t, void (*)(glob_t*)> guard(&g, ::globfree);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0))
      quantkit::detail::fail("calibration shards '", pattern, "': no file matches; expected at least one .npy file");
    if (rc != 0) quantkit::detail::fail("calibration shards '", pattern, "': cannot list the folder (glob error ", rc, ")");
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  return out;
}

// Several .npy files as one array along axis 0.
class Dataset {
 public:
  // `files` in order; every file must hold samples of the first file's sample shape and dtype.
  static Dataset from_files(const std::vector<std::string>& files) {
    if (files.empty()) quantkit::detail::fail("calibration shards: no file given; expected at least one .npy file");
    Dataset d;
    for (const auto& f : files) {
      Header h = read_header(f);
      if (h.shape.rank < 1)
        quantkit::detail::fail("file '", f, "': a scalar (shape ()); expected samples along axis 0");
      if (!d.headers_.empty()) {
        const Header& first = d.headers_.front();
        if (h.dtype != first.dtype || h.sample_shape() != first.sample_shape())
          quantkit::detail::fail("file '", f, "': samples of shape ", h.sample_shape().to_string(), " ",
                                 descr(h.dtype), "; file '", first.file, "' has samples of shape ",
                                 first.sample_shape().to_string(), " ", descr(first.dtype),
                                 "; expected the same sample shape and dtype in every shard");
      }
      d.starts_.push_back(d.rows_);
      d.rows_ += h.rows();
      d.headers_.push_back(std::move(h));
    }
    return d;
  }
  static Dataset open(const std::vector<std::string>& patterns) { return from_files(glob_files(patterns)); }

  const std::vector<Header>& files() const { return headers_; }
  std::int64_t rows() const { return rows_; }
  DType dtype() const { return headers_.front().dtype; }
  Dims sample_shape() const { return headers_.front().sample_shape(); }
  std::size_t row_bytes() const { return headers_.front().row_bytes(); }
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(rows_) * row_bytes(); }

  // Rows [begin, end) of rank `rank` of `ranks`: contiguous, in rank order. With unit = 1 the
  // shard sizes differ by at most one; with unit = u > 1 rows are dealt in groups of u (the last
  // group takes the remainder), so that every non-empty shard holds at least u rows whenever the
  // data does (quantize --calib-shards uses u = 2, from when a 1-row batch ran the model's
  // products as matrix-vector products whose float sums differed in the last bit).
  std::pair<std::int64_t, std::int64_t> shard(int rank, int ranks, std::int64_t unit = 1) const {
    if (ranks < 1 || rank < 0 || rank >= ranks || unit < 1)
      quantkit::detail::fail("shard ", rank, " of ", ranks, " in units of ", unit,
                             " rows; expected 0 <= rank < ranks and unit >= 1");
    const auto groups = static_cast<unsigned long long>(std::max<std::int64_t>(1, rows_ / unit));
    const auto r = static_cast<unsigned long long>(rank), n = static_cast<unsigned long long>(ranks);
    const auto gb = groups * r / n, ge = groups * (r + 1) / n;
    const auto row = [&](unsigned long long g) {
      return g >= groups ? rows_ : std::min<std::int64_t>(rows_, static_cast<std::int64_t>(g) * unit);
    };
    return {row(gb), row(ge)};
  }

  // Rows [start, start + n) into dst (n * row_bytes() bytes), across file boundaries.
  void read_rows(std::int64_t start, std::int64_t n, void* dst) const {
    if (start < 0 || n < 0 || start + n > rows_)
      quantkit::detail::fail("calibration shards: rows [", start, ", ", start + n, ") requested; the ",
                             headers_.size(), " files hold ", rows_, " rows");
    auto* out = static_cast<unsigned char*>(dst);
    const std::size_t rb = row_bytes();
    std::size_t f = file_of(start);
    while (n > 0) {
      const Header& h = headers_[f];
      const std::int64_t local = start - starts_[f];
      const std::int64_t take = std::min<std::int64_t>(n, h.rows() - local);
      if (take > 0) {
        if (open_file_ != f) {
          fd_.reset(new detail::Fd(::open(h.file.c_str(), O_RDONLY | O_CLOEXEC)));
          if (fd_->fd < 0) quantkit::detail::fail("file '", h.file, "': cannot open for reading: ", std::strerror(errno));
          open_file_ = f;
        }
        detail::pread_all(fd_->fd, out, static_cast<std::size_t>(take) * rb,
                          h.data_offset + static_cast<std::uint64_t>(local) * rb, h.file);
        out += static_cast<std::size_t>(take) * rb;
        start += take;
        n -= take;
      }
      ++f;
    }
  }

 private:
  std::size_t file_of(std::int64_t row) const {
    std::size_t f = 0;
    while (f + 1 < starts_.size() && starts_[f + 1] <= row) ++f;
    return f;
  }

  std::vector<Header> headers_;
  std::vector<std::int64_t> starts_;
  std::int64_t rows_ = 0;
  mutable std::shared_ptr<detail::Fd> fd_;  // the file read last (kept open between batches)
  mutable std::size_t open_file_ = static_cast<std::size_t>(-1);
};

}  // namespace npy
}  // namespace quantkit

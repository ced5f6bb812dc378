// quantkit/io/npy_stream.hpp: .npy headers read alone, many files as one array along axis 0
// (rows across file boundaries equal the concatenation), glob patterns, contiguous shards (in
// row groups), and the errors naming the file: no match, different sample shapes or dtypes,
// truncated data, a scalar.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <quantkit/io/npy.hpp>
#include <quantkit/io/npy_stream.hpp>

namespace qk = quantkit;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("quantkit_npy_stream_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<float> iota(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("npy::Dataset: rows across files equal the concatenation; shards cover every row once") {
  TempDir d;
  // Rows of 2x3 floats: 4 + 0 + 5 + 3 rows, values counting up across the files.
  const std::vector<std::int64_t> rows = {4, 0, 5, 3};
  std::vector<float> all;
  for (std::size_t f = 0; f < rows.size(); ++f) {
    const auto v = iota(static_cast<std::size_t>(rows[f]) * 6, static_cast<float>(all.size()));
    qk::npy::save(d.file("part-" + std::to_string(f) + ".npy"), v, qk::Dims{rows[f], 2, 3});
    all.insert(all.end(), v.begin(), v.end());
  }
  const auto ds = qk::npy::Dataset::open({d.file("part-*.npy")});
  REQUIRE(ds.files().size() == 4);
  CHECK(ds.rows() == 12);
  CHECK(ds.sample_shape() == qk::Dims{2, 3});
  CHECK(ds.row_bytes() == 24);
  CHECK(ds.dtype() == qk::npy::DType::f32);
  const auto h = qk::npy::read_header(d.file("part-2.npy"));
  CHECK(h.shape == qk::Dims{5, 2, 3});
  CHECK(h.data_offset % 64 == 0);

  for (std::int64_t start = 0; start < 12; ++start)
    for (std::int64_t n = 0; start + n <= 12; ++n) {
      std::vector<float> got(static_cast<std::size_t>(n) * 6, -1.0f);
      ds.read_rows(start, n, got.data());
      const std::vector<float> want(all.begin() + start * 6, all.begin() + (start + n) * 6);
      REQUIRE(got == want);
    }
  CHECK_THROWS_WITH_AS(ds.read_rows(10, 3, nullptr), doctest::Contains("rows [10, 13) requested; the 4 files hold 12 rows"),
                       qk::Error);

  for (int ranks = 1; ranks <= 7; ++ranks)
    for (std::int64_t unit : {1, 2, 3}) {
      std::int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const auto [b, e] = ds.shard(r, ranks, unit);
        CHECK(b == next);  // contiguous, in rank order
        CHECK(e >= b);
        if (e > b) CHECK(e - b >= unit);  // a non-empty shard holds at least one group
        next = e;
      }
      CHECK(next == 12);
    }
  CHECK(ds.shard(0, 2) == std::pair<std::int64_t, std::int64_t>{0, 6});
  CHECK(ds.shard(2, 5, 2) == std::pair<std::int64_t, std::int64_t>{4, 6});  // 6 groups of 2 over 5 ranks
}

TEST_CASE("npy::Dataset: errors name the file, what was found and what was expected") {
  TempDir d;
  qk::npy::save(d.file("a.npy"), iota(12, 0), qk::Dims{2, 2, 3});
  qk::npy::save(d.file("b.npy"), iota(8, 0), qk::Dims{2, 4});
  qk::npy::save(d.file("c.npy"), std::vector<double>(12, 1.0), qk::Dims{2, 2, 3});
  qk::npy::save(d.file("s.npy"), std::vector<float>{1.0f}, qk::Dims{});
  CHECK_THROWS_WITH_AS(qk::npy::Dataset::open({d.file("none-*.npy")}),
                       doctest::Contains(("calibration shards '" + d.file("none-*.npy") + "': no file matches").c_str()), qk::Error);
  CHECK_THROWS_WITH_AS(qk::npy::Dataset::from_files({d.file("a.npy"), d.file("b.npy")}),
                       doctest::Contains(("file '" + d.file("b.npy") + "': samples of shape [4] <f4; file '" +
                                          d.file("a.npy") + "' has samples of shape [2, 3] <f4")
                                             .c_str()),
                       qk::Error);
  CHECK_THROWS_WITH_AS(qk::npy::Dataset::from_files({d.file("a.npy"), d.file("c.npy")}),
                       doctest::Contains("samples of shape [2, 3] <f8"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::npy::Dataset::from_files({d.file("s.npy")}),
                       doctest::Contains("a scalar (shape ()); expected samples along axis 0"), qk::Error);
  CHECK_THROWS_WITH_AS(qk::npy::Dataset::from_files({}), doctest::Contains("no file given"), qk::Error);

  // Truncated: the header promises more data than the file has.
  fs::copy_file(d.file("a.npy"), d.file("t.npy"));
  fs::resize_file(d.file("t.npy"), fs::file_size(d.file("t.npy")) - 4);
  CHECK_THROWS_WITH_AS(qk::npy::read_header(d.file("t.npy")),
                       doctest::Contains("needs 48 bytes of data; the file has 44"), qk::Error);
  {
    std::ofstream bad(d.file("bad.npy"), std::ios::binary);
    bad << "not a numpy file at all";
  }
  CHECK_THROWS_WITH_AS(qk::npy::read_header(d.file("bad.npy")), doctest::Contains("not a .npy file (bad magic)"),
                       qk::Error);
  CHECK_THROWS_WITH_AS(qk::npy::read_header(d.file("missing.npy")), doctest::Contains("cannot open for reading"),
                       qk::Error);
}

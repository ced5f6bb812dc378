// tensor_traits adapters: View, std::vector + shape, Eigen (row/col-major, Map, strides,
// blocks), Eigen::Tensor, and a user type.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <vector>

#include <quantkit/quantkit.hpp>
#include <quantkit/tensor/eigen.hpp>

namespace qk = quantkit;

namespace user {
// A tensor type the library has never seen: channels-last image with padding per row.
struct Image {
  int height = 0, width = 0, channels = 0, row_pitch = 0;  // row_pitch in elements
  std::vector<float> pixels;
};
}  // namespace user

template <>
struct quantkit::tensor_traits<user::Image> {
  using value_type = float;
  static constexpr int rank = 3;
  static float* data(user::Image& im) { return im.pixels.data(); }
  static const float* data(const user::Image& im) { return im.pixels.data(); }
  static qk::Dims shape(const user::Image& im) { return {im.height, im.width, im.channels}; }
  static qk::Dims strides(const user::Image& im) { return {im.row_pitch, im.channels, 1}; }
};

static_assert(qk::is_tensor_v<user::Image>);
static_assert(qk::is_tensor_v<Eigen::MatrixXf>);
static_assert(qk::is_tensor_v<qk::View<float, 2>>);
static_assert(!qk::is_tensor_v<std::vector<float>>);  // a flat vector needs a shape
static_assert(!qk::is_tensor_v<int>);
#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
static_assert(qk::Tensor<Eigen::Matrix<float, 3, 4, Eigen::RowMajor>>);
#endif

namespace {
// Collects elements in row-major order of the logical shape.
template <class V>
std::vector<float> logical(const V& v) {
  std::vector<float> out;
  qk::for_each_index(v, [&](std::int64_t off, const qk::Dims&) { out.push_back(static_cast<float>(v.data()[off])); });
  return out;
}
}  // namespace

TEST_CASE("Eigen matrices: column-major, row-major, Map with strides, blocks") {
  Eigen::MatrixXf cm(2, 3);
  cm << 1, 2, 3, 4, 5, 6;
  auto v = qk::make_view(cm);
  CHECK(v.shape() == qk::Dims{2, 3});
  CHECK(v.strides() == qk::Dims{1, 2});
  CHECK(logical(v) == std::vector<float>{1, 2, 3, 4, 5, 6});
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rm = cm;
  CHECK(qk::make_view(rm).strides() == qk::Dims{3, 1});
  CHECK(logical(qk::make_view(rm)) == std::vector<float>{1, 2, 3, 4, 5, 6});
  // every other element of a buffer, as a 2x2 column-major map with inner stride 2
  std::array<float, 8> buf = {1, 0, 2, 0, 3, 0, 4, 0};
  Eigen::Map<Eigen::Matrix2f, 0, Eigen::Stride<4, 2>> strided(buf.data());
  CHECK(logical(qk::make_view(strided)) == std::vector<float>{1, 3, 2, 4});
  // a block of a larger matrix
  auto block = cm.block(0, 1, 2, 2);
  CHECK(logical(qk::make_view(block)) == std::vector<float>{2, 3, 5, 6});
  // const matrices give views of const elements
  const Eigen::MatrixXf& ccm = cm;
  static_assert(std::is_same_v<decltype(qk::make_view(ccm))::value_type, const float>);
}

TEST_CASE("Eigen::Tensor and TensorMap, both layouts") {
  Eigen::Tensor<float, 3> t(2, 3, 4);  // column-major
  Eigen::Tensor<float, 3, Eigen::RowMajor> r(2, 3, 4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) t(i, j, k) = r(i, j, k) = static_cast<float>(i * 12 + j * 4 + k);
  std::vector<float> expected(24);
  for (int i = 0; i < 24; ++i) expected[i] = static_cast<float>(i);
  CHECK(qk::make_view(t).strides() == qk::Dims{1, 2, 6});
  CHECK(logical(qk::make_view(t)) == expected);
  CHECK(logical(qk::make_view(r)) == expected);
  Eigen::TensorMap<Eigen::Tensor<float, 3, Eigen::RowMajor>> map(r.data(), 2, 3, 4);
  CHECK(logical(qk::make_view(map)) == expected);
}

TEST_CASE("a user type through tensor_traits, quantized per channel on its last axis") {
  user::Image im{2, 2, 3, 8, std::vector<float>(16, -99.0f)};  // pitch 8: 2 pad floats per row
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x)
      for (int c = 0; c < 3; ++c) im.pixels[static_cast<std::size_t>(y * 8 + x * 3 + c)] = static_cast<float>(c + 1) * (x + y + 1);
  qk::Quantizer<qk::Scheme<qk::UInt<8>, qk::PerChannel<-1>>> q("image");
  q.observe(im);  // padding (-99) must not be seen
  const auto& p = q.params();
  REQUIRE(p.size() == 3);
  CHECK(p.scale[0] == 3.0f / 255.0f);
  CHECK(p.scale[2] == 9.0f / 255.0f);
  CHECK(p.zero_point == std::vector<std::int32_t>{0, 0, 0});
  std::vector<std::uint8_t> codes(12);
  q.quantize(im, qk::with_shape(codes, {2, 2, 3}));
  CHECK(codes[0] == 85);   // 1 / (3/255)
  CHECK(codes[11] == 255);  // 9 / (9/255)
}

TEST_CASE("View checks: rank, negative extents, null data, stride count") {
  float x = 0;
  CHECK_THROWS_WITH_AS((qk::View<float, 2>(&x, qk::Dims{1}, "a")), doctest::Contains("tensor 'a': shape [1] has rank 1; expected rank 2"), qk::Error);
  CHECK_THROWS_AS(qk::View<float>(&x, qk::Dims{-1}), qk::Error);
  CHECK_THROWS_WITH_AS(qk::View<float>(nullptr, qk::Dims{3}, "n"), doctest::Contains("null data pointer"), qk::Error);
  CHECK_NOTHROW(qk::View<float>(nullptr, qk::Dims{0}));
  CHECK_THROWS_AS(qk::View<float>(&x, qk::Dims{1, 1}, qk::Dims{1}), qk::Error);
  CHECK_THROWS_AS((qk::Dims{1, 2, 3, 4, 5, 6, 7, 8, 9}), qk::Error);
  CHECK(qk::View<const float>(&x, qk::Dims{1, 1}).is_contiguous());
}

TEST_CASE("Dims: equality with another Dims and with a list") {
  const qk::Dims d{4, 36};
  CHECK(d == qk::Dims{4, 36});
  CHECK(d != qk::Dims{4, 36, 1});
  CHECK(d.equals({4, 36}));
  CHECK_FALSE(d.equals({4, 35}));
  CHECK_FALSE(d.equals({4}));        // a prefix is not equal
  CHECK_FALSE(d.equals({4, 36, 0}));  // nor is a longer list whose extra value is the unused tail's
  CHECK(qk::Dims{}.equals({}));
  CHECK_FALSE(qk::Dims{}.equals({0}));
}

// The sort, index, scatter, .item() and int4 shims of the built-in runtime,
// called on host tensors: .item() runs in full here; the others must check
// their arguments (dtypes, shapes, dims, reductions) and refuse host tensors
// by name before any GPU work. Their results are checked against eager
// PyTorch on a GPU (tests/test_shim_reference.cc).
#include <cstring>
#include <limits>

#include "support.h"

#if defined(PTB_TEST_SHIM_CORE)
#include "shims/shims.h"
#include "engines/tensor.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

// A host tensor over `values` (borrowed), deleted at the end of the test.
struct Host {
  AtenTensorHandle h = nullptr;
  template <class T>
  Host(std::vector<T>& values, std::vector<int64_t> sizes, int32_t dtype) {
    std::vector<int64_t> strides = contiguous_strides(sizes);
    REQUIRE(aoti_torch_create_tensor_from_blob(values.data(), static_cast<int64_t>(sizes.size()), sizes.data(),
                                               strides.data(), 0, dtype, aoti_torch_device_type_cpu(), 0,
                                               &h) == kShimSuccess);
  }
  ~Host() {
    if (h) aoti_torch_delete_tensor_object(h);
  }
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;
};

}  // namespace

TEST_CASE("built-in index shims: .item() converts every dtype as ATen's item<T>()") {
  std::vector<float> f{2.75f};
  Host real(f, {}, ScalarType::Float);
  int32_t i32 = 0;
  REQUIRE(aoti_torch_item_int32(real.h, &i32) == kShimSuccess);
  CHECK(i32 == 2);  // toward zero
  bool b = false;
  REQUIRE(aoti_torch_item_bool(real.h, &b) == kShimSuccess);
  CHECK(b);
  uint16_t bits = 0;
  REQUIRE(aoti_torch_item_float16(real.h, &bits) == kShimSuccess);
  CHECK(bits == 0x4180);  // 2.75 in IEEE half
  REQUIRE(aoti_torch_item_bfloat16(real.h, &bits) == kShimSuccess);
  CHECK(bits == 0x4030);

  std::vector<int64_t> l{-5};
  Host integer(l, {1, 1}, ScalarType::Long);  // one element in any shape
  double d = 0;
  REQUIRE(aoti_torch_item_float64(integer.h, &d) == kShimSuccess);
  CHECK(d == -5.0);
  uint8_t u8 = 0;
  REQUIRE(aoti_torch_item_uint8(integer.h, &u8) == kShimSuccess);
  CHECK(u8 == 251);  // wraps, as C++ and ATen convert

  std::vector<uint16_t> h{0x3C00};  // 1.0 in half
  Host half(h, {}, ScalarType::Half);
  float value = 0;
  REQUIRE(aoti_torch_item_float32(half.h, &value) == kShimSuccess);
  CHECK(value == 1.0f);

  std::vector<uint8_t> flag{1};
  Host boolean(flag, {}, ScalarType::Bool);
  int64_t i64 = 0;
  REQUIRE(aoti_torch_item_int64(boolean.h, &i64) == kShimSuccess);
  CHECK(i64 == 1);

  std::vector<float> nan{std::numeric_limits<float>::quiet_NaN()};
  Host not_a_number(nan, {}, ScalarType::Float);
  REQUIRE(aoti_torch_item_int16(not_a_number.h, reinterpret_cast<int16_t*>(&bits)) == kShimSuccess);
  CHECK(bits == 0);  // defined here, where C++ leaves it undefined

  std::vector<float> two{1, 2};
  Host pair(two, {2}, ScalarType::Float);
  CHECK(aoti_torch_item_float32(pair.h, &value) == kShimFailure);
  CHECK(aoti_torch_item_float32(nullptr, &value) == kShimFailure);
  CHECK(aoti_torch_item_float32(real.h, nullptr) == kShimFailure);
}

TEST_CASE("built-in index shims: sort and topk check dim, k and dtype, and refuse host tensors") {
  std::vector<float> data(12, 1.0f);
  Host x(data, {3, 4}, ScalarType::Float);
  AtenTensorHandle values = nullptr, indices = nullptr;
  CHECK(aoti_torch_cuda_sort(x.h, 2, 0, &values, &indices) == kShimFailure);        // dim out of range
  CHECK(aoti_torch_cuda_sort(x.h, -3, 0, &values, &indices) == kShimFailure);
  CHECK(aoti_torch_cuda_topk(x.h, 5, -1, 1, 1, &values, &indices) == kShimFailure);  // k > 4
  CHECK(aoti_torch_cuda_topk(x.h, -1, -1, 1, 1, &values, &indices) == kShimFailure);
  CHECK(aoti_torch_cuda_sort(x.h, 1, 0, &values, &indices) == kShimFailure);         // a host tensor
  CHECK(aoti_torch_cuda_sort_stable(x.h, nullptr, 0, 1, &values, &indices) == kShimFailure);
  CHECK(aoti_torch_cuda_sort(nullptr, 0, 0, &values, &indices) == kShimFailure);
  CHECK(aoti_torch_cuda_sort(x.h, 0, 0, nullptr, &indices) == kShimFailure);
  std::vector<float> complex(8);
  Host c(complex, {4}, ScalarType::ComplexFloat);
  CHECK(aoti_torch_cuda_sort(c.h, 0, 0, &values, &indices) == kShimFailure);
  CHECK(values == nullptr);
  CHECK(indices == nullptr);
}

TEST_CASE("built-in index shims: index, index_put and nonzero check index dtypes and shapes") {
  std::vector<float> data(12);
  Host x(data, {3, 4}, ScalarType::Float);
  std::vector<float> wrong{0, 1};
  Host float_index(wrong, {2}, ScalarType::Float);
  std::vector<int64_t> rows{0, 2};
  Host row_index(rows, {2}, ScalarType::Long);
  AtenTensorHandle out = nullptr;

  const AtenTensorHandle* by_float[] = {&float_index.h};
  CHECK(aoti_torch_cuda_index_Tensor(x.h, by_float, 1, &out) == kShimFailure);
  const AtenTensorHandle* three[] = {&row_index.h, &row_index.h, &row_index.h};
  CHECK(aoti_torch_cuda_index_Tensor(x.h, three, 3, &out) == kShimFailure);  // 3 indices, 2 dims
  const AtenTensorHandle* none_only[] = {nullptr};
  CHECK(aoti_torch_cuda_index_Tensor(x.h, none_only, 1, &out) == kShimFailure);  // nothing indexed
  const AtenTensorHandle* by_rows[] = {&row_index.h};
  CHECK(aoti_torch_cuda_index_Tensor(x.h, by_rows, 1, &out) == kShimFailure);  // a host tensor
  CHECK(aoti_torch_cuda_index_Tensor(x.h, nullptr, 1, &out) == kShimFailure);
  CHECK(out == nullptr);

  std::vector<uint8_t> mask_data(5);
  Host mask(mask_data, {5}, ScalarType::Bool);
  const AtenTensorHandle* by_mask[] = {&mask.h};
  CHECK(aoti_torch_cuda_index_Tensor(x.h, by_mask, 1, &out) == kShimFailure);  // mask of 5 against 3 rows

  std::vector<double> doubles(8);
  Host values(doubles, {2, 4}, ScalarType::Double);
  const AtenTensorHandle plain[] = {row_index.h};
  CHECK(aoti_torch_index_put_out(x.h, x.h, plain, 1, values.h, false) == kShimFailure);  // float64 into float32
  CHECK(aoti_torch_cuda_index_put(x.h, by_rows, 1, nullptr, 0, &out) == kShimFailure);

  std::vector<float> complex(8);
  Host c(complex, {4}, ScalarType::ComplexFloat);
  CHECK(aoti_torch_cuda_nonzero(c.h, &out) == kShimFailure);
  CHECK(aoti_torch_cuda_nonzero(x.h, &out) == kShimFailure);  // a host tensor
  CHECK(out == nullptr);
}

TEST_CASE("built-in index shims: scatter checks index dtype, dims, sizes and the reduction") {
  std::vector<float> data(12);
  Host x(data, {3, 4}, ScalarType::Float);
  std::vector<float> src_data(12);
  Host src(src_data, {3, 4}, ScalarType::Float);
  std::vector<int64_t> index_data(6);
  Host index(index_data, {3, 2}, ScalarType::Long);
  std::vector<int32_t> int_index_data(6);
  Host int_index(int_index_data, {3, 2}, ScalarType::Int);
  std::vector<int64_t> flat_data(6);
  Host flat(flat_data, {6}, ScalarType::Long);
  std::vector<int64_t> wide_data(10);
  Host wide(wide_data, {2, 5}, ScalarType::Long);

  CHECK(aoti_torch_cuda_scatter_src_out(x.h, x.h, 1, int_index.h, src.h) == kShimFailure);  // int32 index
  CHECK(aoti_torch_cuda_scatter_src_out(x.h, x.h, 1, flat.h, src.h) == kShimFailure);       // 1 dim against 2
  CHECK(aoti_torch_cuda_scatter_src_out(x.h, x.h, 0, wide.h, src.h) == kShimFailure);       // 5 > 4 columns
  CHECK(aoti_torch_cuda_scatter_src_out(x.h, x.h, 2, index.h, src.h) == kShimFailure);      // dim out of range
  CHECK(aoti_torch_cuda_scatter_reduce_two_out(x.h, x.h, 1, index.h, src.h, "median", 1) == kShimFailure);
  CHECK(aoti_torch_cuda_scatter_reduce_two_out(x.h, x.h, 1, index.h, src.h, nullptr, 1) == kShimFailure);
  CHECK(aoti_torch_scatter_reduce_out(x.h, x.h, 1, index.h, src.h, "amax", 0) == kShimFailure);  // a host tensor
  CHECK(aoti_torch_cuda_scatter_value_out(x.h, x.h, 1, index.h, 2.0) == kShimFailure);           // a host tensor
  CHECK(aoti_torch_scatter_out(x.h, x.h, 1, index.h, nullptr) == kShimFailure);
  std::vector<double> doubles(12);
  Host double_src(doubles, {3, 4}, ScalarType::Double);
  CHECK(aoti_torch_cuda_scatter_src_out(x.h, x.h, 1, index.h, double_src.h) == kShimFailure);
}

TEST_CASE("built-in index shims: int4 weight-only mm checks the packed layout, group and scales") {
  // x [2, 64] bfloat16; weights for n = 16, k = 64 with 2 inner tiles:
  // [16/8, 64/(2*16), 32, 1] int32; scales [64/32, 16, 2] bfloat16.
  std::vector<uint16_t> x_data(2 * 64);
  Host x(x_data, {2, 64}, ScalarType::BFloat16);
  std::vector<int32_t> w_data(2 * 2 * 32 * 1);
  Host w(w_data, {2, 2, 32, 1}, ScalarType::Int);
  std::vector<uint16_t> s_data(2 * 16 * 2);
  Host s(s_data, {2, 16, 2}, ScalarType::BFloat16);
  std::vector<float> f_data(2 * 64);
  Host x_float(f_data, {2, 64}, ScalarType::Float);
  std::vector<int32_t> bad_w_data(2 * 3 * 32);
  Host bad_w(bad_w_data, {2, 3, 32, 1}, ScalarType::Int);
  std::vector<uint16_t> x96_data(2 * 96);
  Host x96(x96_data, {2, 96}, ScalarType::BFloat16);
  std::vector<int32_t> six_tiles_data(2 * 1 * 32 * 3);
  Host six_tiles(six_tiles_data, {2, 1, 32, 3}, ScalarType::Int);
  std::vector<uint16_t> s96_data(3 * 16 * 2);
  Host s96(s96_data, {3, 16, 2}, ScalarType::BFloat16);
  AtenTensorHandle out = nullptr;
  CHECK(aoti_torch_cuda__weight_int4pack_mm(x_float.h, w.h, 32, s.h, &out) == kShimFailure);  // float32 x
  CHECK(aoti_torch_cuda__weight_int4pack_mm(x96.h, six_tiles.h, 32, s96.h, &out) == kShimFailure);  // 6 inner tiles
  CHECK(aoti_torch_cuda__weight_int4pack_mm(x.h, bad_w.h, 32, s.h, &out) == kShimFailure);    // k = 96 packed
  CHECK(aoti_torch_cuda__weight_int4pack_mm(x.h, w.h, 48, s.h, &out) == kShimFailure);        // group 48
  CHECK(aoti_torch_cuda__weight_int4pack_mm(x.h, w.h, 64, s.h, &out) == kShimFailure);        // scales for 32
  CHECK(aoti_torch_cuda__weight_int4pack_mm(x.h, w.h, 32, s.h, &out) == kShimFailure);        // a host tensor
  CHECK(aoti_torch_cuda__weight_int4pack_mm(nullptr, w.h, 32, s.h, &out) == kShimFailure);
  CHECK(out == nullptr);
}

#else

TEST_CASE("built-in index shims: argument checks") {
  ptb::test::skip("this build has no built-in runtime core (the CUDA toolkit was not found)");
}

#endif  // PTB_TEST_SHIM_CORE

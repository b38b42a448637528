// The 3xTF32 split of a float32 product (tf32_split.h), checked on the host
// with the tensor cores' TF32 inputs simulated (each operand's low 13
// significand bits dropped): the k' = 3k product of the split rows must
// reach float32's accuracy, where one TF32 product misses it by far. On the
// GPU, gemm.cc also compares each shape's split product with cuBLAS's
// float32 kernels before it is ever taken.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "support.h"

#if defined(PTB_TEST_SHIM_CORE)
#include "tf32_split.h"

using ptb::builtin::bits_float;
using ptb::builtin::float_bits;
using ptb::builtin::split_layout;
using ptb::builtin::SplitLayout;
using ptb::builtin::SplitOperand;
using ptb::builtin::tf32_split_element;
using ptb::builtin::tf32_parts;
using ptb::builtin::Tf32Parts;

namespace {

// What a TF32 tensor core reads of a float32 operand.
double as_tf32(float x) { return bits_float(float_bits(x) & ~0x1fffu); }

// Index of element (r, c) in a column-major matrix with leading dimension
// ld, stored transposed or not: how cuBLASLt and gemm.cc read operands.
int64_t column_major(bool transposed, int64_t ld, int64_t r, int64_t c) { return transposed ? r * ld + c : c * ld + r; }

// A source operand as gemm.cc holds it: the logical matrix op(X).
struct Source {
  std::vector<float> data;
  int64_t ld = 0;
  bool transposed = false;
  float at(int64_t r, int64_t c) const { return data[static_cast<size_t>(column_major(transposed, ld, r, c))]; }
};

// A logical rows x cols matrix of normal values, stored transposed or not
// with one column (or row) of padding, as an ATen view with strides can be.
Source make_source(int64_t rows, int64_t cols, bool transposed, float scale, std::mt19937& random) {
  std::normal_distribution<float> normal(0, scale);
  Source s;
  s.transposed = transposed;
  s.ld = (transposed ? cols : rows) + 1;
  s.data.resize(static_cast<size_t>(s.ld * (transposed ? rows : cols)));
  for (float& v : s.data) v = normal(random);
  return s;
}

// The split operands of op(A) m x k times op(B) k x n, written element by
// element as the kernel writes them, into memory laid out by split_layout;
// NaN where nothing was written.
std::vector<float> split_operands(const Source& a, const Source& b, int64_t m, int64_t n, int64_t k,
                                  const SplitLayout& layout) {
  std::vector<float> split(layout.bytes / sizeof(float), std::nanf(""));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j)
      tf32_split_element(a.data.data(), i, j, k, a.transposed ? a.ld : 1, a.transposed ? 1 : a.ld, split.data(),
                         layout.a.outer_stride, layout.a.k_stride, false);
  for (int64_t c = 0; c < n; ++c)
    for (int64_t j = 0; j < k; ++j)
      tf32_split_element(b.data.data(), c, j, k, b.transposed ? 1 : b.ld, b.transposed ? b.ld : 1,
                         split.data() + layout.b_offset, layout.b.outer_stride, layout.b.k_stride, true);
  return split;
}

// op(X')'s element (r, c) as cuBLASLt reads a split operand.
float read_split(const SplitOperand& s, const float* base, int64_t r, int64_t c) {
  return base[column_major(s.transpose, s.ld, r, c)];
}

struct Errors {
  double split = 0, tf32 = 0;  // largest error over the largest |exact| value
};

// A row-major A and B, as a Linear's input and a plain [k, n] mat2 hold
// them: A's split has k contiguous, B's n.
Errors product_errors(int64_t m, int64_t n, int64_t k, float scale) {
  std::mt19937 random(11);
  const Source a = make_source(m, k, true, scale, random), b = make_source(k, n, true, scale, random);
  const SplitLayout layout = split_layout(m, n, k, a.transposed, b.transposed);
  const std::vector<float> split3 = split_operands(a, b, m, n, k, layout);
  const float* b3 = split3.data() + layout.b_offset;
  double split_worst = 0, tf32_worst = 0, largest = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < n; ++c) {
      double exact = 0, tf32 = 0, split = 0;
      for (int64_t j = 0; j < k; ++j) {
        exact += static_cast<double>(a.at(i, j)) * b.at(j, c);
        tf32 += as_tf32(a.at(i, j)) * as_tf32(b.at(j, c));
      }
      for (int64_t j = 0; j < 3 * k; ++j)
        split += as_tf32(read_split(layout.a, split3.data(), i, j)) * as_tf32(read_split(layout.b, b3, j, c));
      largest = std::max(largest, std::abs(exact));
      split_worst = std::max(split_worst, std::abs(split - exact));
      tf32_worst = std::max(tf32_worst, std::abs(tf32 - exact));
    }
  }
  return {split_worst / largest, tf32_worst / largest};
}

}  // namespace

TEST_CASE("tf32 split: each operand keeps its source's orientation, and the k' product is A times B") {
  const int64_t m = 5, n = 7, k = 9;
  std::mt19937 random(3);
  for (bool a_t : {false, true}) {
    for (bool b_t : {false, true}) {
      CAPTURE(a_t);
      CAPTURE(b_t);
      const Source a = make_source(m, k, a_t, 1.0f, random), b = make_source(k, n, b_t, 1.0f, random);
      const SplitLayout layout = split_layout(m, n, k, a_t, b_t);
      CHECK(layout.b_offset % 4 == 0);
      CHECK(layout.bytes == (layout.a.floats() + layout.b.floats()) * sizeof(float));
      // The split pass reads along the source's contiguous dimension and
      // writes along the same one: A read transposed has k contiguous, B
      // read as is has k contiguous.
      CHECK((layout.a.k_stride == 1) == a_t);
      CHECK((layout.b.k_stride == 1) == !b_t);
      const std::vector<float> split = split_operands(a, b, m, n, k, layout);
      const float* b_split = split.data() + layout.b_offset;
      // What cuBLASLt computes from the layout: op(A') m x 3k times op(B')
      // 3k x n, against the float64 product of the sources. An element the
      // pass left unwritten reads NaN; a wrong orientation pairs the wrong
      // parts.
      CHECK(layout.a.rows * layout.a.cols == m * 3 * k);
      CHECK(layout.b.rows * layout.b.cols == n * 3 * k);
      double worst = 0, largest = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t c = 0; c < n; ++c) {
          double exact = 0, product = 0;
          for (int64_t j = 0; j < k; ++j) exact += static_cast<double>(a.at(i, j)) * b.at(j, c);
          for (int64_t j = 0; j < 3 * k; ++j)
            product += static_cast<double>(read_split(layout.a, split.data(), i, j)) * read_split(layout.b, b_split, j, c);
          largest = std::max(largest, std::abs(exact));
          const double error = std::abs(product - exact);
          worst = std::isnan(error) ? std::numeric_limits<double>::infinity() : std::max(worst, error);
        }
      }
      CHECK(worst <= 1e-6 * largest);
    }
  }
}

TEST_CASE("tf32 split: big is a TF32 value and big + small is x exactly") {
  std::mt19937 random(5);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (int i = 0; i < 10000; ++i) {
    const float x = std::ldexp(uniform(random), static_cast<int>(random() % 200) - 100);
    const Tf32Parts parts = tf32_parts(x);
    CHECK((float_bits(parts.big) & 0x1fffu) == 0);
    CHECK(parts.big + parts.small == x);
    // Rounded to nearest: the remainder is at most half a TF32 step.
    CHECK(std::abs(parts.small) <= std::ldexp(std::abs(parts.big), -11));
  }
  const float largest = std::numeric_limits<float>::max();
  const Tf32Parts top = tf32_parts(largest);  // rounding would carry it to infinity
  CHECK(std::isfinite(top.big));
  CHECK(top.big + top.small == largest);
  const float infinity = std::numeric_limits<float>::infinity();
  CHECK(tf32_parts(infinity).big == infinity);
  CHECK(tf32_parts(infinity).small == 0.0f);
  CHECK(std::isnan(tf32_parts(std::nanf("")).big));
  CHECK(tf32_parts(std::nanf("")).small == 0.0f);
}

TEST_CASE("tf32 split: the k' = 3k product of split rows has float32's accuracy") {
  for (float scale : {1.0f, 1e-3f, 300.0f}) {
    CAPTURE(scale);
    const Errors errors = product_errors(24, 20, 256, scale);
    CAPTURE(errors.split);
    CAPTURE(errors.tf32);
    // float32 itself: k * 2^-24 at worst over the largest value; TF32 alone
    // is near 2^-11.
    CHECK(errors.split < 256 * std::ldexp(1.0, -24));
    CHECK(errors.tf32 > 64 * errors.split);
  }
}

#else

TEST_CASE("tf32 split: the 3xTF32 operands") {
  ptb::test::skip("this build has no built-in runtime core (the CUDA toolkit was not found)");
}

#endif

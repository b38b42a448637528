#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>
#include <vector>

#include "ptbundle/formats/npy.h"
#include "ptbundle/results/tolerance.h"
#include "support.h"

using namespace ptb;

using ptb::test::contains;

namespace {

constexpr int8_t kHalf = 5, kFloat = 6, kDouble = 7, kLong = 4, kInt = 3, kBool = 11, kBFloat16 = 15;
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TensorBytes view(int8_t type, std::vector<uint64_t> shape, const std::vector<uint8_t>& data) {
  return {type, std::move(shape), Bytes(data.data(), data.size())};
}


ComparisonStats compare_floats(const std::vector<float>& got, const std::vector<float>& want, Tolerance tolerance) {
  auto got_bytes = bytes_of(got);
  auto want_bytes = bytes_of(want);
  auto stats = compare_tensors(view(kFloat, {got.size()}, got_bytes), view(kFloat, {want.size()}, want_bytes),
                               tolerance);
  REQUIRE_MESSAGE(stats.ok(), stats.error().message);
  return *stats;
}

}  // namespace

TEST_CASE("tolerance: the element rule of ExecuTorch BundledProgram") {
  const Tolerance t{1e-5, 1e-4};
  CHECK(element_matches(1.5, 1.5, t));
  CHECK(element_matches(kNan, kNan, t));
  CHECK(element_matches(kInf, kInf, t));
  CHECK(element_matches(-kInf, -kInf, t));
  CHECK_FALSE(element_matches(kInf, -kInf, t));
  CHECK_FALSE(element_matches(kNan, 1.0, t));
  CHECK_FALSE(element_matches(1.0, kNan, t));
  // rtol * |inf| is infinite, yet a finite value is not "close" to infinity.
  CHECK_FALSE(element_matches(1e30, kInf, t));
  CHECK_FALSE(element_matches(kInf, 1e30, t));
  // The boundary: atol + rtol * |want| passes, a little more does not.
  const Tolerance coarse{0.25, 0.5};
  CHECK(element_matches(4.0 + 0.25 + 2.0, 4.0, coarse));
  CHECK_FALSE(element_matches(4.0 + 0.25 + 2.0 + 1e-9, 4.0, coarse));
  CHECK(element_matches(-4.0 - 2.25, -4.0, coarse));
  // rtol scales with the expected value, not the result.
  CHECK(element_matches(0.0, 1.0, Tolerance{0, 1.0}));
  CHECK_FALSE(element_matches(1.0, 0.0, Tolerance{0, 1.0}));
}

TEST_CASE("tolerance: defaults by dtype") {
  CHECK(default_tolerance(kFloat).atol == 1e-5);
  CHECK(default_tolerance(kFloat).rtol == 1e-4);
  CHECK(default_tolerance(kDouble).atol == 1e-5);
  CHECK(default_tolerance(kHalf).atol == 1e-3);
  CHECK(default_tolerance(kHalf).rtol == 1e-2);
  CHECK(default_tolerance(kBFloat16).atol == 1e-2);
  CHECK(default_tolerance(kBFloat16).rtol == 4e-2);
  CHECK(default_tolerance(kInt).atol == 0);
  CHECK(default_tolerance(kInt).rtol == 0);
  CHECK(default_tolerance(kBool).rtol == 0);
}

TEST_CASE("tolerance: the expected output of mlp_et matches itself and fails when one element moves") {
  PTB_REQUIRE_FIXTURES();
  auto expected = NpyFile::open(ptb::test::fixture("aoti/mlp_et.out0.npy").string());
  REQUIRE_MESSAGE(expected.ok(), expected.error().message);
  const NpyHeader& header = expected->header();
  REQUIRE(header.scalar_type == kFloat);
  TensorBytes want{header.scalar_type, header.shape, expected->data()};

  auto same = compare_tensors(want, want, default_tolerance(kFloat));
  REQUIRE(same.ok());
  CHECK(same->element_count == 32);
  CHECK(same->passed());
  CHECK(same->max_abs_error == 0);
  CHECK(same->required_atol == 0);

  // Move the largest element by 1e-3: beyond the float32 default.
  std::vector<float> values(32);
  std::memcpy(values.data(), expected->data().data(), 128);
  size_t largest = 0;
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i] > values[largest]) largest = i;
  REQUIRE(values[largest] > 0);  // after a ReLU some outputs are positive
  const float original = values[largest];
  values[largest] += 1e-3f;
  auto moved_bytes = bytes_of(values);
  auto moved = compare_tensors(TensorBytes{kFloat, header.shape, Bytes(moved_bytes.data(), moved_bytes.size())}, want,
                               default_tolerance(kFloat));
  REQUIRE(moved.ok());
  CHECK(moved->mismatch_count == 1);
  REQUIRE(moved->worst_index.has_value());
  CHECK(*moved->worst_index == largest);
  CHECK(moved->worst_want == doctest::Approx(original));
  CHECK(moved->max_abs_error == doctest::Approx(1e-3).epsilon(1e-3));
  CHECK(moved->worst_allowed == doctest::Approx(1e-5 + 1e-4 * original));
  CHECK(moved->mean_abs_error == doctest::Approx(moved->max_abs_error / 32));
  // A looser tolerance passes it.
  auto loose = compare_tensors(TensorBytes{kFloat, header.shape, Bytes(moved_bytes.data(), moved_bytes.size())}, want,
                               Tolerance{2e-3, 0});
  REQUIRE(loose.ok());
  CHECK(loose->passed());
}

TEST_CASE("tolerance: statistics as Polygraphy reports them") {
  // Errors 0.1 at want 1, 0.2 at want 2 (relative 0.1 each), 0 at want 0.
  auto stats = compare_floats({1.1f, 2.2f, 0.0f}, {1.0f, 2.0f, 0.0f}, Tolerance{0, 0.01});
  CHECK(stats.element_count == 3);
  CHECK(stats.mismatch_count == 2);
  CHECK(stats.max_abs_error == doctest::Approx(0.2).epsilon(1e-6));
  CHECK(stats.mean_abs_error == doctest::Approx(0.1).epsilon(1e-6));
  CHECK(stats.max_rel_error == doctest::Approx(0.1).epsilon(1e-5));
  CHECK(stats.mean_rel_error == doctest::Approx(0.1).epsilon(1e-5));  // over nonzero expected values
  // Smallest atol with rtol 0.01: max(0.1 - 0.01, 0.2 - 0.02) = 0.18.
  CHECK(stats.required_atol == doctest::Approx(0.18).epsilon(1e-5));
  CHECK(compare_floats({1.1f, 2.2f, 0.0f}, {1.0f, 2.0f, 0.0f}, Tolerance{stats.required_atol + 1e-7, 0.01}).passed());
  CHECK_FALSE(compare_floats({1.1f, 2.2f, 0.0f}, {1.0f, 2.0f, 0.0f}, Tolerance{0.17, 0.01}).passed());

  // A nonzero result where zero was expected is an infinite relative error.
  auto from_zero = compare_floats({0.5f}, {0.0f}, Tolerance{1.0, 0});
  CHECK(from_zero.passed());
  CHECK(std::isinf(from_zero.max_rel_error));
  CHECK(from_zero.mean_rel_error == 0);
}

TEST_CASE("tolerance: NaN and infinities") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto ok = compare_floats({nan, inf, -inf, -0.0f}, {nan, inf, -inf, 0.0f}, Tolerance{});
  CHECK(ok.passed());
  CHECK(ok.max_abs_error == 0);

  auto bad = compare_floats({1.0f, nan, 2.0f}, {1.0f, 0.5f, 2.0f}, Tolerance{1e-5, 1e-4});
  CHECK(bad.mismatch_count == 1);
  CHECK(*bad.worst_index == 1);
  CHECK(std::isinf(bad.max_abs_error));
  CHECK(std::isinf(bad.required_atol));
  CHECK(test_case_verdict("encoder", {{"output 0", {1e-5, 1e-4}, bad, ""}}) ==
        "part encoder does not reproduce its test case (element 1 is nan, expected 0.5 (atol 1e-05 + rtol 0.0001 * "
              "|expected|)); export it again on this GPU");

  auto overflow = compare_floats({inf}, {3.0e38f}, Tolerance{0, 1.0});
  CHECK(overflow.mismatch_count == 1);
}

TEST_CASE("tolerance: the verdict sentence") {
  // 0.05 + 0.05 * 0.5 = 0.075 allowed; 0.0953 off.
  auto stats = compare_floats({0.5953f, 1.0f}, {0.5f, 1.0f}, Tolerance{0.05, 0.05});
  REQUIRE(stats.mismatch_count == 1);
  CHECK(test_case_verdict("encoder", {{"output 0", {0.05, 0.05}, stats, ""}}) ==
        "part encoder does not reproduce its test case (max abs diff 9.53e-02 > 0.075 at element 0 (atol 0.05 + rtol "
              "0.05 * |expected|)); export it again on this GPU");

  auto exact = compare_floats({0.5f, 1.0f}, {0.5f, 1.0f}, Tolerance{0.05, 0.05});
  auto close = compare_floats({0.5f, 1.0f + 1.1920929e-07f}, {0.5f, 1.0f}, Tolerance{1e-5, 1e-4});
  CHECK(test_case_verdict("head", {{"output 0", {}, exact, ""}}) ==
        "part head reproduces its test case (1 output, max abs diff 0.00e+00)");
  CHECK(test_case_verdict("head", {{"a", {}, exact, ""}, {"b", {}, close, ""}}) ==
        "part head reproduces its test case (2 outputs, max abs diff 1.19e-07)");

  // With several outputs the failing one is named; the worst one wins.
  auto slightly = compare_floats({1.2f}, {1.0f}, Tolerance{0.1, 0});
  auto badly = compare_floats({3.0f}, {1.0f}, Tolerance{0.1, 0});
  CHECK(test_case_verdict("head", {{"logits", {0.1, 0}, slightly, ""}, {"actions", {0.1, 0}, badly, ""}, {"c", {}, exact, ""}}) ==
        "part head does not reproduce its test case (actions: max abs diff 2.00e+00 > 0.1 at element 0 (atol 0.1 + rtol 0 * "
              "|expected|)); export it again on this GPU");
  // An output that could not be compared is the worst of all.
  CHECK(test_case_verdict("head", {{"logits", {0.1, 0}, badly, ""}, {"output 1", {}, {}, "shape [4, 8], expected [4, 16]"}}) ==
        "part head does not reproduce its test case (output 1: shape [4, 8], expected [4, 16]); export it again on this GPU");
}

TEST_CASE("tolerance: float16 and bfloat16 are decoded from their bits") {
  // half: 1.0 = 0x3c00, 1.0009765625 = 0x3c01 (one ulp), 2^-24 = 0x0001, inf = 0x7c00.
  std::vector<uint16_t> want{0x3c00, 0x0000, 0x7c00, 0xc000};
  std::vector<uint16_t> got{0x3c01, 0x0001, 0x7c00, 0xc000};
  auto want_bytes = bytes_of(want);
  auto got_bytes = bytes_of(got);
  auto stats = compare_tensors(view(kHalf, {4}, got_bytes), view(kHalf, {4}, want_bytes), Tolerance{});
  REQUIRE(stats.ok());
  CHECK(stats->mismatch_count == 2);
  CHECK(stats->max_abs_error == doctest::Approx(std::ldexp(1.0, -10)));
  CHECK(stats->worst_want == 1.0);
  CHECK(compare_tensors(view(kHalf, {4}, got_bytes), view(kHalf, {4}, want_bytes), default_tolerance(kHalf))
            ->passed());

  // bfloat16: 1.0 = 0x3f80, 1.0078125 = 0x3f81, -2.0 = 0xc000.
  std::vector<uint16_t> bf_want{0x3f80, 0xc000};
  std::vector<uint16_t> bf_got{0x3f81, 0xc000};
  auto bf_want_bytes = bytes_of(bf_want);
  auto bf_got_bytes = bytes_of(bf_got);
  auto bf = compare_tensors(view(kBFloat16, {2}, bf_got_bytes), view(kBFloat16, {2}, bf_want_bytes), Tolerance{});
  REQUIRE(bf.ok());
  CHECK(bf->max_abs_error == doctest::Approx(std::ldexp(1.0, -7)));
  CHECK(bf->worst_got == doctest::Approx(1.0078125));
}

TEST_CASE("tolerance: integers compare exactly, even past 2^53") {
  std::vector<int64_t> want{1ll << 60, -7};
  std::vector<int64_t> got{(1ll << 60) + 1, -7};
  auto want_bytes = bytes_of(want);
  auto got_bytes = bytes_of(got);
  auto stats = compare_tensors(view(kLong, {2}, got_bytes), view(kLong, {2}, want_bytes), default_tolerance(kLong));
  REQUIRE(stats.ok());
  CHECK(stats->mismatch_count == 1);
  CHECK(stats->max_abs_error == 1);
  CHECK(stats->required_atol == 1);

  std::vector<uint8_t> flags_want{1, 0, 1};
  std::vector<uint8_t> flags_got{1, 1, 1};
  auto flags = compare_tensors(view(kBool, {3}, flags_got), view(kBool, {3}, flags_want), Tolerance{});
  REQUIRE(flags.ok());
  CHECK(flags->mismatch_count == 1);
  CHECK(*flags->worst_index == 1);
}

TEST_CASE("tolerance: tensors of another dtype, shape or size are not compared") {
  auto a = bytes_of(std::vector<float>{1, 2, 3, 4});
  auto b = bytes_of(std::vector<int32_t>{1, 2, 3, 4});
  auto dtype = compare_tensors(view(kFloat, {4}, a), view(kInt, {4}, b), Tolerance{});
  REQUIRE_FALSE(dtype.ok());
  CHECK(dtype.error().message == "dtype float32, expected int32");
  auto shape = compare_tensors(view(kFloat, {2, 2}, a), view(kFloat, {4}, a), Tolerance{});
  REQUIRE_FALSE(shape.ok());
  CHECK(shape.error().message == "shape [2, 2], expected [4]");
  auto size = compare_tensors(view(kFloat, {5}, a), view(kFloat, {5}, a), Tolerance{});
  REQUIRE_FALSE(size.ok());
  CHECK(size.error().message.find("expected 20 for [5]") != std::string::npos);
  auto huge = compare_tensors(view(kFloat, {1ull << 40, 1ull << 40}, a), view(kFloat, {1ull << 40, 1ull << 40}, a),
                              Tolerance{});
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message == "shape overflows");
  // A 0-d tensor is one element; an empty one is none.
  auto scalar = bytes_of(std::vector<float>{2.0f});
  auto zero_d = compare_tensors(view(kFloat, {}, scalar), view(kFloat, {}, scalar), Tolerance{});
  REQUIRE(zero_d.ok());
  CHECK(zero_d->element_count == 1);
  std::vector<uint8_t> nothing;
  auto empty = compare_tensors(view(kFloat, {0, 3}, nothing), view(kFloat, {0, 3}, nothing), Tolerance{});
  REQUIRE(empty.ok());
  CHECK(empty->element_count == 0);
  CHECK(empty->passed());
}

TEST_CASE("tolerance: one rule from the expected output's dtype and largest magnitude") {
  // The bf16 MLP: outputs up to 0.5 (bfloat16 0x3f00); one ulp there
  // is 2^-8 = 3.9e-3, so an error of 1.95e-3 (half an ulp) must pass.
  std::vector<uint16_t> want{0x3f00, 0x3e80, 0xbe00, 0x0000};  // 0.5, 0.25, -0.125, 0
  auto want_bytes = bytes_of(want);
  Tolerance bf = output_tolerance(view(kBFloat16, {4}, want_bytes));
  CHECK(bf.atol == std::ldexp(4.0, -8));
  CHECK(bf.rtol == std::ldexp(1.0, -7));
  CHECK(contains(bf.rule, "bfloat16: 4 ulp at max |expected| 0.5"));
  std::vector<uint16_t> got{0x3f00, 0x3e81, 0xbe00, 0x3b00};  // 0.25 + 1 ulp; 0 -> 1.95e-3
  auto got_bytes = bytes_of(got);
  auto stats = compare_tensors(view(kBFloat16, {4}, got_bytes), view(kBFloat16, {4}, want_bytes), bf);
  REQUIRE(stats.ok());
  CHECK(stats->max_abs_error == doctest::Approx(1.953125e-3));
  CHECK(stats->passed());
  // The old fixed 1e-3 + 1e-3 * |e| that export recorded failed it.
  CHECK_FALSE(compare_tensors(view(kBFloat16, {4}, got_bytes), view(kBFloat16, {4}, want_bytes), Tolerance{1e-3, 1e-3})
                  ->passed());

  // float16 at 3.0: ulp 2^-9.
  std::vector<uint16_t> half{0x4200, 0x3c00};  // 3.0, 1.0
  auto half_bytes = bytes_of(half);
  CHECK(output_tolerance(view(kHalf, {2}, half_bytes)).atol == std::ldexp(4.0, -9));

  // float32: 2048 ulp at M; NaN and infinities do not set the magnitude.
  auto floats = bytes_of(std::vector<float>{0.75f, -0.1f, std::numeric_limits<float>::quiet_NaN(),
                                            std::numeric_limits<float>::infinity()});
  Tolerance f32 = output_tolerance(view(kFloat, {4}, floats));
  CHECK(f32.atol == std::ldexp(2048.0, -24));  // ulp(0.75) = 2^-24
  CHECK(f32.rtol == std::ldexp(1.0, -16));
  // No nonzero finite value: the scale is 1.
  auto zeros = bytes_of(std::vector<float>{0.0f, 0.0f});
  CHECK(output_tolerance(view(kFloat, {2}, zeros)).atol == std::ldexp(2048.0, -23));
  CHECK(contains(output_tolerance(view(kFloat, {2}, zeros)).rule, "none nonzero"));
  // Integers and bool: exact.
  auto longs = bytes_of(std::vector<int64_t>{1, 1000});
  Tolerance exact = output_tolerance(view(kLong, {2}, longs));
  CHECK(exact.atol == 0);
  CHECK(exact.rtol == 0);
  CHECK(contains(exact.rule, "exact"));
  // A byte count that does not match the shape is not read past its end.
  std::vector<uint8_t> odd(3, 0x7f);
  CHECK(output_tolerance(view(kFloat, {4}, odd)).atol == std::ldexp(2048.0, -23));
}

TEST_CASE("tolerance: mlp_et's expected output passes the conv-net error that run --expect once failed") {
  PTB_REQUIRE_FIXTURES();
  auto expected = NpyFile::open(ptb::test::fixture("aoti/mlp_et.out0.npy").string());
  REQUIRE_MESSAGE(expected.ok(), expected.error().message);
  TensorBytes want{expected->header().scalar_type, expected->header().shape, expected->data()};
  Tolerance rule = output_tolerance(want);
  double magnitude = 0;
  std::vector<float> values(32);
  std::memcpy(values.data(), expected->data().data(), 128);
  for (float v : values) magnitude = std::max(magnitude, static_cast<double>(std::fabs(v)));
  REQUIRE(magnitude > 0);
  CHECK(rule.atol == std::ldexp(2048.0, std::ilogb(magnitude) - 23));
  CHECK(rule.atol <= magnitude * std::ldexp(1.0, -12));
  CHECK(rule.atol > magnitude * std::ldexp(1.0, -13));

  // An error of a few float32 ulps passes; one of 1 % of the magnitude fails,
  // and the message gives the error, what was allowed and the rule.
  size_t largest = 0;
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i] > values[largest]) largest = i;
  std::vector<float> near = values;
  near[largest] = std::nextafter(std::nextafter(near[largest], 1e30f), 1e30f);
  auto near_bytes = bytes_of(near);
  CHECK(compare_tensors({kFloat, want.shape, Bytes(near_bytes.data(), near_bytes.size())}, want, rule)->passed());
  std::vector<float> far = values;
  far[largest] += static_cast<float>(magnitude * 0.01);
  auto far_bytes = bytes_of(far);
  OutputComparison comparison;
  comparison.name = "output 0";
  comparison.tolerance = rule;
  auto stats = compare_tensors({kFloat, want.shape, Bytes(far_bytes.data(), far_bytes.size())}, want, rule);
  REQUIRE(stats.ok());
  comparison.stats = *stats;
  CHECK_FALSE(comparison.passed());
  const std::string verdict = test_case_verdict("mlp", {comparison});
  INFO(verdict);
  CHECK(contains(verdict, "max abs diff "));
  CHECK(contains(verdict, "at element " + std::to_string(largest)));
  CHECK(contains(verdict, "float32: 2048 ulp at max |expected|"));
}

TEST_CASE("tolerance: element_value reads every comparable dtype as the comparisons do") {
  const auto halves = bytes_of(std::vector<uint16_t>{0x3c00, 0xc000, 0x7c00, 0x0001});  // 1, -2, inf, 2^-24
  CHECK(element_value(view(kHalf, {4}, halves), 0) == 1.0);
  CHECK(element_value(view(kHalf, {4}, halves), 1) == -2.0);
  CHECK(std::isinf(element_value(view(kHalf, {4}, halves), 2)));
  CHECK(element_value(view(kHalf, {4}, halves), 3) == std::ldexp(1.0, -24));
  const auto brains = bytes_of(std::vector<uint16_t>{0x3fc0, 0x7fc0});  // 1.5, NaN
  CHECK(element_value(view(kBFloat16, {2}, brains), 0) == 1.5);
  CHECK(std::isnan(element_value(view(kBFloat16, {2}, brains), 1)));
  const auto longs = bytes_of(std::vector<int64_t>{-7, 1LL << 40});
  CHECK(element_value(view(kLong, {2}, longs), 0) == -7.0);
  CHECK(element_value(view(kLong, {2}, longs), 1) == std::ldexp(1.0, 40));
  const std::vector<uint8_t> flags{0, 2};
  CHECK(element_value(view(kBool, {2}, flags), 1) == 1.0);
  // Past the end, and a dtype the comparisons do not read (complex64 = 9): 0.
  CHECK(element_value(view(kLong, {2}, longs), 2) == 0.0);
  CHECK(element_value(view(9, {1}, longs), 0) == 0.0);
}

// ExecuTorch's plain int4/5/6/8 weight layouts (libruntime/kernels/
// plain_layout.h), read as plain_mm.cu's kernels read them (8 at a time),
// against bytes laid out here from the layouts' descriptions in ExecuTorch's headers
// (backends/cuda/runtime/shims/int*_plain_mm.h): hand-placed bits first,
// then every code of a row packed and read back; and the shims' argument
// checks, message by message. Their products are checked against PyTorch
// on a GPU by tests/test_shim_reference.cc and bench/bench_shims.py.
#include <cstring>
#include <vector>

#include "support.h"

#if defined(PTB_TEST_SHIM_CORE)
#include "kernels/plain_layout.h"
#include "engines/plain_mm.h"
#include "shims/shims.h"
#include "engines/tensor.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

// One row (n = 1) of k weights of `bits` with codes `u`, packed as the
// headers describe.
struct Packed {
  std::vector<uint8_t> ql, qh;
};

Packed pack(int bits, const std::vector<uint32_t>& u) {
  const size_t k = u.size();
  Packed p;
  p.ql.assign(k / 2, 0);
  for (size_t i = 0; i < k; ++i) p.ql[i / 2] |= static_cast<uint8_t>((u[i] & 0xf) << ((i % 2) * 4));
  if (bits == 5) {
    // Per 32 weights, 4 bytes, one per 8: even weights' high bits in the
    // low nibble, odd ones' in the high nibble.
    p.qh.assign(k / 8, 0);
    for (size_t i = 0; i < k; ++i) {
      const size_t byte = (i / 32) * 4 + (i % 32) / 8, j = (i % 8) / 2;
      p.qh[byte] |= static_cast<uint8_t>(((u[i] >> 4) & 1) << ((i % 2) ? 4 + j : j));
    }
  } else if (bits == 6) {
    // Per 32 weights, hi_even_packed[4] then hi_odd_packed[4]; bits 2j..2j+1.
    p.qh.assign(k / 4, 0);
    for (size_t i = 0; i < k; ++i) {
      const size_t byte = (i / 32) * 8 + (i % 2) * 4 + (i % 32) / 8, j = (i % 8) / 2;
      p.qh[byte] |= static_cast<uint8_t>(((u[i] >> 4) & 3) << (2 * j));
    }
  }
  return p;
}

// One weight's code and value, read as the kernels read them: 8 at a time.
int32_t code_at(const PlainWeights& w, uint32_t n, uint32_t k) {
  int32_t codes[8];
  plain_codes8(w, n, k - k % 8, codes);
  return codes[k % 8];
}

float weight_at(const PlainWeights& w, uint32_t n, uint32_t k) {
  float weights[8];
  plain_weights8(w, n, k - k % 8, weights);
  return weights[k % 8];
}

}  // namespace

TEST_CASE("plain layouts: hand-placed bits") {
  PlainWeights w;
  w.k = 256;
  std::vector<uint8_t> ql(128, 0), qh(64, 0);
  w.ql = ql.data();
  w.qh = qh.data();
  ql[6] = 0xab;  // weights 12 (low nibble) and 13
  w.bits = 4;
  CHECK(code_at(w, 0, 12) == 0xb);
  CHECK(code_at(w, 0, 13) == 0xa);
  // int5: weight 13 is the odd weight j = 2 of the second 8 of the first 32:
  // qh byte 1, bit 4 + 2.
  qh[1] = 1 << 6;
  w.bits = 5;
  CHECK(code_at(w, 0, 13) == 0xa + 16);
  CHECK(code_at(w, 0, 12) == 0xb);
  // int6: weight 59 is the odd weight j = 1 of the 4th 8 of the second 32:
  // qh byte 8 + 4 + 3, bits 2..3.
  std::memset(qh.data(), 0, qh.size());
  ql[29] = 0x50;  // weight 59's low nibble is 5
  qh[15] = 2 << 2;
  w.bits = 6;
  CHECK(code_at(w, 0, 59) == 5 + 32);
  CHECK(code_at(w, 0, 58) == 0);
}

TEST_CASE("plain layouts: every code of a row packs and reads back") {
  for (int bits : {4, 5, 6}) {
    CAPTURE(bits);
    const uint32_t k = 512;
    std::vector<uint32_t> u(k);
    for (uint32_t i = 0; i < k; ++i) u[i] = (i * 37 + i / 7) % (1u << bits);
    Packed p = pack(bits, u);
    PlainWeights w;
    w.bits = bits;
    w.k = k;
    w.ql = p.ql.data();
    w.qh = p.qh.data();
    for (uint32_t i = 0; i < k; ++i) {
      CAPTURE(i);
      CHECK(code_at(w, 0, i) == static_cast<int32_t>(u[i]));
    }
    // And a whole step of 8 at once.
    for (uint32_t k0 = 0; k0 < k; k0 += 8) {
      int32_t codes[8];
      plain_codes8(w, 0, k0, codes);
      for (uint32_t j = 0; j < 8; ++j) CHECK(codes[j] == static_cast<int32_t>(u[k0 + j]));
    }
  }
}

// plain_mm.cu's direct kernel loads a chunk of 32 weights' low bits at
// once (16 bytes; 32 for int8) from plain_low_offset and splits them into
// octets: octet o must be the bytes plain_low8 reads for k0 + 8o, and decode
// to the codes packed there.
TEST_CASE("plain layouts: a chunk's low bits split into the octets plain_low8 reads") {
  for (int bits : {4, 5, 6, 8}) {
    CAPTURE(bits);
    const uint32_t k = 256;
    std::vector<uint32_t> u(k);
    for (uint32_t i = 0; i < k; ++i) u[i] = (i * 53 + i / 5) % (1u << bits);
    Packed p;
    std::vector<uint8_t> bytes;
    if (bits == 8) {
      for (uint32_t i = 0; i < k; ++i) bytes.push_back(static_cast<uint8_t>(u[i] - 128));
    } else {
      p = pack(bits, u);
    }
    PlainWeights w;
    w.bits = bits;
    w.k = k;
    w.ql = bits == 8 ? bytes.data() : p.ql.data();
    w.qh = p.qh.data();
    const uint32_t word_bytes = bits == 8 ? 8 : 4;
    for (uint32_t k0 = 0; k0 < k; k0 += 32) {
      uint32_t chunk[8] = {};
      std::memcpy(chunk, w.ql + plain_low_offset(w, 0, k0), 4 * word_bytes);
      for (uint32_t o = 0; o < 4; ++o) {
        CAPTURE(k0 + 8 * o);
        PlainLow low;
        low.word[0] = chunk[o * word_bytes / 4];
        if (bits == 8) low.word[1] = chunk[o * 2 + 1];
        const PlainLow read = plain_low8(w, 0, k0 + 8 * o);
        CHECK(low.word[0] == read.word[0]);
        CHECK(low.word[1] == read.word[1]);
        int32_t codes[8];
        plain_codes8(w, 0, k0 + 8 * o, low, codes);
        for (uint32_t j = 0; j < 8; ++j) {
          const uint32_t i = k0 + 8 * o + j;
          CHECK(codes[j] == (bits == 8 ? static_cast<int32_t>(u[i]) - 128 : static_cast<int32_t>(u[i])));
        }
      }
    }
  }
}

TEST_CASE("plain layouts: scales, zeros and steps per group and per 256") {
  // Two rows of k = 512 in groups of 128 (int4): row 1, group 3 (k 384..511),
  // super-block 1.
  const uint32_t k = 512, group = 128;
  std::vector<uint8_t> ql(2 * k / 2, 0), scale(2 * 4, 0), zero(2 * 4, 0);
  std::vector<uint16_t> scale_step(2 * 2, 0), zero_step(2 * 2, 0);
  ql[k / 2 + 400 / 2] = 0x0c;  // row 1, weight 400: code 12
  scale[4 + 3] = 3;
  zero[4 + 3] = 4;
  scale_step[2 + 1] = 0x3800;  // 0.5 in fp16
  zero_step[2 + 1] = 0x4000;   // 2.0
  PlainWeights w;
  w.bits = 4;
  w.k = k;
  w.group = group;
  w.ql = ql.data();
  w.scale = scale.data();
  w.zero = zero.data();
  w.scale_step = scale_step.data();
  w.zero_step = zero_step.data();
  CHECK(weight_at(w, 1, 400) == doctest::Approx(1.5 * (12 - 8)));
  CHECK(weight_at(w, 0, 400) == 0.0f);  // row 0's codes are 0

  // int6: signed scale codes, the constant zero 32.
  std::vector<int8_t> scale6(2 * 4, 0);
  scale6[4 + 3] = -2;
  std::vector<uint8_t> qh6(2 * k / 4, 0);
  w.bits = 6;
  w.qh = qh6.data();
  w.scale = reinterpret_cast<const uint8_t*>(scale6.data());
  CHECK(weight_at(w, 1, 400) == doctest::Approx(-2 * 0.5 * (12 - 32)));

  // int8: bfloat16 scales, signed zeros, signed weights.
  std::vector<int8_t> q8(2 * k, 0), zero8(2 * 4, 0);
  std::vector<uint16_t> scale8(2 * 4, 0);
  q8[k + 400] = -7;
  zero8[4 + 3] = -3;
  scale8[4 + 3] = 0x3fc0;  // 1.5 in bfloat16
  w.bits = 8;
  w.ql = reinterpret_cast<const uint8_t*>(q8.data());
  w.scale = reinterpret_cast<const uint8_t*>(scale8.data());
  w.zero = reinterpret_cast<const uint8_t*>(zero8.data());
  CHECK(weight_at(w, 1, 400) == doctest::Approx(1.5 * (-7 + 3)));
  int32_t codes[8];
  plain_codes8(w, 1, 400, codes);
  CHECK(codes[0] == -7);
  plain_codes8(w, 1, 392, codes);
  CHECK(codes[7] == 0);
}

TEST_CASE("plain layouts: fp16 steps decode as IEEE half") {
  CHECK(half_bits_to_float(0x3c00) == 1.0f);
  CHECK(half_bits_to_float(0xc000) == -2.0f);
  CHECK(half_bits_to_float(0x0001) == doctest::Approx(5.960464477539063e-08));  // the smallest subnormal
  CHECK(half_bits_to_float(0x7bff) == 65504.0f);
  CHECK(half_bits_to_float(0x0000) == 0.0f);
  CHECK(bfloat16_bits_to_float(0x4030) == 2.75f);
}

namespace {

Tensor made(int32_t dtype, std::vector<int64_t> sizes) {
  Tensor t;
  t.dtype = dtype;
  t.sizes = sizes;
  t.strides = contiguous_strides(sizes);
  const uint64_t bytes = static_cast<uint64_t>(t.numel()) * *scalar_type_size(dtype);
  auto storage = allocate(bytes ? bytes : 1, kDeviceCpu, 0);
  REQUIRE(storage.ok());
  t.storage = *storage;
  return t;
}

// What check_plain_mm says is wrong, "" when nothing is.
std::string why_not(const Status& status) { return status.ok() ? "" : status.error().message; }

}  // namespace

TEST_CASE("plain mm shims: the argument checks name what is wrong") {
  // int4, m = 2, k = 512, n = 16, groups of 64.
  Tensor x = made(ScalarType::BFloat16, {2, 512});
  Tensor qdata = made(ScalarType::Byte, {16, 256});
  Tensor scale = made(ScalarType::Byte, {16, 8});
  Tensor step = made(ScalarType::Half, {16, 2});
  Tensor zero = made(ScalarType::Byte, {16, 8});
  PlainArgs a{&x, &qdata, nullptr, &scale, &step, &zero, &step, 64};
  CHECK(why_not(check_plain_mm(4, a)) == "the tensors are not all on the GPU");  // everything else is right
  a.group = 48;
  CHECK(why_not(check_plain_mm(4, a)).find("group_size 48; expected a power of 2") == 0);
  a.group = 64;
  Tensor x_float = made(ScalarType::Float, {2, 512});
  a.x = &x_float;
  CHECK(why_not(check_plain_mm(4, a)).find("self float32 [2, 512]") == 0);
  Tensor x_short = made(ScalarType::BFloat16, {2, 320});
  a.x = &x_short;
  CHECK(why_not(check_plain_mm(4, a)).find("k = 320; expected a multiple of 256") == 0);
  a.x = &x;
  Tensor scale_wrong = made(ScalarType::Byte, {16, 4});
  a.scale = &scale_wrong;
  CHECK(why_not(check_plain_mm(4, a)).find("scale uint8 [16, 4]") == 0);
  CHECK(why_not(check_plain_mm(4, a)).find("expected a contiguous uint8 or int8 [16, 8] ([n, k/group_size])") != std::string::npos);
  a.scale = &scale;
  Tensor step_f32 = made(ScalarType::Float, {16, 2});
  a.zero_step = &step_f32;
  CHECK(why_not(check_plain_mm(4, a)).find("zero_point_step float32") == 0);

  // int5 and int6 need their high planes; int6's scale codes are int8.
  Tensor qh5 = made(ScalarType::Byte, {16, 64});
  PlainArgs five{&x, &qdata, &qh5, &scale, &step, &zero, &step, 64};
  CHECK(why_not(check_plain_mm(5, five)) == "the tensors are not all on the GPU");
  five.qh = &qdata;
  CHECK(why_not(check_plain_mm(5, five)).find("qh uint8 [16, 256]") == 0);
  Tensor qh6 = made(ScalarType::Byte, {16, 128});
  Tensor scale6 = made(ScalarType::Char, {16, 32});
  PlainArgs six{&x, &qdata, &qh6, &scale6, &step, nullptr, nullptr, 16};
  CHECK(why_not(check_plain_mm(6, six)) == "the tensors are not all on the GPU");
  six.scale = &scale;
  CHECK(why_not(check_plain_mm(6, six)).find("scale uint8 [16, 8]") == 0);

  // int8: k need not be a multiple of 256, only of the group.
  Tensor x96 = made(ScalarType::BFloat16, {2, 96});
  Tensor q8 = made(ScalarType::Char, {16, 96});
  Tensor scale8 = made(ScalarType::BFloat16, {16, 3});
  Tensor zero8 = made(ScalarType::Char, {16, 3});
  PlainArgs eight{&x96, &q8, nullptr, &scale8, nullptr, &zero8, nullptr, 32};
  CHECK(why_not(check_plain_mm(8, eight)) == "the tensors are not all on the GPU");
  eight.group = 48;
  CHECK(why_not(check_plain_mm(8, eight)).find("group_size 48; expected a multiple of 32") == 0);
}

TEST_CASE("plain mm shims: refuse null handles, and a call with ExecuTorch's earlier int4 and int6 signatures") {
  AtenTensorHandle out = nullptr;
  // Before 2026-07-09, int4_plain_mm took (self, qdata, scale, zero,
  // group_size, ret0): where the current signature takes the zero, such a
  // library passes group_size. It must be refused without reading any
  // tensor (these are not tensors) or writing the return slot.
  auto fake = [](uintptr_t value) { return reinterpret_cast<AtenTensorHandle>(value); };
  AtenTensorHandle untouched = fake(0x1234567);
  CHECK(aoti_torch_cuda_int4_plain_mm(fake(0x7000000), fake(0x7000100), fake(0x7000200), fake(0x7000300), fake(128),
                                      fake(0x7000400), 0, &untouched) == kShimFailure);
  CHECK(untouched == fake(0x1234567));
  // int6_plain_mm took (self, ql, qh, scale, group_size, ret0).
  CHECK(aoti_torch_cuda_int6_plain_mm(fake(0x7000000), fake(0x7000100), fake(0x7000200), fake(0x7000300), fake(16), 0,
                                      &untouched) == kShimFailure);
  CHECK(untouched == fake(0x1234567));
  CHECK(aoti_torch_cuda_int8_plain_mm(nullptr, nullptr, nullptr, nullptr, 32, &out) == kShimFailure);
  CHECK(aoti_torch_cuda_int6_plain_mm(nullptr, nullptr, nullptr, nullptr, nullptr, 16, &out) == kShimFailure);
  CHECK(out == nullptr);
}

#else

TEST_CASE("plain layouts") {
  ptb::test::skip("this build has no built-in runtime core (the CUDA toolkit was not found)");
}

#endif

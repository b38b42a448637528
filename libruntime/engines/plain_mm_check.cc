#include "engines/plain_mm.h"

#include <vector>

#include "ptbundle/base/text.h"
#include "engines/tensor.h"

namespace ptb::builtin {
namespace {

// What is wrong with `t` as the argument `name`, which should be a
// contiguous tensor of `dtype` (or `other`, where not -1) and `sizes`.
Status expect(const Tensor& t, const char* name, int32_t dtype, int32_t other, const std::vector<int64_t>& sizes,
              const char* shape) {
  if ((t.dtype == dtype || t.dtype == other) && t.sizes == sizes && t.is_contiguous()) return {};
  std::string want = scalar_type_name(dtype);
  if (other >= 0) want += " or " + std::string(scalar_type_name(other));
  return invalid(std::string(name) + " " + tensor_text(t) + "; expected a contiguous " + want + " " +
                 shape_text(sizes) + " (" + shape + ")");
}

Status on_gpu(const PlainArgs& a) {
  for (const Tensor* t : {a.x, a.ql, a.qh, a.scale, a.scale_step, a.zero, a.zero_step}) {
    if (t && t->storage->device_type != kDeviceCuda) return invalid("the tensors are not all on the GPU");
  }
  return {};
}

}  // namespace

Status check_plain_mm(int bits, const PlainArgs& a) {
  const Tensor& x = *a.x;
  if (x.dtype != ScalarType::BFloat16 || x.sizes.size() != 2) {
    return invalid("self " + tensor_text(x) + "; expected bfloat16 [m, k]");
  }
  const int64_t k = x.sizes[1];
  if (a.ql->sizes.size() != 2) return invalid("the weights " + tensor_text(*a.ql) + "; expected 2 dimensions");
  const int64_t n = a.ql->sizes[0];
  const int64_t g = a.group;
  const bool group_ok = bits == 4 ? g >= 8 && (g & (g - 1)) == 0 : bits == 6 ? g >= 8 && g % 8 == 0 : g >= 32 && g % 32 == 0;
  if (!group_ok) {
    return invalid("group_size " + std::to_string(g) + "; expected " +
                   (bits == 4 ? "a power of 2" : bits == 6 ? "a multiple of 8" : "a multiple of 32"));
  }
  if (bits != 8 && k % 256 != 0) {
    return invalid("k = " + std::to_string(k) + "; expected a multiple of 256 (the fp16 steps cover 256 weights)");
  }
  if (k % g != 0) return invalid("k = " + std::to_string(k) + " is not a whole number of groups of " + std::to_string(g));
  if (k >= (int64_t{1} << 31) || n >= (int64_t{1} << 31)) return invalid("the weights are too large here");
  const std::vector<int64_t> groups = {n, k / g}, steps = {n, k / 256};
  constexpr int32_t kU8 = ScalarType::Byte, kI8 = ScalarType::Char, kF16 = ScalarType::Half,
                    kBf16 = ScalarType::BFloat16;
  if (bits == 8) {
    PTB_CHECK(expect(*a.ql, "qdata", kI8, -1, {n, k}, "[n, k]"));
    PTB_CHECK(expect(*a.scale, "scale", kBf16, -1, groups, "[n, k/group_size]"));
    PTB_CHECK(expect(*a.zero, "zero", kI8, -1, groups, "[n, k/group_size]"));
    return on_gpu(a);
  }
  PTB_CHECK(expect(*a.ql, bits == 4 ? "qdata" : "ql", kU8, -1, {n, k / 2}, "[n, k/2]"));
  if (bits == 5) PTB_CHECK(expect(*a.qh, "qh", kU8, -1, {n, k / 8}, "[n, k/8]"));
  if (bits == 6) PTB_CHECK(expect(*a.qh, "qh", kU8, -1, {n, k / 4}, "[n, k/4]"));
  // ExecuTorch's int4 reads signed codes' bits as unsigned; so does this.
  PTB_CHECK(expect(*a.scale, "scale", bits == 6 ? kI8 : kU8, bits == 4 ? kI8 : -1, groups, "[n, k/group_size]"));
  PTB_CHECK(expect(*a.scale_step, bits == 6 ? "steps" : "scale_step", kF16, -1, steps, "[n, k/256]"));
  if (bits == 6) return on_gpu(a);
  PTB_CHECK(expect(*a.zero, "zero", kU8, bits == 4 ? kI8 : -1, groups, "[n, k/group_size]"));
  PTB_CHECK(expect(*a.zero_step, "zero_point_step", kF16, -1, steps, "[n, k/256]"));
  return on_gpu(a);
}

}  // namespace ptb::builtin

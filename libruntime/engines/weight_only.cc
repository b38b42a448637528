// Shared by the weight-only products (weight_only.h).
#include "engines/weight_only.h"

#include "engines/gemm.h"

namespace ptb::builtin {

Result<Tensor> weight_only_output(const Tensor& x, int64_t n) {
  const int64_t m = x.sizes[0];
  if ((m + 7) / 8 > 65535) return invalid("self has " + std::to_string(m) + " rows; at most 524280 here");
  return empty_cuda({m, n}, ScalarType::BFloat16, x.storage->device_index);
}

Status times_transposed(const Tensor& x, const Tensor& w, const Tensor& out) {
  Tensor w_t = w;  // [k, n]: the weights transposed, as a view
  w_t.sizes = {w.sizes[1], w.sizes[0]};
  w_t.strides = {1, w.sizes[1]};
  return matmul(out, x, w_t, 1.0, 0.0);
}

}  // namespace ptb::builtin

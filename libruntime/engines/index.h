// Indexing on the GPU (index.cc), as ATen computes it: advanced indexing,
// index_put, nonzero and scatter. A null entry of `indices` stands for None
// (a whole dimension); a boolean index is a mask. Indices out of range read
// zeros and write nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

// nonzero: a new [count, dims] int64 tensor of the positions of self's
// nonzero elements.
Result<Tensor> find_nonzero(const Tensor& self);

// self[indices]: a new tensor.
Result<Tensor> gather_index(const Tensor& self, const std::vector<const Tensor*>& indices);

// A copy of self with self[indices] = values (+= with `accumulate`).
Result<Tensor> put_index(const Tensor& self, const std::vector<const Tensor*>& indices, const Tensor& values,
                         bool accumulate);

// out = self (unless they are one view), then out[indices] = values (+=
// with `accumulate`).
Status put_index_into(const Tensor& out, const Tensor& self, const std::vector<const Tensor*>& indices,
                      const Tensor& values, bool accumulate);

// out = self, then out[..., index[i][j], ...] (at `dim`) takes src[i][j] or
// `value` (src null), combined by `reduce_name` (null: replaced; sum, prod,
// mean, amax or amin), self's values left out of the reduction unless
// `include_self`.
Status scatter_into(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                    double value, const char* reduce_name, bool include_self);

}  // namespace ptb::builtin

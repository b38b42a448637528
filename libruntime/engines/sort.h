// Sorting along one dimension (sort.cc), for sort, sort_stable and topk.
#pragma once

#include <cstdint>
#include <optional>

#include "engines/tensor.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

struct Sorted {
  Tensor values, indices;  // new contiguous GPU tensors; indices int64
};

// The first `keep` (all, without it) of each row of `self` along `dim`,
// sorted ascending or descending; equal keys keep their order, NaN sorts
// above every number, as in ATen.
Result<Sorted> sort_rows(const Tensor& self, int64_t dim, bool descending, std::optional<int64_t> keep);

}  // namespace ptb::builtin

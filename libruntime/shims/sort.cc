// The sort family of the shim table: sort, sort_stable and topk
// (engines/sort.h sorts the rows).
#include <optional>
#include <utility>

#include "engines/sort.h"
#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

AOTITorchError sort_shim(const char* function, AtenTensorHandle self, int64_t dim, bool descending,
                         std::optional<int64_t> keep, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  PTB_NEED(self, function);
  if (!ret0 || !ret1) return fail(function, "no place for the results");
  auto sorted = sort_rows(*tensor_of(self), dim, descending, keep);
  if (!sorted.ok()) return fail(function, sorted.error().message);
  if (hand_to_library(function, std::move(sorted->values), ret0) != kShimSuccess) return kShimFailure;
  return hand_to_library(function, std::move(sorted->indices), ret1);
}

}  // namespace

AOTITorchError aoti_torch_cuda_sort(AtenTensorHandle self, int64_t dim, int32_t descending, AtenTensorHandle* ret0,
                                    AtenTensorHandle* ret1) {
  return sort_shim("aoti_torch_cuda_sort", self, dim, descending != 0, std::nullopt, ret0, ret1);
}

// Stable or not, the sort is stable: an unstable sort may return any order
// of equal keys, this one among them.
AOTITorchError aoti_torch_cuda_sort_stable(AtenTensorHandle self, int32_t* /*stable*/, int64_t dim,
                                           int32_t descending, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return sort_shim("aoti_torch_cuda_sort_stable", self, dim, descending != 0, std::nullopt, ret0, ret1);
}

// Sorted or not, the k come out in order: ATen leaves the order of an
// unsorted topk unspecified.
AOTITorchError aoti_torch_cuda_topk(AtenTensorHandle self, int64_t k, int64_t dim, int32_t largest,
                                    int32_t /*sorted*/, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  return sort_shim("aoti_torch_cuda_topk", self, dim, largest != 0, k, ret0, ret1);
}

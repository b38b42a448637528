// The index family of the shim table: advanced indexing (index_Tensor),
// index_put with and without accumulation, nonzero, and scatter with a
// tensor or a value source and its reductions (engines/index.h computes
// them).
#include <string>
#include <utility>
#include <vector>

#include "engines/index.h"
#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

std::vector<const Tensor*> index_list(const AtenTensorHandle* handles, int64_t count) {
  std::vector<const Tensor*> list;
  for (int64_t i = 0; i < count; ++i) list.push_back(handles[i] ? tensor_of(handles[i]) : nullptr);
  return list;
}

AOTITorchError scatter_shim(const char* function, AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                            AtenTensorHandle index, AtenTensorHandle src, double value, const char* reduce_name,
                            bool include_self) {
  PTB_NEED(out, function);
  PTB_NEED(self, function);
  PTB_NEED(index, function);
  return finish(function, scatter_into(*tensor_of(out), *tensor_of(self), dim, *tensor_of(index),
                                       src ? tensor_of(src) : nullptr, value, reduce_name, include_self));
}

}  // namespace

AOTITorchError aoti_torch_cuda_nonzero(AtenTensorHandle self, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_nonzero";
  PTB_NEED(self, function);
  auto result = find_nonzero(*tensor_of(self));
  if (!result.ok()) return fail(function, result.error().message);
  return hand_to_library(function, std::move(*result), ret0);
}

AOTITorchError aoti_torch_cuda_index_Tensor(AtenTensorHandle self, const AtenTensorHandle** indices,
                                            int64_t indices_len, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_index_Tensor";
  PTB_NEED(self, function);
  if (indices_len < 0 || (indices_len > 0 && !indices)) return fail(function, "no index list");
  // Each entry points at a handle, or is null for None.
  std::vector<const Tensor*> list;
  for (int64_t i = 0; i < indices_len; ++i) list.push_back(indices[i] && *indices[i] ? tensor_of(*indices[i]) : nullptr);
  auto result = gather_index(*tensor_of(self), list);
  if (!result.ok()) return fail(function, result.error().message);
  return hand_to_library(function, std::move(*result), ret0);
}

AOTITorchError aoti_torch_cuda_index_put(AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len,
                                         AtenTensorHandle values, int32_t accumulate, AtenTensorHandle* ret0) {
  const char* function = "aoti_torch_cuda_index_put";
  PTB_NEED(self, function);
  PTB_NEED(values, function);
  if (indices_len < 0 || (indices_len > 0 && !indices)) return fail(function, "no index list");
  std::vector<const Tensor*> list;
  for (int64_t i = 0; i < indices_len; ++i) list.push_back(indices[i] && *indices[i] ? tensor_of(*indices[i]) : nullptr);
  auto result = put_index(*tensor_of(self), list, *tensor_of(values), accumulate != 0);
  if (!result.ok()) return fail(function, result.error().message);
  return hand_to_library(function, std::move(*result), ret0);
}

AOTITorchError aoti_torch_index_put_out(AtenTensorHandle out, AtenTensorHandle self, const AtenTensorHandle* indices,
                                        const uint32_t num_indices, const AtenTensorHandle values, bool accumulate) {
  const char* function = "aoti_torch_index_put_out";
  PTB_NEED(out, function);
  PTB_NEED(self, function);
  PTB_NEED(values, function);
  if (num_indices > 0 && !indices) return fail(function, "no index list");
  return finish(function, put_index_into(*tensor_of(out), *tensor_of(self), index_list(indices, num_indices),
                                         *tensor_of(values), accumulate));
}

AOTITorchError aoti_torch_cuda_scatter_src_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                               AtenTensorHandle index, AtenTensorHandle src) {
  PTB_NEED(src, "aoti_torch_cuda_scatter_src_out");
  return scatter_shim("aoti_torch_cuda_scatter_src_out", out, self, dim, index, src, 0, nullptr, true);
}

AOTITorchError aoti_torch_scatter_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                      AtenTensorHandle index, AtenTensorHandle src) {
  PTB_NEED(src, "aoti_torch_scatter_out");
  return scatter_shim("aoti_torch_scatter_out", out, self, dim, index, src, 0, nullptr, true);
}

AOTITorchError aoti_torch_cuda_scatter_value_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                                 AtenTensorHandle index, double value) {
  return scatter_shim("aoti_torch_cuda_scatter_value_out", out, self, dim, index, nullptr, value, nullptr, true);
}

AOTITorchError aoti_torch_cuda_scatter_reduce_two_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                                      AtenTensorHandle index, AtenTensorHandle src,
                                                      const char* reduce, int32_t include_self) {
  const char* function = "aoti_torch_cuda_scatter_reduce_two_out";
  PTB_NEED(src, function);
  if (!reduce) return fail(function, "no reduction named");
  return scatter_shim(function, out, self, dim, index, src, 0, reduce, include_self != 0);
}

AOTITorchError aoti_torch_scatter_reduce_out(AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                                             AtenTensorHandle index, AtenTensorHandle src, const char* reduce,
                                             int32_t include_self) {
  const char* function = "aoti_torch_scatter_reduce_out";
  PTB_NEED(src, function);
  if (!reduce) return fail(function, "no reduction named");
  return scatter_shim(function, out, self, dim, index, src, 0, reduce, include_self != 0);
}

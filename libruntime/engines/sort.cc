// Sorting rows for the sort family (sort.h): sort, sort_stable and topk.
// Each row along `dim` is sorted with its positions as values (stable:
// equal keys keep their order, as ATen's stable sort), and the first k of
// each row land in outputs of ATen's shapes. Three routes, one order
// (kernels/sort.h): a small topk selects in registers, short rows sort in
// shared memory, longer rows are copied so that `dim` is innermost and go
// through CUB's segmented sort.
#include "engines/sort.h"

#include <algorithm>
#include <string>

#include "kernels/sort.h"

namespace ptb::builtin {
namespace {

// `tensor` seen with dimension `dim` moved last (a view, no copy).
Tensor dim_last(const Tensor& tensor, size_t dim) {
  Tensor view = tensor;
  view.sizes.erase(view.sizes.begin() + static_cast<std::ptrdiff_t>(dim));
  view.strides.erase(view.strides.begin() + static_cast<std::ptrdiff_t>(dim));
  view.sizes.push_back(tensor.sizes[dim]);
  view.strides.push_back(tensor.strides[dim]);
  return view;
}

// The segmented route: `self`'s rows along `dim` sorted into `values` and
// `indices`, the first `kept` of each.
Status sort_segmented(const Tensor& self, size_t dim, bool descending, int64_t kept, const Tensor& values,
                      const Tensor& indices) {
  const int32_t device = self.storage->device_index;
  const int64_t count = self.numel(), row = self.sizes[dim], rows = count / row;
  const Tensor in_view = dim_last(self, dim);
  PTB_TRY(Tensor keys_in, empty_cuda(in_view.sizes, self.dtype, device));
  PTB_TRY(Tensor keys_out, empty_cuda(in_view.sizes, self.dtype, device));
  PTB_TRY(Tensor positions, empty_cuda(in_view.sizes, ScalarType::Long, device));
  PTB_TRY(Tensor order, empty_cuda(in_view.sizes, ScalarType::Long, device));
  PTB_TRY(Tensor offsets, empty_cuda({rows + 1}, ScalarType::Long, device));
  PTB_TRY(Tensor bits_in, empty_cuda({count}, ScalarType::Long, device));
  PTB_TRY(Tensor bits_out, empty_cuda({count}, ScalarType::Long, device));
  PTB_CHECK(copy_elements(keys_in, in_view));
  cudaStream_t stream = stream_for(self);
  auto* position_data = static_cast<int64_t*>(positions.data());
  auto* offset_data = static_cast<int64_t*>(offsets.data());
  auto* order_data = static_cast<int64_t*>(order.data());
  PTB_CHECK(cuda_checked(kernels::number_rows(position_data, count, row, offset_data, rows, stream)));
  auto sort = [&](void* temp, size_t& bytes) {
    return kernels::sort_row_keys(temp, bytes, keys_in.data(), self.dtype, descending,
                                  static_cast<uint64_t*>(bits_in.data()), static_cast<uint64_t*>(bits_out.data()),
                                  position_data, order_data, count, rows, offset_data, stream);
  };
  size_t temp_bytes = 0;
  PTB_CHECK(cuda_checked(sort(nullptr, temp_bytes)));
  PTB_TRY(auto temp, allocate(std::max<size_t>(temp_bytes, 1), kDeviceCuda, device));
  PTB_CHECK(cuda_checked(sort(temp->data, temp_bytes)));
  PTB_CHECK(cuda_checked(kernels::gather_sorted(keys_in.data(), order_data, row, static_cast<int>(self.itemsize()),
                                                keys_out.data(), count, stream)));
  // The first `kept` of each sorted row, into the outputs' own layout.
  auto first = [&](const Tensor& rows_sorted) {
    Tensor view = rows_sorted;
    view.sizes.back() = kept;
    return view;
  };
  PTB_CHECK(copy_elements(dim_last(values, dim), first(keys_out)));
  return copy_elements(dim_last(indices, dim), first(order));
}

}  // namespace

Result<Sorted> sort_rows(const Tensor& given, int64_t dim_arg, bool descending, std::optional<int64_t> keep) {
  // A 0-d tensor sorts as one row of one element and comes back 0-d.
  const bool scalar = given.sizes.empty();
  Tensor self = given;
  if (scalar) {
    self.sizes = {1};
    self.strides = {1};
  }
  if (!kernels::sortable_dtype(self.dtype)) {
    return invalid("dtype " + std::string(scalar_type_name(self.dtype)) + " is not sortable here");
  }
  const int64_t dims = static_cast<int64_t>(self.sizes.size());
  if (dim_arg < -dims || dim_arg >= dims) {
    return invalid("dim " + std::to_string(dim_arg) + " of a tensor of " + std::to_string(given.sizes.size()) +
                   " dimensions");
  }
  const size_t dim = static_cast<size_t>(dim_arg < 0 ? dim_arg + dims : dim_arg);
  const int64_t row = self.sizes[dim];
  const int64_t kept = keep.value_or(row);
  if (kept < 0 || kept > row) return invalid("k = " + std::to_string(kept) + " of a dimension of size " + std::to_string(row));
  if (self.storage->device_type != kDeviceCuda) return invalid("the tensor is not on the GPU (" + tensor_text(self) + ")");
  std::vector<int64_t> out_sizes = self.sizes;
  out_sizes[dim] = kept;
  const int32_t device = self.storage->device_index;
  Sorted sorted;
  PTB_TRY(sorted.values, empty_cuda(out_sizes, self.dtype, device));
  PTB_TRY(sorted.indices, empty_cuda(out_sizes, ScalarType::Long, device));
  const int64_t count = self.numel();
  kernels::View in_rows, value_rows;
  const bool viewed = kernel_view(dim_last(self, dim), in_rows) && kernel_view(dim_last(sorted.values, dim), value_rows);
  kernels::SortRows a;
  a.rows = row > 0 ? count / row : 0;
  if (viewed) {
    a.in = in_rows.data;
    a.dtype = self.dtype;
    a.itemsize = static_cast<int>(self.itemsize());
    a.in_layout = kernels::layout_of(in_rows);
    a.out_layout = kernels::layout_of(value_rows);
    a.row = row;
    a.step = in_rows.strides[in_rows.dims - 1];
    a.out_step = value_rows.strides[value_rows.dims - 1];
    a.values = sorted.values.data();
    a.indices = static_cast<int64_t*>(sorted.indices.data());  // the values' strides: both are new and contiguous
    a.k = static_cast<int>(kept);
    a.largest = descending;
  }
  if (count > 0 && kept > 0) {
    if (viewed && keep && kept <= kernels::kWarpTopK) {
      PTB_CHECK(cuda_checked(kernels::warp_topk(a, stream_for(self))));
    } else if (viewed && row <= kernels::kBlockSortRow) {
      PTB_CHECK(cuda_checked(kernels::block_sort(a, stream_for(self))));
    } else {
      PTB_CHECK(sort_segmented(self, dim, descending, kept, sorted.values, sorted.indices));
    }
  }
  if (scalar && kept == 1) {
    for (Tensor* out : {&sorted.values, &sorted.indices}) {
      out->sizes.clear();
      out->strides.clear();
    }
  }
  return sorted;
}

}  // namespace ptb::builtin

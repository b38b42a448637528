// The sort family of the shim table: sort, sort_stable and topk, on CUB's
// segmented radix sort. Each row along `dim` is one segment: the rows are
// first copied so that `dim` is innermost, sorted with their positions as
// values (stable: equal keys keep their order, as ATen's stable sort), and
// the first k of each row copied into outputs of ATen's shapes. NaN sorts
// above every number (radix order of the bits), as in ATen.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/device/device_segmented_sort.cuh>

#include "shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((count + kThreads - 1) / kThreads, 4096)));
}

// positions[i] = i % row; offsets[r] = r * row for r in [0, rows].
__global__ void number_rows(int64_t* positions, int64_t count, int64_t row, int64_t* offsets, int64_t rows) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count || i <= rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (i < count) positions[i] = i % row;
    if (i <= rows) offsets[i] = i * row;
  }
}

template <class Key>
cudaError_t sort_pairs(void* temp, size_t& temp_bytes, const void* keys_in, void* keys_out, const int64_t* values_in,
                       int64_t* values_out, int64_t count, int64_t rows, const int64_t* offsets, bool descending,
                       cudaStream_t stream) {
  auto in = static_cast<const Key*>(keys_in);
  auto out = static_cast<Key*>(keys_out);
  if (descending) {
    return cub::DeviceSegmentedSort::StableSortPairsDescending(temp, temp_bytes, in, out, values_in, values_out, count,
                                                               rows, offsets, offsets + 1, stream);
  }
  return cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, in, out, values_in, values_out, count, rows,
                                                   offsets, offsets + 1, stream);
}

using SortFunction = cudaError_t (*)(void*, size_t&, const void*, void*, const int64_t*, int64_t*, int64_t, int64_t,
                                     const int64_t*, bool, cudaStream_t);

SortFunction sort_for(int32_t dtype) {
  switch (dtype) {
    case ScalarType::Float: return sort_pairs<float>;
    case ScalarType::Double: return sort_pairs<double>;
    case ScalarType::Half: return sort_pairs<__half>;
    case ScalarType::BFloat16: return sort_pairs<__nv_bfloat16>;
    case ScalarType::Byte: return sort_pairs<uint8_t>;
    case ScalarType::Char: return sort_pairs<int8_t>;
    case ScalarType::Short: return sort_pairs<int16_t>;
    case ScalarType::Int: return sort_pairs<int32_t>;
    case ScalarType::Long: return sort_pairs<int64_t>;
    case ScalarType::Bool: return sort_pairs<bool>;
    case ScalarType::UInt16: return sort_pairs<uint16_t>;
    case ScalarType::UInt32: return sort_pairs<uint32_t>;
    case ScalarType::UInt64: return sort_pairs<uint64_t>;
    default: return nullptr;
  }
}

// `tensor` seen with dimension `dim` moved last (a view, no copy).
Tensor dim_last(const Tensor& tensor, size_t dim) {
  Tensor view = tensor;
  view.sizes.erase(view.sizes.begin() + static_cast<std::ptrdiff_t>(dim));
  view.strides.erase(view.strides.begin() + static_cast<std::ptrdiff_t>(dim));
  view.sizes.push_back(tensor.sizes[dim]);
  view.strides.push_back(tensor.strides[dim]);
  return view;
}

struct Sorted {
  Tensor values, indices;
};

std::string cuda_text(cudaError_t code) { return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code); }

// The first `keep` of each row of `self` along `dim`, sorted; "" or why not.
std::string sort_rows(const Tensor& given, int64_t dim_arg, bool descending, std::optional<int64_t> keep,
                      Sorted& sorted) {
  // A 0-d tensor sorts as one row of one element and comes back 0-d.
  const bool scalar = given.sizes.empty();
  Tensor self = given;
  if (scalar) {
    self.sizes = {1};
    self.strides = {1};
  }
  SortFunction sort = sort_for(self.dtype);
  if (!sort) return "dtype " + std::string(scalar_type_name(self.dtype)) + " is not sortable here";
  const int64_t dims = static_cast<int64_t>(self.sizes.size());
  if (dim_arg < -dims || dim_arg >= dims) {
    return "dim " + std::to_string(dim_arg) + " of a tensor of " + std::to_string(given.sizes.size()) + " dimensions";
  }
  const size_t dim = static_cast<size_t>(dim_arg < 0 ? dim_arg + dims : dim_arg);
  const int64_t row = self.sizes[dim];
  const int64_t kept = keep.value_or(row);
  if (kept < 0 || kept > row) {
    return "k = " + std::to_string(kept) + " of a dimension of size " + std::to_string(row);
  }
  if (self.storage->device_type != kDeviceCuda) return "the tensor is not on the GPU (" + tensor_text(self) + ")";
  std::vector<int64_t> out_sizes = self.sizes;
  out_sizes[dim] = kept;
  std::string why;
  const int32_t device = self.storage->device_index;
  auto values = empty_cuda(out_sizes, self.dtype, device, why);
  if (!values) return why;
  auto indices = empty_cuda(out_sizes, ScalarType::Long, device, why);
  if (!indices) return why;
  const int64_t count = self.numel();
  if (count > 0 && kept > 0) {
    const int64_t rows = count / row;
    const Tensor in_view = dim_last(self, dim);
    auto keys_in = empty_cuda(in_view.sizes, self.dtype, device, why);
    auto keys_out = keys_in ? empty_cuda(in_view.sizes, self.dtype, device, why) : std::nullopt;
    auto positions = keys_out ? empty_cuda(in_view.sizes, ScalarType::Long, device, why) : std::nullopt;
    auto order = positions ? empty_cuda(in_view.sizes, ScalarType::Long, device, why) : std::nullopt;
    auto offsets = order ? empty_cuda({rows + 1}, ScalarType::Long, device, why) : std::nullopt;
    if (!offsets) return why;
    why = copy_elements(*keys_in, in_view);
    if (!why.empty()) return why;
    cudaStream_t stream = stream_for(self);
    auto* position_data = static_cast<int64_t*>(positions->data());
    auto* offset_data = static_cast<int64_t*>(offsets->data());
    number_rows<<<blocks_for(std::max(count, rows + 1)), kThreads, 0, stream>>>(position_data, count, row,
                                                                                offset_data, rows);
    cudaError_t code = cudaGetLastError();
    size_t temp_bytes = 0;
    if (code == cudaSuccess) {
      code = sort(nullptr, temp_bytes, keys_in->data(), keys_out->data(), position_data,
                  static_cast<int64_t*>(order->data()), count, rows, offset_data, descending, stream);
    }
    if (code != cudaSuccess) return cuda_text(code);
    auto temp = allocate(std::max<size_t>(temp_bytes, 1), kDeviceCuda, device, why);
    if (!temp) return why;
    code = sort(temp->data, temp_bytes, keys_in->data(), keys_out->data(), position_data,
                static_cast<int64_t*>(order->data()), count, rows, offset_data, descending, stream);
    if (code != cudaSuccess) return cuda_text(code);
    // The first `kept` of each sorted row, into the outputs' own layout.
    auto first = [&](const Tensor& rows_sorted) {
      Tensor view = rows_sorted;
      view.sizes.back() = kept;
      return view;
    };
    why = copy_elements(dim_last(*values, dim), first(*keys_out));
    if (why.empty()) why = copy_elements(dim_last(*indices, dim), first(*order));
    if (!why.empty()) return why;
  }
  if (scalar && kept == 1) {
    for (Tensor* out : {&*values, &*indices}) {
      out->sizes.clear();
      out->strides.clear();
    }
  }
  sorted.values = std::move(*values);
  sorted.indices = std::move(*indices);
  return "";
}

AOTITorchError sort_shim(const char* function, AtenTensorHandle self, int64_t dim, bool descending,
                         std::optional<int64_t> keep, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  PTB_NEED(self, function);
  if (!ret0 || !ret1) return fail(function, "no place for the results");
  Sorted sorted;
  std::string why = sort_rows(*tensor_of(self), dim, descending, keep, sorted);
  if (!why.empty()) return fail(function, why);
  if (hand_to_library(function, std::move(sorted.values), ret0) != kShimSuccess) return kShimFailure;
  return hand_to_library(function, std::move(sorted.indices), ret1);
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

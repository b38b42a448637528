// Sorting rows for the sort family (sort.h): sort, sort_stable and topk, on
// CUB's segmented radix sort. Each row along `dim` is one segment: the rows are
// first copied so that `dim` is innermost, sorted with their positions as
// values (stable: equal keys keep their order, as ATen's stable sort), and
// the first k of each row copied into outputs of ATen's shapes. NaN sorts
// above every number (radix order of the bits), as in ATen.
//
// Two paths skip the segmented sort and its copies, in the same order (equal
// keys: the lower index first): a topk of k <= kWarpTopK (a mixture-of-
// experts router's top-1 to top-8) selects in registers, one warp per row;
// rows of up to kBlockSortRow elements sort in shared memory, one block per
// row (a bitonic network over (key, index) pairs, which the index makes a
// total order, so the result is the stable one).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/device/device_segmented_sort.cuh>

#include "engines/sort.h"
#include "kernels/element_access.cuh"

using namespace ptb;
using namespace ptb::builtin;

namespace {

// The tensor `made` holds, or nullopt with its error's message in `why`.
std::optional<Tensor> made_or_why(Result<Tensor> made, std::string& why) {
  if (made) return std::move(*made);
  why = made.error().message;
  return std::nullopt;
}

// "" or the status's message, for this file's ""-or-why helpers.
std::string text_of(const Status& status) { return status.ok() ? "" : status.error().message; }

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

// Keys as unsigned integers in the same order (Sedgewick's trick): floats
// with the sign bit set have every bit flipped, others only the sign bit;
// signed integers the sign bit. NaN maps above +inf, as ATen sorts it. A
// descending sort is an ascending one of the flipped key, which keeps equal
// keys in order, so one stable ascending sort of 64-bit keys serves every
// dtype: CUB's segmented sort costs about 15 s of nvcc per instantiation and
// GPU architecture, and one instantiation, not 26, keeps the build short.
template <class Bits>
__device__ Bits float_order(Bits bits, Bits sign, bool nan) {
  if (nan) return static_cast<Bits>(~Bits(0));
  return (bits & sign) ? static_cast<Bits>(~bits) : static_cast<Bits>(bits | sign);
}

__device__ uint64_t ordered_key(const void* keys, int64_t i, int32_t dtype) {
  switch (dtype) {
    case ScalarType::Float: {
      const float v = static_cast<const float*>(keys)[i];
      return float_order<uint32_t>(__float_as_uint(v), 0x80000000u, v != v);
    }
    case ScalarType::Double: {
      const double v = static_cast<const double*>(keys)[i];
      return float_order<uint64_t>(static_cast<uint64_t>(__double_as_longlong(v)), 1ull << 63, v != v);
    }
    case ScalarType::Half: {
      const __half v = static_cast<const __half*>(keys)[i];
      return float_order<uint16_t>(__half_as_ushort(v), 0x8000, __hisnan(v));
    }
    case ScalarType::BFloat16: {
      const __nv_bfloat16 v = static_cast<const __nv_bfloat16*>(keys)[i];
      return float_order<uint16_t>(__bfloat16_as_ushort(v), 0x8000, __hisnan(v));
    }
    case ScalarType::Byte: case ScalarType::Bool: return static_cast<const uint8_t*>(keys)[i];
    case ScalarType::Char: return static_cast<uint8_t>(static_cast<const int8_t*>(keys)[i]) ^ 0x80u;
    case ScalarType::Short: return static_cast<uint16_t>(static_cast<const int16_t*>(keys)[i]) ^ 0x8000u;
    case ScalarType::Int: return static_cast<uint32_t>(static_cast<const int32_t*>(keys)[i]) ^ 0x80000000u;
    case ScalarType::Long: return static_cast<uint64_t>(static_cast<const int64_t*>(keys)[i]) ^ (1ull << 63);
    case ScalarType::UInt16: return static_cast<const uint16_t*>(keys)[i];
    case ScalarType::UInt32: return static_cast<const uint32_t*>(keys)[i];
    default: return static_cast<const uint64_t*>(keys)[i];
  }
}

template <class Bits>
__global__ void make_keys(const void* keys, int32_t dtype, bool descending, Bits* out, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Bits key = static_cast<Bits>(ordered_key(keys, i, dtype));
    out[i] = descending ? static_cast<Bits>(~key) : key;
  }
}

// values[i] = keys[the start of i's row + order[i]]: the sorted keys,
// element for element as they were (NaN payloads and -0.0 kept).
__global__ void gather_sorted(const void* keys, const int64_t* order, int64_t row, int itemsize, void* values,
                              int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t from = (i / row) * row + order[i];
    const char* src = static_cast<const char*>(keys) + from * itemsize;
    char* dst = static_cast<char*>(values) + i * itemsize;
    for (int b = 0; b < itemsize; ++b) dst[b] = src[b];
  }
}

// Keys of `bits` bytes made from `keys_in`, sorted with their positions.
template <class Bits>
cudaError_t sort_bits(const void* keys_in, int32_t dtype, bool descending, void* bits_in, void* bits_out,
                      const int64_t* positions, int64_t* order, int64_t count, int64_t rows,
                      const int64_t* offsets, int32_t device, cudaStream_t stream, std::string& why) {
  make_keys<Bits><<<blocks_for(count), kThreads, 0, stream>>>(keys_in, dtype, descending, static_cast<Bits*>(bits_in),
                                                              count);
  cudaError_t code = cudaGetLastError();
  if (code != cudaSuccess) return code;
  auto run = [&](void* temp, size_t& bytes) {
    return cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, static_cast<const Bits*>(bits_in),
                                                     static_cast<Bits*>(bits_out), positions, order, count, rows,
                                                     offsets, offsets + 1, stream);
  };
  size_t temp_bytes = 0;
  code = run(nullptr, temp_bytes);
  if (code != cudaSuccess) return code;
  auto temp = allocate(std::max<size_t>(temp_bytes, 1), kDeviceCuda, device);
  if (!temp) {
    why = temp.error().message;
    return cudaErrorMemoryAllocation;
  }
  return run((*temp)->data, temp_bytes);
}

constexpr int kWarpTopK = 8;

// One candidate of a row: its order key (largest first) and its position;
// (0, INT64_MAX) is an empty slot, below every element.
struct Candidate {
  uint64_t key;
  int64_t index;
};

__device__ inline bool before(const Candidate& a, const Candidate& b) {
  return a.key > b.key || (a.key == b.key && a.index < b.index);
}

// The rows the two kernels below sort or select from, and where the first
// k of each go: the input seen with the sorted dim last (`row` long, `step`
// apart), the outputs (values and indices share their strides) likewise.
struct SortRows {
  const void* in = nullptr;
  int32_t dtype = 0;
  int itemsize = 0;
  kernels::Layout in_layout, out_layout;
  int64_t row = 0, step = 0, out_step = 0, rows = 0;
  void* values = nullptr;
  int64_t* indices = nullptr;
  int k = 0;
  bool largest = true;
};

// The first `a.k` of row r, in order, from its positions `from(j)`.
template <class From>
__device__ void write_first(const SortRows& a, int64_t r, int64_t first, int j, From from) {
  const int64_t at = kernels::offset_of(r * a.k, a.out_layout) + j * a.out_step;
  const int64_t position = from(j);
  kernels::store_bits(a.values, at, a.itemsize, kernels::load_bits(a.in, first + position * a.step, a.itemsize));
  a.indices[at] = position;
}

// Each lane keeps the best kWarpTopK of its share of the row, in order; the
// warp then takes the best head k times. k <= kWarpTopK, so no lane can hold
// more of the answer than it kept.
__global__ void warp_topk(SortRows a) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32; r < a.rows; r += warps) {
    const int64_t first = kernels::offset_of(r * a.row, a.in_layout);
    Candidate kept[kWarpTopK];
#pragma unroll
    for (int j = 0; j < kWarpTopK; ++j) kept[j] = {0, INT64_MAX};
    for (int64_t i = lane; i < a.row; i += 32) {
      const uint64_t order = ordered_key(a.in, first + i * a.step, a.dtype);
      Candidate c{a.largest ? order : ~order, i};
#pragma unroll
      for (int j = 0; j < kWarpTopK; ++j) {
        if (before(c, kept[j])) {
          const Candidate t = kept[j];
          kept[j] = c;
          c = t;
        }
      }
    }
    for (int j = 0; j < a.k; ++j) {
      Candidate best = kept[0];
      for (int offset = 16; offset > 0; offset /= 2) {
        Candidate other{__shfl_xor_sync(0xffffffffu, best.key, offset),
                        __shfl_xor_sync(0xffffffffu, best.index, offset)};
        if (before(other, best)) best = other;
      }
      if (kept[0].index == best.index) {
#pragma unroll
        for (int t = 0; t + 1 < kWarpTopK; ++t) kept[t] = kept[t + 1];
        kept[kWarpTopK - 1] = {0, INT64_MAX};
      }
      if (lane == 0) write_first(a, r, first, j, [&](int) { return best.index; });
    }
  }
}

constexpr int kBlockSortRow = 2048;

// Rows (at most kBlockSortRow long) sorted, the first k of each written.
__global__ void block_sort(SortRows a) {
  __shared__ uint64_t keys[kBlockSortRow];
  __shared__ int32_t positions[kBlockSortRow];
  int width = 1;
  while (width < a.row) width *= 2;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int64_t first = kernels::offset_of(r * a.row, a.in_layout);
    __syncthreads();  // the last row's reads of the shared arrays are done
    for (int i = threadIdx.x; i < width; i += blockDim.x) {
      if (i < a.row) {
        const uint64_t order = ordered_key(a.in, first + i * a.step, a.dtype);
        keys[i] = a.largest ? order : ~order;
        positions[i] = i;
      } else {
        keys[i] = 0;
        positions[i] = INT32_MAX;  // below every element
      }
    }
    __syncthreads();
    for (int size = 2; size <= width; size *= 2) {
      for (int stride = size / 2; stride > 0; stride /= 2) {
        for (int i = threadIdx.x; i < width; i += blockDim.x) {
          const int j = i ^ stride;
          if (j <= i) continue;
          const Candidate low{keys[i], positions[i]}, high{keys[j], positions[j]};
          // Ascending runs put the best first; the network's descending runs the reverse.
          if ((i & size) == 0 ? before(high, low) : before(low, high)) {
            keys[i] = high.key;
            positions[i] = static_cast<int32_t>(high.index);
            keys[j] = low.key;
            positions[j] = static_cast<int32_t>(low.index);
          }
        }
        __syncthreads();
      }
    }
    for (int j = threadIdx.x; j < a.k; j += blockDim.x) write_first(a, r, first, j, [&](int rank) { return positions[rank]; });
  }
}

bool sortable(int32_t dtype) {
  switch (dtype) {
    case ScalarType::Byte: case ScalarType::Bool: case ScalarType::Char: case ScalarType::Short:
    case ScalarType::Half: case ScalarType::BFloat16: case ScalarType::UInt16: case ScalarType::Float:
    case ScalarType::Int: case ScalarType::UInt32: case ScalarType::Double: case ScalarType::Long:
    case ScalarType::UInt64:
      return true;
    default:
      return false;
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

std::string cuda_text(cudaError_t code) { return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code); }

// The first `keep` of each row of `self` along `dim`, sorted; "" or why not.
std::string sort_rows_into(const Tensor& given, int64_t dim_arg, bool descending, std::optional<int64_t> keep,
                           Sorted& sorted) {
  // A 0-d tensor sorts as one row of one element and comes back 0-d.
  const bool scalar = given.sizes.empty();
  Tensor self = given;
  if (scalar) {
    self.sizes = {1};
    self.strides = {1};
  }
  if (!sortable(self.dtype)) return "dtype " + std::string(scalar_type_name(self.dtype)) + " is not sortable here";
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
  auto values = made_or_why(empty_cuda(out_sizes, self.dtype, device), why);
  if (!values) return why;
  auto indices = made_or_why(empty_cuda(out_sizes, ScalarType::Long, device), why);
  if (!indices) return why;
  const int64_t count = self.numel();
  kernels::View in_rows, value_rows;
  const bool viewed = kernel_view(dim_last(self, dim), in_rows) && kernel_view(dim_last(*values, dim), value_rows);
  SortRows a;
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
    a.values = values->data();
    a.indices = static_cast<int64_t*>(indices->data());  // the values' strides: both are new and contiguous
    a.k = static_cast<int>(kept);
    a.largest = descending;
  }
  if (count > 0 && kept > 0 && viewed && keep && kept <= kWarpTopK) {
    constexpr int kRowsPerBlock = kThreads / 32;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((a.rows + kRowsPerBlock - 1) / kRowsPerBlock, 1 << 20));
    warp_topk<<<blocks, kThreads, 0, stream_for(self)>>>(a);
    if (cudaError_t code = cudaGetLastError(); code != cudaSuccess) return cuda_text(code);
  } else if (count > 0 && kept > 0 && viewed && row <= kBlockSortRow) {
    int threads = 32;
    while (threads < 1024 && threads * 2 < row) threads *= 2;  // half the padded row: one pair each
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(a.rows, 1 << 20));
    block_sort<<<blocks, threads, 0, stream_for(self)>>>(a);
    if (cudaError_t code = cudaGetLastError(); code != cudaSuccess) return cuda_text(code);
  } else if (count > 0 && kept > 0) {
    const int64_t rows = a.rows;
    const Tensor in_view = dim_last(self, dim);
    auto keys_in = made_or_why(empty_cuda(in_view.sizes, self.dtype, device), why);
    auto keys_out = keys_in ? made_or_why(empty_cuda(in_view.sizes, self.dtype, device), why) : std::nullopt;
    auto positions = keys_out ? made_or_why(empty_cuda(in_view.sizes, ScalarType::Long, device), why) : std::nullopt;
    auto order = positions ? made_or_why(empty_cuda(in_view.sizes, ScalarType::Long, device), why) : std::nullopt;
    auto offsets = order ? made_or_why(empty_cuda({rows + 1}, ScalarType::Long, device), why) : std::nullopt;
    auto bits_in = offsets ? made_or_why(empty_cuda({count}, ScalarType::Long, device), why) : std::nullopt;
    auto bits_out = bits_in ? made_or_why(empty_cuda({count}, ScalarType::Long, device), why) : std::nullopt;
    if (!bits_out) return why;
    why = text_of(copy_elements(*keys_in, in_view));
    if (!why.empty()) return why;
    cudaStream_t stream = stream_for(self);
    auto* position_data = static_cast<int64_t*>(positions->data());
    auto* offset_data = static_cast<int64_t*>(offsets->data());
    auto* order_data = static_cast<int64_t*>(order->data());
    number_rows<<<blocks_for(std::max(count, rows + 1)), kThreads, 0, stream>>>(position_data, count, row,
                                                                                offset_data, rows);
    cudaError_t code = cudaGetLastError();
    if (code == cudaSuccess) {
      code = sort_bits<uint64_t>(keys_in->data(), self.dtype, descending, bits_in->data(), bits_out->data(), position_data,
                  order_data, count, rows, offset_data, device, stream, why);
    }
    if (code == cudaSuccess) {
      gather_sorted<<<blocks_for(count), kThreads, 0, stream>>>(keys_in->data(), order_data, row,
                                                                static_cast<int>(self.itemsize()), keys_out->data(),
                                                                count);
      code = cudaGetLastError();
    }
    if (code != cudaSuccess) return why.empty() ? cuda_text(code) : why;
    // The first `kept` of each sorted row, into the outputs' own layout.
    auto first = [&](const Tensor& rows_sorted) {
      Tensor view = rows_sorted;
      view.sizes.back() = kept;
      return view;
    };
    why = text_of(copy_elements(dim_last(*values, dim), first(*keys_out)));
    if (why.empty()) why = text_of(copy_elements(dim_last(*indices, dim), first(*order)));
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

}  // namespace

namespace ptb::builtin {

Result<Sorted> sort_rows(const Tensor& self, int64_t dim, bool descending, std::optional<int64_t> keep) {
  Sorted sorted;
  if (std::string why = sort_rows_into(self, dim, descending, keep, sorted); !why.empty()) return invalid(why);
  return sorted;
}

}  // namespace ptb::builtin

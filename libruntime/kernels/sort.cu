// The sort family's kernels (sort.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/device/device_segmented_sort.cuh>

#include "kernels/element_access.cuh"
#include "kernels/sort.h"

namespace ptb::builtin::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((count + kThreads - 1) / kThreads, 4096)));
}

// positions[i] = i % row; offsets[r] = r * row for r in [0, rows].
__global__ void number_rows_kernel(int64_t* positions, int64_t count, int64_t row, int64_t* offsets, int64_t rows) {
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
__global__ void gather_sorted_kernel(const void* keys, const int64_t* order, int64_t row, int itemsize, void* values,
                              int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t from = (i / row) * row + order[i];
    const char* src = static_cast<const char*>(keys) + from * itemsize;
    char* dst = static_cast<char*>(values) + i * itemsize;
    for (int b = 0; b < itemsize; ++b) dst[b] = src[b];
  }
}

// One candidate of a row: its order key (largest first) and its position;
// (0, INT64_MAX) is an empty slot, below every element.
struct Candidate {
  uint64_t key;
  int64_t index;
};

__device__ inline bool before(const Candidate& a, const Candidate& b) {
  return a.key > b.key || (a.key == b.key && a.index < b.index);
}

// The first `a.k` of row r, in order, from its positions `from(j)`.
template <class From>
__device__ void write_first(const SortRows& a, int64_t r, int64_t first, int j, From from) {
  const int64_t at = offset_of(r * a.k, a.out_layout) + j * a.out_step;
  const int64_t position = from(j);
  store_bits(a.values, at, a.itemsize, load_bits(a.in, first + position * a.step, a.itemsize));
  a.indices[at] = position;
}

// Each lane keeps the best kWarpTopK of its share of the row, in order; the
// warp then takes the best head k times. k <= kWarpTopK, so no lane can hold
// more of the answer than it kept.
__global__ void warp_topk_kernel(SortRows a) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32; r < a.rows; r += warps) {
    const int64_t first = offset_of(r * a.row, a.in_layout);
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

// Rows (at most kBlockSortRow long) sorted, the first k of each written.
__global__ void block_sort_kernel(SortRows a) {
  __shared__ uint64_t keys[kBlockSortRow];
  __shared__ int32_t positions[kBlockSortRow];
  int width = 1;
  while (width < a.row) width *= 2;
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const int64_t first = offset_of(r * a.row, a.in_layout);
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

}  // namespace

bool sortable_dtype(int32_t dtype) {
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


cudaError_t warp_topk(const SortRows& rows, cudaStream_t stream) {
  constexpr int kRowsPerBlock = kThreads / 32;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((rows.rows + kRowsPerBlock - 1) / kRowsPerBlock, 1 << 20));
  warp_topk_kernel<<<blocks, kThreads, 0, stream>>>(rows);
  return cudaGetLastError();
}

cudaError_t block_sort(const SortRows& rows, cudaStream_t stream) {
  int threads = 32;
  while (threads < 1024 && threads * 2 < rows.row) threads *= 2;  // half the padded row: one pair each
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows.rows, 1 << 20));
  block_sort_kernel<<<blocks, threads, 0, stream>>>(rows);
  return cudaGetLastError();
}

cudaError_t number_rows(int64_t* positions, int64_t count, int64_t row, int64_t* offsets, int64_t rows,
                        cudaStream_t stream) {
  number_rows_kernel<<<blocks_for(std::max(count, rows + 1)), kThreads, 0, stream>>>(positions, count, row, offsets,
                                                                                    rows);
  return cudaGetLastError();
}

cudaError_t sort_row_keys(void* temp, size_t& temp_bytes, const void* keys, int32_t dtype, bool descending,
                          uint64_t* bits_in, uint64_t* bits_out, const int64_t* positions, int64_t* order,
                          int64_t count, int64_t rows, const int64_t* offsets, cudaStream_t stream) {
  if (temp) {
    make_keys<uint64_t><<<blocks_for(count), kThreads, 0, stream>>>(keys, dtype, descending, bits_in, count);
    if (cudaError_t code = cudaGetLastError(); code != cudaSuccess) return code;
  }
  return cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, bits_in, bits_out, positions, order, count, rows,
                                                   offsets, offsets + 1, stream);
}

cudaError_t gather_sorted(const void* keys, const int64_t* order, int64_t row, int itemsize, void* values,
                          int64_t count, cudaStream_t stream) {
  gather_sorted_kernel<<<blocks_for(count), kThreads, 0, stream>>>(keys, order, row, itemsize, values, count);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels

// The sort family's kernels (sort.cu), which engines/sort.cc plans and
// launches. Every dtype sorts through one 64-bit key in the same order
// (floats by Sedgewick's trick, NaN above +inf as in ATen; signed integers
// with the sign bit flipped; descending as the flipped key), and equal keys
// keep their order (the lower index first). Each function launches in order
// on `stream` and returns the launch's error; none synchronizes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace ptb::builtin::kernels {

// A topk of k <= kWarpTopK (a mixture-of-experts router's top-1 to top-8)
// selects in registers, one warp per row.
inline constexpr int kWarpTopK = 8;
// Rows of up to kBlockSortRow elements sort in shared memory, one block per
// row (a bitonic network over (key, index) pairs, which the index makes a
// total order, so the result is the stable one).
inline constexpr int kBlockSortRow = 2048;

// Whether the keys of `dtype` sort here (the real dtypes of up to 8 bytes).
bool sortable_dtype(int32_t dtype);

// The rows warp_topk and block_sort sort or select from, and where the
// first k of each go: the input seen with the sorted dim last (`row` long,
// `step` apart), the outputs (values and indices share their strides)
// likewise.
struct SortRows {
  const void* in = nullptr;
  int32_t dtype = 0;
  int itemsize = 0;
  Layout in_layout, out_layout;
  int64_t row = 0, step = 0, out_step = 0, rows = 0;
  void* values = nullptr;
  int64_t* indices = nullptr;
  int k = 0;
  bool largest = true;
};

// The first rows.k (at most kWarpTopK) of every row, in order.
cudaError_t warp_topk(const SortRows& rows, cudaStream_t stream);

// Every row (at most kBlockSortRow long) sorted, its first rows.k written.
cudaError_t block_sort(const SortRows& rows, cudaStream_t stream);

// The segmented path for longer rows, over `count` contiguous keys in rows
// of `row`: number_rows sets positions[i] = i % row and offsets[r] = r * row
// for r in [0, rows]; sort_row_keys makes each key's 64-bit order key and
// sorts every row's keys with their positions (CUB's segmented stable
// sort), `order` then holding each sorted element's position in its row;
// with `temp` null it only sets `temp_bytes`, the scratch it needs.
// gather_sorted writes values[i] = keys[the start of i's row + order[i]],
// element for element as they were (NaN payloads and -0.0 kept).
cudaError_t number_rows(int64_t* positions, int64_t count, int64_t row, int64_t* offsets, int64_t rows,
                        cudaStream_t stream);
cudaError_t sort_row_keys(void* temp, size_t& temp_bytes, const void* keys, int32_t dtype, bool descending,
                          uint64_t* bits_in, uint64_t* bits_out, const int64_t* positions, int64_t* order,
                          int64_t count, int64_t rows, const int64_t* offsets, cudaStream_t stream);
cudaError_t gather_sorted(const void* keys, const int64_t* order, int64_t row, int itemsize, void* values,
                          int64_t count, cudaStream_t stream);

}  // namespace ptb::builtin::kernels

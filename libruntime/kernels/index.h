// The indexing family's kernels (index.cu), which engines/index.cc plans
// and launches: nonzero's flags, selection and coordinates; advanced
// indexing's gather and put; scatter with its reductions. Each launches in
// order on `stream` and returns the launch's error; none synchronizes.
// Indices out of range read zeros and write nothing: ATen refuses them with
// a device-side assert, which would poison the process's CUDA context.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace ptb::builtin::kernels {

// flags[i] = whether element i (row-major) of the view is nonzero;
// positions[i] = i.
cudaError_t nonzero_flags(const void* data, int32_t dtype, int itemsize, const Layout& shape, int64_t count,
                          uint8_t* flags, int64_t* positions, cudaStream_t stream);

// selected[0, *number) = the positions whose flag is set, in order (CUB's
// DeviceSelect::Flagged). With `temp` null it only sets `temp_bytes`, the
// scratch the call needs.
cudaError_t select_flagged(void* temp, size_t& temp_bytes, const int64_t* positions, const uint8_t* flags,
                           int64_t* selected, int64_t* number, int64_t count, cudaStream_t stream);

// out ([found, shape.dims] int64) = the coordinates of each selected
// row-major position.
cudaError_t nonzero_coordinates(const int64_t* selected, int64_t found, const Layout& shape, int64_t* out,
                                cudaStream_t stream);

// Where element i of an indexing result comes from (index_Tensor) or goes
// to (index_put): the result's dimensions are the target's plain
// dimensions and the broadcast dimensions of the index tensors.
struct IndexPlan {
  int32_t dims = 0;                               // of the result
  int64_t sizes[kMaxDims] = {};                   // of the result
  int64_t target_step[kMaxDims] = {};             // target stride per result dim (0 for broadcast dims)
  int64_t source_step[kMaxDims] = {};             // index_put's values, broadcast over the result
  int32_t count = 0;                              // index tensors
  const void* index[kMaxDims] = {};
  int32_t index_int32[kMaxDims] = {};
  int64_t index_step[kMaxDims][kMaxDims] = {};    // [index tensor][result dim]
  int64_t target_size[kMaxDims] = {};             // of the dimension each index tensor indexes
  int64_t target_stride[kMaxDims] = {};
};

// out[i] = self[where result position i reads], for `count` positions.
cudaError_t gather_indexed(const IndexPlan& plan, const void* self, int itemsize, void* out, int64_t count,
                           cudaStream_t stream);

// target[where result position i goes] = values[i] (+= with `accumulate`).
cudaError_t put_indexed(const IndexPlan& plan, void* target, const void* values, int32_t dtype, int itemsize,
                        bool accumulate, int64_t count, cudaStream_t stream);

// A scatter along `dim`: index element i sends src's element at the same
// position (or `value`, src null) to out at index[i] along `dim`.
struct ScatterPlan {
  int32_t dims = 0;
  int32_t dim = 0;
  int64_t index_sizes[kMaxDims] = {};
  int64_t index_strides[kMaxDims] = {};
  int64_t src_strides[kMaxDims] = {};
  int64_t out_sizes[kMaxDims] = {};
  int64_t out_strides[kMaxDims] = {};
  const int64_t* index = nullptr;
  const void* src = nullptr;  // nullptr: `value` everywhere
  double value = 0;
  int32_t dtype = 6;          // float32
  int itemsize = 4;
  Reduce reduce = Reduce::None;
};

// Every target of the `count` index elements set to the reduction's
// identity, which leaves the targets' old values out of it.
cudaError_t scatter_reset(const ScatterPlan& plan, void* out, int64_t count, cudaStream_t stream);

// The scatter itself; with `counts` (int32, one per element of out, zeroed)
// it also counts the values each target took, for the mean.
cudaError_t scatter(const ScatterPlan& plan, void* out, int32_t* counts, int64_t count, cudaStream_t stream);

// Each of out's `total` elements that took values divided by how many
// (and itself, with `include_self`); integers round down, as ATen's floor
// division.
cudaError_t scatter_mean(const ScatterPlan& plan, void* out, const int32_t* counts, bool include_self, int64_t total,
                         cudaStream_t stream);

}  // namespace ptb::builtin::kernels

// The indexing family's kernels (index.h), grid-stride loops over elements
// of any real dtype through element_access.cuh.
#include <cub/device/device_select.cuh>

#include "kernels/element_access.cuh"
#include "kernels/index.h"

namespace ptb::builtin::kernels {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((count + kThreads - 1) / kThreads, 8192)));
}

__global__ void nonzero_flags_kernel(const void* data, int32_t dtype, int itemsize, Layout shape, int64_t count,
                                     uint8_t* flags, int64_t* positions) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    flags[i] = load_value(data, offset_of(i, shape), dtype, itemsize) != 0;
    positions[i] = i;
  }
}

__global__ void nonzero_coordinates_kernel(const int64_t* selected, int64_t found, Layout shape, int64_t* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < found;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t position = selected[i];
    for (int32_t d = shape.dims - 1; d >= 0; --d) {
      out[i * shape.dims + d] = position % shape.sizes[d];
      position /= shape.sizes[d];
    }
  }
}

// The target offset of result position i; false when an index is out of range.
__device__ bool target_of(int64_t i, const IndexPlan& plan, int64_t& target, int64_t& source) {
  int64_t coordinates[kMaxDims];
  for (int32_t d = plan.dims - 1; d >= 0; --d) {
    coordinates[d] = i % plan.sizes[d];
    i /= plan.sizes[d];
  }
  target = 0;
  source = 0;
  for (int32_t d = 0; d < plan.dims; ++d) {
    target += coordinates[d] * plan.target_step[d];
    source += coordinates[d] * plan.source_step[d];
  }
  bool inside = true;
  for (int32_t k = 0; k < plan.count; ++k) {
    int64_t at = 0;
    for (int32_t d = 0; d < plan.dims; ++d) at += coordinates[d] * plan.index_step[k][d];
    int64_t index = plan.index_int32[k] ? static_cast<const int32_t*>(plan.index[k])[at]
                                        : static_cast<const int64_t*>(plan.index[k])[at];
    if (index < 0) index += plan.target_size[k];
    if (index < 0 || index >= plan.target_size[k]) inside = false;
    target += index * plan.target_stride[k];
  }
  return inside;
}

__global__ void gather_kernel(IndexPlan plan, const void* self, int itemsize, void* out, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t target, source;
    const bool inside = target_of(i, plan, target, source);
    store_bits(out, i, itemsize, inside ? load_bits(self, target, itemsize) : 0);
  }
}

__global__ void put_kernel(IndexPlan plan, void* target_data, const void* values, int32_t dtype, int itemsize,
                           bool accumulate, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t target, source;
    if (!target_of(i, plan, target, source)) continue;
    if (accumulate) {
      atomic_reduce(target_data, target, dtype, itemsize, load_value(values, source, dtype, itemsize), Reduce::Sum);
    } else {
      store_bits(target_data, target, itemsize, load_bits(values, source, itemsize));
    }
  }
}

// Where index element i scatters to: its offset in out and, for counts,
// its row-major position; false when its index is out of range.
__device__ bool scatter_target(int64_t i, const ScatterPlan& plan, int64_t& out_at, int64_t& position,
                               int64_t& src_at) {
  int64_t coordinates[kMaxDims];
  int64_t rest = i;
  for (int32_t d = plan.dims - 1; d >= 0; --d) {
    coordinates[d] = rest % plan.index_sizes[d];
    rest /= plan.index_sizes[d];
  }
  int64_t index_at = 0;
  src_at = 0;
  for (int32_t d = 0; d < plan.dims; ++d) {
    index_at += coordinates[d] * plan.index_strides[d];
    src_at += coordinates[d] * plan.src_strides[d];
  }
  int64_t to = plan.index[index_at];
  if (to < 0) to += plan.out_sizes[plan.dim];
  if (to < 0 || to >= plan.out_sizes[plan.dim]) return false;
  coordinates[plan.dim] = to;
  out_at = 0;
  position = 0;
  for (int32_t d = 0; d < plan.dims; ++d) {
    out_at += coordinates[d] * plan.out_strides[d];
    position = position * plan.out_sizes[d] + coordinates[d];
  }
  return true;
}

__global__ void scatter_reset_kernel(ScatterPlan plan, void* out, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t out_at, position, src_at;
    if (!scatter_target(i, plan, out_at, position, src_at)) continue;
    store_bits(out, out_at, plan.itemsize, to_bits(reduce_identity(plan.reduce), plan.dtype));
  }
}

__global__ void scatter_kernel(ScatterPlan plan, void* out, int32_t* counts, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t out_at, position, src_at;
    if (!scatter_target(i, plan, out_at, position, src_at)) continue;
    if (plan.reduce == Reduce::None) {
      const uint64_t bits = plan.src ? load_bits(plan.src, src_at, plan.itemsize) : to_bits(plan.value, plan.dtype);
      store_bits(out, out_at, plan.itemsize, bits);
      continue;
    }
    const double value = plan.src ? load_value(plan.src, src_at, plan.dtype, plan.itemsize) : plan.value;
    atomic_reduce(out, out_at, plan.dtype, plan.itemsize, value, plan.reduce);
    if (counts) atomicAdd(counts + position, 1);
  }
}

__global__ void scatter_mean_kernel(ScatterPlan plan, void* out, const int32_t* counts, bool include_self,
                                    int64_t total) {
  Layout shape;
  shape.dims = plan.dims;
  for (int32_t d = 0; d < plan.dims; ++d) {
    shape.sizes[d] = plan.out_sizes[d];
    shape.strides[d] = plan.out_strides[d];
  }
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (counts[i] == 0) continue;
    const int64_t at = offset_of(i, shape);
    const double sum = load_value(out, at, plan.dtype, plan.itemsize);
    double mean = sum / (counts[i] + (include_self ? 1 : 0));
    if (!floating_dtype(plan.dtype)) mean = floor(mean);
    store_bits(out, at, plan.itemsize, to_bits(mean, plan.dtype));
  }
}

}  // namespace

cudaError_t nonzero_flags(const void* data, int32_t dtype, int itemsize, const Layout& shape, int64_t count,
                          uint8_t* flags, int64_t* positions, cudaStream_t stream) {
  nonzero_flags_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, dtype, itemsize, shape, count, flags,
                                                                   positions);
  return cudaGetLastError();
}

cudaError_t select_flagged(void* temp, size_t& temp_bytes, const int64_t* positions, const uint8_t* flags,
                           int64_t* selected, int64_t* number, int64_t count, cudaStream_t stream) {
  return cub::DeviceSelect::Flagged(temp, temp_bytes, positions, flags, selected, number, count, stream);
}

cudaError_t nonzero_coordinates(const int64_t* selected, int64_t found, const Layout& shape, int64_t* out,
                                cudaStream_t stream) {
  nonzero_coordinates_kernel<<<blocks_for(found), kThreads, 0, stream>>>(selected, found, shape, out);
  return cudaGetLastError();
}

cudaError_t gather_indexed(const IndexPlan& plan, const void* self, int itemsize, void* out, int64_t count,
                           cudaStream_t stream) {
  gather_kernel<<<blocks_for(count), kThreads, 0, stream>>>(plan, self, itemsize, out, count);
  return cudaGetLastError();
}

cudaError_t put_indexed(const IndexPlan& plan, void* target, const void* values, int32_t dtype, int itemsize,
                        bool accumulate, int64_t count, cudaStream_t stream) {
  put_kernel<<<blocks_for(count), kThreads, 0, stream>>>(plan, target, values, dtype, itemsize, accumulate, count);
  return cudaGetLastError();
}

cudaError_t scatter_reset(const ScatterPlan& plan, void* out, int64_t count, cudaStream_t stream) {
  scatter_reset_kernel<<<blocks_for(count), kThreads, 0, stream>>>(plan, out, count);
  return cudaGetLastError();
}

cudaError_t scatter(const ScatterPlan& plan, void* out, int32_t* counts, int64_t count, cudaStream_t stream) {
  scatter_kernel<<<blocks_for(count), kThreads, 0, stream>>>(plan, out, counts, count);
  return cudaGetLastError();
}

cudaError_t scatter_mean(const ScatterPlan& plan, void* out, const int32_t* counts, bool include_self, int64_t total,
                         cudaStream_t stream) {
  scatter_mean_kernel<<<blocks_for(total), kThreads, 0, stream>>>(plan, out, counts, include_self, total);
  return cudaGetLastError();
}

}  // namespace ptb::builtin::kernels

// Indexing for the index family of the shim table (index.h): advanced indexing (index_Tensor),
// index_put with and without accumulation, nonzero, and scatter with a
// tensor or a value source and its reductions. ATen's semantics; the shapes
// follow ATen's rules (indexed dimensions that sit together keep their
// place, scattered ones go first), and a boolean mask stands for the
// positions nonzero finds in it. Indices out of range are refused by ATen
// with a device-side assert, which would poison the process's CUDA context;
// here they read zeros and write nothing.
#include <cub/device/device_select.cuh>

#include <cstring>

#include "engines/index.h"
#include "kernels/element_access.cuh"

using namespace ptb;
using namespace ptb::builtin;
using namespace ptb::builtin::kernels;

namespace {

// The tensor `made` holds, or nullopt with its error's message in `why`.
std::optional<Tensor> kept(Result<Tensor> made, std::string& why) {
  if (made) return std::move(*made);
  why = made.error().message;
  return std::nullopt;
}

// "" or the status's message, for this file's ""-or-why helpers.
std::string text_of(const Status& status) { return status.ok() ? "" : status.error().message; }

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((count + kThreads - 1) / kThreads, 8192)));
}

std::string cuda_text(cudaError_t code) { return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code); }

std::string launched() {
  cudaError_t code = cudaGetLastError();
  return code == cudaSuccess ? "" : cuda_text(code);
}

bool on_gpu(const Tensor& tensor) { return tensor.storage->device_type == kDeviceCuda; }

std::string dtype_text(int32_t dtype) { return scalar_type_name(dtype); }

// ---- nonzero ----------------------------------------------------------------

bool layout_of(const Tensor& tensor, Layout& shape) {
  if (tensor.sizes.size() > static_cast<size_t>(kMaxDims)) return false;
  shape.dims = static_cast<int32_t>(tensor.sizes.size());
  for (int32_t d = 0; d < shape.dims; ++d) {
    shape.sizes[d] = tensor.sizes[d];
    shape.strides[d] = tensor.strides[d];
  }
  return true;
}

__global__ void nonzero_flags(const void* data, int32_t dtype, int itemsize, Layout shape, int64_t count,
                              uint8_t* flags, int64_t* positions) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    flags[i] = load_value(data, offset_of(i, shape), dtype, itemsize) != 0;
    positions[i] = i;
  }
}

__global__ void nonzero_coordinates(const int64_t* selected, int64_t found, Layout shape, int64_t* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < found;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t position = selected[i];
    for (int32_t d = shape.dims - 1; d >= 0; --d) {
      out[i * shape.dims + d] = position % shape.sizes[d];
      position /= shape.sizes[d];
    }
  }
}

// [n, dims] int64: the coordinates of self's nonzero elements in row-major
// order. The count decides the output's size, so this waits for the stream.
std::string nonzero(const Tensor& self, std::optional<Tensor>& result) {
  if (!accessible_dtype(self.dtype)) return "dtype " + dtype_text(self.dtype) + " is not supported here";
  if (!on_gpu(self)) return "the tensor is not on the GPU (" + tensor_text(self) + ")";
  Layout shape;
  if (!layout_of(self, shape)) return "more than " + std::to_string(kMaxDims) + " dimensions";
  const int64_t count = self.numel();
  const int32_t device = self.storage->device_index;
  const int64_t dims = static_cast<int64_t>(self.sizes.size());
  std::string why;
  int64_t found = 0;
  std::optional<Tensor> selected;
  cudaStream_t stream = stream_for(self);
  if (count > 0) {
    auto flags = kept(empty_cuda({count}, ScalarType::Bool, device), why);
    auto positions = flags ? kept(empty_cuda({count}, ScalarType::Long, device), why) : std::nullopt;
    selected = positions ? kept(empty_cuda({count}, ScalarType::Long, device), why) : std::nullopt;
    auto number = selected ? kept(empty_cuda({1}, ScalarType::Long, device), why) : std::nullopt;
    if (!number) return why;
    nonzero_flags<<<blocks_for(count), kThreads, 0, stream>>>(self.data(), self.dtype,
                                                             static_cast<int>(self.itemsize()), shape, count,
                                                             static_cast<uint8_t*>(flags->data()),
                                                             static_cast<int64_t*>(positions->data()));
    why = launched();
    if (!why.empty()) return why;
    auto select = [&](void* temp, size_t& bytes) {
      return cub::DeviceSelect::Flagged(temp, bytes, static_cast<const int64_t*>(positions->data()),
                                        static_cast<const uint8_t*>(flags->data()),
                                        static_cast<int64_t*>(selected->data()),
                                        static_cast<int64_t*>(number->data()), count, stream);
    };
    size_t bytes = 0;
    cudaError_t code = select(nullptr, bytes);
    if (code != cudaSuccess) return cuda_text(code);
    auto temp = allocate(std::max<size_t>(bytes, 1), kDeviceCuda, device);
    if (!temp) return temp.error().message;
    code = select((*temp)->data, bytes);
    if (code == cudaSuccess) code = cudaMemcpyAsync(&found, number->data(), sizeof found, cudaMemcpyDeviceToHost, stream);
    if (code == cudaSuccess) code = cudaStreamSynchronize(stream);
    if (code != cudaSuccess) return cuda_text(code);
    if (found < 0 || found > count) return "the selection counted " + std::to_string(found) + " of " + std::to_string(count);
  }
  result = kept(empty_cuda({found, dims}, ScalarType::Long, device), why);
  if (!result) return why;
  if (found > 0 && dims > 0) {
    nonzero_coordinates<<<blocks_for(found), kThreads, 0, stream>>>(static_cast<const int64_t*>(selected->data()),
                                                                   found, shape,
                                                                   static_cast<int64_t*>(result->data()));
    return launched();
  }
  return "";
}

// ---- advanced indexing --------------------------------------------------------

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

__global__ void gather(IndexPlan plan, const void* self, int itemsize, void* out, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t target, source;
    const bool inside = target_of(i, plan, target, source);
    store_bits(out, i, itemsize, inside ? load_bits(self, target, itemsize) : 0);
  }
}

__global__ void put(IndexPlan plan, void* target_data, const void* values, int32_t dtype, int itemsize,
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

// One index per target dimension (nullopt: the whole dimension), masks
// replaced by the integer indices nonzero finds in them.
struct Indices {
  std::vector<std::optional<Tensor>> per_dim;
  std::vector<Tensor> keep;  // nonzero results the views above share
};

std::string expand_masks(const Tensor& target, const std::vector<const Tensor*>& given, Indices& indices) {
  const size_t rank = target.sizes.size();
  for (const Tensor* index : given) {
    if (!index) {
      indices.per_dim.emplace_back(std::nullopt);
      continue;
    }
    if (index->dtype != ScalarType::Long && index->dtype != ScalarType::Int && index->dtype != ScalarType::Bool &&
        index->dtype != ScalarType::Byte) {
      return "an index of dtype " + dtype_text(index->dtype) + "; expected int64, int32, bool or uint8";
    }
    if (!on_gpu(*index)) return "an index is not on the GPU (" + tensor_text(*index) + ")";
    if (index->dtype == ScalarType::Long || index->dtype == ScalarType::Int) {
      indices.per_dim.emplace_back(*index);
      continue;
    }
    const size_t first = indices.per_dim.size();
    if (first + index->sizes.size() > rank) return "too many indices for a tensor of " + std::to_string(rank) + " dimensions";
    for (size_t d = 0; d < index->sizes.size(); ++d) {
      if (index->sizes[d] != target.sizes[first + d]) {
        return "a mask of shape " + tensor_text(*index) + " against dimension " + std::to_string(first + d) +
               " of size " + std::to_string(target.sizes[first + d]);
      }
    }
    std::optional<Tensor> found;
    std::string why = nonzero(*index, found);
    if (!why.empty()) return why;
    indices.keep.push_back(*found);
    const int64_t columns = static_cast<int64_t>(index->sizes.size());
    for (int64_t column = 0; column < columns; ++column) {
      Tensor view = *found;
      view.sizes = {found->sizes[0]};
      view.strides = {columns};
      view.storage_offset = found->storage_offset + column;
      indices.per_dim.emplace_back(std::move(view));
    }
  }
  if (indices.per_dim.size() > rank) return "too many indices for a tensor of " + std::to_string(rank) + " dimensions";
  indices.per_dim.resize(rank);
  return "";
}

// The result's shape and where each position reads or writes in `target`.
std::string plan_indexing(const Tensor& target, const Indices& indices, IndexPlan& plan) {
  std::vector<size_t> indexed;
  std::vector<int64_t> broadcast;
  for (size_t d = 0; d < indices.per_dim.size(); ++d) {
    if (!indices.per_dim[d]) continue;
    indexed.push_back(d);
    const auto& sizes = indices.per_dim[d]->sizes;
    if (sizes.size() > broadcast.size()) broadcast.insert(broadcast.begin(), sizes.size() - broadcast.size(), 1);
    for (size_t j = 0; j < sizes.size(); ++j) {
      int64_t& have = broadcast[broadcast.size() - sizes.size() + j];
      if (sizes[j] == have || sizes[j] == 1) continue;
      if (have != 1) return "index shapes do not broadcast together (" + tensor_text(*indices.per_dim[d]) + ")";
      have = sizes[j];
    }
  }
  if (indexed.empty()) return "no index tensor";
  const bool together = indexed.back() - indexed.front() + 1 == indexed.size();
  // The result's dims: (target dim, or -1 for broadcast dim b).
  std::vector<std::pair<int64_t, int64_t>> layout;
  auto add_broadcast = [&] {
    for (size_t b = 0; b < broadcast.size(); ++b) layout.emplace_back(-1, static_cast<int64_t>(b));
  };
  if (!together) add_broadcast();
  for (size_t d = 0; d < target.sizes.size(); ++d) {
    if (indices.per_dim[d]) {
      if (together && d == indexed.front()) add_broadcast();
      continue;
    }
    layout.emplace_back(static_cast<int64_t>(d), 0);
  }
  if (layout.size() > static_cast<size_t>(kMaxDims) || indexed.size() > static_cast<size_t>(kMaxDims)) {
    return "an indexing result of more than " + std::to_string(kMaxDims) + " dimensions";
  }
  plan.dims = static_cast<int32_t>(layout.size());
  plan.count = static_cast<int32_t>(indexed.size());
  for (size_t o = 0; o < layout.size(); ++o) {
    const auto [d, b] = layout[o];
    plan.sizes[o] = d >= 0 ? target.sizes[d] : broadcast[b];
    plan.target_step[o] = d >= 0 ? target.strides[d] : 0;
    if (d >= 0) continue;
    for (size_t k = 0; k < indexed.size(); ++k) {
      const Tensor& index = *indices.per_dim[indexed[k]];
      const int64_t j = b - static_cast<int64_t>(broadcast.size() - index.sizes.size());
      plan.index_step[k][o] = (j >= 0 && index.sizes[j] != 1) ? index.strides[j] : 0;
    }
  }
  for (size_t k = 0; k < indexed.size(); ++k) {
    const Tensor& index = *indices.per_dim[indexed[k]];
    plan.index[k] = index.data();
    plan.index_int32[k] = index.dtype == ScalarType::Int;
    plan.target_size[k] = target.sizes[indexed[k]];
    plan.target_stride[k] = target.strides[indexed[k]];
  }
  return "";
}

std::vector<int64_t> plan_sizes(const IndexPlan& plan) { return {plan.sizes, plan.sizes + plan.dims}; }

int64_t plan_count(const IndexPlan& plan) {
  int64_t count = 1;
  for (int32_t d = 0; d < plan.dims; ++d) count *= plan.sizes[d];
  return count;
}

std::string gather_indexed(const Tensor& self, const std::vector<const Tensor*>& given, std::optional<Tensor>& result) {
  if (self.sizes.size() > static_cast<size_t>(kMaxDims)) return "more than " + std::to_string(kMaxDims) + " dimensions";
  Indices indices;
  std::string why = expand_masks(self, given, indices);
  IndexPlan plan;
  if (why.empty()) why = plan_indexing(self, indices, plan);
  if (!why.empty()) return why;
  if (!on_gpu(self)) return "the tensor is not on the GPU (" + tensor_text(self) + ")";
  result = kept(empty_cuda(plan_sizes(plan), self.dtype, self.storage->device_index), why);
  if (!result) return why;
  const int64_t count = plan_count(plan);
  if (count == 0) return "";
  gather<<<blocks_for(count), kThreads, 0, stream_for(self)>>>(plan, self.data(), static_cast<int>(self.itemsize()),
                                                               result->data(), count);
  return launched();
}

// target[indices] = values (or += with accumulate), in place.
std::string put_indexed(const Tensor& target, const std::vector<const Tensor*>& given, const Tensor& values,
                        bool accumulate) {
  if (values.dtype != target.dtype) {
    return "values of dtype " + dtype_text(values.dtype) + " put into " + dtype_text(target.dtype) + "; expected the same dtype";
  }
  if (accumulate && !accessible_dtype(target.dtype)) return "accumulating dtype " + dtype_text(target.dtype) + " is not supported here";
  if (target.sizes.size() > static_cast<size_t>(kMaxDims) || values.sizes.size() > static_cast<size_t>(kMaxDims)) {
    return "more than " + std::to_string(kMaxDims) + " dimensions";
  }
  if (!on_gpu(target) || !on_gpu(values)) return "the tensors are not on the GPU";
  Indices indices;
  std::string why = expand_masks(target, given, indices);
  IndexPlan plan;
  if (why.empty()) why = plan_indexing(target, indices, plan);
  if (!why.empty()) return why;
  // values broadcast over the result's shape, aligned at the right.
  if (values.sizes.size() > static_cast<size_t>(plan.dims)) return "values " + tensor_text(values) + " have more dimensions than the indexed result";
  const size_t skip = static_cast<size_t>(plan.dims) - values.sizes.size();
  for (size_t j = 0; j < values.sizes.size(); ++j) {
    const int64_t want = plan.sizes[skip + j];
    if (values.sizes[j] != want && values.sizes[j] != 1) {
      return "values " + tensor_text(values) + " do not broadcast to the indexed shape (dimension " +
             std::to_string(skip + j) + " has " + std::to_string(want) + ")";
    }
    plan.source_step[skip + j] = values.sizes[j] == 1 ? 0 : values.strides[j];
  }
  const int64_t count = plan_count(plan);
  if (count == 0) return "";
  put<<<blocks_for(count), kThreads, 0, stream_for(target)>>>(plan, target.data(), values.data(), target.dtype,
                                                              static_cast<int>(target.itemsize()), accumulate, count);
  return launched();
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage == b.storage && a.storage_offset == b.storage_offset && a.sizes == b.sizes && a.strides == b.strides &&
         a.dtype == b.dtype;
}

// out = self, unless they are one view.
std::string copy_unless_same(const Tensor& out, const Tensor& self) {
  if (same_view(out, self)) return "";
  if (out.sizes != self.sizes || out.dtype != self.dtype) {
    return "out " + tensor_text(out) + " does not match self " + tensor_text(self);
  }
  return text_of(copy_elements(out, self));
}

// ---- scatter --------------------------------------------------------------------

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
  int32_t dtype = ScalarType::Float;
  int itemsize = 4;
  Reduce reduce = Reduce::None;
};

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

// Leaves out the targets' old values: each target starts at the identity.
__global__ void scatter_reset(ScatterPlan plan, void* out, int64_t count) {
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

// mean: each scattered target divided by how many values it took (and
// itself, when included); integers round down, as ATen's floor division.
__global__ void scatter_mean(ScatterPlan plan, void* out, const int32_t* counts, bool include_self, int64_t total) {
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

std::optional<Reduce> reduce_named(const char* name) {
  if (!name) return Reduce::None;
  const std::string text = name;
  if (text == "sum" || text == "add") return Reduce::Sum;
  if (text == "prod" || text == "multiply") return Reduce::Prod;
  if (text == "mean") return Reduce::Mean;
  if (text == "amax") return Reduce::Max;
  if (text == "amin") return Reduce::Min;
  return std::nullopt;
}

// out = self, then out[..., index[i][j], ...] (at `dim`) takes src[i][j] or
// `value`, combined by `reduce`.
std::string scatter(const Tensor& out, const Tensor& self, int64_t dim_arg, const Tensor& index, const Tensor* src,
                    double value, Reduce reduce, bool include_self) {
  if (index.dtype != ScalarType::Long) return "an index of dtype " + dtype_text(index.dtype) + "; expected int64";
  if (src && src->dtype != self.dtype) return "src of dtype " + dtype_text(src->dtype) + " scattered into " + dtype_text(self.dtype);
  if (!accessible_dtype(self.dtype)) return "dtype " + dtype_text(self.dtype) + " is not supported here";
  const size_t rank = std::max<size_t>(self.sizes.size(), 1);
  if (self.sizes.size() > static_cast<size_t>(kMaxDims)) return "more than " + std::to_string(kMaxDims) + " dimensions";
  if (dim_arg < -static_cast<int64_t>(rank) || dim_arg >= static_cast<int64_t>(rank)) {
    return "dim " + std::to_string(dim_arg) + " of a tensor of " + std::to_string(self.sizes.size()) + " dimensions";
  }
  // 0-d tensors scatter as one element of one dimension.
  auto as_rank = [&](const Tensor& tensor) {
    Tensor view = tensor;
    if (view.sizes.empty()) {
      view.sizes = {1};
      view.strides = {1};
    }
    return view;
  };
  const Tensor out_view = as_rank(out), index_view = as_rank(index);
  const std::optional<Tensor> src_view = src ? std::optional<Tensor>(as_rank(*src)) : std::nullopt;
  if (index_view.sizes.size() != rank || (src_view && src_view->sizes.size() != rank)) {
    return "index " + tensor_text(index) + " and self " + tensor_text(self) + " have different numbers of dimensions";
  }
  if (!on_gpu(out) || !on_gpu(self) || !on_gpu(index) || (src && !on_gpu(*src))) return "the tensors are not on the GPU";
  ScatterPlan plan;
  plan.dims = static_cast<int32_t>(rank);
  plan.dim = static_cast<int32_t>(dim_arg < 0 ? dim_arg + static_cast<int64_t>(rank) : dim_arg);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = index_view.sizes[d];
    if ((static_cast<int32_t>(d) != plan.dim && size > out_view.sizes[d]) || (src_view && size > src_view->sizes[d])) {
      return "index " + tensor_text(index) + " is larger than self or src in dimension " + std::to_string(d);
    }
    plan.index_sizes[d] = size;
    plan.index_strides[d] = index_view.strides[d];
    plan.src_strides[d] = src_view ? src_view->strides[d] : 0;
    plan.out_sizes[d] = out_view.sizes[d];
    plan.out_strides[d] = out_view.strides[d];
  }
  std::string why = copy_unless_same(out, self);
  if (!why.empty()) return why;
  plan.index = static_cast<const int64_t*>(index.data());
  plan.src = src ? src->data() : nullptr;
  plan.value = value;
  plan.dtype = self.dtype;
  plan.itemsize = static_cast<int>(self.itemsize());
  plan.reduce = reduce;
  const int64_t count = index.numel();
  if (count == 0) return "";
  cudaStream_t stream = stream_for(out);
  if (reduce != Reduce::None && !include_self) {
    scatter_reset<<<blocks_for(count), kThreads, 0, stream>>>(plan, out.data(), count);
    why = launched();
    if (!why.empty()) return why;
  }
  std::optional<Tensor> counts;
  const int64_t total = out.numel();
  if (reduce == Reduce::Mean) {
    counts = kept(empty_cuda({total}, ScalarType::Int, out.storage->device_index), why);
    if (!counts) return why;
    cudaError_t code = cudaMemsetAsync(counts->data(), 0, static_cast<size_t>(total) * sizeof(int32_t), stream);
    if (code != cudaSuccess) return cuda_text(code);
  }
  auto* count_data = counts ? static_cast<int32_t*>(counts->data()) : nullptr;
  scatter_kernel<<<blocks_for(count), kThreads, 0, stream>>>(plan, out.data(), count_data, count);
  why = launched();
  if (!why.empty() || reduce != Reduce::Mean) return why;
  scatter_mean<<<blocks_for(total), kThreads, 0, stream>>>(plan, out.data(), count_data, include_self, total);
  return launched();
}

}  // namespace

namespace ptb::builtin {

Result<Tensor> find_nonzero(const Tensor& self) {
  std::optional<Tensor> result;
  if (std::string why = nonzero(self, result); !why.empty()) return invalid(why);
  return std::move(*result);
}

Result<Tensor> gather_index(const Tensor& self, const std::vector<const Tensor*>& indices) {
  std::optional<Tensor> result;
  if (std::string why = gather_indexed(self, indices, result); !why.empty()) return invalid(why);
  return std::move(*result);
}

Result<Tensor> put_index(const Tensor& self, const std::vector<const Tensor*>& indices, const Tensor& values,
                         bool accumulate) {
  PTB_TRY(Tensor result, empty_like(self));
  PTB_CHECK(copy_elements(result, self));
  if (std::string why = put_indexed(result, indices, values, accumulate); !why.empty()) return invalid(why);
  return result;
}

Status put_index_into(const Tensor& out, const Tensor& self, const std::vector<const Tensor*>& indices,
                      const Tensor& values, bool accumulate) {
  std::string why = copy_unless_same(out, self);
  if (why.empty()) why = put_indexed(out, indices, values, accumulate);
  if (!why.empty()) return invalid(why);
  return {};
}

Status scatter_into(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                    double value, const char* reduce_name, bool include_self) {
  auto reduce = reduce_named(reduce_name);
  if (!reduce) return invalid("reduce \"" + std::string(reduce_name) + "\"; expected sum, prod, mean, amax or amin");
  std::string why = scatter(out, self, dim, index, src, value, *reduce, include_self);
  if (!why.empty()) return invalid(why);
  return {};
}

}  // namespace ptb::builtin

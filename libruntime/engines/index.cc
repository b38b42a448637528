// Indexing for the index family of the shim table (index.h): advanced
// indexing (index_Tensor), index_put with and without accumulation,
// nonzero, and scatter with a tensor or a value source and its reductions.
// ATen's semantics; the shapes follow ATen's rules (indexed dimensions that
// sit together keep their place, scattered ones go first), and a boolean
// mask stands for the positions nonzero finds in it. This file plans; the
// kernels (kernels/index.h) walk the elements.
#include "engines/index.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "kernels/index.h"

namespace ptb::builtin {
namespace {

using kernels::IndexPlan;
using kernels::kMaxDims;
using kernels::Layout;
using kernels::Reduce;
using kernels::ScatterPlan;

bool on_gpu(const Tensor& tensor) { return tensor.storage->device_type == kDeviceCuda; }

std::string dtype_text(int32_t dtype) { return scalar_type_name(dtype); }

Error too_many_dims() { return invalid("more than " + std::to_string(kMaxDims) + " dimensions"); }

Result<Layout> layout_of(const Tensor& tensor) {
  if (tensor.sizes.size() > static_cast<size_t>(kMaxDims)) return too_many_dims();
  Layout shape;
  shape.dims = static_cast<int32_t>(tensor.sizes.size());
  for (int32_t d = 0; d < shape.dims; ++d) {
    shape.sizes[d] = tensor.sizes[d];
    shape.strides[d] = tensor.strides[d];
  }
  return shape;
}

// [n, dims] int64: the coordinates of self's nonzero elements in row-major
// order. The count decides the output's size, so this waits for the stream.
Result<Tensor> nonzero(const Tensor& self) {
  if (!kernels::accessible_dtype(self.dtype)) return invalid("dtype " + dtype_text(self.dtype) + " is not supported here");
  if (!on_gpu(self)) return invalid("the tensor is not on the GPU (" + tensor_text(self) + ")");
  PTB_TRY(const Layout shape, layout_of(self));
  const int64_t count = self.numel();
  const int32_t device = self.storage->device_index;
  const int64_t dims = static_cast<int64_t>(self.sizes.size());
  int64_t found = 0;
  std::optional<Tensor> selected;
  cudaStream_t stream = stream_for(self);
  if (count > 0) {
    PTB_TRY(Tensor flags, empty_cuda({count}, ScalarType::Bool, device));
    PTB_TRY(Tensor positions, empty_cuda({count}, ScalarType::Long, device));
    PTB_TRY(selected, empty_cuda({count}, ScalarType::Long, device));
    PTB_TRY(Tensor number, empty_cuda({1}, ScalarType::Long, device));
    auto* flag_data = static_cast<uint8_t*>(flags.data());
    auto* position_data = static_cast<int64_t*>(positions.data());
    auto* selected_data = static_cast<int64_t*>(selected->data());
    auto* number_data = static_cast<int64_t*>(number.data());
    PTB_CHECK(cuda_checked(kernels::nonzero_flags(self.data(), self.dtype, static_cast<int>(self.itemsize()), shape,
                                                  count, flag_data, position_data, stream)));
    size_t bytes = 0;
    PTB_CHECK(cuda_checked(kernels::select_flagged(nullptr, bytes, position_data, flag_data, selected_data,
                                                   number_data, count, stream)));
    PTB_TRY(auto temp, allocate(std::max<size_t>(bytes, 1), kDeviceCuda, device));
    PTB_CHECK(cuda_checked(kernels::select_flagged(temp->data, bytes, position_data, flag_data, selected_data,
                                                   number_data, count, stream)));
    PTB_CHECK(cuda_checked(cudaMemcpyAsync(&found, number_data, sizeof found, cudaMemcpyDeviceToHost, stream)));
    PTB_CHECK(cuda_checked(cudaStreamSynchronize(stream)));
    if (found < 0 || found > count) {
      return invalid("the selection counted " + std::to_string(found) + " of " + std::to_string(count));
    }
  }
  PTB_TRY(Tensor result, empty_cuda({found, dims}, ScalarType::Long, device));
  if (found > 0 && dims > 0) {
    PTB_CHECK(cuda_checked(kernels::nonzero_coordinates(static_cast<const int64_t*>(selected->data()), found, shape,
                                                        static_cast<int64_t*>(result.data()), stream)));
  }
  return result;
}

// One index per target dimension (nullopt: the whole dimension), masks
// replaced by the integer indices nonzero finds in them.
struct Indices {
  std::vector<std::optional<Tensor>> per_dim;
  std::vector<Tensor> keep;  // nonzero results the views above share
};

Error too_many_indices(size_t rank) {
  return invalid("too many indices for a tensor of " + std::to_string(rank) + " dimensions");
}

Result<Indices> expand_masks(const Tensor& target, const std::vector<const Tensor*>& given) {
  const size_t rank = target.sizes.size();
  Indices indices;
  for (const Tensor* index : given) {
    if (!index) {
      indices.per_dim.emplace_back(std::nullopt);
      continue;
    }
    if (index->dtype != ScalarType::Long && index->dtype != ScalarType::Int && index->dtype != ScalarType::Bool &&
        index->dtype != ScalarType::Byte) {
      return invalid("an index of dtype " + dtype_text(index->dtype) + "; expected int64, int32, bool or uint8");
    }
    if (!on_gpu(*index)) return invalid("an index is not on the GPU (" + tensor_text(*index) + ")");
    if (index->dtype == ScalarType::Long || index->dtype == ScalarType::Int) {
      indices.per_dim.emplace_back(*index);
      continue;
    }
    const size_t first = indices.per_dim.size();
    if (first + index->sizes.size() > rank) return too_many_indices(rank);
    for (size_t d = 0; d < index->sizes.size(); ++d) {
      if (index->sizes[d] != target.sizes[first + d]) {
        return invalid("a mask of shape " + tensor_text(*index) + " against dimension " + std::to_string(first + d) +
                       " of size " + std::to_string(target.sizes[first + d]));
      }
    }
    PTB_TRY(Tensor found, nonzero(*index));
    indices.keep.push_back(found);
    const int64_t columns = static_cast<int64_t>(index->sizes.size());
    for (int64_t column = 0; column < columns; ++column) {
      Tensor view = found;
      view.sizes = {found.sizes[0]};
      view.strides = {columns};
      view.storage_offset = found.storage_offset + column;
      indices.per_dim.emplace_back(std::move(view));
    }
  }
  if (indices.per_dim.size() > rank) return too_many_indices(rank);
  indices.per_dim.resize(rank);
  return indices;
}

// The result's shape and where each position reads or writes in `target`.
Result<IndexPlan> plan_indexing(const Tensor& target, const Indices& indices) {
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
      if (have != 1) return invalid("index shapes do not broadcast together (" + tensor_text(*indices.per_dim[d]) + ")");
      have = sizes[j];
    }
  }
  if (indexed.empty()) return invalid("no index tensor");
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
    return invalid("an indexing result of more than " + std::to_string(kMaxDims) + " dimensions");
  }
  IndexPlan plan;
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
  return plan;
}

std::vector<int64_t> plan_sizes(const IndexPlan& plan) { return {plan.sizes, plan.sizes + plan.dims}; }

int64_t plan_count(const IndexPlan& plan) {
  int64_t count = 1;
  for (int32_t d = 0; d < plan.dims; ++d) count *= plan.sizes[d];
  return count;
}

// target[indices] = values (or += with accumulate), in place.
Status put_indexed(const Tensor& target, const std::vector<const Tensor*>& given, const Tensor& values,
                   bool accumulate) {
  if (values.dtype != target.dtype) {
    return invalid("values of dtype " + dtype_text(values.dtype) + " put into " + dtype_text(target.dtype) +
                   "; expected the same dtype");
  }
  if (accumulate && !kernels::accessible_dtype(target.dtype)) {
    return invalid("accumulating dtype " + dtype_text(target.dtype) + " is not supported here");
  }
  if (target.sizes.size() > static_cast<size_t>(kMaxDims) || values.sizes.size() > static_cast<size_t>(kMaxDims)) {
    return too_many_dims();
  }
  if (!on_gpu(target) || !on_gpu(values)) return invalid("the tensors are not on the GPU");
  PTB_TRY(const Indices indices, expand_masks(target, given));
  PTB_TRY(IndexPlan plan, plan_indexing(target, indices));
  // values broadcast over the result's shape, aligned at the right.
  if (values.sizes.size() > static_cast<size_t>(plan.dims)) {
    return invalid("values " + tensor_text(values) + " have more dimensions than the indexed result");
  }
  const size_t skip = static_cast<size_t>(plan.dims) - values.sizes.size();
  for (size_t j = 0; j < values.sizes.size(); ++j) {
    const int64_t want = plan.sizes[skip + j];
    if (values.sizes[j] != want && values.sizes[j] != 1) {
      return invalid("values " + tensor_text(values) + " do not broadcast to the indexed shape (dimension " +
                     std::to_string(skip + j) + " has " + std::to_string(want) + ")");
    }
    plan.source_step[skip + j] = values.sizes[j] == 1 ? 0 : values.strides[j];
  }
  const int64_t count = plan_count(plan);
  if (count == 0) return {};
  return cuda_checked(kernels::put_indexed(plan, target.data(), values.data(), target.dtype,
                                           static_cast<int>(target.itemsize()), accumulate, count,
                                           stream_for(target)));
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage == b.storage && a.storage_offset == b.storage_offset && a.sizes == b.sizes && a.strides == b.strides &&
         a.dtype == b.dtype;
}

// out = self, unless they are one view.
Status copy_unless_same(const Tensor& out, const Tensor& self) {
  if (same_view(out, self)) return {};
  if (out.sizes != self.sizes || out.dtype != self.dtype) {
    return invalid("out " + tensor_text(out) + " does not match self " + tensor_text(self));
  }
  return copy_elements(out, self);
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
Status scatter(const Tensor& out, const Tensor& self, int64_t dim_arg, const Tensor& index, const Tensor* src,
               double value, Reduce reduce, bool include_self) {
  if (index.dtype != ScalarType::Long) return invalid("an index of dtype " + dtype_text(index.dtype) + "; expected int64");
  if (src && src->dtype != self.dtype) {
    return invalid("src of dtype " + dtype_text(src->dtype) + " scattered into " + dtype_text(self.dtype));
  }
  if (!kernels::accessible_dtype(self.dtype)) return invalid("dtype " + dtype_text(self.dtype) + " is not supported here");
  const size_t rank = std::max<size_t>(self.sizes.size(), 1);
  if (self.sizes.size() > static_cast<size_t>(kMaxDims)) return too_many_dims();
  if (dim_arg < -static_cast<int64_t>(rank) || dim_arg >= static_cast<int64_t>(rank)) {
    return invalid("dim " + std::to_string(dim_arg) + " of a tensor of " + std::to_string(self.sizes.size()) +
                   " dimensions");
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
    return invalid("index " + tensor_text(index) + " and self " + tensor_text(self) +
                   " have different numbers of dimensions");
  }
  if (!on_gpu(out) || !on_gpu(self) || !on_gpu(index) || (src && !on_gpu(*src))) {
    return invalid("the tensors are not on the GPU");
  }
  ScatterPlan plan;
  plan.dims = static_cast<int32_t>(rank);
  plan.dim = static_cast<int32_t>(dim_arg < 0 ? dim_arg + static_cast<int64_t>(rank) : dim_arg);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = index_view.sizes[d];
    if ((static_cast<int32_t>(d) != plan.dim && size > out_view.sizes[d]) || (src_view && size > src_view->sizes[d])) {
      return invalid("index " + tensor_text(index) + " is larger than self or src in dimension " + std::to_string(d));
    }
    plan.index_sizes[d] = size;
    plan.index_strides[d] = index_view.strides[d];
    plan.src_strides[d] = src_view ? src_view->strides[d] : 0;
    plan.out_sizes[d] = out_view.sizes[d];
    plan.out_strides[d] = out_view.strides[d];
  }
  PTB_CHECK(copy_unless_same(out, self));
  plan.index = static_cast<const int64_t*>(index.data());
  plan.src = src ? src->data() : nullptr;
  plan.value = value;
  plan.dtype = self.dtype;
  plan.itemsize = static_cast<int>(self.itemsize());
  plan.reduce = reduce;
  const int64_t count = index.numel();
  if (count == 0) return {};
  cudaStream_t stream = stream_for(out);
  if (reduce != Reduce::None && !include_self) PTB_CHECK(cuda_checked(kernels::scatter_reset(plan, out.data(), count, stream)));
  std::optional<Tensor> counts;
  const int64_t total = out.numel();
  if (reduce == Reduce::Mean) {
    PTB_TRY(counts, empty_cuda({total}, ScalarType::Int, out.storage->device_index));
    PTB_CHECK(cuda_checked(cudaMemsetAsync(counts->data(), 0, static_cast<size_t>(total) * sizeof(int32_t), stream)));
  }
  auto* count_data = counts ? static_cast<int32_t*>(counts->data()) : nullptr;
  PTB_CHECK(cuda_checked(kernels::scatter(plan, out.data(), count_data, count, stream)));
  if (reduce != Reduce::Mean) return {};
  return cuda_checked(kernels::scatter_mean(plan, out.data(), count_data, include_self, total, stream));
}

}  // namespace

Result<Tensor> find_nonzero(const Tensor& self) { return nonzero(self); }

Result<Tensor> gather_index(const Tensor& self, const std::vector<const Tensor*>& given) {
  if (self.sizes.size() > static_cast<size_t>(kMaxDims)) return too_many_dims();
  PTB_TRY(const Indices indices, expand_masks(self, given));
  PTB_TRY(const IndexPlan plan, plan_indexing(self, indices));
  if (!on_gpu(self)) return invalid("the tensor is not on the GPU (" + tensor_text(self) + ")");
  PTB_TRY(Tensor result, empty_cuda(plan_sizes(plan), self.dtype, self.storage->device_index));
  const int64_t count = plan_count(plan);
  if (count == 0) return result;
  PTB_CHECK(cuda_checked(kernels::gather_indexed(plan, self.data(), static_cast<int>(self.itemsize()), result.data(),
                                                 count, stream_for(self))));
  return result;
}

Result<Tensor> put_index(const Tensor& self, const std::vector<const Tensor*>& indices, const Tensor& values,
                         bool accumulate) {
  PTB_TRY(Tensor result, empty_like(self));
  PTB_CHECK(copy_elements(result, self));
  PTB_CHECK(put_indexed(result, indices, values, accumulate));
  return result;
}

Status put_index_into(const Tensor& out, const Tensor& self, const std::vector<const Tensor*>& indices,
                      const Tensor& values, bool accumulate) {
  PTB_CHECK(copy_unless_same(out, self));
  return put_indexed(out, indices, values, accumulate);
}

Status scatter_into(const Tensor& out, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src,
                    double value, const char* reduce_name, bool include_self) {
  auto reduce = reduce_named(reduce_name);
  if (!reduce) return invalid("reduce \"" + std::string(reduce_name) + "\"; expected sum, prod, mean, amax or amin");
  return scatter(out, self, dim, index, src, value, *reduce, include_self);
}

}  // namespace ptb::builtin

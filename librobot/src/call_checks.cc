// check_call: every view of a call checked against the method before
// anything reaches the GPU, so that a wrong buffer is an error naming it,
// never a read or write past its end.
#include <string>

#include "call_checks.h"

namespace ptb::robot {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

const DimRange* dynamic_dim(const TensorInfo& spec, size_t dim) {
  for (const DimRange& range : spec.dynamic)
    if (range.dim == static_cast<int64_t>(dim)) return &range;
  return nullptr;
}

// Bytes a view reaches: dense, or the furthest element its strides reach.
std::optional<size_t> reach_bytes(const TensorView& view) {
  const size_t item = dtype_size(view.dtype);
  size_t count = 1;
  for (int64_t size : view.shape) {
    if (size < 0 || __builtin_mul_overflow(count, static_cast<size_t>(size), &count)) return std::nullopt;
  }
  if (count == 0) return size_t{0};
  if (view.strides.empty()) {
    size_t bytes = 0;
    if (__builtin_mul_overflow(count, item, &bytes)) return std::nullopt;
    return bytes;
  }
  size_t last = 0;  // the furthest element's index
  for (size_t d = 0; d < view.shape.size(); ++d) {
    if (view.strides[d] < 0) return std::nullopt;
    size_t step = 0;
    if (__builtin_mul_overflow(static_cast<size_t>(view.shape[d] - 1), static_cast<size_t>(view.strides[d]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return std::nullopt;
  }
  size_t bytes = 0;
  if (__builtin_mul_overflow(last + 1, item, &bytes)) return std::nullopt;
  return bytes;
}

Status check_view(const std::string& what, const TensorInfo* spec, const TensorView& view, Memory memory, int device,
                  bool output) {
  if (!view.data) return usage_error(what + ": data is a null pointer; expected the tensor's memory");
  if (!dtype_size(view.dtype)) {
    return usage_error(what + ": dtype " + std::to_string(static_cast<int32_t>(view.dtype)) + " is not a ptb::robot::DType");
  }
  if (view.memory != memory) {
    return usage_error(what + ": is in " + (view.memory == Memory::Host ? "host" : "device") + " memory; the call's " +
                       "first input is in " + (memory == Memory::Host ? "host" : "device") +
                       " memory, and one call takes one kind");
  }
  if (memory == Memory::Device && view.device != device) {
    return usage_error(what + ": is on CUDA device " + std::to_string(view.device) + "; the model is on device " +
                       std::to_string(device));
  }
  if (!view.strides.empty() && view.strides.size() != view.shape.size()) {
    return usage_error(what + ": " + std::to_string(view.strides.size()) + " strides for " +
                       std::to_string(view.shape.size()) + " dimensions; expected one per dimension, or none");
  }
  if (memory == Memory::Host && !view.strides.empty()) {
    int64_t expected = 1;
    for (size_t d = view.shape.size(); d-- > 0;) {
      if (view.shape[d] != 1 && view.strides[d] != expected) {
        return usage_error(what + ": host memory must be contiguous (row-major); strides differ at dimension " +
                           std::to_string(d));
      }
      expected *= view.shape[d];
    }
  }
  if (spec && spec->known) {
    if (view.dtype != spec->dtype) {
      return usage_error(what + " (" + spec->name + "): dtype is " + dtype_name(view.dtype) + "; the method takes " +
                         dtype_name(spec->dtype));
    }
    bool fits = view.shape.size() == spec->shape.size();
    for (size_t d = 0; fits && d < view.shape.size(); ++d) {
      const DimRange* range = dynamic_dim(*spec, d);
      if (!range) {
        fits = view.shape[d] == spec->shape[d] || (output && !spec->dynamic.empty());
      } else {
        fits = (range->min < 0 || view.shape[d] >= range->min) && (range->max < 0 || view.shape[d] <= range->max);
      }
    }
    if (!fits && !(output && view.shape.size() == spec->shape.size())) {
      std::string bounds;
      for (const DimRange& range : spec->dynamic)
        bounds += "; dimension " + std::to_string(range.dim) + " may be " + (range.min < 0 ? "?" : std::to_string(range.min)) +
                  ".." + (range.max < 0 ? "?" : std::to_string(range.max));
      return usage_error(what + " (" + spec->name + "): shape is " + shape_text(view.shape) + "; the method takes " +
                         shape_text(spec->shape) + bounds);
    }
    if (!fits) {
      return usage_error(what + " (" + spec->name + "): shape is " + shape_text(view.shape) + "; the method gives " +
                         shape_text(spec->shape));
    }
  }
  const std::optional<size_t> reach = reach_bytes(view);
  if (!reach) return usage_error(what + ": shape " + shape_text(view.shape) + " and its strides overflow or are negative");
  if (view.capacity != 0 && *reach > view.capacity) {
    return usage_error(what + ": needs " + std::to_string(*reach) + " bytes for " + dtype_name(view.dtype) + " " +
                       shape_text(view.shape) + "; its buffer holds " + std::to_string(view.capacity));
  }
  return {};
}

}  // namespace

Status detail::check_inputs(std::span<const TensorInfo> input_specs, std::span<const TensorView> inputs, int device) {
  if (inputs.size() != input_specs.size()) {
    return usage_error(std::to_string(inputs.size()) + " input(s); the method takes " +
                       std::to_string(input_specs.size()));
  }
  const Memory memory = !inputs.empty() ? inputs[0].memory : Memory::Device;
  for (size_t i = 0; i < inputs.size(); ++i)
    PTB_CHECK(check_view("input " + std::to_string(i), &input_specs[i], inputs[i], memory, device, false));
  return {};
}

Status check_call(std::span<const TensorInfo> input_specs, std::span<const TensorInfo> output_specs,
                  std::span<const TensorView> inputs, std::span<const TensorView> outputs, int device) {
  PTB_CHECK(detail::check_inputs(input_specs, inputs, device));
  if (outputs.size() != output_specs.size()) {
    return usage_error(std::to_string(outputs.size()) + " output(s); the method gives " +
                       std::to_string(output_specs.size()));
  }
  const Memory memory = !inputs.empty() ? inputs[0].memory : !outputs.empty() ? outputs[0].memory : Memory::Device;
  for (size_t i = 0; i < outputs.size(); ++i)
    PTB_CHECK(check_view("output " + std::to_string(i), &output_specs[i], outputs[i], memory, device, true));
  return {};
}

}  // namespace ptb::robot

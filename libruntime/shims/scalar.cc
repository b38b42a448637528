// .item(): a tensor's one element on the host, as ATen's item<T>() converts
// it (c10::Scalar: floating to integer truncates toward zero, anything to
// bool tests for nonzero). Reading a GPU element waits for its stream, which
// is why a method that calls one is never captured into a CUDA graph.
#include <cstring>
#include <limits>
#include <type_traits>

#include "shims/shim_support.h"

using namespace ptb;
using namespace ptb::builtin;

namespace {

// The element as the widest type of its kind, so that the conversion to
// the type asked for happens once, in convert().
struct Element {
  enum class Kind { Real, Signed, Unsigned } kind = Kind::Real;
  double real = 0;
  int64_t integer = 0;
  uint64_t natural = 0;
};

template <class T>
T load(const unsigned char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

std::optional<Element> decode(int32_t dtype, const unsigned char* bytes) {
  Element e;
  auto real = [&](double v) { e.kind = Element::Kind::Real; e.real = v; return e; };
  auto signed_ = [&](int64_t v) { e.kind = Element::Kind::Signed; e.integer = v; return e; };
  auto unsigned_ = [&](uint64_t v) { e.kind = Element::Kind::Unsigned; e.natural = v; return e; };
  switch (dtype) {
    case ScalarType::Float: return real(load<float>(bytes));
    case ScalarType::Double: return real(load<double>(bytes));
    case ScalarType::Half: return real(half_to_float(load<uint16_t>(bytes)));
    case ScalarType::BFloat16: return real(bfloat16_to_float(load<uint16_t>(bytes)));
    case ScalarType::Char: return signed_(load<int8_t>(bytes));
    case ScalarType::Short: return signed_(load<int16_t>(bytes));
    case ScalarType::Int: return signed_(load<int32_t>(bytes));
    case ScalarType::Long: return signed_(load<int64_t>(bytes));
    case ScalarType::Byte: return unsigned_(load<uint8_t>(bytes));
    case ScalarType::Bool: return unsigned_(load<uint8_t>(bytes) != 0);
    case ScalarType::UInt16: return unsigned_(load<uint16_t>(bytes));
    case ScalarType::UInt32: return unsigned_(load<uint32_t>(bytes));
    case ScalarType::UInt64: return unsigned_(load<uint64_t>(bytes));
    default: return std::nullopt;
  }
}

template <class T>
T convert(const Element& e) {
  if constexpr (std::is_same_v<T, bool>) {
    switch (e.kind) {
      case Element::Kind::Real: return e.real != 0;  // NaN is true, as in C++ and ATen
      case Element::Kind::Signed: return e.integer != 0;
      case Element::Kind::Unsigned: return e.natural != 0;
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (e.kind) {
      case Element::Kind::Real: return static_cast<T>(e.real);
      case Element::Kind::Signed: return static_cast<T>(e.integer);
      case Element::Kind::Unsigned: return static_cast<T>(e.natural);
    }
  } else {
    switch (e.kind) {
      // Out of range is undefined in C++; ATen's result there is whatever
      // the hardware gives, so clamping to the range is as good and defined.
      case Element::Kind::Real: {
        if (e.real != e.real) return T{0};
        const long double v = e.real;
        if (v <= static_cast<long double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
        if (v >= static_cast<long double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
        return static_cast<T>(e.real);
      }
      case Element::Kind::Signed: return static_cast<T>(e.integer);  // wraps, as ATen's conversion does
      case Element::Kind::Unsigned: return static_cast<T>(e.natural);
    }
  }
  return T{};
}

// The one element's bytes, read back from the GPU when it lives there.
AOTITorchError read_element(const char* function, AtenTensorHandle handle, Element& out) {
  PTB_NEED(handle, function);
  const Tensor& tensor = *tensor_of(handle);
  if (tensor.numel() != 1) {
    return fail(function, "a tensor of " + std::to_string(tensor.numel()) + " elements (" + tensor_text(tensor) +
                              "); .item() takes exactly one");
  }
  auto size = scalar_type_size(tensor.dtype);
  if (!size || *size > 8) return fail(function, "dtype " + std::string(scalar_type_name(tensor.dtype)) + " has no scalar value");
  unsigned char bytes[8] = {};
  const void* data = tensor.data();
  if (tensor.storage->device_type == kDeviceCuda) {
    cudaStream_t stream = stream_for(tensor);
    cudaError_t code = cudaMemcpyAsync(bytes, data, *size, cudaMemcpyDeviceToHost, stream);
    if (code == cudaSuccess) code = cudaStreamSynchronize(stream);
    if (code != cudaSuccess) return fail(function, std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code));
  } else if (tensor.storage->device_type == kDeviceCpu) {
    std::memcpy(bytes, data, *size);
  } else {
    return fail(function, "device type " + std::to_string(tensor.storage->device_type) + "; expected CPU or CUDA");
  }
  auto element = decode(tensor.dtype, bytes);
  if (!element) return fail(function, "dtype " + std::string(scalar_type_name(tensor.dtype)) + " has no scalar value");
  out = *element;
  return kShimSuccess;
}

template <class T>
AOTITorchError item(const char* function, AtenTensorHandle handle, T* ret) {
  if (!ret) return fail(function, "no place for the result");
  Element element;
  if (read_element(function, handle, element) != kShimSuccess) return kShimFailure;
  *ret = convert<T>(element);
  return kShimSuccess;
}

}  // namespace

#define PTB_ITEM(name, type) \
  AOTITorchError aoti_torch_item_##name(AtenTensorHandle tensor, type* ret) { \
    return item<type>("aoti_torch_item_" #name, tensor, ret); \
  }
PTB_ITEM(float32, float)
PTB_ITEM(float64, double)
PTB_ITEM(uint8, uint8_t)
PTB_ITEM(uint16, uint16_t)
PTB_ITEM(uint32, uint32_t)
PTB_ITEM(uint64, uint64_t)
PTB_ITEM(int8, int8_t)
PTB_ITEM(int16, int16_t)
PTB_ITEM(int32, int32_t)
PTB_ITEM(int64, int64_t)
PTB_ITEM(bool, bool)
#undef PTB_ITEM

// float16 and bfloat16 cross the ABI as their bits (c10::Half and
// c10::BFloat16 are one uint16_t each).
AOTITorchError aoti_torch_item_float16(AtenTensorHandle tensor, uint16_t* ret) {
  float value = 0;
  if (item<float>("aoti_torch_item_float16", tensor, &value) != kShimSuccess) return kShimFailure;
  *ret = float_to_half(value);
  return kShimSuccess;
}

AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle tensor, uint16_t* ret) {
  float value = 0;
  if (item<float>("aoti_torch_item_bfloat16", tensor, &value) != kShimSuccess) return kShimFailure;
  *ret = float_to_bfloat16(value);
  return kShimSuccess;
}

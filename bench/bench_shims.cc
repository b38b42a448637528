// What each compute shim of the built-in runtime costs per call, on shapes
// policy parts give them: the module is opened with dlopen,
// the shim is called through the same C ABI an AOTInductor library calls,
// and a block of calls is timed between two CUDA events on the runtime's
// current stream (the median of the blocks). Outputs the shim allocates are
// freed in the loop, as the library frees them. bench/bench_shims.py runs
// the same calls in eager PyTorch and prints both side by side; the case
// table lives here only (`--list` prints it as JSON for that script).
//
//   bench_shims --list
//   bench_shims --module PATH/libptbundle_builtin_runtime.so [--iterations N]
//               [--inputs DIR] [--outputs DIR] [CASE...]
//
// One JSON object per line on stdout: {"case", "shim", "us", "host_us",
// "outputs"} or {"case", "shim", "error"}. host_us is the host's time to
// issue one call (the blocks are short enough that the GPU never makes it
// wait), so us - host_us near 0 means the shim is bound by host work.
// With --inputs, input i of a case is read from DIR/CASE.in<i>.bin (its raw
// contiguous bytes) instead of made from the fixed seed; with --outputs, the
// tensors one call after the warm-up returns (an _out shim: its out argument, listed last) are
// written to DIR/CASE.out<j>.bin, the bytes their strides span, and listed
// under "outputs" with dtype, sizes and strides, for bench_shims.py to
// compare with PyTorch's results on the same inputs.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ptbundle/base/dtype.h"

using namespace ptb;

namespace {

using Handle = void*;
using Error = int32_t;

// How a case's input is filled: values from N(0, 1), indices in [0, bound),
// a mask that is true with probability 1/2, or any 32-bit pattern (packed
// int4 weights).
enum class Fill { Normal, Index, Mask, Bits };

struct Input {
  int32_t dtype = ScalarType::Float;
  std::vector<int64_t> shape;
  Fill fill = Fill::Normal;
  int64_t bound = 0;
};

struct Module;
struct Case {
  std::string name;
  std::string shim;
  std::vector<Input> inputs;
  // The parameters bench_shims.py passes to PyTorch's call (k, dim, ...),
  // as JSON members written as they are.
  std::string params;
  // Calls the shim once on the inputs; returns the tensors it allocated.
  std::function<Error(Module&, std::vector<Handle>&, std::vector<Handle>&)> call;
};

// The functions the bench takes from the module, by name.
struct Module {
  void* library = nullptr;
  template <class F>
  F get(const char* name) {
    void* symbol = dlsym(library, name);
    if (!symbol) {
      std::fprintf(stderr, "bench_shims: the module has no %s\n", name);
      std::exit(1);
    }
    return reinterpret_cast<F>(symbol);
  }
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

template <class... A>
using Fn = Error (*)(A...);

Error call_mm(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, Handle, Handle>>("aoti_torch_cuda_mm_out");
  return f(in[2], in[0], in[1]);
}

Error call_addmm(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, Handle, Handle, Handle, double, double>>("aoti_torch_cuda_addmm_out");
  return f(in[3], in[0], in[1], in[2], 1.0, 1.0);
}

// addmm_out with input `which` (0 bias, 1 mat1, 2 mat2) replaced by a view
// of it, reinterpreted as [2-d sizes, strides] and deleted after the call,
// as Inductor's wrappers pass views.
Error call_addmm_with_view(Module& m, std::vector<Handle>& in, size_t which, const int64_t (&sizes)[2],
                           const int64_t (&strides)[2]) {
  static auto reinterpret = m.get<Fn<Handle, int64_t, const int64_t*, const int64_t*, int64_t, Handle*>>(
      "aoti_torch__reinterpret_tensor");
  static auto remove = m.get<Fn<Handle>>("aoti_torch_delete_tensor_object");
  static auto f = m.get<Fn<Handle, Handle, Handle, Handle, double, double>>("aoti_torch_cuda_addmm_out");
  Handle args[3] = {in[0], in[1], in[2]};
  if (Error error = reinterpret(in[which], 2, sizes, strides, 0, &args[which])) return error;
  Error error = f(in[3], args[0], args[1], args[2], 1.0, 1.0);
  remove(args[which]);
  return error;
}

// addmm as max-autotune's wrappers call it: the bias reinterpreted as
// [rows, columns] with a row stride of 0.
Error call_addmm_expanded_bias(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  return call_addmm_with_view(m, in, 0, {512, 1024}, {0, 1});
}

// addmm as every Linear layer's wrapper calls it: mat2 is the [out, in]
// weight reinterpreted as its transpose, so that k is its contiguous
// dimension (the plain cases above pass mat2 with n contiguous).
Error call_linear(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  return call_addmm_with_view(m, in, 2, {1024, 1024}, {1, 1024});
}

Error call_bmm(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, Handle, Handle>>("aoti_torch_cuda_bmm_out");
  return f(in[2], in[0], in[1]);
}

Error call_addmm_gelu(Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
  static auto f = m.get<Fn<Handle, Handle, Handle, double, double, int32_t, Handle*>>(
      "aoti_torch_cuda__addmm_activation");
  Handle out = nullptr;
  Error error = f(in[0], in[1], in[2], 1.0, 1.0, 1, &out);
  made.push_back(out);
  return error;
}

// A 4-d NCHW-sized handle's buffer reinterpreted with channels-last
// strides, as Inductor passes a convolution's operands in a model it
// compiled to channels-last.
Error channels_last_view(Module& m, Handle in, Handle* view) {
  static auto reinterpret = m.get<Fn<Handle, int64_t, const int64_t*, const int64_t*, int64_t, Handle*>>(
      "aoti_torch__reinterpret_tensor");
  static auto sizes_of = m.get<Fn<Handle, int64_t**>>("aoti_torch_get_sizes");
  int64_t* s = nullptr;
  if (Error error = sizes_of(in, &s)) return error;
  const int64_t sizes[4] = {s[0], s[1], s[2], s[3]};
  const int64_t strides[4] = {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  return reinterpret(in, 4, sizes, strides, 0, view);
}

// ATen's convolution with symmetric padding, unit dilation, no bias; with
// `channels_last`, of 2-d operands in that layout.
std::function<Error(Module&, std::vector<Handle>&, std::vector<Handle>&)> convolution(int64_t dims, int64_t stride,
                                                                                      int64_t padding, int64_t groups,
                                                                                      bool transposed,
                                                                                      bool channels_last = false) {
  return [=](Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
    static auto f = m.get<Fn<Handle, Handle, Handle*, const int64_t*, int64_t, const int64_t*, int64_t,
                             const int64_t*, int64_t, int32_t, const int64_t*, int64_t, int64_t, Handle*>>(
        "aoti_torch_cuda_convolution");
    static auto remove = m.get<Fn<Handle>>("aoti_torch_delete_tensor_object");
    std::vector<int64_t> strides(dims, stride), paddings(dims, padding), dilations(dims, 1), output_padding(dims, 0);
    Handle x = in[0], w = in[1];
    if (channels_last) {
      if (Error error = channels_last_view(m, in[0], &x)) return error;
      if (Error error = channels_last_view(m, in[1], &w)) {
        remove(x);
        return error;
      }
    }
    Handle out = nullptr;
    Error error = f(x, w, nullptr, strides.data(), dims, paddings.data(), dims, dilations.data(), dims,
                    transposed ? 1 : 0, output_padding.data(), dims, groups, &out);
    made.push_back(out);
    if (channels_last) remove(x), remove(w);
    return error;
  };
}

// The efficient entry point, causal or not; a fourth input is the additive
// attention bias.
std::function<Error(Module&, std::vector<Handle>&, std::vector<Handle>&)> efficient_attention(bool causal) {
  return [=](Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
    static auto f = m.get<Fn<Handle, Handle, Handle, Handle*, int32_t, double, int32_t, double*, Handle*, Handle*,
                             Handle*, Handle*>>("aoti_torch_cuda__scaled_dot_product_efficient_attention");
    Handle out[4] = {};
    Handle* bias = in.size() > 3 ? &in[3] : nullptr;
    Error error = f(in[0], in[1], in[2], bias, 1, 0.0, causal ? 1 : 0, nullptr, &out[0], &out[1], &out[2], &out[3]);
    made.insert(made.end(), out, out + 4);
    return error;
  };
}

std::function<Error(Module&, std::vector<Handle>&, std::vector<Handle>&)> flash_attention(bool causal) {
  return [=](Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
    static auto f = m.get<Fn<Handle, Handle, Handle, double, int32_t, int32_t, double*, Handle*, Handle*, Handle*,
                             Handle*, int64_t*, int64_t*, Handle*, Handle*, Handle*>>(
        "aoti_torch_cuda__scaled_dot_product_flash_attention");
    Handle out[7] = {};
    int64_t max_q = 0, max_k = 0;
    Error error = f(in[0], in[1], in[2], 0.0, causal ? 1 : 0, 0, nullptr, &out[0], &out[1], &out[2], &out[3], &max_q,
                    &max_k, &out[4], &out[5], &out[6]);
    made.insert(made.end(), out, out + 7);
    return error;
  };
}

Error call_cudnn_attention(Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
  static auto f = m.get<Fn<Handle, Handle, Handle, Handle*, int32_t, double, int32_t, int32_t, double*, Handle*,
                           Handle*, Handle*, Handle*, int64_t*, int64_t*, Handle*, Handle*, Handle*>>(
      "aoti_torch_cuda__scaled_dot_product_cudnn_attention");
  Handle out[7] = {};
  int64_t max_q = 0, max_k = 0;
  Error error = f(in[0], in[1], in[2], nullptr, 0, 0.0, 0, 0, nullptr, &out[0], &out[1], &out[2], &out[3], &max_q,
                  &max_k, &out[4], &out[5], &out[6]);
  made.insert(made.end(), out, out + 7);
  return error;
}

Error call_sort_stable(Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
  static auto f = m.get<Fn<Handle, int32_t*, int64_t, int32_t, Handle*, Handle*>>("aoti_torch_cuda_sort_stable");
  Handle values = nullptr, indices = nullptr;
  int32_t stable = 1;
  Error error = f(in[0], &stable, -1, 0, &values, &indices);
  made.insert(made.end(), {values, indices});
  return error;
}

Error call_topk(Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
  static auto f = m.get<Fn<Handle, int64_t, int64_t, int32_t, int32_t, Handle*, Handle*>>("aoti_torch_cuda_topk");
  Handle values = nullptr, indices = nullptr;
  Error error = f(in[0], 2, -1, 1, 1, &values, &indices);
  made.insert(made.end(), {values, indices});
  return error;
}

Error call_nonzero(Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
  static auto f = m.get<Fn<Handle, Handle*>>("aoti_torch_cuda_nonzero");
  Handle out = nullptr;
  Error error = f(in[0], &out);
  made.push_back(out);
  return error;
}

Error call_index(Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
  static auto f = m.get<Fn<Handle, const Handle**, int64_t, Handle*>>("aoti_torch_cuda_index_Tensor");
  const Handle* indices[1] = {&in[1]};
  Handle out = nullptr;
  Error error = f(in[0], indices, 1, &out);
  made.push_back(out);
  return error;
}

Error call_index_put_accumulate(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, Handle, const Handle*, uint32_t, Handle, bool>>("aoti_torch_index_put_out");
  const Handle indices[1] = {in[1]};
  return f(in[3], in[0], indices, 1, in[2], true);
}

Error call_scatter_src(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, Handle, int64_t, Handle, Handle>>("aoti_torch_cuda_scatter_src_out");
  return f(in[3], in[0], 1, in[1], in[2]);
}

Error call_scatter_reduce_sum(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, Handle, int64_t, Handle, Handle, const char*, int32_t>>(
      "aoti_torch_cuda_scatter_reduce_two_out");
  return f(in[3], in[0], 1, in[1], in[2], "sum", 1);
}

Error call_randint(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, int64_t, int64_t, const int64_t*, int64_t>>("aoti_torch_cuda_randint_low_out");
  static const int64_t size[2] = {64, 1024};
  return f(in[0], 0, 100, size, 2);
}

// rand and randn: a float32 [64, 1024] tensor of their own.
using Random = Fn<const int64_t*, int64_t, int32_t*, int32_t*, int32_t*, int32_t, int32_t*, Handle*>;
Error call_random(Random f, std::vector<Handle>& made) {
  static const int64_t size[2] = {64, 1024};
  // As Inductor passes them: the dtype and a CUDA device (a null device is
  // ATen's default, the CPU).
  int32_t dtype = ScalarType::Float, device = 1 /* aoti_torch_device_type_cuda */;
  Handle out = nullptr;
  Error error = f(size, 2, &dtype, nullptr, &device, 0, nullptr, &out);
  made.push_back(out);
  return error;
}

Error call_int4_mm(Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
  static auto f = m.get<Fn<Handle, Handle, int64_t, Handle, Handle*>>("aoti_torch_cuda__weight_int4pack_mm");
  Handle out = nullptr;
  Error error = f(in[0], in[1], 128, in[2], &out);
  made.push_back(out);
  return error;
}

// ExecuTorch's plain layouts: the inputs in the order of the op's
// arguments, then the group size. Each arity is one op, looked up once.
template <int kTensors>
Error call_plain_mm(Module& m, const char* name, int64_t group, std::vector<Handle>& in, std::vector<Handle>& made) {
  Handle out = nullptr;
  Error error = 0;
  if constexpr (kTensors == 4) {
    static auto f = m.get<Fn<Handle, Handle, Handle, Handle, int64_t, Handle*>>(name);
    error = f(in[0], in[1], in[2], in[3], group, &out);
  } else if constexpr (kTensors == 5) {
    static auto f = m.get<Fn<Handle, Handle, Handle, Handle, Handle, int64_t, Handle*>>(name);
    error = f(in[0], in[1], in[2], in[3], in[4], group, &out);
  } else if constexpr (kTensors == 6) {
    static auto f = m.get<Fn<Handle, Handle, Handle, Handle, Handle, Handle, int64_t, Handle*>>(name);
    error = f(in[0], in[1], in[2], in[3], in[4], in[5], group, &out);
  } else {
    static auto f = m.get<Fn<Handle, Handle, Handle, Handle, Handle, Handle, Handle, int64_t, Handle*>>(name);
    error = f(in[0], in[1], in[2], in[3], in[4], in[5], in[6], group, &out);
  }
  made.push_back(out);
  return error;
}

// The last value aoti_torch_item_float32 returned: item's output, which is
// no tensor, for --outputs.
float item_value = 0;

Error call_item(Module& m, std::vector<Handle>& in, std::vector<Handle>&) {
  static auto f = m.get<Fn<Handle, float*>>("aoti_torch_item_float32");
  return f(in[0], &item_value);
}

constexpr int32_t kF32 = ScalarType::Float, kBF16 = ScalarType::BFloat16, kI64 = ScalarType::Long,
                  kI32 = ScalarType::Int, kBool = ScalarType::Bool, kF16 = ScalarType::Half, kU8 = ScalarType::Byte,
                  kI8 = ScalarType::Char;

Input normal(int32_t dtype, std::vector<int64_t> shape) { return {dtype, std::move(shape), Fill::Normal, 0}; }
Input index(std::vector<int64_t> shape, int64_t bound) { return {kI64, std::move(shape), Fill::Index, bound}; }

// The shapes: the repro pack's linears (512x1024 by 1024x1024) and ResNet
// stage convolutions, attention of an ACT-sized transformer (8 heads of 64
// over 128 tokens), a MoE router's top-2 of 64 experts over 256 tokens, a
// masked copy of 4096 rows, an int4 Linear of 4096 by 4096 for 16 tokens,
// and a diffusion step's noise.
std::vector<Case> cases() {
  std::vector<Case> all;
  auto add = [&](std::string name, std::string shim, std::vector<Input> inputs, std::string params,
                 std::function<Error(Module&, std::vector<Handle>&, std::vector<Handle>&)> call) {
    all.push_back({std::move(name), std::move(shim), std::move(inputs), std::move(params), std::move(call)});
  };
  for (int32_t dtype : {kF32, kBF16}) {
    std::string suffix = dtype == kF32 ? "_f32" : "_bf16";
    add("mm" + suffix, "mm_out", {normal(dtype, {512, 1024}), normal(dtype, {1024, 1024}), normal(dtype, {512, 1024})},
        "{}", call_mm);
    add("addmm" + suffix, "addmm_out",
        {normal(dtype, {1024}), normal(dtype, {512, 1024}), normal(dtype, {1024, 1024}), normal(dtype, {512, 1024})},
        "{}", call_addmm);
  }
  add("addmm_expanded_bias_f32", "addmm_out",
      {normal(kF32, {1024}), normal(kF32, {512, 1024}), normal(kF32, {1024, 1024}), normal(kF32, {512, 1024})}, "{}",
      call_addmm_expanded_bias);
  add("linear_f32", "addmm_out",
      {normal(kF32, {1024}), normal(kF32, {512, 1024}), normal(kF32, {1024, 1024}), normal(kF32, {512, 1024})},
      R"({"mat2": "transposed"})", call_linear);
  add("bmm_f32", "bmm_out", {normal(kF32, {8, 128, 64}), normal(kF32, {8, 64, 128}), normal(kF32, {8, 128, 128})},
      "{}", call_bmm);
  add("addmm_gelu_f32", "_addmm_activation",
      {normal(kF32, {1024}), normal(kF32, {512, 1024}), normal(kF32, {1024, 1024})}, "{}", call_addmm_gelu);
  auto conv = [&](std::string name, std::vector<int64_t> input, std::vector<int64_t> weight, int64_t stride,
                  int64_t padding, int64_t groups, bool transposed, bool channels_last = false) {
    char params[200];
    std::snprintf(params, sizeof params,
                  R"({"stride": %d, "padding": %d, "groups": %d, "transposed": %s, "channels_last": %s})",
                  static_cast<int>(stride), static_cast<int>(padding), static_cast<int>(groups),
                  transposed ? "true" : "false", channels_last ? "true" : "false");
    int64_t dims = static_cast<int64_t>(input.size()) - 2;
    add(std::move(name), "convolution", {normal(kF32, std::move(input)), normal(kF32, std::move(weight))}, params,
        convolution(dims, stride, padding, groups, transposed, channels_last));
  };
  conv("conv2d_64c_56", {1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1, false);
  conv("conv2d_256c_56", {1, 256, 56, 56}, {256, 256, 3, 3}, 1, 1, 1, false);
  conv("conv2d_stem_224", {1, 3, 224, 224}, {64, 3, 7, 7}, 2, 3, 1, false);
  conv("conv2d_depthwise", {1, 128, 56, 56}, {128, 1, 3, 3}, 1, 1, 128, false);
  conv("conv_transpose2d", {1, 64, 28, 28}, {64, 32, 4, 4}, 2, 1, 1, true);
  conv("conv1d_unet", {8, 256, 64}, {256, 256, 5}, 1, 2, 1, false);
  // ResNet18's deeper stages at batch 1, where a float32 ResNet18 spends
  // most of its time: few output pixels, a long reduction.
  conv("conv2d_128c_28", {1, 128, 28, 28}, {128, 128, 3, 3}, 1, 1, 1, false);
  conv("conv2d_256c_14", {1, 256, 14, 14}, {256, 256, 3, 3}, 1, 1, 1, false);
  conv("conv2d_512c_7", {1, 512, 7, 7}, {512, 512, 3, 3}, 1, 1, 1, false);
  conv("conv2d_256to512_s2", {1, 256, 14, 14}, {512, 256, 3, 3}, 2, 1, 1, false);
  // The repro pack's convolutions as Inductor compiles them, channels-last:
  // the GEMM route's columns read along channels.
  conv("conv2d_64to128_s2_nhwc", {1, 64, 112, 112}, {128, 64, 3, 3}, 2, 1, 1, false, true);
  conv("conv2d_256c_28_nhwc", {1, 256, 28, 28}, {256, 256, 3, 3}, 1, 1, 1, false, true);
  // Attention: an ACT-sized transformer's (8 heads of 64 over 128 tokens),
  // causal, with an additive mask, and 1,024 tokens (the longest the fused
  // kernel takes).
  auto qkv = [&](int32_t dtype, int64_t length) {
    return std::vector<Input>{normal(dtype, {1, 8, length, 64}), normal(dtype, {1, 8, length, 64}),
                              normal(dtype, {1, 8, length, 64})};
  };
  add("sdpa_efficient_f32", "_scaled_dot_product_efficient_attention", qkv(kF32, 128), R"({"causal": false})",
      efficient_attention(false));
  add("sdpa_efficient_causal_f32", "_scaled_dot_product_efficient_attention", qkv(kF32, 128), R"({"causal": true})",
      efficient_attention(true));
  auto with_bias = qkv(kF32, 128);
  with_bias.push_back(normal(kF32, {1, 8, 128, 128}));  // ATen's efficient kernel takes it per head
  add("sdpa_efficient_bias_f32", "_scaled_dot_product_efficient_attention", with_bias, R"({"causal": false})",
      efficient_attention(false));
  add("sdpa_flash_bf16", "_scaled_dot_product_flash_attention", qkv(kBF16, 128), R"({"causal": false})",
      flash_attention(false));
  add("sdpa_flash_causal_bf16_1024", "_scaled_dot_product_flash_attention", qkv(kBF16, 1024), R"({"causal": true})",
      flash_attention(true));
  add("sdpa_cudnn_bf16", "_scaled_dot_product_cudnn_attention",
      {normal(kBF16, {1, 8, 128, 64}), normal(kBF16, {1, 8, 128, 64}), normal(kBF16, {1, 8, 128, 64})}, "{}",
      call_cudnn_attention);
  add("sort_stable_f32", "sort_stable", {normal(kF32, {64, 1024})}, "{}", call_sort_stable);
  add("topk2_f32", "topk", {normal(kF32, {256, 64})}, R"({"k": 2})", call_topk);
  add("nonzero", "nonzero", {{kBool, {4096}, Fill::Mask, 0}}, "{}", call_nonzero);
  add("index_mask_f32", "index_Tensor", {normal(kF32, {4096, 16}), {kBool, {4096}, Fill::Mask, 0}}, "{}",
      call_index);
  add("index_rows_f32", "index_Tensor", {normal(kF32, {4096, 16}), index({1024}, 4096)}, "{}", call_index);
  add("index_put_accumulate_f32", "index_put_out",
      {normal(kF32, {4096, 16}), index({1024}, 4096), normal(kF32, {1024, 16}), normal(kF32, {4096, 16})}, "{}",
      call_index_put_accumulate);
  add("scatter_src_bf16", "scatter_src_out",
      {normal(kBF16, {256, 64}), index({256, 2}, 64), normal(kBF16, {256, 2}), normal(kBF16, {256, 64})}, "{}",
      call_scatter_src);
  add("scatter_reduce_sum_f32", "scatter_reduce_two_out",
      {normal(kF32, {64, 1024}), index({64, 256}, 1024), normal(kF32, {64, 256}), normal(kF32, {64, 1024})}, "{}",
      call_scatter_reduce_sum);
  add("randint_low_out", "randint_low_out", {{kI64, {64, 1024}, Fill::Index, 100}}, "{}", call_randint);
  // Looked up once, as the other shims are: no dlsym inside the timed loop.
  add("rand_f32", "rand", {}, "{}", [](Module& m, std::vector<Handle>&, std::vector<Handle>& made) {
    static Random f = m.get<Random>("aoti_torch_cuda_rand");
    return call_random(f, made);
  });
  add("randn_f32", "randn", {}, "{}", [](Module& m, std::vector<Handle>&, std::vector<Handle>& made) {
    static Random f = m.get<Random>("aoti_torch_cuda_randn");
    return call_random(f, made);
  });
  // _convert_weight_to_int4pack's layout for n = k = 4096 with 8 inner k
  // tiles: [n/8, k/128, 32, 4] int32; groups of 128 along k.
  // And for one token (decoding) and 64 (a chunk of actions).
  for (int64_t rows : {16, 1, 64}) {
    add(rows == 16 ? std::string("int4pack_mm_bf16") : "int4pack_mm_bf16_m" + std::to_string(rows), "_weight_int4pack_mm",
        {normal(kBF16, {rows, 4096}), {kI32, {512, 32, 32, 4}, Fill::Bits, 0}, normal(kBF16, {32, 4096, 2})},
        R"({"group": 128})", call_int4_mm);
  }
  // ExecuTorch's plain layouts for n = k = 4096: int4 in groups of 128,
  // int5 of 32 (Q5_K), int6 of 16 (Q6_K), int8 of 32; for a token, and int4
  // also for 64 rows (the GEMM way).
  auto bits = [](int32_t dtype, std::vector<int64_t> shape) { return Input{dtype, std::move(shape), Fill::Bits, 0}; };
  constexpr int64_t kN = 4096, kK = 4096;
  for (int64_t rows : {1, 64}) {
    add("int4_plain_mm_m" + std::to_string(rows), "int4_plain_mm",
        {normal(kBF16, {rows, kK}), bits(kU8, {kN, kK / 2}), bits(kU8, {kN, kK / 128}), normal(kF16, {kN, kK / 256}),
         bits(kU8, {kN, kK / 128}), normal(kF16, {kN, kK / 256})},
        R"({"bits": 4, "group": 128})", [](Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
          return call_plain_mm<6>(m, "aoti_torch_cuda_int4_plain_mm", 128, in, made);
        });
  }
  add("int5_plain_mm_m1", "int5_plain_mm",
      {normal(kBF16, {1, kK}), bits(kU8, {kN, kK / 2}), bits(kU8, {kN, kK / 8}), bits(kU8, {kN, kK / 32}),
       normal(kF16, {kN, kK / 256}), bits(kU8, {kN, kK / 32}), normal(kF16, {kN, kK / 256})},
      R"({"bits": 5, "group": 32})", [](Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
        return call_plain_mm<7>(m, "aoti_torch_cuda_int5_plain_mm", 32, in, made);
      });
  add("int6_plain_mm_m1", "int6_plain_mm",
      {normal(kBF16, {1, kK}), bits(kU8, {kN, kK / 2}), bits(kU8, {kN, kK / 4}), bits(kI8, {kN, kK / 16}),
       normal(kF16, {kN, kK / 256})},
      R"({"bits": 6, "group": 16})", [](Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
        return call_plain_mm<5>(m, "aoti_torch_cuda_int6_plain_mm", 16, in, made);
      });
  add("int8_plain_mm_m1", "int8_plain_mm",
      {normal(kBF16, {1, kK}), bits(kI8, {kN, kK}), normal(kBF16, {kN, kK / 32}), bits(kI8, {kN, kK / 32})},
      R"({"bits": 8, "group": 32})", [](Module& m, std::vector<Handle>& in, std::vector<Handle>& made) {
        return call_plain_mm<4>(m, "aoti_torch_cuda_int8_plain_mm", 32, in, made);
      });
  // What one GPU allocation and its release cost the host (every shim that
  // returns a tensor makes one): against PyTorch's caching allocator.
  add("empty_f32", "empty_strided", {}, "{}", [](Module& m, std::vector<Handle>&, std::vector<Handle>& made) {
    static auto f = m.get<Fn<int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, Handle*>>(
        "aoti_torch_empty_strided");
    const int64_t sizes[2] = {1024, 1024}, strides[2] = {1024, 1};
    Handle out = nullptr;
    Error error = f(2, sizes, strides, kF32, 1 /* CUDA */, 0, &out);
    made.push_back(out);
    return error;
  });
  add("item_f32", "item_float32", {normal(kF32, {1})}, "{}", call_item);
  return all;
}

const char* fill_name(Fill fill) {
  switch (fill) {
    case Fill::Normal: return "normal";
    case Fill::Index: return "index";
    case Fill::Mask: return "mask";
    case Fill::Bits: return "bits";
  }
  return "?";
}

void print_list(const std::vector<Case>& all) {
  std::printf("[\n");
  for (size_t c = 0; c < all.size(); ++c) {
    const Case& one = all[c];
    std::printf("  {\"case\": \"%s\", \"shim\": \"%s\", \"params\": %s, \"inputs\": [", one.name.c_str(),
                one.shim.c_str(), one.params.c_str());
    for (size_t i = 0; i < one.inputs.size(); ++i) {
      const Input& input = one.inputs[i];
      std::printf("%s{\"dtype\": \"%s\", \"shape\": [", i ? ", " : "", scalar_type_name(input.dtype));
      for (size_t d = 0; d < input.shape.size(); ++d)
        std::printf("%s%lld", d ? ", " : "", static_cast<long long>(input.shape[d]));
      std::printf("], \"fill\": \"%s\", \"bound\": %lld}", fill_name(input.fill),
                  static_cast<long long>(input.bound));
    }
    std::printf("]}%s\n", c + 1 < all.size() ? "," : "");
  }
  std::printf("]\n");
}

// The host bytes of one input, from a fixed seed.
std::vector<uint8_t> host_values(const Input& input, std::mt19937_64& random) {
  uint64_t count = element_count(input.shape).value_or(0);
  uint64_t size = scalar_type_size(input.dtype).value_or(1);
  std::vector<uint8_t> bytes(count * size);
  std::normal_distribution<float> normal;
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t* at = bytes.data() + i * size;
    if (input.fill == Fill::Normal && input.dtype == kF32) {
      float value = normal(random);
      std::memcpy(at, &value, 4);
    } else if (input.fill == Fill::Normal && input.dtype == kBF16) {
      uint16_t value = float_to_bfloat16(normal(random));
      std::memcpy(at, &value, 2);
    } else if (input.fill == Fill::Normal && input.dtype == kF16) {
      uint16_t value = float_to_half(normal(random));
      std::memcpy(at, &value, 2);
    } else if (input.fill == Fill::Index) {
      int64_t value = static_cast<int64_t>(random() % static_cast<uint64_t>(input.bound));
      std::memcpy(at, &value, 8);
    } else if (input.fill == Fill::Mask) {
      *at = random() & 1;
    } else {
      uint32_t value = static_cast<uint32_t>(random());
      std::memcpy(at, &value, std::min<uint64_t>(size, 4));
    }
  }
  return bytes;
}

struct Api {
  Fn<int64_t, const int64_t*, const int64_t*, int32_t, int32_t, int32_t, Handle*> empty_strided;
  Fn<Handle> delete_tensor;
  Fn<Handle, void**> data_ptr;
  Fn<Handle, int64_t*> dim;
  Fn<Handle, int64_t**> sizes;
  Fn<Handle, int64_t**> strides;
  Fn<Handle, int32_t*> dtype;
  int (*memcpy)(void*, const void*, size_t, int);
  int (*event_create)(void**);
  int (*event_record)(void*, void*);
  int (*event_synchronize)(void*);
  int (*event_elapsed)(float*, void*, void*);
  int (*device_synchronize)();
};

struct Options {
  int iterations = 50;
  std::string inputs, outputs;  // folders, or empty
};

struct Timing {
  double us = 0, host_us = 0;
  std::string outputs = "[]";  // JSON list, with --outputs
};

bool read_file(const std::string& path, std::vector<uint8_t>& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

std::string json_ints(const int64_t* values, int64_t count) {
  std::string text = "[";
  for (int64_t i = 0; i < count; ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

// One output tensor as a file of the bytes its strides span, and its JSON
// description; "" on failure (the reason in `error`).
std::string dump_tensor(Api& api, Handle tensor, const std::string& path, std::string& error) {
  int64_t dims = 0;
  int64_t *sizes = nullptr, *strides = nullptr;
  int32_t dtype = 0;
  void* data = nullptr;
  if (api.dim(tensor, &dims) || api.sizes(tensor, &sizes) || api.strides(tensor, &strides) ||
      api.dtype(tensor, &dtype) || api.data_ptr(tensor, &data)) {
    error = "could not read an output's sizes";
    return "";
  }
  uint64_t span = 1, size = scalar_type_size(dtype).value_or(1);
  for (int64_t d = 0; d < dims; ++d) {
    if (sizes[d] == 0) span = 0;
    if (span) span += static_cast<uint64_t>(sizes[d] - 1) * static_cast<uint64_t>(strides[d]);
  }
  std::vector<uint8_t> bytes(span * size);
  // cudaMemcpyDefault: a few outputs (the philox seed and offset) are host tensors.
  if (!bytes.empty() && api.memcpy(bytes.data(), data, bytes.size(), 4) != 0) {
    error = "could not copy an output to the host";
    return "";
  }
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    error = "could not write " + path;
    return "";
  }
  return std::string("{\"file\": \"") + path + "\", \"dtype\": \"" + scalar_type_name(dtype) +
         "\", \"sizes\": " + json_ints(sizes, dims) + ", \"strides\": " + json_ints(strides, dims) + "}";
}

// What one call returns, written under the outputs folder: the tensors it
// made, else an _out shim's out argument (listed last), else item's value.
bool dump_outputs(Module& module, Api& api, Case& one, std::vector<Handle>& inputs, const std::string& folder,
                  Timing& timing, std::string& error) {
  std::vector<Handle> made;
  Error status = one.call(module, inputs, made);
  std::vector<Handle> outputs = made;
  Handle item = nullptr;
  if (outputs.empty() && one.shim == "item_float32" && status == 0) {
    const int64_t none = 0;
    api.empty_strided(0, &none, &none, ScalarType::Float, 0 /* CPU */, 0, &item);
    void* data = nullptr;
    if (item && api.data_ptr(item, &data) == 0) std::memcpy(data, &item_value, 4);
    outputs.push_back(item);
  } else if (outputs.empty() && !inputs.empty() && one.shim.size() > 4 &&
             one.shim.compare(one.shim.size() - 4, 4, "_out") == 0) {
    outputs.push_back(inputs.back());
  }
  bool ok = status == 0;
  if (!ok) error = "the shim failed (its reason is on stderr)";
  api.device_synchronize();
  timing.outputs = "[";
  for (size_t j = 0; ok && j < outputs.size(); ++j) {
    std::string entry = "null";
    if (outputs[j]) {
      entry = dump_tensor(api, outputs[j], folder + "/" + one.name + ".out" + std::to_string(j) + ".bin", error);
      ok = !entry.empty();
    }
    timing.outputs += (j ? ", " : "") + entry;
  }
  timing.outputs += "]";
  for (Handle tensor : made)
    if (tensor) api.delete_tensor(tensor);
  if (item) api.delete_tensor(item);
  return ok;
}

// Microseconds per call: the median of blocks of `iterations` calls; and
// the host's time to issue them.
bool time_case(Module& module, Api& api, Case& one, const Options& options, Timing& timing, std::string& error) {
  std::mt19937_64 random(20261205);
  std::vector<Handle> inputs;
  struct Free {
    Api& api;
    std::vector<Handle>& tensors;
    ~Free() {
      for (Handle tensor : tensors) api.delete_tensor(tensor);
    }
  } free_inputs{api, inputs};
  for (size_t i = 0; i < one.inputs.size(); ++i) {
    const Input& input = one.inputs[i];
    Handle tensor = nullptr;
    std::vector<int64_t> strides = contiguous_strides(input.shape);
    if (api.empty_strided(static_cast<int64_t>(input.shape.size()), input.shape.data(), strides.data(), input.dtype,
                          1, 0, &tensor) != 0) {
      error = "could not allocate an input";
      return false;
    }
    inputs.push_back(tensor);
    std::vector<uint8_t> bytes = host_values(input, random);
    if (!options.inputs.empty()) {
      const std::string path = options.inputs + "/" + one.name + ".in" + std::to_string(i) + ".bin";
      const size_t want = bytes.size();
      if (!read_file(path, bytes) || bytes.size() != want) {
        error = "input file " + path + " is missing or does not hold " + std::to_string(want) + " bytes";
        return false;
      }
    }
    void* data = nullptr;
    api.data_ptr(tensor, &data);
    if (!bytes.empty()) api.memcpy(data, bytes.data(), bytes.size(), 1 /* host to device */);
  }
  std::vector<Handle> made;
  auto once = [&]() -> bool {
    Error status = one.call(module, inputs, made);
    for (Handle tensor : made)
      if (tensor) api.delete_tensor(tensor);
    made.clear();
    return status == 0;
  };
  for (int i = 0; i < 10; ++i) {
    if (!once()) {
      error = "the shim failed (its reason is on stderr)";
      return false;
    }
  }
  // After the warm-up: a shim that chooses its way on a shape's first call
  // (convolution, int4) is checked on the way that then serves.
  if (!options.outputs.empty() && !dump_outputs(module, api, one, inputs, options.outputs, timing, error)) return false;
  // No stream guard is set, so the shims run on the default stream, where
  // the events are recorded.
  void *start = nullptr, *stop = nullptr;
  api.event_create(&start);
  api.event_create(&stop);
  std::vector<double> blocks, host;
  for (int block = 0; block < 7; ++block) {
    api.device_synchronize();
    const auto issued = std::chrono::steady_clock::now();
    api.event_record(start, nullptr);
    for (int i = 0; i < options.iterations; ++i) once();
    api.event_record(stop, nullptr);
    host.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - issued).count() /
                   options.iterations);
    api.event_synchronize(stop);
    float ms = 0;
    api.event_elapsed(&ms, start, stop);
    blocks.push_back(ms * 1000.0 / options.iterations);
  }
  api.device_synchronize();
  std::sort(blocks.begin(), blocks.end());
  std::sort(host.begin(), host.end());
  timing.us = blocks[blocks.size() / 2];
  timing.host_us = host[host.size() / 2];
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Case> all = cases();
  std::string module_path;
  Options options;
  std::vector<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--list") {
      print_list(all);
      return 0;
    } else if (arg == "--module" && i + 1 < argc) {
      module_path = argv[++i];
    } else if (arg == "--iterations" && i + 1 < argc) {
      options.iterations = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--inputs" && i + 1 < argc) {
      options.inputs = argv[++i];
    } else if (arg == "--outputs" && i + 1 < argc) {
      options.outputs = argv[++i];
    } else if (!arg.empty() && arg[0] != '-') {
      wanted.push_back(arg);
    } else {
      std::fprintf(stderr,
                   "usage: bench_shims --list | --module PATH [--iterations N] [--inputs DIR] [--outputs DIR] "
                   "[CASE...]\n");
      return 2;
    }
  }
  if (module_path.empty()) {
    std::fprintf(stderr, "bench_shims: --module PATH is required (the built-in runtime module)\n");
    return 2;
  }
  Module module;
  module.library = dlopen(module_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module.library) {
    std::fprintf(stderr, "bench_shims: %s\n", dlerror());
    return 1;
  }
  Api api{};
  api.empty_strided = module.get<decltype(api.empty_strided)>("aoti_torch_empty_strided");
  api.delete_tensor = module.get<decltype(api.delete_tensor)>("aoti_torch_delete_tensor_object");
  api.data_ptr = module.get<decltype(api.data_ptr)>("aoti_torch_get_data_ptr");
  api.dim = module.get<decltype(api.dim)>("aoti_torch_get_dim");
  api.sizes = module.get<decltype(api.sizes)>("aoti_torch_get_sizes");
  api.strides = module.get<decltype(api.strides)>("aoti_torch_get_strides");
  api.dtype = module.get<decltype(api.dtype)>("aoti_torch_get_dtype");
  api.memcpy = module.get<decltype(api.memcpy)>("cudaMemcpy");
  api.event_create = module.get<decltype(api.event_create)>("cudaEventCreate");
  api.event_record = module.get<decltype(api.event_record)>("cudaEventRecord");
  api.event_synchronize = module.get<decltype(api.event_synchronize)>("cudaEventSynchronize");
  api.event_elapsed = module.get<decltype(api.event_elapsed)>("cudaEventElapsedTime");
  api.device_synchronize = module.get<decltype(api.device_synchronize)>("cudaDeviceSynchronize");
  int failures = 0;
  for (Case& one : all) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), one.name) == wanted.end()) continue;
    std::string error;
    Timing timing;
    if (!time_case(module, api, one, options, timing, error)) {
      ++failures;
      std::printf("{\"case\": \"%s\", \"shim\": \"%s\", \"error\": \"%s\"}\n", one.name.c_str(), one.shim.c_str(),
                  error.c_str());
    } else {
      std::printf("{\"case\": \"%s\", \"shim\": \"%s\", \"us\": %.3f, \"host_us\": %.3f, \"outputs\": %s}\n",
                  one.name.c_str(), one.shim.c_str(), timing.us, timing.host_us, timing.outputs.c_str());
    }
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}

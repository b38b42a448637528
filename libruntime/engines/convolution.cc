// The convolution shim on cuDNN, as ATen's convolution computes it on a GPU:
// 1 to 3 spatial dimensions, strided, padded, dilated, grouped and
// transposed (cuDNN's backward-data of the forward convolution whose filter
// the weight is), the bias added after. float32 runs in full float32 (FMA
// math, no TF32); float16 and bfloat16 on tensor cores.
//
// The output's memory format is ATen's: channels-last when the input or the
// weight is (what Inductor compiled the rest of the program to expect), else
// contiguous. Each shape's algorithm is found once and cached for the
// process: the graph API's engines and the legacy algorithms (cudnnFind*),
// all measured as ATen's benchmark mode measures them, for float32
// channels-last the same convolution computed in NCHW with the copies, and
// for a batch-1 float32 2-d convolution with few output positions the same
// convolution as im2col and one cuBLASLt GEMM (taken only when faster and
// when its result agrees with cuDNN's). The first call of a model runs
// without a CUDA graph, so no search ever happens in a capture.
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "engines/convolution.h"
#include "engines/cuda_libraries.h"
#include "engines/cudnn_graph.h"
#include "engines/gemm.h"
#include "kernels/im2col.h"
#include "engines/route_check.h"
#include "engines/settings.h"
#include "engines/tuned.h"
#include "ptbundle/base/text.h"

namespace ptb::builtin {
namespace {

constexpr size_t kFindWorkspace = 256ull << 20;

// ATen's test of a channels-last layout (NHWC or NDHWC strides), so that
// the output follows the input's format as eager PyTorch's does.
bool strides_like_channels_last(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  std::vector<size_t> order;
  if (sizes.size() == 4) order = {1, 3, 2, 0};
  else if (sizes.size() == 5) order = {1, 4, 3, 2, 0};
  else return false;
  if (strides[1] == 0) return false;
  int64_t minimum = 0;
  for (size_t d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < minimum) return false;
    if (d == 0 && minimum == strides[1]) return false;
    minimum = strides[d];
    if (sizes[d] > 1) minimum *= sizes[d];
  }
  return true;
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& sizes) {
  // N, spatial..., C in memory order.
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  strides[1] = running;
  running *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = sizes.size() - 1; d >= 2; --d) {
    strides[d] = running;
    running *= std::max<int64_t>(sizes[d], 1);
  }
  strides[0] = running;
  return strides;
}

cudnnDataType_t cudnn_type(int32_t dtype) {
  switch (dtype) {
    case ScalarType::Half: return CUDNN_DATA_HALF;
    case ScalarType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case ScalarType::Double: return CUDNN_DATA_DOUBLE;
    default: return CUDNN_DATA_FLOAT;
  }
}

std::string cudnn_text(const Cudnn& api, cudnnStatus_t status) {
  return std::string("cuDNN: ") + api.error_string(status);
}

// The geometry of one convolution: everything its algorithm depends on.
struct ConvKey {
  int device;
  int32_t dtype;
  bool transposed;
  int64_t groups;
  std::vector<int> x_dims, x_strides, w_dims, y_dims, y_strides, pad, stride, dilation;
  bool w_channels_last;
  std::array<int64_t, 3> alignment;  // of x, w and y: the graph API's plans depend on it
  bool operator<(const ConvKey& o) const {
    return std::tie(device, dtype, transposed, groups, x_dims, x_strides, w_dims, y_dims, y_strides, pad, stride,
                    dilation, w_channels_last, alignment) < std::tie(o.device, o.dtype, o.transposed, o.groups,
                                                                     o.x_dims, o.x_strides, o.w_dims, o.y_dims,
                                                                     o.y_strides, o.pad, o.stride, o.dilation,
                                                                     o.w_channels_last, o.alignment);
  }
};

struct ConvPlan {
  const Cudnn* api = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward_algo{};
  cudnnConvolutionBwdDataAlgo_t backward_algo{};
  std::unique_ptr<GraphConvPlan> graph;  // when the graph API's engine beat the legacy algorithms
  size_t workspace = 0;
  float milliseconds = 0;  // the chosen algorithm's time in the search; -1: taken from a tune file, untimed
  // A float32 channels-last convolution computed in NCHW instead: the
  // operands copied into packed NCHW, this plan of that geometry (kept in
  // the cache too), the result copied back. cuDNN's float32 engines for
  // NHWC are slower than its NCHW ones on some shapes by more than the
  // copies cost; the search measures both.
  const ConvPlan* detour = nullptr;
  // Computed as im2col and one cuBLASLt GEMM instead (gemm_route_shape):
  // at batch 1, cuDNN's float32 kernels leave most of the GPU idle where
  // there are few output positions and a long reduction (deep 512-channel
  // 7x7 layers), which a GEMM splits along k.
  bool gemm_route = false;
  ~ConvPlan() {
    if (!api) return;
    if (x) api->tensor_destroy(x);
    if (y) api->tensor_destroy(y);
    if (bias) api->tensor_destroy(bias);
    if (w) api->filter_destroy(w);
    if (conv) api->conv_destroy(conv);
  }
};

struct ConvState {
  std::mutex mutex;  // one handle per device: cuDNN's handle holds the stream
  std::map<int, cudnnHandle_t> handles;
  std::map<ConvKey, std::unique_ptr<ConvPlan>> plans;
  std::map<std::pair<int, cudaStream_t>, std::pair<void*, size_t>> workspaces;
};

ConvState& conv_state() {
  static ConvState* kept = new ConvState;  // outlives every model
  return *kept;
}

// The stream's workspace, grown to `bytes` where it may allocate (not
// during a capture). nullptr when it cannot.
void* workspace(int device, cudaStream_t stream, size_t bytes) {
  auto& slot = conv_state().workspaces[{device, stream}];
  if (slot.second >= bytes) return slot.first;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &capturing);
  if (capturing != cudaStreamCaptureStatusNone) return nullptr;
  cudaStreamSynchronize(stream);
  if (slot.first) cudaFree(slot.first);
  slot = {nullptr, 0};
  void* data = nullptr;
  if (cudaMalloc(&data, bytes) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  slot = {data, bytes};
  return data;
}

// PTBUNDLE_CUDNN_GRAPH=0: the legacy algorithms only, to compare against.
bool graph_enabled() { return settings().cudnn_graph; }

std::string ints_text(const std::vector<int>& v) {
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) text += (i ? "," : "") + std::to_string(v[i]);
  return text;
}

// The key's words in a tune file: every field but the device, which the
// file's GPU entry stands for.
std::string key_text(const ConvKey& k) {
  return "dtype=" + std::to_string(k.dtype) + " transposed=" + (k.transposed ? "1" : "0") +
         " groups=" + std::to_string(k.groups) + " x=" + ints_text(k.x_dims) + "/" + ints_text(k.x_strides) +
         " w=" + ints_text(k.w_dims) + (k.w_channels_last ? "/nhwc" : "/nchw") + " y=" + ints_text(k.y_dims) + "/" +
         ints_text(k.y_strides) + " pad=" + ints_text(k.pad) + " stride=" + ints_text(k.stride) +
         " dilation=" + ints_text(k.dilation) + " align=" + std::to_string(k.alignment[0]) + "," +
         std::to_string(k.alignment[1]) + "," + std::to_string(k.alignment[2]);
}

// A plan's choice in a tune file: "graph=<cuDNN engine>" or "legacy=<algorithm
// enum>", then the route: "route=cudnn", "route=nchw" (the channels-last
// detour) or "route=gemm" (im2col and one GEMM).
std::string choice_text(const ConvPlan& plan, bool transposed) {
  std::string text = plan.graph ? "graph=" + std::to_string(plan.graph->engine_index())
                                : "legacy=" + std::to_string(transposed ? static_cast<int>(plan.backward_algo)
                                                                         : static_cast<int>(plan.forward_algo));
  return text + (plan.gemm_route ? " route=gemm" : plan.detour ? " route=nchw" : " route=cudnn");
}

template <typename Perf>
void trace_search(const ConvKey& key, const Perf* results, int found) {
  if (!tracing()) return;
  std::fprintf(stderr, "cudnn %s x[%s]/[%s] w[%s]%s y[%s]/[%s] pad %s stride %s groups %lld\n",
               key.transposed ? "bwd-data" : "fwd", ints_text(key.x_dims).c_str(), ints_text(key.x_strides).c_str(),
               ints_text(key.w_dims).c_str(), key.w_channels_last ? " nhwc" : "", ints_text(key.y_dims).c_str(),
               ints_text(key.y_strides).c_str(), ints_text(key.pad).c_str(), ints_text(key.stride).c_str(),
               static_cast<long long>(key.groups));
  for (int i = 0; i < found; ++i) {
    std::fprintf(stderr, "  algo %d status %d %.4f ms %zu bytes math %d\n", static_cast<int>(results[i].algo),
                 static_cast<int>(results[i].status), results[i].time, results[i].memory,
                 static_cast<int>(results[i].mathType));
  }
}

std::vector<int> as_ints(const std::vector<int64_t>& values) { return std::vector<int>(values.begin(), values.end()); }

// cuDNN takes 4-d and 5-d tensors: a 1-d convolution is a 2-d one with a
// height of 1.
std::vector<int64_t> with_height(const std::vector<int64_t>& v, int64_t value) {
  std::vector<int64_t> out = v;
  out.insert(out.begin() + 2, value);
  return out;
}

std::vector<int64_t> param_with_height(const std::vector<int64_t>& v, int64_t value) {
  std::vector<int64_t> out = v;
  out.insert(out.begin(), value);
  return out;
}

GraphConvShape graph_shape(const ConvKey& key, cudnnDataType_t type) {
  GraphConvShape shape;
  shape.backward_data = key.transposed;
  shape.data_type = type;
  shape.compute_type = key.dtype == ScalarType::Double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  shape.tensor_cores = key.dtype == ScalarType::Half || key.dtype == ScalarType::BFloat16;
  auto wide = [](const std::vector<int>& v) { return std::vector<int64_t>(v.begin(), v.end()); };
  shape.x_dims = wide(key.x_dims);
  shape.x_strides = wide(key.x_strides);
  shape.y_dims = wide(key.y_dims);
  shape.y_strides = wide(key.y_strides);
  shape.w_dims = wide(key.w_dims);
  shape.w_strides = key.w_channels_last ? channels_last_strides(shape.w_dims) : contiguous_strides(shape.w_dims);
  shape.pad = wide(key.pad);
  shape.stride = wide(key.stride);
  shape.dilation = wide(key.dilation);
  shape.x_align = key.alignment[0];
  shape.w_align = key.alignment[1];
  shape.y_align = key.alignment[2];
  return shape;
}

Result<ConvPlan*> plan_for(const Cudnn& api, cudnnHandle_t handle, const ConvKey& key, const Tensor& x, const Tensor& w,
                           const Tensor& y, cudaStream_t stream, bool other_routes);

// Float32 forward convolutions whose input is not packed NCHW.
bool detour_may_help(const ConvKey& key) {
  if (key.transposed || key.dtype != ScalarType::Float) return false;
  std::vector<int64_t> dims(key.x_dims.begin(), key.x_dims.end());
  const std::vector<int64_t> packed = contiguous_strides(dims);
  return !std::equal(packed.begin(), packed.end(), key.x_strides.begin(), key.x_strides.end());
}

// `key`'s convolution on packed NCHW copies xn, wn, yn of its operands.
ConvKey packed_key(const ConvKey& key, const Tensor& xn, const Tensor& wn, const Tensor& yn) {
  ConvKey packed = key;
  auto packed_strides = [](const std::vector<int>& dims) {
    return as_ints(contiguous_strides(std::vector<int64_t>(dims.begin(), dims.end())));
  };
  packed.x_strides = packed_strides(key.x_dims);
  packed.y_strides = packed_strides(key.y_dims);
  packed.w_channels_last = false;
  packed.alignment = {pointer_alignment(xn.data()), pointer_alignment(wn.data()), pointer_alignment(yn.data())};
  return packed;
}

// The NCHW plan for `key`'s convolution when it, with the copies in and
// out, beats `direct_ms`; else nullptr (a failure only means no detour).
const ConvPlan* find_detour(const Cudnn& api, cudnnHandle_t handle, const ConvKey& key, const Tensor& x,
                            const Tensor& w, const Tensor& y, cudaStream_t stream, float direct_ms, float& taken_ms) {
  auto xn = empty_like(x);
  auto wn = empty_like(w);
  auto yn = empty_like(y);
  if (!xn || !wn || !yn) return nullptr;
  const bool copy_weight = !w.is_contiguous();
  const float in_ms = mean_ms(stream, Timing::as_launched, [&] {
    (void)copy_elements(*xn, x);
    if (copy_weight) (void)copy_elements(*wn, w);
  });
  const float out_ms = mean_ms(stream, Timing::as_launched, [&] { (void)copy_elements(y, *yn); });
  if (in_ms < 0 || out_ms < 0) return nullptr;
  // Its own search, on the packed copies (the output's contents are
  // overwritten by the copy back in every call).
  auto nchw = plan_for(api, handle, packed_key(key, *xn, *wn, *yn), *xn, *wn, *yn, stream, false);
  if (!nchw.ok() || (*nchw)->milliseconds < 0) return nullptr;  // untimed: nothing to compare
  const float detour_ms = (*nchw)->milliseconds + in_ms + out_ms;
  // Taken only by a clear margin: the searches' times vary by a few percent
  // from run to run, and a tie is not worth three more launches.
  const bool taken = detour_ms < 0.9f * direct_ms;
  if (tracing()) {
    std::fprintf(stderr, "  detour through NCHW: %.4f ms (copies %.4f + %.4f ms) against %.4f ms: %s\n", detour_ms,
                 in_ms, out_ms, direct_ms, taken ? "taken" : "not taken");
  }
  if (taken) taken_ms = detour_ms;
  return taken ? *nchw : nullptr;
}

// Runs a found plan on the stream its handle holds: x, w and y as the
// plan's descriptors say; forward writes y, transposed (backward-data)
// reads y (dy) and writes x (dx).
cudnnStatus_t run_plan(const Cudnn& api, cudnnHandle_t handle, const ConvPlan& plan, bool transposed, int32_t dtype,
                       void* x, const void* w, void* y, void* work) {
  if (plan.graph) return plan.graph->run(handle, x, w, y, work);
  const float one32 = 1, zero32 = 0;
  const double one64 = 1, zero64 = 0;
  const void* one = dtype == ScalarType::Double ? static_cast<const void*>(&one64) : &one32;
  const void* zero = dtype == ScalarType::Double ? static_cast<const void*>(&zero64) : &zero32;
  return !transposed ? api.forward(handle, one, plan.x, x, plan.w, w, plan.conv, plan.forward_algo, work,
                                   plan.workspace, zero, plan.y, y)
                     : api.backward_data(handle, one, plan.w, w, plan.y, y, plan.conv, plan.backward_algo, work,
                                         plan.workspace, zero, plan.x, x);
}

// A bias ATen's convolution takes: [C_out], of the output's channels.
Status check_bias(const Tensor* bias, int64_t out_channels) {
  if (bias && (bias->sizes.size() != 1 || bias->sizes[0] != out_channels)) {
    return invalid("bias " + tensor_text(*bias) + " for " + std::to_string(out_channels) + " output channels");
  }
  return {};
}

// The GEMM route's operands for `key`'s convolution: the im2col geometry,
// the output as out^T [P, C_out] and the weight as weight^T [K, C_out]
// (views, no copy), for out^T = columns^T weight^T, in which a bias is a
// vector over the columns that cuBLASLt's epilogue adds; nullopt where the
// route does not apply.
struct GemmRouteShape {
  Im2col geometry;
  Tensor weight_t, out_t;
};

// Routes worth a measurement: forward, float32, ungrouped, batch 1, at most
// this many output positions (beyond, cuDNN's kernels fill the GPU).
constexpr int64_t kGemmRoutePositions = 4096;

std::optional<GemmRouteShape> gemm_route_shape(const ConvKey& key, const Tensor& w, const Tensor& y) {
  if (key.transposed || key.dtype != ScalarType::Float || key.groups != 1 || key.x_dims.size() != 4 ||
      key.x_dims[0] != 1) {
    return std::nullopt;
  }
  const int64_t out_h = key.y_dims[2], out_w = key.y_dims[3], positions = out_h * out_w;
  if (positions > kGemmRoutePositions) return std::nullopt;
  // The output's positions one uniform stride apart (NCHW and NHWC are).
  if (out_h > 1 && key.y_strides[2] != out_w * key.y_strides[3]) return std::nullopt;
  GemmRouteShape shape;
  Im2col& g = shape.geometry;
  if (w.is_contiguous()) {
    g.channels_inner = false;
  } else if (w.sizes.size() == 4 && w.strides == channels_last_strides(w.sizes)) {
    g.channels_inner = true;
  } else {
    return std::nullopt;
  }
  g.channels = key.x_dims[1];
  g.height = key.x_dims[2];
  g.width = key.x_dims[3];
  g.stride_c = key.x_strides[1];
  g.stride_h = key.x_strides[2];
  g.stride_w = key.x_strides[3];
  g.kernel_h = key.w_dims[2];
  g.kernel_w = key.w_dims[3];
  g.step_h = key.stride[0];
  g.step_w = key.stride[1];
  g.pad_h = key.pad[0];
  g.pad_w = key.pad[1];
  g.dilation_h = key.dilation[0];
  g.dilation_w = key.dilation[1];
  g.out_h = out_h;
  g.out_w = out_w;
  // The columns are made on every call: bounded, so that a wide layer
  // never asks the pool for more than 64 MiB of them.
  if (g.rows() * positions > (int64_t{16} << 20)) return std::nullopt;
  const int64_t out_channels = key.w_dims[0];
  shape.weight_t = w;
  shape.weight_t.sizes = {g.rows(), out_channels};
  shape.weight_t.strides = {1, g.rows()};
  shape.out_t = y;
  shape.out_t.sizes = {positions, out_channels};
  shape.out_t.strides = {key.y_strides[3], key.y_strides[1]};
  return shape;
}

// The convolution into y (the view shape.out_t), plus `bias` when given.
Status run_gemm_route(const GemmRouteShape& shape, const Tensor& x, const Tensor* bias, cudaStream_t stream) {
  const Im2col& g = shape.geometry;
  PTB_TRY(Tensor columns, empty_cuda({g.rows(), g.columns()}, ScalarType::Float, x.storage->device_index));
  cudaError_t code = kernels::im2col(g, static_cast<const float*>(x.data()), static_cast<float*>(columns.data()), stream);
  if (code != cudaSuccess) return invalid(cudaGetErrorString(code));
  Tensor columns_t = columns;
  columns_t.sizes = {g.columns(), g.rows()};
  columns_t.strides = {1, g.columns()};
  if (!bias) return matmul(shape.out_t, columns_t, shape.weight_t, 1.0, 0.0);
  PTB_CHECK(check_bias(bias, shape.out_t.sizes[1]));
  return addmm_into(shape.out_t, *bias, columns_t, shape.weight_t, 1.0, 1.0, Activation::None);
}

// Whether the GEMM route beats `chosen_ms` (cuDNN's best, with any detour)
// by a clear margin and gives cuDNN's result: both are computed here, on
// the real operands, and compared element by element.
bool gemm_route_wins(const Cudnn& api, cudnnHandle_t handle, const ConvPlan& plan, const ConvKey& key, const Tensor& x,
                     const Tensor& w, const Tensor& y, cudaStream_t stream, float chosen_ms) {
  auto shape = gemm_route_shape(key, w, y);
  if (!shape) return false;
  bool ran = true;
  const float route_ms =
      mean_ms(stream, Timing::as_launched, [&] { ran = ran && run_gemm_route(*shape, x, nullptr, stream).ok(); });
  const bool faster = ran && route_ms >= 0 && route_ms < 0.9f * chosen_ms;
  if (tracing()) {
    std::fprintf(stderr, "  GEMM route: %.4f ms against %.4f ms: %s\n", route_ms, chosen_ms,
                 !ran ? "failed" : faster ? "faster" : "not faster");
  }
  if (!faster) return false;
  // cuDNN's own plan into a second output of the same layout.
  auto reference = empty_strided_cuda(y.sizes, y.strides, y.dtype, y.storage->device_index);
  if (!reference) return false;
  void* work = plan.workspace ? workspace(key.device, stream, plan.workspace) : nullptr;
  if (plan.workspace && !work) return false;
  const cudnnStatus_t status = run_plan(api, handle, plan, false, key.dtype, x.data(), w.data(), reference->data(), work);
  if (status != CUDNN_STATUS_SUCCESS || !run_gemm_route(*shape, x, nullptr, stream).ok()) return false;
  const std::optional<Agreement> agreement = compare(y, *reference);
  // float32 sums of the same products in another order: far inside 1e-4 of
  // the largest value. Beyond it the route is wrong, and cuDNN serves.
  const bool agrees = agreement && agreement->within(1e-4);
  if (!agrees || tracing()) {
    std::fprintf(stderr, "ptbundle aoti runtime: convolution x[%s] w[%s]: the GEMM route %s cuDNN (max difference %g of %g)%s\n",
                 ints_text(key.x_dims).c_str(), ints_text(key.w_dims).c_str(), agrees ? "agrees with" : "disagrees with",
                 agreement ? agreement->difference : -1.0, agreement ? agreement->largest : -1.0,
                 agrees ? "; taken" : "; cuDNN serves it");
  }
  return agrees;
}

// A decimal number of at most 9 digits.
std::optional<int64_t> small_number(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Sets `plan` (whose descriptors are made) to a tune file's choice for
// `key` (choice_text's words), checked against what cuDNN accepts for the
// shape, without timing anything; an error says why it does not fit.
Status take_recorded(const Cudnn& api, cudnnHandle_t handle, ConvPlan& plan, const ConvKey& key,
                     const std::string& choice, const Tensor& x, const Tensor& w, const Tensor& y, cudaStream_t stream,
                     bool other_routes) {
  const size_t space = choice.find(' ');
  const std::string engine = choice.substr(0, space);
  const std::string route = space == std::string::npos ? "" : choice.substr(space + 1);
  const size_t equals = engine.find('=');
  const std::string kind = engine.substr(0, equals);
  const int64_t number = equals == std::string::npos ? -1 : small_number(engine.substr(equals + 1)).value_or(-1);
  const std::string expected = "; expected \"graph=<engine>\" or \"legacy=<algorithm>\", then \"route=cudnn\", "
                               "\"route=nchw\" or \"route=gemm\"";
  if (number < 0 || (kind != "graph" && kind != "legacy") ||
      (route != "route=cudnn" && route != "route=nchw" && route != "route=gemm")) {
    return invalid("the choice " + in_quotes(clipped(choice)) + " is not one this runtime makes" + expected);
  }
  if (kind == "graph") {
    if (!graph_enabled()) return invalid("cuDNN's graph API is off (PTBUNDLE_CUDNN_GRAPH=0)");
    PTB_TRY(plan.graph, graph_conv_engine(api, handle, graph_shape(key, cudnn_type(key.dtype)), number, kFindWorkspace));
    plan.workspace = plan.graph->workspace();
  } else if (!key.transposed) {
    if (number >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT) return invalid("no forward algorithm " + std::to_string(number));
    plan.forward_algo = static_cast<cudnnConvolutionFwdAlgo_t>(number);
    size_t bytes = 0;
    const cudnnStatus_t status = api.forward_workspace(handle, plan.x, plan.w, plan.conv, plan.y, plan.forward_algo, &bytes);
    if (status != CUDNN_STATUS_SUCCESS) return invalid("forward algorithm " + std::to_string(number) + ": " + cudnn_text(api, status));
    plan.workspace = bytes;
  } else {
    if (number >= CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) return invalid("no backward-data algorithm " + std::to_string(number));
    plan.backward_algo = static_cast<cudnnConvolutionBwdDataAlgo_t>(number);
    size_t bytes = 0;
    const cudnnStatus_t status =
        api.backward_data_workspace(handle, plan.w, plan.y, plan.conv, plan.x, plan.backward_algo, &bytes);
    if (status != CUDNN_STATUS_SUCCESS) return invalid("backward-data algorithm " + std::to_string(number) + ": " + cudnn_text(api, status));
    plan.workspace = bytes;
  }
  if (plan.workspace > kFindWorkspace) {
    return invalid("the algorithm needs " + std::to_string(plan.workspace) + " bytes of workspace; at most " +
                   std::to_string(kFindWorkspace) + " are given");
  }
  plan.milliseconds = -1;
  if (route == "route=gemm") {
    if (!other_routes || !gemm_route_shape(key, w, y)) return invalid("the GEMM route does not apply to this convolution");
    plan.gemm_route = true;
  } else if (route == "route=nchw") {
    if (!other_routes || !detour_may_help(key)) return invalid("the NCHW detour does not apply to this convolution");
    auto xn = empty_like(x);
    auto wn = empty_like(w);
    auto yn = empty_like(y);
    if (!xn || !wn || !yn) return invalid("cannot allocate the NCHW copies");
    PTB_TRY(plan.detour, plan_for(api, handle, packed_key(key, *xn, *wn, *yn), *xn, *wn, *yn, stream, false));
  }
  return {};
}

Result<ConvPlan*> plan_for(const Cudnn& api, cudnnHandle_t handle, const ConvKey& key, const Tensor& x, const Tensor& w,
                           const Tensor& y, cudaStream_t stream, bool other_routes) {
  ConvState& state = conv_state();
  if (auto found = state.plans.find(key); found != state.plans.end()) return found->second.get();
  auto plan = std::make_unique<ConvPlan>();
  plan->api = &api;
  const cudnnDataType_t type = cudnn_type(key.dtype);
  auto check = [&](cudnnStatus_t status) -> Status {
    if (status != CUDNN_STATUS_SUCCESS) return invalid(cudnn_text(api, status));
    return {};
  };
  const int dims = static_cast<int>(key.x_dims.size());
  PTB_CHECK(check(api.tensor_create(&plan->x)));
  PTB_CHECK(check(api.tensor_set(plan->x, type, dims, key.x_dims.data(), key.x_strides.data())));
  PTB_CHECK(check(api.tensor_create(&plan->y)));
  PTB_CHECK(check(api.tensor_set(plan->y, type, dims, key.y_dims.data(), key.y_strides.data())));
  PTB_CHECK(check(api.filter_create(&plan->w)));
  PTB_CHECK(check(api.filter_set(plan->w, type, key.w_channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, dims,
                                 key.w_dims.data())));
  PTB_CHECK(check(api.conv_create(&plan->conv)));
  const cudnnDataType_t compute = key.dtype == ScalarType::Double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  PTB_CHECK(check(api.conv_set(plan->conv, dims - 2, key.pad.data(), key.stride.data(), key.dilation.data(),
                               CUDNN_CROSS_CORRELATION, compute)));
  PTB_CHECK(check(api.conv_groups(plan->conv, static_cast<int>(key.groups))));
  const bool reduced = key.dtype == ScalarType::Half || key.dtype == ScalarType::BFloat16;
  PTB_CHECK(check(api.conv_math(plan->conv, reduced ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH)));

  const std::string words = key_text(key);
  if (auto recorded = recorded_choice(key.device, kTunedConvolution, words, api.version())) {
    Status taken = take_recorded(api, handle, *plan, key, *recorded, x, w, y, stream, other_routes);
    if (taken.ok()) {
      note_choice(key.device, kTunedConvolution, words, choice_text(*plan, key.transposed), api.version(), false);
      if (tracing()) std::fprintf(stderr, "cudnn %s: the tune file's %s\n", words.c_str(), recorded->c_str());
      ConvPlan* kept = plan.get();
      state.plans[key] = std::move(plan);
      return kept;
    }
    refuse_recorded(key.device, kTunedConvolution, words, taken.error().message);
    plan->graph.reset();
    plan->detour = nullptr;
    plan->gemm_route = false;
  }

  // The search runs candidates into the real output, with its own
  // workspace; the winner's workspace is what the calls need.
  void* scratch = nullptr;
  if (cudaMalloc(&scratch, kFindWorkspace) != cudaSuccess) {
    cudaGetLastError();
    return invalid("cannot allocate " + std::to_string(kFindWorkspace >> 20) + " MiB to search cuDNN's algorithms");
  }
  PTB_CHECK(check(api.set_stream(handle, stream)));
  // The graph API's engines first, then the legacy algorithms; the faster
  // of the two bests serves the calls. The graph API reaches engines the
  // legacy find never tries (eager PyTorch's path, faster for channels-last
  // convolutions), so it is on unless PTBUNDLE_CUDNN_GRAPH=0.
  std::optional<GraphConvChoice> graph;
  if (!graph_enabled()) {
  } else if (auto found_graph = find_graph_conv(api, handle, graph_shape(key, type), x.data(), w.data(), y.data(), stream,
                                         scratch, kFindWorkspace, tracing());
      found_graph.ok()) {
    graph = std::move(*found_graph);
  } else if (tracing()) {
    std::fprintf(stderr, "  graph: %s\n", found_graph.error().message.c_str());
  }
  float legacy_ms = -1;
  int found = 0;
  cudnnStatus_t status;
  if (!key.transposed) {
    cudnnConvolutionFwdAlgoPerf_t results[8];
    status = api.find_forward(handle, plan->x, x.data(), plan->w, w.data(), plan->conv, plan->y, y.data(), 8, &found,
                              results, scratch, kFindWorkspace);
    trace_search(key, results, found);
    int best = -1;
    for (int i = 0; i < found && best < 0; ++i)
      if (results[i].status == CUDNN_STATUS_SUCCESS) best = i;
    if (status == CUDNN_STATUS_SUCCESS && best >= 0) {
      plan->forward_algo = results[best].algo;
      plan->workspace = results[best].memory;
      legacy_ms = results[best].time;
    }
    if (best < 0 && status == CUDNN_STATUS_SUCCESS) status = CUDNN_STATUS_NOT_SUPPORTED;
  } else {
    // Transposed: dx = backward-data(w, dy) with the input as dy.
    cudnnConvolutionBwdDataAlgoPerf_t results[8];
    // key.x_* describe dx (the output), key.y_* dy (the input): `x` is the
    // output tensor here and `y` the input.
    status = api.find_backward_data(handle, plan->w, w.data(), plan->y, y.data(), plan->conv, plan->x, x.data(), 8,
                                    &found, results, scratch, kFindWorkspace);
    trace_search(key, results, found);
    int best = -1;
    for (int i = 0; i < found && best < 0; ++i)
      if (results[i].status == CUDNN_STATUS_SUCCESS) best = i;
    if (status == CUDNN_STATUS_SUCCESS && best >= 0) {
      plan->backward_algo = results[best].algo;
      plan->workspace = results[best].memory;
      legacy_ms = results[best].time;
    }
    if (best < 0 && status == CUDNN_STATUS_SUCCESS) status = CUDNN_STATUS_NOT_SUPPORTED;
  }
  cudaStreamSynchronize(stream);
  cudaFree(scratch);
  plan->milliseconds = legacy_ms;
  if (graph && (status != CUDNN_STATUS_SUCCESS || graph->milliseconds < legacy_ms)) {
    plan->workspace = graph->plan->workspace();
    plan->milliseconds = graph->milliseconds;
    plan->graph = std::move(graph->plan);
    status = CUDNN_STATUS_SUCCESS;
  }
  if (tracing()) {
    std::fprintf(stderr, "  chosen: %s\n",
                 plan->graph ? plan->graph->engine().c_str() : status == CUDNN_STATUS_SUCCESS ? "legacy" : "none");
  }
  if (status != CUDNN_STATUS_SUCCESS) return invalid("no cuDNN algorithm for this convolution: " + cudnn_text(api, status));
  float chosen_ms = plan->milliseconds;
  if (other_routes && detour_may_help(key)) {
    plan->detour = find_detour(api, handle, key, x, w, y, stream, plan->milliseconds, chosen_ms);
  }
  if (other_routes) plan->gemm_route = gemm_route_wins(api, handle, *plan, key, x, w, y, stream, chosen_ms);
  note_choice(key.device, kTunedConvolution, words, choice_text(*plan, key.transposed), api.version(), true);
  ConvPlan* kept = plan.get();
  state.plans[key] = std::move(plan);
  return kept;
}

Result<cudnnHandle_t> handle_for(const Cudnn& api, int device) {
  cudnnHandle_t& handle = conv_state().handles[device];
  if (!handle) {
    cudnnStatus_t status = api.create(&handle);
    if (status != CUDNN_STATUS_SUCCESS) {
      handle = nullptr;
      return invalid(cudnn_text(api, status));
    }
  }
  return handle;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string text = "[";
  for (size_t i = 0; i < v.size(); ++i) text += (i ? ", " : "") + std::to_string(v[i]);
  return text + "]";
}

// One per spatial dimension: the value, or the single value repeated.
Result<std::vector<int64_t>> per_dim(const char* name, const int64_t* values, int64_t length, size_t spatial,
                                     int64_t fallback) {
  if (length == 0 || !values) return std::vector<int64_t>(spatial, fallback);
  if (length == 1) return std::vector<int64_t>(spatial, values[0]);
  if (static_cast<size_t>(length) != spatial) {
    return invalid(std::string(name) + " has " + std::to_string(length) + " values for " + std::to_string(spatial) +
                   " spatial dimensions");
  }
  return std::vector<int64_t>(values, values + length);
}

// out += bias, broadcast over every position as ATen adds it, in the
// output's layout.
Status add_bias(const Tensor& out, const Tensor* bias, int64_t out_channels) {
  if (!bias) return {};
  PTB_CHECK(check_bias(bias, out_channels));
  Tensor expanded = *bias;
  expanded.sizes = out.sizes;
  expanded.strides.assign(out.sizes.size(), 0);
  expanded.strides[1] = bias->strides[0];
  return add_into(out, expanded);
}

Result<Tensor> convolve(const Tensor& input, const Tensor& weight, const Tensor* bias, const ConvArgs& args);

// A transposed convolution whose output padding reaches a stride (ATen
// allows any output padding under the stride or the dilation): cuDNN
// computes it as the backward-data of a forward convolution, which has no
// such geometry. The output's extra positions are the ones input positions
// past the end would feed, so the same result comes from the input padded
// with output_padding / stride zeros at the end of that dimension and the
// remainder as output padding.
std::optional<Result<Tensor>> convolve_big_output_padding(const Tensor& input, const Tensor& weight,
                                                          const Tensor* bias, const ConvArgs& args) {
  if (!args.transposed || input.sizes.size() < 3) return std::nullopt;
  const size_t spatial = input.sizes.size() - 2;
  ConvArgs fitted = args;
  Tensor padded_shape = input;
  bool needed = false;
  for (size_t d = 0; d < spatial && d < args.output_padding.size() && d < args.stride.size(); ++d) {
    const int64_t s = args.stride[d], o = args.output_padding[d];
    if (s < 1 || o < s) continue;
    needed = true;
    padded_shape.sizes[2 + d] += o / s;
    fitted.output_padding[d] = o % s;
  }
  if (!needed) return std::nullopt;
  padded_shape.strides = strides_like_channels_last(input.sizes, input.strides) ? channels_last_strides(padded_shape.sizes)
                                                                               : contiguous_strides(padded_shape.sizes);
  padded_shape.storage_offset = 0;
  auto made = empty_strided_cuda(padded_shape.sizes, padded_shape.strides, input.dtype, input.storage->device_index);
  if (!made) return Result<Tensor>(made.take_error());
  if (cudaError_t code = cudaMemsetAsync(made->data(), 0, made->storage->nbytes, stream_for(input)); code != cudaSuccess) {
    return Result<Tensor>(invalid(cudaGetErrorString(code)));
  }
  Tensor leading = *made;  // the padded input's first positions: where the input goes
  leading.sizes = input.sizes;
  if (Status copied = copy_elements(leading, input); !copied.ok()) return Result<Tensor>(copied.take_error());
  return convolve(*made, weight, bias, fitted);
}

Result<Tensor> convolve(const Tensor& input, const Tensor& weight, const Tensor* bias, const ConvArgs& args) {
  if (auto detour = convolve_big_output_padding(input, weight, bias, args)) return std::move(*detour);
  const size_t dims = input.sizes.size();
  if (dims < 3 || dims > 5) return invalid("input " + tensor_text(input) + "; expected 3 to 5 dimensions (N, C, spatial)");
  if (weight.sizes.size() != dims) return invalid("weight " + tensor_text(weight) + " and input have different ranks");
  if (input.dtype != weight.dtype || (bias && bias->dtype != input.dtype)) {
    return invalid("input, weight and bias of " + std::string(scalar_type_name(input.dtype)) + ", " + std::string(scalar_type_name(weight.dtype)) +
                   (bias ? ", " + std::string(scalar_type_name(bias->dtype)) : std::string()));
  }
  if (input.dtype != ScalarType::Float && input.dtype != ScalarType::Half && input.dtype != ScalarType::BFloat16 && input.dtype != ScalarType::Double) {
    return invalid(std::string(scalar_type_name(input.dtype)) + "; expected float32, float16, bfloat16 or float64");
  }
  for (const Tensor* t : {&input, &weight, bias}) {
    if (t && t->storage->device_type != kDeviceCuda) return invalid("an operand is not on the GPU");
  }
  const size_t spatial = dims - 2;
  const int64_t groups = args.groups;
  const int64_t batch = input.sizes[0], channels = input.sizes[1];
  if (groups < 1 || channels % groups != 0) return invalid(std::to_string(channels) + " channels in " + std::to_string(groups) + " groups");
  int64_t out_channels = 0;
  if (!args.transposed) {
    out_channels = weight.sizes[0];
    if (weight.sizes[1] * groups != channels || out_channels % groups != 0) {
      return invalid("weight " + tensor_text(weight) + " for " + std::to_string(channels) + " input channels in " +
                     std::to_string(groups) + " groups");
    }
  } else {
    out_channels = weight.sizes[1] * groups;
    if (weight.sizes[0] != channels) {
      return invalid("transposed weight " + tensor_text(weight) + " for " + std::to_string(channels) + " input channels");
    }
  }
  std::vector<int64_t> out_sizes = {batch, out_channels};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t in = input.sizes[2 + d], k = weight.sizes[2 + d];
    const int64_t s = args.stride[d], p = args.padding[d], dl = args.dilation[d];
    if (s < 1 || dl < 1 || p < 0) return invalid("stride " + list_text(args.stride) + ", padding " + list_text(args.padding) + ", dilation " + list_text(args.dilation));
    const int64_t size = args.transposed ? (in - 1) * s - 2 * p + dl * (k - 1) + args.output_padding[d] + 1
                                         : (in + 2 * p - dl * (k - 1) - 1) / s + 1;
    if (size <= 0) return invalid("the output's spatial dimension " + std::to_string(d) + " would be " + std::to_string(size));
    out_sizes.push_back(size);
  }
  const bool channels_last =
      strides_like_channels_last(input.sizes, input.strides) || strides_like_channels_last(weight.sizes, weight.strides);
  Tensor out;
  out.sizes = out_sizes;
  out.strides = channels_last ? channels_last_strides(out_sizes) : contiguous_strides(out_sizes);
  out.dtype = input.dtype;
  uint64_t bytes = static_cast<uint64_t>(out.numel()) * out.itemsize();
  PTB_TRY(out.storage, allocate(bytes, kDeviceCuda, input.storage->device_index));
  if (out.numel() == 0) return out;

  // The weight as cuDNN takes a filter: packed NCHW or NHWC.
  std::optional<Tensor> packed_weight;
  const bool w_channels_last = strides_like_channels_last(weight.sizes, weight.strides);
  const Tensor* w = &weight;
  if (!(weight.is_contiguous() || (w_channels_last && weight.strides == channels_last_strides(weight.sizes)))) {
    PTB_TRY(packed_weight, empty_like(weight));
    PTB_CHECK(copy_elements(*packed_weight, weight));
    w = &*packed_weight;
  }
  const bool w_nhwc = w != &weight ? false : w_channels_last && !weight.is_contiguous();

  ConvKey key;
  key.device = input.storage->device_index;
  key.dtype = input.dtype;
  key.transposed = args.transposed;
  key.groups = groups;
  const bool one_d = spatial == 1;
  auto lift = [&](const std::vector<int64_t>& v, int64_t extra) { return one_d ? with_height(v, extra) : v; };
  // The dummy height's stride: any value fits a size of 1; the one that
  // keeps the layout packed.
  key.x_dims = as_ints(lift(input.sizes, 1));
  key.x_strides = as_ints(lift(input.strides, input.strides[2] * std::max<int64_t>(input.sizes[2], 1)));
  key.y_dims = as_ints(lift(out.sizes, 1));
  key.y_strides = as_ints(lift(out.strides, out.strides[2] * std::max<int64_t>(out.sizes[2], 1)));
  key.w_dims = as_ints(lift(w->sizes, 1));
  key.pad = as_ints(one_d ? param_with_height(args.padding, 0) : args.padding);
  key.stride = as_ints(one_d ? param_with_height(args.stride, 1) : args.stride);
  key.dilation = as_ints(one_d ? param_with_height(args.dilation, 1) : args.dilation);
  key.w_channels_last = w_nhwc;
  if (args.transposed) std::swap(key.x_dims, key.y_dims), std::swap(key.x_strides, key.y_strides);

  const Tensor& x_tensor = args.transposed ? out : input;
  const Tensor& y_tensor = args.transposed ? input : out;
  key.alignment = {pointer_alignment(x_tensor.data()), pointer_alignment(w->data()), pointer_alignment(y_tensor.data())};

  const Cudnn* api = cudnn();
  if (!api) return invalid("cuDNN cannot be opened: " + why_cudnn());
  const cudaStream_t stream = stream_for(input);
  std::lock_guard lock(conv_state().mutex);
  PTB_TRY(cudnnHandle_t handle, handle_for(*api, key.device));
  PTB_TRY(ConvPlan* found, plan_for(*api, handle, key, x_tensor, *w, y_tensor, stream, true));
  if (found->gemm_route) {
    auto shape = gemm_route_shape(key, *w, y_tensor);
    if (!shape) return invalid("the convolution's GEMM route no longer applies");
    PTB_CHECK(run_gemm_route(*shape, x_tensor, bias, stream));
    return out;
  }
  const ConvPlan* plan = found->detour ? found->detour : found;
  const Tensor* x_run = &x_tensor;
  const Tensor* w_run = w;
  const Tensor* y_run = &y_tensor;
  std::optional<Tensor> x_packed, w_packed, y_packed;
  if (found->detour) {
    // The last failure is the one reported; a weight that cannot be packed
    // is read as it is.
    std::string why;
    auto made_into = [&why](Result<Tensor> made, std::optional<Tensor>& into) {
      if (made) into = std::move(*made);
      else why = made.error().message;
    };
    made_into(empty_like(x_tensor), x_packed);
    if (x_packed && !w->is_contiguous()) made_into(empty_like(*w), w_packed);
    if (x_packed) made_into(empty_like(y_tensor), y_packed);
    if (!y_packed) return invalid(why);
    PTB_CHECK(copy_elements(*x_packed, x_tensor));
    if (w_packed) {
      PTB_CHECK(copy_elements(*w_packed, *w));
      w_run = &*w_packed;
    }
    x_run = &*x_packed;
    y_run = &*y_packed;
  }
  void* work = plan->workspace ? workspace(key.device, stream, plan->workspace) : nullptr;
  if (plan->workspace && !work) return invalid("no workspace of " + std::to_string(plan->workspace) + " bytes for cuDNN");
  cudnnStatus_t status = api->set_stream(handle, stream);
  if (status == CUDNN_STATUS_SUCCESS) {
    status = run_plan(*api, handle, *plan, args.transposed, input.dtype, x_run->data(), w_run->data(), y_run->data(),
                      work);
  }
  if (status != CUDNN_STATUS_SUCCESS) return invalid(cudnn_text(*api, status));
  if (y_packed) {
    PTB_CHECK(copy_elements(y_tensor, *y_packed));
  }
  PTB_CHECK(add_bias(out, bias, out_channels));
  return out;
}

}  // namespace

Result<std::vector<int64_t>> convolution_per_dim(const char* name, const int64_t* values, int64_t length,
                                                 size_t spatial, int64_t fallback) {
  return per_dim(name, values, length, spatial, fallback);
}

Result<Tensor> convolution(const Tensor& input, const Tensor& weight, const Tensor* bias, const ConvArgs& args) {
  return convolve(input, weight, bias, args);
}

}  // namespace ptb::builtin


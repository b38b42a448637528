#include "engines/cudnn_graph.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace ptb::builtin {
namespace {

// cuDNN 9 marks the graph's and the plan's handle attributes deprecated (a
// device-properties descriptor may stand in for the handle), but both are
// still what binds a graph to the handle that runs it. Named by value so
// that -Werror builds take them.
constexpr auto kGraphHandle = static_cast<cudnnBackendAttributeName_t>(800);  // OPERATIONGRAPH_HANDLE
constexpr auto kPlanHandle = static_cast<cudnnBackendAttributeName_t>(400);   // EXECUTION_PLAN_HANDLE

// At most this many engine configurations are built and timed per shape;
// heuristics order them best first, so the tail rarely wins.
constexpr size_t kMaxCandidates = 12;
constexpr int kTimedRuns = 3;

// Unique ids of the graph's tensors, as the variant pack names them.
constexpr int64_t kX = 'x', kW = 'w', kY = 'y';

// One backend descriptor. The first failing call's status sticks, so that a
// descriptor is built with a run of set()s and checked once.
class Descriptor {
 public:
  Descriptor(const Cudnn& api, cudnnBackendDescriptorType_t type) : api_(&api) {
    status_ = api.backend_create(type, &handle_);
    if (status_ != CUDNN_STATUS_SUCCESS) handle_ = nullptr;
  }
  ~Descriptor() {
    if (handle_) api_->backend_destroy(handle_);
  }
  Descriptor(Descriptor&& other) noexcept : api_(other.api_), handle_(other.handle_), status_(other.status_) {
    other.handle_ = nullptr;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor& operator=(Descriptor&&) = delete;

  cudnnBackendDescriptor_t get() const { return handle_; }
  cudnnBackendDescriptor_t release() {
    auto kept = handle_;
    handle_ = nullptr;
    return kept;
  }
  cudnnStatus_t status() const { return status_; }
  bool ok() const { return status_ == CUDNN_STATUS_SUCCESS; }

  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    if (ok()) status_ = api_->backend_set(handle_, name, type, count, values);
  }
  void set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& value) {
    cudnnBackendDescriptor_t handle = value.get();
    if (!value.ok()) status_ = value.status();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &handle);
  }
  void set_ints(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
    set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
  }
  void finalize() {
    if (ok()) status_ = api_->backend_finalize(handle_);
  }

 private:
  const Cudnn* api_;
  cudnnBackendDescriptor_t handle_ = nullptr;
  cudnnStatus_t status_;
};

Descriptor tensor(const Cudnn& api, int64_t id, cudnnDataType_t type, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& strides, int64_t alignment) {
  Descriptor d(api, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  d.set_ints(CUDNN_ATTR_TENSOR_DIMENSIONS, dims);
  d.set_ints(CUDNN_ATTR_TENSOR_STRIDES, strides);
  d.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id);
  d.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  d.finalize();
  return d;
}

Descriptor convolution(const Cudnn& api, const GraphConvShape& shape) {
  Descriptor d(api, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t spatial = static_cast<int64_t>(shape.pad.size());
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  d.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &shape.compute_type);
  d.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  d.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  d.set_ints(CUDNN_ATTR_CONVOLUTION_DILATIONS, shape.dilation);
  d.set_ints(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, shape.stride);
  d.set_ints(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, shape.pad);
  d.set_ints(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, shape.pad);
  d.finalize();
  return d;
}

Descriptor operation(const Cudnn& api, const GraphConvShape& shape, const Descriptor& x, const Descriptor& w,
                     const Descriptor& y, const Descriptor& conv) {
  const bool dx = shape.backward_data;
  Descriptor d(api, dx ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                       : CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  d.set_descriptor(dx ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
  d.set_descriptor(dx ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
  d.set_descriptor(dx ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
  d.set_descriptor(dx ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC
                      : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                   conv);
  const auto alpha = dx ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA;
  const auto beta = dx ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA : CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA;
  if (shape.data_type == CUDNN_DATA_DOUBLE) {
    const double one = 1, zero = 0;
    d.set(alpha, CUDNN_TYPE_DOUBLE, 1, &one);
    d.set(beta, CUDNN_TYPE_DOUBLE, 1, &zero);
  } else {
    const float one = 1, zero = 0;
    d.set(alpha, CUDNN_TYPE_FLOAT, 1, &one);
    d.set(beta, CUDNN_TYPE_FLOAT, 1, &zero);
  }
  d.finalize();
  return d;
}

// The engine configurations one heuristics mode offers, best first.
std::vector<Descriptor> heuristics(const Cudnn& api, const Descriptor& graph, cudnnBackendHeurMode_t mode) {
  Descriptor heur(api, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  heur.finalize();
  std::vector<Descriptor> configs;
  if (!heur.ok()) return configs;
  int64_t count = 0;
  if (api.backend_get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr) !=
          CUDNN_STATUS_SUCCESS ||
      count <= 0) {
    return configs;
  }
  count = std::min<int64_t>(count, 64);
  std::vector<cudnnBackendDescriptor_t> handles;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(api, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    handles.push_back(configs.back().get());
  }
  int64_t got = 0;
  if (api.backend_get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                      handles.data()) != CUDNN_STATUS_SUCCESS) {
    configs.clear();
    return configs;
  }
  while (static_cast<int64_t>(configs.size()) > std::max<int64_t>(got, 0)) configs.pop_back();
  return configs;
}

struct EngineFacts {
  int64_t index = -1;
  bool tensor_core = false, down_convert = false, runtime_compiled = false;
};

EngineFacts facts_of(const Cudnn& api, const Descriptor& config) {
  EngineFacts facts;
  Descriptor engine(api, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t handle = engine.get();
  int64_t n = 0;
  if (!engine.ok() || api.backend_get(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                      &handle) != CUDNN_STATUS_SUCCESS) {
    return facts;
  }
  api.backend_get(handle, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &facts.index);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (api.backend_get(handle, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                      CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < std::min<int64_t>(n, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++i) {
      facts.tensor_core |= notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
      facts.down_convert |= notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
    }
  }
  cudnnBackendBehaviorNote_t behaviors[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (api.backend_get(handle, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT,
                      &n, behaviors) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < std::min<int64_t>(n, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT); ++i)
      facts.runtime_compiled |= behaviors[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  }
  return facts;
}

// The median of a few timed runs, after one untimed; negative when a run fails.
float time_plan(const GraphConvPlan& plan, cudnnHandle_t handle, const void* x, const void* w, const void* y,
                void* workspace, cudaStream_t stream) {
  if (plan.run(handle, x, w, y, workspace) != CUDNN_STATUS_SUCCESS) return -1;
  cudaEvent_t start = nullptr, end = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess) {
    if (start) cudaEventDestroy(start);
    cudaGetLastError();
    return -1;
  }
  std::vector<float> times;
  for (int i = 0; i < kTimedRuns; ++i) {
    cudaEventRecord(start, stream);
    const cudnnStatus_t status = plan.run(handle, x, w, y, workspace);
    cudaEventRecord(end, stream);
    float ms = -1;
    if (status != CUDNN_STATUS_SUCCESS || cudaEventSynchronize(end) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start, end) != cudaSuccess) {
      times.clear();
      break;
    }
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  cudaGetLastError();
  if (times.empty()) return -1;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

GraphConvPlan::GraphConvPlan(const Cudnn& api, cudnnBackendDescriptor_t plan, int64_t workspace, bool backward_data,
                             int64_t engine_index)
    : api_(&api),
      plan_(plan),
      workspace_(workspace),
      backward_data_(backward_data),
      engine_index_(engine_index),
      engine_("engine " + std::to_string(engine_index)) {}

GraphConvPlan::~GraphConvPlan() {
  if (plan_) api_->backend_destroy(plan_);
}

cudnnStatus_t GraphConvPlan::run(cudnnHandle_t handle, const void* x, const void* w, const void* y,
                                 void* workspace) const {
  // The variant pack names the buffers of this call; building one costs
  // about a microsecond, as eager PyTorch pays per call too.
  Descriptor pack(*api_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t ids[3] = {kX, kW, kY};
  void* pointers[3] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  if (!pack.ok()) return pack.status();
  return api_->backend_execute(handle, plan_, pack.get());
}

int64_t pointer_alignment(const void* pointer) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  int64_t alignment = 16;
  while (alignment > 1 && address % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

namespace {

// The graph of one convolution, bound to `handle`.
Result<Descriptor> conv_graph(const Cudnn& api, cudnnHandle_t handle, const GraphConvShape& shape) {
  Descriptor xd = tensor(api, kX, shape.data_type, shape.x_dims, shape.x_strides, shape.x_align);
  Descriptor wd = tensor(api, kW, shape.data_type, shape.w_dims, shape.w_strides, shape.w_align);
  Descriptor yd = tensor(api, kY, shape.data_type, shape.y_dims, shape.y_strides, shape.y_align);
  Descriptor conv = convolution(api, shape);
  Descriptor op = operation(api, shape, xd, wd, yd, conv);
  Descriptor graph(api, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set_descriptor(CUDNN_ATTR_OPERATIONGRAPH_OPS, op);
  graph.set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle);
  graph.finalize();
  if (!graph.ok()) return invalid(std::string("cuDNN's graph API refused the convolution: ") + api.error_string(graph.status()));
  return graph;
}

// The engine configurations worth building for `shape`, best first, one per
// engine: float32 without TF32 (what the program was compiled against, and
// eager PyTorch's rule with allow_tf32 off); no engine that compiles
// kernels at run time (NVRTC, seconds on a robot's first call).
std::vector<std::pair<Descriptor, EngineFacts>> candidates(const Cudnn& api, const Descriptor& graph,
                                                           const GraphConvShape& shape, size_t& offered) {
  std::vector<Descriptor> configs = heuristics(api, graph, CUDNN_HEUR_MODE_A);
  for (auto& fallback : heuristics(api, graph, CUDNN_HEUR_MODE_FALLBACK)) configs.push_back(std::move(fallback));
  offered = configs.size();
  std::vector<std::pair<Descriptor, EngineFacts>> out;
  std::set<int64_t> tried;
  for (Descriptor& config : configs) {
    const EngineFacts facts = facts_of(api, config);
    if (facts.index >= 0 && !tried.insert(facts.index).second) continue;
    if ((!shape.tensor_cores && (facts.tensor_core || facts.down_convert)) || facts.runtime_compiled) continue;
    out.emplace_back(std::move(config), facts);
  }
  return out;
}

// An execution plan of `config`, when it finalizes and needs at most
// `scratch_bytes` of workspace.
std::unique_ptr<GraphConvPlan> build_plan(const Cudnn& api, cudnnHandle_t handle, const Descriptor& config,
                                          const EngineFacts& facts, const GraphConvShape& shape,
                                          uint64_t scratch_bytes) {
  Descriptor plan(api, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  plan.set(kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle);
  plan.finalize();
  if (!plan.ok()) return nullptr;
  int64_t workspace = 0, n = 0;
  if (api.backend_get(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &workspace) !=
          CUDNN_STATUS_SUCCESS ||
      workspace < 0 || static_cast<uint64_t>(workspace) > scratch_bytes) {
    return nullptr;
  }
  return std::make_unique<GraphConvPlan>(api, plan.release(), workspace, shape.backward_data, facts.index);
}

}  // namespace

Result<GraphConvChoice> find_graph_conv(const Cudnn& api, cudnnHandle_t handle, const GraphConvShape& shape,
                                        const void* x, const void* w, const void* y, cudaStream_t stream,
                                        void* scratch, uint64_t scratch_bytes, bool trace) {
  if (api.set_stream(handle, stream) != CUDNN_STATUS_SUCCESS) return invalid("cuDNN: cannot set the stream");
  PTB_TRY(Descriptor graph, conv_graph(api, handle, shape));
  size_t offered = 0;
  GraphConvChoice best;
  size_t built = 0;
  for (const auto& [config, facts] : candidates(api, graph, shape, offered)) {
    if (built == kMaxCandidates) break;
    auto candidate = build_plan(api, handle, config, facts, shape, scratch_bytes);
    if (!candidate) continue;
    ++built;
    const float ms = time_plan(*candidate, handle, x, w, y, scratch, stream);
    if (trace) {
      std::fprintf(stderr, "  graph %s %.4f ms %lld bytes\n", candidate->engine().c_str(), static_cast<double>(ms),
                   static_cast<long long>(candidate->workspace()));
    }
    if (ms >= 0 && (!best.plan || ms < best.milliseconds)) {
      best.plan = std::move(candidate);
      best.milliseconds = ms;
    }
  }
  if (!best.plan) return invalid("no engine of cuDNN's graph API runs this convolution (" + std::to_string(offered) + " offered)");
  return best;
}

Result<std::unique_ptr<GraphConvPlan>> graph_conv_engine(const Cudnn& api, cudnnHandle_t handle,
                                                         const GraphConvShape& shape, int64_t engine,
                                                         uint64_t scratch_bytes) {
  PTB_TRY(Descriptor graph, conv_graph(api, handle, shape));
  size_t offered = 0;
  for (const auto& [config, facts] : candidates(api, graph, shape, offered)) {
    if (facts.index != engine) continue;
    auto plan = build_plan(api, handle, config, facts, shape, scratch_bytes);
    if (!plan) return invalid("cuDNN's engine " + std::to_string(engine) + " does not build a plan for this convolution");
    return plan;
  }
  return invalid("cuDNN offers no engine " + std::to_string(engine) + " for this convolution (" +
                 std::to_string(offered) + " offered)");
}

}  // namespace ptb::builtin

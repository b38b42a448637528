// A convolution through cuDNN's graph (backend) API. Eager PyTorch reaches
// cuDNN this way, and it offers engines (the xmma implicit GEMMs among them)
// that the legacy cudnnConvolutionFwdAlgo_t enums do not, and which are
// often faster than the legacy search's best plan.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/cuda_libraries.h"
#include "ptbundle/base/result.h"

namespace ptb::builtin {

// One convolution, as cuDNN takes it (4-d or 5-d): forward, y = conv(x, w),
// or for a transposed convolution backward-data, x = conv^T(y, w), where x
// is then the output and y the input.
struct GraphConvShape {
  bool backward_data = false;
  cudnnDataType_t data_type = CUDNN_DATA_FLOAT;
  cudnnDataType_t compute_type = CUDNN_DATA_FLOAT;
  bool tensor_cores = false;  // false for float32: no TF32, as ATen with allow_tf32 off
  std::vector<int64_t> x_dims, x_strides, w_dims, w_strides, y_dims, y_strides;
  std::vector<int64_t> pad, stride, dilation;
  int64_t x_align = 16, w_align = 16, y_align = 16;  // the pointers' byte alignment
};

class GraphConvPlan {
 public:
  GraphConvPlan(const Cudnn& api, cudnnBackendDescriptor_t plan, int64_t workspace, bool backward_data,
                int64_t engine_index);
  ~GraphConvPlan();
  GraphConvPlan(const GraphConvPlan&) = delete;
  GraphConvPlan& operator=(const GraphConvPlan&) = delete;

  uint64_t workspace() const { return static_cast<uint64_t>(workspace_); }
  const std::string& engine() const { return engine_; }  // "engine 12", for traces
  int64_t engine_index() const { return engine_index_; }  // cuDNN's global index
  cudnnStatus_t run(cudnnHandle_t handle, const void* x, const void* w, const void* y, void* workspace) const;

 private:
  const Cudnn* api_;
  cudnnBackendDescriptor_t plan_;
  int64_t workspace_;
  bool backward_data_;
  int64_t engine_index_;
  std::string engine_;
};

struct GraphConvChoice {
  std::unique_ptr<GraphConvPlan> plan;
  float milliseconds = 0;  // its time in the search
};

// The engines cuDNN's heuristics offer for `shape`, each timed on the given
// buffers on `stream` (the output is overwritten), with at most
// `scratch_bytes` of workspace; the fastest is kept. An error when no engine
// runs: the caller then uses the legacy API. `trace`: each candidate on
// stderr.
Result<GraphConvChoice> find_graph_conv(const Cudnn& api, cudnnHandle_t handle, const GraphConvShape& shape,
                                        const void* x, const void* w, const void* y, cudaStream_t stream,
                                        void* scratch, uint64_t scratch_bytes, bool trace);

// The plan of cuDNN's engine `engine` (its global index, as a search chose
// it before) for `shape`, untimed: an error when the heuristics do not
// offer that engine for the shape or its plan does not build within
// `scratch_bytes` of workspace.
Result<std::unique_ptr<GraphConvPlan>> graph_conv_engine(const Cudnn& api, cudnnHandle_t handle,
                                                         const GraphConvShape& shape, int64_t engine,
                                                         uint64_t scratch_bytes);

// The largest of 16, 8, 4, 2, 1 that divides the address.
int64_t pointer_alignment(const void* pointer);

}  // namespace ptb::builtin

// cuBLAS(Lt) and cuDNN, opened at run time the first time a library that
// imports one of their shims is loaded (the shim table says which), so a
// program that needs neither never maps their 600 MB, and a machine without
// them runs every other part. Where one is missing, the load fails before
// the library is opened, naming the file, where it was looked for, and the
// shims that need it.
//
// Looked for, in order: $PTBUNDLE_CUBLAS_DIR or $PTBUNDLE_CUDNN_DIR, the
// loader's own search (LD_LIBRARY_PATH, the ld.so cache), then the CUDA
// toolkit's folders ($CUDA_HOME/lib64, /usr/local/cuda/lib64).
#pragma once

#include <cublasLt.h>
#include <cudnn.h>

#include <string>
#include <vector>

#include "ptbundle/base/result.h"

namespace ptb::builtin {

// The cuBLASLt functions the GEMM and attention shims call.
struct CublasLt {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtGetVersion) version = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) algo_config_get = nullptr;
  decltype(&cublasLtMatmulAlgoCheck) algo_check = nullptr;  // a tune file's algorithm, before use
  decltype(&cublasLtGetStatusString) status_string = nullptr;
};

// The cuDNN functions the convolution shim calls (cuDNN 9's convolution
// API: descriptors, algorithm search, forward and backward-data).
struct Cudnn {
  decltype(&cudnnGetVersion) version = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnCreateTensorDescriptor) tensor_create = nullptr;
  decltype(&cudnnSetTensorNdDescriptor) tensor_set = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) tensor_destroy = nullptr;
  decltype(&cudnnCreateFilterDescriptor) filter_create = nullptr;
  decltype(&cudnnSetFilterNdDescriptor) filter_set = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) filter_destroy = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) conv_create = nullptr;
  decltype(&cudnnSetConvolutionNdDescriptor) conv_set = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) conv_groups = nullptr;
  decltype(&cudnnSetConvolutionMathType) conv_math = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) conv_destroy = nullptr;
  decltype(&cudnnFindConvolutionForwardAlgorithmEx) find_forward = nullptr;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) forward_workspace = nullptr;
  decltype(&cudnnConvolutionForward) forward = nullptr;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithmEx) find_backward_data = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) backward_data_workspace = nullptr;
  decltype(&cudnnConvolutionBackwardData) backward_data = nullptr;
  decltype(&cudnnAddTensor) add_tensor = nullptr;
  // The graph (backend) API: the engines eager PyTorch's cuDNN v8 path
  // uses, which the legacy algorithm enums above do not all reach.
  decltype(&cudnnBackendCreateDescriptor) backend_create = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) backend_destroy = nullptr;
  decltype(&cudnnBackendSetAttribute) backend_set = nullptr;
  decltype(&cudnnBackendGetAttribute) backend_get = nullptr;
  decltype(&cudnnBackendFinalize) backend_finalize = nullptr;
  decltype(&cudnnBackendExecute) backend_execute = nullptr;
};

// Opened on first call; nullptr once opening failed (why_cublas() /
// why_cudnn() say why).
const CublasLt* cublas_lt();
const Cudnn* cudnn();
std::string why_cublas();
std::string why_cudnn();

// Opens what the shims among `imports` need; fails naming each missing
// library and its shims. `opened` says what was opened ("cuBLASLt 13.1 from
// /usr/local/cuda/lib64/libcublasLt.so.13").
Status open_libraries_for(const std::vector<std::string>& imports, const std::string& label, std::string& opened);

}  // namespace ptb::builtin

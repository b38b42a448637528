// The built-in runtime's environment variables, read once per process on
// first use, in this one place:
//   PTBUNDLE_CUDNN_GRAPH  "0" leaves cuDNN's graph API engines out of the
//                         convolution search (the legacy algorithms only)
//   PTBUNDLE_TRACE_SHIMS  any value: each search's candidates and each
//                         choice of way (GEMM, convolution, routes) on stderr
//   PTBUNDLE_CUBLAS_DIR   the folder of libcublasLt.so.13, looked in first
//   PTBUNDLE_CUDNN_DIR    the folder of libcudnn.so.9, looked in first
//   CUDA_HOME             the CUDA toolkit, whose lib64 is looked in
#pragma once

#include <string>

namespace ptb::builtin {

struct Settings {
  bool cudnn_graph = true;
  bool trace_shims = false;
  std::string cublas_dir;  // empty: not set
  std::string cudnn_dir;
  std::string cuda_home;
};

// The variables as the process had them when a shim first asked.
const Settings& settings();

}  // namespace ptb::builtin

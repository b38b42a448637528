// Inductor's Triton template kernels among a library's kernels. Compiled with
// max_autotune and Triton-only GEMM and convolution backends (ExecuTorch's
// CUDA options), every matrix product and convolution becomes a template
// kernel ("triton_tem_fused_addmm_relu_0"); with ATen backends allowed (still
// link_libtorch=False) Inductor may call cuBLAS or cuDNN instead, through the
// AOTInductor shims that ptbundle's built-in runtime serves without PyTorch.
// The kernel names are Inductor's: "triton_tem_fused_" and the ops fused into
// the kernel, the template's own among them.
#pragma once

#include <string>
#include <vector>

#include "ptbundle/kernels/kernel_images.h"

namespace ptb {

struct TritonTemplates {
  std::vector<std::string> gemm;         // kernels fusing mm, addmm, bmm or baddbmm
  std::vector<std::string> convolution;  // the others that fuse a convolution
  bool empty() const { return gemm.empty() && convolution.empty(); }
};

// Distinct kernel names across the images (each GPU target's cubin holds the
// same kernels), sorted.
TritonTemplates find_triton_templates(const std::vector<KernelImage>& images);

// For export's report: which ops run as Triton templates and the compile
// options that let cuBLAS/cuDNN serve them; "" when there are none.
std::string triton_template_note(const TritonTemplates& templates);

}  // namespace ptb

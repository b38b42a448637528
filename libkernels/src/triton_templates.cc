#include "ptbundle/kernels/triton_templates.h"

#include <set>
#include <string_view>

namespace ptb {
namespace {

constexpr std::string_view kTemplatePrefix = "triton_tem_fused_";

// Whether `op` is one of the '_'-separated words after the prefix.
bool fuses(std::string_view name, std::string_view op) {
  std::string_view rest = name.substr(kTemplatePrefix.size());
  while (!rest.empty()) {
    const size_t end = rest.find('_');
    if (rest.substr(0, end) == op) return true;
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return false;
}

std::string count_text(size_t n) { return std::to_string(n) + (n == 1 ? " kernel" : " kernels"); }

}  // namespace

TritonTemplates find_triton_templates(const std::vector<KernelImage>& images) {
  std::set<std::string> gemm, convolution;
  for (const KernelImage& image : images) {
    for (const std::string& name : image.functions) {
      if (!name.starts_with(kTemplatePrefix)) continue;
      if (fuses(name, "mm") || fuses(name, "addmm") || fuses(name, "bmm") || fuses(name, "baddbmm")) gemm.insert(name);
      else if (fuses(name, "convolution")) convolution.insert(name);
    }
  }
  return {{gemm.begin(), gemm.end()}, {convolution.begin(), convolution.end()}};
}

std::string triton_template_note(const TritonTemplates& templates) {
  if (templates.empty()) return "";
  std::string what, options;
  if (!templates.gemm.empty()) {
    what = "its matrix products (" + count_text(templates.gemm.size()) + ")";
    options = "max_autotune_gemm_backends=\"ATEN,TRITON\"";
  }
  if (!templates.convolution.empty()) {
    what += (what.empty() ? "its convolutions (" : " and convolutions (") + count_text(templates.convolution.size()) + ")";
    options += (options.empty() ? "" : " and ") + std::string("max_autotune_conv_backends=\"ATEN,TRITON\"");
  }
  return "the library runs " + what +
         " as Triton templates, as ExecuTorch's CUDA options compile them; compiled with " + options +
         " (link_libtorch=False still), Inductor can choose cuBLAS or cuDNN for them, and with max_autotune off it "
         "gives them all to cuBLAS and cuDNN; ptbundle run serves both without PyTorch (README, \"Faster GEMMs and "
         "convolutions\", gives the measured difference)";
}

}  // namespace ptb

#include "ptbundle/export/merge_scan.h"

#include <algorithm>

#include "ptbundle/kernels/kernel_images.h"

namespace ptb {

LibraryScan merge_library_scan() {
  return [](Bytes library, const std::string& name) -> Result<LibraryKernels> {
    PTB_TRY(auto images, scan_kernels(library, name));
    LibraryKernels kernels;
    for (const KernelImage& image : images) {
      auto& sms = image.kind == KernelKind::Cubin ? kernels.cubin_sms : kernels.ptx_sms;
      if (std::find(sms.begin(), sms.end(), image.sm) == sms.end()) sms.push_back(image.sm);
    }
    std::sort(kernels.cubin_sms.begin(), kernels.cubin_sms.end());
    std::sort(kernels.ptx_sms.begin(), kernels.ptx_sms.end());
    return kernels;
  };
}

}  // namespace ptb

// The GPU code of a library as inspect reports it (schemas/inspect.schema.json,
// "kernel_image").
#include "inspect/inspect_internal.h"
#include "ptbundle/kernels/kernel_images.h"

namespace ptb::detail {

InspectKernels inspect_kernels(Bytes data, const std::string& name) {
  InspectKernels out;
  auto images = scan_kernels(data, name);
  if (!images.ok()) {
    out.error = images.error().message;
    return out;
  }
  for (const KernelImage& image : *images) {
    InspectKernel kernel;
    kernel.target = image.target();
    kernel.kind = kernel_kind_name(image.kind);
    kernel.sm = image.sm;
    std::string ptx = image.ptx_version();
    if (!ptx.empty()) kernel.ptx_version = std::move(ptx);
    kernel.container = kernel_container_name(image.container);
    kernel.offset = image.offset;
    kernel.size = image.size;
    kernel.uncompressed_size = image.uncompressed_size;
    if (image.compressed()) kernel.compression = image.compression;
    kernel.location = image.location;
    out.images.push_back(std::move(kernel));
  }
  return out;
}

}  // namespace ptb::detail

// The GPU code of a library as inspect reports it (schemas/inspect.schema.json,
// "kernel_image").
#include "inspect/inspect_internal.h"
#include "ptbundle/kernels/kernel_images.h"

namespace ptb::detail {

void add_kernels(InspectJson& out, Bytes data, const std::string& name) {
  auto images = scan_kernels(data, name);
  if (!images.ok()) {
    out["kernels_error"] = images.error().message;
    return;
  }
  InspectJson kernels = InspectJson::array();
  for (const KernelImage& image : *images) {
    InspectJson j;
    j["target"] = image.target();
    j["kind"] = kernel_kind_name(image.kind);
    j["sm"] = image.sm;
    std::string ptx = image.ptx_version();
    j["ptx_version"] = ptx.empty() ? InspectJson(nullptr) : InspectJson(ptx);
    j["container"] = kernel_container_name(image.container);
    j["offset"] = image.offset;
    j["size"] = image.size;
    j["uncompressed_size"] = image.uncompressed_size;
    j["compression"] = image.compressed() ? InspectJson(image.compression) : InspectJson(nullptr);
    j["location"] = image.location;
    kernels.push_back(std::move(j));
  }
  out["kernels"] = std::move(kernels);
}

}  // namespace ptb::detail

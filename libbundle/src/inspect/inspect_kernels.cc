// The GPU code of a library as inspect reports it (schemas/inspect.schema.json,
// "kernel_image").
#include <map>

#include "inspect/inspect_internal.h"
#include "ptbundle/kernels/aoti_input_bounds.h"
#include "ptbundle/kernels/aoti_shims.h"
#include "ptbundle/kernels/elf_imports.h"
#include "ptbundle/kernels/kernel_images.h"

namespace ptb::detail {
namespace {

// nullopt for bytes that are not a shared library (a cubin file).
std::optional<InspectRuntimeNeeds> runtime_needs(Bytes data, const std::string& name) {
  auto symbols = read_dynamic_symbols(data, name);
  if (!symbols.ok()) return std::nullopt;
  InspectRuntimeNeeds needs;
  needs.libtorch = libtorch_dependencies(*symbols);
  needs.needs = needs.libtorch.empty() ? "built-in" : "LibTorch";
  // Bookkeeping (tensor handles, guards, numbering) is what every library
  // calls; the families that do compute are what tell a user something.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> families;
  for (const std::string& symbol : symbols->undefined) {
    if (symbol.rfind("aoti_torch_", 0) != 0) continue;
    const AotiShim* row = find_builtin_shim(symbol);
    if (!row) {
      needs.lacks.push_back(symbol);
      continue;
    }
    switch (row->family) {
      case ShimFamily::Numbering: case ShimFamily::Runtime: case ShimFamily::Tensor: case ShimFamily::Device:
        continue;
      default:
        families[{shim_family_name(row->family), shim_library_name(row->library)}].push_back(symbol);
    }
  }
  for (auto& [key, functions] : families) needs.calls.push_back({key.first, key.second, std::move(functions)});
  for (const AotiDynamicDim& d : read_aoti_input_bounds(data).dims) needs.dynamic_dims.push_back({d.input, d.dim, d.min, d.max});
  return needs;
}

}  // namespace

InspectKernels inspect_kernels(Bytes data, const std::string& name) {
  InspectKernels out;
  out.runtime = runtime_needs(data, name);
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

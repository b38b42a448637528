// Names of kernel images, as nvcc spells its -gencode targets.
#include "ptbundle/kernels/kernel_images.h"

namespace ptb {

const char* kernel_kind_name(KernelKind kind) { return kind == KernelKind::Ptx ? "ptx" : "cubin"; }

const char* kernel_container_name(KernelContainer container) {
  switch (container) {
    case KernelContainer::Fatbin: return "fatbin";
    case KernelContainer::Cubin: return "cubin";
    case KernelContainer::PtxText: return "ptx";
  }
  return "unknown";
}

std::string KernelImage::target() const { return GpuTarget{sm, variant, kind == KernelKind::Ptx}.name(); }

std::string KernelImage::ptx_version() const {
  if (ptx_major == 0 && ptx_minor == 0) return "";
  return std::to_string(ptx_major) + "." + std::to_string(ptx_minor);
}

}  // namespace ptb

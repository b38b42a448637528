// CUDA device code found in files: the cubins (ELF, e_machine 190) and PTX
// modules that a GPU driver can load, wherever they sit: in the `.nv_fatbin`
// section nvcc writes into a shared library, embedded in a library's
// read-only data (AOTInductor's `embed_kernel_binary`, which cuobjdump does
// not see), or standing alone as a `.cubin`, `.fatbin` or `.ptx` file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/kernels/gpu_target.h"

namespace ptb {

enum class KernelKind { Cubin, Ptx };
const char* kernel_kind_name(KernelKind kind);  // "cubin", "ptx"

// Where an image's bytes were found.
enum class KernelContainer {
  Fatbin,  // an entry of a fatbin container (magic 0xBA55ED50)
  Cubin,   // a bare CUDA ELF (a .cubin file, or one embedded in a library)
  PtxText, // a bare PTX module (a .ptx file)
};
const char* kernel_container_name(KernelContainer container);  // "fatbin", "cubin", "ptx"

struct KernelImage {
  KernelKind kind = KernelKind::Cubin;
  uint32_t sm = 0;  // 90 for sm_90a and compute_90a
  ArchVariant variant = ArchVariant::Plain;
  // PTX ISA version (9.0 for CUDA 13.0); 0.0 for cubins and where unknown.
  uint32_t ptx_major = 0;
  uint32_t ptx_minor = 0;
  // "" when stored as is, else "zstd" or "lz4" (fatbin entries only; a
  // compressed image's own header is not read, the fatbin entry's is used).
  std::string compression;
  uint64_t offset = 0;             // of the image's bytes in the scanned data
  uint64_t size = 0;               // bytes stored there (compressed size if compressed)
  uint64_t uncompressed_size = 0;  // equals size when not compressed
  // Code sections (.text.<function>) of a cubin; -1 when not read (PTX, or
  // compressed). nvlink adds a module with none to every library it links
  // (from cudadevrt): it is loaded but never launched from.
  int code_sections = -1;
  // The kernels those sections hold, by name ("triton_poi_fused_relu_0"); empty
  // where code_sections is -1.
  std::vector<std::string> functions;
  KernelContainer container = KernelContainer::Cubin;
  // The fatbin container that holds the image (Fatbin only): its offset and
  // size in the scanned data. The container is what cuModuleLoadData takes.
  uint64_t container_offset = 0;
  uint64_t container_size = 0;
  // For people: "section .nv_fatbin, fatbin at 0x2018, entry 1" or
  // "section .rodata at 0x178c01".
  std::string location;

  bool compressed() const { return !compression.empty(); }
  // "sm_90a", "sm_100f", "compute_75", "compute_90a".
  std::string target() const;
  // "9.0", or "" when unknown.
  std::string ptx_version() const;
};

// Every image in `data`: a host ELF (every fatbin and CUDA ELF in its
// sections), a CUDA ELF (.cubin), a fatbin, or PTX text. `name` prefixes
// errors. A host ELF without device code gives an empty list; anything else
// that is not one of these formats, and any malformed container, is an error
// naming the offset.
Result<std::vector<KernelImage>> scan_kernels(Bytes data, const std::string& name);

// "sm_90a" from (90, ArchSpecific); the PTX name with `ptx` set.

}  // namespace ptb

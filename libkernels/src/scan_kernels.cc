// Finding device code in whatever bytes we are handed. In a host library,
// `.nv_fatbin` is read as a sequence of fatbin containers, strictly. Every
// other section that holds bytes and is not code is searched for the two
// signatures device code carries: the fatbin magic and an ELF header with
// e_machine EM_CUDA. That is how AOTInductor's `embed_kernel_binary` output
// is found (cubins, or fatbins of cubin + PTX with emit_multi_arch_kernel,
// placed at odd offsets of .rodata), which cuobjdump does not list. A hit is
// a full header check (magic, version 1, header size 16; or ELF64
// little-endian with machine 190), after which the container must be
// well-formed: a corrupt embedded image is an error, not silently skipped.
#include <algorithm>
#include <cstring>

#include "cubin.h"
#include "elf_sections.h"
#include "fatbin.h"
#include "le_bytes.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptx_text.h"

namespace ptb {
namespace {

using namespace detail;

constexpr uint8_t kElfSignature[] = {0x7f, 'E', 'L', 'F'};
constexpr uint8_t kFatbinSignature[] = {0x50, 0xed, 0x55, 0xba};

// The first `signature` in [from, to), or `to`. memchr on one byte of it
// (SIMD in glibc) then a compare runs at about 1.3 GB/s on libLLVM's data
// sections, ten times glibc's memmem for a 4-byte needle. The byte searched
// for is one that is rare in read-only data: 0x7f for ELF, 0xba for fatbins.
uint64_t find(Bytes data, uint64_t from, uint64_t to, const uint8_t (&signature)[4], size_t pivot) {
  const uint8_t* base = data.data();
  uint64_t at = from + pivot;
  while (at < to && to - at >= sizeof signature - pivot) {
    const void* hit = std::memchr(base + at, signature[pivot], to - at - (sizeof signature - pivot - 1));
    if (hit == nullptr) return to;
    const uint64_t candidate = static_cast<uint64_t>(static_cast<const uint8_t*>(hit) - base) - pivot;
    if (std::memcmp(base + candidate, signature, sizeof signature) == 0) return candidate;
    at = candidate + pivot + 1;
  }
  return to;
}

Status add_cubin(Bytes data, uint64_t offset, const std::string& context, const std::string& where,
                 std::vector<KernelImage>& images, uint64_t& size) {
  PTB_TRY(CubinInfo cubin, read_cubin(data, offset, context));
  KernelImage image;
  image.kind = KernelKind::Cubin;
  image.sm = cubin.sm;
  image.variant = cubin.variant;
  image.container = KernelContainer::Cubin;
  image.offset = offset;
  image.size = cubin.size;
  image.uncompressed_size = cubin.size;
  image.code_sections = cubin.code_sections;
  image.functions = std::move(cubin.functions);
  image.location = where;
  images.push_back(std::move(image));
  size = cubin.size;
  return {};
}

// Searches [from, to) of `data` for embedded fatbins and cubins; each found
// image must lie inside [from, to).
Status search_region(Bytes data, uint64_t from, uint64_t to, const std::string& context, const std::string& section,
                     std::vector<KernelImage>& images) {
  const Bytes region = data.first(to);
  uint64_t at = from;
  // The next hit of each signature, searched again only once passed, so a
  // section with many hits of one and none of the other is read once.
  uint64_t fatbin = find(region, at, to, kFatbinSignature, 3);
  uint64_t elf = find(region, at, to, kElfSignature, 0);
  while (at < to) {
    if (fatbin < at) fatbin = find(region, at, to, kFatbinSignature, 3);
    if (elf < at) elf = find(region, at, to, kElfSignature, 0);
    const uint64_t hit = std::min(fatbin, elf);
    if (hit >= to) break;
    const std::string where = "section " + section + " at " + hex(hit);
    uint64_t size = 0;
    if (hit == fatbin && looks_like_fatbin(region, hit)) {
      PTB_TRY(size, read_fatbin(region, hit, context, where + ", ", images));
    } else if (hit == elf && looks_like_cubin(region, hit)) {
      PTB_CHECK(add_cubin(region, hit, context, where, images, size));
    }
    at = hit + std::max<uint64_t>(size, 1);
  }
  return {};
}

// `.nv_fatbin` holds fatbin containers back to back, zero-padded between
// translation units.
Status read_fatbin_section(Bytes data, uint64_t from, uint64_t to, const std::string& context,
                           std::vector<KernelImage>& images) {
  const Bytes region = data.first(to);
  uint64_t at = from;
  while (at < to) {
    if (region[at] == 0) {
      ++at;
      continue;
    }
    PTB_TRY(uint64_t size, read_fatbin(region, at, context, "section .nv_fatbin, ", images));
    at += size;
  }
  return {};
}

Status scan_host_elf(Bytes data, const ElfHeader& elf, const std::string& context, std::vector<KernelImage>& images) {
  if (elf.sections.empty()) return search_region(data, 0, data.size(), context, "(none)", images);
  for (const ElfSection& section : elf.sections) {
    if (section.size == 0 || (section.flags & kSectionExecutable)) continue;
    const uint64_t end = section.offset + section.size;
    if (section.name == ".nv_fatbin") {
      PTB_CHECK(read_fatbin_section(data, section.offset, end, context, images));
    } else {
      const std::string name = section.name.empty() ? "(unnamed)" : section.name;
      PTB_CHECK(search_region(data, section.offset, end, context, name, images));
    }
  }
  return {};
}

}  // namespace

Result<std::vector<KernelImage>> scan_kernels(Bytes data, const std::string& name) {
  std::vector<KernelImage> images;
  if (looks_like_fatbin(data, 0)) {
    uint64_t at = 0;
    while (at < data.size()) {
      PTB_TRY(uint64_t size, read_fatbin(data, at, name, "", images));
      at += size;
      while (at < data.size() && data[at] == 0) ++at;  // padding between containers
    }
    return images;
  }
  if (looks_like_cubin(data, 0)) {
    uint64_t size = 0;
    PTB_CHECK(add_cubin(data, 0, name, "file", images, size));
    return images;
  }
  if (looks_like_elf64(data, 0)) {
    PTB_TRY(ElfHeader elf, read_elf64(data, 0, name));
    PTB_CHECK(scan_host_elf(data, elf, name, images));
    return images;
  }
  if (looks_like_ptx(data)) {
    const PtxInfo ptx = read_ptx_directives(data);
    KernelImage image;
    image.kind = KernelKind::Ptx;
    image.sm = ptx.sm;
    image.variant = ptx.variant;
    image.ptx_major = ptx.major;
    image.ptx_minor = ptx.minor;
    image.container = KernelContainer::PtxText;
    image.size = data.size();
    image.uncompressed_size = data.size();
    image.location = "file";
    if (image.sm == 0) return invalid(name + ": PTX without a `.target sm_XY` directive; expected one");
    images.push_back(std::move(image));
    return images;
  }
  return invalid(name + ": not an ELF file, a CUDA ELF (cubin), a fatbin or PTX text; expected \\x7fELF, "
                        "fatbin magic 0xBA55ED50 or PTX directives at offset 0");
}

}  // namespace ptb

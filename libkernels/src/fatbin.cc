// The fatbin layout, as read from containers that nvcc 13.0 and AOTInductor
// (PyTorch 2.11) wrote for sm_75 … sm_121f, PTX and cubins, compressed and
// not; it agrees with public reverse-engineered descriptions
// (GrigoryEvko/nvopen-tools fatbin/FORMAT_SPECIFICATION.md, Niklas Eiling's
// fatbin-decompress). All little-endian.
//
// Container header, 16 bytes:
//   0  u32 magic 0xBA55ED50
//   4  u16 version, 1
//   6  u16 header size, 16 (the first entry follows it)
//   8  u64 size of all entries after the header
// Entry header, `header size` bytes (64; 80 for PTX; 112 for sm_100+ cubins,
// whose tail repeats the cubin's .nv.compat attributes):
//   0  u16 kind: 1 PTX, 2 cubin (others are skipped)
//   2  u16 0x0101 in every file seen
//   4  u32 header size, ≥ 64; the payload follows the header
//   8  u64 payload size, padded to 8 bytes; the next entry follows the payload
//  16  u32 compressed size (the payload's used bytes; 0 when not compressed)
//  20  u32 offset of the tail block within this header (0 or 64)
//  24  u16 minor, 26 u16 major: PTX ISA version for PTX (9.0 from CUDA 13.0),
//      the cubin format version (1.8) for cubins
//  28  u32 SM number (90 for sm_90a and compute_90a)
//  32  u32 offset, 36 u32 length of an object name inside the header (0, 0)
//  40  u64 flags: 0x1 64-bit, 0x10 Linux, 0x2000 LZ4, 0x8000 zstd,
//      0x100000 architecture-specific ('a'), 0x200000 family ('f'),
//      0x1000000 the tail block is present
//  48  u64 0
//  56  u64 size before compression (0 when not compressed)
// nvcc 13.0 by default stores cubins as they are and PTX zstd-compressed;
// `-Xfatbin -compress-all` compresses both, `--compress-mode=speed` uses LZ4,
// `--no-compress` neither.
#include "fatbin.h"

#include <cstring>

#include "cubin.h"
#include "le_bytes.h"
#include "ptx_text.h"

namespace ptb::detail {
namespace {

constexpr uint64_t kContainerHeaderSize = 16;
constexpr uint64_t kEntryHeaderMinSize = 64;
constexpr uint16_t kEntryPtx = 1;
constexpr uint16_t kEntryCubin = 2;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;
constexpr uint64_t kFlagArchSpecific = 0x100000;
constexpr uint64_t kFlagFamily = 0x200000;

struct EntryHeader {
  uint16_t kind = 0;
  uint32_t header_size = 0;
  uint64_t payload_size = 0;
  uint32_t compressed_size = 0;
  uint16_t minor = 0, major = 0;
  uint32_t sm = 0;
  uint64_t flags = 0;
  uint64_t uncompressed_size = 0;
};

EntryHeader load_entry(Bytes data, uint64_t at) {
  EntryHeader entry;
  entry.kind = load_le<uint16_t>(data, at);
  entry.header_size = load_le<uint32_t>(data, at + 4);
  entry.payload_size = load_le<uint64_t>(data, at + 8);
  entry.compressed_size = load_le<uint32_t>(data, at + 16);
  entry.minor = load_le<uint16_t>(data, at + 24);
  entry.major = load_le<uint16_t>(data, at + 26);
  entry.sm = load_le<uint32_t>(data, at + 28);
  entry.flags = load_le<uint64_t>(data, at + 40);
  entry.uncompressed_size = load_le<uint64_t>(data, at + 56);
  return entry;
}

ArchVariant variant_of(uint64_t flags) {
  if (flags & kFlagArchSpecific) return ArchVariant::ArchSpecific;
  if (flags & kFlagFamily) return ArchVariant::Family;
  return ArchVariant::Plain;
}

// Fills the parts of `image` that only the payload tells, when it is stored
// as is: the cubin's own target (which must agree with the entry's) and the
// PTX module's directives.
Status read_payload(Bytes data, uint64_t payload, uint64_t payload_end, const std::string& context,
                    const std::string& entry_name, KernelImage& image) {
  const Bytes bounded = data.first(payload_end);
  if (image.kind == KernelKind::Cubin) {
    PTB_TRY(CubinInfo cubin, read_cubin(bounded, payload, context + ": " + entry_name));
    if (cubin.sm != image.sm)
      return invalid(context + ": " + entry_name + ": the entry header says SM " + std::to_string(image.sm) +
                     " but its cubin's e_flags say SM " + std::to_string(cubin.sm) + "; expected the same");
    if (cubin.variant != ArchVariant::Plain && image.variant == ArchVariant::Plain) image.variant = cubin.variant;
    image.size = cubin.size;
    image.uncompressed_size = cubin.size;
    image.code_sections = cubin.code_sections;
    image.functions = std::move(cubin.functions);
    return {};
  }
  const Bytes text = bounded.subspan(payload);
  const PtxInfo ptx = read_ptx_directives(text);
  if (ptx.major != 0 && (ptx.major != image.ptx_major || ptx.minor != image.ptx_minor))
    return invalid(context + ": " + entry_name + ": the entry header says PTX ISA " +
                   std::to_string(image.ptx_major) + "." + std::to_string(image.ptx_minor) +
                   " but its text says .version " + std::to_string(ptx.major) + "." + std::to_string(ptx.minor) +
                   "; expected the same");
  const void* nul = std::memchr(text.data(), '\0', text.size());
  image.size = nul ? static_cast<uint64_t>(static_cast<const uint8_t*>(nul) - text.data()) : text.size();
  image.uncompressed_size = image.size;
  return {};
}

}  // namespace

bool looks_like_fatbin(Bytes data, uint64_t offset) {
  return range_fits(offset, kContainerHeaderSize, data.size()) && load_le<uint32_t>(data, offset) == kFatbinMagic &&
         load_le<uint16_t>(data, offset + 4) == 1 && load_le<uint16_t>(data, offset + 6) == kContainerHeaderSize;
}

Result<uint64_t> read_fatbin(Bytes data, uint64_t offset, const std::string& context, const std::string& where,
                             std::vector<KernelImage>& images) {
  const std::string at_container = context + ": fatbin at offset " + hex(offset);
  if (!range_fits(offset, kContainerHeaderSize, data.size()) || load_le<uint32_t>(data, offset) != kFatbinMagic)
    return invalid(at_container + ": no fatbin header; expected magic 0xBA55ED50 and 16 bytes");
  const auto version = load_le<uint16_t>(data, offset + 4);
  const auto header_size = load_le<uint16_t>(data, offset + 6);
  const auto entries_size = load_le<uint64_t>(data, offset + 8);
  if (version != 1 || header_size != kContainerHeaderSize)
    return invalid(at_container + ": version " + std::to_string(version) + ", header size " +
                   std::to_string(header_size) + "; expected version 1 and header size 16");
  const uint64_t begin = offset + kContainerHeaderSize;
  if (!range_fits(begin, entries_size, data.size()))
    return invalid(at_container + ": its entries (" + std::to_string(entries_size) + " bytes from " + hex(begin) +
                   ") run past the end of the data (" + std::to_string(data.size()) + " bytes)");
  const uint64_t end = begin + entries_size;
  uint64_t at = begin;
  for (int index = 0; at < end; ++index) {
    const std::string entry_name = "fatbin at offset " + hex(offset) + ", entry " + std::to_string(index) +
                                   " at offset " + hex(at);
    if (!range_fits(at, kEntryHeaderMinSize, end))
      return invalid(context + ": " + entry_name + ": " + std::to_string(end - at) +
                     " bytes left in the container; expected an entry header of at least 64 bytes");
    const EntryHeader entry = load_entry(data, at);
    if (entry.header_size < kEntryHeaderMinSize || !range_fits(at, entry.header_size, end))
      return invalid(context + ": " + entry_name + ": header size " + std::to_string(entry.header_size) +
                     "; expected at least 64 and inside the container (ends at " + hex(end) + ")");
    const uint64_t payload = at + entry.header_size;
    if (!range_fits(payload, entry.payload_size, end))
      return invalid(context + ": " + entry_name + ": payload of " + std::to_string(entry.payload_size) +
                     " bytes at " + hex(payload) + " runs past the container's end at " + hex(end));
    const uint64_t payload_end = payload + entry.payload_size;
    at = payload_end;
    if (entry.kind != kEntryPtx && entry.kind != kEntryCubin) continue;

    KernelImage image;
    image.kind = entry.kind == kEntryPtx ? KernelKind::Ptx : KernelKind::Cubin;
    image.sm = entry.sm;
    image.variant = variant_of(entry.flags);
    if (image.kind == KernelKind::Ptx) {
      image.ptx_major = entry.major;
      image.ptx_minor = entry.minor;
    }
    image.container = KernelContainer::Fatbin;
    image.container_offset = offset;
    image.container_size = end - offset;
    image.offset = payload;
    image.location = where + "fatbin at " + hex(offset) + ", entry " + std::to_string(index);
    if (entry.sm < 10)
      return invalid(context + ": " + entry_name + ": SM " + std::to_string(entry.sm) +
                     "; expected an SM number such as 80 or 90");
    if (entry.flags & (kFlagZstd | kFlagLz4)) {
      image.compression = (entry.flags & kFlagZstd) ? "zstd" : "lz4";
      if (entry.compressed_size == 0 || entry.compressed_size > entry.payload_size)
        return invalid(context + ": " + entry_name + ": compressed size " + std::to_string(entry.compressed_size) +
                       "; expected 1 to the payload size " + std::to_string(entry.payload_size));
      image.size = entry.compressed_size;
      image.uncompressed_size = entry.uncompressed_size;
    } else {
      PTB_CHECK(read_payload(data, payload, payload_end, context, entry_name, image));
    }
    images.push_back(std::move(image));
  }
  return end - offset;
}

}  // namespace ptb::detail

#include "formats/layout_writer.h"

#include <cstring>

namespace ptb::detail {

void put_u32(std::vector<uint8_t>& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void put_u64(std::vector<uint8_t>& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

Status write_spliced(AtomicOutput& out, Bytes flatbuffer, Bytes header) {
  if (flatbuffer.size() < 8) return invalid(out.final_path() + ": internal: flatbuffer shorter than 8 bytes");
  uint32_t root = 0;
  for (int i = 0; i < 4; ++i) root |= static_cast<uint32_t>(flatbuffer[i]) << (8 * i);
  std::vector<uint8_t> head;
  put_u32(head, root + static_cast<uint32_t>(header.size()));
  head.insert(head.end(), flatbuffer.begin() + 4, flatbuffer.begin() + 8);
  PTB_CHECK(out.write(head));
  PTB_CHECK(out.write(header));
  return out.write(flatbuffer.subspan(8));
}

Status write_segments(AtomicOutput& out, const std::vector<SegmentSource>& segments,
                      const std::vector<uint64_t>& offsets, uint64_t base, uint64_t file_size,
                      const Progress& progress) {
  for (size_t i = 0; i < segments.size(); ++i) {
    PTB_CHECK(pad_to(out, base + offsets[i]));
    uint64_t start = out.position();
    Progress whole_file;
    if (progress)
      whole_file = [&](uint64_t done, uint64_t, const std::string& what) { progress(start + done, file_size, what); };
    PTB_CHECK(segments[i].write_to(out, whole_file));
    if (out.position() != start + segments[i].size)
      return io_error(out.final_path() + ": segment " + std::to_string(i) + " was not written whole");
  }
  return {};
}

}  // namespace ptb::detail

// Reading ExecuTorch programs (.pte), and the programs inside BundledPrograms.
//
// open() maps the file and checks everything that later code indexes with:
// the optional "eh00" extended header, FlatBuffers verification of the
// program, every segment inside the file, every named-data entry pointing at
// an existing segment, every delegate reference pointing at existing data.
// After that, accessors do not fail on bounds. Segment bytes are only touched
// when a caller asks for them.
//
// The program's flatbuffer (the bytes before the segments: small, and all of
// the file only for a program without segments) is copied into memory and
// verified there; program() and inline delegate payloads read that copy and
// never the mapping. A mapping shows what another process writes into the
// file, so a flatbuffer verified in the mapping could be read back changed,
// with offsets the verifier never saw. Segments stay in the mapping: their
// bytes are data, checked by hash (a bundle's digests, content keys) and
// never followed as offsets.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/formats/key_index.h"
#include "ptbundle/base/dtype.h"
#include "ptbundle/base/file.h"
#include "ptbundle/formats/method_info.h"
#include "ptbundle/base/result.h"

namespace ptb {

// The generated FlatBuffers type: the files that walk a program include
// "ptbundle/fb/program_generated.h" themselves.
namespace fb {
struct Program;
}  // namespace fb

// The "eh00" header that ExecuTorch places after the file identifier.
struct PteExtendedHeader {
  uint32_t length = 0;               // bytes of header, magic included
  uint64_t program_size = 0;         // bytes of flatbuffer, from offset 0
  uint64_t segment_base_offset = 0;  // where segment offsets start
  uint64_t segment_data_size = 0;    // 0 when the header is too short to hold it
};

struct PteSegment {
  uint64_t offset = 0;       // as stored: relative to the segment base
  uint64_t size = 0;
  uint64_t file_offset = 0;  // absolute, checked to lie inside the file
};

struct PteNamedData {
  std::string key;
  uint32_t segment_index = 0;
  uint64_t size = 0;  // the segment's size
};

class PteFile {
 public:
  static Result<PteFile> open(const std::string& path);
  // A file inside a bundle folder, opened with no symlink followed.
  static Result<PteFile> open_in(const BundleDir& dir, const std::string& relative);
  // A program held inside another file (a .bpte's program field). `owner`
  // keeps the bytes alive; `name` is what errors call it.
  static Result<PteFile> parse(std::shared_ptr<const MappedFile> owner, Bytes data, std::string name);

  const std::string& name() const { return name_; }
  Bytes bytes() const { return data_; }
  const MappedFile& file() const { return *owner_; }
  // Where bytes() starts inside file(); 0 for a standalone .pte.
  uint64_t base_offset() const { return base_offset_; }

  const std::optional<PteExtendedHeader>& extended_header() const { return header_; }
  // Reads the private copy of the flatbuffer, not the mapping.
  const fb::Program& program() const { return *program_; }
  uint64_t flatbuffer_size() const { return flatbuffer_size_; }

  const std::vector<PteSegment>& segments() const { return segments_; }
  Bytes segment_bytes(size_t index) const;  // index < segments().size()

  const std::vector<PteNamedData>& named_data() const { return named_data_; }
  const PteNamedData* find_named_data(std::string_view key) const;
  Bytes named_data_bytes(const PteNamedData& entry) const;

  // The processed bytes of delegate `delegate_index` of execution plan
  // `plan_index`, inline or in a segment.
  Bytes delegate_payload(size_t plan_index, size_t delegate_index) const;

 private:
  std::shared_ptr<const MappedFile> owner_;
  std::string name_;
  Bytes data_;
  uint64_t base_offset_ = 0;
  std::optional<PteExtendedHeader> header_;
  // The flatbuffer [0, flatbuffer_size_) of data_, copied: what program_
  // points into. Shared, so that copies of a PteFile keep it alive and in place.
  std::shared_ptr<const std::vector<uint8_t>> flatbuffer_;
  const fb::Program* program_ = nullptr;
  uint64_t flatbuffer_size_ = 0;
  std::vector<PteSegment> segments_;
  std::vector<PteNamedData> named_data_;
  KeyIndex named_data_index_;
  // [plan][delegate] -> payload, resolved and checked at open.
  std::vector<std::vector<Bytes>> delegate_payloads_;
};

// Every index used (inputs, outputs, op and delegate indices) was verified
// at open, so this cannot fail on a PteFile.
std::vector<MethodInfo> describe_methods(const PteFile& pte);

}  // namespace ptb

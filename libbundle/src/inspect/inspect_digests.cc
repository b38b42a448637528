// InspectDigests: --sha256's digests, one read per file, files in parallel.
#include "inspect/inspect_internal.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"

namespace ptb::detail {

void InspectDigests::want(const MappedFile& file) { files_[file.fd()].path = file.path(); }

void InspectDigests::want(const MappedFile& file, uint64_t offset, uint64_t size) {
  FileDigest& digest = files_[file.fd()];
  digest.path = file.path();
  for (const ContentKeyDigest& range : digest.content_keys)
    if (range.offset == offset && range.size == size) return;
  ContentKeyDigest range;
  range.offset = offset;
  range.size = size;
  digest.content_keys.push_back(std::move(range));
}

void InspectDigests::compute(const Progress& progress, const std::string& what) {
  std::vector<OpenFileToHash> open;
  for (auto& [fd, digest] : files_) open.push_back({fd, &digest});
  hash_open_files(open, 0, progress, what);
}

Result<std::string> InspectDigests::whole(const MappedFile& file) const {
  auto found = files_.find(file.fd());
  if (found == files_.end() || found->second.sha256.empty()) {
    if (found != files_.end() && !found->second.error.empty()) return io_error(file.path() + ": " + found->second.error);
    return sha256_file_range(file, 0, file.size());
  }
  // The model shows file.size(): a file that grew since it was mapped is not
  // given the digest of other bytes.
  if (found->second.size != file.size())
    return io_error(file.path() + ": " + std::to_string(found->second.size) + " bytes when hashed; expected " +
                    std::to_string(file.size()) + " (changed while read?)");
  return found->second.sha256;
}

Result<std::string> InspectDigests::range(const MappedFile& file, uint64_t offset, uint64_t size) const {
  auto found = files_.find(file.fd());
  if (found != files_.end()) {
    if (!found->second.error.empty()) return io_error(file.path() + ": " + found->second.error);
    for (const ContentKeyDigest& range : found->second.content_keys)
      if (range.offset == offset && range.size == size && !range.actual.empty()) return range.actual;
  }
  return sha256_file_range(file, offset, size);
}

void want_digests(const PteFile& pte, InspectDigests& digests) {
  digests.want(pte.file());
  for (const PteSegment& segment : pte.segments())
    digests.want(pte.file(), pte.base_offset() + segment.file_offset, segment.size);
}

void want_digests(const PtdFile& ptd, InspectDigests& digests) {
  digests.want(ptd.file());
  for (const auto& entry : ptd.entries()) digests.want(ptd.file(), entry.file_offset, entry.size);
}

}  // namespace ptb::detail

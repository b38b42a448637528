// Which bytes of a program or data file are stored under their own SHA-256:
// ExecuTorch's CUDA backend names the library it embeds "<sha256>_so_blob"
// and a weights blob "<sha256>_weights_blob", so a blob swapped under its old
// key is caught even where bundle.json was rewritten to match the file.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/formats/segment_source.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/base/sha256.h"
#include "signing/signing_internal.h"

namespace ptb {
namespace {

bool is_lower_hex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

ContentKeyDigest digest_entry(const std::string& key, const char* where, uint64_t offset, uint64_t size) {
  ContentKeyDigest out;
  out.key = key;
  out.where = where;
  out.offset = offset;
  out.size = size;
  out.expected = key.substr(0, 64);
  return out;
}

}  // namespace

bool is_content_addressed_key(const std::string& key) {
  if (key.size() < 65 || key[64] != '_' || !is_lower_hex(std::string_view(key).substr(0, 64))) return false;
  const std::string_view suffix = std::string_view(key).substr(64);
  return suffix == "_so_blob" || suffix == "_weights_blob";
}

std::vector<ContentKeyDigest> content_keys_of(const PteFile& pte) {
  std::vector<ContentKeyDigest> out;
  for (const PteNamedData& entry : pte.named_data()) {
    if (!is_content_addressed_key(entry.key) || entry.segment_index >= pte.segments().size()) continue;
    const PteSegment& segment = pte.segments()[entry.segment_index];
    const uint64_t offset = pte.base_offset() + segment.file_offset;
    if (!range_fits(offset, segment.size, pte.file().size())) continue;
    out.push_back(digest_entry(entry.key, "named data", offset, segment.size));
  }
  return out;
}

std::vector<ContentKeyDigest> content_keys_of(const PtdFile& ptd) {
  std::vector<ContentKeyDigest> out;
  for (const PtdEntry& entry : ptd.entries()) {
    if (!is_content_addressed_key(entry.key) || !range_fits(entry.file_offset, entry.size, ptd.file().size())) continue;
    out.push_back(digest_entry(entry.key, "data file entry", entry.file_offset, entry.size));
  }
  return out;
}

std::vector<ContentKeyDigest> content_keys_of(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::vector<ContentKeyDigest> keys = detail::content_keys_of_descriptor(fd, path);
  ::close(fd);
  return keys;
}

std::vector<ContentKeyDigest> detail::content_keys_of_descriptor(int fd, const std::string& path) {
  const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return {};
  auto mapped = MappedFile::from_fd(own, path);
  if (!mapped.ok() || mapped->size() < 8) return {};
  // Bytes 4 to 8: the FlatBuffer identifier of .pte and .ptd files.
  const std::string identifier(reinterpret_cast<const char*>(mapped->bytes().data()) + 4, 4);
  if (identifier == "ET12") {
    auto owner = std::make_shared<const MappedFile>(std::move(*mapped));
    const Bytes bytes = owner->bytes();
    auto pte = PteFile::parse(std::move(owner), bytes, path);
    if (pte.ok()) return content_keys_of(*pte);
  } else if (identifier == "FT01") {
    auto ptd = PtdFile::parse(std::move(*mapped));
    if (ptd.ok()) return content_keys_of(*ptd);
  }
  return {};
}

Status check_content_key(const std::string& path, const ContentKeyDigest& key) {
  if (key.matches()) return {};
  return invalid(path + ": " + key.where + " \"" + key.key + "\": its " + std::to_string(key.size) + " bytes at offset " +
                 std::to_string(key.offset) + " hash to " + key.actual +
                 "; expected the SHA-256 the key names (the blob was replaced after ExecuTorch wrote it); "
                 "export the model again with ExecuTorch");
}

// Every key, needed or not: export and merge carry both files whole. The
// blobs are hashed in parallel, largest first.
Status check_program_content_keys(const ProgramWithData& program, DataFileKeys data_file_keys, const Progress& progress) {
  struct Blob {
    const MappedFile* file;
    std::string path, where, key;
    uint64_t offset = 0, size = 0;
  };
  std::vector<Blob> blobs;
  const PteFile& pte = program.pte();
  for (const PteNamedData& entry : pte.named_data()) {
    if (!is_content_addressed_key(entry.key) || entry.segment_index >= pte.segments().size()) continue;
    const PteSegment& segment = pte.segments()[entry.segment_index];
    blobs.push_back({&pte.file(), pte.name(), "named data", entry.key, pte.base_offset() + segment.file_offset, segment.size});
  }
  if (const PtdFile* ptd = program.ptd(); ptd && data_file_keys == DataFileKeys::Check) {
    for (const PtdEntry& entry : ptd->entries()) {
      if (!is_content_addressed_key(entry.key)) continue;
      blobs.push_back({&ptd->file(), ptd->path(), "data file entry", entry.key, entry.file_offset, entry.size});
    }
  }
  std::sort(blobs.begin(), blobs.end(), [](const Blob& a, const Blob& b) { return a.size > b.size; });
  uint64_t blob_bytes = 0;
  for (const Blob& blob : blobs) blob_bytes += blob.size;
  ProgressCounter counter(progress, blob_bytes, "hashing the content-addressed blobs of " + pte.name());
  std::vector<Result<std::string>> digests(blobs.size(), std::string());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < blobs.size(); i = next.fetch_add(1))
      digests[i] = sha256_file_range(*blobs[i].file, blobs[i].offset, blobs[i].size, &counter);
  };
  const size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), blobs.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  for (size_t i = 0; i < blobs.size(); ++i) {
    if (!digests[i].ok()) return digests[i].take_error();
    ContentKeyDigest digest;
    digest.key = blobs[i].key;
    digest.where = blobs[i].where;
    digest.offset = blobs[i].offset;
    digest.size = blobs[i].size;
    digest.expected = blobs[i].key.substr(0, 64);
    digest.actual = *digests[i];
    PTB_CHECK(check_content_key(blobs[i].path, digest));
  }
  return {};
}

}  // namespace ptb

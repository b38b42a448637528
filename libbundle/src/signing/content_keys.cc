// Which bytes of a program or data file are stored under their own SHA-256:
// ExecuTorch's CUDA backend names the library it embeds "<sha256>_so_blob"
// and a weights blob "<sha256>_weights_blob", so a blob swapped under its old
// key is caught even where bundle.json was rewritten to match the file.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/signing/folder_digests.h"

namespace ptb {
namespace {

bool is_lower_hex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Bytes 4 to 8 of the file: the FlatBuffer identifier of .pte and .ptd files.
std::string identifier_of(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char head[8] = {};
  ssize_t got = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  if (got != static_cast<ssize_t>(sizeof head)) return {};
  return std::string(head + 4, 4);
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

std::vector<ContentKeyDigest> content_keys_of(const std::string& path) {
  std::vector<ContentKeyDigest> out;
  const std::string identifier = identifier_of(path);
  if (identifier == "ET12") {
    auto pte = PteFile::open(path);
    if (!pte.ok()) return out;
    for (const PteNamedData& entry : pte->named_data()) {
      if (!is_content_addressed_key(entry.key) || entry.segment_index >= pte->segments().size()) continue;
      const PteSegment& segment = pte->segments()[entry.segment_index];
      const uint64_t offset = pte->base_offset() + segment.file_offset;
      if (!range_fits(offset, segment.size, pte->file().size())) continue;
      out.push_back(digest_entry(entry.key, "named data", offset, segment.size));
    }
  } else if (identifier == "FT01") {
    auto ptd = PtdFile::open(path);
    if (!ptd.ok()) return out;
    for (const PtdEntry& entry : ptd->entries()) {
      if (!is_content_addressed_key(entry.key) || !range_fits(entry.file_offset, entry.size, ptd->file().size())) continue;
      out.push_back(digest_entry(entry.key, "data file entry", entry.file_offset, entry.size));
    }
  }
  return out;
}

}  // namespace ptb

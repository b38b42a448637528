// The sniffer (file_kind.h). A signature is JSON, the ExecuTorch formats carry
// a four-letter identifier at byte 4, a .pt2 is a zip archive.
#include "ptbundle/formats/file_kind.h"

#include <algorithm>
#include <filesystem>

#include "formats/wire.h"

namespace ptb {

const char* file_kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::Bundle: return "bundle";
    case FileKind::Pte: return "pte";
    case FileKind::Ptd: return "ptd";
    case FileKind::Bpte: return "bpte";
    case FileKind::Pt2: return "pt2";
    case FileKind::Signature: return "signature";
  }
  return "?";
}

Result<FileKind> detect_file_kind(const MappedFile& file) {
  const std::string& path = file.path();
  Bytes data = file.bytes();
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".sig" || (!data.empty() && data[0] == '{')) return FileKind::Signature;
  if (detail::has_text_at(data, 4, "ET12")) return FileKind::Pte;
  if (detail::has_text_at(data, 4, "FT01")) return FileKind::Ptd;
  if (detail::has_text_at(data, 4, "BP08")) return FileKind::Bpte;
  if (detail::has_text_at(data, 0, "PK\x03\x04") || detail::has_text_at(data, 0, "PK\x05\x06")) return FileKind::Pt2;
  // Too short or unknown bytes: the reader the name asks for explains what is wrong.
  if (extension == ".pte") return FileKind::Pte;
  if (extension == ".ptd") return FileKind::Ptd;
  if (extension == ".bpte") return FileKind::Bpte;
  if (extension == ".pt2") return FileKind::Pt2;
  Bytes identifier = data.size() > 4 ? data.subspan(4, std::min<size_t>(4, data.size() - 4)) : Bytes();
  return invalid(path + ": not a .pte, .ptd, .bpte or .pt2 file: bytes 4 to 8 are '" + detail::show_bytes(identifier) +
                 "'; expected 'ET12', 'FT01', 'BP08' or a zip archive");
}

}  // namespace ptb

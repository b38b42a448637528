// inspect_path: which reader a path needs, and bundle folders (the manifest
// and every file of every part, each inspected as a file of its own).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "inspect/inspect_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/formats/bpte.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"
#include "formats/wire.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;

std::string kind_from_extension(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  if (extension == ".pte" || extension == ".ptd" || extension == ".bpte" || extension == ".pt2") return extension.substr(1);
  return "";
}

}  // namespace

namespace detail {

// A signature file: who signed (the key's fingerprint) and the statement it
// signs, shown as read; inspect does not verify it (verify --key does).
Result<InspectSignature> inspect_signature(const std::string& path) {
  PTB_TRY(SignatureFile signature, read_signature_file(path));
  InspectSignature out;
  out.key_fingerprint = signature.key_hint;
  if (!signature.statement_json.is_discarded()) out.statement = std::move(signature.statement_json);
  if (!signature.statement_error.empty()) out.statement_error = std::move(signature.statement_error);
  return out;
}

Result<InspectBundle> inspect_bundle_folder(const std::string& path, const InspectOptions& options) {
  PTB_TRY(auto dir, BundleDir::open(path));
  PTB_TRY(auto lock, acquire_read_lock(dir));  // the bundle before or after a write, never between
  PTB_TRY(auto manifest, read_manifest(dir));
  InspectBundle out;
  for (const auto& part : manifest.parts) {
    InspectPart p;
    p.name = part.name;
    for (const auto& file : part.files) {
      // Paths in a manifest that read_manifest accepted are the ones derived
      // from the part name, so they stay inside the folder; each is a
      // regular file reached with no symlink followed before it is read.
      PTB_TRY(int fd, dir.open_fd(file.path));
      ::close(fd);
      PTB_TRY(auto inner, inspect_path(dir.display(file.path), options));
      InspectPartFile f{file_role_name(file.role), file.path, file.target, file.size, file.sha256, false, {}, {}};
      f.size_matches = inner.size == file.size;
      if (options.sha256 && inner.sha256) f.sha256_matches = *inner.sha256 == file.sha256;
      f.file = std::move(inner);
      p.files.push_back(std::move(f));
    }
    out.parts.push_back(std::move(p));
  }
  out.manifest = std::move(manifest);
  const std::vector<std::string> signatures = find_signature_files(path);
  if (!signatures.empty()) {
    const bool has_default = std::find(signatures.begin(), signatures.end(), kDefaultSignatureName) != signatures.end();
    const std::string name = has_default ? std::string(kDefaultSignatureName) : signatures.front();
    PTB_TRY(out.signature, inspect_signature((fs::path(path) / name).string()));
    out.signature->file = name;
  }
  return out;
}

}  // namespace detail

Result<std::string> detect_inspect_kind(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec) return io_error(path + ": cannot open: " + ec.message());
  if (fs::is_directory(status)) {
    if (fs::exists(fs::path(path) / kManifestFileName, ec)) return std::string("bundle");
    return invalid(path + ": folder without " + kManifestFileName + "; expected a bundle folder or a file");
  }
  PTB_TRY(auto file, MappedFile::open(path));
  return detect_file_kind(file);
}

Result<std::string> detect_file_kind(const MappedFile& file) {
  const std::string& path = file.path();
  Bytes data = file.bytes();
  // A signature is JSON; a few bytes tell it from the binary formats.
  if (fs::path(path).extension() == ".sig" || (!data.empty() && data[0] == '{')) return std::string("signature");
  if (detail::has_text_at(data, 4, "ET12")) return std::string("pte");
  if (detail::has_text_at(data, 4, "FT01")) return std::string("ptd");
  if (detail::has_text_at(data, 4, "BP08")) return std::string("bpte");
  if (detail::has_text_at(data, 0, "PK\x03\x04") || detail::has_text_at(data, 0, "PK\x05\x06")) return std::string("pt2");
  // Let the reader the name asks for explain what is wrong.
  std::string by_name = kind_from_extension(path);
  if (!by_name.empty()) return by_name;
  Bytes identifier = data.size() > 4 ? data.subspan(4, std::min<size_t>(4, data.size() - 4)) : Bytes();
  return invalid(path + ": not a .pte, .ptd, .bpte or .pt2 file: bytes 4 to 8 are '" + detail::show_bytes(identifier) +
                 "'; expected 'ET12', 'FT01', 'BP08' or a zip archive");
}

Result<InspectedFile> inspect_path(const std::string& path, const InspectOptions& options) {
  InspectedFile out;
  out.path = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    PTB_TRY(out.kind, detect_inspect_kind(path));
    PTB_TRY(out.body, detail::inspect_bundle_folder(path, options));
    return out;
  }
  // One mapping per file: the bytes that tell its kind are the ones its reader parses.
  PTB_TRY(MappedFile mapped, MappedFile::open(path));
  PTB_TRY(out.kind, detect_file_kind(mapped));
  out.size = mapped.size();
  if (options.sha256) out.sha256 = sha256_mapped_range(mapped, 0, mapped.size());
  if (out.kind == "signature") {
    PTB_TRY(out.body, detail::inspect_signature(path));
  } else if (out.kind == "pt2") {
    // libzip reads the archive through its own handle; the mapping served the kind, size and digest.
    PTB_TRY(out.body, detail::inspect_package(path, options));
  } else if (out.kind == "pte") {
    auto owner = std::make_shared<const MappedFile>(std::move(mapped));
    Bytes bytes = owner->bytes();
    PTB_TRY(PteFile pte, PteFile::parse(std::move(owner), bytes, path));
    out.body = detail::inspect_program(ProgramWithData(std::make_shared<const PteFile>(std::move(pte)), nullptr), options);
  } else if (out.kind == "ptd") {
    PTB_TRY(PtdFile ptd, PtdFile::parse(std::move(mapped)));
    out.body = detail::inspect_data(ptd, options);
  } else {
    PTB_TRY(BpteFile bpte, BpteFile::parse(std::move(mapped)));
    out.body = detail::inspect_bundled(bpte, options);
  }
  return out;
}

uint64_t offset_alignment(uint64_t file_offset) {
  constexpr uint64_t kCap = 4096;
  if (file_offset == 0) return kCap;
  return std::min(kCap, file_offset & (~file_offset + 1));
}

}  // namespace ptb

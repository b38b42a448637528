// check_opened_part: verify's checks of one bundle part, run on the mappings
// the caller then loads from, so that the bytes checked are the bytes used.
// Each file is hashed once; the same digests serve bundle.json's records and
// the signature's.
#include <algorithm>

#include "integrity/integrity_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"

namespace ptb {
namespace {

// The mapping `part` holds for one of its listed files; empty when none.
std::optional<Bytes> mapped_bytes(const BundlePart& part, const ManifestFile& file) {
  switch (file.role) {
    case FileRole::Program:
      for (const BundleProgram& program : part.programs)
        if (program.path == file.path) return program.program->pte().file().bytes();
      return std::nullopt;
    case FileRole::Data:
      if (part.data) return part.data->file().bytes();
      return std::nullopt;
    case FileRole::Testcase:
      if (part.testcase) return part.testcase->file().bytes();
      return std::nullopt;
  }
  return std::nullopt;
}

FileDigest digest_of(const std::string& path, Bytes bytes) {
  FileDigest digest;
  digest.path = path;
  digest.size = bytes.size();
  digest.sha256 = to_hex(sha256(bytes));
  return digest;
}

}  // namespace

std::optional<std::string> check_opened_part(const BundleDir& dir, Bytes manifest, const BundlePart* opened,
                                             const IntegrityOptions& options, CheckList& checks,
                                             SignatureSummary& summary) {
  // Hashed once; the signature is checked first, as verify checks it.
  FolderDigests digests;
  digests.files.push_back(digest_of(kManifestFileName, manifest));
  static const std::vector<ManifestFile> kNoFiles;
  const std::vector<ManifestFile>& files = opened ? opened->entry->files : kNoFiles;
  std::vector<std::optional<FileDigest>> listed;
  for (const ManifestFile& file : files) {
    std::optional<Bytes> bytes = mapped_bytes(*opened, file);
    listed.push_back(bytes ? std::optional(digest_of(file.path, *bytes)) : std::nullopt);
    if (listed.back()) digests.files.push_back(*listed.back());
  }
  std::sort(digests.files.begin(), digests.files.end(),
            [](const FileDigest& a, const FileDigest& b) { return signing_order_less(a.path, b.path); });
  for (const FileDigest& file : digests.files) digests.bytes += file.size;
  detail::check_signature(dir, signature_to_check(dir), digests, options, checks, summary, /*whole_folder=*/false);

  for (size_t i = 0; i < files.size(); ++i) {
    const std::string path = dir.display(files[i].path);
    if (!listed[i]) {
      checks.fail(checks::kFile, path, "was not opened with the part; expected its " +
                                           std::string(file_role_name(files[i].role)) + " file");
      continue;
    }
    detail::check_listed_digest(path, files[i], listed[i]->size, listed[i]->sha256, checks);
  }
  if (!opened) return std::nullopt;
  const BundlePart& part = *opened;
  const ManifestPart& entry = *part.entry;
  for (const BundleProgram& program : part.programs) {
    if (Status keys = check_program_content_keys(*program.program); !keys.ok())
      checks.fail(checks::kContentKey, dir.display(program.path), keys.error().message);
  }
  if (!entry.testcase || !part.testcase) return std::nullopt;
  return detail::check_testcase_file(entry, *entry.testcase, *part.testcase, *part.programs.front().program, checks);
}

}  // namespace ptb

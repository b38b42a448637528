// check_opened_part: verify's checks of one bundle part, run on the mappings
// the caller then loads from, so that the bytes checked are the bytes used.
// Each file is hashed once; the same digests serve bundle.json's records and
// the signature's. The content-addressed blobs inside the files are hashed
// beside them, from the same mappings: every file and every blob is one
// task, the largest first, spread over the usable cores, so that a part's
// weights file and its weights blob cost two cores for the time of one pass.
#include <algorithm>
#include <atomic>
#include <thread>

#include "integrity/integrity_internal.h"
#include "signing/signing_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/signing/folder_digests.h"

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

// The content-addressed blobs of a listed file, with their offsets in it.
std::vector<ContentKeyDigest> content_keys_in(const BundlePart& part, const ManifestFile& file) {
  switch (file.role) {
    case FileRole::Program:
      for (const BundleProgram& program : part.programs)
        if (program.path == file.path) return content_keys_of(program.program->pte());
      return {};
    case FileRole::Data:
      return part.data ? content_keys_of(*part.data) : std::vector<ContentKeyDigest>{};
    case FileRole::Testcase:
      return {};
  }
  return {};
}

// Each file's SHA-256 and its blobs' (file.content_keys), from `bytes[i]`.
void hash_mapped(std::vector<FileDigest>& files, const std::vector<Bytes>& bytes) {
  struct Task {
    Bytes bytes;
    std::string* into;
  };
  std::vector<Task> tasks;
  for (size_t i = 0; i < files.size(); ++i) {
    tasks.push_back({bytes[i], &files[i].sha256});
    for (ContentKeyDigest& key : files[i].content_keys)
      tasks.push_back({bytes[i].subspan(static_cast<size_t>(key.offset), static_cast<size_t>(key.size)), &key.actual});
  }
  std::sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.bytes.size() > b.bytes.size(); });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < tasks.size(); i = next.fetch_add(1)) *tasks[i].into = to_hex(sha256(tasks[i].bytes));
  };
  std::vector<std::thread> pool;
  const size_t threads = std::min<size_t>(detail::usable_cores(), tasks.size());
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
}

}  // namespace

std::optional<std::string> check_opened_part(const BundleDir& dir, Bytes manifest, const BundlePart* opened,
                                             const IntegrityOptions& options, CheckList& checks,
                                             SignatureSummary& summary) {
  // Hashed once; the signature is checked first, as verify checks it.
  static const std::vector<ManifestFile> kNoFiles;
  const std::vector<ManifestFile>& files = opened ? opened->entry->files : kNoFiles;
  // bundle.json first, then each listed file the part has a mapping of.
  std::vector<FileDigest> hashed(1);
  std::vector<Bytes> bytes{manifest};
  hashed[0].path = kManifestFileName;
  hashed[0].size = manifest.size();
  std::vector<std::optional<size_t>> slot_of;  // files[i]'s index in `hashed`
  for (const ManifestFile& file : files) {
    std::optional<Bytes> mapped = mapped_bytes(*opened, file);
    slot_of.push_back(mapped ? std::optional(hashed.size()) : std::nullopt);
    if (!mapped) continue;
    FileDigest& digest = hashed.emplace_back();
    digest.path = file.path;
    digest.size = mapped->size();
    digest.content_keys = content_keys_in(*opened, file);
    bytes.push_back(*mapped);
  }
  hash_mapped(hashed, bytes);
  std::vector<std::optional<FileDigest>> listed;
  for (const std::optional<size_t>& slot : slot_of) listed.push_back(slot ? std::optional(hashed[*slot]) : std::nullopt);
  FolderDigests digests;
  digests.files = hashed;
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
  // The programs' blobs and their data file's, hashed above, reported as
  // verify reports them.
  detail::check_content_keys(dir.path(), digests, checks);
  if (!entry.testcase || !part.testcase) return std::nullopt;
  return detail::check_testcase_file(entry, *entry.testcase, *part.testcase, *part.programs.front().program, checks);
}

}  // namespace ptb

// open_checked_part (checked_part.h): a part opened once, then checked
// through the descriptors of its own mappings, as verify checks it.
#include "ptbundle/integrity/checked_part.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "integrity/integrity_internal.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"

namespace ptb {
namespace {

// The first failed check as verify words it: "<subject>: <message>".
Status first_failure(const CheckList& checks) {
  for (const CheckOutcome& outcome : checks.outcomes()) {
    if (outcome.status == CheckStatus::Fail) return invalid(outcome.subject + ": " + outcome.message);
  }
  return {};
}

}  // namespace

Result<CheckedPart> open_checked_part(const Bundle& bundle, std::shared_ptr<const ManifestPart> entry, unsigned threads) {
  CheckedPart out;
  PTB_TRY(out.part, bundle.open_part(entry));
  test_kill_point("part-opened");
  const ManifestPart& part = *out.part.entry;
  const std::map<std::string, FolderHashOptions::OpenFile> open = detail::part_open_files(out.part);

  // Sizes first: a file bundle.json records as another size costs no read.
  CheckList checks;
  std::vector<FileDigest> digests;
  std::vector<const ManifestFile*> listed;
  for (const ManifestFile& file : part.files) {
    auto found = open.find(file.path);
    if (found == open.end()) return invalid(bundle.dir().display(file.path) + ": " + listed_file_missing(file));
    FileDigest digest;
    digest.path = file.path;
    digest.content_keys = found->second.content_keys;
    struct stat info {};
    if (::fstat(found->second.fd, &info) != 0) return io_error(bundle.dir().display(file.path) + ": cannot read its size");
    if (static_cast<uint64_t>(info.st_size) != file.size) {
      detail::check_listed_digest(bundle.dir().display(file.path), file, static_cast<uint64_t>(info.st_size), "", checks);
      return first_failure(checks).take_error();
    }
    digests.push_back(std::move(digest));
    listed.push_back(&file);
  }
  // Each file on a thread of its own (a part has a few); the data file is
  // most of the time, with its blobs hashed beside it (hash_open_file).
  const size_t workers = std::min<size_t>(threads ? threads : digests.size(), digests.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < digests.size(); i = next.fetch_add(1))
      hash_open_file(open.at(digests[i].path).fd, digests[i]);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();

  for (size_t i = 0; i < digests.size(); ++i) {
    const std::string path = bundle.dir().display(listed[i]->path);
    if (!digests[i].error.empty()) return io_error(path + ": " + digests[i].error);
    if (!detail::check_listed_digest(path, *listed[i], digests[i].size, digests[i].sha256, checks)) continue;
    out.checks.files.push_back({listed[i]->path, file_role_name(listed[i]->role), digests[i].size, digests[i].sha256});
  }
  PTB_CHECK(first_failure(checks));

  FolderDigests folder;
  folder.files = digests;
  detail::check_content_keys(bundle.path(), folder, checks);
  PTB_CHECK(first_failure(checks));
  for (const FileDigest& digest : digests) out.checks.content_keys += digest.content_keys.size();

  for (const BundleProgram& program : out.part.programs) detail::check_manifest_program(part, *program.program, checks);
  PTB_CHECK(first_failure(checks));
  out.checks.manifest = true;
  out.checks.what = "bundle.json and the part's methods; " + std::to_string(out.checks.files.size()) +
                    " file(s) by size and SHA-256; " + std::to_string(out.checks.content_keys) +
                    " content-addressed key(s); all through the files loaded";
  return out;
}

Result<CheckedPart> open_checked_part(const Bundle& bundle, std::string_view name, unsigned threads) {
  PTB_TRY(auto entry, bundle.find_part(name));
  return open_checked_part(bundle, std::move(entry), threads);
}

}  // namespace ptb

// export_parts: take the bundle's lock (BundleTransaction), check
// everything, prepare every part, write every file to a temporary file in
// the bundle folder under a name the old manifest does not use, then rename
// them into place and bundle.json last. Until bundle.json is renamed the old
// bundle is whole; if a rename or the manifest write fails, the files this
// run put in place are removed.
#include "ptbundle/export/export.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>
#include <thread>

#include "prepared_part.h"
#include "ptbundle/bundle/names.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/signing/sign_bundle.h"
#include "ptbundle/base/sha256.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;
using detail::PreparedPart;

bool is_package(const std::string& path) { return fs::path(path).extension() == ".pt2"; }

// What this run changed in the folder, undone on failure.
class FolderChanges {
 public:
  explicit FolderChanges(const BundleDir& dir) : dir_(dir) {}
  ~FolderChanges() {
    if (kept_) return;
    for (auto it = placed_.rbegin(); it != placed_.rend(); ++it) (void)dir_.remove_file(*it);
    for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it)
      ::unlinkat(dir_.fd(), it->c_str(), AT_REMOVEDIR);  // only if empty
  }
  Status ensure_dir(const std::string& relative) {
    PTB_TRY(auto kind, dir_.kind(relative));
    if (kind == BundleDir::Kind::Folder) return {};
    PTB_CHECK(dir_.make_folder(relative));
    created_dirs_.push_back(relative);
    return {};
  }
  void placed(const std::string& relative) { placed_.push_back(relative); }
  void keep() { kept_ = true; }

 private:
  const BundleDir& dir_;
  std::vector<std::string> created_dirs_;
  std::vector<std::string> placed_;
  bool kept_ = false;
};

// bundle.json's test-case entry: each output's tolerance by tolerance.h's
// rule, or --atol/--rtol where given; atol/rtol the largest, for people.
ManifestTestcase testcase_entry(const std::string& path, const detail::PreparedPart& part, const ExportOptions& options) {
  ManifestTestcase t{path, 0, 0, part.testcase_inputs, part.testcase_outputs, part.output_checks};
  for (auto& check : t.output_checks) {
    if (options.atol) check.atol = *options.atol;
    if (options.rtol) check.rtol = *options.rtol;
    if (options.atol || options.rtol) check.rule = "--atol/--rtol given to export, over: " + check.rule;
    t.atol = std::max(t.atol, check.atol);
    t.rtol = std::max(t.rtol, check.rtol);
  }
  return t;
}

struct WrittenFile {
  ManifestFile entry;
  std::unique_ptr<AtomicOutput> output;
  bool existed = false;  // a file of this name was there before (replaced with --force)
};

struct WrittenPart {
  ExportedPart report;
  ManifestPart manifest;
  std::vector<WrittenFile> files;
};

std::vector<ManifestMethod> manifest_methods(const std::vector<MethodInfo>& methods) {
  std::vector<ManifestMethod> out;
  for (const auto& method : methods) {
    out.push_back(manifest_method(method));
  }
  return out;
}

class PartWriter {
 public:
  // `used`: paths the old manifest lists, which no new file may take.
  PartWriter(const BundleDir& dir, const ExportOptions& options, const std::set<std::string>& used)
      : dir_(dir), options_(options), used_(used) {}

  Result<WrittenPart> write(PreparedPart& part) {
    WrittenPart written;
    written.report.name = part.name;
    written.report.source_kind = part.source.kind;
    written.report.notes = part.notes;

    PTB_TRY(auto pte, begin(part.name, FileRole::Program));
    PTB_TRY(auto layout, write_pte(*pte.output, *part.program, part.pte_segments, {}, options_.progress));
    (void)layout;
    PTB_CHECK(finish_hash(pte));
    // Our own reader checks what we wrote, and describes it for the manifest.
    PTB_TRY(auto reread, PteFile::open(pte.output->temp_path()));
    written.manifest.methods = manifest_methods(describe_methods(reread));
    written.files.push_back(std::move(pte));

    if (part.data_copy || part.data_contents) {
      PTB_TRY(auto ptd, begin(part.name, FileRole::Data));
      if (part.data_copy) {
        PTB_CHECK(copy_whole(ptd, *part.data_copy, part.data_copy_keys));
      } else {
        PTB_TRY(auto written_layout, write_ptd(*ptd.output, *part.data_contents, {}, options_.progress));
        (void)written_layout;
        PTB_CHECK(finish_hash(ptd));
      }
      PTB_TRY(auto reread_data, PtdFile::open(ptd.output->temp_path()));
      (void)reread_data;
      written.files.push_back(std::move(ptd));
      written.manifest.data_name = part.name;
    }
    if (part.testcase) {
      PTB_TRY(auto testcase, begin(part.name, FileRole::Testcase));
      PTB_TRY(auto testcase_layout, write_ptd(*testcase.output, *part.testcase, {}, options_.progress));
      (void)testcase_layout;
      PTB_CHECK(finish_hash(testcase));
      written.files.push_back(std::move(testcase));
      written.manifest.testcase = testcase_entry(written.files.back().entry.path, part, options_);
    }

    written.manifest.name = part.name;
    written.manifest.source = part.source;
    written.manifest.cuda = part.cuda;
    for (const auto& file : written.files) {
      written.manifest.files.push_back(file.entry);
      written.report.files.push_back(file.entry);
    }
    return written;
  }

 private:
  Result<WrittenFile> begin(const std::string& name, FileRole role) {
    WrittenFile file;
    file.entry.role = role;
    // The first generation the old manifest does not use: replacing a part
    // leaves its old files in place until the new bundle.json is.
    unsigned generation = 0;
    while (used_.count(part_file_path(name, role, generation))) ++generation;
    file.entry.path = part_file_path(name, role, generation);
    PTB_TRY(auto kind, dir_.kind(file.entry.path));
    file.existed = kind != BundleDir::Kind::Missing;
    PTB_TRY(auto output, AtomicOutput::create_in(dir_, file.entry.path));
    file.output = std::make_unique<AtomicOutput>(std::move(output));
    return file;
  }

  Status finish_hash(WrittenFile& file) {
    file.entry.size = file.output->position();
    PTB_TRY(file.entry.sha256, sha256_file(file.output->temp_path()));
    return {};
  }

  // ExecuTorch's data file does not depend on the part's name, so it is
  // copied whole. It is read once: each chunk is hashed (the file, and its
  // content-addressed blobs on a second core) and written from the same
  // buffer, so the digests recorded, and the keys checked, are of the very
  // bytes the bundle holds, whatever happens to the source meanwhile.
  Status copy_whole(WrittenFile& file, const MappedFile& source, const std::vector<ContentKeyDigest>& keys) {
    FileDigest digest;
    digest.path = source.path();
    digest.content_keys = keys;
    ProgressCounter progress(options_.progress, source.size(), "writing " + file.output->final_path());
    hash_open_file_copying(source.fd(), digest, [&](Bytes chunk) -> std::string {
      if (Status written = file.output->write(chunk); !written.ok()) return written.error().message;
      progress.add(chunk.size());
      return {};
    });
    if (!digest.error.empty()) return io_error(source.path() + ": " + digest.error);
    if (digest.size != source.size() || file.output->position() != source.size())
      return io_error(file.output->final_path() + ": copied " + std::to_string(file.output->position()) + " of " +
                      std::to_string(source.size()) + " bytes of " + source.path() + " (changed while read?)");
    // hash_open_file_copying keeps only the keys that lie inside the file,
    // and the reader checked each does: one missing here is an error.
    if (digest.content_keys.size() != keys.size())
      return io_error(source.path() + ": a content-addressed blob lies past the end of the file (changed while read?)");
    for (const ContentKeyDigest& key : digest.content_keys) PTB_CHECK(check_content_key(source.path(), key));
    file.entry.size = source.size();
    file.entry.sha256 = digest.sha256;
    return {};
  }

  const BundleDir& dir_;
  const ExportOptions& options_;
  const std::set<std::string>& used_;
};

Status check_requests(const ExportOptions& options, const Manifest& existing, const BundleDir& bundle) {
  const fs::path dir(bundle.path());
  std::vector<std::string> names;
  for (const auto& request : options.parts) {
    PTB_CHECK(check_part_name(request.name, "--part " + request.name));
    names.push_back(request.name);
  }
  PTB_CHECK(check_case_collisions(names, "--part"));
  std::set<std::string> requested(names.begin(), names.end());
  std::vector<std::string> all = names;
  for (const auto& part : existing.parts) {
    if (requested.count(part.name)) {
      if (!options.force) {
        return usage_error(dir.string() + ": the bundle already has a part \"" + part.name +
                           "\"; use --force to replace it");
      }
      continue;
    }
    all.push_back(part.name);
  }
  PTB_CHECK(check_case_collisions(all, dir.string() + "/bundle.json and --part"));
  if (options.force) return {};
  for (const auto& name : names) {
    if (existing.find_part(name)) continue;
    for (auto role : {FileRole::Program, FileRole::Data, FileRole::Testcase}) {
      auto path = part_file_path(name, role);
      PTB_TRY(auto kind, bundle.kind(path));
      if (kind != BundleDir::Kind::Missing) {
        return usage_error(bundle.display(path) + " exists but bundle.json does not list it; expected a bundle folder or "
                           "an empty one (use --force to overwrite)");
      }
    }
  }
  return {};
}

Status check_tolerance(const std::optional<double>& value, const char* option) {
  if (!value || (std::isfinite(*value) && *value >= 0)) return {};
  return usage_error(std::string(option) + " " + std::to_string(*value) + ": expected a finite number >= 0");
}

}  // namespace

Result<ExportReport> export_parts(const ExportOptions& options) {
  if (options.parts.empty()) return usage_error("no --part given; expected --part NAME=SOURCE");
  if (options.output_dir.empty()) return usage_error("no output folder; expected -o DIR");
  PTB_CHECK(check_tolerance(options.atol, "--atol"));
  PTB_CHECK(check_tolerance(options.rtol, "--rtol"));

  // Under the lock from here on: a second export waits, then reads the
  // manifest this one wrote.
  PTB_TRY(auto transaction, BundleTransaction::begin(options.output_dir, /*create=*/true, bundle_lock_wait()));
  struct Unused {
    BundleTransaction& t;
    bool keep = false;
    ~Unused() {
      if (!keep) t.remove_if_unused();
    }
  } unused{transaction};
  const BundleDir& dir = transaction.dir();
  Manifest manifest = transaction.manifest().value_or(Manifest{});
  PTB_CHECK(check_requests(options, manifest, dir));

  FolderChanges changes(dir);
  std::vector<PreparedPart> prepared;
  for (const auto& request : options.parts) {
    if (is_package(request.program)) {
      PTB_TRY(auto part, detail::prepare_aoti_part(request, dir.path()));
      prepared.push_back(std::move(part));
    } else {
      PTB_TRY(auto part, detail::prepare_executorch_part(request));
      prepared.push_back(std::move(part));
    }
  }

  bool any_testcase = false;
  for (const auto& part : prepared) any_testcase = any_testcase || part.testcase.has_value();
  if (any_testcase) PTB_CHECK(changes.ensure_dir(kTestcaseFolder));

  std::set<std::string> used;
  for (const auto& part : manifest.parts)
    for (const auto& file : part.files) used.insert(file.path);
  PartWriter writer(dir, options, used);
  std::vector<WrittenPart> written;
  for (auto& part : prepared) {
    PTB_TRY(auto done, writer.write(part));
    written.push_back(std::move(done));
  }

  // Everything is written and checked: put it in place, bundle.json last.
  std::vector<std::string> superseded;
  std::vector<BundleTransaction::Placement> placements;
  for (auto& part : written) {
    if (const auto* old = manifest.find_part(part.manifest.name)) {
      part.report.replaced = true;
      for (const auto& file : old->files) superseded.push_back(file.path);
    }
    for (auto& file : part.files) {
      placements.push_back({file.entry.path, file.output.get()});
      if (!file.existed) changes.placed(file.entry.path);
    }
  }

  for (auto& part : written) {
    if (auto* old = manifest.find_part(part.manifest.name)) *old = part.manifest;
    else manifest.parts.push_back(part.manifest);
  }
  manifest.format_version = kManifestFormatVersion;
  manifest.ptbundle_version = options.tool_version;
  manifest.created = utc_now_iso8601();
  PTB_CHECK(transaction.commit(placements, manifest, superseded));
  changes.keep();
  unused.keep = true;

  ExportReport report;
  report.removed_signatures = remove_invalidated_signatures(options.output_dir);
  report.bundle_dir = options.output_dir;
  for (auto& part : written) report.parts.push_back(std::move(part.report));
  report.manifest = std::move(manifest);
  return report;
}

}  // namespace ptb

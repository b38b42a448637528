// export_parts: check everything, prepare every part, write every file to a
// temporary file in the bundle folder, then rename them into place and
// rewrite bundle.json. Until the renames nothing visible changes; if a rename
// or the manifest write fails, the files this run put in place are removed.
#include "ptbundle/export/export.h"

#include <filesystem>
#include <set>
#include <thread>

#include "prepared_part.h"
#include "ptbundle/bundle/names.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/signing/sign_bundle.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;
using detail::PreparedPart;

bool is_package(const std::string& path) { return fs::path(path).extension() == ".pt2"; }

// What this run changed in the folder, undone on failure.
class FolderChanges {
 public:
  ~FolderChanges() {
    if (kept_) return;
    std::error_code ec;
    for (auto it = placed_.rbegin(); it != placed_.rend(); ++it) fs::remove(*it, ec);
    for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) fs::remove(*it, ec);  // only if empty
  }
  Status ensure_dir(const fs::path& dir) {
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return {};
    if (fs::exists(dir, ec)) return io_error(dir.string() + ": exists and is not a folder");
    std::vector<fs::path> missing;
    for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    if (!fs::create_directories(dir, ec) && ec) return io_error(dir.string() + ": cannot create the folder: " + ec.message());
    created_dirs_.insert(created_dirs_.end(), missing.rbegin(), missing.rend());
    return {};
  }
  void placed(const std::string& path) { placed_.push_back(path); }
  void keep() { kept_ = true; }

 private:
  std::vector<fs::path> created_dirs_;
  std::vector<std::string> placed_;
  bool kept_ = false;
};

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
  PartWriter(const fs::path& dir, const ExportOptions& options) : dir_(dir), options_(options) {}

  Result<WrittenPart> write(PreparedPart& part) {
    WrittenPart written;
    written.report.name = part.name;
    written.report.source_kind = part.source.kind;
    written.report.notes = part.notes;

    PTB_TRY(auto pte, begin(part.name, FileRole::Program));
    PTB_TRY(auto layout, write_pte(*pte.output, *part.program, part.pte_segments, {}, progress_for(pte)));
    (void)layout;
    PTB_CHECK(finish_hash(pte));
    // Our own reader checks what we wrote, and describes it for the manifest.
    PTB_TRY(auto reread, PteFile::open(pte.output->temp_path()));
    written.manifest.methods = manifest_methods(describe_methods(reread));
    written.files.push_back(std::move(pte));

    if (part.data_copy || part.data_contents) {
      PTB_TRY(auto ptd, begin(part.name, FileRole::Data));
      if (part.data_copy) {
        PTB_CHECK(copy_whole(ptd, *part.data_copy));
      } else {
        PTB_TRY(auto written_layout, write_ptd(*ptd.output, *part.data_contents, {}, progress_for(ptd)));
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
      PTB_TRY(auto testcase_layout, write_ptd(*testcase.output, *part.testcase, {}, progress_for(testcase)));
      (void)testcase_layout;
      PTB_CHECK(finish_hash(testcase));
      written.files.push_back(std::move(testcase));
      written.manifest.testcase = ManifestTestcase{part_file_path(part.name, FileRole::Testcase), options_.atol,
                                                   options_.rtol, part.testcase_inputs, part.testcase_outputs};
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
    file.entry.path = part_file_path(name, role);
    fs::path target = dir_ / file.entry.path;
    std::error_code ec;
    file.existed = fs::exists(target, ec);
    PTB_TRY(auto output, AtomicOutput::create(target.string()));
    file.output = std::make_unique<AtomicOutput>(std::move(output));
    return file;
  }

  CopyProgress progress_for(const WrittenFile& file) const {
    if (!options_.progress) return {};
    std::string path = file.entry.path;
    return [this, path](uint64_t done, uint64_t total) { options_.progress(path, done, total); };
  }

  Status finish_hash(WrittenFile& file) {
    file.entry.size = file.output->position();
    PTB_TRY(file.entry.sha256, sha256_file_hex(file.output->temp_path()));
    return {};
  }

  // ExecuTorch's data file does not depend on the part's name, so it is
  // copied byte for byte by the kernel while another thread hashes the
  // source: the digest costs no extra wall time beyond the copy.
  Status copy_whole(WrittenFile& file, const MappedFile& source) {
    Result<std::string> digest = std::string();
    std::thread hasher([&] { digest = sha256_range_hex(source, 0, source.size()); });
    auto copied = SegmentSource::file_range(source, 0, source.size()).write_to(*file.output, progress_for(file));
    hasher.join();
    PTB_CHECK(copied);
    if (!digest.ok()) return digest.take_error();
    if (file.output->position() != source.size())
      return io_error(file.output->final_path() + ": copied " + std::to_string(file.output->position()) + " of " +
                      std::to_string(source.size()) + " bytes");
    file.entry.size = source.size();
    file.entry.sha256 = *digest;
    return {};
  }

  fs::path dir_;
  const ExportOptions& options_;
};

Status check_requests(const ExportOptions& options, const Manifest& existing, const fs::path& dir) {
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
      std::error_code ec;
      auto path = dir / part_file_path(name, role);
      if (fs::exists(path, ec)) {
        return usage_error(path.string() + " exists but bundle.json does not list it; expected a bundle folder or "
                           "an empty one (use --force to overwrite)");
      }
    }
  }
  return {};
}

}  // namespace

Result<ExportReport> export_parts(const ExportOptions& options) {
  if (options.parts.empty()) return usage_error("no --part given; expected --part NAME=SOURCE");
  fs::path dir(options.output_dir);
  if (dir.empty()) return usage_error("no output folder; expected -o DIR");

  std::error_code ec;
  Manifest manifest;
  bool had_manifest = fs::exists(dir / kManifestFileName, ec);
  if (had_manifest) {
    PTB_TRY(manifest, read_manifest(dir.string()));
  }
  PTB_CHECK(check_requests(options, manifest, dir));

  FolderChanges changes;
  PTB_CHECK(changes.ensure_dir(dir));

  std::vector<PreparedPart> prepared;
  for (const auto& request : options.parts) {
    if (is_package(request.program)) {
      PTB_TRY(auto part, detail::prepare_aoti_part(request, dir.string()));
      prepared.push_back(std::move(part));
    } else {
      PTB_TRY(auto part, detail::prepare_executorch_part(request));
      prepared.push_back(std::move(part));
    }
  }

  bool any_testcase = false;
  for (const auto& part : prepared) any_testcase = any_testcase || part.testcase.has_value();
  if (any_testcase) PTB_CHECK(changes.ensure_dir(dir / kTestcaseFolder));

  PartWriter writer(dir, options);
  std::vector<WrittenPart> written;
  for (auto& part : prepared) {
    PTB_TRY(auto done, writer.write(part));
    written.push_back(std::move(done));
  }

  // Everything is written and checked: put it in place.
  std::vector<std::string> stale;
  for (auto& part : written) {
    if (const auto* old = manifest.find_part(part.manifest.name)) {
      part.report.replaced = true;
      for (const auto& file : old->files) {
        if (!part.manifest.find_file(file.role)) stale.push_back((dir / file.path).string());
      }
    }
    for (auto& file : part.files) {
      PTB_CHECK(file.output->commit());
      if (!file.existed) changes.placed(file.output->final_path());
    }
  }

  for (auto& part : written) {
    if (auto* old = manifest.find_part(part.manifest.name)) *old = part.manifest;
    else manifest.parts.push_back(part.manifest);
  }
  manifest.format_version = kManifestFormatVersion;
  manifest.ptbundle_version = options.tool_version;
  manifest.created = utc_now_iso8601();
  PTB_CHECK(write_manifest(dir.string(), manifest));
  changes.keep();

  for (const auto& path : stale) fs::remove(path, ec);

  ExportReport report;
  report.removed_signatures = remove_invalidated_signatures(dir.string());
  report.bundle_dir = dir.string();
  for (auto& part : written) report.parts.push_back(std::move(part.report));
  report.manifest = std::move(manifest);
  return report;
}

}  // namespace ptb

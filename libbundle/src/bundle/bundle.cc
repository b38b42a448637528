// The bundle opener (bundle.h). Every file is reached through BundleDir and
// parsed from the mapping of the descriptor BundleDir checked.
#include "ptbundle/bundle/bundle.h"

#include <filesystem>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/names.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/program/program_with_data.h"

namespace ptb {
namespace {

std::string listed_role(const ManifestFile& file) {
  return std::string("the part's ") + file_role_name(file.role) + " file";
}

}  // namespace

Error folder_without_manifest(const std::string& folder) {
  // Appended piece by piece: GCC 12 at -O2 reports a false -Warray-bounds
  // for a chain of operator+ on a temporary string.
  std::string message = folder;
  message += ": folder without ";
  message += kManifestFileName;
  message += "; expected a bundle folder (make one with ptbundle export -o BUNDLE --part NAME=PROGRAM.pte) "
             "or a program file (.pte, .bpte, .pt2)";
  return invalid(std::move(message));
}

Result<InputPath> open_input_path(const std::string& path) {
  InputPath input;
  input.path = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    PTB_TRY(BundleDir dir, BundleDir::open(path));
    PTB_TRY(BundleDir::Kind manifest, dir.kind(kManifestFileName));
    if (manifest == BundleDir::Kind::Missing) return folder_without_manifest(path);
    input.kind = FileKind::Bundle;
    return input;
  }
  PTB_TRY(MappedFile mapped, MappedFile::open(path));
  PTB_TRY(input.kind, detect_file_kind(mapped));
  input.file = std::move(mapped);
  return input;
}

std::string listed_file_missing(const ManifestFile& file) {
  return "missing: bundle.json lists it as " + listed_role(file) + "; restore it or export the part again";
}

Result<MappedFile> open_listed_file(const BundleDir& dir, const ManifestFile& file) {
  // A missing file is the common damage (a copy that left one out): named
  // as such, not as the open's errno. Anything else, a link on the way
  // included, is for the open itself to refuse.
  if (auto kind = dir.kind(file.path); kind.ok() && *kind == BundleDir::Kind::Missing) {
    return invalid(dir.display(file.path) + ": " + listed_file_missing(file));
  }
  return MappedFile::open_in(dir, file.path);
}

Result<std::shared_ptr<const PteFile>> open_listed_program(const BundleDir& dir, const ManifestFile& file) {
  PTB_TRY(MappedFile mapped, open_listed_file(dir, file));
  PTB_TRY(FileKind kind, detect_file_kind(mapped));
  if (kind != FileKind::Pte) {
    const bool bundled = kind == FileKind::Bpte;
    return invalid(mapped.path() + ": " +
                   (bundled ? std::string("is an ExecuTorch BundledProgram (.bpte)")
                            : "holds a " + std::string(file_kind_name(kind)) + " file") +
                   "; expected an ExecuTorch program (.pte), as ptbundle export writes " + listed_role(file) +
                   (bundled ? "; give the .bpte to verify or run on its own, or export its program as a part" : ""));
  }
  auto owner = std::make_shared<const MappedFile>(std::move(mapped));
  Bytes bytes = owner->bytes();
  std::string name = owner->path();
  PTB_TRY(PteFile pte, PteFile::parse(std::move(owner), bytes, std::move(name)));
  return std::make_shared<const PteFile>(std::move(pte));
}

Result<std::shared_ptr<const PtdFile>> open_listed_data(const BundleDir& dir, const ManifestFile& file) {
  PTB_TRY(MappedFile mapped, open_listed_file(dir, file));
  PTB_TRY(PtdFile ptd, PtdFile::parse(std::move(mapped)));
  return std::make_shared<const PtdFile>(std::move(ptd));
}

Result<BundlePart> open_bundle_part(const BundleDir& dir, std::shared_ptr<const ManifestPart> part) {
  BundlePart out;
  // The data file first: every program of the part reads it.
  if (const ManifestFile* data = part->find_file(FileRole::Data)) {
    PTB_TRY(out.data, open_listed_data(dir, *data));
  }
  for (const ManifestFile& file : part->files) {
    if (file.role != FileRole::Program) continue;
    PTB_TRY(std::shared_ptr<const PteFile> pte, open_listed_program(dir, file));
    auto program = std::make_shared<const ProgramWithData>(std::move(pte), out.data);
    out.programs.push_back({file.path, file.target, std::move(program)});
  }
  if (const ManifestFile* testcase = part->find_file(FileRole::Testcase)) {
    PTB_TRY(out.testcase, open_listed_data(dir, *testcase));
  }
  // manifest.cc refuses a part without a program; kept as an error, not an assumption.
  if (out.programs.empty()) return invalid(dir.display(kManifestFileName) + ": part '" + part->name + "' lists no program");
  out.entry = std::move(part);
  return out;
}

Result<Bundle> Bundle::open(const std::string& folder) {
  PTB_TRY(BundleDir dir, BundleDir::open(folder));
  PTB_TRY(BundleDir::Kind listed, dir.kind(kManifestFileName));
  if (listed == BundleDir::Kind::Missing) return folder_without_manifest(folder);
  // Shared with writers' exclusive lock (transaction.h), taken before
  // bundle.json is read and held as long as the Bundle: the manifest and the
  // files it lists are of one state, before a write or after it.
  PTB_TRY(BundleReadLock lock, acquire_read_lock(dir));
  PTB_TRY(MappedFile file, MappedFile::open_in(dir, kManifestFileName));
  if (file.size() > kMaxManifestBytes)
    return invalid(file.path() + ": " + std::to_string(file.size()) + " bytes; expected a manifest under 64 MiB");
  // Parsed from a copy, which no writer of the file can change under the parser.
  const std::string text(reinterpret_cast<const char*>(file.bytes().data()), file.size());
  PTB_TRY(Manifest manifest, parse_manifest(text, file.path()));
  Bundle bundle;
  bundle.manifest_file_ = std::make_shared<const MappedFile>(std::move(file));
  bundle.lock_ = std::make_shared<const BundleReadLock>(std::move(lock));
  bundle.dir_ = std::make_shared<const BundleDir>(std::move(dir));
  bundle.manifest_ = std::make_shared<const Manifest>(std::move(manifest));
  return bundle;
}

const std::string& Bundle::path() const { return dir_->path(); }

std::vector<std::shared_ptr<const ManifestPart>> Bundle::parts() const {
  std::vector<std::shared_ptr<const ManifestPart>> out;
  out.reserve(manifest_->parts.size());
  for (const ManifestPart& part : manifest_->parts) out.emplace_back(manifest_, &part);
  return out;
}

Result<std::shared_ptr<const ManifestPart>> Bundle::find_part(std::string_view name, const std::string& option) const {
  std::string names;
  for (const ManifestPart& part : manifest_->parts) names += (names.empty() ? "" : ", ") + part.name;
  if (name.empty()) {
    if (manifest_->parts.size() == 1) return std::shared_ptr<const ManifestPart>(manifest_, &manifest_->parts.front());
    if (manifest_->parts.empty()) return invalid(dir_->display(kManifestFileName) + ": lists no part; expected at least one");
    return usage_error(path() + ": the bundle has parts " + names + "; choose one with " + option);
  }
  PTB_CHECK(check_part_name(name, option));
  if (const ManifestPart* part = manifest_->find_part(name)) return std::shared_ptr<const ManifestPart>(manifest_, part);
  return usage_error(path() + ": no part '" + std::string(name) + "'; the bundle has parts " + names);
}

Result<BundlePart> Bundle::open_part(std::string_view name) const {
  PTB_TRY(auto part, find_part(name));
  return open_part(std::move(part));
}

Result<BundlePart> Bundle::open_part(std::shared_ptr<const ManifestPart> part) const {
  return open_bundle_part(*dir_, std::move(part));
}

}  // namespace ptb

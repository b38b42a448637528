// A bundle folder: bundle.json read part by part (so that one bad entry does
// not hide the problems of the others), every name checked before it becomes
// a path, every listed file against its size and SHA-256, every .pte and .ptd
// in the folder listed, and each part's program checked like a lone one.
#include <algorithm>
#include <filesystem>
#include <set>

#include <map>

#include "integrity/integrity_internal.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/manifest_json.h"
#include "ptbundle/bundle/names.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/bundle/tune_file.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb::detail {
namespace {

namespace fs = std::filesystem;

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<Json> read_manifest_json(const BundleDir& dir, CheckList& checks) {
  const std::string path = dir.display(kManifestFileName);
  auto file = MappedFile::open_in(dir, kManifestFileName);
  if (!file.ok()) {
    checks.fail(checks::kManifest, path, file.error().message + "; a bundle folder holds the bundle.json ptbundle export wrote");
    return std::nullopt;
  }
  if (file->size() > kMaxManifestBytes) {
    checks.fail(checks::kManifest, path, std::to_string(file->size()) + " bytes; expected a manifest under 64 MiB");
    return std::nullopt;
  }
  Bytes bytes = file->bytes();
  auto json = parse_json_bounded(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path,
                                 "the manifest ptbundle export writes");
  if (!json.ok()) {
    checks.fail(checks::kManifest, path, json.error().message);
    return std::nullopt;
  }
  return std::move(*json);
}

// Every data_name string a part entry holds, with its JSON path.
std::vector<std::pair<std::string, std::string>> data_name_fields(const Json& part, const std::string& at) {
  std::vector<std::pair<std::string, std::string>> out;
  if (part.contains("data_name") && part["data_name"].is_string()) out.emplace_back(at + ".data_name", part["data_name"]);
  if (!part.contains("methods") || !part["methods"].is_array()) return out;
  const Json& methods = part["methods"];
  for (size_t m = 0; m < methods.size(); ++m) {
    if (!methods[m].is_object() || !methods[m].contains("delegates") || !methods[m]["delegates"].is_array()) continue;
    const Json& delegates = methods[m]["delegates"];
    for (size_t d = 0; d < delegates.size(); ++d) {
      if (!delegates[d].is_object() || !delegates[d].contains("data_name") || !delegates[d]["data_name"].is_string()) continue;
      out.emplace_back(at + ".methods[" + std::to_string(m) + "].delegates[" + std::to_string(d) + "].data_name",
                       delegates[d]["data_name"]);
    }
  }
  return out;
}

struct ManifestParts {
  std::vector<ManifestPart> valid;
  std::set<std::string> owned;  // paths relative to the folder that belong to the bundle
};

void check_collisions(const std::vector<std::pair<std::string, std::string>>& names, const std::string& manifest_path,
                      CheckList& checks) {
  size_t problems = 0;
  // Each name against the first with the same lowercase form: linear in the
  // number of parts.
  std::map<std::string, size_t> first;
  for (size_t b = 0; b < names.size(); ++b) {
    auto [it, fresh] = first.emplace(lowercase(names[b].second), b);
    if (fresh) continue;
    const size_t a = it->second;
    ++problems;
    const bool same = names[a].second == names[b].second;
    checks.fail(checks::kNameCollision, manifest_path,
                names[a].first + " " + in_quotes(names[a].second) + " and " + names[b].first + " " +
                    in_quotes(names[b].second) +
                    (same ? " are the same name; two parts would write the same files"
                          : " differ only in case; Windows and macOS store them as one file") +
                    "; rename one part (ptbundle export --part NEWNAME=...) and remove the other");
  }
  if (problems == 0) {
    checks.pass(checks::kNameCollision, manifest_path,
                std::to_string(names.size()) + " part name(s), no two alike when case is ignored");
  }
}

ManifestParts read_parts(const Json& json, const std::string& manifest_path, CheckList& checks) {
  ManifestParts out;
  out.owned.insert(kManifestFileName);
  {
    // The top level alone; each part is read on its own below. Nothing is
    // copied: verify stays linear in the number of parts.
    auto checked = manifest_header_from_json(json, manifest_path);
    if (checked.ok()) {
      checks.pass(checks::kManifest, manifest_path, "format_version " + std::to_string(kManifestFormatVersion) +
                                                        ", written by ptbundle " + checked->ptbundle_version);
    } else {
      checks.fail(checks::kManifest, manifest_path, checked.error().message + "; export the bundle again");
    }
  }
  if (!json.is_object() || !json.contains("parts") || !json["parts"].is_array()) return out;
  const Json& parts = json["parts"];
  std::vector<std::pair<std::string, std::string>> names;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string at = "parts[" + std::to_string(i) + "]";
    const Json& entry = parts[i];
    bool safe = true;
    if (entry.is_object() && entry.contains("name") && entry["name"].is_string()) {
      const std::string& name = entry["name"].get_ref<const std::string&>();
      auto checked = check_part_name(name, manifest_path + ": " + at + ".name");
      if (checked.ok()) {
        names.emplace_back(at + ".name", name);
        for (FileRole role : {FileRole::Program, FileRole::Data, FileRole::Testcase}) out.owned.insert(part_file_path(name, role));
        checks.pass(checks::kName, manifest_path + ": " + at + ".name", in_quotes(name) + " follows the rules");
      } else {
        safe = false;
        checks.fail(checks::kName, manifest_path + ": " + at + ".name",
                    checked.error().message + "; ptbundle never uses it as a path; rename the part (export it again)");
      }
    }
    for (const auto& [field, value] : data_name_fields(entry, at)) {
      auto checked = check_part_name(value, manifest_path + ": " + field);
      if (checked.ok()) continue;
      safe = false;
      checks.fail(checks::kName, manifest_path + ": " + field,
                  checked.error().message + "; a data name becomes a file name; export the part again");
    }
    if (!safe) {
      checks.skip(checks::kManifest, manifest_path + ": " + at, "not checked further: it holds names that are unsafe as paths");
      continue;
    }
    auto read = manifest_part_from_json(entry, manifest_path, at);
    if (!read.ok()) {
      checks.fail(checks::kManifest, manifest_path + ": " + at, read.error().message + "; export the part again");
      continue;
    }
    checks.pass(checks::kManifest, "part " + read->name, "its bundle.json entry is complete and valid");
    for (const ManifestFile& file : read->files) out.owned.insert(file.path);
    out.valid.push_back(std::move(*read));
  }
  check_collisions(names, manifest_path, checks);
  return out;
}

}  // namespace

bool check_listed_digest(const std::string& path, const ManifestFile& file, uint64_t size, const std::string& digest,
                         CheckList& checks) {
  if (size != file.size) {
    checks.fail(checks::kFile, path,
                "is " + std::to_string(size) + " bytes; bundle.json records " + std::to_string(file.size) +
                    ": the file changed or was cut short after export; restore it or export the part again");
    return false;
  }
  if (digest != file.sha256) {
    checks.fail(checks::kFile, path,
                "SHA-256 is " + digest + "; bundle.json records " + file.sha256 +
                    ": the file changed after export; restore it or export the part again");
    return false;
  }
  checks.pass(checks::kFile, path, std::to_string(file.size) + " bytes, SHA-256 as recorded");
  return true;
}

namespace {

bool check_listed_file(const BundleDir& dir, const ManifestFile& file, const FolderDigests& digests, CheckList& checks) {
  const std::string path = dir.display(file.path);
  // Hashed already, with every other file of the folder, in parallel. The
  // walk records symlinks without following them, so a digest found here is
  // of a regular file reached through real folders.
  if (const FileDigest* known = digests.find(file.path); known && known->kind == FolderEntryKind::File && known->error.empty())
    return check_listed_digest(path, file, known->size, known->sha256, checks);
  auto kind = dir.kind(file.path);
  if (kind.ok() && *kind == BundleDir::Kind::Missing) {
    checks.fail(checks::kFile, path, listed_file_missing(file));
    return false;
  }
  // No symlink followed, nothing but a regular file opened (a FIFO would block a read).
  auto mapped = MappedFile::open_in(dir, file.path);
  if (!mapped.ok()) {
    checks.fail(checks::kFile, path,
                mapped.error().message + "; expected the part's " + std::string(file_role_name(file.role)) + " file");
    return false;
  }
  if (mapped->size() != file.size) {
    checks.fail(checks::kFile, path,
                "is " + std::to_string(mapped->size()) + " bytes; bundle.json records " + std::to_string(file.size) +
                    ": the file changed or was cut short after export; restore it or export the part again");
    return false;
  }
  auto digest = sha256_file_range(*mapped, 0, mapped->size());
  if (!digest.ok()) {
    checks.fail(checks::kFile, path, digest.error().message + "; expected the part's " + std::string(file_role_name(file.role)) + " file");
    return false;
  }
  return check_listed_digest(path, file, mapped->size(), *digest, checks);
}

std::string value_text(const ManifestValue& value) {
  if (value.kind != "tensor") return value.kind;
  std::string text = value.dtype + " [";
  for (size_t i = 0; i < value.shape.size(); ++i) text += (i ? ", " : "") + std::to_string(value.shape[i]);
  text += "]";
  if (value.dynamism != "static") text += " " + value.dynamism;
  return text;
}

std::string values_text(const std::vector<ManifestValue>& values) {
  std::vector<std::string> items;
  for (const auto& value : values) items.push_back(value_text(value));
  return "(" + join(items, ", ") + ")";
}

std::string delegates_text(const std::vector<ManifestDelegate>& delegates) {
  std::vector<std::string> items;
  for (const auto& d : delegates) items.push_back(d.id + (d.data_name ? " data_name=" + *d.data_name : ""));
  return "[" + join(items, ", ") + "]";
}

}  // namespace

// What bundle.json says of the methods against what the program holds:
// `run` and `verify` trust the manifest's signatures.
void check_manifest_program(const ManifestPart& part, const ProgramWithData& program, CheckList& checks) {
  const std::string subject = "part " + part.name;
  size_t problems = 0;
  const std::vector<MethodInfo>& methods = program.methods();
  auto mismatch = [&](const std::string& what) {
    ++problems;
    checks.fail(checks::kManifestProgram, subject,
                what + "; bundle.json no longer describes " + part.name + ".pte; export the part again");
  };
  for (const ManifestMethod& listed : part.methods) {
    auto it = std::find_if(methods.begin(), methods.end(), [&](const MethodInfo& m) { return m.name == listed.name; });
    if (it == methods.end()) {
      mismatch("bundle.json lists method " + in_quotes(listed.name) + ", which the program lacks");
      continue;
    }
    const ManifestMethod found = manifest_method(*it);
    const auto& inputs = found.inputs;
    const auto& outputs = found.outputs;
    const auto& delegates = found.delegates;
    const std::string method = "method " + in_quotes(listed.name) + ": ";
    if (values_text(inputs) != values_text(listed.inputs))
      mismatch(method + "bundle.json records inputs " + values_text(listed.inputs) + "; the program takes " + values_text(inputs));
    if (values_text(outputs) != values_text(listed.outputs))
      mismatch(method + "bundle.json records outputs " + values_text(listed.outputs) + "; the program returns " + values_text(outputs));
    if (delegates_text(delegates) != delegates_text(listed.delegates))
      mismatch(method + "bundle.json records delegates " + delegates_text(listed.delegates) + "; the program has " +
               delegates_text(delegates));
  }
  for (const MethodInfo& method : methods) {
    if (!part.methods.empty() && std::none_of(part.methods.begin(), part.methods.end(),
                                              [&](const ManifestMethod& m) { return m.name == method.name; })) {
      mismatch("the program has method " + in_quotes(method.name) + ", which bundle.json does not list");
    }
  }
  if (problems == 0) {
    checks.pass(checks::kManifestProgram, subject,
                std::to_string(methods.size()) + " method(s): signatures and delegates as bundle.json records");
  }
}

namespace {

// The files of bundle.json's parts, each opened once, as every command opens
// a part's files (bundle.h), so that verify refuses what run and merge
// refuse: hashed through the descriptor of that mapping (hash_folder's
// open_files) and checked from it, so that the bytes verify hashes are the
// bytes it checks, whatever a rename puts at the path in between. A file
// that did not open keeps its error for check_part.
struct OpenedFiles {
  std::map<std::string, Result<std::shared_ptr<const PteFile>>> programs;
  std::map<std::string, Result<std::shared_ptr<const PtdFile>>> data;  // data and test-case files
};

OpenedFiles open_part_files(const BundleDir& dir, const std::vector<ManifestPart>& parts) {
  OpenedFiles out;
  for (const ManifestPart& part : parts) {
    for (const ManifestFile& file : part.files) {
      auto kind = dir.kind(file.path);
      if (!kind.ok() || *kind != BundleDir::Kind::File) continue;  // check_part reports it missing
      if (file.role == FileRole::Program) out.programs.emplace(file.path, open_listed_program(dir, file));
      else out.data.emplace(file.path, open_listed_data(dir, file));
    }
  }
  return out;
}

std::map<std::string, FolderHashOptions::OpenFile> descriptors(const OpenedFiles& opened) {
  std::map<std::string, FolderHashOptions::OpenFile> out;
  for (const auto& [path, pte] : opened.programs)
    if (pte.ok()) out[path] = {(*pte)->file().fd(), content_keys_of(**pte), {}};
  for (const auto& [path, ptd] : opened.data)
    if (ptd.ok()) out[path] = {(*ptd)->file().fd(), content_keys_of(**ptd), {}};
  return out;
}

template <class File>
Result<std::shared_ptr<const File>> opened_file(const std::map<std::string, Result<std::shared_ptr<const File>>>& files,
                                                const BundleDir& dir, const std::string& path) {
  auto found = files.find(path);
  if (found == files.end()) return io_error(dir.display(path) + ": missing or not a regular file");
  return found->second;
}

// One of the part's programs with the part's data file; null when it did
// not open (already reported).
std::shared_ptr<const ProgramWithData> open_program(const BundleDir& dir, const OpenedFiles& files, const ManifestFile& file,
                                                    bool missing, std::shared_ptr<const PtdFile> ptd, CheckList& checks) {
  const std::string program_path = dir.display(file.path);
  if (missing) {
    checks.skip(checks::kProgram, program_path, "not checked: the file is missing or unreadable (see the file check)");
    return nullptr;
  }
  auto opened = opened_file(files.programs, dir, file.path);
  if (!opened.ok()) {
    checks.fail(checks::kProgram, program_path, opened.error().message + "; export the part again");
    return nullptr;
  }
  std::shared_ptr<const PteFile> pte = std::move(*opened);
  pass_program(program_path, *pte, checks);
  return std::make_shared<const ProgramWithData>(std::move(pte), std::move(ptd));
}

void check_part(const BundleDir& dir, const ManifestPart& part, const OpenedFiles& files, const FolderDigests& digests,
                CheckList& checks, std::vector<VerifySubject>& subjects) {
  const fs::path folder(dir.path());
  std::set<std::string> missing;  // listed paths that are absent, or not regular files
  for (const ManifestFile& file : part.files) {
    if (check_listed_file(dir, file, digests, checks)) continue;
    auto kind = dir.kind(file.path);
    if (!kind.ok() || *kind != BundleDir::Kind::File) missing.insert(file.path);
  }
  // A missing file was reported once, by the file check; what needs it is skipped.
  std::shared_ptr<const PtdFile> ptd;
  bool data_readable = true;
  if (const ManifestFile* data = part.find_file(FileRole::Data)) {
    const std::string data_path = (folder / data->path).string();
    if (missing.count(data->path)) {
      checks.skip(checks::kDataFile, data_path, "not checked: the file is missing (see the file check)");
      data_readable = false;
    } else if (auto opened = opened_file(files.data, dir, data->path); !opened.ok()) {
      checks.fail(checks::kDataFile, data_path, opened.error().message + "; export the part again");
      data_readable = false;
    } else {
      ptd = std::move(*opened);
      checks.pass(checks::kDataFile, data_path, std::to_string(ptd->entries().size()) + " entries, all inside the file");
    }
  }
  // Merged single-blob parts list one program per GPU target, all reading the shared data file.
  std::vector<const ManifestFile*> programs;
  for (const ManifestFile& file : part.files) {
    if (file.role == FileRole::Program) programs.push_back(&file);
  }
  std::shared_ptr<const PtdFile> testcase;
  std::string testcase_method;
  bool testcase_checked = false;
  for (const ManifestFile* program_file : programs) {
    const std::string program_path = (folder / program_file->path).string();
    auto program = open_program(dir, files, *program_file, missing.count(program_file->path) > 0, ptd, checks);
    if (!program) continue;

    VerifySubject subject;
    subject.label = "part " + part.name + (program_file->target ? " (" + *program_file->target + " program)" : "");
    subject.part_name = part.name;
    subject.kind = SubjectKind::Program;
    subject.program_path = program_path;
    subject.program = program;
    subject.bundle_dir = folder.string();
    subject.manifest = part;
    subject.target = program_file->target;

    ProgramContext context;
    context.program = program.get();
    context.program_name = program_path;
    context.expected_data_name = part.name;
    context.require_data_name = part.find_file(FileRole::Data) != nullptr;
    context.check_keys = data_readable;
    context.weights_in_library = part.cuda && part.cuda->weights_in_library;
    context.no_weights = (part.cuda && part.cuda->no_weights) || context.weights_in_library;
    check_manifest_program(part, *program, checks);
    check_program_contents(context, checks);

    // The test case is one file for the part; every program takes the same inputs.
    if (part.testcase && !testcase_checked) {
      testcase_checked = true;
      const std::string testcase_path = (folder / part.testcase->path).string();
      if (missing.count(part.testcase->path)) {
        checks.skip(checks::kTestcaseFile, testcase_path, "not checked: the file is missing (see the file check)");
      } else if (auto opened = opened_file(files.data, dir, part.find_file(FileRole::Testcase)->path); !opened.ok()) {
        checks.fail(checks::kTestcaseFile, testcase_path, opened.error().message + "; export the part again with --example");
      } else {
        std::shared_ptr<const PtdFile> file = std::move(*opened);
        if (auto method = check_testcase_file(part, *part.testcase, *file, *program, checks)) {
          testcase = file;
          testcase_method = *method;
        }
      }
    }
    subject.testcase = testcase;
    subject.testcase_method = testcase_method;
    subjects.push_back(std::move(subject));
  }
}

bool is_program_or_data(const fs::path& path) {
  const std::string extension = lowercase(path.extension().string());
  return extension == ".pte" || extension == ".ptd";
}

void check_unlisted(const BundleDir& dir, const std::set<std::string>& owned, const std::set<std::string>& pending,
                    CheckList& checks) {
  size_t problems = 0;
  auto visit = [&](const std::string& relative) {
    auto names = dir.list(relative);
    if (!names.ok()) {
      ++problems;
      checks.fail(checks::kUnlistedFile, dir.display(relative), "cannot list the folder: " + names.error().message);
      return;
    }
    for (const std::string& name : *names) {
      const std::string path = relative.empty() ? name : relative + "/" + name;
      if (!is_program_or_data(name) || owned.count(path) || pending.count(path)) continue;
      ++problems;
      checks.fail(checks::kUnlistedFile, dir.display(path),
                  "is in the bundle folder but bundle.json does not list it; `run` and `verify` ignore it and it may "
                  "be another part's stale file; delete it, or add it as a part with ptbundle export");
    }
  };
  visit("");
  if (dir.kind(kTestcaseFolder).value_or(BundleDir::Kind::Missing) == BundleDir::Kind::Folder) visit(kTestcaseFolder);
  // Per-target program folders of merged parts ("sm_90/<name>.pte").
  for (const std::string& name : dir.list("").value_or(std::vector<std::string>{})) {
    if (is_gpu_target_name(name) && dir.kind(name).value_or(BundleDir::Kind::Missing) == BundleDir::Kind::Folder) visit(name);
  }
  if (problems == 0) {
    checks.pass(checks::kUnlistedFile, dir.path(), "every .pte and .ptd in the folder is listed in bundle.json");
  }
}

// What a killed writer left: warnings, since the bundle.json in place and
// the files it lists are whole; the next export or merge removes them.
std::set<std::string> check_leftovers(const BundleDir& dir, const std::vector<ManifestPart>& parts, CheckList& checks) {
  Manifest listed;
  listed.parts = parts;
  BundleLeftovers left = find_leftovers(dir, &listed);
  const char* removal = "the next ptbundle export into this bundle removes it";
  for (const auto& path : left.temporary) {
    checks.warn(checks::kLeftover, dir.display(path),
                std::string("a temporary file of an interrupted write (killed, or the machine stopped); ") + removal);
  }
  for (const auto& path : left.pending) {
    checks.warn(checks::kLeftover, dir.display(path),
                std::string("written by an export that was interrupted before it committed, or superseded by one; "
                            "bundle.json does not list it; ") + removal);
  }
  // Unexplained files are not excused: check_unlisted fails them as any
  // unlisted file; this says why the journal did not count.
  for (const auto& path : left.unexplained) {
    checks.warn(checks::kLeftover, dir.display(kJournalFileName),
                "names " + path + ", which is no file of a part bundle.json lists; a journal only explains files its own "
                "export wrote, so " + path + " counts as unlisted");
  }
  const bool stale_lock = lock_file_is_stale(dir);
  if (stale_lock) {
    checks.warn(checks::kLeftover, dir.display(kLockFileName),
                std::string("the lock file of an interrupted write (killed, or the machine stopped); ") + removal);
  }
  const auto staging = find_stale_staging(dir.path());
  for (const auto& path : staging) {
    checks.warn(checks::kLeftover, path,
                "the staging folder of an interrupted `ptbundle merge` into this folder; the next merge into it "
                "removes it, or delete it");
  }
  if (left.temporary.empty() && left.pending.empty() && left.unexplained.empty() && staging.empty() && !stale_lock) {
    checks.pass(checks::kLeftover, dir.path(), "no temporary files of an interrupted write");
  }
  return {left.pending.begin(), left.pending.end()};
}

// A writer waiting for the folder lock this reader holds has made
// .ptbundle.lock: its file, not the bundle's, so no signature lists it.
void drop_live_lock_file(const BundleDir& dir, FolderDigests& digests) {
  if (!digests.find(kLockFileName) || lock_file_is_stale(dir)) return;
  std::erase_if(digests.files, [](const FileDigest& file) { return file.path == kLockFileName; });
}

// The tune file: what bundle.json lists must be there with its size and
// SHA-256 and read as a tune file; one it does not list is only noted, since
// run and the robot API never read it.
void check_tune_file(const BundleDir& dir, const Json& json, const FolderDigests& digests, CheckList& checks) {
  auto header = manifest_header_from_json(json, dir.display(kManifestFileName));
  if (!header.ok()) return;  // the manifest check says why
  for (const FileDigest& file : digests.files) {
    if (!is_tune_file_path(file.path) || (header->tune && header->tune->path == file.path)) continue;
    checks.warn(checks::kTuneFile, dir.display(file.path),
                "is in the bundle folder but bundle.json does not list it; run and the robot API ignore it; the next "
                "ptbundle tune removes it, or delete it");
  }
  if (!header->tune) return;
  const ManifestTuneFile& listed = *header->tune;
  const std::string path = dir.display(listed.path);
  const FileDigest* found = digests.find(listed.path);
  const char* again = "; run ptbundle tune again on the GPU to write it anew";
  if (!found) {
    checks.fail(checks::kTuneFile, path, std::string("is missing; bundle.json lists it") + again);
    return;
  }
  if (!found->error.empty()) {
    checks.fail(checks::kTuneFile, path, found->error + again);
    return;
  }
  if (found->size != listed.size || found->sha256 != listed.sha256) {
    checks.fail(checks::kTuneFile, path,
                std::to_string(found->size) + " bytes, SHA-256 " + found->sha256 + "; bundle.json records " +
                    std::to_string(listed.size) + " bytes, " + listed.sha256 +
                    " (the file changed after ptbundle tune wrote it)" + again);
    return;
  }
  auto file = read_tune_file(dir, listed);
  if (!file.ok()) {
    checks.fail(checks::kTuneFile, path, file.error().message + again);
    return;
  }
  std::string gpus;
  for (const TuneGpu& gpu : file->gpus) gpus += (gpus.empty() ? "" : ", ") + gpu.name + " (" + gpu.sm + ")";
  checks.pass(checks::kTuneFile, path,
              std::to_string(file->choice_count()) + " recorded choice(s) for " + std::to_string(file->gpus.size()) +
                  " GPU(s)" + (gpus.empty() ? std::string() : ": " + gpus));
}

}  // namespace

void check_bundle(const std::string& path, const IntegrityOptions& options, CheckList& checks,
                  std::vector<VerifySubject>& subjects, SignatureSummary& signature) {
  auto dir = BundleDir::open(path);
  if (!dir.ok()) {
    checks.fail(checks::kManifest, path, dir.error().message);
    return;
  }
  // Held to the end: what is checked is the bundle before or after a write.
  auto lock = acquire_read_lock(*dir);
  if (!lock.ok()) {
    checks.fail(checks::kManifest, path, lock.error().message);
    return;
  }
  // One read of every file: the signature, bundle.json's digests and the
  // content-addressed keys all use these.
  auto listed = read_manifest(*dir);
  detail::FolderReading reading = folder_reading(*dir, listed.ok() ? &*listed : nullptr, options.threads);
  reading.hashing.progress = options.progress;
  const std::optional<std::string>& signature_name = reading.signature_name;
  // The parts' files are opened before anything is hashed, so that they are
  // hashed through the mappings the part checks read; what reading
  // bundle.json's parts finds is reported after the signature checks, as
  // always, in its own order.
  CheckList manifest_checks;
  auto json = read_manifest_json(*dir, manifest_checks);
  ManifestParts parts = json ? read_parts(*json, dir->display(kManifestFileName), manifest_checks) : ManifestParts{};
  const OpenedFiles files = open_part_files(*dir, parts.valid);
  test_kill_point("verify-parts-opened");
  reading.hashing.open_files = descriptors(files);
  for (auto& [relative, file] : reading.hashing.open_files) {
    reading.hashing.hash_only->insert(relative);
    // A file the caller wrote and holds (pull's): where the file opened here
    // is that very file, and nothing opened it for writing since its bytes
    // were written and hashed, the caller's digest is this file's. Any other
    // file at the path (a rename put it there), a broken lease or a file
    // system without leases: hashed here, as any file.
    auto written = options.written.find(relative);
    if (written != options.written.end() && written->second.file && written->second.file->is(file.fd) &&
        written->second.file->unchanged())
      file.sha256 = written->second.sha256;
  }
  auto digests = hash_folder(path, reading.hashing);
  if (!digests.ok()) {
    checks.fail(checks::kFile, path, digests.error().message);
    digests = FolderDigests{};
  }
  // A writer's open waits for the lease only so long (lease-break-time): a
  // lease broken while the folder was hashed voids the caller's digest.
  for (FileDigest& entry : digests->files) {
    auto open = reading.hashing.open_files.find(entry.path);
    if (open == reading.hashing.open_files.end() || open->second.sha256.empty()) continue;
    if (options.written.at(entry.path).file->unchanged()) continue;
    entry = FileDigest{entry.path, entry.kind, 0, "", "", open->second.content_keys};
    hash_open_file(open->second.fd, entry);
  }
  drop_live_lock_file(*dir, *digests);
  check_signature(*dir, signature_name, *digests, options, checks, signature);
  check_content_keys(path, *digests, checks);

  for (const CheckOutcome& outcome : manifest_checks.outcomes()) {
    switch (outcome.status) {
      case CheckStatus::Pass: checks.pass(outcome.check, outcome.subject, outcome.message); break;
      case CheckStatus::Fail: checks.fail(outcome.check, outcome.subject, outcome.message); break;
      case CheckStatus::Skip: checks.skip(outcome.check, outcome.subject, outcome.message); break;
      case CheckStatus::Warn: checks.warn(outcome.check, outcome.subject, outcome.message); break;
    }
  }
  if (!json) {
    checks.skip(checks::kUnlistedFile, path, "without a readable bundle.json, which files the bundle owns is unknown");
    return;
  }
  for (const ManifestPart& part : parts.valid) check_part(*dir, part, files, *digests, checks, subjects);
  std::set<std::string> pending = check_leftovers(*dir, parts.valid, checks);
  check_unlisted(*dir, parts.owned, pending, checks);
  check_tune_file(*dir, *json, *digests, checks);
}

}  // namespace ptb::detail

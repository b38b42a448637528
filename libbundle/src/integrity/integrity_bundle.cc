// A bundle folder: bundle.json read part by part (so that one bad entry does
// not hide the problems of the others), every name checked before it becomes
// a path, every listed file against its size and SHA-256, every .pte and .ptd
// in the folder listed, and each part's program checked like a lone one.
#include <algorithm>
#include <filesystem>
#include <set>

#include "integrity/integrity_internal.h"
#include "ptbundle/inspect/inspect.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/bundle/names.h"

namespace ptb::integrity {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxManifestBytes = 64ull << 20;  // as read_manifest

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<Json> read_manifest_json(const std::string& path, CheckList& checks) {
  auto file = MappedFile::open(path);
  if (!file.ok()) {
    checks.fail(checks::kManifest, path, file.error().message + "; a bundle folder holds the bundle.json ptbundle export wrote");
    return std::nullopt;
  }
  if (file->size() > kMaxManifestBytes) {
    checks.fail(checks::kManifest, path, std::to_string(file->size()) + " bytes; expected a manifest under 64 MiB");
    return std::nullopt;
  }
  Bytes bytes = file->bytes();
  Json json = Json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (json.is_discarded()) {
    checks.fail(checks::kManifest, path, "not valid JSON; expected the manifest ptbundle export writes");
    return std::nullopt;
  }
  return json;
}

// The manifest reader names the only part it is given parts[0].
std::string renumber(std::string message, size_t index) {
  const std::string from = "parts[0]";
  const size_t at = message.find(from);
  if (at != std::string::npos) message.replace(at, from.size(), "parts[" + std::to_string(index) + "]");
  return message;
}

Json with_parts(Json top, Json parts) {
  // Fields that are not in question here get valid stand-ins, so that only
  // the part's own problems are reported for it.
  top["format"] = "ptbundle";
  top["format_version"] = kManifestFormatVersion;
  top["ptbundle_version"] = "0";
  top["created"] = "2000-01-01T00:00:00Z";
  top["parts"] = std::move(parts);
  return top;
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
  for (size_t a = 0; a < names.size(); ++a) {
    for (size_t b = a + 1; b < names.size(); ++b) {
      if (lowercase(names[a].second) != lowercase(names[b].second)) continue;
      ++problems;
      const bool same = names[a].second == names[b].second;
      checks.fail(checks::kNameCollision, manifest_path,
                  names[a].first + " " + in_quotes(names[a].second) + " and " + names[b].first + " " +
                      in_quotes(names[b].second) +
                      (same ? " are the same name; two parts would write the same files"
                            : " differ only in case; Windows and macOS store them as one file") +
                      "; rename one part (ptbundle export --part NEWNAME=...) and remove the other");
    }
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
    Json top = json;
    if (top.is_object() && top.contains("parts") && top["parts"].is_array()) top["parts"] = Json::array();
    auto checked = manifest_from_json(top, manifest_path);
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
      const std::string name = entry["name"];
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
    auto read = manifest_from_json(with_parts(json, Json::array({entry})), manifest_path);
    if (!read.ok()) {
      checks.fail(checks::kManifest, manifest_path + ": " + at,
                  renumber(read.error().message, i) + "; export the part again");
      continue;
    }
    checks.pass(checks::kManifest, "part " + read->parts[0].name, "its bundle.json entry is complete and valid");
    for (const ManifestFile& file : read->parts[0].files) out.owned.insert(file.path);
    out.valid.push_back(std::move(read->parts[0]));
  }
  check_collisions(names, manifest_path, checks);
  return out;
}

bool check_listed_file(const fs::path& folder, const ManifestFile& file, CheckList& checks) {
  const std::string path = (folder / file.path).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    checks.fail(checks::kFile, path,
                "missing: bundle.json lists it as the part's " + std::string(file_role_name(file.role)) +
                    " file; restore it or export the part again");
    return false;
  }
  if (!fs::is_regular_file(path, ec)) {
    checks.fail(checks::kFile, path, "is not a regular file; expected the part's " + std::string(file_role_name(file.role)) + " file");
    return false;
  }
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) {
    checks.fail(checks::kFile, path, mapped.error().message);
    return false;
  }
  if (mapped->size() != file.size) {
    checks.fail(checks::kFile, path,
                "is " + std::to_string(mapped->size()) + " bytes; bundle.json records " + std::to_string(file.size) +
                    ": the file changed or was cut short after export; restore it or export the part again");
    return false;
  }
  // Streamed through the mapping with pages dropped behind it.
  const std::string digest = sha256_mapped_range(*mapped, 0, mapped->size());
  if (digest != file.sha256) {
    checks.fail(checks::kFile, path,
                "SHA-256 is " + digest + "; bundle.json records " + file.sha256 +
                    ": the file changed after export; restore it or export the part again");
    return false;
  }
  checks.pass(checks::kFile, path, std::to_string(file.size) + " bytes, SHA-256 as recorded");
  return true;
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

// What bundle.json says of the methods against what the program holds:
// `run` and `verify` trust the manifest's signatures.
void check_manifest_program(const ManifestPart& part, const PteFile& pte, CheckList& checks) {
  const std::string subject = "part " + part.name;
  size_t problems = 0;
  const std::vector<MethodInfo> methods = describe_methods(pte);
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

// One of the part's programs; null when it did not open (already reported).
std::shared_ptr<PteFile> open_program(const std::string& program_path, bool missing, CheckList& checks) {
  if (missing) {
    checks.skip(checks::kProgram, program_path, "not checked: the file is missing (see the file check)");
    return nullptr;
  }
  auto program = PteFile::open(program_path);
  if (!program.ok()) {
    checks.fail(checks::kProgram, program_path, program.error().message + "; export the part again");
    return nullptr;
  }
  auto pte = std::make_shared<PteFile>(std::move(*program));
  checks.pass(checks::kProgram, program_path,
              std::to_string(pte->segments().size()) + " segment(s) and " + std::to_string(pte->named_data().size()) +
                  " named-data entr" + (pte->named_data().size() == 1 ? "y" : "ies") + ", all inside the file");
  return pte;
}

void check_part(const fs::path& folder, const ManifestPart& part, CheckList& checks, std::vector<VerifySubject>& subjects) {
  std::set<std::string> missing;  // listed paths
  for (const ManifestFile& file : part.files) {
    std::error_code ec;
    if (!check_listed_file(folder, file, checks) && !fs::exists(folder / file.path, ec)) missing.insert(file.path);
  }
  // A missing file was reported once, by the file check; what needs it is skipped.
  std::shared_ptr<PtdFile> ptd;
  bool data_readable = true;
  if (const ManifestFile* data = part.find_file(FileRole::Data)) {
    const std::string data_path = (folder / data->path).string();
    if (missing.count(data->path)) {
      checks.skip(checks::kDataFile, data_path, "not checked: the file is missing (see the file check)");
      data_readable = false;
    } else if (auto opened = PtdFile::open(data_path); !opened.ok()) {
      checks.fail(checks::kDataFile, data_path, opened.error().message + "; export the part again");
      data_readable = false;
    } else {
      ptd = std::make_shared<PtdFile>(std::move(*opened));
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
    auto pte = open_program(program_path, missing.count(program_file->path) > 0, checks);
    if (!pte) continue;

    VerifySubject subject;
    subject.label = "part " + part.name + (program_file->target ? " (" + *program_file->target + " program)" : "");
    subject.part_name = part.name;
    subject.kind = SubjectKind::Program;
    subject.program_path = program_path;
    subject.pte = pte;
    subject.ptd = ptd;
    subject.bundle_dir = folder.string();
    subject.manifest = part;
    subject.target = program_file->target;

    ProgramContext context;
    context.pte = pte.get();
    context.ptd = ptd.get();
    context.program_name = program_path;
    context.expected_data_name = part.name;
    context.require_data_name = part.find_file(FileRole::Data) != nullptr;
    context.check_keys = data_readable;
    check_manifest_program(part, *pte, checks);
    check_program_contents(context, checks);

    // The test case is one file for the part; every program takes the same inputs.
    if (part.testcase && !testcase_checked) {
      testcase_checked = true;
      const std::string testcase_path = (folder / part.testcase->path).string();
      if (missing.count(part.testcase->path)) {
        checks.skip(checks::kTestcaseFile, testcase_path, "not checked: the file is missing (see the file check)");
      } else if (auto opened = PtdFile::open(testcase_path); !opened.ok()) {
        checks.fail(checks::kTestcaseFile, testcase_path, opened.error().message + "; export the part again with --example");
      } else {
        auto file = std::make_shared<PtdFile>(std::move(*opened));
        if (auto method = check_testcase_file(part, *part.testcase, *file, *pte, checks)) {
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

void check_unlisted(const fs::path& folder, const std::set<std::string>& owned, CheckList& checks) {
  size_t problems = 0;
  auto visit = [&](const fs::path& dir, const std::string& prefix) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& entry = it->path();
      const std::string relative = prefix + entry.filename().string();
      if (!is_program_or_data(entry) || owned.count(relative)) continue;
      ++problems;
      checks.fail(checks::kUnlistedFile, entry.string(),
                  "is in the bundle folder but bundle.json does not list it; `run` and `verify` ignore it and it may "
                  "be another part's stale file; delete it, or add it as a part with ptbundle export");
    }
    if (ec) {
      ++problems;
      checks.fail(checks::kUnlistedFile, dir.string(), "cannot list the folder: " + ec.message());
    }
  };
  visit(folder, "");
  std::error_code ec;
  if (fs::is_directory(folder / kTestcaseFolder, ec)) visit(folder / kTestcaseFolder, std::string(kTestcaseFolder) + "/");
  // Per-target program folders of merged parts ("sm_90/<name>.pte").
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code dir_ec;
    if (is_gpu_target_name(name) && it->is_directory(dir_ec)) visit(it->path(), name + "/");
  }
  if (problems == 0) {
    checks.pass(checks::kUnlistedFile, folder.string(), "every .pte and .ptd in the folder is listed in bundle.json");
  }
}

}  // namespace

void check_bundle(const std::string& dir, CheckList& checks, std::vector<VerifySubject>& subjects) {
  const fs::path folder(dir);
  const std::string manifest_path = (folder / kManifestFileName).string();
  auto json = read_manifest_json(manifest_path, checks);
  if (!json) {
    checks.skip(checks::kUnlistedFile, dir, "without a readable bundle.json, which files the bundle owns is unknown");
    return;
  }
  ManifestParts parts = read_parts(*json, manifest_path, checks);
  for (const ManifestPart& part : parts.valid) check_part(folder, part, checks, subjects);
  check_unlisted(folder, parts.owned, checks);
}

}  // namespace ptb::integrity

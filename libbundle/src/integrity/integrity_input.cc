// Which checks a PATH gets: a bundle folder, a lone program (.pte, with its
// data file given or found beside it), a BundledProgram (.bpte) or an
// AOTInductor package (.pt2). The content decides, as for inspect.
#include <filesystem>

#include "integrity/integrity_internal.h"
#include "ptbundle/inspect/inspect.h"

namespace ptb {

namespace fs = std::filesystem;

namespace integrity {
namespace {

// The data file of a program that is not in a bundle; sets context.ptd.
std::shared_ptr<const PtdFile> open_data_file(const VerifyInput& input, const PteFile& pte, ProgramContext& context,
                                              CheckList& checks) {
  std::optional<std::string> path = input.data_path;
  const bool given = path.has_value();
  if (!path) path = find_data_file_beside(input.path, pte);
  if (!path) {
    context.data_files_tried = data_file_candidates(input.path, pte);
    checks.skip(checks::kDataFile, input.path,
                "no data file given or found beside it (looked for " + join(context.data_files_tried, ", ") +
                    "); every key must then be in the program itself");
    return nullptr;
  }
  auto opened = PtdFile::open(*path);
  if (!opened.ok()) {
    checks.fail(checks::kDataFile, *path, opened.error().message);
    context.check_keys = false;
    return nullptr;
  }
  auto ptd = std::make_shared<const PtdFile>(std::move(*opened));
  context.ptd = ptd.get();
  checks.pass(checks::kDataFile, *path,
              std::string(given ? "given" : "found beside the program") + ": " + std::to_string(ptd->entries().size()) +
                  " entries, all inside the file");
  return ptd;
}

// A program given on its own (a .pte, or the one inside a .bpte): its data
// file found and checked, its contents checked, named after its file.
VerifySubject program_subject(const VerifyInput& input, SubjectKind kind, std::shared_ptr<const PteFile> pte,
                              std::shared_ptr<const BpteFile> bpte, CheckList& checks) {
  ProgramContext context;
  context.pte = pte.get();
  context.program_name = input.path;
  VerifySubject subject;
  subject.label = input.path;
  subject.part_name = fs::path(input.path).stem().string();
  subject.kind = kind;
  subject.program_path = input.path;
  subject.ptd = open_data_file(input, *pte, context, checks);
  subject.pte = std::move(pte);
  subject.bpte = std::move(bpte);
  check_program_contents(context, checks);
  return subject;
}

}  // namespace

void check_lone_program(const VerifyInput& input, CheckList& checks, std::vector<VerifySubject>& subjects) {
  auto opened = PteFile::open(input.path);
  if (!opened.ok()) {
    checks.fail(checks::kProgram, input.path, opened.error().message);
    return;
  }
  auto pte = std::make_shared<const PteFile>(std::move(*opened));
  checks.pass(checks::kProgram, input.path,
              std::to_string(pte->segments().size()) + " segment(s) and " + std::to_string(pte->named_data().size()) +
                  " named-data entr" + (pte->named_data().size() == 1 ? "y" : "ies") + ", all inside the file");
  subjects.push_back(program_subject(input, SubjectKind::Program, pte, nullptr, checks));
}

void check_bundled_program(const VerifyInput& input, CheckList& checks, std::vector<VerifySubject>& subjects) {
  auto opened = BpteFile::open(input.path);
  if (!opened.ok()) {
    checks.fail(checks::kProgram, input.path, opened.error().message);
    return;
  }
  auto bpte = std::make_shared<const BpteFile>(std::move(*opened));
  size_t cases = 0;
  for (const auto& suite : bpte->test_suites()) cases += suite.test_cases.size();
  checks.pass(checks::kProgram, input.path,
              "BundledProgram with " + std::to_string(cases) + " test case(s); the program inside has " +
                  std::to_string(bpte->program().segments().size()) + " segment(s), all inside the file");
  // The program lives inside the .bpte; shares its owner so it outlives `bpte`.
  std::shared_ptr<const PteFile> pte(bpte, &bpte->program());
  subjects.push_back(program_subject(input, SubjectKind::BundledProgram, pte, bpte, checks));
}

}  // namespace integrity

std::vector<VerifySubject> check_integrity(const VerifyInput& input, CheckList& checks) {
  return check_integrity(input, checks, {}, nullptr);
}

std::vector<VerifySubject> check_integrity(const VerifyInput& input, CheckList& checks, const IntegrityOptions& options,
                                           SignatureSummary* signature) {
  SignatureSummary unused;
  SignatureSummary& summary = signature ? *signature : unused;
  summary.path = input.path;
  std::vector<VerifySubject> subjects;
  std::error_code ec;
  auto status = fs::status(input.path, ec);
  if (ec || !fs::exists(status)) {
    checks.fail(checks::kInput, input.path, "no such file or folder");
    return subjects;
  }
  if (fs::is_directory(status)) {
    if (input.data_path) {
      checks.fail(checks::kInput, input.path, "a folder takes no data file; expected PATH.pte,PATH.ptd for a program");
      return subjects;
    }
    if (!fs::exists(fs::path(input.path) / kManifestFileName, ec)) {
      // Appended, not concatenated: GCC 12 at -O2 reports a false -Warray-bounds on the temporaries here.
      std::string message = "folder without ";
      message += kManifestFileName;
      message += "; expected a bundle folder (made by ptbundle export), a .pte, a .bpte or a .pt2";
      checks.fail(checks::kInput, input.path, std::move(message));
      return subjects;
    }
    checks.pass(checks::kInput, input.path, "bundle folder");
    integrity::check_bundle(input.path, options, checks, subjects, summary);
    return subjects;
  }
  if (!options.keys.empty())
    checks.fail(checks::kSignature, input.path, "only bundle folders are signed (ptbundle sign); --key needs a bundle folder");
  auto kind = detect_inspect_kind(input.path);
  if (!kind.ok()) {
    checks.fail(checks::kInput, input.path, kind.error().message);
    return subjects;
  }
  if (*kind == "ptd") {
    checks.fail(checks::kInput, input.path,
                "a data file is verified with its program; give PROGRAM.pte," + input.path);
    return subjects;
  }
  if (input.data_path && *kind == "pt2") {
    checks.fail(checks::kInput, input.path, "a .pt2 package holds its weights; give it without a data file");
    return subjects;
  }
  if (input.data_path && !fs::exists(*input.data_path, ec)) {
    checks.fail(checks::kInput, *input.data_path, "no such file (the data file given after the comma)");
    return subjects;
  }
  if (*kind == "pte") {
    checks.pass(checks::kInput, input.path, "ExecuTorch program");
    integrity::check_lone_program(input, checks, subjects);
  } else if (*kind == "bpte") {
    checks.pass(checks::kInput, input.path, "ExecuTorch BundledProgram");
    integrity::check_bundled_program(input, checks, subjects);
  } else {
    checks.pass(checks::kInput, input.path, "AOTInductor package");
    integrity::check_package(input.path, checks, subjects);
  }
  return subjects;
}

}  // namespace ptb

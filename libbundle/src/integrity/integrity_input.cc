// Which checks a PATH gets: a bundle folder, a lone program (.pte, with its
// data file given or found beside it), a BundledProgram (.bpte) or an
// AOTInductor package (.pt2). The content decides (file_kind.h), as for every command. Each file
// is mapped once: the mapping that tells its kind is the one its reader parses.
#include <filesystem>

#include "integrity/integrity_internal.h"
#include "merge/merge_pair.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/program/program_argument.h"
#include "ptbundle/fb/program_generated.h"

namespace ptb {

namespace fs = std::filesystem;

namespace detail {
namespace {

// The data file of a program that is not in a bundle, set on `program`.
void open_data_file(const ProgramArgument& input, ProgramWithData& program, ProgramContext& context,
                    CheckList& checks) {
  std::optional<std::string> path = input.data;
  const bool given = path.has_value();
  if (!path) path = find_data_file_beside(input.program, program.methods());
  if (!path) {
    context.data_files_tried = data_file_candidates(input.program, program.methods());
    checks.skip(checks::kDataFile, input.program,
                "no data file given or found beside it (looked for " + join(context.data_files_tried, ", ") +
                    "); every key must then be in the program itself");
    return;
  }
  auto opened = PtdFile::open(*path);
  if (!opened.ok()) {
    checks.fail(checks::kDataFile, *path, opened.error().message);
    context.check_keys = false;
    return;
  }
  auto ptd = std::make_shared<const PtdFile>(std::move(*opened));
  checks.pass(checks::kDataFile, *path,
              std::string(given ? "given" : "found beside the program") + ": " + std::to_string(ptd->entries().size()) +
                  " entries, all inside the file");
  program.set_data(std::move(ptd));
}

// A program given on its own (a .pte, or the one inside a .bpte): its data
// file found and checked, its contents checked, named after its file.
VerifySubject program_subject(const ProgramArgument& input, SubjectKind kind, std::shared_ptr<const PteFile> pte,
                              std::shared_ptr<const BpteFile> bpte, CheckList& checks) {
  auto program = std::make_shared<ProgramWithData>(std::move(pte), nullptr, input.program);
  ProgramContext context;
  context.program = program.get();
  context.program_name = input.program;
  open_data_file(input, *program, context, checks);
  check_program_contents(context, checks);
  VerifySubject subject;
  subject.label = input.program;
  subject.part_name = fs::path(input.program).stem().string();
  subject.kind = kind;
  subject.program_path = input.program;
  subject.program = std::move(program);
  subject.bpte = std::move(bpte);
  return subject;
}

}  // namespace

void check_lone_program(const ProgramArgument& input, std::shared_ptr<const MappedFile> file, CheckList& checks,
                        std::vector<VerifySubject>& subjects) {
  Bytes bytes = file->bytes();
  auto opened = PteFile::parse(std::move(file), bytes, input.program);
  if (!opened.ok()) {
    checks.fail(checks::kProgram, input.program, opened.error().message);
    return;
  }
  auto pte = std::make_shared<const PteFile>(std::move(*opened));
  pass_program(input.program, *pte, checks);
  // Said before the key checks fail on it with less to go on.
  if (auto pending = interrupted_pair(input.program); !pending.ok()) {
    checks.fail(checks::kProgram, input.program, pending.error().message);
  } else if (*pending) {
    checks.fail(checks::kProgram, input.program,
                "a merge was interrupted between writing " + **pending + " and this program (its journal " +
                    pair_journal_path(input.program) + " is still there), so the two are out of step; run the "
                    "same merge again: it finishes the interrupted one first");
  }
  subjects.push_back(program_subject(input, SubjectKind::Program, pte, nullptr, checks));
}

void check_bundled_program(const ProgramArgument& input, MappedFile file, CheckList& checks,
                           std::vector<VerifySubject>& subjects) {
  auto opened = BpteFile::parse(std::move(file));
  if (!opened.ok()) {
    checks.fail(checks::kProgram, input.program, opened.error().message);
    return;
  }
  auto bpte = std::make_shared<const BpteFile>(std::move(*opened));
  size_t cases = 0;
  for (const auto& suite : bpte->test_suites()) cases += suite.test_cases.size();
  checks.pass(checks::kProgram, input.program,
              "BundledProgram with " + std::to_string(cases) + " test case(s); the program inside has " +
                  std::to_string(bpte->program().segments().size()) + " segment(s), all inside the file");
  // The program lives inside the .bpte; shares its owner so it outlives `bpte`.
  std::shared_ptr<const PteFile> pte(bpte, &bpte->program());
  subjects.push_back(program_subject(input, SubjectKind::BundledProgram, pte, bpte, checks));
}

}  // namespace detail

std::vector<VerifySubject> check_integrity(std::string_view argument, CheckList& checks) {
  return check_integrity(argument, checks, {}, nullptr);
}

std::vector<VerifySubject> check_integrity(std::string_view argument, CheckList& checks, const IntegrityOptions& options,
                                           SignatureSummary* signature) {
  SignatureSummary unused;
  SignatureSummary& summary = signature ? *signature : unused;
  summary.path = std::string(argument);
  std::vector<VerifySubject> subjects;
  auto parsed = parse_program_argument(argument);
  if (!parsed.ok()) {
    checks.fail(checks::kInput, std::string(argument), parsed.error().message);
    return subjects;
  }
  const ProgramArgument& input = *parsed;
  // What the path is, as every command decides it (bundle.h); a folder
  // without bundle.json is refused here, in the same words as elsewhere.
  auto opened = open_input_path(input.program);
  if (!opened.ok()) {
    checks.fail(checks::kInput, input.program, opened.error().message);
    return subjects;
  }
  const FileKind kind = opened->kind;
  if (kind == FileKind::Bundle) {
    if (input.data) {
      checks.fail(checks::kInput, input.program, "a folder takes no data file; expected PATH.pte,PATH.ptd for a program");
      return subjects;
    }
    checks.pass(checks::kInput, input.program, "bundle folder");
    detail::check_bundle(input.program, options, checks, subjects, summary);
    return subjects;
  }
  if (!options.keys.empty())
    checks.fail(checks::kSignature, input.program, "only bundle folders are signed (ptbundle sign); --key needs a bundle folder");
  else if (options.require_signature)
    checks.fail(checks::kSignature, input.program,
                "not a bundle folder, and only bundle folders are signed (ptbundle sign); --require-signature needs one");
  if (kind == FileKind::Signature) {
    checks.fail(checks::kInput, input.program,
                "is a signature; a signature is verified with its bundle folder: give the folder (and --key)");
    return subjects;
  }
  if (kind == FileKind::Ptd) {
    checks.fail(checks::kInput, input.program,
                "a data file is verified with its program; give PROGRAM.pte," + input.program);
    return subjects;
  }
  std::error_code ec;
  if (input.data && kind == FileKind::Pt2) {
    checks.fail(checks::kInput, input.program, "a .pt2 package holds its weights; give it without a data file");
    return subjects;
  }
  if (input.data && !fs::exists(*input.data, ec)) {
    checks.fail(checks::kInput, *input.data, "no such file (the data file given after the comma)");
    return subjects;
  }
  MappedFile mapped = std::move(*opened->file);
  if (kind == FileKind::Pte) {
    checks.pass(checks::kInput, input.program, "ExecuTorch program");
    detail::check_lone_program(input, std::make_shared<const MappedFile>(std::move(mapped)), checks, subjects);
  } else if (kind == FileKind::Bpte) {
    checks.pass(checks::kInput, input.program, "ExecuTorch BundledProgram");
    detail::check_bundled_program(input, std::move(mapped), checks, subjects);
  } else {
    checks.pass(checks::kInput, input.program, "AOTInductor package");
    detail::check_package(input.program, checks, subjects);
  }
  return subjects;
}

}  // namespace ptb

// Shared by the integrity_*.cc files; private to libbundle.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/bundle/bundle.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/program/program_argument.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/signing/model_signature.h"
#include "ptbundle/base/text.h"

namespace ptb::detail {

// One program and its data file, as a check's messages name them.
struct ProgramContext {
  const ProgramWithData* program = nullptr;
  std::string program_name;      // "encoder.pte", "sm80/model.pte"
  // Bundle parts: the data name a delegate's data_name spec must equal, and
  // whether every CUDA delegate must carry one (the part has a data file).
  std::optional<std::string> expected_data_name;
  bool require_data_name = false;
  // False when the data file did not open: every key would read as missing.
  bool check_keys = true;
  // bundle.json says the part has no weights (cuda.weights "none") or that
  // its library holds them (cuda.weights "library"): an empty weights blob
  // is what export writes for it, not a lost one.
  bool no_weights = false;
  bool weights_in_library = false;
  // Lone programs without a data file: where one was looked for.
  std::vector<std::string> data_files_tried;
};

// data_name compile specs (kName, kDataName), delegate keys
// (kDelegateKeys) and weight views (kWeights).
void check_program_contents(const ProgramContext& context, CheckList& checks);

// The check kProgram passes for a program that opened.
void pass_program(const std::string& subject, const PteFile& pte, CheckList& checks);

void check_bundle(const std::string& dir, const IntegrityOptions& options, CheckList& checks,
                  std::vector<VerifySubject>& subjects, SignatureSummary& signature);
void check_lone_program(const ProgramArgument& input, std::shared_ptr<const MappedFile> file, CheckList& checks,
                        std::vector<VerifySubject>& subjects);
void check_bundled_program(const ProgramArgument& input, MappedFile file, CheckList& checks,
                           std::vector<VerifySubject>& subjects);
void check_package(const std::string& path, CheckList& checks, std::vector<VerifySubject>& subjects);

// How verify and merge's input check read a bundle folder, once for every
// check: the signature file checked (bundle.sig where present, else the
// first found) left out of the digests with git's paths, and the sizes
// `manifest` records (when given) compared before anything is hashed.
struct FolderReading {
  std::optional<std::string> signature_name;
  FolderHashOptions hashing;
};
FolderReading folder_reading(const BundleDir& dir, const Manifest* manifest, unsigned threads);

// The signature (kSignature) and the files against it (kSignedFiles), then
// the content-addressed keys (kContentKey), from the folder's digests.
// `whole_folder` false: `digests` holds some of the folder's files only (those
// a robot process loads), and signed files not among them are not checked.
void check_signature(const BundleDir& dir, const std::optional<std::string>& signature_name, const FolderDigests& digests,
                     const IntegrityOptions& options, CheckList& checks, SignatureSummary& summary,
                     bool whole_folder = true);
void check_content_keys(const std::string& dir, const FolderDigests& digests, CheckList& checks);
// The folder's files against a signature's statement (kSignedFiles): none
// added, missing or changed. Trusted only once the signature verified.
bool check_signed_files(const std::string& dir, const SignedStatement& statement, const FolderDigests& digests,
                        CheckList& checks, bool whole_folder = true);

// A listed file's size and SHA-256 against bundle.json's (kFile).
bool check_listed_digest(const std::string& path, const ManifestFile& file, uint64_t size, const std::string& digest,
                         CheckList& checks);

// A listed file's size and SHA-256 against bundle.json's (kFile, subject `path`).
bool check_listed_digest(const std::string& path, const ManifestFile& file, uint64_t size, const std::string& digest,
                         CheckList& checks);
// What bundle.json says of the part's methods against the program (kManifestProgram).
void check_manifest_program(const ManifestPart& part, const ProgramWithData& program, CheckList& checks);

// The files of an opened part, by their path in bundle.json: the descriptor
// of each mapping, with the content keys found in the parsed file.
std::map<std::string, FolderHashOptions::OpenFile> part_open_files(const BundlePart& part);

// testcases/<part>.ptd against the part's program: returns the method it tests.
std::optional<std::string> check_testcase_file(const ManifestPart& part, const ManifestTestcase& testcase,
                                               const PtdFile& file, const ProgramWithData& program, CheckList& checks);

}  // namespace ptb::detail

// Opening a bundle: the one way run, verify, inspect and merge read a bundle
// folder and its parts, so that they agree on what a bundle and a part are
// and give a bad one the same verdict (exit 1, the same cause).
//
// The rules, one for every command:
//  - A bundle is a folder with bundle.json (written by ptbundle export or
//    merge). A folder without one is refused, with how to make one: guessing
//    parts from *.pte names would also guess which data file goes with which
//    program, which bundle.json exists to say.
//  - A part is what bundle.json lists for it: its program (<name>.pte, or one
//    per GPU target for a part merged from the single-blob layout), its data
//    file, its test case. Each is opened inside the folder with no symlink
//    followed (BundleDir) and read through that same descriptor: a file is
//    never checked and then reopened by path, where a link swapped in between
//    would lead out of the folder.
//  - A part's program is an ExecuTorch program ("ET12"). A BundledProgram
//    (.bpte) is taken where a program file is given on its own (verify,
//    inspect and run read the program inside it); in a bundle it is refused,
//    as export never puts one there and bundle.json could not describe it.
//
// Public headers stay free of JSON and generated FlatBuffers: the manifest
// types are declared here and defined in manifest.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"
#include "ptbundle/formats/file_kind.h"

namespace ptb {

struct Manifest;
struct ManifestPart;
struct ManifestFile;
class PteFile;
class PtdFile;
class ProgramWithData;
class BundleReadLock;

// A path named on the command line: a bundle folder, or one file, mapped
// (symlinks followed: the user named it), whose bytes told its kind.
struct InputPath {
  std::string path;
  FileKind kind = FileKind::Bundle;
  std::optional<MappedFile> file;  // none for a bundle folder
};
// A folder without bundle.json is refused here (folder_without_manifest).
Result<InputPath> open_input_path(const std::string& path);

// The refusal of a folder without bundle.json, for every command alike.
Error folder_without_manifest(const std::string& folder);

// One program of a part.
struct BundleProgram {
  std::string path;                   // relative to the folder, as bundle.json lists it
  std::optional<std::string> target;  // a part kept per GPU target: "sm_90", "compute_75"
  // The program with the part's data file attached: what run loads, verify
  // checks, merge merges and inspect shows.
  std::shared_ptr<const ProgramWithData> program;
};

struct BundlePart {
  // The part's bundle.json entry; shares the Bundle's manifest, so it stays
  // valid after the Bundle is gone.
  std::shared_ptr<const ManifestPart> entry;
  std::vector<BundleProgram> programs;  // bundle.json's order; never empty
  std::shared_ptr<const PtdFile> data;      // null when the part has no data file
  std::shared_ptr<const PtdFile> testcase;  // testcases/<name>.ptd; null when it has none
  bool per_target() const { return !programs.empty() && programs.front().target.has_value(); }
};

// The pieces Bundle is made of, for verify, which reads bundle.json entry
// by entry so that one bad entry does not hide the others. `dir` is the
// bundle folder; `file` an entry of a manifest that was read and checked.
//
// A listed file, mapped from the descriptor that was checked. Refused:
// missing ("missing: bundle.json lists it as the part's data file"), a
// symlink anywhere on its path, anything but a regular file.
Result<MappedFile> open_listed_file(const BundleDir& dir, const ManifestFile& file);
// What open_listed_file says of a missing file, after "<folder>/<path>: ".
std::string listed_file_missing(const ManifestFile& file);
// A listed program file, parsed from that mapping; a BundledProgram or any
// other kind in its place is refused.
Result<std::shared_ptr<const PteFile>> open_listed_program(const BundleDir& dir, const ManifestFile& file);
// A listed data or test-case file, parsed from that mapping.
Result<std::shared_ptr<const PtdFile>> open_listed_data(const BundleDir& dir, const ManifestFile& file);
// Every program of `part` with its data file, and its test case.
Result<BundlePart> open_bundle_part(const BundleDir& dir, std::shared_ptr<const ManifestPart> part);

class Bundle {
 public:
  // `folder` may be reached through a symlink (the user named it); nothing
  // inside it is. bundle.json is read and checked whole (manifest.h).
  static Result<Bundle> open(const std::string& folder);

  const std::string& path() const;
  const BundleDir& dir() const { return *dir_; }
  const Manifest& manifest() const { return *manifest_; }
  // bundle.json as opened: manifest() was parsed from a copy of its bytes,
  // and commands that hash the folder hash this file through its descriptor.
  const MappedFile& manifest_file() const { return *manifest_file_; }

  // The part called `name`; with an empty name the bundle's only part. A
  // usage error names the parts when there are several and none was chosen
  // (`option` says how to choose: "--part"), or the name is not one of them.
  Result<std::shared_ptr<const ManifestPart>> find_part(std::string_view name,
                                                        const std::string& option = "--part") const;
  // The part's programs, data and test case, each opened inside the folder.
  Result<BundlePart> open_part(std::string_view name) const;
  Result<BundlePart> open_part(std::shared_ptr<const ManifestPart> part) const;
  // Every part, in bundle.json's order.
  std::vector<std::shared_ptr<const ManifestPart>> parts() const;

 private:
  std::shared_ptr<const BundleDir> dir_;
  std::shared_ptr<const Manifest> manifest_;
  std::shared_ptr<const MappedFile> manifest_file_;
  std::shared_ptr<const BundleReadLock> lock_;  // shared by copies: released with the last
};

}  // namespace ptb

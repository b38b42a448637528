// Opening one part of a bundle checked, before anything uses it: the call
// `run` makes and the robot API can make, so that what is loaded is what
// verify would pass.
//
//   PTB_TRY(Bundle bundle, Bundle::open(folder));
//   PTB_TRY(CheckedPart checked, open_checked_part(bundle, "encoder"));
//   // checked.part: the programs, data file and test case, each mapped
//   // once; every check below read these very files (descriptors), and the
//   // caller loads from the same mappings. checked.checks says what passed.
//
// The checks, each as verify makes it and failing with verify's message
// ("<folder>/<file>: SHA-256 is ...; bundle.json records ...: the file
// changed after export; ..."), exit status 1:
//  - bundle.json: read and validated whole (Bundle::open), and each program's
//    methods, signatures and delegates as bundle.json records them;
//  - every file the part lists (programs, data file, test case): its size as
//    bundle.json records it (compared before any byte is hashed), then its
//    SHA-256;
//  - every content-addressed key ("<sha256>_so_blob", "<sha256>_weights_blob")
//    of the programs' named data and of the data file: its bytes hash to the
//    name.
// Files are hashed through the descriptors of the mappings the part holds,
// never opened again by path, so a file renamed over a listed one after the
// part was opened is neither checked nor used. The FlatBuffers are read from
// private copies (pte.h). A process that rewrites a listed file in place
// while it is used can still change mapped data after its hash: against a
// writer with write access to the bundle's files, sign the bundle and keep
// it where that writer cannot write.
// The bundle's signature is not checked here (verify --key does that).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/bundle/bundle.h"

namespace ptb {

// One listed file of the part, as checked.
struct CheckedFile {
  std::string path;  // relative to the bundle folder, as bundle.json lists it
  std::string role;  // "program", "data", "testcase"
  uint64_t size = 0;
  std::string sha256;
  template <class F>
  void fields(F& f) const {
    f("path", path)("role", role)("size", size)("sha256", sha256);
  }
};

// What passed before the part was used; schemas/run.schema.json's "checked".
struct PartChecks {
  bool manifest = false;     // bundle.json validated, the methods as it records them
  std::vector<CheckedFile> files;  // every listed file: size and SHA-256 as bundle.json records
  uint64_t content_keys = 0;       // content-addressed keys, each hashing to its name
  std::string what;                // one line for people: what was checked, or why nothing could be
  template <class F>
  void fields(F& f) const {
    f("manifest", manifest)("files", files)("content_keys", content_keys)("what", what);
  }
};

struct CheckedPart {
  BundlePart part;    // the mappings every check read; use these
  PartChecks checks;  // what passed
};

// The part `entry` of `bundle` (from Bundle::find_part or Bundle::parts),
// opened and checked as above; `threads` hash files side by side (0: one
// per file). The first failed check is the error (ErrorKind::Invalid, or
// I/O when a file cannot be read), naming the file and what was expected.
Result<CheckedPart> open_checked_part(const Bundle& bundle, std::shared_ptr<const ManifestPart> entry,
                                      unsigned threads = 0);
// By name, as Bundle::find_part takes it: "" for the bundle's only part.
Result<CheckedPart> open_checked_part(const Bundle& bundle, std::string_view name, unsigned threads = 0);

}  // namespace ptb

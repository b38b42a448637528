// The per-format halves of inspect_path. Private to libbundle.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ptbundle/base/sha256.h"
#include "ptbundle/inspect/inspect.h"
#include "ptbundle/signing/folder_digests.h"

namespace ptb {
class ProgramWithData;
class PtdFile;
class BpteFile;
class PteFile;
class MappedFile;
}  // namespace ptb

namespace ptb::detail {

// The digests --sha256 shows, computed before the model is built: each file
// is read once, its whole digest and those of the ranges the model shows
// (segments, blobs) taken from that one read, and the files of a bundle are
// hashed in parallel across the cores (hash_open_files, as verify and sign
// hash a folder). A range nobody asked for is hashed when it is looked up,
// so a lookup is never wrong, only slower. Files are known by descriptor:
// the digest is of the file the model was read from.
class InspectDigests {
 public:
  // The whole of `file`, and [offset, offset + size) of it.
  void want(const MappedFile& file);
  void want(const MappedFile& file, uint64_t offset, uint64_t size);
  // Every wanted digest from one read per file; `progress` hears of the bytes read.
  void compute(const Progress& progress = {}, const std::string& what = "hashing");
  Result<std::string> whole(const MappedFile& file) const;
  Result<std::string> range(const MappedFile& file, uint64_t offset, uint64_t size) const;

 private:
  std::map<int, FileDigest> files_;  // by descriptor
};

// The GPU code images in a library or kernel file (libkernels'
// scan_kernels), or why they cannot be read.
InspectKernels inspect_kernels(Bytes data, const std::string& name);

// With options.sha256 they hash what they show, and fail when a file cannot
// be read whole (cut short while read).
// `digests` serves the digests (want() them first for one read per file).
Result<InspectProgram> inspect_program(const ProgramWithData& program, const InspectOptions& options,
                                       const InspectDigests& digests);
Result<InspectDataFile> inspect_data(const PtdFile& ptd, const InspectOptions& options, const InspectDigests& digests);
Result<InspectBundled> inspect_bundled(const BpteFile& bpte, const InspectOptions& options, const InspectDigests& digests);
// What each of those hashes, for InspectDigests::want.
void want_digests(const PteFile& pte, InspectDigests& digests);
void want_digests(const PtdFile& ptd, InspectDigests& digests);
Result<InspectPackage> inspect_package(const std::string& path, const InspectOptions& options);
Status inspect_bundle_folder(InspectedFile& out, const InspectOptions& options);
Result<InspectSignature> inspect_signature(const MappedFile& file);

}  // namespace ptb::detail

// The per-format halves of inspect_path. Private to libbundle.
#pragma once

#include <string>

#include "ptbundle/base/sha256.h"
#include "ptbundle/inspect/inspect.h"

namespace ptb {
class ProgramWithData;
class PtdFile;
class BpteFile;
class MappedFile;
}  // namespace ptb

namespace ptb::detail {

// The GPU code images in a library or kernel file (libkernels'
// scan_kernels), or why they cannot be read.
InspectKernels inspect_kernels(Bytes data, const std::string& name);

// With options.sha256 they hash what they show, and fail when a file cannot
// be read whole (cut short while read).
Result<InspectProgram> inspect_program(const ProgramWithData& program, const InspectOptions& options);
Result<InspectDataFile> inspect_data(const PtdFile& ptd, const InspectOptions& options);
Result<InspectBundled> inspect_bundled(const BpteFile& bpte, const InspectOptions& options);
Result<InspectPackage> inspect_package(const std::string& path, const InspectOptions& options);
Status inspect_bundle_folder(InspectedFile& out, const InspectOptions& options);
Result<InspectSignature> inspect_signature(const MappedFile& file);

}  // namespace ptb::detail

// The per-format halves of inspect_path. Private to libbundle.
#pragma once

#include <string>

#include "ptbundle/inspect/inspect.h"
#include "ptbundle/base/sha256.h"

namespace ptb {
class ProgramWithData;
class PtdFile;
class BpteFile;
class MappedFile;
}  // namespace ptb

namespace ptb::detail {

std::string hex(Bytes bytes);

// "kernels": the GPU code images in a library or kernel file (libkernels'
// scan_kernels), or "kernels_error" when they cannot be read.
void add_kernels(InspectJson& out, Bytes data, const std::string& name);

// The fields after "path", "kind" and "size".
InspectJson inspect_program(const ProgramWithData& program, const InspectOptions& options);
InspectJson inspect_data(const PtdFile& ptd, const InspectOptions& options);
InspectJson inspect_bundled(const BpteFile& bpte, const InspectOptions& options);
Result<InspectJson> inspect_package(const std::string& path, const InspectOptions& options);
Result<InspectJson> inspect_bundle_folder(const std::string& path, const InspectOptions& options);
Result<InspectJson> inspect_signature(const std::string& path);

}  // namespace ptb::detail

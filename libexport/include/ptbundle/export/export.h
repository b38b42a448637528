// `ptbundle export`: turning compiled parts into the parts of a bundle.
//
// A part's SOURCE is either an ExecuTorch export ("model.pte" or
// "model.pte,data.ptd", split by parse_program_argument; without a data file,
// the one found beside the program as every command finds it,
// data_file_candidates in program_with_data.h) or an AOTInductor package (".pt2")
// compiled with the options ExecuTorch's CUDA backend uses, which is
// converted into a .pte with one CudaBackend delegate. Every part gets the
// data name NAME: its CUDA delegates carry the compile spec data_name=NAME
// and its data file is NAME.ptd, so two parts in one folder never share a
// weights file.
//
// All checks run before anything is written; files are written to temporary
// files inside the bundle folder and renamed into place together, then
// bundle.json is rewritten atomically. A failure leaves the folder as it was.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/base/progress.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct ExampleFiles {
  std::vector<std::string> inputs;   // .npy files, in the method's input order
  // .npy files, the expected outputs. Empty ("PART=IN.npy:"): a sampler,
  // whose outputs the test case checks by dtype, shape and finiteness only.
  std::vector<std::string> outputs;
};

struct PartRequest {
  std::string name;
  std::string program;                    // model.pte or package.pt2
  std::optional<std::string> data_file;   // the .ptd given after a comma
  std::optional<ExampleFiles> example;
};

// "NAME=SOURCE" where SOURCE is "model.pte", "model.pte,data.ptd" or "x.pt2".
Result<PartRequest> parse_part_argument(std::string_view text);
// "PART=in0.npy,in1.npy:out0.npy,out1.npy", or "PART=in0.npy:" (inputs only).
Result<std::pair<std::string, ExampleFiles>> parse_example_argument(std::string_view text);

struct ExportOptions {
  std::string output_dir;
  std::vector<PartRequest> parts;
  // Test-case tolerances recorded in bundle.json for every output; unset:
  // each output's own, by tolerance.h's rule (output_tolerance).
  std::optional<double> atol;
  std::optional<double> rtol;
  bool force = false;  // replace parts (and stray files) of the same name
  std::string tool_version;  // recorded as ptbundle_version
  Progress progress;  // each bundle file as it is written
};

// What export did. fields(F&) describes it to a report printer, as every
// library report does (inspect_model.h): schemas/export.schema.json. Files
// render as bundle.json lists them (manifest_json.h).
struct ExportedPart {
  std::string name;
  std::string source_kind;  // "executorch" or "aoti_package"
  bool replaced = false;    // an existing part of this name was replaced
  std::vector<ManifestFile> files;
  std::vector<std::string> notes;  // things a user may want to know ("no data file needed")
  template <class F>
  void fields(F& f) const {
    f("name", name)("source", source_kind)("replaced", replaced)("files", files)("notes", notes);
  }
};

struct ExportReport {
  std::string bundle_dir;
  std::vector<ExportedPart> parts;
  Manifest manifest;  // as written
  // Signatures of the bundle that the change made invalid, removed.
  std::vector<std::string> removed_signatures;
  template <class F>
  void fields(F& f) const {
    f("bundle", bundle_dir)("manifest", kManifestFileName)("parts", parts)("removed_signatures", removed_signatures);
  }
};

Result<ExportReport> export_parts(const ExportOptions& options);

// The ExecuTorch backends that keep all their data inside the .pte and so
// cannot take a data name ("MetalBackend").
bool backend_keeps_data_inside(std::string_view backend_id);

}  // namespace ptb

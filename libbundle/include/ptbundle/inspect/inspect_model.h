// What `ptbundle inspect` reports about one path: plain structs, filled by
// libbundle (inspect.h) and rendered by the CLI as text and as JSON.
//
// Each struct lists its JSON members once, in the order of
// schemas/inspect.schema.json, with `template <class F> void fields(F& f)
// const`: `f(key, value)` adds a member, and a member the schema leaves out
// when it does not apply is only listed when it is set. The library builds
// no JSON; the visitor (the CLI's printer, apps/report.h) decides the form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {

// ---- GPU code -------------------------------------------------------------------

// One kernel image found in a library or kernel file ("kernel_image").
struct InspectKernel {
  std::string target;  // "sm_90a", "compute_75"
  std::string kind;    // "cubin", "ptx"
  uint32_t sm = 0;
  std::optional<std::string> ptx_version;
  std::string container;  // "fatbin", "cubin", "ptx"
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t uncompressed_size = 0;
  std::optional<std::string> compression;
  std::string location;
  template <class F>
  void fields(F& f) const {
    f("target", target)("kind", kind)("sm", sm)("ptx_version", ptx_version)("container", container)("offset", offset)(
        "size", size)("uncompressed_size", uncompressed_size)("compression", compression)("location", location);
  }
};

// The compute functions of one family a library calls ("runtime_calls").
struct InspectShimCalls {
  std::string family;   // "GEMM", "convolution", "sort", ...
  std::string library;  // what the built-in runtime opens for them: "cuBLAS", "cuDNN", ""
  std::vector<std::string> functions;
  template <class F>
  void fields(F& f) const {
    f("family", family)("library", library)("functions", functions);
  }
};

// What a shared library asks of the runtime that runs it ("runtime"):
// LibTorch, when it is linked to it; else the built-in runtime's compute
// functions it calls, by family, and those the runtime lacks.
// A dynamic dimension the library's input checks bound (aoti_input_bounds.h):
// what a run must keep each input's size within.
struct InspectDynamicDim {
  uint32_t input = 0;
  uint32_t dim = 0;
  std::optional<int64_t> min;  // null: checked, but the bound could not be paired
  std::optional<int64_t> max;
  template <class F>
  void fields(F& f) const {
    f("input", input)("dim", dim)("min", min)("max", max);
  }
};

struct InspectRuntimeNeeds {
  // "built-in" when the library imports only the shims (link_libtorch=False),
  // "LibTorch" when it is linked to LibTorch (link_libtorch=True).
  std::string needs;
  std::vector<std::string> libtorch;  // DT_NEEDED entries naming LibTorch
  std::vector<InspectShimCalls> calls;
  std::vector<std::string> lacks;
  std::vector<InspectDynamicDim> dynamic_dims;
  template <class F>
  void fields(F& f) const {
    f("needs", needs)("libtorch", libtorch)("calls", calls)("lacks", lacks)("dynamic_dims", dynamic_dims);
  }
};

// The kernels of one library, or why they cannot be read: members of the
// object that owns them ("kernels" or "kernels_error", and "runtime" for a
// shared library).
struct InspectKernels {
  std::vector<InspectKernel> images;
  std::optional<std::string> error;
  std::optional<InspectRuntimeNeeds> runtime;
  template <class F>
  void fields(F& f) const {
    if (error) {
      f("kernels_error", *error);
    } else {
      f("kernels", images);
    }
    if (runtime) f("runtime", *runtime);
  }
};

// ---- Programs (.pte, and the program inside a .bpte) ---------------------------

// The sizes the library's checks allow a dynamic dimension.
struct InspectDimRange {
  std::optional<int64_t> min;
  std::optional<int64_t> max;
  template <class F>
  void fields(F& f) const {
    f("min", min)("max", max);
  }
};

struct InspectTensorSpec {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> dim_order;
  std::string dynamism;
  // Per dim, from the method's library (empty when it bounds none): the
  // .pte's shape holds only the upper bound; the lower one is the library's.
  std::vector<std::optional<InspectDimRange>> dim_bounds;
};

// One input or output of a method.
struct InspectValue {
  std::string kind;
  std::optional<InspectTensorSpec> tensor;
  template <class F>
  void fields(F& f) const {
    f("kind", kind);
    if (tensor) f("dtype", tensor->dtype)("shape", tensor->shape)("dim_order", tensor->dim_order)("dynamism", tensor->dynamism);
    if (tensor && !tensor->dim_bounds.empty()) f("dim_bounds", tensor->dim_bounds);
  }
};

struct InspectCompileSpec {
  std::string key;
  std::string value;  // the text, or its bytes in hex
  bool hex = false;
  template <class F>
  void fields(F& f) const {
    f("key", key)("value", value)("encoding", hex ? "hex" : "text");
  }
};

// A library's kernel file in the program (formats/kernel_files.h): the file
// name it loads, its named-data key, size and kernels.
struct InspectKernelFile {
  std::string name;
  std::string key;
  uint64_t size = 0;
  InspectKernels kernels;
  template <class F>
  void fields(F& f) const {
    f("name", name)("key", key)("size", size);
    kernels.fields(f);
  }
};

// The kernel files of one library, or why their keys are refused.
struct InspectKernelFiles {
  std::vector<InspectKernelFile> files;
  std::optional<std::string> error;
  template <class F>
  void fields(F& f) const {
    f("kernel_files", files);
    if (error) f("kernel_files_error", *error);
  }
};

// A blob a CUDA payload names by key, and whether the program holds it.
struct InspectBlob {
  std::string key;
  bool in_program = false;
  std::optional<uint64_t> size;  // when in the program
};

struct InspectCudaVariant {
  uint32_t target_sm = 0;
  uint32_t ptx_compute = 0;
  bool fallback_only = false;
  InspectBlob library;
  std::optional<InspectKernels> kernels;  // when the library is in the program
  InspectKernelFiles kernel_files;
  template <class F>
  void fields(F& f) const {
    f("target_sm", target_sm)("ptx_compute", ptx_compute)("fallback_only", fallback_only)("library_key", library.key)(
        "library_in_program", library.in_program)("library_size", library.size);
    if (kernels) kernels->fields(f);
    kernel_files.fields(f);
  }
};

struct InspectCudaWeight {
  std::string fqn;
  std::string storage_key;
  uint64_t storage_nbytes = 0;
  std::string dtype;
  int32_t device_type = 0;  // 1: CUDA
  int64_t storage_offset = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  template <class F>
  void fields(F& f) const {
    f("fqn", fqn)("storage_key", storage_key)("storage_nbytes", storage_nbytes)("dtype", dtype)("device_type", device_type)(
        "storage_offset", storage_offset)("sizes", sizes)("strides", strides);
  }
};

// A decoded CUDA payload: one library and one weights blob (the older
// forms), or variants and the weights they share (multi-variant).
struct InspectCudaPayload {
  std::string form;  // cuda_payload_form_name
  bool multi_variant = false;
  InspectBlob library;                    // older forms
  std::optional<InspectKernels> kernels;  // older forms, when the library is in the program
  InspectKernelFiles kernel_files;        // older forms
  InspectBlob weights_blob;               // older forms
  std::vector<InspectCudaVariant> variants;
  std::vector<InspectCudaWeight> weights;
  template <class F>
  void fields(F& f) const {
    f("form", form);
    if (multi_variant) {
      f("variants", variants)("weights", weights);
      return;
    }
    f("library_key", library.key)("library_in_program", library.in_program)("library_size", library.size);
    if (kernels) kernels->fields(f);
    kernel_files.fields(f);
    f("weights_key", weights_blob.key)("weights_in_program", weights_blob.in_program)("weights_size", weights_blob.size);
  }
};

struct InspectDelegate {
  uint64_t index = 0;
  std::string id;
  std::string location;  // "inline" or "segment"
  uint32_t data_index = 0;
  uint64_t payload_size = 0;
  std::optional<std::string> payload_sha256;  // with --sha256
  std::vector<InspectCompileSpec> compile_specs;
  std::optional<InspectCudaPayload> cuda;  // a CudaBackend delegate whose payload decodes
  std::optional<std::string> cuda_error;   // one whose payload does not
  template <class F>
  void fields(F& f) const {
    f("index", index)("id", id)("location", location)("data_index", data_index)("payload_size", payload_size);
    if (payload_sha256) f("payload_sha256", *payload_sha256);
    f("compile_specs", compile_specs);
    if (cuda) f("cuda", *cuda);
    if (cuda_error) f("cuda_error", *cuda_error);
  }
};

struct InspectMethod {
  std::string name;
  std::vector<InspectValue> inputs;
  std::vector<InspectValue> outputs;
  std::vector<std::string> operators;
  uint64_t num_values = 0;
  uint64_t num_instructions = 0;
  std::vector<int64_t> non_const_buffer_sizes;
  std::vector<InspectDelegate> delegates;
  template <class F>
  void fields(F& f) const {
    f("name", name)("inputs", inputs)("outputs", outputs)("operators", operators)("num_values", num_values)(
        "num_instructions", num_instructions)("non_const_buffer_sizes", non_const_buffer_sizes)("delegates", delegates);
  }
};

struct InspectExtendedHeader {
  uint32_t length = 0;
  uint64_t program_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
  template <class F>
  void fields(F& f) const {
    f("length", length)("program_size", program_size)("segment_base_offset", segment_base_offset)(
        "segment_data_size", segment_data_size);
  }
};

struct InspectConstants {
  std::string storage;  // "segment", "constant_buffer" or "none"
  std::optional<uint32_t> segment_index;
  uint64_t count = 0;
  template <class F>
  void fields(F& f) const {
    f("storage", storage)("segment_index", segment_index)("count", count);
  }
};

// A segment of a program or a data file.
struct InspectSegment {
  uint64_t index = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;
  uint64_t alignment = 0;
  std::optional<std::vector<std::string>> used_by;  // programs: what the segment holds
  std::optional<std::string> sha256;                // programs, with --sha256
  template <class F>
  void fields(F& f) const {
    f("index", index)("offset", offset)("size", size)("file_offset", file_offset)("alignment", alignment);
    if (used_by) f("used_by", *used_by);
    if (sha256) f("sha256", *sha256);
  }
};

// A program's named data: each blob a whole segment.
struct InspectProgramBlob {
  std::string key;
  uint32_t segment_index = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;
  uint64_t alignment = 0;
  std::optional<std::string> sha256;  // with --sha256
  template <class F>
  void fields(F& f) const {
    f("key", key)("segment_index", segment_index)("size", size)("file_offset", file_offset)("alignment", alignment);
    if (sha256) f("sha256", *sha256);
  }
};

struct InspectProgram {
  std::optional<InspectExtendedHeader> extended_header;
  uint32_t program_version = 0;
  std::vector<InspectMethod> methods;
  InspectConstants constants;
  std::vector<InspectSegment> segments;
  std::vector<InspectProgramBlob> named_data;
  template <class F>
  void fields(F& f) const {
    f("file_identifier", "ET12")("extended_header", extended_header)("program_version", program_version)(
        "methods", methods)("constants", constants)("segments", segments)("named_data", named_data);
  }
};

// ---- Data files (.ptd) -------------------------------------------------------------

struct InspectDataHeader {
  uint32_t length = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t segment_base_offset = 0;
  uint64_t segment_data_size = 0;
  template <class F>
  void fields(F& f) const {
    f("length", length)("flatbuffer_offset", flatbuffer_offset)("flatbuffer_size", flatbuffer_size)(
        "segment_base_offset", segment_base_offset)("segment_data_size", segment_data_size);
  }
};

struct InspectTensorLayout {
  std::string dtype;
  std::vector<int32_t> shape;
  std::vector<uint8_t> dim_order;
  template <class F>
  void fields(F& f) const {
    f("dtype", dtype)("shape", shape)("dim_order", dim_order);
  }
};

struct InspectDataBlob {
  std::string key;
  uint32_t segment_index = 0;
  uint64_t size = 0;
  uint64_t file_offset = 0;
  uint64_t alignment = 0;
  std::optional<InspectTensorLayout> tensor_layout;
  std::optional<std::string> sha256;  // with --sha256
  template <class F>
  void fields(F& f) const {
    f("key", key)("segment_index", segment_index)("size", size)("file_offset", file_offset)("alignment", alignment)(
        "tensor_layout", tensor_layout);
    if (sha256) f("sha256", *sha256);
  }
};

struct InspectDataFile {
  InspectDataHeader header;
  uint32_t version = 0;
  std::vector<InspectSegment> segments;
  std::vector<InspectDataBlob> named_data;
  template <class F>
  void fields(F& f) const {
    f("file_identifier", "FT01")("header", header)("version", version)("segments", segments)("named_data", named_data);
  }
};

// ---- Bundled programs (.bpte) ------------------------------------------------------

struct InspectBundledTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> dim_order;
  uint64_t size = 0;  // bytes
};

// A test input or expected output: a tensor, or a scalar value.
struct InspectBundledValue {
  std::string kind;
  std::optional<InspectBundledTensor> tensor;
  std::variant<int64_t, bool, double> value;  // when not a tensor
  template <class F>
  void fields(F& f) const {
    f("kind", kind);
    if (tensor) {
      f("dtype", tensor->dtype)("shape", tensor->shape)("dim_order", tensor->dim_order)("size", tensor->size);
    } else {
      std::visit([&](const auto& v) { f("value", v); }, value);
    }
  }
};

struct InspectTestCase {
  std::vector<InspectBundledValue> inputs;
  std::vector<InspectBundledValue> expected_outputs;
  template <class F>
  void fields(F& f) const {
    f("inputs", inputs)("expected_outputs", expected_outputs);
  }
};

struct InspectTestSuite {
  std::string method;
  std::vector<InspectTestCase> test_cases;
  template <class F>
  void fields(F& f) const {
    f("method", method)("test_cases", test_cases);
  }
};

// The program inside a bundled program, and where it lies.
struct InspectInnerProgram {
  uint64_t offset = 0;
  uint64_t size = 0;
  InspectProgram program;
  template <class F>
  void fields(F& f) const {
    f("offset", offset)("size", size);
    program.fields(f);
  }
};

struct InspectBundled {
  uint32_t version = 0;
  InspectInnerProgram program;
  std::vector<InspectTestSuite> test_suites;
  template <class F>
  void fields(F& f) const {
    f("file_identifier", "BP08")("version", version)("program", program)("test_suites", test_suites);
  }
};

// ---- AOTInductor packages (.pt2) ---------------------------------------------------

struct InspectZipEntry {
  std::string name;
  uint64_t size = 0;
  uint64_t compressed_size = 0;
  uint16_t compression_method = 0;
  template <class F>
  void fields(F& f) const {
    f("name", name)("size", size)("compressed_size", compressed_size)("compression_method", compression_method);
  }
};

// A file of a model: its size and, when asked and affordable, its digest and kernels.
struct InspectPackageFile {
  std::string name;
  uint64_t size = 0;
  std::optional<std::string> skipped;  // why it was neither hashed nor scanned
  std::optional<std::string> sha256;   // with --sha256
  std::optional<InspectKernels> kernels;
  template <class F>
  void fields(F& f) const {
    f("name", name)("size", size);
    if (skipped) f("skipped", *skipped);
    if (sha256) f("sha256", *sha256);
    if (kernels) kernels->fields(f);
  }
};

// AOTI metadata, in file order, each key once: an object.
struct InspectMetadata {
  std::vector<std::pair<std::string, std::string>> entries;
  template <class F>
  void fields(F& f) const {
    for (const auto& [key, value] : entries) f(key, value);
  }
};

struct InspectPackageModel {
  std::string name;
  std::string directory;
  InspectPackageFile wrapper_library;
  std::optional<InspectPackageFile> weights_blob;  // none: the weights are inside the library
  std::vector<InspectPackageFile> kernel_files;
  InspectMetadata metadata;
  std::optional<std::string> compute_capability;
  std::optional<std::string> device;
  template <class F>
  void fields(F& f) const {
    f("name", name)("directory", directory)("wrapper_library", wrapper_library)("weights_blob", weights_blob)(
        "weights_in_library", !weights_blob.has_value())("kernel_files", kernel_files)("metadata", metadata)(
        "compute_capability", compute_capability)("device", device);
  }
};

struct InspectPackage {
  std::string root;             // "" when entries have no root folder
  std::string archive_format;   // "" if absent
  std::string archive_version;  // "" if absent
  std::vector<InspectZipEntry> entries;
  std::vector<InspectPackageModel> models;
  std::vector<std::string> external_weight_entries;
  template <class F>
  void fields(F& f) const {
    f("root", root)("archive_format", archive_format)("archive_version", archive_version)("entries", entries)(
        "models", models)("external_weight_entries", external_weight_entries);
  }
};

// ---- Signatures and bundle folders -------------------------------------------------

struct InspectSignedFile {
  std::string name;
  std::string sha256;
  template <class F>
  void fields(F& f) const {
    f("name", name)("sha256", sha256);
  }
};

// The signed in-toto statement, as signature_reader.cc parsed and checked it
// (types, root digest); what it claims, not yet verified.
struct InspectStatement {
  SignedStatement statement;
  template <class F>
  void fields(F& f) const {
    std::vector<InspectSignedFile> files;
    for (const SignedResource& resource : statement.resources) files.push_back({resource.name, resource.sha256});
    f("type", kInTotoStatementType)("predicate_type", kModelSigningPredicateType)("subject_name", statement.subject_name)(
        "subject_sha256", statement.subject_sha256)("method", statement.method)("hash_type", statement.hash_type)(
        "allow_symlinks", statement.allow_symlinks)("ignore_paths", statement.ignore_paths)("resources", files);
  }
};

// A signature file as read: who signed and what; not verified (verify --key does).
struct InspectSignature {
  std::optional<std::string> key_fingerprint;
  std::optional<InspectStatement> statement;  // null when the payload is no valid statement
  std::optional<std::string> statement_error;
  std::optional<std::string> file;  // inside a bundle folder: its name
  template <class F>
  void fields(F& f) const {
    f("media_type", kSigstoreBundleMediaType)("key_fingerprint", key_fingerprint)("payload_type", kInTotoPayloadType)(
        "statement", statement)("statement_error", statement_error)("verified", false);
    if (file) f("file", *file);
  }
};

// One GPU setup of a tune file (tune_file.h): how many choices it holds.
struct InspectTuneGpu {
  std::string name;
  std::string sm;
  std::string runtime;
  std::string tuned;
  uint64_t gemm = 0;         // choices of the GEMM shims
  uint64_t convolution = 0;  // choices of the convolution shim
  std::vector<uint64_t> cublaslt;  // the versions the GEMM choices were made with
  std::vector<uint64_t> cudnn;     // the versions the convolution choices were made with
  template <class F>
  void fields(F& f) const {
    f("name", name)("sm", sm)("runtime", runtime)("tuned", tuned)("gemm", gemm)("convolution", convolution)(
        "cublaslt", cublaslt)("cudnn", cudnn);
  }
};

// The bundle's tune file as bundle.json lists it, and what it holds; `error`
// when it does not read (a size or SHA-256 other than bundle.json's, or
// content that is not a tune file): run and the robot API then ignore it.
struct InspectTune {
  std::string path;
  uint64_t size = 0;
  std::string sha256;
  std::vector<InspectTuneGpu> gpus;
  std::optional<std::string> error;
  template <class F>
  void fields(F& f) const {
    f("path", path)("size", size)("sha256", sha256)("gpus", gpus)("error", error);
  }
};

struct InspectPart;

struct InspectBundle {
  Manifest manifest;
  std::vector<InspectPart> parts;
  std::optional<InspectSignature> signature;
  std::optional<InspectTune> tune;  // null when the bundle has no tune file
  template <class F>
  void fields(F& f) const {
    f("manifest", manifest)("parts", parts)("signature", signature)("tune", tune);
  }
};

// One path: a file of any kind, or a bundle folder.
struct InspectedFile {
  std::string path;
  std::string kind;                   // file_kind_name
  std::optional<uint64_t> size;       // files
  std::optional<std::string> sha256;  // files, with --sha256
  std::variant<InspectProgram, InspectDataFile, InspectBundled, InspectPackage, InspectBundle, InspectSignature> body;
  template <class F>
  void fields(F& f) const {
    f("path", path)("kind", kind);
    if (size) f("size", *size);
    if (sha256) f("sha256", *sha256);
    std::visit([&](const auto& b) { b.fields(f); }, body);
  }
};

// A file a bundle's manifest lists, checked against what the manifest says.
struct InspectPartFile {
  std::string role;
  std::string path;
  std::optional<std::string> target;
  uint64_t manifest_size = 0;
  std::string manifest_sha256;
  bool size_matches = false;
  std::optional<bool> sha256_matches;  // with --sha256
  InspectedFile file;
  template <class F>
  void fields(F& f) const {
    f("role", role)("path", path);
    if (target) f("target", *target);
    f("manifest_size", manifest_size)("manifest_sha256", manifest_sha256)("size_matches", size_matches);
    if (sha256_matches) f("sha256_matches", *sha256_matches);
    f("file", file);
  }
};

struct InspectPart {
  std::string name;
  std::vector<InspectPartFile> files;
  template <class F>
  void fields(F& f) const {
    f("name", name)("files", files);
  }
};

}  // namespace ptb

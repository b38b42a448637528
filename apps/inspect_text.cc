// `ptbundle inspect` for people: the same model --json prints, laid out as
// headed sections and aligned tables. Every fact shown here is in the JSON;
// this file only arranges it.
#include "inspect_text.h"

#include <cstdio>

#include "ptbundle/kernels/aoti_input_bounds.h"
#include "text_table.h"

namespace ptb::app {
namespace {

using Align = TextTable::Align;

class Lines {
 public:
  void add(const std::string& indent, const std::string& text) { out_ += indent + text + "\n"; }
  void blank() { out_ += "\n"; }
  void table(const std::string& indent, const TextTable& table) {
    for (const auto& line : table.lines(indent)) out_ += line + "\n";
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Text from files is shown through printable(); absent values as "-".
std::string str(const std::string& value) { return printable(value); }
std::string str(const std::optional<std::string>& value) { return value ? printable(*value) : "-"; }

std::string size(uint64_t bytes) { return human_size(bytes); }
std::string size(const std::optional<uint64_t>& bytes) { return bytes ? human_size(*bytes) : "-"; }

std::string size_and_bytes(uint64_t bytes) {
  return human_size(bytes) + (bytes >= 1024 ? " (" + std::to_string(bytes) + " bytes)" : "");
}

template <class T>
std::string list(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

// A table with an optional sha256 column.
TextTable digest_table(std::vector<TextTable::Column> columns, bool sha256) {
  if (sha256) columns.push_back({"sha256"});
  return TextTable(std::move(columns));
}

// "[2..256, 64]": a dim the library bounds shows its bounds, not the .pte's upper bound alone.
std::string shape_text(const InspectTensorSpec& tensor) {
  std::string out = "[";
  for (size_t d = 0; d < tensor.shape.size(); ++d) {
    out += d ? ", " : "";
    if (d < tensor.dim_bounds.size() && tensor.dim_bounds[d]) {
      const InspectDimRange& range = *tensor.dim_bounds[d];
      out += bounds_text({0, static_cast<uint32_t>(d), range.min, range.max});
    } else {
      out += std::to_string(tensor.shape[d]);
    }
  }
  return out + "]";
}

void values(Lines& out, const std::string& indent, const char* title, const std::vector<InspectValue>& specs) {
  if (specs.empty()) {
    out.add(indent, std::string(title) + ": none");
    return;
  }
  out.add(indent, std::string(title) + ":");
  TextTable table({{"#", Align::Right}, {"kind"}, {"dtype"}, {"shape"}, {"dim order"}, {"dynamism"}});
  for (size_t i = 0; i < specs.size(); ++i) {
    const InspectValue& v = specs[i];
    const auto& t = v.tensor;
    table.add({std::to_string(i), str(v.kind), t ? str(t->dtype) : "-", t ? shape_text(*t) : "-",
               t ? list(t->dim_order) : "-", t ? str(t->dynamism) : "-"});
  }
  out.table(indent + "  ", table);
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + str(item);
  return text;
}

// What runs the library: LibTorch, or the built-in runtime's compute
// functions by family (cuBLAS and cuDNN among them: what a Triton-only
// compile avoids), and what that runtime lacks.
// "input 0 dim 0: 2..256": what a run must keep each input within.
void dynamic_dims(Lines& out, const std::string& indent, const std::vector<InspectDynamicDim>& dims) {
  if (dims.empty()) return;
  std::string text;
  for (const InspectDynamicDim& d : dims) {
    text += (text.empty() ? "" : ", ") + ("input " + std::to_string(d.input) + " dim " + std::to_string(d.dim) + ": " +
                                          bounds_text({d.input, d.dim, d.min, d.max}));
  }
  out.add(indent, "Dynamic dims (the library's checks): " + text);
}

void runtime_needs(Lines& out, const std::string& indent, const std::optional<InspectRuntimeNeeds>& needs) {
  if (!needs) return;
  dynamic_dims(out, indent, needs->dynamic_dims);
  if (!needs->libtorch.empty()) {
    out.add(indent, "Runtime: LibTorch (linked to " + joined(needs->libtorch) +
                        "; compiled with aot_inductor.link_libtorch=True)");
    return;
  }
  if (needs->calls.empty()) {
    out.add(indent, "Runtime: built-in, tensor bookkeeping only (every GEMM and convolution in its own kernels)");
  } else {
    out.add(indent, "Runtime: built-in; calls:");
    for (const InspectShimCalls& calls : needs->calls) {
      out.add(indent + "  ", str(calls.family) + (calls.library.empty() ? "" : " (" + str(calls.library) + ")") +
                                  ": " + joined(calls.functions));
    }
  }
  if (!needs->lacks.empty()) out.add(indent, "Lacks (the built-in runtime has no): " + joined(needs->lacks));
}

void kernels(Lines& out, const std::string& indent, const std::optional<InspectKernels>& scanned) {
  if (!scanned) return;
  if (scanned->error) {
    out.add(indent, "Kernels: cannot read: " + str(*scanned->error));
    runtime_needs(out, indent, scanned->runtime);
    return;
  }
  if (scanned->images.empty()) {
    out.add(indent, "Kernels: none found");
    runtime_needs(out, indent, scanned->runtime);
    return;
  }
  out.add(indent, "Kernels:");
  TextTable table({{"target"}, {"kind"}, {"ptx"}, {"container"}, {"size", Align::Right}, {"compression"}, {"location"}});
  for (const InspectKernel& image : scanned->images) {
    table.add({str(image.target), str(image.kind), str(image.ptx_version), str(image.container), size(image.size),
               str(image.compression), str(image.location)});
  }
  out.table(indent + "  ", table);
  runtime_needs(out, indent, scanned->runtime);
}

// Each kernel file the library loads by name, with the GPU targets it holds.
void kernel_files(Lines& out, const std::string& indent, const InspectKernelFiles& files) {
  if (files.error) out.add(indent, "Kernel files: refused: " + str(*files.error));
  if (files.files.empty()) return;
  out.add(indent, "Kernel files (" + std::to_string(files.files.size()) + ", loaded by name at run time):");
  TextTable table({{"file"}, {"size", Align::Right}, {"targets"}});
  for (const InspectKernelFile& file : files.files) {
    std::string targets;
    if (file.kernels.error) {
      targets = "cannot read: " + str(*file.kernels.error);
    } else {
      std::vector<std::string> names;
      for (const InspectKernel& image : file.kernels.images) names.push_back(str(image.target) + " " + str(image.kind));
      targets = names.empty() ? "none found" : joined(names);
    }
    table.add({str(file.name), size(file.size), targets});
  }
  out.table(indent + "  ", table);
}

std::string device_name(int32_t device_type) {
  return device_type == 1 ? "cuda" : device_type == 0 ? "cpu" : std::to_string(device_type);
}

void cuda_payload(Lines& out, const std::string& indent, const InspectCudaPayload& cuda) {
  out.add(indent, "CUDA payload: " + str(cuda.form));
  std::string inner = indent + "  ";
  if (!cuda.multi_variant) {
    out.add(inner, "Library: " + str(cuda.library.key) +
                       (cuda.library.in_program ? ", " + size(cuda.library.size) + " in the program" : ", not in the program"));
    kernels(out, inner + "  ", cuda.kernels);
    kernel_files(out, inner + "  ", cuda.kernel_files);
    out.add(inner, "Weights: " + str(cuda.weights_blob.key) +
                       (cuda.weights_blob.in_program ? ", " + size(cuda.weights_blob.size) + " in the program" : ", in a data file"));
    return;
  }
  out.add(inner, "Variants:");
  for (const InspectCudaVariant& variant : cuda.variants) {
    uint32_t ptx = variant.ptx_compute;
    std::string line = "sm_" + std::to_string(variant.target_sm) + (ptx ? ", PTX compute_" + std::to_string(ptx) : ", no PTX") +
                       (variant.fallback_only ? ", fallback only" : "") + ": " + str(variant.library.key) +
                       (variant.library.in_program ? " (" + size(variant.library.size) + ")" : " (not in the program)");
    out.add(inner + "  ", line);
    kernels(out, inner + "    ", variant.kernels);
    kernel_files(out, inner + "    ", variant.kernel_files);
  }
  out.add(inner, "Weights:");
  TextTable table({{"fqn"}, {"dtype"}, {"sizes"}, {"strides"}, {"offset", Align::Right}, {"storage", Align::Right},
                   {"device"}, {"storage key"}});
  for (const InspectCudaWeight& weight : cuda.weights) {
    table.add({str(weight.fqn), str(weight.dtype), list(weight.sizes), list(weight.strides),
               std::to_string(weight.storage_offset), size(weight.storage_nbytes), device_name(weight.device_type),
               str(weight.storage_key)});
  }
  out.table(inner + "  ", table);
}

void delegate(Lines& out, const std::string& indent, const InspectDelegate& d) {
  out.add(indent, "Delegate " + std::to_string(d.index) + ": " + str(d.id) + ", " + str(d.location) + " " +
                      std::to_string(d.data_index) + ", " + size(d.payload_size) +
                      (d.payload_sha256 ? ", sha256 " + str(*d.payload_sha256) : ""));
  std::string inner = indent + "  ";
  if (d.compile_specs.empty()) {
    out.add(inner, "Compile specs: none");
  } else {
    out.add(inner, "Compile specs:");
    TextTable table({{"key"}, {"value"}});
    for (const InspectCompileSpec& spec : d.compile_specs) {
      table.add({str(spec.key), spec.hex ? "0x" + str(spec.value) : str(spec.value)});
    }
    out.table(inner + "  ", table);
  }
  if (d.cuda) cuda_payload(out, inner, *d.cuda);
  if (d.cuda_error) out.add(inner, "CUDA payload: cannot decode: " + str(*d.cuda_error));
}

void method(Lines& out, const std::string& indent, const InspectMethod& method) {
  out.add(indent, "Method " + str(method.name));
  std::string inner = indent + "  ";
  out.add(inner, "Values: " + std::to_string(method.num_values) + ", instructions: " + std::to_string(method.num_instructions) +
                     ", planned buffers: " + list(method.non_const_buffer_sizes));
  values(out, inner, "Inputs", method.inputs);
  values(out, inner, "Outputs", method.outputs);
  if (method.operators.empty()) {
    out.add(inner, "Operators: none");
  } else {
    out.add(inner, "Operators:");
    for (const std::string& op : method.operators) out.add(inner + "  ", str(op));
  }
  for (const InspectDelegate& d : method.delegates) delegate(out, inner, d);
}

void program_segments(Lines& out, const std::string& indent, const InspectProgram& p, bool sha256) {
  if (p.segments.empty()) {
    out.add(indent, "Segments: none");
  } else {
    out.add(indent, "Segments:");
    TextTable table = digest_table({{"#", Align::Right}, {"file offset", Align::Right}, {"size", Align::Right},
                                    {"align", Align::Right}, {"used by"}}, sha256);
    for (const InspectSegment& s : p.segments) {
      std::string users;
      for (const std::string& user : s.used_by.value_or(std::vector<std::string>{})) users += (users.empty() ? "" : ", ") + str(user);
      std::vector<std::string> row = {std::to_string(s.index), std::to_string(s.file_offset), size(s.size),
                                      std::to_string(s.alignment), users.empty() ? "-" : users};
      if (sha256) row.push_back(str(s.sha256));
      table.add(row);
    }
    out.table(indent + "  ", table);
  }
  if (p.named_data.empty()) {
    out.add(indent, "Named data: none");
    return;
  }
  out.add(indent, "Named data:");
  TextTable table = digest_table({{"key"}, {"segment", Align::Right}, {"size", Align::Right}, {"align", Align::Right}}, sha256);
  for (const InspectProgramBlob& n : p.named_data) {
    std::vector<std::string> row = {str(n.key), std::to_string(n.segment_index), size(n.size), std::to_string(n.alignment)};
    if (sha256) row.push_back(str(n.sha256));
    table.add(row);
  }
  out.table(indent + "  ", table);
}

void program(Lines& out, const std::string& indent, const InspectProgram& p, bool sha256) {
  if (!p.extended_header) {
    out.add(indent, "Extended header: none");
  } else {
    const InspectExtendedHeader& header = *p.extended_header;
    // The short (24-byte) header does not record the segment data size.
    bool has_data_size = header.length >= 32;
    out.add(indent, "Extended header: eh00, length " + std::to_string(header.length) + ", program " +
                        size_and_bytes(header.program_size) + ", segments at " + std::to_string(header.segment_base_offset) +
                        (has_data_size ? " (" + size(header.segment_data_size) + ")" : ""));
  }
  out.add(indent, "Program version: " + std::to_string(p.program_version));
  const InspectConstants& constants = p.constants;
  std::string storage = str(constants.storage);
  out.add(indent, "Constants: " + std::to_string(constants.count) + " tensors" +
                      (storage == "segment"           ? " in segment " + std::to_string(constants.segment_index.value_or(0))
                       : storage == "constant_buffer" ? " in constant_buffer (inside the flatbuffer)"
                                                      : ""));
  for (const InspectMethod& m : p.methods) {
    out.blank();
    method(out, indent, m);
  }
  out.blank();
  program_segments(out, indent, p, sha256);
}

void data_file(Lines& out, const std::string& indent, const InspectDataFile& d, bool sha256) {
  const InspectDataHeader& header = d.header;
  out.add(indent, "Header: FH01, length " + std::to_string(header.length) + ", flatbuffer " + size(header.flatbuffer_size) +
                      " after " + std::to_string(header.flatbuffer_offset) + " header bytes, segments at " +
                      std::to_string(header.segment_base_offset) + " (" + size(header.segment_data_size) + ")");
  out.add(indent, "Version: " + std::to_string(d.version) + ", " + std::to_string(d.segments.size()) + " segments");
  if (d.named_data.empty()) {
    out.add(indent, "Named data: none");
    return;
  }
  out.add(indent, "Named data:");
  TextTable table = digest_table({{"key"},
                                  {"segment", Align::Right},
                                  {"file offset", Align::Right},
                                  {"size", Align::Right},
                                  {"align", Align::Right},
                                  {"layout"}},
                                 sha256);
  for (const InspectDataBlob& n : d.named_data) {
    const auto& layout = n.tensor_layout;
    std::string layout_text = layout ? str(layout->dtype) + " " + list(layout->shape) : "-";
    std::vector<std::string> row = {str(n.key),   std::to_string(n.segment_index), std::to_string(n.file_offset),
                                    size(n.size), std::to_string(n.alignment),     layout_text};
    if (sha256) row.push_back(str(n.sha256));
    table.add(row);
  }
  out.table(indent + "  ", table);
}

std::string value_text(const InspectBundledValue& value) {
  if (!value.tensor) return str(value.kind);
  return str(value.tensor->dtype) + " " + list(value.tensor->shape);
}

void bundled(Lines& out, const std::string& indent, const InspectBundled& b, bool sha256) {
  out.add(indent, "Bundled program version: " + std::to_string(b.version));
  const InspectInnerProgram& p = b.program;
  out.add(indent, "Program: " + size_and_bytes(p.size) + " at offset " + std::to_string(p.offset));
  program(out, indent + "  ", p.program, sha256);
  out.blank();
  out.add(indent, "Test suites:");
  for (const InspectTestSuite& suite : b.test_suites) {
    out.add(indent + "  ", str(suite.method) + ": " + std::to_string(suite.test_cases.size()) + " test cases");
    TextTable table({{"#", Align::Right}, {"inputs"}, {"expected outputs"}});
    for (size_t i = 0; i < suite.test_cases.size(); ++i) {
      const InspectTestCase& test = suite.test_cases[i];
      auto join = [](const std::vector<InspectBundledValue>& items) {
        std::string text;
        for (const InspectBundledValue& v : items) text += (text.empty() ? "" : ", ") + value_text(v);
        return text.empty() ? std::string("-") : text;
      };
      table.add({std::to_string(i), join(test.inputs), join(test.expected_outputs)});
    }
    out.table(indent + "    ", table);
  }
}

void entry_line(Lines& out, const std::string& indent, const std::string& title, const InspectPackageFile& entry) {
  out.add(indent, title + ": " + str(entry.name) + ", " + size(entry.size) + (entry.sha256 ? ", sha256 " + str(*entry.sha256) : "") +
                      (entry.skipped ? " (" + str(*entry.skipped) + ")" : ""));
  kernels(out, indent + "  ", entry.kernels);
}

std::string or_text(const std::string& value, const char* none) { return value.empty() ? std::string(none) : str(value); }

void package(Lines& out, const std::string& indent, const InspectPackage& p) {
  out.add(indent, "Root: " + or_text(p.root, "(none)") + ", archive format " + or_text(p.archive_format, "-") + ", version " +
                      or_text(p.archive_version, "-"));
  for (const InspectPackageModel& model : p.models) {
    out.blank();
    out.add(indent, "Model " + str(model.name) + " (" + str(model.directory) + ")");
    std::string inner = indent + "  ";
    out.add(inner, "Compute capability: " + str(model.compute_capability) + ", device: " + str(model.device));
    entry_line(out, inner, "Library", model.wrapper_library);
    if (!model.weights_blob) {
      out.add(inner, "Weights: inside the library");
    } else {
      entry_line(out, inner, "Weights blob", *model.weights_blob);
    }
    for (const InspectPackageFile& kernel : model.kernel_files) entry_line(out, inner, "Kernel file", kernel);
    if (!model.metadata.entries.empty()) {
      out.add(inner, "Metadata:");
      TextTable table({{"key"}, {"value"}});
      for (const auto& [key, value] : model.metadata.entries) table.add({printable(key), str(value)});
      out.table(inner + "  ", table);
    }
  }
  out.blank();
  out.add(indent, "Entries:");
  TextTable table({{"name"}, {"size", Align::Right}, {"compressed", Align::Right}, {"method", Align::Right}});
  for (const InspectZipEntry& e : p.entries) {
    table.add({str(e.name), size(e.size), size(e.compressed_size), std::to_string(e.compression_method)});
  }
  out.table(indent + "  ", table);
}

const char* kind_title(const std::string& kind) {
  if (kind == "pte") return "ExecuTorch program (.pte)";
  if (kind == "ptd") return "ExecuTorch data (.ptd)";
  if (kind == "bpte") return "ExecuTorch bundled program (.bpte)";
  if (kind == "pt2") return "AOTInductor package (.pt2)";
  if (kind == "signature") return "model signature (OpenSSF model signing, Sigstore bundle)";
  return "ptbundle bundle folder";
}

// Who signed and what: the statement's subject and files, as read (not
// verified).
void signature(Lines& out, const std::string& indent, const InspectSignature& s) {
  out.add(indent, "Signed by the key with fingerprint " + (s.key_fingerprint ? str(*s.key_fingerprint) : std::string("(none recorded)")) +
                      " (not verified here: ptbundle verify --key)");
  if (s.statement_error) out.add(indent, "STATEMENT NOT VALID: " + str(*s.statement_error));
  if (!s.statement) return;
  const SignedStatement& statement = s.statement->statement;
  out.add(indent, std::string("Statement: ") + kInTotoStatementType + ", predicate " + kModelSigningPredicateType);
  out.add(indent + "  ", "subject " + str(statement.subject_name) + " sha256:" + str(statement.subject_sha256));
  out.add(indent + "  ", "serialization " + str(statement.method) + ", " + str(statement.hash_type) +
                             (statement.allow_symlinks ? ", symlinks allowed" : ""));
  TextTable table({{"file"}, {"sha256"}});
  for (const SignedResource& resource : statement.resources) table.add({str(resource.name), str(resource.sha256)});
  out.table(indent + "  ", table);
}

void file(Lines& out, const std::string& indent, const InspectedFile& f, bool sha256);

// A bundle folder in three pieces, so that its parts can be printed as they
// are inspected (render_bundle_text_*).
void bundle_head(Lines& out, const std::string& indent, const InspectBundle& b) {
  const Manifest& manifest = b.manifest;
  out.add(indent, "Manifest: format " + std::to_string(manifest.format_version) + ", written by ptbundle " +
                      str(manifest.ptbundle_version) + " at " + str(manifest.created));
}

void bundle_part(Lines& out, const std::string& indent, const InspectPart& part, bool sha256) {
  out.blank();
  out.add(indent, "Part " + str(part.name));
  for (const InspectPartFile& f : part.files) {
    std::string check = f.size_matches ? "size matches the manifest" : "SIZE DIFFERS FROM THE MANIFEST";
    if (f.sha256_matches) check += *f.sha256_matches ? ", sha256 matches" : ", SHA256 DIFFERS FROM THE MANIFEST";
    const std::string target = f.target ? " (" + str(*f.target) + ")" : "";
    out.add(indent + "  ", str(f.role) + target + " " + str(f.path) + ": " + check);
    file(out, indent + "    ", f.file, sha256);
  }
}

void bundle_tail(Lines& out, const std::string& indent, const InspectBundle& b) {
  out.blank();
  if (!b.tune) {
    out.add(indent, "Tune file: none (ptbundle tune records the runtime's choices on a GPU)");
  } else {
    const InspectTune& t = *b.tune;
    out.add(indent, "Tune file: " + str(t.path) + ", " + size_and_bytes(t.size) + ", sha256:" + str(t.sha256));
    if (t.error) out.add(indent + "  ", "NOT READ (run and the robot API ignore it): " + str(*t.error));
    for (const InspectTuneGpu& gpu : t.gpus) {
      auto versions = [](const char* library, const std::vector<uint64_t>& list) {
        std::string text;
        for (uint64_t v : list) text += std::string(text.empty() ? ", " : " and ") + library + " " + std::to_string(v);
        return text;
      };
      out.add(indent + "  ", str(gpu.name) + " (" + str(gpu.sm) + "): " + std::to_string(gpu.gemm) + " GEMM and " +
                                 std::to_string(gpu.convolution) + " convolution choice(s)" +
                                 versions("cuBLASLt", gpu.cublaslt) + versions("cuDNN", gpu.cudnn) + ", tuned " +
                                 str(gpu.tuned) + " with " + str(gpu.runtime));
    }
  }
  if (!b.signature) {
    out.add(indent, "Signature: none (ptbundle sign makes one)");
  } else {
    out.add(indent, "Signature: " + str(b.signature->file));
    signature(out, indent + "  ", *b.signature);
  }
}

void bundle(Lines& out, const std::string& indent, const InspectBundle& b, bool sha256) {
  bundle_head(out, indent, b);
  for (const InspectPart& part : b.parts) bundle_part(out, indent, part, sha256);
  bundle_tail(out, indent, b);
}

void file_head(Lines& out, const std::string& indent, const InspectedFile& f) {
  out.add(indent, "File: " + str(f.path));
  std::string format = std::string("Format: ") + kind_title(f.kind);
  if (f.size) format += ", " + size_and_bytes(*f.size);
  out.add(indent, format);
  if (f.sha256) out.add(indent, "SHA-256: " + str(*f.sha256));
}

void file(Lines& out, const std::string& indent, const InspectedFile& f, bool sha256) {
  file_head(out, indent, f);
  struct Body {
    Lines& out;
    const std::string& indent;
    bool sha256;
    void operator()(const InspectProgram& p) const { program(out, indent, p, sha256); }
    void operator()(const InspectDataFile& d) const { data_file(out, indent, d, sha256); }
    void operator()(const InspectBundled& b) const { bundled(out, indent, b, sha256); }
    void operator()(const InspectPackage& p) const { package(out, indent, p); }
    void operator()(const InspectBundle& b) const { bundle(out, indent, b, sha256); }
    void operator()(const InspectSignature& s) const { signature(out, indent, s); }
  };
  std::visit(Body{out, indent, sha256}, f.body);
}

}  // namespace

std::string render_inspect_text(const InspectedFile& file_model, bool sha256) {
  Lines out;
  file(out, "", file_model, sha256);
  return out.take();
}

std::string render_bundle_text_head(const InspectedFile& bundle) {
  Lines out;
  file_head(out, "", bundle);
  bundle_head(out, "", std::get<InspectBundle>(bundle.body));
  return out.take();
}

std::string render_bundle_text_part(const InspectPart& part, bool sha256) {
  Lines out;
  bundle_part(out, "", part, sha256);
  return out.take();
}

std::string render_bundle_text_tail(const InspectedFile& bundle) {
  Lines out;
  bundle_tail(out, "", std::get<InspectBundle>(bundle.body));
  return out.take();
}

}  // namespace ptb::app

// An AOTInductor package as a part: its library and weights blob become the
// named data of a program with one CudaBackend delegate in ExecuTorch's
// single-blob form (payload "<so_key>\n<weights_key>", keys
// "<sha256>_so_blob" in the .pte and "<sha256>_weights_blob" in NAME.ptd),
// with the method's signature taken from the example .npy files. Kernel files
// beside the library (PyTorch's default embed_kernel_binary=False) become
// named data of the .pte too, keyed "<so_key>/<file name>" (kernel_files.h).
// Weights compiled into the library (package_constants_in_so=True, the
// default) stay there: the library copies them to the GPU when its container
// is created, its hash covers them, and the blob is empty.
#include <algorithm>
#include <filesystem>
#include <utility>

#include "aoti_program.h"
#include "prepared_part.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/kernels/aoti_input_bounds.h"
#include "ptbundle/kernels/aoti_shims.h"
#include "ptbundle/kernels/elf_imports.h"

namespace ptb::detail {
namespace {

namespace fs = std::filesystem;

// "90" -> "9.0", "120" -> "12.0", "8.6" stays.
std::optional<std::string> compute_capability(const Pt2Model& model) {
  const auto* value = model.metadata_value("AOTI_COMPUTE_CAPABILITY");
  if (!value || value->empty()) return std::nullopt;
  if (value->find('.') != std::string::npos) return *value;
  if (value->size() < 2 || value->find_first_not_of("0123456789") != std::string::npos) return *value;
  return value->substr(0, value->size() - 1) + "." + value->substr(value->size() - 1);
}

// Extracts one package entry into a scratch file in the bundle folder and
// maps it: the bytes are then hashed and copied into outputs by the kernel.
Result<const MappedFile*> extract(PreparedPart& part, const Pt2Package& package, const std::string& entry_name,
                                  const std::string& scratch_dir, const std::string& label) {
  const auto* entry = package.find_entry(entry_name);
  if (!entry) return invalid(package.path() + ": entry " + entry_name + " is listed but missing");
  PTB_TRY(auto out, AtomicOutput::create((fs::path(scratch_dir) / ("ptbundle-" + part.name + "-" + label)).string()));
  auto& scratch = *part.scratch.emplace_back(std::make_unique<AtomicOutput>(std::move(out)));
  PTB_CHECK(package.extract_entry(entry_name, scratch, entry->size));
  PTB_TRY(auto mapped, MappedFile::open(scratch.temp_path()));
  if (mapped.size() != entry->size)
    return invalid(package.path() + ": entry " + entry_name + " extracted to " + std::to_string(mapped.size()) +
                   " bytes; the zip directory says " + std::to_string(entry->size));
  return part.files.emplace_back(std::make_unique<MappedFile>(std::move(mapped))).get();
}

// The kernel files beside the library (embed_kernel_binary=False, PyTorch's
// default), each extracted and mapped like the library, and every file the
// library loads among them.
struct ExtractedKernel {
  std::string name;   // the file name the library loads
  std::string entry;  // the package entry
  const MappedFile* file = nullptr;
};

Result<std::vector<ExtractedKernel>> extract_kernel_files(PreparedPart& part, const Pt2Package& package,
                                                          const Pt2Model& model, const MappedFile& library,
                                                          const std::string& scratch_dir) {
  std::vector<ExtractedKernel> out;
  std::vector<std::string> names;
  for (const std::string& entry : model.kernel_binaries) {
    // check_cuda_package_model checked the name.
    std::string name = entry.substr(model.directory.size());
    PTB_TRY(const MappedFile* file, extract(part, package, entry, scratch_dir, "kernel-" + std::to_string(out.size())));
    names.push_back(name);
    out.push_back({std::move(name), entry, file});
  }
  PTB_CHECK(check_kernel_files_present(library.bytes(), names, package.path() + ": " + model.wrapper_library,
                                       "the package"));
  std::sort(out.begin(), out.end(), [](const ExtractedKernel& a, const ExtractedKernel& b) { return a.name < b.name; });
  return out;
}

// The constants section of a library compiled with package_constants_in_so
// (elf_imports.h): its size and SHA-256, for bundle.json.
Result<std::optional<CudaInfo::LibraryConstants>> library_constants(const MappedFile& library, const std::string& program) {
  PTB_TRY(const std::optional<ElfFileRange> range, find_aoti_constants(library.bytes(), program));
  if (!range) return std::optional<CudaInfo::LibraryConstants>();
  PTB_TRY(std::string hash, sha256_file_range(library, range->offset, range->size));
  return std::optional<CudaInfo::LibraryConstants>(CudaInfo::LibraryConstants{range->size, std::move(hash)});
}

// "LibTorch" for a library linked to it (link_libtorch=True, PyTorch's
// default), "built-in" for one that imports only the shims.
Result<std::string> runtime_needed(const MappedFile& library, const std::string& context) {
  PTB_TRY(ElfDynamicSymbols symbols, read_dynamic_symbols(library.bytes(), context));
  return std::string(libtorch_dependencies(symbols).empty() ? "built-in" : "LibTorch");
}

Result<TensorSignature> signature_of(const NpyHeader& npy, const std::string& path) {
  TensorSignature signature;
  signature.scalar_type = npy.scalar_type;
  for (uint64_t size : npy.shape) {
    if (size > 0x7fffffffu) return invalid(path + ": dimension " + std::to_string(size) + " exceeds ExecuTorch's 32-bit sizes");
    signature.sizes.push_back(static_cast<int32_t>(size));
  }
  signature.nbytes = npy.data_size;
  return signature;
}

// An example with inputs only (a sampler): the outputs' dtypes and shapes
// come from the package's wrapper source, which allocates each output with
// constant sizes; where it does not say, the user has to give output files.
Status outputs_from_wrapper(const PartRequest& request, const Pt2Package& package, const Pt2Model& model,
                            SingleDelegateProgram& spec, PreparedPart& part) {
  const std::string give = "; give the outputs after ':' (--example " + request.name +
                           "=IN.npy[,...]:OUT.npy[,...]) so that the example fixes them (for a program that draws its own noise, only "
                           "their dtypes and shapes)";
  PTB_TRY(auto source, pt2_wrapper_source(package, model));
  if (!source) return invalid(request.program + ": the example gives inputs only, and the package holds no *.wrapper.cpp "
                              "that says the outputs' dtypes and shapes" + give);
  auto counts = pt2_wrapper_counts(*source);
  if (!counts || counts->outputs == 0)
    return invalid(request.program + ": the example gives inputs only, and the wrapper source declares no output count "
                   "(AOTInductorModelBase(inputs, outputs, constants, ...))" + give);
  if (counts->inputs != spec.inputs.size())
    return invalid("--example " + request.name + ": " + std::to_string(spec.inputs.size()) + " input file(s); " +
                   request.program + "'s wrapper declares " + std::to_string(counts->inputs) + " input(s)");
  auto outputs = pt2_wrapper_outputs(*source, counts->outputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) {
      return invalid(request.program + ": the example gives inputs only, and the wrapper source does not allocate output " +
                     std::to_string(i) + " with constant sizes (output_handles[" + std::to_string(i) +
                     "] is a view, an input or of symbolic size)" + give);
    }
    TensorSignature signature;
    signature.scalar_type = outputs[i]->scalar_type;
    uint64_t count = 1;
    for (int64_t size : outputs[i]->sizes) {
      if (size < 0 || size > 0x7fffffff)
        return invalid(request.program + ": output " + std::to_string(i) + " has size " + std::to_string(size) +
                       " in its wrapper source; expected 0..2147483647");
      signature.sizes.push_back(static_cast<int32_t>(size));
      if (__builtin_mul_overflow(count, static_cast<uint64_t>(size), &count) || count > (1ull << 40))
        return invalid(request.program + ": output " + std::to_string(i) + " is larger than 2^40 elements");
    }
    auto element = scalar_type_size(outputs[i]->scalar_type);
    if (!element) return invalid(request.program + ": output " + std::to_string(i) + " has a dtype ptbundle does not know");
    signature.nbytes = count * *element;
    spec.outputs.push_back(std::move(signature));
  }
  mark_outputs_unchecked(part, spec.outputs.size());
  part.notes.push_back(request.program + ": the example gives inputs only; the test case checks each output's dtype, "
                       "shape and finiteness, not its values (outputs read from the wrapper source)");
  return {};
}

// The example's inputs against the checks the wrapper source generates for
// each input (dtype and every static dim): the library would refuse them at
// the first run, so export refuses them now, naming both.
Status check_example_inputs(const PartRequest& request, const Pt2Package& package, const Pt2Model& model,
                            const PreparedPart& part) {
  PTB_TRY(auto source, pt2_wrapper_source(package, model));
  if (!source) return {};
  const auto checks = pt2_wrapper_inputs(*source, part.testcase_inputs);
  for (size_t i = 0; i < checks.size() && i < part.npys.size(); ++i) {
    const Pt2InputCheck& check = checks[i];
    const NpyHeader& npy = part.npys[i]->header();
    const bool dtype_differs = check.scalar_type && *check.scalar_type != npy.scalar_type;
    bool shape_differs = check.rank != 0 && npy.shape.size() != check.rank;
    for (const auto& [dim, size] : check.sizes) {
      if (dim >= npy.shape.size() || npy.shape[dim] != static_cast<uint64_t>(size)) shape_differs = true;
    }
    if (!dtype_differs && !shape_differs) continue;
    std::string wanted = "[";
    for (uint32_t d = 0; d < check.rank; ++d) {
      auto known = check.sizes.find(d);
      wanted += (d ? ", " : "") + (known != check.sizes.end() ? std::to_string(known->second) : std::string("?"));
    }
    wanted += "]";
    return invalid("--example " + request.name + ": input " + std::to_string(i) + " (" + part.npys[i]->path() + ") is " +
                   scalar_type_name(npy.scalar_type) + " " + shape_text(npy.shape) + "; " + request.program +
                   "'s wrapper source checks " + (check.scalar_type ? scalar_type_name(*check.scalar_type) : "any dtype") +
                   " " + (check.rank ? wanted : std::string("of any shape")) + " there (? is a dynamic dim); expected "
                   "the inputs the program was compiled for");
  }
  return {};
}

// The random shims among the library's imports ("aoti_torch_cuda_randint_low_out"
// seeds every Inductor randn_like): such a program never reproduces a draw.
Result<std::vector<std::string>> noise_shims(const MappedFile& library, const std::string& context) {
  PTB_TRY(auto symbols, read_dynamic_symbols(library.bytes(), context));
  std::vector<std::string> noise;
  for (const auto& name : symbols.undefined)
    if (name.starts_with("aoti_torch_") && guess_shim_family(name) == ShimFamily::Random) noise.push_back(name);
  return noise;
}

// A program that draws its own noise, with example outputs: their headers
// fix the outputs' dtypes and shapes (where the wrapper source may not say:
// an output computed in place in a buffer an ATen fallback returned), and the
// test case checks those, not values no run reproduces.
Status outputs_from_sample(const std::vector<std::string>& paths, const std::vector<std::string>& noise,
                           SingleDelegateProgram& spec, PreparedPart& part) {
  for (const auto& path : paths) {
    PTB_TRY(auto npy, NpyFile::open(path));
    PTB_TRY(auto signature, signature_of(npy.header(), path));
    spec.outputs.push_back(std::move(signature));
    part.source.files.push_back(fs::path(path).filename().string());
  }
  mark_outputs_unchecked(part, spec.outputs.size(), noise);
  part.notes.push_back(part.name + ": the program draws its own noise (" + join(noise, ", ") +
                       "); the example's outputs fixed the dtypes and shapes, and the test case checks those and "
                       "finiteness, not values");
  return {};
}

// ExecuTorch plans a DYNAMIC_BOUND tensor's memory at its upper bounds, so a
// bound no GPU could hold is a wrong bound, refused rather than recorded.
constexpr uint64_t kMaxBoundedTensorBytes = 16ull << 30;

std::string sizes_text(const std::vector<int32_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

// The example against what the package's wrapper source states: as many
// inputs and outputs, each output of the dtype and sizes run_impl allocates
// (check_example_inputs checks each input's dtype and fixed sizes). Without this, swapped or missing example files export and
// bundle.json records a signature the library refuses at the first call.
Status check_example_against_wrapper(const PartRequest& request, const Pt2Package& package, const Pt2Model& model,
                                     const SingleDelegateProgram& spec, size_t example_outputs) {
  PTB_TRY(auto source, pt2_wrapper_source(package, model));
  if (!source) return {};  // nothing states the signature: the library checks its inputs at run time
  auto counts = pt2_wrapper_counts(*source);
  if (!counts) return {};
  const std::string example = "--example " + request.name;
  if (counts->inputs != spec.inputs.size()) {
    return invalid(example + ": " + std::to_string(spec.inputs.size()) + " input file(s); " + request.program +
                   "'s wrapper takes " + std::to_string(counts->inputs) + " input(s)");
  }
  if (example_outputs != 0 && counts->outputs != example_outputs) {
    return invalid(example + ": " + std::to_string(example_outputs) + " output file(s); " + request.program +
                   "'s wrapper gives " + std::to_string(counts->outputs) + " output(s)");
  }
  if (example_outputs == 0) return {};
  const auto outputs = pt2_wrapper_outputs(*source, counts->outputs);
  for (size_t i = 0; i < outputs.size() && i < spec.outputs.size(); ++i) {
    if (!outputs[i]) continue;
    const TensorSignature& given = spec.outputs[i];
    std::vector<int32_t> wanted(outputs[i]->sizes.begin(), outputs[i]->sizes.end());
    if (given.scalar_type != outputs[i]->scalar_type || given.sizes != wanted) {
      return invalid(example + ": output " + std::to_string(i) + " (" +
                     fs::path(request.example->outputs[i]).filename().string() + ") is " +
                     scalar_type_name(given.scalar_type) + " " + sizes_text(given.sizes) + "; " + request.program +
                     " gives " + scalar_type_name(outputs[i]->scalar_type) + " " + sizes_text(wanted));
    }
  }
  return {};
}

Status resize_to_bounds(TensorSignature& signature, const std::string& what) {
  uint64_t count = 1;
  for (int32_t size : signature.sizes) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(size), &count) || count > (1ull << 40))
      return invalid(what + " at its upper bounds is larger than 2^40 elements");
  }
  auto element = scalar_type_size(signature.scalar_type);
  if (!element) return invalid(what + " has a dtype ptbundle does not know");
  if (count * *element > kMaxBoundedTensorBytes) {
    std::string shape;
    for (int32_t size : signature.sizes) shape += (shape.empty() ? "" : ", ") + std::to_string(size);
    return invalid(what + " at its upper bounds [" + shape + "] is " + std::to_string(count * *element) +
                   " bytes; expected at most 16 GiB (ExecuTorch plans memory for the upper bounds); export the program "
                   "with a smaller maximum for its dynamic dims");
  }
  signature.nbytes = count * *element;
  signature.bounded = true;
  return {};
}

// A program exported with dynamic dims takes any size its library's input
// checks allow, not only the example's: the method's inputs become
// DYNAMIC_BOUND tensors at the upper bounds (as ExecuTorch plans memory for
// them), so that run, verify and ExecuTorch's loader take every batch the
// library does. An output dim whose example size is that of a dynamic input
// dim follows it: the example cannot say more, and the bound only widens
// what a check accepts. The wrapper source pairs each bound with its dim
// exactly; the library only where that is unambiguous.
Status apply_dynamic_bounds(const PartRequest& request, const Pt2Package& package, const Pt2Model& model,
                            const MappedFile& library, SingleDelegateProgram& spec, PreparedPart& part) {
  PTB_TRY(auto source, pt2_wrapper_source(package, model));
  // The library's checks are what runs; the source pairs bounds with dims
  // exactly. Each dim takes the tightest bounds either states.
  const AotiInputBounds from_library = read_aoti_input_bounds(library.bytes());
  const AotiInputBounds bounds =
      source ? tightest_bounds(read_aoti_input_bounds(Bytes(reinterpret_cast<const uint8_t*>(source->data()), source->size())),
                               from_library)
             : from_library;
  std::vector<std::pair<int32_t, int32_t>> followed;  // example size -> upper bound
  for (const AotiDynamicDim& dim : bounds.dims) {
    const std::string where = "input " + std::to_string(dim.input) + " dim " + std::to_string(dim.dim);
    if (dim.input >= spec.inputs.size() || dim.dim >= spec.inputs[dim.input].sizes.size()) {
      return invalid(request.program + ": its library checks " + where + ", which the example (" +
                     std::to_string(spec.inputs.size()) + " inputs) does not have; expected the inputs the program "
                     "was exported with");
    }
    TensorSignature& input = spec.inputs[dim.input];
    const int32_t example = input.sizes[dim.dim];
    if ((dim.min && example < *dim.min) || (dim.max && example > *dim.max)) {
      return invalid("--example " + request.name + ": " + where + " is " + std::to_string(example) + "; " +
                     request.program + " takes " + bounds_text(dim) + " there");
    }
    if (!dim.max || *dim.max > 0x7fffffff) {
      part.notes.push_back(request.program + ": " + where + " is dynamic, but its upper bound could not be read from "
                           "the library: the method takes the example's size " + std::to_string(example) + " there");
      continue;
    }
    input.sizes[dim.dim] = static_cast<int32_t>(*dim.max);
    PTB_CHECK(resize_to_bounds(input, request.program + ": input " + std::to_string(dim.input)));
    followed.emplace_back(example, static_cast<int32_t>(*dim.max));
    part.notes.push_back(request.program + ": " + where + " is dynamic (" + bounds_text(dim) + "), recorded as a bound");
  }
  for (size_t i = 0; i < spec.outputs.size() && !followed.empty(); ++i) {
    TensorSignature& output = spec.outputs[i];
    bool changed = false;
    for (int32_t& size : output.sizes) {
      for (auto [example, bound] : followed) {
        if (size == example) {
          size = std::max(size, bound);
          changed = true;
          break;
        }
      }
    }
    if (changed) PTB_CHECK(resize_to_bounds(output, request.program + ": output " + std::to_string(i)));
  }
  return {};
}

}  // namespace

Result<PreparedPart> prepare_aoti_part(const PartRequest& request, const std::string& scratch_dir) {
  PreparedPart part;
  part.name = request.name;
  part.source.kind = "aoti_package";
  part.source.files.push_back(fs::path(request.program).filename().string());
  if (request.data_file)
    return usage_error("--part " + request.name + ": a .pt2 package holds its own weights; expected no \",DATA.ptd\" after it");

  PTB_TRY(auto package, Pt2Package::open(request.program));
  if (package.models().size() != 1) {
    return invalid(request.program + ": " + std::to_string(package.models().size()) +
                   " models under data/aotinductor/; expected exactly one");
  }
  const Pt2Model& model = package.models().front();
  PTB_CHECK(check_cuda_package_model(package, model, /*read_through=*/false));
  if (!request.example) {
    return usage_error("--part " + request.name + "=" + request.program + ": a .pt2 part needs --example " +
                       request.name + "=IN.npy[,...]:OUT.npy[,...]; the example fixes the method's inputs and outputs "
                       "and becomes the part's test case");
  }
  PTB_TRY(const MappedFile* library, extract(part, package, model.wrapper_library, scratch_dir, "library.so"));
  PTB_TRY(const std::vector<ExtractedKernel> kernel_files, extract_kernel_files(part, package, model, *library, scratch_dir));
  PTB_TRY(const auto noise, noise_shims(*library, request.program + " " + model.wrapper_library));
  ExampleFiles example = *request.example;
  std::vector<std::string> sample;  // a noise-drawing program's example outputs: signatures only
  if (!noise.empty()) sample = std::exchange(example.outputs, {});
  ExampleTarget target;  // the package defines no signature to check against
  PTB_CHECK(attach_example(part, example, target));
  for (const auto& npy : part.npys) part.source.files.push_back(fs::path(npy->path()).filename().string());
  PTB_CHECK(check_example_inputs(request, package, model, part));

  SingleDelegateProgram spec;
  spec.method_name = target.method_name;
  spec.data_name = part.name;
  for (size_t i = 0; i < part.npys.size(); ++i) {
    PTB_TRY(auto signature, signature_of(part.npys[i]->header(), part.npys[i]->path()));
    (i < part.testcase_inputs ? spec.inputs : spec.outputs).push_back(std::move(signature));
  }
  // A noise-drawing program's example outputs are checked by outputs_from_sample.
  PTB_CHECK(check_example_against_wrapper(request, package, model, spec, sample.empty() ? example.outputs.size() : 0));
  if (!sample.empty()) {
    PTB_CHECK(outputs_from_sample(sample, noise, spec, part));
  } else if (example.outputs.empty()) {
    PTB_CHECK(outputs_from_wrapper(request, package, model, spec, part));
  }
  PTB_TRY(auto library_hash, sha256_file_range(*library, 0, library->size()));
  PTB_CHECK(apply_dynamic_bounds(request, package, model, *library, spec, part));
  // A program without weights, or one whose weights are compiled into its
  // library (which copies them to the GPU itself), has an empty blob or
  // none: its data file still holds the blob's key, with no bytes, so that
  // the payload keeps ExecuTorch's single-blob form and a loader finds what
  // it names.
  const Pt2Entry* blob_entry = model.weights_blob ? package.find_entry(*model.weights_blob) : nullptr;
  SegmentSource weights_source = SegmentSource::memory({});
  std::string weights_hash = to_hex(sha256({}));
  if (blob_entry && blob_entry->size > 0) {
    PTB_TRY(const MappedFile* weights, extract(part, package, *model.weights_blob, scratch_dir, "weights.blob"));
    PTB_TRY(weights_hash, sha256_file_range(*weights, 0, weights->size()));
    weights_source = SegmentSource::file_range(*weights, 0, weights->size());
  }
  PTB_TRY(const std::optional<CudaInfo::LibraryConstants> constants, library_constants(*library, request.program));
  // The constants the wrapper source declares decide (a library compiled
  // with a blob still has a constants section of a few bytes); without a
  // wrapper source, the section's size.
  PTB_TRY(const std::optional<uint64_t> declared, pt2_needed_weights_bytes(package, model));
  const bool weights_in_library =
      !(blob_entry && blob_entry->size > 0) && (declared ? *declared > 0 : constants && constants->bytes > 0);
  if (weights_in_library) {
    const std::string how_much = constants ? " (" + std::to_string(constants->bytes) + " bytes of constants)" : "";
    part.notes.push_back(request.program + ": the weights are compiled into the library" + how_much +
                         ", which copies them to the GPU itself");
  } else if (!(blob_entry && blob_entry->size > 0)) {
    part.notes.push_back(request.program + ": the program has no weights (its wrapper declares no constants)");
  }
  spec.library_key = library_hash + "_so_blob";
  for (const ExtractedKernel& kernel : kernel_files)
    spec.kernel_file_keys.push_back(kernel_file_key(spec.library_key, kernel.name));

  CudaPayload payload;
  payload.form = CudaPayloadForm::SingleBlob;
  payload.so_key = spec.library_key;
  payload.weights_key = weights_hash + "_weights_blob";
  const auto& payload_bytes = *part.buffers.emplace_back(std::make_unique<std::vector<uint8_t>>(encode_cuda_payload(payload)));

  part.program = make_single_delegate_program(spec);
  part.pte_segments = {SegmentSource::memory({}), SegmentSource::memory(payload_bytes),
                       SegmentSource::file_range(*library, 0, library->size())};
  for (const ExtractedKernel& kernel : kernel_files)
    part.pte_segments.push_back(SegmentSource::file_range(*kernel.file, 0, kernel.file->size()));
  part.data_contents.emplace();
  part.data_contents->add(payload.weights_key, std::move(weights_source));

  std::vector<Bytes> images{library->bytes()};
  std::vector<std::string> image_names{request.program + " " + model.wrapper_library};
  for (const ExtractedKernel& kernel : kernel_files) {
    images.push_back(kernel.file->bytes());
    image_names.push_back(request.program + " " + kernel.entry);
  }
  PTB_TRY(PartKernels kernels, scan_part_kernels(images, image_names));
  BuildGpu gpu;
  gpu.compute_capability = compute_capability(model);
  part.cuda.emplace();
  part.cuda->kernel_targets = std::move(kernels.targets);
  if (gpu.compute_capability) part.cuda->built_on = gpu;
  part.cuda->no_weights = !(blob_entry && blob_entry->size > 0) && !weights_in_library;
  part.cuda->weights_in_library = weights_in_library;
  if (weights_in_library) part.cuda->constants = constants;
  PTB_TRY(part.cuda->runtime, runtime_needed(*library, request.program + " " + model.wrapper_library));
  if (!kernel_files.empty()) {
    part.notes.push_back(request.program + ": " + std::to_string(kernel_files.size()) +
                         " kernel files beside the library, kept as named data of the program");
  }
  if (!kernels.template_note.empty()) part.notes.push_back(request.program + ": " + kernels.template_note);
  if (part.cuda->kernel_targets.empty())
    part.notes.push_back(request.program + ": no CUDA kernel image found in the library");
  return part;
}

}  // namespace ptb::detail

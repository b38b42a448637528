// Finding what `ptbundle run` loads. Everything a load could trip over later
// is checked here, where the error can still name the file and the key:
// ExecuTorch's runtime once loaded a part whose weights blob was missing and
// died at the first call with an illegal memory access.
#include "ptbundle/cuda/run_part.h"

#include <chrono>
#include <filesystem>

#include "ptbundle/bundle/bundle.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/bpte.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/kernels/compat.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/signing/folder_digests.h"
#include "ptbundle/program/program_argument.h"
#include "ptbundle/base/text.h"

namespace ptb {
namespace fs = std::filesystem;

namespace {

// The bytes a strided view reaches (weight_view_bytes, verify's rule), as
// ExecuTorch's CudaWeightCache checks them before it binds a weight.
Status check_weight_view(const CudaWeight& weight, const std::string& where) {
  if (weight.device_type != 0 && weight.device_type != 1) {
    return invalid(where + ": weight '" + weight.fqn + "' has device type " + std::to_string(weight.device_type) +
                   "; expected 0 (CPU) or 1 (CUDA)");
  }
  auto needed = weight_view_bytes(weight);
  if (!needed.ok()) return invalid(where + ": weight '" + weight.fqn + "': " + needed.error().message);
  if (*needed > weight.storage_nbytes) {
    return invalid(where + ": weight '" + weight.fqn + "' reaches " + std::to_string(*needed) + " bytes of a " +
                   std::to_string(weight.storage_nbytes) + "-byte storage; expected it to fit");
  }
  return {};
}

Result<Bytes> named_bytes(const ProgramWithData& source, const std::string& part, const std::string& key,
                          const std::string& what) {
  if (auto found = source.find(key)) return found->bytes;
  std::string where = source.ptd() ? source.ptd()->path() + " (or " + source.pte().name() + ")" : source.pte().name();
  std::string hint = source.ptd() ? "" : "; no data file was found beside it";
  return invalid(where + ": no entry " + in_quotes(key) + ", the " + what + " of part " + part + hint);
}

Status resolve_weights(const ProgramWithData& source, const std::string& name, const CudaPayload& payload,
                       RunPart& part) {
  if (payload.form != CudaPayloadForm::MultiVariant) {
    if (payload.weights_key.empty()) return {};
    if (!source.ptd() && !source.pte().find_named_data(payload.weights_key)) {
      return invalid(source.pte().name() + ": the weights blob " + in_quotes(payload.weights_key) + " of part " + name +
                     " is in no data file: none was found beside it");
    }
    PTB_TRY(Bytes blob, named_bytes(source, name, payload.weights_key, "weights blob"));
    // A program without weights has an empty blob: nothing to upload.
    if (blob.empty()) return {};
    part.weights.layout = WeightsLayout::Blob;
    part.weights.blob_key = payload.weights_key;
    part.weights.blob = blob;
    part.weights.file = source.find(payload.weights_key)->file;
    return {};
  }
  part.weights.layout = payload.weights.empty() ? WeightsLayout::None : WeightsLayout::PerFqn;
  part.weights.file = source.ptd() ? source.ptd()->path() : source.pte().name();
  for (const CudaWeight& weight : payload.weights) {
    PTB_CHECK(check_weight_view(weight, source.pte().name()));
    PTB_TRY(Bytes bytes, named_bytes(source, name, weight.storage_key, "weight '" + weight.fqn + "'"));
    if (bytes.size() != weight.storage_nbytes) {
      return invalid(source.find(weight.storage_key)->file + ": entry " + in_quotes(weight.storage_key) + " holds " +
                     std::to_string(bytes.size()) + " bytes; weight '" + weight.fqn + "' of part " + name + " needs " +
                     std::to_string(weight.storage_nbytes));
    }
    WeightMeta meta{weight.fqn,           weight.storage_key, weight.storage_nbytes, weight.dtype,
                    weight.device_type,   weight.storage_offset, weight.sizes,       weight.strides};
    part.weights.tensors.push_back({std::move(meta), bytes});
  }
  return {};
}

// The kernel files of the library keyed `key` (kernel_files.h), each name
// checked, and every file the library loads among them.
Result<std::vector<KernelFileBytes>> kernel_files_for(const ProgramWithData& source, const std::string& key,
                                                     Bytes library) {
  PTB_TRY(std::vector<KernelFile> files, kernel_files_of(source.pte(), key));
  std::vector<KernelFileBytes> out;
  std::vector<std::string> names;
  for (const KernelFile& file : files) {
    out.push_back({file.name, source.pte().named_data_bytes(*file.entry)});
    names.push_back(file.name);
  }
  PTB_CHECK(check_kernel_files_present(library, names, source.pte().name() + ": named data " + in_quotes(key),
                                       "the program"));
  return out;
}

Status check_kernels(RunPart& part, const RunPartOptions& options) {
  if (!options.gpu) return {};
  PTB_TRY(auto images, scan_kernels(part.library, part.source + ": " + part.library_key));
  for (const KernelFileBytes& file : part.kernel_files) {
    PTB_TRY(auto more, scan_kernels(file.bytes, part.source + ": " + part.library_key + "/" + file.name));
    images.insert(images.end(), more.begin(), more.end());
  }
  KernelVerdict verdict = judge_kernels(images, *options.gpu, options.driver_version);
  part.kernels = verdict.message;
  if (!verdict.runs) return invalid("part " + part.name + " (" + part.source + "): " + verdict.message);
  return {};
}

// Everything about one program that needs no GPU: the method, its one
// CUDA delegate, each library the payload names and every weight, present
// with the size it needs. The library is chosen here unless the payload
// holds several variants; the kernels are judged by choose_run_part.
Result<RunCandidate> prepare_program(std::shared_ptr<const ProgramWithData> source, const std::string& name,
                                     const RunPartOptions& options, std::chrono::steady_clock::time_point start) {
  const std::string& program_name = source->name();
  const std::vector<MethodInfo>& methods = source->methods();
  if (methods.empty()) return invalid(program_name + ": the program has no method");

  size_t plan = 0;
  if (!options.method.empty() || methods.size() > 1) {
    const std::string wanted = options.method.empty() ? "forward" : options.method;
    std::string names;
    bool found = false;
    for (size_t i = 0; i < methods.size(); ++i) {
      names += (names.empty() ? "" : ", ") + methods[i].name;
      if (methods[i].name == wanted) {
        plan = i;
        found = true;
      }
    }
    if (!found) {
      return usage_error(program_name + ": no method '" + wanted + "'; it has " + names +
                         (options.method.empty() ? " (choose one with --method)" : ""));
    }
  }
  const MethodInfo& method = methods[plan];
  std::vector<const CudaDelegate*> cuda = source->cuda_delegates_of(plan);
  if (cuda.size() > 1) {
    return invalid(program_name + ": method " + method.name +
                   " has more than one CudaBackend delegate; ptbundle run handles a method that is one AOTInductor library");
  }
  if (cuda.empty()) {
    return invalid(program_name + ": method " + method.name +
                   " has no CudaBackend delegate; ptbundle run runs AOTInductor libraries on the GPU");
  }
  const CudaDelegate& delegate = *cuda.front();
  PTB_TRY(const CudaPayload* decoded, delegate.decoded());
  const CudaPayload& payload = *decoded;

  RunCandidate candidate;
  RunPart& part = candidate.part;
  part.name = name;
  part.source = program_name;
  part.method = method.name;
  part.inputs = method.inputs;
  part.outputs = method.outputs;

  if (payload.form == CudaPayloadForm::MultiVariant) {
    // Every variant's library is looked up now: a missing one is a bad
    // input on any GPU, not only on the GPU that would have picked it.
    candidate.variants = &payload;
    candidate.variants_where = delegate.where;
    for (const CudaVariant& variant : payload.variants) {
      PTB_TRY(Bytes library, named_bytes(*source, name, variant.so_key, "library"));
      PTB_TRY(auto kernel_files, kernel_files_for(*source, variant.so_key, library));
      candidate.libraries.push_back(library);
      candidate.kernel_files.push_back(std::move(kernel_files));
    }
  } else {
    part.variant = std::string("one library (") + cuda_payload_form_name(payload.form) + " payload)";
    PTB_TRY(part.library, named_bytes(*source, name, payload.so_key, "library"));
    part.library_key = payload.so_key;
    PTB_TRY(part.kernel_files, kernel_files_for(*source, payload.so_key, part.library));
  }
  PTB_CHECK(resolve_weights(*source, name, payload, part));
  part.keep_alive = std::move(source);
  part.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return candidate;
}

// What is left once the GPU is known: the library variant for it, then the
// kernel verdict.
Result<RunPart> finish_for_gpu(const RunCandidate& candidate, const RunPartOptions& options) {
  RunPart part = candidate.part;
  if (const CudaPayload* payload = candidate.variants) {
    size_t index = 0;
    if (!options.gpu) {
      if (payload->variants.size() != 1) {
        return invalid(candidate.variants_where + ": " + std::to_string(payload->variants.size()) +
                       " library variants, and no GPU to choose one for");
      }
      part.variant = "the only variant, unchecked (no GPU given)";
    } else {
      VariantChoice choice = choose_variant(variant_targets(payload->variants), *options.gpu);
      if (!choice.runs) return invalid("part " + part.name + " (" + part.source + "): " + choice.message);
      index = *choice.index;
      part.variant = choice.message;
    }
    part.library = candidate.libraries[index];
    part.library_key = payload->variants[index].so_key;
    part.kernel_files = candidate.kernel_files[index];
  }
  part.input_bounds = read_aoti_input_bounds(part.library);
  PTB_CHECK(check_kernels(part, options));
  return part;
}

Result<RunCandidate> prepare_pt2(const std::string& path, const RunPartOptions& options) {
  auto start = std::chrono::steady_clock::now();
  PTB_TRY(Pt2Package package, Pt2Package::open(path));
  if (package.models().empty()) return invalid(path + ": no model under data/aotinductor/");
  const Pt2Model* model = &package.models()[0];
  if (package.models().size() > 1) {
    if (options.part.empty()) {
      std::string names;
      for (const auto& m : package.models()) names += (names.empty() ? "" : ", ") + m.name;
      return usage_error(path + ": the package holds models " + names + "; choose one with --part");
    }
    model = package.find_model(options.part);
    if (!model) return usage_error(path + ": no model '" + options.part + "' under data/aotinductor/");
  }
  // export's own checks: device, library, kernel file names, a blob (when
  // there is one) as large as the constants the wrapper declares.
  PTB_CHECK(check_cuda_package_model(package, *model, /*read_through=*/false));

  auto storage = std::make_shared<std::vector<std::vector<uint8_t>>>();
  PTB_TRY(auto library, package.read_entry(model->wrapper_library, options.max_library_bytes));
  std::vector<uint8_t> blob;
  if (model->weights_blob) {
    PTB_TRY(blob, package.read_entry(*model->weights_blob, options.max_weights_bytes));
  }
  storage->push_back(std::move(library));
  storage->push_back(std::move(blob));
  std::vector<std::string> kernel_names;
  for (const std::string& entry : model->kernel_binaries) {
    PTB_TRY(auto bytes, package.read_entry(entry, options.max_library_bytes));
    storage->push_back(std::move(bytes));
    kernel_names.push_back(entry.substr(model->directory.size()));
  }
  const std::vector<uint8_t>& library_bytes = (*storage)[0];
  PTB_CHECK(check_kernel_files_present(Bytes(library_bytes.data(), library_bytes.size()), kernel_names,
                                       path + ": " + model->wrapper_library, "the package"));

  RunCandidate candidate;
  RunPart& part = candidate.part;
  part.name = fs::path(path).stem().string();
  part.source = path;
  part.method = "forward";
  part.library = Bytes((*storage)[0].data(), (*storage)[0].size());
  part.library_key = model->wrapper_library;
  for (size_t i = 0; i < kernel_names.size(); ++i)
    part.kernel_files.push_back({kernel_names[i], Bytes((*storage)[2 + i].data(), (*storage)[2 + i].size())});
  part.variant = "the package's only library";
  if (const std::string* sm = model->metadata_value("AOTI_COMPUTE_CAPABILITY")) {
    part.variant += " (compiled on sm_" + *sm + ")";
  }
  if (!(*storage)[1].empty()) {  // else a program without weights
    part.weights.layout = WeightsLayout::Blob;
    part.weights.file = path;
    part.weights.blob_key = *model->weights_blob;
    part.weights.blob = Bytes((*storage)[1].data(), (*storage)[1].size());
  }
  part.keep_alive = storage;
  part.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return candidate;
}

// A bundle's part, opened as every command opens it (bundle.h): --part or
// the only part; every program of a part kept per GPU target is prepared,
// so that a bad one is refused whichever GPU would have picked it.
Result<RunInput> open_bundle_input(const std::string& folder, const RunPartOptions& options) {
  auto start = std::chrono::steady_clock::now();
  PTB_TRY(Bundle bundle, Bundle::open(folder));
  PTB_TRY(auto entry, bundle.find_part(options.part));
  // Checked through the mappings it is then loaded from.
  PTB_TRY(CheckedPart checked, open_checked_part(bundle, entry));
  const BundlePart& part = checked.part;
  RunInput input;
  input.source = bundle.path();
  input.name = entry->name;
  input.checked = std::move(checked.checks);
  for (const BundleProgram& program : part.programs) {
    PTB_TRY(RunCandidate candidate, prepare_program(program.program, entry->name, options, start));
    candidate.target = program.target;
    candidate.path = program.path;
    input.candidates.push_back(std::move(candidate));
  }
  return input;
}

// A program given on its own (a .pte, or the program inside a .bpte),
// parsed from the mapping that told its kind, with its data file given
// after the comma or found beside it (program_with_data.h).
Result<RunInput> open_lone_program(const ProgramArgument& argument, InputPath opened, const RunPartOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const PteFile> pte;
  if (opened.kind == FileKind::Bpte) {
    PTB_TRY(BpteFile bpte, BpteFile::parse(std::move(*opened.file)));
    auto owner = std::make_shared<const BpteFile>(std::move(bpte));
    // The program lives inside the .bpte; shares its owner so it outlives it.
    pte = std::shared_ptr<const PteFile>(owner, &owner->program());
  } else {
    auto owner = std::make_shared<const MappedFile>(std::move(*opened.file));
    Bytes bytes = owner->bytes();
    PTB_TRY(PteFile parsed, PteFile::parse(std::move(owner), bytes, argument.program));
    pte = std::make_shared<const PteFile>(std::move(parsed));
  }
  auto program = std::make_shared<ProgramWithData>(std::move(pte), nullptr, argument.program);
  std::optional<std::string> data = argument.data;
  if (!data) data = find_data_file_beside(argument.program, program->methods());
  if (data) {
    PTB_TRY(PtdFile ptd, PtdFile::open(*data));
    program->set_data(std::make_shared<const PtdFile>(std::move(ptd)));
  }
  // No bundle.json to hold the files to: the content-addressed keys, which
  // name the SHA-256 of their bytes, are what can be checked.
  PTB_CHECK(check_program_content_keys(*program));
  RunInput input;
  input.source = argument.program;
  input.name = options.part.empty() ? fs::path(argument.program).stem().string() : options.part;
  input.checked.content_keys = content_keys_of(program->pte()).size() + (program->ptd() ? content_keys_of(*program->ptd()).size() : 0);
  input.checked.what = std::to_string(input.checked.content_keys) +
                       " content-addressed key(s); a lone program has no bundle.json to check sizes and SHA-256 against";
  PTB_TRY(RunCandidate candidate, prepare_program(std::move(program), input.name, options, start));
  input.candidates.push_back(std::move(candidate));
  return input;
}

}  // namespace

Result<RunInput> open_run_input(const std::string& path, const RunPartOptions& options) {
  PTB_TRY(ProgramArgument argument, parse_program_argument(path));
  // What the path is, as every command decides it: a folder is a bundle
  // (one without bundle.json is refused), a file is what its bytes say.
  PTB_TRY(InputPath opened, open_input_path(argument.program));
  const bool program = opened.kind == FileKind::Pte || opened.kind == FileKind::Bpte;
  if (argument.data && !program) {
    return usage_error(path + ": only a .pte or .bpte takes a data file (a .pt2 holds its weights, a bundle lists its "
                              "own); expected PROGRAM.pte,DATA.ptd");
  }
  switch (opened.kind) {
    case FileKind::Bundle: return open_bundle_input(argument.program, options);
    case FileKind::Pte:
    case FileKind::Bpte: return open_lone_program(argument, std::move(opened), options);
    case FileKind::Pt2: {
      PTB_TRY(RunCandidate candidate, prepare_pt2(argument.program, options));
      RunInput input;
      input.source = argument.program;
      input.name = candidate.part.name;
      input.checked.what = "each entry read by the size and CRC-32 the zip records; a package has no bundle.json "
                           "to check SHA-256 against";
      input.candidates.push_back(std::move(candidate));
      return input;
    }
    case FileKind::Ptd:
      return invalid(argument.program + ": is a data file (.ptd); it runs with its program: give PROGRAM.pte," +
                     argument.program);
    case FileKind::Signature: break;
  }
  return invalid(argument.program + ": is a signature; expected a bundle folder, a .pte, a .bpte or a .pt2 package");
}

Result<RunPart> choose_run_part(const RunInput& input, const RunPartOptions& options) {
  if (input.candidates.size() == 1 && !input.candidates.front().target) {
    return finish_for_gpu(input.candidates.front(), options);
  }
  // A part merged from the single-blob layout: one program per GPU target.
  std::vector<std::string> targets;
  for (const RunCandidate& candidate : input.candidates) targets.push_back(candidate.target.value_or(""));
  std::string listed;
  for (const auto& target : targets) listed += (listed.empty() ? "" : ", ") + target;
  if (!options.gpu) {
    return invalid(input.source + ": part '" + input.name + "' has one program per GPU target (" + listed +
                   ") and no GPU was found to pick one for");
  }
  TargetProgramChoice choice = choose_target_program(targets, *options.gpu);
  if (!choice.index) return invalid(input.source + ": part '" + input.name + "' cannot run: " + choice.message);
  const RunCandidate& chosen = input.candidates[*choice.index];
  PTB_TRY(RunPart part, finish_for_gpu(chosen, options));
  part.variant = "picked " + choice.message + " (" + chosen.path + "); " + part.variant;
  return part;
}

Result<RunPart> open_run_part(std::shared_ptr<const ProgramWithData> program, const std::string& name,
                              const RunPartOptions& options) {
  PTB_TRY(RunCandidate candidate, prepare_program(std::move(program), name, options, std::chrono::steady_clock::now()));
  return finish_for_gpu(candidate, options);
}

Result<RunPart> open_run_part(const std::string& path, const RunPartOptions& options) {
  PTB_TRY(RunInput input, open_run_input(path, options));
  return choose_run_part(input, options);
}

}  // namespace ptb

// Finding what `ptbundle run` loads. Everything a load could trip over later
// is checked here, where the error can still name the file and the key:
// ExecuTorch's runtime once loaded a part whose weights blob was missing and
// died at the first call with an illegal memory access.
#include "ptbundle/cuda/run_part.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>

#include "ptbundle/kernels/compat.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/names.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/pt2.h"
#include "ptbundle/formats/ptd.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/program/program_argument.h"

namespace ptb {
namespace fs = std::filesystem;

namespace {

std::string key_text(const std::string& key) { return "'" + key + "'"; }

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
  return invalid(where + ": no entry " + key_text(key) + ", the " + what + " of part " + part + hint);
}

Status resolve_weights(const ProgramWithData& source, const std::string& name, const CudaPayload& payload,
                       RunPart& part) {
  if (payload.form != CudaPayloadForm::MultiVariant) {
    if (payload.weights_key.empty()) return {};
    if (!source.ptd() && !source.pte().find_named_data(payload.weights_key)) {
      return invalid(source.pte().name() + ": the weights blob " + key_text(payload.weights_key) + " of part " + name +
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
      return invalid(source.find(weight.storage_key)->file + ": entry " + key_text(weight.storage_key) + " holds " +
                     std::to_string(bytes.size()) + " bytes; weight '" + weight.fqn + "' of part " + name + " needs " +
                     std::to_string(weight.storage_nbytes));
    }
    WeightMeta meta{weight.fqn,           weight.storage_key, weight.storage_nbytes, weight.dtype,
                    weight.device_type,   weight.storage_offset, weight.sizes,       weight.strides};
    part.weights.tensors.push_back({std::move(meta), bytes});
  }
  return {};
}

Status check_kernels(RunPart& part, const RunPartOptions& options) {
  if (!options.gpu) return {};
  PTB_TRY(auto images, scan_kernels(part.library, part.source + ": " + part.library_key));
  KernelVerdict verdict = judge_kernels(images, *options.gpu, options.driver_version);
  part.kernels = verdict.message;
  if (!verdict.runs) return invalid("part " + part.name + " (" + part.source + "): " + verdict.message);
  return {};
}

Result<RunPart> open_program_part(std::shared_ptr<const ProgramWithData> source, const std::string& name,
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

  RunPart part;
  part.name = name;
  part.source = program_name;
  part.method = method.name;
  part.inputs = method.inputs;
  part.outputs = method.outputs;

  std::string so_key = payload.so_key;
  if (payload.form == CudaPayloadForm::MultiVariant) {
    std::vector<VariantTarget> targets = variant_targets(payload.variants);
    if (!options.gpu) {
      if (payload.variants.size() != 1) {
        return invalid(delegate.where + ": " + std::to_string(payload.variants.size()) +
                       " library variants, and no GPU to choose one for");
      }
      so_key = payload.variants[0].so_key;
      part.variant = "the only variant, unchecked (no GPU given)";
    } else {
      VariantChoice choice = choose_variant(targets, *options.gpu);
      if (!choice.runs) return invalid("part " + name + " (" + part.source + "): " + choice.message);
      so_key = payload.variants[*choice.index].so_key;
      part.variant = choice.message;
    }
  } else {
    part.variant = std::string("one library (") + cuda_payload_form_name(payload.form) + " payload)";
  }
  PTB_TRY(part.library, named_bytes(*source, name, so_key, "library"));
  part.library_key = so_key;
  part.input_bounds = read_aoti_input_bounds(part.library);
  PTB_CHECK(resolve_weights(*source, name, payload, part));
  PTB_CHECK(check_kernels(part, options));
  part.keep_alive = std::move(source);
  part.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return part;
}

Result<RunPart> open_pte_part(const fs::path& pte_path, std::optional<fs::path> ptd_path, const std::string& name,
                              const RunPartOptions& options) {
  auto start = std::chrono::steady_clock::now();
  std::optional<std::string> data;
  if (ptd_path) data = ptd_path->string();
  PTB_TRY(ProgramWithData program, ProgramWithData::open(pte_path.string(), data));
  return open_program_part(std::make_shared<const ProgramWithData>(std::move(program)), name, options, start);
}

Result<RunPart> open_pt2_part(const std::string& path, const RunPartOptions& options) {
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
  const char* recompile =
      "; compile it as ExecuTorch's CUDA backend does: aot_inductor.embed_kernel_binary=True, "
      "aot_inductor.package_constants_in_so=False, aot_inductor.package_constants_on_disk_format=\"binary_blob\"";
  if (model->kernels_in_separate_files()) {
    return invalid(path + ": model " + model->name + " keeps its kernels in " +
                   std::to_string(model->kernel_binaries.size()) + " separate files" + recompile);
  }
  // export's own checks: weights in a blob, or none at all (no constants).
  if (Status ok = check_cuda_package_model(package, *model, recompile + 2, /*read_through=*/false); !ok.ok()) {
    if (model->weights_in_library())
      return invalid(path + ": model " + model->name + " has its weights compiled into the library" + recompile);
    return ok.error();
  }

  auto storage = std::make_shared<std::vector<std::vector<uint8_t>>>();
  PTB_TRY(auto library, package.read_entry(model->wrapper_library, options.max_library_bytes));
  std::vector<uint8_t> blob;
  if (model->weights_blob) {
    PTB_TRY(blob, package.read_entry(*model->weights_blob, options.max_weights_bytes));
  }
  storage->push_back(std::move(library));
  storage->push_back(std::move(blob));

  RunPart part;
  part.name = fs::path(path).stem().string();
  part.source = path;
  part.method = "forward";
  part.library = Bytes((*storage)[0].data(), (*storage)[0].size());
  part.library_key = model->wrapper_library;
  part.input_bounds = read_aoti_input_bounds(part.library);
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
  PTB_CHECK(check_kernels(part, options));
  part.keep_alive = storage;
  part.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return part;
}

// Parts of a merged bundle listed with one program per GPU target: the one for this GPU.
Result<RunPart> open_target_program(const fs::path& folder, const ManifestPart& part, const RunPartOptions& options) {
  std::vector<const ManifestFile*> programs;
  std::vector<std::string> targets;
  for (const ManifestFile& file : part.files) {
    if (file.role != FileRole::Program || !file.target) continue;
    programs.push_back(&file);
    targets.push_back(*file.target);
  }
  std::string listed;
  for (const auto& target : targets) listed += (listed.empty() ? "" : ", ") + target;
  if (!options.gpu) {
    return invalid(folder.string() + ": part '" + part.name + "' has one program per GPU target (" + listed +
                   ") and no GPU was found to pick one for");
  }
  TargetProgramChoice choice = choose_target_program(targets, *options.gpu);
  if (!choice.index) return invalid(folder.string() + ": part '" + part.name + "' cannot run: " + choice.message);
  const ManifestFile& program = *programs[*choice.index];
  std::optional<fs::path> ptd;
  if (const ManifestFile* data = part.find_file(FileRole::Data)) ptd = folder / data->path;
  PTB_TRY(RunPart opened, open_pte_part(folder / program.path, ptd, part.name, options));
  opened.variant = "picked " + choice.message + " (" + program.path + "); " + opened.variant;
  return opened;
}

Result<RunPart> open_bundle_part(const fs::path& folder, const RunPartOptions& options) {
  // Held while the part's files are opened (mapped, they stay valid after):
  // the part as bundle.json lists it before or after a write, never between.
  PTB_TRY(BundleDir locked_dir, BundleDir::open(folder.string()));
  PTB_TRY(BundleReadLock lock, acquire_read_lock(locked_dir));
  std::error_code ec;
  std::optional<Manifest> manifest;
  if (fs::exists(folder / kManifestFileName, ec)) {
    PTB_TRY(manifest, read_manifest(folder.string()));
  }
  std::string name = options.part;
  if (name.empty()) {
    std::vector<std::string> parts;
    if (manifest) {
      for (const ManifestPart& part : manifest->parts) parts.push_back(part.name);
    } else {
      for (const auto& entry : fs::directory_iterator(folder, ec)) {
        if (entry.path().extension() == ".pte" && entry.is_regular_file()) parts.push_back(entry.path().stem().string());
      }
      if (ec) return io_error(folder.string() + ": cannot list the folder: " + ec.message());
    }
    std::sort(parts.begin(), parts.end());
    if (parts.empty()) return invalid(folder.string() + ": no part (<name>.pte) in this folder");
    if (parts.size() > 1) {
      std::string names;
      for (const auto& p : parts) names += (names.empty() ? "" : ", ") + p;
      return usage_error(folder.string() + ": the bundle has parts " + names + "; choose one with --part");
    }
    name = parts[0];
  }
  PTB_CHECK(check_part_name(name, "--part"));
  if (manifest) {
    const ManifestPart* part = manifest->find_part(name);
    if (part) {
      // The files bundle.json lists (a replaced part's may carry a generation,
      // "<name>@1.pte"), each a regular file reached with no symlink followed.
      PTB_TRY(BundleDir dir, BundleDir::open(folder.string()));
      for (const ManifestFile& file : part->files) {
        PTB_TRY(int fd, dir.open_fd(file.path));
        ::close(fd);
      }
    }
    if (part && std::any_of(part->files.begin(), part->files.end(),
                            [](const ManifestFile& file) { return file.role == FileRole::Program && file.target; })) {
      return open_target_program(folder, *part, options);
    }
    if (part) {
      const ManifestFile* data = part->find_file(FileRole::Data);
      return open_pte_part(folder / part->find_file(FileRole::Program)->path,
                           data ? std::optional<fs::path>(folder / data->path) : std::nullopt, name, options);
    }
  }
  fs::path pte = folder / (name + ".pte");
  if (!fs::is_regular_file(pte, ec)) return invalid(folder.string() + ": no part '" + name + "' (" + pte.string() + " is missing)");
  std::optional<fs::path> ptd = folder / (name + ".ptd");
  if (!fs::is_regular_file(*ptd, ec)) ptd.reset();
  return open_pte_part(pte, ptd, name, options);
}

}  // namespace


Result<RunPart> open_run_part(std::shared_ptr<const ProgramWithData> program, const std::string& name,
                              const RunPartOptions& options) {
  return open_program_part(std::move(program), name, options, std::chrono::steady_clock::now());
}

Result<RunPart> open_run_part(const std::string& path, const RunPartOptions& options) {
  PTB_TRY(ProgramArgument argument, parse_program_argument(path));
  std::error_code ec;
  fs::path input(argument.program);
  if (argument.data && input.extension() != ".pte") {
    return usage_error(path + ": only a .pte takes a data file (a .pt2 holds its weights); expected PROGRAM.pte,DATA.ptd");
  }
  if (fs::is_directory(input, ec)) return open_bundle_part(input, options);
  if (!fs::exists(input, ec)) return io_error(argument.program + ": no such file or folder");
  if (input.extension() == ".pt2") return open_pt2_part(argument.program, options);
  if (input.extension() == ".pte") {
    std::string name = options.part.empty() ? input.stem().string() : options.part;
    std::optional<fs::path> data;
    if (argument.data) data = *argument.data;
    return open_pte_part(input, data, name, options);
  }
  return usage_error(path + ": not a bundle folder, a .pte or a .pt2 package");
}

}  // namespace ptb

// Can each CUDA part run on the GPU? For a multi-variant payload, first the
// variant ExecuTorch's runtime would load there (choose_variant: the exact
// SM, else the PTX fallback), then whether the driver can load that
// library's kernels (judge_kernels). A single library is judged by its
// kernels alone. Every library's GPU code is scanned even without a GPU, so
// that the targets bundle.json records can be compared with what is there.
// A library whose kernels run there still fails when it imports an aoti_*
// function the built-in runtime lacks and this build has no LibTorch runtime
// to hand it to, as `run` would refuse it. A library linked to LibTorch is
// not judged so: that needs a LibTorch build, not another export.
#include <cstring>
#include <algorithm>
#include <set>

#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/cuda/runtime_choice.h"
#include "ptbundle/formats/kernel_files.h"
#include "ptbundle/kernels/aoti_shims.h"
#include "ptbundle/kernels/elf_imports.h"
#include "ptbundle/kernels/kernel_images.h"
#include "ptbundle/base/text.h"

namespace ptb {
namespace {

constexpr uint64_t kMaxLibraryBytes = 4ull << 30;  // inflated from a .pt2 for a scan

constexpr const char* kPtxHint =
    " (PTX: ExecuTorch's CUDA backend with the compile spec cuda_include_ptx, or AOTInductor with "
    "aot_inductor.emit_multi_arch_kernel=True)";

struct Library {
  std::string label;  // "variant 0 (sm_80)", "library"
  std::optional<VariantTarget> variant;
  std::vector<KernelImage> images;
  bool scanned = false;
  std::string unrunnable;  // why no runtime of this build runs it, or ""
};

// One thing the runtime loads as a whole: a CUDA delegate or a package model.
struct CudaUnit {
  std::string where;  // "forward delegate 0", "model model"
  bool multi_variant = false;
  std::vector<Library> libraries;
  std::string built_on;  // "sm_90" when the package says
};

std::string variant_label(size_t index, const CudaVariant& variant) {
  std::string text = "variant " + std::to_string(index) + " (";
  text += variant.target_sm ? "sm_" + std::to_string(variant.target_sm) : std::string("no recorded target");
  if (variant.ptx_compute) text += " + compute_" + std::to_string(variant.ptx_compute) + " PTX";
  if (variant.fallback_only) text += ", fallback";
  return text + ")";
}

std::set<std::string> target_names(const std::vector<KernelImage>& images) {
  std::set<std::string> names;
  for (const KernelImage& image : images) names.insert(image.target() + " " + kernel_kind_name(image.kind));
  return names;
}

std::string targets_text(const std::set<std::string>& items) {
  return items.empty() ? "no GPU code" : join(items, ", ");
}

std::string holdings(const CudaUnit& unit) {
  std::string out;
  for (const Library& library : unit.libraries) {
    out += (out.empty() ? "" : "; ") + library.label + ": " +
           (library.scanned ? targets_text(target_names(library.images)) : std::string("unreadable"));
  }
  return out;
}

void scan_library(Library& library, Bytes bytes, const std::string& origin, const std::string& subject,
                  CheckList& checks) {
  auto images = scan_kernels(bytes, origin);
  if (!images.ok()) {
    checks.fail(checks::kKernelTargets, subject,
                library.label + ": cannot read its GPU code: " + images.error().message + "; export the part again");
    return;
  }
  library.images = std::move(*images);
  library.scanned = true;
  if (RuntimeAvailability{}.libtorch) return;
  auto symbols = read_dynamic_symbols(bytes, origin);
  if (!symbols.ok() || !libtorch_dependencies(*symbols).empty()) return;
  const std::vector<std::string> missing = missing_builtin_shims(symbols->undefined);
  if (!missing.empty()) library.unrunnable = missing_shims_message(origin, missing);
}

// The library's kernel files (kernel_files.h): their images are the
// library's, judged with it.
void scan_kernel_files(Library& library, const PteFile& pte, const std::string& key, const std::string& subject,
                       CheckList& checks) {
  if (!library.scanned) return;
  auto files = kernel_files_of(pte, key);
  if (!files.ok()) return;  // the integrity checks report a refused name
  for (const KernelFile& file : *files) {
    auto images = scan_kernels(pte.named_data_bytes(*file.entry), pte.name() + ": key " + in_quotes(file.key));
    if (!images.ok()) {
      checks.fail(checks::kKernelTargets, subject,
                  library.label + ": cannot read the GPU code of its kernel file " + in_quotes(file.name) + ": " +
                      images.error().message + "; export the part again");
      library.scanned = false;
      return;
    }
    library.images.insert(library.images.end(), images->begin(), images->end());
  }
}

std::vector<CudaUnit> program_units(const VerifySubject& subject, CheckList& checks) {
  std::vector<CudaUnit> units;
  const ProgramWithData& program = *subject.program;
  for (const CudaDelegate& delegate : program.cuda_delegates()) {
    // Problems with the payload and its keys are the integrity checks' to report.
    if (!delegate.payload) continue;
    const CudaPayload& payload = *delegate.payload;
    CudaUnit unit;
    unit.where = delegate.method + " delegate " + std::to_string(delegate.index);
    const std::string subject_name = subject.label + ": " + unit.where;
    std::vector<std::pair<Library, std::string>> wanted;
    if (payload.form == CudaPayloadForm::MultiVariant) {
      unit.multi_variant = true;
      std::vector<VariantTarget> targets = variant_targets(payload.variants);
      for (size_t v = 0; v < payload.variants.size(); ++v) {
        wanted.push_back({Library{variant_label(v, payload.variants[v]), targets[v], {}, false, ""}, payload.variants[v].so_key});
      }
    } else {
      wanted.push_back({Library{"library", std::nullopt, {}, false, ""}, payload.so_key});
    }
    for (auto& [library, key] : wanted) {
      if (auto bytes = program.find(key)) {
        scan_library(library, bytes->bytes, bytes->file + ": key '" + key + "'", subject_name, checks);
        scan_kernel_files(library, program.pte(), key, subject_name, checks);
      }
      unit.libraries.push_back(std::move(library));
    }
    units.push_back(std::move(unit));
  }
  return units;
}

std::vector<CudaUnit> package_units(const VerifySubject& subject, CheckList& checks) {
  std::vector<CudaUnit> units;
  const Pt2Package& package = *subject.package;
  for (const Pt2Model& model : package.models()) {
    CudaUnit unit;
    unit.where = "model " + model.name;
    const std::string subject_name = subject.label + ": " + unit.where;
    if (const std::string* sm = model.metadata_value("AOTI_COMPUTE_CAPABILITY")) unit.built_on = "sm_" + *sm;
    Library library{"library", std::nullopt, {}, true, ""};
    std::vector<std::string> entries{model.wrapper_library};
    entries.insert(entries.end(), model.kernel_binaries.begin(), model.kernel_binaries.end());
    for (const std::string& entry : entries) {
      // Inflated into an unnamed temporary file and mapped: a library that
      // inflates to gigabytes costs no anonymous memory; and only when it
      // starts as an ELF file does, so a bomb of zeros costs no disk either.
      if (entry == model.wrapper_library) {
        auto prefix = package.read_entry_prefix(entry, 4);
        if (!prefix.ok() || prefix->size() < 4 || std::memcmp(prefix->data(), "\x7f" "ELF", 4) != 0) {
          checks.fail(checks::kKernelTargets, subject_name,
                      prefix.ok() ? subject.label + ": " + clipped(entry) + ": not an ELF file; expected the compiled library"
                                  : prefix.error().message);
          library.scanned = false;
          continue;
        }
      }
      auto bytes = package.extract_entry_mapped(entry, kMaxLibraryBytes);
      if (!bytes.ok()) {
        checks.fail(checks::kKernelTargets, subject_name, bytes.error().message);
        library.scanned = false;
        continue;
      }
      Library part{"", std::nullopt, {}, false, ""};
      scan_library(part, bytes->bytes(), subject.label + ": " + entry, subject_name, checks);
      if (!part.scanned) library.scanned = false;
      if (library.unrunnable.empty()) library.unrunnable = part.unrunnable;
      library.images.insert(library.images.end(), part.images.begin(), part.images.end());
    }
    unit.libraries.push_back(std::move(library));
    units.push_back(std::move(unit));
  }
  return units;
}

void check_recorded_targets(const VerifySubject& subject, const std::vector<CudaUnit>& units, CheckList& checks) {
  std::set<std::string> found;
  for (const CudaUnit& unit : units) {
    for (const Library& library : unit.libraries) {
      if (!library.scanned) return;  // already failed
      for (const std::string& name : target_names(library.images)) found.insert(name);
    }
  }
  if (!subject.manifest) {
    checks.pass(checks::kKernelTargets, subject.label, "the libraries hold " + targets_text(found));
    return;
  }
  if (subject.target && subject.manifest->cuda) {
    // The part records the targets of all its programs; this one holds its own.
    std::set<std::string> recorded;
    for (const KernelTarget& target : subject.manifest->cuda->kernel_targets) recorded.insert(target.target + " " + target.kind);
    // The program's target names its GPU (sm_90); its cubins may be the
    // architecture-specific kind of that GPU (sm_90a, as Inductor's kernel
    // files are).
    const bool own = std::any_of(found.begin(), found.end(), [&](const std::string& name) {
      std::string target = name.substr(0, name.find(' '));
      if (target == *subject.target) return true;
      if (!target.empty() && (target.back() == 'a' || target.back() == 'f')) target.pop_back();
      return target == *subject.target;
    });
    const bool listed = std::all_of(found.begin(), found.end(), [&](const std::string& name) { return recorded.count(name) > 0; });
    if (!own || !listed) {
      checks.fail(checks::kKernelTargets, subject.label,
                  "bundle.json lists it as the " + *subject.target + " program and records kernel targets " + targets_text(recorded) +
                      " for the part; its libraries hold " + targets_text(found) + "; merge the bundles again");
      return;
    }
    checks.pass(checks::kKernelTargets, subject.label,
                "the libraries hold " + targets_text(found) + ": its target, and among those bundle.json records");
    return;
  }
  if (!subject.manifest->cuda) {
    checks.fail(checks::kKernelTargets, subject.label,
                "bundle.json records no CUDA information (\"cuda\": null), but the program has CUDA delegates "
                "whose libraries hold " + targets_text(found) + "; export the part again");
    return;
  }
  std::set<std::string> recorded;
  for (const KernelTarget& target : subject.manifest->cuda->kernel_targets) recorded.insert(target.target + " " + target.kind);
  if (recorded != found) {
    checks.fail(checks::kKernelTargets, subject.label,
                "bundle.json records kernel targets " + targets_text(recorded) + "; the libraries hold " + targets_text(found) +
                    "; export the part again");
    return;
  }
  checks.pass(checks::kKernelTargets, subject.label, "the libraries hold " + targets_text(found) + ", as bundle.json records");
}

// Returns whether it runs.
bool judge_unit(const VerifySubject& subject, const CudaUnit& unit, GpuCapability gpu, uint32_t driver_version,
                CheckList& checks, const std::string& picked = "") {
  const std::string where = subject.label + ", " + unit.where;
  const std::string built = unit.built_on.empty() ? "" : " (compiled on " + unit.built_on + ")";
  if (unit.libraries.empty()) {
    checks.fail(checks::kGpu, where, where + " lists no library; export it again");
    return false;
  }
  const Library* library = &unit.libraries.front();
  std::string choice_text = picked.empty() ? "" : picked + "; ";
  if (unit.multi_variant) {
    std::vector<VariantTarget> targets;
    for (const Library& l : unit.libraries) targets.push_back(*l.variant);
    VariantChoice choice = choose_variant(targets, gpu);
    if (!choice.runs) {
      checks.fail(checks::kGpu, where,
                  where + " cannot run on " + gpu.name() + ": " + choice.message + kPtxHint +
                      "; its libraries hold: " + holdings(unit));
      return false;
    }
    library = &unit.libraries[*choice.index];
    choice_text += choice.message + "; ";
  }
  if (!library->scanned) {
    checks.skip(checks::kGpu, where, "its GPU code could not be read (see kernel_targets)");
    return false;
  }
  KernelVerdict verdict = judge_kernels(library->images, gpu, driver_version);
  if (!verdict.runs) {
    checks.fail(checks::kGpu, where,
                where + built + " cannot run on " + gpu.name() + ": " + choice_text + (unit.multi_variant ? "its library " : "") +
                    verdict.message + kPtxHint);
    return false;
  }
  if (!library->unrunnable.empty()) {
    checks.fail(checks::kGpu, where,
                where + "'s kernels run on " + gpu.name() + ", but this ptbundle cannot run its library: " +
                    library->unrunnable);
    return false;
  }
  checks.pass(checks::kGpu, where, choice_text + (unit.multi_variant ? "its library " : "") + verdict.message + built);
  return true;
}

}  // namespace

std::vector<GpuCapability> check_gpu(const VerifySubject& subject, const GpusToCheck& gpu, CheckList& checks) {
  std::vector<CudaUnit> units =
      subject.kind == SubjectKind::Package ? package_units(subject, checks) : program_units(subject, checks);
  if (units.empty()) {
    checks.skip(checks::kGpu, subject.label, "no CudaBackend delegate: nothing in it runs on a GPU");
    return gpu.capabilities;
  }
  check_recorded_targets(subject, units, checks);
  if (gpu.capabilities.empty()) {
    for (const CudaUnit& unit : units) checks.skip(checks::kGpu, subject.label + ", " + unit.where, gpu.skip_reason);
    return {};
  }
  std::vector<GpuCapability> runs_on;
  for (GpuCapability capability : gpu.capabilities) {
    bool runs = true;
    for (const CudaUnit& unit : units) runs = judge_unit(subject, unit, capability, gpu.driver_version, checks) && runs;
    if (runs) runs_on.push_back(capability);
  }
  return runs_on;
}

std::vector<std::vector<GpuCapability>> check_gpu_per_target(const std::vector<const VerifySubject*>& programs,
                                                             const GpusToCheck& gpu, CheckList& checks) {
  std::vector<std::vector<GpuCapability>> runs_on(programs.size());
  if (programs.empty()) return runs_on;
  const std::string part_label = "part " + programs.front()->part_name;
  std::vector<std::vector<CudaUnit>> units;
  std::vector<std::string> targets;
  bool any_cuda = false;
  for (const VerifySubject* program : programs) {
    units.push_back(program_units(*program, checks));
    targets.push_back(*program->target);
    if (units.back().empty()) {
      checks.skip(checks::kGpu, program->label, "no CudaBackend delegate: nothing in it runs on a GPU");
    } else {
      any_cuda = true;
      check_recorded_targets(*program, units.back(), checks);
    }
  }
  if (!any_cuda) return runs_on;
  if (gpu.capabilities.empty()) {
    checks.skip(checks::kGpu, part_label, gpu.skip_reason);
    return runs_on;
  }
  for (GpuCapability capability : gpu.capabilities) {
    TargetProgramChoice choice = choose_target_program(targets, capability);
    if (!choice.index) {
      checks.fail(checks::kGpu, part_label, part_label + " cannot run on " + capability.name() + ": " + choice.message);
      continue;
    }
    const size_t index = *choice.index;
    const std::string picked = "picks " + choice.message + " (" + programs[index]->program_path + ")";
    bool runs = true;
    for (const CudaUnit& unit : units[index]) {
      runs = judge_unit(*programs[index], unit, capability, gpu.driver_version, checks, picked) && runs;
    }
    if (runs) runs_on[index].push_back(capability);
  }
  return runs_on;
}

}  // namespace ptb

// An AOTInductor package: it opens (central directory, metadata), holds a
// model, and each model is laid out in a way `ptbundle export` and `run`
// take: kernels embedded in the library or beside it as kernel files, weights
// in a blob beside it or compiled into it.
#include <filesystem>

#include "integrity/integrity_internal.h"
#include "ptbundle/formats/kernel_files.h"

namespace ptb::detail {
namespace {

constexpr uint64_t kMaxLibraryBytes = 4ull << 30;  // inflated into a temporary file to read its kernel file names

std::string package_layout_text(const Pt2Package& package, const Pt2Model& model) {
  std::string kernels = model.kernels_in_separate_files()
                            ? std::to_string(model.kernel_binaries.size()) + " kernel file(s) beside the library"
                            : std::string("kernels embedded in the library");
  if (model.weights_blob) return kernels + ", weights in " + in_quotes(*model.weights_blob);
  auto declared = pt2_needed_weights_bytes(package, model);
  if (declared.ok() && *declared == uint64_t{0}) return kernels + ", no weights (the program declares no constants)";
  return kernels + ", weights compiled into the library";
}

}  // namespace

void check_package(const std::string& path, CheckList& checks, std::vector<VerifySubject>& subjects) {
  auto opened = Pt2Package::open(path);
  if (!opened.ok()) {
    checks.fail(checks::kProgram, path, opened.error().message);
    return;
  }
  auto package = std::make_shared<const Pt2Package>(std::move(*opened));
  if (package->models().empty()) {
    checks.fail(checks::kProgram, path,
                "no model under data/aotinductor/; expected a package written by "
                "torch._inductor.aoti_compile_and_package");
    return;
  }
  checks.pass(checks::kProgram, path,
              std::to_string(package->entries().size()) + " entries, " + std::to_string(package->models().size()) +
                  " model(s)");
  for (const Pt2Model& model : package->models()) {
    const std::string subject = path + ": model " + model.name;
    // export's own checks: device, library, kernel file names, the weights
    // blob (when there is one) as large as the constants the model declares,
    // and every entry read through (sizes, CRC-32).
    if (Status same = check_cuda_package_model(*package, model, /*read_through=*/true); !same.ok()) {
      checks.fail(checks::kPackageLayout, subject, same.error().message);
      continue;
    }
    // The library's named kernel files, all present.
    if (model.kernels_in_separate_files()) {
      auto library = package->extract_entry_mapped(model.wrapper_library, kMaxLibraryBytes);
      if (!library.ok()) {
        checks.fail(checks::kPackageLayout, subject, library.error().message);
        continue;
      }
      std::vector<std::string> names;
      for (const std::string& entry : model.kernel_binaries) names.push_back(entry.substr(model.directory.size()));
      if (Status present = check_kernel_files_present(library->bytes(), names, path + ": " + model.wrapper_library,
                                                      "the package");
          !present.ok()) {
        checks.fail(checks::kPackageLayout, subject, present.error().message);
        continue;
      }
    }
    checks.pass(checks::kPackageLayout, subject, package_layout_text(*package, model) + ": ready for ptbundle export");
  }
  VerifySubject out;
  out.label = path;
  out.part_name = std::filesystem::path(path).stem().string();
  out.kind = SubjectKind::Package;
  out.program_path = path;
  out.package = package;
  subjects.push_back(std::move(out));
}

}  // namespace ptb::detail

// An AOTInductor package: it opens (central directory, metadata), holds a
// model, and each model is laid out as ExecuTorch's CUDA backend compiles it
// (kernels embedded in the library, weights in a blob beside it), the only
// layout `ptbundle export` and `run` take.
#include <filesystem>

#include "integrity/integrity_internal.h"

namespace ptb::detail {

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
  const char* options =
      "compile it as ExecuTorch's CUDA backend does: aot_inductor.embed_kernel_binary=True, "
      "aot_inductor.package_constants_in_so=False, aot_inductor.package_constants_on_disk_format=\"binary_blob\"";
  for (const Pt2Model& model : package->models()) {
    const std::string subject = path + ": model " + model.name;
    size_t problems = 0;
    // No blob: the weights are linked into the library, unless the program
    // has none (its wrapper source declares 0 constants).
    if (model.weights_in_library()) {
      auto needed = pt2_needed_weights_bytes(*package, model);
      if (!needed.ok() || *needed != uint64_t{0}) {
        ++problems;
        checks.fail(checks::kPackageLayout, subject,
                    "its weights are compiled into the library (no *_weights.blob), which ptbundle export and run "
                    "refuse; " + std::string(options));
      }
    }
    if (model.kernels_in_separate_files()) {
      ++problems;
      checks.fail(checks::kPackageLayout, subject,
                  "its kernels are in " + std::to_string(model.kernel_binaries.size()) +
                      " separate files (.cubin/.fatbin/.ptx) rather than embedded in the library; " + options);
    }
    // What export requires, checked by export's own function: weights in a
    // blob (or none at all: a program without constants), the library and
    // the blob read through (sizes, CRC-32) and the blob as large as the
    // constants the model declares.
    if (problems == 0) {
      if (Status same = check_cuda_package_model(*package, model, options, /*read_through=*/true); !same.ok()) {
        ++problems;
        checks.fail(checks::kPackageLayout, subject, same.error().message);
      }
    }
    if (problems == 0) {
      checks.pass(checks::kPackageLayout, subject,
                  "kernels embedded in the library, " +
                      (model.weights_blob ? "weights in " + in_quotes(*model.weights_blob)
                                          : std::string("no weights (the program declares no constants)")) +
                      ": ready for ptbundle export");
    }
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

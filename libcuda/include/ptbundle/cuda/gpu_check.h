// The checks of `ptbundle verify` that know about GPUs, run on the subjects
// that libbundle's integrity checks found: can each CUDA part run on a given
// GPU (the variant ExecuTorch would pick, then the driver's rules for the
// kernels in that library), do the kernel targets bundle.json records match
// the libraries, and do the recorded test cases reproduce (only where a
// runtime is built and a GPU is here).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/kernels/compat.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/integrity/integrity.h"
#include "ptbundle/base/result.h"
#include "ptbundle/cuda/run.h"

namespace ptb {

enum class GpuMode { Auto, Given, None };
const char* gpu_mode_name(GpuMode mode);  // "auto", "given", "none"

// What --gpu asked for, resolved against this machine.
struct GpusToCheck {
  GpuMode mode = GpuMode::Auto;
  // The capabilities to judge against, distinct; empty when there is none
  // (then skip_reason says why, and GPU checks are skipped, not failed).
  std::vector<GpuCapability> capabilities;
  // Of the driver here (Auto), for the PTX ISA check; 0 when unknown (Given).
  uint32_t driver_version = 0;
  std::string description;  // "NVIDIA H200 (sm_90), driver 13.0", "sm_86 (--gpu)"
  std::string skip_reason;  // "no CUDA GPU: libcuda.so.1 not found: ...", "--gpu none"
  // This machine's GPUs, where test cases can run.
  std::vector<GpuInfo> local_gpus;
  std::string local_reason;  // why local_gpus is empty
};

// "auto", "none" or a compute capability ("sm_86", "8.6", "86"); anything
// else is a usage error. `driver_library` stands in for libcuda.so.1 in tests.
Result<GpusToCheck> resolve_gpus_to_check(std::string_view option, const std::string& driver_library = kDriverLibrary);

// kKernelTargets and kGpu for one subject. Returns the capabilities of
// `gpu` the subject runs on (all of them for a subject with no CUDA code).
std::vector<GpuCapability> check_gpu(const VerifySubject& subject, const GpusToCheck& gpu, CheckList& checks);

// The same for a part kept as one program per GPU target (subjects with
// `target`, all of one part): on each GPU the part runs when the program
// choose_target_program picks runs there. Returns, per program, the
// capabilities it was picked for and runs on.
std::vector<std::vector<GpuCapability>> check_gpu_per_target(const std::vector<const VerifySubject*>& programs,
                                                             const GpusToCheck& gpu, CheckList& checks);

// kTestcase for one subject: reproduced on a GPU here when the runner is
// built and the subject runs on that GPU (`runs_on`, from check_gpu),
// compared with the tolerance bundle.json records (a .bpte's: by dtype, see
// tolerance.h); skipped with the reason otherwise.
void check_testcases(const VerifySubject& subject, const GpusToCheck& gpu, const std::vector<GpuCapability>& runs_on,
                     CheckList& checks);

// A bundle part's recorded test case: its inputs, and each output's expected
// value (or dtype and shape, for a sampler's) with the tolerance bundle.json
// records. `file` is its test-case file, which passed check_testcase_file's
// checks for `method`.
struct PartTestCase {
  std::vector<HostTensor> inputs;
  std::vector<ExpectedOutput> wanted;
};
Result<PartTestCase> read_part_testcase(const ManifestPart& part, const PtdFile& file, const std::string& method,
                                        const ProgramWithData& program);
// Runs `test` on a loaded model (on GPU `device`) and adds the verdict
// (kTestcase) to `checks`: verify's test-case check and the robot API's.
void run_testcase(const std::string& subject, const std::string& part_name, AotiModel& model, int device,
                  const PartTestCase& test, CheckList& checks);

struct VerifyOptions {
  std::string gpu = "auto";
  std::string driver_library = kDriverLibrary;
  std::vector<PublicKey> keys;  // bundles must be signed by one of them
  bool require_signature = false;  // IntegrityOptions::require_signature
  Progress progress;               // IntegrityOptions::progress
  // IntegrityOptions::written: files the caller wrote into the bundle and
  // holds (pull), whose digests it proved; a file counts only where the
  // bundle's file is that very one, unchanged.
  std::map<std::string, WrittenDigest> written;
};

// What verify found. fields(F&) describes it to a report printer, as every
// library report does (inspect_model.h): schemas/verify.schema.json.
struct VerifyReport {
  std::vector<std::string> paths;  // the PATH arguments, in order
  GpusToCheck gpu;
  CheckList checks;
  std::vector<SignatureSummary> signatures;  // one per bundle folder argument

  // Of every check, or of those of one PATH.
  CheckTally tally() const;
  CheckTally tally(std::string_view path) const;
  // The signature found for PATH, when it is a bundle that has one.
  const SignatureSummary* signature(std::string_view path) const;

  template <class F>
  void fields(F& f) const {
    std::vector<VerifiedPath> entries;
    for (const std::string& path : paths) entries.push_back({path, tally(path), signature(path)});
    f("ptbundle_verify_version", 1)("ok", !checks.failed())("gpu", GpuEntry{&gpu})("summary", tally())(
        "paths", entries)("checks", checks.outcomes());
  }

  // One PATH's line of the summary.
  struct VerifiedPath {
    std::string path;
    CheckTally tally;
    const SignatureSummary* signature = nullptr;
    template <class F>
    void fields(F& f) const {
      f("path", path)("ok", tally.failed == 0)("passed", tally.passed)("failed", tally.failed)(
          "skipped", tally.skipped)("warned", tally.warned)("signature", signature ? std::optional(*signature) : std::nullopt);
    }
  };
  struct GpuEntry {
    const GpusToCheck* gpu = nullptr;
    template <class F>
    void fields(F& f) const {
      std::vector<std::string> names;
      for (const GpuCapability& capability : gpu->capabilities) names.push_back(capability.name());
      f("mode", gpu_mode_name(gpu->mode))("description", gpu->description)("capabilities", names)(
          "driver_version", gpu->driver_version ? std::optional(cuda_version_name(gpu->driver_version)) : std::nullopt)(
          "skip_reason", gpu->skip_reason.empty() ? std::nullopt : std::optional(gpu->skip_reason));
    }
  };
};

// Every check on every argument ("bundle/", "model.pte", "model.pte,data.ptd",
// "package.pt2", "tests.bpte"). Problems are failed checks in the report; the
// only error is a usage error (a bad --gpu).
Result<VerifyReport> verify_paths(const std::vector<std::string>& arguments, const VerifyOptions& options);

}  // namespace ptb

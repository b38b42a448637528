// Opening one part of a bundle checked, for Model::open: the checks of
// check_opened_part (integrity.h) run over the mappings the part is then
// loaded from, the part's program for this GPU picked from those same
// mappings. Private to librobot.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/bundle/bundle.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/gpu_check.h"
#include "ptbundle/cuda/run_part.h"
#include "ptbundle/robot.h"

namespace ptb::robot::detail {

// Options::keys read: a path, or PEM text.
Result<std::vector<PublicKey>> load_keys(const std::vector<std::string>& keys);

SignatureInfo signature_info(const SignatureSummary& summary, const CheckList& checks);

// The first failed check as one error, "<subject>: <message>", as verify
// words it, naming how many more failed.
Status first_failure(const CheckList& checks, const std::string& path);

// A bundle's bundle.json mapped and parsed once: the bytes the signature is
// checked over are the bytes whose part list is used.
struct OpenedManifest {
  ptb::Bundle bundle;  // holds the folder's read lock
  std::shared_ptr<const MappedFile> bytes;
  std::shared_ptr<const Manifest> manifest;
};
Result<OpenedManifest> open_manifest(const std::string& folder);

struct CheckedPart {
  // What was checked, before any GPU is looked for.
  std::string path;
  std::optional<BundlePart> bundle_part;  // a bundle's part; else `path` is a lone file
  std::optional<std::string> testcase_method;
  // Prepared for the GPU (prepare_for_gpu).
  RunPart part;
  std::shared_ptr<const ProgramWithData> program;  // the program `part` came from
  CheckList checks;
  SignatureSummary signature;
  std::optional<PartTestCase> testcase;  // when verified and its method is the one loaded
  std::string testcase_skip;              // why not, when it is not
  double check_ms = 0;
};

// `path` a bundle folder: its part opened and checked. `path` a
// .pte/.pt2/.bpte given alone (no signature can be checked: with keys or
// require_signature it is refused): verify's checks of that file when
// options.verify. No GPU is needed, so a bad bundle gets one answer on
// every machine.
Result<CheckedPart> open_checked(const std::string& path, const Options& options);
// Then the program and library variant for `gpu`, from the same mappings,
// and the test case to run once it is loaded.
Status prepare_for_gpu(CheckedPart& checked, const Options& options, const CudaDeviceInfo& gpu);

}  // namespace ptb::robot::detail

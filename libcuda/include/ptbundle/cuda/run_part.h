// What `ptbundle run` loads, found without LibTorch: one part's AOTInductor
// library and its weights as plain bytes, the method's signature, and the
// checks that can be made before anything is loaded (the variant for this
// GPU, its kernels, every weight present with the size it needs).
//
// A part comes from:
//   - a bundle folder, opened as every command opens one (bundle.h): the
//     part bundle.json lists (`--part`, or the only part), its files read
//     inside the folder; a folder without bundle.json is refused;
//   - a .pte, or the program inside a .bpte, with its data file given after
//     a comma or found beside it as every command finds it
//     (data_file_candidates in program_with_data.h);
//   - an AOTInductor .pt2 package: weights in a blob beside the library or
//     compiled into it, kernels embedded in it or in kernel files beside it.
// The content decides which (file_kind.h), not the name.
// The CUDA delegate payload decides the weights layout: one blob for the
// whole library (AOTInductor's update_constants_from_blob), or one named
// entry per FQN ("ETCUDAFQN0") with its dtype, sizes and strides.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/kernels/aoti_input_bounds.h"
#include "ptbundle/kernels/compat.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/base/file.h"
#include "ptbundle/formats/npy.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/integrity/checked_part.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/base/result.h"
#include "ptbundle/results/tolerance.h"
#include "ptbundle/cuda/runner.h"

namespace ptb {

struct RunPart {
  std::string name;    // the part, or the file's stem
  std::string source;  // the .pte or .pt2 it came from
  std::string method;
  // The method's signature, from the .pte. A .pt2 records none; its library
  // is then asked to check its inputs itself (AOTI_RUNTIME_CHECK_INPUTS).
  std::optional<std::vector<ValueSpec>> inputs;
  std::optional<std::vector<ValueSpec>> outputs;
  Bytes library;
  std::string library_key;  // named-data key or zip entry
  // The library's kernel files (kernel_files.h), when not embedded in it.
  std::vector<KernelFileBytes> kernel_files;
  // The dynamic dimensions the library checks, read from its bytes: a size
  // outside them is refused before the run, not by the library (which
  // would only print its reason to stderr).
  AotiInputBounds input_bounds;
  std::string variant;      // which library variant was picked, and why
  std::string kernels;      // the kernel verdict for this GPU, when one was given
  PartWeights weights;
  double read_ms = 0;
  std::shared_ptr<const void> keep_alive;  // the mappings and buffers the spans point into
};

struct RunPartOptions {
  std::string part;    // bundle folders with several parts
  std::string method;  // default: the only method, else "forward"
  // The GPU it will run on: picks the variant and checks the kernels before
  // anything is loaded. Without it the only variant is taken unchecked.
  std::optional<GpuCapability> gpu;
  uint32_t driver_version = 0;
  uint64_t max_library_bytes = 8ull << 30;   // read from a .pt2 into memory
  uint64_t max_weights_bytes = 256ull << 30;
};

// One program a run could load, with everything checked that needs no GPU.
struct RunCandidate {
  std::optional<std::string> target;  // a part kept per GPU target: its program's target
  std::string path;                   // that program, relative to the bundle folder
  // The library is set unless the payload holds several variants to choose
  // from; the kernels are not judged yet.
  RunPart part;
  const CudaPayload* variants = nullptr;  // a multi-variant payload, inside part.keep_alive
  std::string variants_where;             // its delegate, for messages
  std::vector<Bytes> libraries;           // one per variant, each found
  std::vector<std::vector<KernelFileBytes>> kernel_files;  // one list per variant
};

// A run's input opened and checked without a GPU: the files read (a bundle
// through bundle.h), the method, its one CUDA delegate, every library and
// weight present with the size it needs. run opens this before it looks for
// a GPU, so that a bad input gets the same answer on every machine.
struct RunInput {
  std::string source;  // the bundle folder or file, for messages
  std::string name;    // the part, or the file's stem
  std::vector<RunCandidate> candidates;  // one; or one per GPU target, in bundle.json's order
  // What was checked before anything else: a bundle's part through
  // open_checked_part (checked_part.h: bundle.json, sizes, SHA-256, content
  // keys, over the files the candidates read); a lone program's
  // content-addressed keys; a .pt2's sizes and CRC-32s.
  PartChecks checked;
};

// `path` is a bundle folder, PROGRAM.pte[,DATA.ptd] or PROGRAM.bpte[,DATA.ptd]
// (parse_program_argument) or a .pt2 package. options.gpu is not used.
// A bundle's part is checked as verify checks it (open_checked_part) and
// refused with verify's message when a check fails.
Result<RunInput> open_run_input(const std::string& path, const RunPartOptions& options);
// What needs the GPU (options.gpu; without one the only variant, unchecked):
// the per-target program and the library variant for it, then its kernels.
Result<RunPart> choose_run_part(const RunInput& input, const RunPartOptions& options);
// Both in one: for callers that know the GPU before they open the input.
Result<RunPart> open_run_part(const std::string& path, const RunPartOptions& options);
// A program already opened with its data (verify's subjects): nothing is
// read again. `name` is the part's name for messages.
Result<RunPart> open_run_part(std::shared_ptr<const ProgramWithData> program, const std::string& name,
                              const RunPartOptions& options);

// Loads an opened part on the GPU: the one way run, verify's test cases,
// the robot API and the tests load a part.
struct LoadOptions {
  int device = 0;
  AotiRuntime runtime = AotiRuntime::Auto;
  bool staged_upload = true;
  bool cuda_graphs = false;
  uint64_t seed = 0;
  const TunedChoices* tuned = nullptr;  // LoadRequest::tuned
};
Result<AotiModel> load_part(const RunPart& part, const LoadOptions& options);

}  // namespace ptb

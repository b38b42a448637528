// `ptbundle tune`: each part of a bundle run on this machine's GPU with its
// recorded test case (or the inputs given), and the choices the built-in
// runtime's searches made (each GEMM's cuBLASLt algorithm, each
// convolution's cuDNN engine and route) written into the bundle's tune file
// (tune_file.h) for this GPU, as one transaction (transaction.h). `run` and
// the robot API then hand the file's choices for their GPU to the runtime
// before the first call (tuned_choices_for), which takes them instead of
// searching; shapes the file lacks are searched as before.
//
// A signed bundle is refused: the signature covers bundle.json and every
// file, and tuning changes both. Tune before `ptbundle sign`, or delete the
// signature, tune, and sign again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/cuda/gpu.h"
#include "ptbundle/cuda/runner.h"

namespace ptb {

struct TuneRequest {
  std::string bundle;               // a bundle folder
  std::vector<std::string> parts;   // empty: every part
  std::vector<std::string> inputs;  // run's --input, for one part; empty: each part's test case
  bool retune = false;              // search every shape again, ignoring the file's choices for this GPU
  int device = 0;
  std::string tool_version;  // bundle.json's ptbundle_version
};

// One part as tune ran it.
struct TunedPart {
  std::string name;
  std::string inputs;  // "test case", or the files given
  double first_call_ms = 0;  // the call that searched (or took the file's choices)
  template <class F>
  void fields(F& f) const {
    f("name", name)("inputs", inputs)("first_call_ms", first_call_ms);
  }
};

// What tune did. fields(F&) describes it to a report printer, as every
// library report does (inspect_model.h): schemas/tune.schema.json.
struct TuneReport {
  std::string bundle;
  std::string file;  // the tune file bundle.json now lists, relative to the bundle
  CudaDeviceInfo device;
  std::string runtime;
  std::vector<TunedPart> parts;
  uint64_t searched = 0;   // choices found by a search in this run
  uint64_t recorded = 0;   // choices taken from the tune file as it was
  uint64_t choices = 0;    // the file's choices for this GPU now
  uint64_t total = 0;      // the file's choices for every GPU
  bool retune = false;
  template <class F>
  void fields(F& f) const {
    f("bundle", bundle)("file", file)("gpu", GpuView{device})("runtime", runtime)("retune", retune)("parts", parts)(
        "searched", searched)("from_file", recorded)("choices_for_gpu", choices)("choices", total);
  }
  struct GpuView {
    CudaDeviceInfo device;
    template <class F>
    void fields(F& f) const {
      f("index", device.index)("name", device.name)("sm", device.capability.name());
    }
  };
};

Result<TuneReport> tune_bundle(const TuneRequest& request);

// The choices the bundle folder's tune file records for `device`, for
// LoadOptions::tuned; nullopt when the folder has no tune file or none for
// this GPU. A tune file that does not read (bad content, a digest other
// than bundle.json's) is ignored: `warning` then says why, naming the file,
// and every shape is searched.
std::optional<TunedChoices> tuned_choices_for(const std::string& bundle, const CudaDeviceInfo& device,
                                              std::string& warning);

// What a process's runtime chose on `device`, as one digest: the same
// digest in two processes means the same algorithm for every shape.
std::string choices_digest(const std::vector<TunedChoice>& choices);

}  // namespace ptb

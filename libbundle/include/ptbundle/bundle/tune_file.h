// A bundle's tune file (tune.json): the choices the built-in runtime's
// searches made on one or more GPUs (each GEMM's cuBLASLt algorithm, each
// convolution's cuDNN engine and route), which `ptbundle tune` records so
// that `run` and the robot API take them instead of searching at the first
// call. bundle.json lists it with its size and SHA-256 (ManifestTuneFile),
// so verify and a signature cover it.
//
//   {"format": "ptbundle-tune", "format_version": 1,
//    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "sm": "sm_90",
//              "runtime": "built-in (CUDA runtime 13.0)", "tuned": "2026-05-01T12:34:56Z",
//              "choices": [{"shim": "gemm", "key": "m=64 n=512 ...", "choice": "algo=...",
//                           "library": 130100}]}]}
//
// One entry of "gpus" per GPU model (name and sm); each choice records the
// version of the library that made it (cublasLtGetVersion for "gemm",
// cudnnGetVersion for "convolution"). A process takes only the entry of its
// GPU, and the runtime only the choices made with the library versions it
// opened, so a choice is never trusted on another GPU or library. Keys and choices are the runtime's
// words (libruntime/engines/tuned.h), which it checks again before use.
// Every field is checked here: known keys only, bounded sizes and counts,
// printable ASCII, no key twice in an entry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/result.h"
#include "ptbundle/bundle/manifest.h"

namespace ptb {

inline constexpr const char* kTuneFormat = "ptbundle-tune";
inline constexpr int kTuneFormatVersion = 1;
// Far beyond a real file: a model has hundreds of shapes, each entry ~400 bytes.
inline constexpr uint64_t kMaxTuneFileBytes = 16ull << 20;
inline constexpr size_t kMaxTuneGpus = 64;
inline constexpr size_t kMaxTuneChoices = 65536;  // over all entries
inline constexpr size_t kMaxTuneKeyBytes = 1024;
inline constexpr size_t kMaxTuneChoiceBytes = 512;

// The shims whose choices a tune file holds.
inline constexpr const char* kTuneShims[] = {"gemm", "convolution"};

struct TuneChoice {
  std::string shim;  // one of kTuneShims
  std::string key;
  std::string choice;
  uint64_t library = 0;  // the version of the library that made it
  bool operator==(const TuneChoice&) const = default;
};

struct TuneGpu {
  std::string name;     // the GPU's name as the driver gives it
  std::string sm;       // "sm_90"
  std::string runtime;  // the runtime that chose, for people
  std::string tuned;    // UTC, when choices were last recorded
  std::vector<TuneChoice> choices;  // sorted by shim, key, library
  bool same_gpu(const TuneGpu& other) const { return name == other.name && sm == other.sm; }
};

struct TuneFile {
  std::vector<TuneGpu> gpus;
  size_t choice_count() const;
};

// `text` checked whole; `name` ("bundle/tune.json") prefixes errors, with the
// JSON path of what is wrong.
Result<TuneFile> parse_tune_file(std::string_view text, const std::string& name);
// The file's text, as parse_tune_file reads it back.
std::string tune_file_text(const TuneFile& file);

// Adds `update`'s choices to the entry of the same GPU (replacing a choice
// of the same shim, key and library version), or adds `update` as a new
// entry.
void add_tuned(TuneFile& file, TuneGpu update);

class BundleDir;
// Writes `file` as the bundle folder's tune file and lists it in
// bundle.json, as one BundleTransaction: the new file under the generation
// name the old one does not have (tune_file_path), bundle.json renamed
// over, the old file removed. Refused for a signed bundle
// (refuse_signed_for_tune). Returns the new file's path in the folder.
Result<std::string> write_bundle_tune_file(const std::string& bundle, const TuneFile& file,
                                           const std::string& tool_version);
// An error when the bundle is signed: the signature covers bundle.json and
// every file, which tuning changes.
Status refuse_signed_for_tune(const BundleDir& dir);

// The tune file bundle.json lists, read inside the folder: refused unless
// its size and SHA-256 are what bundle.json records, then parsed.
Result<TuneFile> read_tune_file(const BundleDir& dir, const ManifestTuneFile& listed);

}  // namespace ptb

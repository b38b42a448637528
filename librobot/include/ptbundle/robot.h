// ptbundle for a robot program: look into a bundle without a GPU, open one
// part checked (signature, digests, its own test case), run it on host or
// device buffers the program owns. One shared library (libptbundle.so) and
// this header, which needs nothing but the standard library and
// ptbundle/base/result.h:
//
//   find_package(ptbundle REQUIRED)
//   target_link_libraries(robot PRIVATE ptbundle::ptbundle)
//
//   ptb::robot::Options options;
//   options.part = "policy";
//   options.keys = {"/etc/robot/bundle.pub"};
//   options.require_signature = true;
//   auto model = ptb::robot::Model::open("bundle/", options);
//   if (!model.ok()) { fprintf(stderr, "%s\n", model.error().message.c_str()); ... }
//   auto outputs = model->run({input});
//
// No exception crosses this interface: every fallible call returns a
// ptb::Result (or ptb::Status) whose error is one line naming the file and
// what was expected. The C interface (ptbundle/ptbundle.h) and the Python
// module sit on this one.
//
// Trust. Model::open checks the part it loads over the bytes it then loads:
// with Options::keys, the bundle's signature must verify with one of them
// and bundle.json and the part's files must be as signed; the part's files
// must match bundle.json's sizes and SHA-256; its content-addressed keys
// must hash to their names; its test-case file must match its method, and
// after loading the test case must reproduce. These are `ptbundle verify
// --key K [--require-signature]`'s checks and messages; other parts' files
// are not read.
//
// Threads. A Model may be used from one thread at a time: calls on one Model
// are not synchronized (two threads that share one must lock around it).
// Different Models may run on different threads at once. Bundle is
// immutable after open and may be shared.
//
// One runtime per process. Libraries compiled with link_libtorch=False run
// on the built-in runtime; others need ptbundle built with LibTorch and run
// through its LibTorch runtime. The first runtime a process loads serves it
// from then on (both provide the same aoti_torch_* symbols, loaded
// globally): after LibTorch, link_libtorch=False libraries run under
// LibTorch; after the built-in runtime, a library that needs LibTorch is
// refused with that reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/result.h"

namespace ptb::robot {

// Element types, numbered as c10/ExecuTorch number them (the numbers in
// bundle.json, .pte and .ptd files).
enum class DType : int32_t {
  UInt8 = 0,
  Int8 = 1,
  Int16 = 2,
  Int32 = 3,
  Int64 = 4,
  Float16 = 5,
  Float32 = 6,
  Float64 = 7,
  Bool = 11,
  BFloat16 = 15,
  UInt16 = 27,
  UInt32 = 28,
  UInt64 = 29,
};
// "float32", "bfloat16", ... as PyTorch names them; "unknown" outside the enum.
const char* dtype_name(DType dtype);
// Bytes per element (1 for Bool); 0 outside the enum.
size_t dtype_size(DType dtype);
// The enum for a c10 number or a PyTorch name; nullopt for any other.
std::optional<DType> dtype_from_number(int32_t number);
std::optional<DType> dtype_from_name(std::string_view name);

enum class Runtime {
  Auto,      // the built-in runtime unless the library needs LibTorch
  Builtin,   // link_libtorch=False libraries only
  LibTorch,  // any library, in a build with LibTorch
};
const char* runtime_name(Runtime runtime);  // "auto", "builtin", "libtorch"

struct Options {
  std::string part;    // needed when the bundle has several parts
  std::string method;  // default: the only one, else "forward"
  int device = 0;      // CUDA device index
  // Trusted public keys (ECDSA P-256/384/521, as `ptbundle sign` uses):
  // each a path to a PEM or DER file, or the PEM text itself (a string that
  // starts with "-----BEGIN"). With keys, the bundle must be signed by one.
  std::vector<std::string> keys;
  // Refuse a bundle whose signature was not checked: an unsigned one, and a
  // signed one when no key is given.
  bool require_signature = false;
  // Check the part's files against bundle.json and run its test case after
  // loading (see Trust above). The signature is checked whenever keys are
  // given or a signature is required, whatever this says.
  bool verify = true;
  Runtime runtime = Runtime::Auto;
  bool staged_upload = true;  // weights through pinned staging buffers
  // Calls are captured into a CUDA graph at the second call and replayed
  // (inputs must keep the shape of that call); Model::graphs says whether
  // they are, and if not why not.
  bool cuda_graphs = false;
  uint64_t seed = 0;  // the runtime's random draws (samplers): the same seed, the same draws
  // The bundle's tune file (`ptbundle tune`) gives the runtime its recorded
  // GEMM and convolution choices for this GPU, so the first call searches
  // only shapes it lacks; false: every shape is searched at its first call.
  bool use_tune_file = true;
};

// A GPU as the driver reports it.
struct Gpu {
  int index = 0;
  std::string name;           // "NVIDIA H100 80GB HBM3"
  int sm = 0;                 // compute capability major * 10 + minor: 90 for sm_90
  uint64_t memory_bytes = 0;  // 0 when unknown
};
// The GPUs of this machine; an error naming why there are none.
Result<std::vector<Gpu>> gpus();

// A dimension the library checks against bounds (a dynamic one), read from
// the library itself; -1: that bound is not known. Inductor's lower bound
// is 2 even for Dim(min=1).
struct DimRange {
  int64_t dim = 0;
  int64_t min = -1;
  int64_t max = -1;
};

// One input or output of a method. `known` is false where the file records
// no signature (a .pt2's library checks its inputs itself); then dtype and
// shape say nothing.
struct TensorInfo {
  std::string name;  // "input 0", or the library's own name
  bool known = false;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;     // the exported example's sizes
  std::vector<DimRange> dynamic;  // the dimensions that may differ from shape
  // Bytes of a dense tensor of `shape`; 0 when not known.
  size_t bytes() const;
};

struct MethodInfo {
  std::string name;
  std::vector<TensorInfo> inputs, outputs;
};

struct PartInfo {
  std::string name;
  std::string source;  // "executorch" or "aoti_package"
  std::vector<MethodInfo> methods;
  // The GPU code the part carries, as bundle.json records it ("sm_90",
  // "compute_80": PTX for that and newer GPUs).
  std::vector<std::string> gpu_targets;
  bool has_testcase = false;
};

enum class SignatureState {
  Unsigned,    // no signature file
  Unchecked,   // signed, and no key was given to check it
  Verified,    // verified with one of the keys given; bundle.json as signed
};
const char* signature_state_name(SignatureState state);  // "unsigned", "unchecked", "verified"

struct SignatureInfo {
  SignatureState state = SignatureState::Unsigned;
  std::string file;             // the signature file, when there is one
  std::string key_fingerprint;  // the key hint it records (unauthenticated unless Verified)
  std::string key;              // the key it verified with
};

// A bundle looked into without a GPU and without loading anything: its
// parts, methods, inputs and outputs, GPU targets and signature. With
// Options::keys (or require_signature) the signature is checked over
// bundle.json first, and a bundle that fails is refused as Model::open
// refuses it. Options::part, method and device are not used.
class Bundle {
 public:
  static Result<Bundle> open(const std::string& path, const Options& options = {});

  const std::string& path() const { return path_; }
  const std::vector<PartInfo>& parts() const { return parts_; }
  const SignatureInfo& signature() const { return signature_; }
  const PartInfo* find_part(std::string_view name) const;

 private:
  Bundle() = default;
  std::string path_;
  std::vector<PartInfo> parts_;
  SignatureInfo signature_;
};

// A tensor in host memory the library owns, row-major and contiguous.
struct Tensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// Memory the program owns, read or written in place.
enum class Memory { Host, Device };
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements; empty: contiguous. Host memory must be contiguous.
  Memory memory = Memory::Device;
  int device = 0;  // Device memory: the CUDA device it is on
  // The bytes available at `data`; 0: exactly what shape and dtype need.
  size_t capacity = 0;
};

// Options::verify's outcome: the checks that ran on the part, as `ptbundle
// verify` counts them.
struct Verification {
  bool ran = false;
  size_t passed = 0, failed = 0, skipped = 0;
  std::vector<std::string> failures;  // "check subject: message"
  std::vector<std::string> skips;     // "check subject: why"
};

struct LoadInfo {
  std::string part, source, method;
  std::string variant;  // which library variant was picked for this GPU, and why
  std::string kernels;  // the kernel verdict for this GPU
  Gpu gpu;
  std::string runtime;  // "built-in (CUDA runtime 13.0)" or "LibTorch 2.11.0"
  std::string runtime_reason;
  std::string weights_layout;  // "blob", "per_fqn", "none"
  std::string upload;          // how the weights reached the GPU
  SignatureInfo signature;
  uint64_t weight_bytes = 0;
  double check_ms = 0;  // the checks before loading (hashing the part's files, the signature)
  double read_ms = 0, library_ms = 0, create_ms = 0, weights_ms = 0, testcase_ms = 0, total_ms = 0;
  std::vector<TensorInfo> inputs, outputs;
  // The tune file whose choices for this GPU the runtime was given (empty:
  // none), how many, and why a tune file was ignored (empty: it was not).
  std::string tune_file;
  size_t tuned_choices = 0;
  std::string tune_warning;
};

struct GraphInfo {
  bool requested = false;
  bool active = false;  // calls replay a captured CUDA graph
  std::string why_not;
};

struct CallTimes {
  uint64_t count = 0;
  double min_ms = 0, median_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
};

// One loaded part. Only Model::open makes one; a Model that was moved from
// is empty, and every call on it returns an error (info() an empty
// LoadInfo), never crashes.
class Model {
 public:
  static Result<Model> open(const std::string& bundle, const Options& options = {});

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  bool loaded() const { return state_ != nullptr; }
  const LoadInfo& info() const;
  const Verification& verification() const;
  // Whether calls replay a CUDA graph (Options::cuda_graphs), as of now.
  GraphInfo graphs() const;

  // One call on host tensors: inputs copied to the GPU, outputs copied back
  // into new tensors.
  Result<std::vector<Tensor>> run(const std::vector<Tensor>& inputs);
  // One call on the program's buffers. Device views: in order on `stream`
  // (a cudaStream_t; nullptr: the model's own), no copy, nothing
  // synchronized. Host views: the outputs are written into the program's
  // buffers before the call returns. All views of one call are in the same
  // memory. Every view is checked first (dtype, shape against the method,
  // device, output capacity); a wrong one is refused naming it.
  Status run(std::span<const TensorView> inputs, std::span<const TensorView> outputs, void* stream = nullptr);
  // `warmup` untimed calls, then `iterations` timed with CUDA events.
  Result<CallTimes> time(const std::vector<Tensor>& inputs, int warmup = 10, int iterations = 100);

 private:
  Model() = default;
  struct State;
  std::unique_ptr<State> state_;
};

// The views of one call checked against the method's inputs and outputs, as
// Model::run checks them before anything reaches the GPU: count, memory,
// device, dtype, shape (within the dynamic bounds), strides, output
// capacity, and a stream only with device memory. `device` is the model's.
Status check_call(std::span<const TensorInfo> input_specs, std::span<const TensorInfo> output_specs,
                  std::span<const TensorView> inputs, std::span<const TensorView> outputs, int device);

}  // namespace ptb::robot

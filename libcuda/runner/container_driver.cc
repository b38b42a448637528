#include "runner/container_driver.h"
#include "runner/kernel_folder.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <utility>

#include "ptbundle/base/dtype.h"
#include "runner/cuda_error.h"
#include "runner/model_constants.h"
#include "runner/stager.h"
#include "ptbundle/base/text.h"

namespace ptb::detail {
namespace {

// The scratch copy of a weights blob on the GPU leaves at least this much
// free for what the model allocates when it runs.
constexpr uint64_t kKeepFree = 256ull << 20;
// A library's blob copies smaller than this go to its own cudaMemcpy when
// they cannot come out of a scratch copy: the staging pipeline's fill and
// drain cost more than they save.
constexpr uint64_t kRouteAtLeast = 1ull << 20;

// GPU memory from cudaMalloc, freed with its owner.
struct DeviceMemory {
  void* data = nullptr;
  DeviceMemory() = default;
  DeviceMemory(DeviceMemory&& other) noexcept : data(std::exchange(other.data, nullptr)) {}
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    std::swap(data, other.data);
    return *this;
  }
  ~DeviceMemory() {
    if (data) cudaFree(data);
  }
};

// Whether `bytes` more fit on the current GPU beside what the model needs.
bool room_on_gpu(uint64_t bytes) {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return false;
  return free >= bytes + kKeepFree;
}

// What is made ready for the upload while the library loads and its
// container is created: the staging buffers pinned, and the GPU memory the
// weights go to (the per-FQN arena, or the blob's scratch copy where there is
// room), so that none of it is on the weights step's clock unless loading was
// quicker than preparing.
struct Prepared {
  std::unique_ptr<Stager> stager;
  std::string no_stager;  // why there is none
  DeviceMemory target;    // empty: allocate it at the weights step, or go without
};

std::future<Prepared> prepare_upload(const PartWeights& weights, int device) {
  return std::async(std::launch::async, [&weights, device] {
    Prepared prepared;
    cudaSetDevice(device);
    const bool blob = weights.layout == WeightsLayout::Blob;
    const uint64_t bytes = blob ? weights.blob.size() : arena_layout(weights).bytes;
    if (bytes > 0 && (!blob || room_on_gpu(bytes)) && cudaMalloc(&prepared.target.data, bytes) != cudaSuccess) {
      prepared.target.data = nullptr;
      // The weights step tries again: per-FQN reports a failure, a blob goes
      // without its scratch copy.
      cudaGetLastError();
    }
    auto created = Stager::create(device, default_staging_options());
    if (created.ok()) prepared.stager = std::move(created).value();
    else prepared.no_stager = created.error().message;
    return prepared;
  });
}

// "; waited 1.20 ms for them", where the weights step waited for preparing.
std::string waited_text(double ms) {
  if (ms < 0.05) return "";
  char text[64];
  std::snprintf(text, sizeof text, "; waited %.2f ms for them", ms);
  return text;
}

// AOTI_RUNTIME_CHECK_INPUTS is read by the library once, at its first call:
// set around that call only, and put back as it was, so that nothing is left
// in the process's environment for the next part.
class FirstCallChecks {
 public:
  explicit FirstCallChecks(bool wanted) {
    const char* before = std::getenv(kName);
    if (!wanted || before) return;
    set_ = true;
    ::setenv(kName, "1", 1);
  }
  ~FirstCallChecks() {
    if (set_) ::unsetenv(kName);
  }
  FirstCallChecks(const FirstCallChecks&) = delete;
  FirstCallChecks& operator=(const FirstCallChecks&) = delete;

 private:
  static constexpr const char* kName = "AOTI_RUNTIME_CHECK_INPUTS";
  bool set_ = false;
};

std::vector<int64_t> signed_sizes(const std::vector<uint64_t>& shape) {
  return std::vector<int64_t>(shape.begin(), shape.end());
}

// A graph of one call: the inputs it reads (copied into before each
// replay), the outputs it leaves (valid until the next replay).
struct CapturedCall {
  cudaGraphExec_t exec = nullptr;
  std::vector<AtenTensorHandle> inputs;
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<AtenTensorHandle> outputs;
  // The outputs' memory is reserved at capture and allocated by the first
  // launch; only then is it the runtime's to give back.
  bool launched = false;
};

class Driver final : public ModelBackend {
 public:
  Driver(std::unique_ptr<DeviceOps> ops, const LoadRequest& request)
      : ops_(std::move(ops)), device_(request.device), label_(request.label) {
    graphs_.requested = request.cuda_graphs;
    checks_inputs_ = request.library_checks_inputs;
  }

  ~Driver() override {
    if (preparing_.valid()) preparing_.wait();
    if (populating_.valid()) populating_.wait();
    cudaSetDevice(device_);
    drop_graph();
    drop_outputs();
    for (AtenTensorHandle handle : device_inputs_) ops_->release(handle);
    if (container_) abi_.destroy(container_);
    for (AtenTensorHandle handle : bound_weights_) ops_->release(handle);
    if (stream_) {
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
  }

  const std::vector<std::string>& input_names() const override { return inputs_named_; }
  const std::vector<std::string>& output_names() const override { return outputs_named_; }
  const LoadTimes& load_times() const override { return times_; }
  GraphState graph_state() const override { return graphs_; }

  Status load(const LoadRequest& request) {
    int count = 0;
    cudaError_t code = cudaGetDeviceCount(&count);
    if (code != cudaSuccess) return invalid(label_ + ": no CUDA GPU: " + cuda_error(code));
    if (device_ < 0 || device_ >= count) {
      return invalid(label_ + ": no CUDA device " + std::to_string(device_) + " (the CUDA runtime sees " +
                     std::to_string(count) + ")");
    }
    code = cudaSetDevice(device_);
    if (code != cudaSuccess) return invalid(label_ + ": cudaSetDevice: " + cuda_error(code));
    code = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (code != cudaSuccess) return invalid(label_ + ": cudaStreamCreate: " + cuda_error(code));
    const PartWeights* weights = request.weights;
    if (weights && request.staged_upload && weights->total_bytes() >= kStageWeightsAtLeast) {
      populating_ = std::async(std::launch::async, [weights] { fault_in(*weights); });
      preparing_ = prepare_upload(*weights, device_);
    }
    PTB_CHECK(ops_->prepare(request, times_.libraries));

    auto start = Clock::now();
    PTB_TRY(library_, LoadedLibrary::open(request.library, request.library_sha256, "model.so",
                                          request.library_origin));
    times_.library_ms = ms_since(start);
    PTB_TRY(abi_, AotiAbi::bind(library_, request.library_origin));
    PTB_TRY(kernel_folder_, KernelFolder::create(request.kernel_files, label_));
    PTB_TRY(Container container, create_container(abi_, device_, label_, kernel_folder_.path()));
    container_ = container.handle;
    times_.create_ms = container.create_ms;
    inputs_named_ = std::move(container.inputs);
    outputs_named_ = std::move(container.outputs);
    input_handles_.resize(inputs_named_.size());
    output_handles_.resize(outputs_named_.size());

    if (weights && weights->layout == WeightsLayout::Blob) PTB_CHECK(load_blob(*weights, request));
    if (weights && weights->layout == WeightsLayout::PerFqn) PTB_CHECK(load_per_fqn(*weights, request.staged_upload));
    finish_populating();
    PTB_CHECK(check_constants_present(abi_, container_, label_, weights));
    if (graphs_.requested) decide_graphs(weights);
    return {};
  }

  Result<std::vector<HostTensor>> run(const std::vector<HostTensor>& inputs) override {
    PTB_CHECK(check_input_count(inputs.size()));
    cudaSetDevice(device_);
    PTB_CHECK(upload(inputs));
    PTB_TRY(const std::vector<AtenTensorHandle>* outputs, call(stream_));
    std::vector<HostTensor> host(outputs->size());
    for (size_t i = 0; i < outputs->size(); ++i) {
      AtenTensorHandle produced = (*outputs)[i];
      if (!produced) return invalid(label_ + ": the library returned no tensor for output " + std::to_string(i));
      const TensorGeometry from = ops_->geometry(produced);
      HostTensor& out = host[i];
      out.scalar_type = static_cast<int8_t>(from.dtype);
      uint64_t count = 1;
      for (int64_t size : from.sizes) {
        out.shape.push_back(static_cast<uint64_t>(size));
        count *= static_cast<uint64_t>(size);
      }
      out.data.resize(count * scalar_type_size(from.dtype).value_or(1));
      TensorGeometry to{from.dtype, from.sizes, {}, 0};
      PTB_TRY(AtenTensorHandle target, ops_->view(out.data.data(), to, Memory::Host, device_));
      Status copied = ops_->copy(target, produced, device_, stream_);
      ops_->release(target);
      if (!copied.ok()) return invalid(label_ + ": copying output " + std::to_string(i) + " back: " + copied.error().message);
    }
    cudaError_t code = cudaStreamSynchronize(stream_);
    if (!captured_) drop_outputs();
    if (code != cudaSuccess) return invalid(label_ + ": the call failed on the GPU: " + cuda_error(code));
    return host;
  }

  Result<std::vector<double>> time_calls(const std::vector<HostTensor>& inputs, int warmup, int iterations) override {
    if (warmup < 0 || iterations < 0) return usage_error("--warmup and --iterations must be 0 or more");
    PTB_CHECK(check_input_count(inputs.size()));
    cudaSetDevice(device_);
    PTB_CHECK(upload(inputs));
    for (int i = 0; i < warmup; ++i) {
      PTB_CHECK(call(stream_));
      if (!captured_) drop_outputs();
    }
    std::vector<cudaEvent_t> events(2 * static_cast<size_t>(iterations), nullptr);
    struct EventsGuard {
      std::vector<cudaEvent_t>& list;
      ~EventsGuard() {
        for (cudaEvent_t event : list)
          if (event) cudaEventDestroy(event);
      }
    } events_guard{events};
    for (cudaEvent_t& event : events) {
      cudaError_t code = cudaEventCreate(&event);
      if (code != cudaSuccess) return invalid(label_ + ": cudaEventCreate: " + cuda_error(code));
    }
    for (int i = 0; i < iterations; ++i) {
      cudaEventRecord(events[2 * i], stream_);
      PTB_CHECK(call(stream_));
      cudaEventRecord(events[2 * i + 1], stream_);
      if (!captured_) drop_outputs();
    }
    cudaError_t code = cudaStreamSynchronize(stream_);
    if (code != cudaSuccess) return invalid(label_ + ": the timed calls failed on the GPU: " + cuda_error(code));
    std::vector<double> result;
    for (int i = 0; i < iterations; ++i) {
      float ms = 0;
      code = cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]);
      if (code != cudaSuccess) return invalid(label_ + ": cudaEventElapsedTime: " + cuda_error(code));
      result.push_back(ms);
    }
    return result;
  }

  Status run_on_device(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                       void* call_stream) override {
    PTB_CHECK(check_input_count(inputs.size()));
    if (outputs.size() != outputs_named_.size()) {
      return invalid(label_ + ": " + std::to_string(outputs.size()) + " output buffers given; the library has " +
                     std::to_string(outputs_named_.size()) + " outputs");
    }
    cudaSetDevice(device_);
    auto stream = call_stream ? static_cast<cudaStream_t>(call_stream) : stream_;
    release_device_inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const DeviceTensor& in = inputs[i];
      TensorGeometry geometry{in.scalar_type, in.sizes, in.strides, 0};
      auto viewed = ops_->view(in.data, geometry, Memory::Gpu, device_);
      if (!viewed.ok()) return invalid(label_ + ": input " + std::to_string(i) + ": " + viewed.error().message);
      device_inputs_.push_back(*viewed);
    }
    PTB_TRY(const std::vector<AtenTensorHandle>* produced, call(stream));
    Status status;
    for (size_t i = 0; i < outputs.size() && status.ok(); ++i) {
      const DeviceTensor& out = outputs[i];
      TensorGeometry geometry{out.scalar_type, out.sizes, out.strides, 0};
      auto target = ops_->view(out.data, geometry, Memory::Gpu, device_);
      if (!target.ok()) {
        status = invalid(label_ + ": output " + std::to_string(i) + ": " + target.error().message);
        break;
      }
      Status copied = ops_->copy(*target, (*produced)[i], device_, stream);
      ops_->release(*target);
      if (!copied.ok()) status = invalid(label_ + ": output " + std::to_string(i) + ": " + copied.error().message);
    }
    release_device_inputs();
    if (!captured_) drop_outputs();
    return status;
  }

 private:
  Status check_input_count(size_t given) const {
    if (given == inputs_named_.size()) return {};
    return invalid(label_ + ": " + std::to_string(given) + " inputs given; the library takes " +
                   std::to_string(inputs_named_.size()));
  }

  // ---- weights ----

  void finish_populating() {
    // The populating thread only walks pages of the weights, which the
    // caller may unmap once the load returns.
    if (populating_.valid()) populating_.wait();
  }

  // What was prepared while the library loaded; without a Stager,
  // times_.upload_method says why.
  Prepared take_prepared(bool allowed) {
    times_.upload_method = "pageable cudaMemcpy";
    if (!allowed) {
      times_.upload_method += " (staging turned off)";
      return {};
    }
    if (!preparing_.valid()) return {};  // too little to be worth it
    auto start = Clock::now();
    Prepared prepared = preparing_.get();
    prepare_wait_ms_ = ms_since(start);
    if (!prepared.stager) times_.upload_method += " (staging unavailable: " + prepared.no_stager + ")";
    return prepared;
  }

  // AOTInductor's blob: the library allocates its constants (one cudaMalloc)
  // and copies each out of the blob with a synchronous cudaMemcpy from
  // pageable memory (a fraction of the pinned rate), which the runtime routes
  // (DeviceOps::route_blob_copies). Where the GPU has room, the whole blob
  // first goes up in one staged copy (every staging thread busy from start to
  // end) into a scratch allocation, and each of the library's copies becomes
  // a device-to-device copy out of it; otherwise each copy of 1 MiB or more
  // is staged on its own, the pipeline filling and draining once per constant.
  Status load_blob(const PartWeights& weights, const LoadRequest& request) {
    if (!abi_.update_constants_from_blob) {
      return invalid(label_ + ": the library does not export AOTInductorModelUpdateConstantsFromBlob, so its "
                              "weights blob cannot be loaded");
    }
    PTB_TRY(auto list, list_constants(abi_, container_, label_));
    PTB_TRY(const uint64_t needed, blob_bytes_needed(weights, list, label_));
    auto start = Clock::now();
    Prepared prepared = take_prepared(request.staged_upload);
    Stager* stager = prepared.stager.get();
    DeviceMemory scratch = std::move(prepared.target);
    const uint8_t* host_blob = weights.blob.data();
    std::unique_ptr<BlobCopyRoute> route;
    std::string why_not;
    DeviceOps& ops = *ops_;
    if (stager && (scratch.data || (room_on_gpu(weights.blob.size()) &&
                                    cudaMalloc(&scratch.data, weights.blob.size()) == cudaSuccess))) {
      HostToDevice whole{weights.blob, scratch.data};
      Status uploaded = stager->copy(std::span<const HostToDevice>(&whole, 1));
      if (!uploaded.ok()) {
        return invalid(label_ + ": uploading " + weights.file + " '" + weights.blob_key + "': " +
                       uploaded.error().message);
      }
      const auto* device_blob = static_cast<const uint8_t*>(scratch.data);
      route = ops.route_blob_copies(
          library_, request.library, weights.blob, 0,
          [&ops, host_blob, device_blob](void* target, const uint8_t* host, uint64_t bytes) -> std::string {
            cudaError_t code = ops.plain_memcpy(target, device_blob + (host - host_blob), bytes,
                                                cudaMemcpyDeviceToDevice);
            return code == cudaSuccess ? std::string() : cuda_error(code);
          },
          why_not);
    } else if (stager) {
      cudaGetLastError();  // a failed scratch allocation is not the library's error
      route = ops.route_blob_copies(
          library_, request.library, weights.blob, kRouteAtLeast,
          [stager](void* target, const uint8_t* host, uint64_t bytes) -> std::string {
            HostToDevice copy{Bytes(host, bytes), target};
            Status done = stager->copy(std::span<const HostToDevice>(&copy, 1));
            return done.ok() ? std::string() : done.error().message;
          },
          why_not);
    }
    if (stager && !route) times_.upload_method += " (" + why_not + ")";
    const int32_t code = abi_.update_constants_from_blob(container_, host_blob);
    const uint64_t routed = route ? route->routed_bytes() : 0;
    const std::string failure = route ? route->failure() : std::string();
    route.reset();
    if (code != kAotiSuccess) {
      return invalid(label_ + ": AOTInductorModelUpdateConstantsFromBlob failed for " + weights.file + " '" +
                     weights.blob_key + "'" + (failure.empty() ? kSeeAbove : ": " + failure));
    }
    cudaError_t synced = cudaDeviceSynchronize();
    if (synced != cudaSuccess) return invalid(label_ + ": loading the weights: " + cuda_error(synced));
    finish_populating();
    times_.weights_ms = ms_since(start);
    times_.weight_bytes = needed ? needed : weights.blob.size();
    if (routed > 0) {
      times_.upload_method = staging_text(*stager) + waited_text(prepare_wait_ms_) +
                             (scratch.data ? " into a scratch copy on the GPU, then device-to-device, " : ", ") +
                             std::to_string(routed >> 20) + " of " + std::to_string(times_.weight_bytes >> 20) +
                             " MiB";
    }
    return {};
  }

  // A view of each weight: GPU weights in the arena, CPU weights in host
  // memory of their own.
  Result<std::vector<AtenTensorHandle>> weight_views(const PartWeights& weights, const ArenaLayout& layout) {
    auto* arena = static_cast<uint8_t*>(weight_arena_.data);
    std::vector<AtenTensorHandle> handles;
    for (size_t i = 0; i < weights.tensors.size(); ++i) {
      const FqnWeightBytes& weight = weights.tensors[i];
      const TensorGeometry geometry{weight.meta.dtype, weight.meta.sizes, weight.meta.strides,
                                    weight.meta.storage_offset};
      void* base = nullptr;
      Memory memory = Memory::Gpu;
      if (weight.meta.device_type == 1) {
        base = arena + layout.offsets[i];
      } else {
        // Constants the library keeps on the CPU stay in host memory.
        cpu_weights_.emplace_back(weight.bytes.begin(), weight.bytes.end());
        base = cpu_weights_.back().data();
        memory = Memory::Host;
      }
      auto handle = ops_->view(base, geometry, memory, device_);
      if (!handle.ok()) {
        return invalid(weights.file + ": weight '" + weight.meta.fqn + "' cannot be viewed as a tensor: " +
                       handle.error().message);
      }
      bound_weights_.push_back(*handle);
      handles.push_back(*handle);
    }
    return handles;
  }

  // ExecuTorch's per-FQN weights: one allocation for all GPU weights, filled
  // by one staged upload, a view per weight bound as a user-managed constant.
  Status load_per_fqn(const PartWeights& weights, bool staged) {
    PTB_TRY(auto list, list_constants(abi_, container_, label_));
    PTB_TRY(const ConstantsByFqn by_fqn, match_per_fqn(weights, list, label_));
    auto start = Clock::now();
    Prepared prepared = take_prepared(staged);
    const ArenaLayout layout = arena_layout(weights);
    weight_arena_ = std::move(prepared.target);
    if (layout.bytes > 0 && !weight_arena_.data) {
      cudaError_t code = cudaMalloc(&weight_arena_.data, layout.bytes);
      if (code != cudaSuccess) {
        return invalid(label_ + ": allocating " + std::to_string(layout.bytes) + " bytes for the weights of " +
                       weights.file + ": " + cuda_error(code));
      }
    }
    const std::vector<HostToDevice> copies = arena_copies(weights, layout, static_cast<uint8_t*>(weight_arena_.data));
    if (Stager* stager = prepared.stager.get()) {
      PTB_CHECK(stager->copy(copies));
      times_.upload_method = staging_text(*stager) + waited_text(prepare_wait_ms_);
    } else {
      for (const HostToDevice& copy : copies) {
        cudaError_t code =
            ops_->plain_memcpy(copy.device, copy.source.data(), copy.source.size(), cudaMemcpyHostToDevice);
        if (code != cudaSuccess) {
          return invalid(label_ + ": uploading the weights of " + weights.file + ": " + cuda_error(code));
        }
      }
    }
    PTB_TRY(auto handles, weight_views(weights, layout));
    PTB_CHECK(bind_per_fqn(abi_, container_, weights, by_fqn, handles, label_));
    cudaError_t synced = cudaDeviceSynchronize();
    if (synced != cudaSuccess) return invalid(label_ + ": uploading the weights: " + cuda_error(synced));
    finish_populating();
    times_.weights_ms = ms_since(start);
    times_.weight_bytes = weights.total_bytes();
    return {};
  }

  // ---- calls ----

  // Host tensors copied into GPU tensors of the driver's on its stream: new
  // ones, or a captured graph's inputs.
  Status upload(const std::vector<HostTensor>& inputs) {
    release_device_inputs();
    if (captured_) {
      // Straight into the graph's inputs, so that replays copy nothing.
      for (size_t i = 0; i < inputs.size(); ++i) {
        PTB_CHECK(check_captured_shape(i, signed_sizes(inputs[i].shape)));
        PTB_CHECK(copy_to_gpu(captured_->inputs[i], inputs[i], i));
      }
      inputs_in_graph_ = true;
      return {};
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const HostTensor& host = inputs[i];
      auto made = ops_->empty(signed_sizes(host.shape), host.scalar_type, device_, stream_);
      if (!made.ok()) {
        return invalid(label_ + ": cannot allocate input " + std::to_string(i) + " on the GPU: " +
                       made.error().message);
      }
      device_inputs_.push_back(*made);
      PTB_CHECK(copy_to_gpu(*made, host, i));
    }
    return {};
  }

  Status copy_to_gpu(AtenTensorHandle target, const HostTensor& host, size_t index) {
    if (host.data.empty()) return {};
    cudaError_t code =
        cudaMemcpyAsync(ops_->data(target), host.data.data(), host.data.size(), cudaMemcpyHostToDevice, stream_);
    if (code != cudaSuccess) {
      return invalid(label_ + ": copying input " + std::to_string(index) + " to the GPU: " + cuda_error(code));
    }
    return {};
  }

  void release_device_inputs() {
    for (AtenTensorHandle handle : device_inputs_) ops_->release(handle);
    device_inputs_.clear();
    inputs_in_graph_ = false;
  }

  // One call of the library on device_inputs_, on `stream`: the library
  // itself, or the captured graph's replay. The outputs stay valid until the
  // next call (the driver drops them, or the graph owns them).
  Result<const std::vector<AtenTensorHandle>*> call(cudaStream_t stream) {
    if (captured_) {
      PTB_CHECK(replay(stream));
      return &captured_->outputs;
    }
    if (graphs_.requested && graphs_.why_not.empty() && calls_ > 0) {
      Status captured = capture(stream);
      if (captured.ok()) return &captured_->outputs;
      // Graphs are off now, and the call runs without one; a failure that
      // left them on (no memory for the graph's inputs) is the call's.
      if (graphs_.why_not.empty()) return captured.error();
    }
    PTB_CHECK(call_library(device_inputs_, stream));
    return &output_handles_;
  }

  Status call_library(const std::vector<AtenTensorHandle>& inputs, cudaStream_t stream) {
    drop_outputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      // The container steals the handles it is given: each call gets new ones.
      auto alias = ops_->alias(inputs[i]);
      if (!alias.ok()) return invalid(label_ + ": " + alias.error().message);
      input_handles_[i] = *alias;
    }
    std::fill(output_handles_.begin(), output_handles_.end(), nullptr);
    auto entry = abi_.run_single_threaded ? abi_.run_single_threaded : abi_.run;
    ops_->begin_call(device_, stream);
    int32_t code = 0;
    {
      FirstCallChecks checks(checks_inputs_ && calls_ == 0);
      code = entry(container_, input_handles_.data(), input_handles_.size(), output_handles_.data(),
                   output_handles_.size(), stream, nullptr);
    }
    ops_->end_call(device_);
    ++calls_;
    if (code != kAotiSuccess) return invalid(label_ + ": the library failed to run" + kSeeAbove);
    for (size_t i = 0; i < output_handles_.size(); ++i) {
      if (!output_handles_[i]) return invalid(label_ + ": the library returned no tensor for output " + std::to_string(i));
    }
    return {};
  }

  void drop_outputs() {
    // Freed in stream order by the runtime: no device synchronization.
    for (AtenTensorHandle& handle : output_handles_) {
      if (handle) ops_->release(handle);
      handle = nullptr;
    }
  }

  // ---- CUDA graphs ----

  // Whether this part can be replayed from a graph at all, decided once.
  void decide_graphs(const PartWeights* weights) {
    if (std::string why = ops_->graphs_unsupported(); !why.empty()) {
      graphs_.why_not = why;
      return;
    }
    if (weights && weights->layout == WeightsLayout::PerFqn) {
      for (const FqnWeightBytes& weight : weights->tensors) {
        if (weight.meta.device_type != 1) {
          graphs_.why_not = "the program keeps constant '" + weight.meta.fqn +
                            "' in host memory, which a graph would read at capture time only";
          return;
        }
      }
    }
  }

  void graphs_off(const std::string& why) {
    graphs_.why_not = why;
    std::fprintf(stderr, "ptbundle: info: %s: CUDA graphs off: %s; calls run the library\n", label_.c_str(),
                 why.c_str());
  }

  // Captures one call on the current inputs. The graph's inputs are the
  // driver's own copies (replays copy new inputs into them), its outputs the
  // tensors the captured call returned. A capture the library cannot make
  // (it reads back to the host: nonzero, .item()) turns graphs off for this
  // model and runs the call again without one.
  Status capture(cudaStream_t stream) {
    auto graph = std::make_unique<CapturedCall>();
    for (size_t i = 0; i < device_inputs_.size(); ++i) {
      TensorGeometry geometry = ops_->geometry(device_inputs_[i]);
      PTB_TRY(AtenTensorHandle copy, ops_->empty(geometry.sizes, geometry.dtype, device_, stream));
      graph->inputs.push_back(copy);
      graph->input_sizes.push_back(geometry.sizes);
      PTB_CHECK(ops_->copy(copy, device_inputs_[i], device_, stream));
    }
    auto give_back_inputs = [&] {
      for (AtenTensorHandle handle : graph->inputs) ops_->release(handle);
      graph->inputs.clear();
    };
    // Work queued before the capture must not become part of it.
    cudaError_t code = cudaStreamSynchronize(stream);
    if (code == cudaSuccess) code = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (code != cudaSuccess) {
      give_back_inputs();
      graphs_off("cudaStreamBeginCapture: " + cuda_error(code));
      return invalid(graphs_.why_not);
    }
    Status called = call_library(graph->inputs, stream);
    cudaGraph_t captured = nullptr;
    code = cudaStreamEndCapture(stream, &captured);
    if (!called.ok() || code != cudaSuccess) {
      // What the failed capture left: handles to memory never allocated.
      for (AtenTensorHandle& handle : output_handles_) {
        if (handle) ops_->forget(handle);
        handle = nullptr;
      }
      if (captured) cudaGraphDestroy(captured);
      cudaGetLastError();
      give_back_inputs();
      graphs_off("the library could not be captured (" +
                 (called.ok() ? "cudaStreamEndCapture: " + cuda_error(code) : called.error().message) +
                 "); a shim that reads back to the host, such as nonzero or .item(), cannot be replayed");
      return invalid(graphs_.why_not);
    }
    code = cudaGraphInstantiateWithFlags(&graph->exec, captured, cudaGraphInstantiateFlagAutoFreeOnLaunch);
    cudaGraphDestroy(captured);
    if (code != cudaSuccess) {
      for (AtenTensorHandle& handle : output_handles_) {
        if (handle) ops_->forget(handle);
        handle = nullptr;
      }
      cudaGetLastError();
      give_back_inputs();
      graphs_off("cudaGraphInstantiate: " + cuda_error(code));
      return invalid(graphs_.why_not);
    }
    graph->outputs = output_handles_;
    std::fill(output_handles_.begin(), output_handles_.end(), nullptr);
    captured_ = std::move(graph);
    graphs_.active = true;
    inputs_in_graph_ = true;  // copied in above
    // The captured call computed nothing: its first replay does.
    return replay(stream);
  }

  // A replay refuses inputs of another shape than the capture's: the graph's
  // kernels and allocations were made for those sizes.
  Status check_captured_shape(size_t index, const std::vector<int64_t>& given) const {
    const std::vector<int64_t>& want = captured_->input_sizes[index];
    if (given == want) return {};
    std::string where = given.size() != want.size()
                            ? std::to_string(given.size()) + " dimensions, not " + std::to_string(want.size())
                            : "";
    for (size_t d = 0; where.empty() && d < want.size(); ++d) {
      if (given[d] != want[d]) {
        where = "dimension " + std::to_string(d) + " is " + std::to_string(given[d]) + ", not " +
                std::to_string(want[d]);
      }
    }
    return invalid(label_ + ": input " + std::to_string(index) + " (" + inputs_named_[index] + ") is " +
                   shape_text(given) + " but the CUDA graph was captured with " + shape_text(want) + ": " + where +
                   "; load the part again to run another shape, or run without CUDA graphs");
  }

  Status replay(cudaStream_t stream) {
    CapturedCall& graph = *captured_;
    if (!inputs_in_graph_) {
      for (size_t i = 0; i < device_inputs_.size(); ++i) {
        PTB_CHECK(check_captured_shape(i, ops_->geometry(device_inputs_[i]).sizes));
        PTB_CHECK(ops_->copy(graph.inputs[i], device_inputs_[i], device_, stream));
      }
    }
    cudaError_t code = cudaGraphLaunch(graph.exec, stream);
    if (code != cudaSuccess) return invalid(label_ + ": cudaGraphLaunch: " + cuda_error(code));
    graph.launched = true;
    ++calls_;
    return {};
  }

  void drop_graph() {
    if (!captured_) return;
    CapturedCall& graph = *captured_;
    for (AtenTensorHandle handle : graph.outputs) {
      if (!handle) continue;
      if (graph.launched) ops_->release(handle);
      else ops_->forget(handle);
    }
    for (AtenTensorHandle handle : graph.inputs) ops_->release(handle);
    if (stream_) cudaStreamSynchronize(stream_);
    if (graph.exec) cudaGraphExecDestroy(graph.exec);
    captured_.reset();
  }

  std::unique_ptr<DeviceOps> ops_;
  LoadedLibrary library_;
  // The library's kernel files, while it may still load one.
  KernelFolder kernel_folder_;
  AotiAbi abi_;
  ContainerHandle container_ = nullptr;
  DeviceMemory weight_arena_;                  // per-FQN weights the container points into
  std::vector<AtenTensorHandle> bound_weights_;  // their views
  std::vector<std::vector<uint8_t>> cpu_weights_;
  std::future<Prepared> preparing_;
  std::future<void> populating_;  // reads the weights' pages: done before they may go
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::string label_;
  bool checks_inputs_ = false;
  uint64_t calls_ = 0;
  std::vector<std::string> inputs_named_;
  std::vector<std::string> outputs_named_;
  LoadTimes times_;
  double prepare_wait_ms_ = 0;
  std::vector<AtenTensorHandle> device_inputs_;  // this call's inputs on the GPU
  bool inputs_in_graph_ = false;                 // ... or already in the captured graph's
  std::vector<AtenTensorHandle> input_handles_;
  std::vector<AtenTensorHandle> output_handles_;
  GraphState graphs_;
  std::unique_ptr<CapturedCall> captured_;
};

}  // namespace

Result<std::unique_ptr<ModelBackend>> load_container(const LoadRequest& request, std::unique_ptr<DeviceOps> ops) {
  auto driver = std::make_unique<Driver>(std::move(ops), request);
  PTB_CHECK(driver->load(request));
  return std::unique_ptr<ModelBackend>(std::move(driver));
}

Result<double> measure_pinned_upload(uint64_t bytes, int device, int repeats) {
  cudaError_t code = cudaSetDevice(device);
  if (code != cudaSuccess) return invalid("pinned upload: cudaSetDevice: " + cuda_error(code));
  void* host = nullptr;
  DeviceMemory target;
  code = cudaHostAlloc(&host, bytes, cudaHostAllocDefault);
  if (code != cudaSuccess) return invalid("pinned upload: cudaHostAlloc: " + cuda_error(code));
  struct HostFree {
    void* p;
    ~HostFree() { cudaFreeHost(p); }
  } host_free{host};
  std::memset(host, 1, bytes);
  code = cudaMalloc(&target.data, bytes);
  if (code != cudaSuccess) return invalid("pinned upload: cudaMalloc: " + cuda_error(code));
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEvent_t start = nullptr, end = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  double best = 0;
  for (int i = 0; i < repeats && code == cudaSuccess; ++i) {
    cudaEventRecord(start, stream);
    cudaMemcpyAsync(target.data, host, bytes, cudaMemcpyHostToDevice, stream);
    cudaEventRecord(end, stream);
    code = cudaEventSynchronize(end);
    float ms = 0;
    if (code == cudaSuccess) code = cudaEventElapsedTime(&ms, start, end);
    if (code == cudaSuccess && ms > 0) best = std::max(best, static_cast<double>(bytes) / (ms / 1000.0) / 1e9);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  cudaStreamDestroy(stream);
  if (code != cudaSuccess) return invalid("pinned upload: " + cuda_error(code));
  return best;
}

}  // namespace ptb::detail

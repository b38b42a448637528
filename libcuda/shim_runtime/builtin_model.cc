// One AOTInductor model container driven by the built-in runtime: the
// library is loaded, its container created and its weights bound through
// AOTInductor's C ABI (runner/aoti_abi.h), with every AtenTensorHandle a
// ptb::shim::Tensor and every GPU call the CUDA runtime linked into this
// module. The same steps as the LibTorch runner (runner/libtorch/
// aoti_model.cc), without LibTorch.
#include "builtin_model.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <span>
#include <utility>

#include "aoti_shim.h"
#include "memcpy_route.h"
#include "ptbundle/formats/npy.h"
#include "runner/aoti_abi.h"
#include "runner/cuda_error.h"
#include "runner/loaded_library.h"
#include "runner/model_constants.h"
#include "tensor.h"

namespace ptb::shim {

using detail::AotiAbi;
using detail::cuda_error;
using detail::kAotiSuccess;

namespace {

using detail::ArenaLayout;
using detail::Clock;
using detail::ConstantsByFqn;
using detail::kSeeAbove;
using detail::ms_since;
using detail::staging_text;

// The scratch copy of a weights blob on the GPU leaves at least this much
// free for what the model allocates when it runs.
constexpr uint64_t kKeepFree = 256ull << 20;

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
    const uint64_t bytes = blob ? weights.blob.size() : detail::arena_layout(weights).bytes;
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

// The source pages faulted in, on a thread of its own: while the library
// loads, this takes them off the staging threads' path; when loading was
// quicker, the staging threads fault in what is left in parallel rather than
// wait for one thread to walk all of it. (On the H200 machine, with the walk
// off the wait, bench_builtin's 512 MiB went from 54 % to 63 % of pinned for
// the blob and from 59 % to 64 % per-FQN. A second load of a library already
// open still waits 20-40 ms in prepare_upload, for its 512 MiB cudaMalloc or
// its pinning: not measured apart.)
std::future<void> populate_source(const PartWeights& weights) {
  return std::async(std::launch::async, [&weights] { detail::fault_in(weights); });
}

// "; waited 1.20 ms for them", where the weights step waited for preparing.
std::string waited_text(double ms) {
  if (ms < 0.05) return "";
  char text[64];
  std::snprintf(text, sizeof text, "; waited %.2f ms for them", ms);
  return text;
}

// A handle this code owns, deleted with it.
struct OwnedHandle {
  AtenTensorHandle handle = nullptr;
  OwnedHandle() = default;
  explicit OwnedHandle(AtenTensorHandle h) : handle(h) {}
  OwnedHandle(OwnedHandle&& other) noexcept : handle(std::exchange(other.handle, nullptr)) {}
  OwnedHandle& operator=(OwnedHandle&& other) noexcept {
    std::swap(handle, other.handle);
    return *this;
  }
  ~OwnedHandle() {
    if (handle) aoti_torch_delete_tensor_object(handle);
  }
};

class BuiltinModel final : public detail::ModelBackend {
 public:
  detail::LoadedLibrary library;  // first: closed last
  AotiAbi abi;
  detail::ContainerHandle container = nullptr;
  DeviceMemory weight_arena;                  // per-FQN weights the container points into
  std::vector<OwnedHandle> bound_weights;     // their views
  std::vector<std::vector<uint8_t>> cpu_weights;
  std::future<Prepared> preparing;
  std::future<void> populating;  // reads the weights' pages: done before they may go
  int device = 0;
  cudaStream_t stream = nullptr;
  std::string label;
  std::vector<std::string> inputs_named;
  std::vector<std::string> outputs_named;
  LoadTimes times;
  double prepare_wait_ms = 0;  // the weights step's wait for prepare_upload
  std::vector<AtenTensorHandle> input_handles;
  std::vector<AtenTensorHandle> output_handles;

  ~BuiltinModel() override {
    if (preparing.valid()) preparing.wait();
    if (populating.valid()) populating.wait();
    if (container) abi.destroy(container);
    bound_weights.clear();
    if (stream) cudaStreamDestroy(stream);
  }

  const std::vector<std::string>& input_names() const override { return inputs_named; }
  const std::vector<std::string>& output_names() const override { return outputs_named; }
  const LoadTimes& load_times() const override { return times; }

  // The weights are read by then; the populating thread only walks pages
  // that are present, and must not outlive the load (the caller may unmap them).
  void finish_populating() {
    if (populating.valid()) populating.wait();
  }

  // What was prepared while the library loaded; without a Stager,
  // times.upload_method says why.
  Prepared take_prepared(bool allowed) {
    times.upload_method = "pageable cudaMemcpy";
    if (!allowed) {
      times.upload_method += " (staging turned off)";
      return {};
    }
    if (!preparing.valid()) return {};  // too little to be worth it
    auto start = Clock::now();
    Prepared prepared = preparing.get();
    prepare_wait_ms = ms_since(start);
    if (!prepared.stager) times.upload_method += " (staging unavailable: " + prepared.no_stager + ")";
    return prepared;
  }

  // AOTInductor's blob: the library allocates its constants (one cudaMalloc)
  // and copies each out of the blob with a synchronous cudaMemcpy from
  // pageable memory (6.6 GB/s on the H200 machine), which this runtime serves
  // (memcpy_route.h). Where the GPU has room, the whole blob first goes up in
  // one staged copy (every staging thread busy from start to end) into a
  // scratch allocation, and each of the library's copies becomes a
  // device-to-device copy out of it; otherwise each copy of 1 MiB or more is
  // staged on its own, the pipeline filling and draining once per constant.
  Status load_blob(const PartWeights& weights, bool staged) {
    if (!abi.update_constants_from_blob) {
      return invalid(label + ": the library does not export AOTInductorModelUpdateConstantsFromBlob, so its "
                             "weights blob cannot be loaded");
    }
    PTB_TRY(auto list, detail::list_constants(abi, container, label));
    PTB_TRY(const uint64_t needed, detail::blob_bytes_needed(weights, list, label));
    auto start = Clock::now();
    Prepared prepared = take_prepared(staged);
    Stager* stager = prepared.stager.get();
    DeviceMemory scratch = std::move(prepared.target);
    std::optional<BlobCopyRoute> route;
    const uint8_t* host_blob = weights.blob.data();
    if (stager && (scratch.data || (room_on_gpu(weights.blob.size()) &&
                                    cudaMalloc(&scratch.data, weights.blob.size()) == cudaSuccess))) {
      HostToDevice whole{weights.blob, scratch.data};
      Status uploaded = stager->copy(std::span<const HostToDevice>(&whole, 1));
      if (!uploaded.ok()) return invalid(label + ": uploading " + weights.file + " '" + weights.blob_key + "': " +
                                         uploaded.error().message);
      const auto* device_blob = static_cast<const uint8_t*>(scratch.data);
      route.emplace(host_blob, weights.blob.size(), 0,
                    [host_blob, device_blob](void* target, const uint8_t* host, uint64_t bytes) -> std::string {
                      cudaError_t code = ptb_cudart_cudaMemcpy(target, device_blob + (host - host_blob), bytes,
                                                               cudaMemcpyDeviceToDevice);
                      return code == cudaSuccess ? std::string() : cuda_error(code);
                    });
    } else if (stager) {
      cudaGetLastError();  // a failed scratch allocation is not the library's error
      route.emplace(host_blob, weights.blob.size(), kRouteAtLeast,
                    [stager](void* target, const uint8_t* host, uint64_t bytes) -> std::string {
                      HostToDevice copy{Bytes(host, bytes), target};
                      Status done = stager->copy(std::span<const HostToDevice>(&copy, 1));
                      return done.ok() ? std::string() : done.error().message;
                    });
    }
    const int32_t code = abi.update_constants_from_blob(container, host_blob);
    const uint64_t routed = route ? route->routed_bytes() : 0;
    const std::string failure = route ? route->failure() : std::string();
    route.reset();
    if (code != kAotiSuccess) {
      return invalid(label + ": AOTInductorModelUpdateConstantsFromBlob failed for " + weights.file + " '" +
                     weights.blob_key + "'" + (failure.empty() ? kSeeAbove : ": " + failure));
    }
    cudaError_t synced = cudaDeviceSynchronize();
    if (synced != cudaSuccess) return invalid(label + ": loading the weights: " + cuda_error(synced));
    finish_populating();
    times.weights_ms = ms_since(start);
    times.weight_bytes = needed ? needed : weights.blob.size();
    if (routed > 0) {
      times.upload_method = staging_text(*stager) + waited_text(prepare_wait_ms) +
                            (scratch.data ? " into a scratch copy on the GPU, then device-to-device, " : ", ") +
                            std::to_string(routed >> 20) + " of " + std::to_string(times.weight_bytes >> 20) + " MiB";
    }
    return {};
  }

  // A view of each weight: GPU weights in the arena, CPU weights in host
  // memory of their own.
  Result<std::vector<AtenTensorHandle>> weight_views(const PartWeights& weights, const ArenaLayout& layout) {
    auto* arena = static_cast<uint8_t*>(weight_arena.data);
    std::vector<AtenTensorHandle> handles;
    for (size_t i = 0; i < weights.tensors.size(); ++i) {
      const FqnWeightBytes& weight = weights.tensors[i];
      void* base = nullptr;
      int32_t device_type = kDeviceCuda;
      if (weight.meta.device_type == 1) {
        base = arena + layout.offsets[i];
      } else {
        // Constants the library keeps on the CPU stay in host memory.
        cpu_weights.emplace_back(weight.bytes.begin(), weight.bytes.end());
        base = cpu_weights.back().data();
        device_type = kDeviceCpu;
      }
      AtenTensorHandle handle = nullptr;
      if (aoti_torch_create_tensor_from_blob(base, static_cast<int64_t>(weight.meta.sizes.size()),
                                             weight.meta.sizes.data(), weight.meta.strides.data(),
                                             weight.meta.storage_offset, weight.meta.dtype, device_type, device,
                                             &handle) != kShimSuccess) {
        return invalid(weights.file + ": weight '" + weight.meta.fqn + "' cannot be viewed as a tensor" + kSeeAbove);
      }
      bound_weights.emplace_back(handle);
      handles.push_back(handle);
    }
    return handles;
  }

  // ExecuTorch's per-FQN weights: one allocation for all GPU weights, filled
  // by one staged upload, a view per weight bound as a user-managed constant.
  Status load_per_fqn(const PartWeights& weights, bool staged) {
    PTB_TRY(auto list, detail::list_constants(abi, container, label));
    PTB_TRY(const ConstantsByFqn by_fqn, detail::match_per_fqn(weights, list, label));
    auto start = Clock::now();
    Prepared prepared = take_prepared(staged);
    const ArenaLayout layout = detail::arena_layout(weights);
    weight_arena = std::move(prepared.target);
    if (layout.bytes > 0 && !weight_arena.data) {
      cudaError_t code = cudaMalloc(&weight_arena.data, layout.bytes);
      if (code != cudaSuccess) {
        return invalid(label + ": allocating " + std::to_string(layout.bytes) + " bytes for the weights of " +
                       weights.file + ": " + cuda_error(code));
      }
    }
    const std::vector<HostToDevice> copies =
        detail::arena_copies(weights, layout, static_cast<uint8_t*>(weight_arena.data));
    if (Stager* stager = prepared.stager.get()) {
      PTB_CHECK(stager->copy(copies));
      times.upload_method = staging_text(*stager) + waited_text(prepare_wait_ms);
    } else {
      for (const HostToDevice& copy : copies) {
        cudaError_t code =
            ptb_cudart_cudaMemcpy(copy.device, copy.source.data(), copy.source.size(), cudaMemcpyHostToDevice);
        if (code != cudaSuccess) return invalid(label + ": uploading the weights of " + weights.file + ": " + cuda_error(code));
      }
    }
    PTB_TRY(auto handles, weight_views(weights, layout));
    PTB_CHECK(detail::bind_per_fqn(abi, container, weights, by_fqn, handles, label));
    cudaError_t synced = cudaDeviceSynchronize();
    if (synced != cudaSuccess) return invalid(label + ": uploading the weights: " + cuda_error(synced));
    finish_populating();
    times.weights_ms = ms_since(start);
    times.weight_bytes = weights.total_bytes();
    return {};
  }

  Status check_input_count(size_t given) const {
    if (given == inputs_named.size()) return {};
    return invalid(label + ": " + std::to_string(given) + " inputs given; the library takes " +
                   std::to_string(inputs_named.size()));
  }

  // Host tensors copied into new GPU tensors on the model's stream.
  Result<std::vector<OwnedHandle>> upload(const std::vector<HostTensor>& inputs) {
    std::vector<OwnedHandle> handles;
    set_current_stream(device, stream);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const HostTensor& host = inputs[i];
      std::vector<int64_t> sizes(host.shape.begin(), host.shape.end());
      std::vector<int64_t> strides = contiguous_strides(sizes);
      AtenTensorHandle handle = nullptr;
      if (aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), host.scalar_type,
                                   kDeviceCuda, device, &handle) != kShimSuccess) {
        set_current_stream(device, nullptr);
        return invalid(label + ": cannot allocate input " + std::to_string(i) + " on the GPU" + kSeeAbove);
      }
      handles.emplace_back(handle);
      if (!host.data.empty()) {
        cudaError_t code = cudaMemcpyAsync(tensor_of(handle)->data(), host.data.data(), host.data.size(),
                                           cudaMemcpyHostToDevice, stream);
        if (code != cudaSuccess) {
          set_current_stream(device, nullptr);
          return invalid(label + ": copying input " + std::to_string(i) + " to the GPU: " + cuda_error(code));
        }
      }
    }
    set_current_stream(device, nullptr);
    return handles;
  }

  // One call; the container steals the input handles it is given, so each
  // call gets new ones (views sharing the storage).
  Status call(const std::vector<OwnedHandle>& inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (aoti_torch_new_tensor_handle(inputs[i].handle, &input_handles[i]) != kShimSuccess)
        return invalid(label + ": out of host memory");
    }
    std::fill(output_handles.begin(), output_handles.end(), nullptr);
    auto entry = abi.run_single_threaded ? abi.run_single_threaded : abi.run;
    if (entry(container, input_handles.data(), input_handles.size(), output_handles.data(), output_handles.size(),
              stream, nullptr) != kAotiSuccess) {
      return invalid(label + ": the library failed to run" + kSeeAbove);
    }
    return {};
  }

  void drop_outputs() {
    // Freed on the stream that allocated them (tensor.cc): no device sync.
    for (AtenTensorHandle& handle : output_handles) {
      if (handle) aoti_torch_delete_tensor_object(handle);
      handle = nullptr;
    }
  }

  Result<std::vector<HostTensor>> run(const std::vector<HostTensor>& inputs) override {
    PTB_CHECK(check_input_count(inputs.size()));
    cudaSetDevice(device);
    PTB_TRY(auto device_inputs, upload(inputs));
    PTB_CHECK(call(device_inputs));
    std::vector<HostTensor> host(output_handles.size());
    set_current_stream(device, stream);
    std::string failure;
    for (size_t i = 0; i < output_handles.size() && failure.empty(); ++i) {
      if (!output_handles[i]) {
        failure = label + ": the library returned no tensor for output " + std::to_string(i);
        break;
      }
      const Tensor& out = *tensor_of(output_handles[i]);
      host[i].scalar_type = static_cast<int8_t>(out.dtype);
      for (int64_t size : out.sizes) host[i].shape.push_back(static_cast<uint64_t>(size));
      host[i].data.resize(static_cast<size_t>(out.numel()) * out.itemsize());
      // A view of the host vector, laid out contiguously, as the target.
      Tensor target;
      target.storage = std::make_shared<Storage>();
      target.storage->data = host[i].data.data();
      target.storage->nbytes = host[i].data.size();
      target.sizes = out.sizes;
      target.strides = contiguous_strides(out.sizes);
      target.dtype = out.dtype;
      std::string why = copy_elements(target, out);
      if (!why.empty()) failure = label + ": copying output " + std::to_string(i) + " back: " + why;
    }
    set_current_stream(device, nullptr);
    cudaError_t code = cudaStreamSynchronize(stream);
    drop_outputs();
    if (!failure.empty()) return invalid(failure);
    if (code != cudaSuccess) return invalid(label + ": the call failed on the GPU: " + cuda_error(code));
    return host;
  }

  Result<std::vector<double>> time_calls(const std::vector<HostTensor>& inputs, int warmup, int iterations) override {
    if (warmup < 0 || iterations < 0) return usage_error("--warmup and --iterations must be 0 or more");
    PTB_CHECK(check_input_count(inputs.size()));
    cudaSetDevice(device);
    PTB_TRY(auto device_inputs, upload(inputs));
    for (int i = 0; i < warmup; ++i) {
      PTB_CHECK(call(device_inputs));
      drop_outputs();
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
      if (code != cudaSuccess) return invalid(label + ": cudaEventCreate: " + cuda_error(code));
    }
    for (int i = 0; i < iterations; ++i) {
      cudaEventRecord(events[2 * i], stream);
      PTB_CHECK(call(device_inputs));
      cudaEventRecord(events[2 * i + 1], stream);
      drop_outputs();
    }
    cudaError_t code = cudaStreamSynchronize(stream);
    if (code != cudaSuccess) return invalid(label + ": the timed calls failed on the GPU: " + cuda_error(code));
    std::vector<double> result;
    for (int i = 0; i < iterations; ++i) {
      float ms = 0;
      code = cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]);
      if (code != cudaSuccess) return invalid(label + ": cudaEventElapsedTime: " + cuda_error(code));
      result.push_back(ms);
    }
    return result;
  }

  Status run_on_device(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                       void* call_stream) override {
    PTB_CHECK(check_input_count(inputs.size()));
    if (outputs.size() != outputs_named.size()) {
      return invalid(label + ": " + std::to_string(outputs.size()) + " output buffers given; the library has " +
                     std::to_string(outputs_named.size()) + " outputs");
    }
    cudaSetDevice(device);
    auto run_stream = call_stream ? static_cast<cudaStream_t>(call_stream) : stream;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const DeviceTensor& in = inputs[i];
      std::vector<int64_t> strides = in.strides.empty() ? contiguous_strides(in.sizes) : in.strides;
      if (aoti_torch_create_tensor_from_blob(in.data, static_cast<int64_t>(in.sizes.size()), in.sizes.data(),
                                             strides.data(), 0, in.scalar_type, kDeviceCuda, device,
                                             &input_handles[i]) != kShimSuccess)
        return invalid(label + ": input " + std::to_string(i) + " cannot be viewed as a tensor" + kSeeAbove);
    }
    std::fill(output_handles.begin(), output_handles.end(), nullptr);
    auto entry = abi.run_single_threaded ? abi.run_single_threaded : abi.run;
    if (entry(container, input_handles.data(), input_handles.size(), output_handles.data(), output_handles.size(),
              run_stream, nullptr) != kAotiSuccess) {
      return invalid(label + ": the library failed to run" + kSeeAbove);
    }
    std::string failure;
    set_current_stream(device, run_stream);
    for (size_t i = 0; i < outputs.size() && failure.empty(); ++i) {
      const Tensor& produced = *tensor_of(output_handles[i]);
      const DeviceTensor& out = outputs[i];
      Tensor target;
      target.storage = std::make_shared<Storage>();
      target.storage->data = out.data;
      target.storage->device_type = kDeviceCuda;
      target.storage->device_index = device;
      target.storage->nbytes = UINT64_MAX;
      target.sizes = out.sizes;
      target.strides = out.strides.empty() ? contiguous_strides(out.sizes) : out.strides;
      target.dtype = out.scalar_type;
      std::string why = copy_elements(target, produced);
      if (!why.empty()) failure = label + ": output " + std::to_string(i) + ": " + why;
    }
    set_current_stream(device, nullptr);
    drop_outputs();
    if (!failure.empty()) return invalid(failure);
    return {};
  }
};

}  // namespace

Result<std::unique_ptr<detail::ModelBackend>> load_builtin_model(const LoadRequest& request) {
  int count = 0;
  cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) return invalid(request.label + ": no CUDA GPU: " + cuda_error(counted));
  if (request.device < 0 || request.device >= count) {
    return invalid(request.label + ": no CUDA device " + std::to_string(request.device) + " (the CUDA runtime sees " +
                   std::to_string(count) + ")");
  }
  cudaError_t code = cudaSetDevice(request.device);
  if (code != cudaSuccess) return invalid(request.label + ": cudaSetDevice: " + cuda_error(code));
  auto model = std::make_unique<BuiltinModel>();
  model->device = request.device;
  model->label = request.label;
  code = cudaStreamCreateWithFlags(&model->stream, cudaStreamNonBlocking);
  if (code != cudaSuccess) return invalid(request.label + ": cudaStreamCreate: " + cuda_error(code));
  if (request.weights && request.staged_upload && request.weights->total_bytes() >= detail::kStageWeightsAtLeast) {
    model->populating = populate_source(*request.weights);
    model->preparing = prepare_upload(*request.weights, request.device);
  }

  auto start = Clock::now();
  PTB_TRY(model->library, detail::LoadedLibrary::open(request.library, "model.so", request.library_origin));
  model->times.library_ms = ms_since(start);
  PTB_TRY(model->abi, AotiAbi::bind(model->library, request.library_origin));
  if (request.library_checks_inputs) setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", 1);

  PTB_TRY(detail::Container container, detail::create_container(model->abi, request.device, request.label));
  model->container = container.handle;
  model->times.create_ms = container.create_ms;
  model->inputs_named = std::move(container.inputs);
  model->outputs_named = std::move(container.outputs);
  model->input_handles.resize(model->inputs_named.size());
  model->output_handles.resize(model->outputs_named.size());

  const PartWeights* weights = request.weights;
  if (weights && weights->layout == WeightsLayout::Blob) PTB_CHECK(model->load_blob(*weights, request.staged_upload));
  if (weights && weights->layout == WeightsLayout::PerFqn)
    PTB_CHECK(model->load_per_fqn(*weights, request.staged_upload));
  PTB_CHECK(detail::check_constants_present(model->abi, model->container, request.label, weights));
  return std::unique_ptr<detail::ModelBackend>(std::move(model));
}

Result<double> builtin_pinned_upload(uint64_t bytes, int device, int repeats) {
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

}  // namespace ptb::shim

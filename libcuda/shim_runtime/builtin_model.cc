// One AOTInductor model container driven by the built-in runtime: the
// library is loaded, its container created and its weights bound through
// AOTInductor's C ABI (runner/aoti_abi.h), with every AtenTensorHandle a
// ptb::shim::Tensor and every GPU call the CUDA runtime linked into this
// module. The same steps as the LibTorch runner (runner/libtorch/
// aoti_model.cc), without LibTorch.
#include "builtin_model.h"

#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <unordered_map>

#include "aoti_shim.h"
#include "memcpy_route.h"
#include "ptbundle/formats/npy.h"
#include "runner/aoti_abi.h"
#include "runner/cuda_error.h"
#include "runner/loaded_library.h"
#include "tensor.h"

namespace ptb::shim {

using detail::AotiAbi;
using detail::ConstantEntry;
using detail::cuda_error;
using detail::kAotiSuccess;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSeeAbove = " (the library printed its reason on stderr)";
constexpr uint64_t kStageWeightsAtLeast = 16ull << 20;
constexpr uint64_t kWeightAlignment = 256;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string staging_text(const Stager& stager) {
  const StagingOptions& options = stager.options();
  std::string where = stager.cpus().empty() ? std::string()
                                            : " on the " + std::to_string(stager.cpus().size()) + " CPUs near the GPU";
  char busy[96];
  std::snprintf(busy, sizeof busy, "; %llu copies took %.2f ms", static_cast<unsigned long long>(stager.calls()),
                stager.busy_ms());
  return "staged through pinned buffers (" + std::to_string(options.threads) + " threads x " +
         std::to_string(options.buffers_per_thread) + " x " + std::to_string(options.chunk_bytes >> 20) + " MiB" +
         where + busy + ")";
}

void fault_in(Bytes bytes) {
  if (bytes.empty()) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data()) & ~(page - 1);
  const auto end = reinterpret_cast<uintptr_t>(bytes.data() + bytes.size());
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ);
}

struct DeviceMemory {
  void* data = nullptr;
  ~DeviceMemory() {
    if (data) cudaFree(data);
  }
};

struct Prepared {
  std::unique_ptr<Stager> stager;
  std::string no_stager;
};

std::future<Prepared> prepare_upload(const PartWeights& weights, int device) {
  return std::async(std::launch::async, [&weights, device] {
    Prepared prepared;
    cudaSetDevice(device);
    if (weights.layout == WeightsLayout::Blob) fault_in(weights.blob);
    for (const FqnWeightBytes& weight : weights.tensors) fault_in(weight.bytes);
    auto created = Stager::create(device, default_staging_options());
    if (created.ok()) prepared.stager = std::move(created).value();
    else prepared.no_stager = created.error().message;
    return prepared;
  });
}

struct ConstantInfo {
  std::string name;
  std::string fqn;
  int32_t dtype = -1;
  size_t data_size = 0;
  bool folded = false;
};

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
  AtenTensorHandle release() { return std::exchange(handle, nullptr); }
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
  int device = 0;
  cudaStream_t stream = nullptr;
  std::string label;
  std::vector<std::string> inputs_named;
  std::vector<std::string> outputs_named;
  LoadTimes times;
  std::vector<AtenTensorHandle> input_handles;
  std::vector<AtenTensorHandle> output_handles;

  ~BuiltinModel() override {
    if (preparing.valid()) preparing.wait();
    if (container) abi.destroy(container);
    bound_weights.clear();
    if (stream) cudaStreamDestroy(stream);
  }

  const std::vector<std::string>& input_names() const override { return inputs_named; }
  const std::vector<std::string>& output_names() const override { return outputs_named; }
  const LoadTimes& load_times() const override { return times; }

  Result<std::vector<ConstantInfo>> constants() const {
    std::vector<ConstantInfo> list;
    if (!abi.get_num_constants || !abi.get_constant_name) return list;
    size_t count = 0;
    if (abi.get_num_constants(container, &count) != kAotiSuccess) {
      return invalid(label + ": AOTInductorModelContainerGetNumConstants failed" + kSeeAbove);
    }
    for (size_t i = 0; i < count; ++i) {
      ConstantInfo info;
      const char* text = nullptr;
      if (abi.get_constant_name(container, i, &text) != kAotiSuccess || !text) {
        return invalid(label + ": AOTInductorModelContainerGetConstantName(" + std::to_string(i) + ") failed");
      }
      info.name = text;
      text = nullptr;
      if (abi.get_constant_original_fqn && abi.get_constant_original_fqn(container, i, &text) == kAotiSuccess && text)
        info.fqn = text;
      if (abi.get_constant_dtype) abi.get_constant_dtype(container, i, &info.dtype);
      if (abi.get_constant_data_size) abi.get_constant_data_size(container, i, &info.data_size);
      if (abi.get_constant_from_folded) abi.get_constant_from_folded(container, i, &info.folded);
      list.push_back(std::move(info));
    }
    return list;
  }

  Prepared take_prepared(bool allowed) {
    times.upload_method = "pageable cudaMemcpy";
    if (!allowed) {
      times.upload_method += " (staging turned off)";
      return {};
    }
    if (!preparing.valid()) return {};
    Prepared prepared = preparing.get();
    if (!prepared.stager) times.upload_method += " (staging unavailable: " + prepared.no_stager + ")";
    return prepared;
  }

  // AOTInductor's blob: the library allocates its constants (one cudaMalloc)
  // and copies each out of the blob with cudaMemcpy, which this runtime
  // provides (memcpy_route.h): large copies go through the Stager.
  Status load_blob(const PartWeights& weights, bool staged) {
    if (!abi.update_constants_from_blob) {
      return invalid(label + ": the library does not export AOTInductorModelUpdateConstantsFromBlob, so its "
                             "weights blob cannot be loaded");
    }
    PTB_TRY(auto list, constants());
    uint64_t needed = 0;
    for (const auto& constant : list)
      if (!constant.folded) needed += constant.data_size;
    if (needed > weights.blob.size()) {
      return invalid(weights.file + ": the weights blob '" + weights.blob_key + "' holds " +
                     std::to_string(weights.blob.size()) + " bytes; " + label + "'s library reads " +
                     std::to_string(needed) + " bytes of constants from it");
    }
    auto start = Clock::now();
    Prepared prepared = take_prepared(staged);
    Stager* stager = prepared.stager.get();
    std::optional<BlobCopyRoute> route;
    if (stager) {
      route.emplace(weights.blob.data(), weights.blob.size(),
                    [stager](void* device_ptr, const uint8_t* host, uint64_t bytes) -> std::string {
                      HostToDevice copy{Bytes(host, bytes), device_ptr};
                      Status done = stager->copy(std::span<const HostToDevice>(&copy, 1));
                      return done.ok() ? std::string() : done.error().message;
                    });
    }
    const int32_t code = abi.update_constants_from_blob(container, weights.blob.data());
    const uint64_t routed = route ? route->routed_bytes() : 0;
    const std::string failure = route ? route->failure() : std::string();
    route.reset();
    if (code != kAotiSuccess) {
      return invalid(label + ": AOTInductorModelUpdateConstantsFromBlob failed for " + weights.file + " '" +
                     weights.blob_key + "'" + (failure.empty() ? kSeeAbove : ": " + failure));
    }
    cudaError_t synced = cudaDeviceSynchronize();
    if (synced != cudaSuccess) return invalid(label + ": loading the weights: " + cuda_error(synced));
    times.weights_ms = ms_since(start);
    times.weight_bytes = needed ? needed : weights.blob.size();
    if (routed > 0) {
      times.upload_method = staging_text(*stager) + ", " + std::to_string(routed >> 20) + " of " +
                            std::to_string(times.weight_bytes >> 20) + " MiB";
    }
    return {};
  }

  // ExecuTorch's per-FQN weights: one allocation for all GPU weights, filled
  // by one staged upload, a view per weight bound as a user-managed constant.
  Status load_per_fqn(const PartWeights& weights, bool staged) {
    PTB_TRY(auto list, constants());
    std::unordered_map<std::string, std::vector<const ConstantInfo*>> by_fqn;
    for (const auto& constant : list)
      if (!constant.fqn.empty()) by_fqn[constant.fqn].push_back(&constant);
    if (by_fqn.empty() && !weights.tensors.empty()) {
      return invalid(label + ": the library names no constant by its FQN (AOTInductorModelContainerGet"
                             "ConstantOriginalFQN), so its per-FQN weights in " + weights.file + " cannot be bound");
    }
    std::unordered_map<std::string, bool> given;
    for (const auto& tensor : weights.tensors) given[tensor.meta.fqn] = true;
    for (const auto& constant : list) {
      if (!constant.folded && !constant.fqn.empty() && !given.count(constant.fqn)) {
        return invalid(weights.file + ": no weight for constant '" + constant.fqn + "' of " + label + "'s library");
      }
    }
    for (const FqnWeightBytes& weight : weights.tensors) {
      auto found = by_fqn.find(weight.meta.fqn);
      if (found == by_fqn.end()) {
        return invalid(weights.file + ": weight '" + weight.meta.fqn + "' (entry '" + weight.meta.storage_key +
                       "') is not a constant of " + label + "'s library");
      }
      const int32_t library_dtype = found->second.front()->dtype;
      if (library_dtype >= 0 && library_dtype != weight.meta.dtype) {
        return invalid(weights.file + ": weight '" + weight.meta.fqn + "' is " +
                       scalar_type_name(static_cast<int8_t>(weight.meta.dtype)) + "; the library expects " +
                       scalar_type_name(static_cast<int8_t>(library_dtype)));
      }
    }

    auto start = Clock::now();
    Prepared prepared = take_prepared(staged);
    std::vector<uint64_t> offsets(weights.tensors.size(), 0);
    uint64_t arena_bytes = 0, total = 0;
    for (size_t i = 0; i < weights.tensors.size(); ++i) {
      total += weights.tensors[i].bytes.size();
      if (weights.tensors[i].meta.device_type != 1) continue;
      offsets[i] = arena_bytes;
      arena_bytes += (weights.tensors[i].bytes.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
    }
    if (arena_bytes > 0) {
      cudaError_t code = cudaMalloc(&weight_arena.data, arena_bytes);
      if (code != cudaSuccess) {
        return invalid(label + ": allocating " + std::to_string(arena_bytes) + " bytes for the weights of " +
                       weights.file + ": " + cuda_error(code));
      }
    }
    auto* arena = static_cast<uint8_t*>(weight_arena.data);
    std::vector<HostToDevice> copies;
    for (size_t i = 0; i < weights.tensors.size(); ++i) {
      if (weights.tensors[i].meta.device_type == 1 && !weights.tensors[i].bytes.empty())
        copies.push_back({weights.tensors[i].bytes, arena + offsets[i]});
    }
    if (Stager* stager = prepared.stager.get()) {
      PTB_CHECK(stager->copy(copies));
      times.upload_method = staging_text(*stager);
    } else {
      for (const HostToDevice& copy : copies) {
        cudaError_t code =
            ptb_cudart_cudaMemcpy(copy.device, copy.source.data(), copy.source.size(), cudaMemcpyHostToDevice);
        if (code != cudaSuccess) return invalid(label + ": uploading the weights of " + weights.file + ": " + cuda_error(code));
      }
    }

    std::vector<ConstantEntry> pairs;
    std::unordered_map<std::string, AtenTensorHandle> map;
    for (size_t i = 0; i < weights.tensors.size(); ++i) {
      const FqnWeightBytes& weight = weights.tensors[i];
      const auto ndim = static_cast<int64_t>(weight.meta.sizes.size());
      AtenTensorHandle handle = nullptr;
      void* base = nullptr;
      int32_t device_type = kDeviceCuda;
      if (weight.meta.device_type == 1) {
        base = arena + offsets[i];
      } else {
        // Constants the library keeps on the CPU stay in host memory.
        cpu_weights.emplace_back(weight.bytes.begin(), weight.bytes.end());
        base = cpu_weights.back().data();
        device_type = kDeviceCpu;
      }
      if (aoti_torch_create_tensor_from_blob(base, ndim, weight.meta.sizes.data(), weight.meta.strides.data(),
                                             weight.meta.storage_offset, weight.meta.dtype, device_type, device,
                                             &handle) != kShimSuccess) {
        return invalid(weights.file + ": weight '" + weight.meta.fqn + "' cannot be viewed as a tensor" + kSeeAbove);
      }
      bound_weights.emplace_back(handle);
      for (const ConstantInfo* constant : by_fqn.find(weight.meta.fqn)->second) {
        pairs.push_back({constant->name.c_str(), handle});
        map[constant->name] = handle;
      }
    }
    int32_t code = 0;
    if (abi.update_user_managed_constant_buffer_pairs) {
      code = abi.update_user_managed_constant_buffer_pairs(container, pairs.data(), pairs.size(), false, true);
    } else if (abi.update_user_managed_constant_buffer) {
      code = abi.update_user_managed_constant_buffer(container, &map, false, true);
    } else {
      return invalid(label + ": the library exports no user-managed constant entry point "
                             "(AOTInductorModelContainerUpdateUserManagedConstantBuffer), so per-FQN weights cannot be bound");
    }
    if (code != kAotiSuccess) return invalid(label + ": binding the weights of " + weights.file + " failed" + kSeeAbove);
    cudaError_t synced = cudaDeviceSynchronize();
    if (synced != cudaSuccess) return invalid(label + ": uploading the weights: " + cuda_error(synced));
    times.weights_ms = ms_since(start);
    times.weight_bytes = total;
    return {};
  }

  Status check_constants_present(const PartWeights* weights) {
    if (!abi.extract_constants_map) return {};
    PTB_TRY(auto list, constants());
    std::unordered_map<std::string, AtenTensorHandle> present;
    if (abi.extract_constants_map(container, &present, false) != kAotiSuccess) return {};
    std::string missing;
    size_t count = 0;
    for (const auto& constant : list) {
      if (constant.folded || constant.data_size == 0) continue;
      const std::string& key = constant.fqn.empty() ? constant.name : constant.fqn;
      if (present.count(key)) continue;
      if (++count <= 3) missing += (missing.empty() ? "" : ", ") + key;
    }
    if (count == 0) return {};
    std::string from = weights && weights->layout != WeightsLayout::None
                           ? std::string(" after loading ") + weights->file
                           : std::string(" and the part has no weights");
    return invalid(label + ": " + std::to_string(count) + " constants of the library have no value" + from + " (" +
                   missing + (count > 3 ? ", ..." : "") + ")");
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
  if (request.weights && request.staged_upload && request.weights->total_bytes() >= kStageWeightsAtLeast)
    model->preparing = prepare_upload(*request.weights, request.device);

  auto start = Clock::now();
  PTB_TRY(model->library, detail::LoadedLibrary::open(request.library, "model.so", request.library_origin));
  model->times.library_ms = ms_since(start);
  PTB_TRY(model->abi, AotiAbi::bind(model->library, request.library_origin));
  if (request.library_checks_inputs) setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", 1);

  start = Clock::now();
  const std::string device = "cuda:" + std::to_string(request.device);
  detail::ContainerHandle container = nullptr;
  if (model->abi.create_with_device(&container, 1, device.c_str(), nullptr) != kAotiSuccess || !container) {
    return invalid(request.label + ": AOTInductorModelContainerCreateWithDevice(" + device + ") failed" + kSeeAbove);
  }
  model->container = container;
  model->times.create_ms = ms_since(start);

  size_t inputs = 0, outputs = 0;
  if (model->abi.get_num_inputs(container, &inputs) != kAotiSuccess ||
      model->abi.get_num_outputs(container, &outputs) != kAotiSuccess) {
    return invalid(request.label + ": the library does not say how many inputs and outputs it has" + kSeeAbove);
  }
  for (size_t i = 0; i < inputs; ++i) {
    const char* name = nullptr;
    if (model->abi.get_input_name) model->abi.get_input_name(container, i, &name);
    model->inputs_named.push_back(name ? name : "input " + std::to_string(i));
  }
  for (size_t i = 0; i < outputs; ++i) {
    const char* name = nullptr;
    if (model->abi.get_output_name) model->abi.get_output_name(container, i, &name);
    model->outputs_named.push_back(name ? name : "output " + std::to_string(i));
  }
  model->input_handles.resize(inputs);
  model->output_handles.resize(outputs);

  const PartWeights* weights = request.weights;
  if (weights && weights->layout == WeightsLayout::Blob) PTB_CHECK(model->load_blob(*weights, request.staged_upload));
  if (weights && weights->layout == WeightsLayout::PerFqn)
    PTB_CHECK(model->load_per_fqn(*weights, request.staged_upload));
  PTB_CHECK(model->check_constants_present(weights));
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

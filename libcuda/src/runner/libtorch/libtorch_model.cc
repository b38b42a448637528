// The LibTorch runner module (libptbundle_libtorch_runner.so, runtime_module.h):
// one AOTInductor model container on one GPU. LibTorch is used
// for what the container's C ABI expects from its host (at::Tensor behind
// every AtenTensorHandle, the CUDA caching allocator, the current stream);
// every exception LibTorch throws is turned into an Error here.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <unordered_map>

#include "ptbundle/cuda/runner.h"
#include "runner/aoti_abi.h"
#include "runner/libtorch/copy_redirect.h"
#include "runner/cuda_error.h"
#include "runtime_module.h"
#include "runner/loaded_library.h"
#include "runner/model_constants.h"

namespace ptb {

using detail::AotiAbi;
using detail::Clock;
using detail::kSeeAbove;
using detail::kStageWeightsAtLeast;
using detail::ms_since;
using detail::staging_text;
using detail::cuda_error;
using detail::kAotiSuccess;

namespace {

std::string first_line(const char* text) {
  std::string line(text);
  return line.substr(0, line.find('\n'));
}

// Runs `body`, turning LibTorch's exceptions into an error prefixed `what`.
template <class Body>
auto guarded(const std::string& what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const c10::Error& e) {
    return invalid(what + ": " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return invalid(what + ": " + first_line(e.what()));
  }
}

// In libtorch's shim an AtenTensorHandle is an at::Tensor* in disguise
// (torch/csrc/inductor/aoti_torch/utils.h); the runner hands the container
// tensors it allocates, and takes back the ones the container allocated.
AtenTensorHandle handle_of(at::Tensor* tensor) { return reinterpret_cast<AtenTensorHandle>(tensor); }
at::Tensor* tensor_of(AtenTensorHandle handle) { return reinterpret_cast<at::Tensor*>(handle); }

c10::DeviceIndex device_index(int device) { return static_cast<c10::DeviceIndex>(device); }

at::Tensor to_device(const HostTensor& host, int device) {
  std::vector<int64_t> sizes(host.shape.begin(), host.shape.end());
  auto options = at::TensorOptions().dtype(static_cast<c10::ScalarType>(host.scalar_type));
  // from_blob only reads here: the copy to the GPU is made before it returns.
  at::Tensor cpu = at::from_blob(const_cast<uint8_t*>(host.data.data()), sizes, options);
  return cpu.to(at::Device(at::kCUDA, device_index(device)));
}

HostTensor to_host(const at::Tensor& tensor) {
  at::Tensor cpu = tensor.to(at::kCPU).contiguous();
  HostTensor host;
  host.scalar_type = static_cast<int8_t>(cpu.scalar_type());
  for (int64_t size : cpu.sizes()) host.shape.push_back(static_cast<uint64_t>(size));
  const auto* bytes = static_cast<const uint8_t*>(cpu.data_ptr());
  host.data.assign(bytes, bytes + cpu.nbytes());
  return host;
}

at::Tensor allocate_arena(uint64_t bytes, int device) {
  return at::empty({static_cast<int64_t>(bytes)},
                   at::TensorOptions().dtype(at::kByte).device(at::Device(at::kCUDA, device_index(device))));
}

// What is made ready for the upload while the library loads.
struct Prepared {
  std::unique_ptr<Stager> stager;
  std::string no_stager;  // why there is none
  at::Tensor arena;       // per-FQN weights: their GPU memory
};

std::future<Prepared> prepare_upload(const PartWeights& weights, int device) {
  return std::async(std::launch::async, [&weights, device] {
    Prepared prepared;
    detail::fault_in(weights);
    auto created = Stager::create(device, default_staging_options());
    if (created.ok()) prepared.stager = std::move(created).value();
    else prepared.no_stager = created.error().message;
    if (weights.layout == WeightsLayout::PerFqn) {
      c10::cuda::CUDAGuard guard(device_index(device));
      prepared.arena = allocate_arena(detail::arena_layout(weights).bytes, device);
    }
    return prepared;
  });
}

}  // namespace

struct LibTorchModel {
  detail::LoadedLibrary library;  // declared first: closed last
  AotiAbi abi;
  detail::ContainerHandle container = nullptr;
  std::vector<std::unique_ptr<at::Tensor>> bound_weights;  // per-FQN weights the container points into
  // Pinning the staging buffers and faulting in the weights' pages, started
  // before the library is loaded so that both overlap its loading and the
  // container's creation (over 100 ms on the H200 machine).
  std::future<Prepared> preparing;
  int device = 0;
  std::string label;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  LoadTimes times;
  std::vector<AtenTensorHandle> input_handles;
  std::vector<AtenTensorHandle> output_handles;

  ~LibTorchModel() {
    if (container) abi.destroy(container);
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
    Prepared prepared = preparing.get();
    if (!prepared.stager) times.upload_method += " (" + prepared.no_stager + ")";
    return prepared;
  }

  Status load_blob(const PartWeights& weights, Bytes library_elf, bool staged) {
    if (!abi.update_constants_from_blob) {
      return invalid(label + ": the library does not export AOTInductorModelUpdateConstantsFromBlob, so it cannot "
                             "take the weights blob " + weights.blob_key + " of " + weights.file);
    }
    PTB_TRY(auto list, detail::list_constants(abi, container, label));
    PTB_TRY(const uint64_t needed, detail::blob_bytes_needed(weights, list, label));
    auto start = Clock::now();
    std::unique_ptr<Stager> stager = take_prepared(staged).stager;
    std::optional<detail::CopyRedirect> redirect;
    if (stager) {
      redirect.emplace(detail::CopyRedirect::install(library, library_elf, weights.blob, *stager, label));
      if (!redirect->active()) times.upload_method += " (" + redirect->why_not() + ")";
    }
    const int32_t code = abi.update_constants_from_blob(container, weights.blob.data());
    const uint64_t staged_bytes = redirect ? redirect->staged_bytes() : 0;
    const std::string staging_failure = redirect ? redirect->failure() : std::string();
    redirect.reset();  // the library's own cudaMemcpy back before anything else runs
    if (code != kAotiSuccess) {
      return invalid(label + ": AOTInductorModelUpdateConstantsFromBlob failed for " + weights.file + " '" +
                     weights.blob_key + "'" + (staging_failure.empty() ? kSeeAbove : ": " + staging_failure));
    }
    c10::cuda::device_synchronize();
    times.weights_ms = ms_since(start);
    times.weight_bytes = needed ? needed : weights.blob.size();
    if (staged_bytes > 0) {
      times.upload_method = staging_text(*stager) + ", " + std::to_string(staged_bytes >> 20) + " of " +
                            std::to_string(times.weight_bytes >> 20) + " MiB";
    }
    return {};
  }

  Status load_per_fqn(const PartWeights& weights, bool staged) {
    PTB_TRY(auto list, detail::list_constants(abi, container, label));
    PTB_TRY(const detail::ConstantsByFqn by_fqn, detail::match_per_fqn(weights, list, label));
    auto start = Clock::now();
    // The GPU weights share one allocation (made while the library loaded,
    // when staging), filled by one staged upload; each weight is a view into
    // it at an aligned offset.
    Prepared prepared = take_prepared(staged);
    const detail::ArenaLayout layout = detail::arena_layout(weights);
    const std::vector<uint64_t>& arena_offset = layout.offsets;
    const at::Device gpu(at::kCUDA, device_index(device));
    at::Tensor arena = prepared.arena.defined() ? prepared.arena : allocate_arena(layout.bytes, device);
    auto* arena_base = static_cast<uint8_t*>(arena.data_ptr());
    const std::vector<HostToDevice> copies = detail::arena_copies(weights, layout, arena_base);
    if (Stager* stager = prepared.stager.get()) {
      PTB_CHECK(stager->copy(copies));
      times.upload_method = staging_text(*stager);
    } else {
      for (const HostToDevice& copy : copies) {
        cudaError_t code = cudaMemcpy(copy.device, copy.source.data(), copy.source.size(), cudaMemcpyHostToDevice);
        if (code != cudaSuccess) return invalid(label + ": uploading the weights of " + weights.file + ": " + cuda_error(code));
      }
    }

    std::vector<AtenTensorHandle> handles;
    for (size_t i = 0; i < weights.tensors.size(); ++i) {
      const FqnWeightBytes& weight = weights.tensors[i];
      const auto dtype = static_cast<c10::ScalarType>(weight.meta.dtype);
      auto view = std::make_unique<at::Tensor>();
      if (weight.meta.device_type == 1) {
        const auto element = static_cast<int64_t>(c10::elementSize(dtype));
        *view = at::empty({0}, at::TensorOptions().dtype(dtype).device(gpu));
        view->set_(arena.storage(), static_cast<int64_t>(arena_offset[i]) / element + weight.meta.storage_offset,
                   weight.meta.sizes, weight.meta.strides);
      } else {
        // Constants the library keeps on the CPU stay in host memory.
        const auto length = static_cast<int64_t>(weight.bytes.size());
        at::Tensor storage = at::empty({length}, at::TensorOptions().dtype(at::kByte));
        if (length > 0) std::memcpy(storage.data_ptr(), weight.bytes.data(), weight.bytes.size());
        *view = at::empty({0}, at::TensorOptions().dtype(dtype));
        view->set_(storage.storage(), weight.meta.storage_offset, weight.meta.sizes, weight.meta.strides);
      }
      handles.push_back(handle_of(view.get()));
      bound_weights.push_back(std::move(view));
    }
    PTB_CHECK(detail::bind_per_fqn(abi, container, weights, by_fqn, handles, label));
    c10::cuda::device_synchronize();
    times.weights_ms = ms_since(start);
    times.weight_bytes = weights.total_bytes();
    return {};
  }

  Status check_input_count(size_t given) const {
    if (given == input_names.size()) return {};
    return invalid(label + ": " + std::to_string(given) + " inputs given; the library takes " +
                   std::to_string(input_names.size()));
  }

  // One call on tensors already on the GPU. Outputs come back as handles the
  // caller owns (output_handles).
  Status call(const std::vector<at::Tensor>& inputs, cudaStream_t stream) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      // The container steals the handles it is given: each call gets new ones.
      input_handles[i] = handle_of(new at::Tensor(inputs[i]));
    }
    std::fill(output_handles.begin(), output_handles.end(), nullptr);
    auto entry = abi.run_single_threaded ? abi.run_single_threaded : abi.run;
    if (entry(container, input_handles.data(), input_handles.size(), output_handles.data(), output_handles.size(),
              reinterpret_cast<void*>(stream), nullptr) != kAotiSuccess) {
      return invalid(label + ": the library failed to run" + kSeeAbove);
    }
    return {};
  }

  void drop_outputs() {
    for (AtenTensorHandle& handle : output_handles) {
      if (handle) aoti_torch_delete_tensor_object(handle);
      handle = nullptr;
    }
  }
};

Result<std::unique_ptr<LibTorchModel>> load_model(const LoadRequest& request) {
  return guarded(request.label, [&]() -> Result<std::unique_ptr<LibTorchModel>> {
    const int count = c10::cuda::device_count();
    if (request.device < 0 || request.device >= count) {
      return invalid(request.label + ": no CUDA device " + std::to_string(request.device) + " (LibTorch sees " +
                     std::to_string(count) + ")");
    }
    const std::string libtorch_missing = detail::make_libtorch_global();
    c10::cuda::CUDAGuard guard(device_index(request.device));
    auto state = std::make_unique<LibTorchModel>();
    state->device = request.device;
    state->label = request.label;
    if (request.weights && request.staged_upload && request.weights->total_bytes() >= kStageWeightsAtLeast)
      state->preparing = prepare_upload(*request.weights, request.device);

    auto start = Clock::now();
    auto library = detail::LoadedLibrary::open(request.library, "model.so", request.library_origin);
    if (!library.ok()) {
      Error error = library.take_error();
      if (!libtorch_missing.empty()) error.message += " (LibTorch's libraries could not be loaded: " + libtorch_missing + ")";
      return error;
    }
    state->library = std::move(library).value();
    state->times.library_ms = ms_since(start);
    PTB_TRY(state->abi, AotiAbi::bind(state->library, request.library_origin));
    if (request.library_checks_inputs) setenv("AOTI_RUNTIME_CHECK_INPUTS", "1", 1);

    PTB_TRY(detail::Container container, detail::create_container(state->abi, request.device, request.label));
    state->container = container.handle;
    state->times.create_ms = container.create_ms;
    state->input_names = std::move(container.inputs);
    state->output_names = std::move(container.outputs);
    state->input_handles.resize(state->input_names.size());
    state->output_handles.resize(state->output_names.size());

    const PartWeights* weights = request.weights;
    if (weights && weights->layout == WeightsLayout::Blob)
      PTB_CHECK(state->load_blob(*weights, request.library, request.staged_upload));
    if (weights && weights->layout == WeightsLayout::PerFqn)
      PTB_CHECK(state->load_per_fqn(*weights, request.staged_upload));
    PTB_CHECK(detail::check_constants_present(state->abi, state->container, request.label, weights));

    return state;
  });
}

Result<std::vector<HostTensor>> run_model(LibTorchModel& state, const std::vector<HostTensor>& inputs) {
  return guarded(state.label, [&]() -> Result<std::vector<HostTensor>> {
    PTB_CHECK(state.check_input_count(inputs.size()));
    c10::cuda::CUDAGuard guard(device_index(state.device));
    std::vector<at::Tensor> device_inputs;
    for (const HostTensor& input : inputs) device_inputs.push_back(to_device(input, state.device));
    c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_index(state.device));
    PTB_CHECK(state.call(device_inputs, stream.stream()));
    std::vector<at::Tensor> outputs;
    for (AtenTensorHandle& handle : state.output_handles) {
      if (!handle) return invalid(state.label + ": the library returned no tensor for an output");
      outputs.push_back(*tensor_of(handle));
    }
    state.drop_outputs();
    stream.synchronize();
    std::vector<HostTensor> host;
    for (const at::Tensor& output : outputs) host.push_back(to_host(output));
    return host;
  });
}

Result<std::vector<double>> time_model(LibTorchModel& state, const std::vector<HostTensor>& inputs, int warmup,
                                       int iterations) {
  return guarded(state.label, [&]() -> Result<std::vector<double>> {
    if (warmup < 0 || iterations < 0) return usage_error("--warmup and --iterations must be 0 or more");
    PTB_CHECK(state.check_input_count(inputs.size()));
    c10::cuda::CUDAGuard guard(device_index(state.device));
    std::vector<at::Tensor> device_inputs;
    for (const HostTensor& input : inputs) device_inputs.push_back(to_device(input, state.device));
    c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_index(state.device));
    for (int i = 0; i < warmup; ++i) {
      PTB_CHECK(state.call(device_inputs, stream.stream()));
      state.drop_outputs();
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
      if (code != cudaSuccess) return invalid(state.label + ": cudaEventCreate: " + cuda_error(code));
    }
    for (int i = 0; i < iterations; ++i) {
      cudaEventRecord(events[2 * i], stream.stream());
      PTB_CHECK(state.call(device_inputs, stream.stream()));
      cudaEventRecord(events[2 * i + 1], stream.stream());
      state.drop_outputs();
    }
    cudaError_t code = cudaStreamSynchronize(stream.stream());
    if (code != cudaSuccess) return invalid(state.label + ": the timed calls failed on the GPU: " + cuda_error(code));
    std::vector<double> times;
    for (int i = 0; i < iterations; ++i) {
      float ms = 0;
      code = cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]);
      if (code != cudaSuccess) return invalid(state.label + ": cudaEventElapsedTime: " + cuda_error(code));
      times.push_back(ms);
    }
    return times;
  });
}

Result<double> libtorch_pinned_upload(uint64_t bytes, int device, int repeats) {
  return guarded("pinned upload", [&]() -> Result<double> {
    c10::cuda::CUDAGuard guard(device_index(device));
    const auto length = static_cast<int64_t>(bytes);
    at::Tensor host = at::empty({length}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    host.fill_(1);
    at::Tensor target = at::empty({length}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device_index(device)));
    c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device_index(device));
    cudaEvent_t start = nullptr, end = nullptr;
    cudaEventCreate(&start);
    cudaEventCreate(&end);
    double best = 0;
    for (int i = 0; i < repeats; ++i) {
      cudaEventRecord(start, stream.stream());
      cudaMemcpyAsync(target.data_ptr(), host.data_ptr(), bytes, cudaMemcpyHostToDevice, stream.stream());
      cudaEventRecord(end, stream.stream());
      cudaError_t code = cudaEventSynchronize(end);
      float ms = 0;
      if (code == cudaSuccess) code = cudaEventElapsedTime(&ms, start, end);
      if (code != cudaSuccess) {
        cudaEventDestroy(start);
        cudaEventDestroy(end);
        return invalid("pinned upload: " + cuda_error(code));
      }
      if (ms > 0) best = std::max(best, static_cast<double>(bytes) / (ms / 1000.0) / 1e9);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    return best;
  });
}

namespace {

// Device buffers a robot program owns, viewed as at::Tensors for one call.
at::Tensor view_of(const DeviceTensor& buffer, int device) {
  std::vector<int64_t> strides = buffer.strides;
  if (strides.empty()) {
    strides.assign(buffer.sizes.size(), 1);
    for (size_t i = buffer.sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(buffer.sizes[i], 1);
  }
  return at::from_blob(buffer.data, buffer.sizes, strides,
                       at::TensorOptions()
                           .dtype(static_cast<c10::ScalarType>(buffer.scalar_type))
                           .device(at::Device(at::kCUDA, device_index(device))));
}

class LibTorchBackend final : public detail::ModelBackend {
 public:
  explicit LibTorchBackend(std::unique_ptr<LibTorchModel> model) : model_(std::move(model)) {}
  const std::vector<std::string>& input_names() const override { return model_->input_names; }
  const std::vector<std::string>& output_names() const override { return model_->output_names; }
  const LoadTimes& load_times() const override { return model_->times; }
  Result<std::vector<HostTensor>> run(const std::vector<HostTensor>& inputs) override {
    return run_model(*model_, inputs);
  }
  Result<std::vector<double>> time_calls(const std::vector<HostTensor>& inputs, int warmup, int iterations) override {
    return time_model(*model_, inputs, warmup, iterations);
  }
  Status run_on_device(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                       void* stream) override {
    LibTorchModel& state = *model_;
    return guarded(state.label, [&]() -> Status {
      PTB_CHECK(state.check_input_count(inputs.size()));
      if (outputs.size() != state.output_names.size()) {
        return invalid(state.label + ": " + std::to_string(outputs.size()) + " output buffers given; the library has " +
                       std::to_string(state.output_names.size()) + " outputs");
      }
      c10::cuda::CUDAGuard guard(device_index(state.device));
      std::vector<at::Tensor> device_inputs;
      for (const DeviceTensor& input : inputs) device_inputs.push_back(view_of(input, state.device));
      cudaStream_t run_stream = stream ? static_cast<cudaStream_t>(stream)
                                       : c10::cuda::getCurrentCUDAStream(device_index(state.device)).stream();
      PTB_CHECK(state.call(device_inputs, run_stream));
      c10::cuda::CUDAStreamGuard stream_guard(
          c10::cuda::getStreamFromExternal(run_stream, device_index(state.device)));
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (!state.output_handles[i]) return invalid(state.label + ": the library returned no tensor for an output");
        view_of(outputs[i], state.device).copy_(*tensor_of(state.output_handles[i]), true);
      }
      state.drop_outputs();
      return Status{};
    });
  }

 private:
  std::unique_ptr<LibTorchModel> model_;
};

Result<std::unique_ptr<detail::ModelBackend>> load_backend(const LoadRequest& request) {
  PTB_TRY(auto model, load_model(request));
  return std::unique_ptr<detail::ModelBackend>(std::make_unique<LibTorchBackend>(std::move(model)));
}

std::string describe() { return std::string("LibTorch ") + PTB_LIBTORCH_VERSION; }

const detail::RuntimeModule module_table = [] {
  detail::RuntimeModule table;
  table.describe = describe;
  table.load = load_backend;
  table.pinned_upload_gb_per_second = libtorch_pinned_upload;
  return table;
}();

}  // namespace

}  // namespace ptb

extern "C" __attribute__((visibility("default"))) const ptb::detail::RuntimeModule* ptbundle_runtime_module() {
  return &ptb::module_table;
}

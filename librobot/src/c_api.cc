// ptbundle.h: the C interface over ptb::robot. Nothing thrown or aborted
// crosses it: every argument is checked, every exception (allocation) is
// caught and becomes an error.
#include "ptbundle/ptbundle.h"

#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ptbundle/formats/json.h"
#include "ptbundle/robot.h"

struct ptb_options {
  ptb::robot::Options options;
};

struct ptb_model {
  ptb::robot::Model model;
};

namespace {

using ptb::robot::DType;

thread_local std::string last_error;

ptb_status fail(const ptb::Error& error) {
  last_error = error.message;
  return static_cast<ptb_status>(error.kind);
}

ptb_status misuse(const std::string& message) { return fail(ptb::usage_error(message)); }

template <class F>
ptb_status guarded(F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(ptb::io_error(std::string("out of memory or internal error: ") + e.what()));
  } catch (...) {
    return fail(ptb::io_error("internal error"));
  }
}

std::optional<bool> parse_bool(const std::string& value) {
  if (value == "true" || value == "1") return true;
  if (value == "false" || value == "0") return false;
  return std::nullopt;
}

// DLPack's type codes (kDLBool is 6 in DLPack 0.8 and later; 0.6 gives
// bool as an 8-bit uint from some producers, which is taken as uint8).
std::optional<DType> dtype_of(DLDataType type) {
  if (type.lanes != 1) return std::nullopt;
  switch (type.code) {
    case kDLFloat:
      if (type.bits == 16) return DType::Float16;
      if (type.bits == 32) return DType::Float32;
      if (type.bits == 64) return DType::Float64;
      return std::nullopt;
    case kDLBfloat:
      if (type.bits == 16) return DType::BFloat16;
      return std::nullopt;
    case kDLInt:
      if (type.bits == 8) return DType::Int8;
      if (type.bits == 16) return DType::Int16;
      if (type.bits == 32) return DType::Int32;
      if (type.bits == 64) return DType::Int64;
      return std::nullopt;
    case kDLUInt:
      if (type.bits == 8) return DType::UInt8;
      if (type.bits == 16) return DType::UInt16;
      if (type.bits == 32) return DType::UInt32;
      if (type.bits == 64) return DType::UInt64;
      return std::nullopt;
    case 6:  // kDLBool
      if (type.bits == 8) return DType::Bool;
      return std::nullopt;
  }
  return std::nullopt;
}

ptb::Result<ptb::robot::TensorView> view_of(const DLTensor& tensor, const std::string& what) {
  ptb::robot::TensorView view;
  auto dtype = dtype_of(tensor.dtype);
  if (!dtype) {
    return ptb::usage_error(what + ": DLPack dtype code " + std::to_string(tensor.dtype.code) + ", " +
                            std::to_string(tensor.dtype.bits) + " bits, " + std::to_string(tensor.dtype.lanes) +
                            " lanes; expected one of ptbundle's dtypes");
  }
  view.dtype = *dtype;
  if (tensor.device.device_type == kDLCPU || tensor.device.device_type == kDLCUDAHost) {
    view.memory = ptb::robot::Memory::Host;
  } else if (tensor.device.device_type == kDLCUDA) {
    view.memory = ptb::robot::Memory::Device;
    view.device = tensor.device.device_id;
  } else {
    return ptb::usage_error(what + ": DLPack device type " + std::to_string(tensor.device.device_type) +
                            "; expected host memory (kDLCPU) or a CUDA GPU (kDLCUDA)");
  }
  if (tensor.ndim < 0 || tensor.ndim > 64 || (tensor.ndim > 0 && !tensor.shape)) {
    return ptb::usage_error(what + ": ndim " + std::to_string(tensor.ndim) + " with " +
                            (tensor.shape ? "a" : "no") + " shape; expected 0 to 64 dimensions");
  }
  view.shape.assign(tensor.shape, tensor.shape + tensor.ndim);
  if (tensor.strides) view.strides.assign(tensor.strides, tensor.strides + tensor.ndim);
  view.data = tensor.data ? static_cast<uint8_t*>(tensor.data) + tensor.byte_offset : nullptr;
  return view;
}

ptb::Json tensor_json(const ptb::robot::TensorInfo& info) {
  ptb::Json dynamic = ptb::Json::array();
  for (const auto& d : info.dynamic) dynamic.push_back({{"dim", d.dim}, {"min", d.min}, {"max", d.max}});
  return {{"name", info.name},
          {"known", info.known},
          {"dtype", info.known ? ptb::Json(ptb::robot::dtype_name(info.dtype)) : ptb::Json(nullptr)},
          {"shape", info.shape},
          {"dynamic", dynamic}};
}

ptb::Json tensors_json(const std::vector<ptb::robot::TensorInfo>& infos) {
  ptb::Json array = ptb::Json::array();
  for (const auto& info : infos) array.push_back(tensor_json(info));
  return array;
}

ptb::Json signature_json(const ptb::robot::SignatureInfo& signature) {
  auto text = [](const std::string& s) { return s.empty() ? ptb::Json(nullptr) : ptb::Json(s); };
  return {{"state", ptb::robot::signature_state_name(signature.state)},
          {"file", text(signature.file)},
          {"key_fingerprint", text(signature.key_fingerprint)},
          {"key", text(signature.key)}};
}

ptb_status give_json(const ptb::Json& json, char** out) {
  const std::string text = json.dump(2, ' ', false, ptb::Json::error_handler_t::replace);
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (!copy) return fail(ptb::io_error("out of memory"));
  std::memcpy(copy, text.c_str(), text.size() + 1);
  *out = copy;
  return PTB_OK;
}

}  // namespace

extern "C" {

int ptb_abi_version(void) { return PTB_ABI_VERSION; }

const char* ptb_last_error(void) { return last_error.c_str(); }

ptb_options* ptb_options_new(void) {
  try {
    return new ptb_options;
  } catch (...) {
    last_error = "out of memory";
    return nullptr;
  }
}

void ptb_options_free(ptb_options* options) { delete options; }

ptb_status ptb_options_set(ptb_options* options, const char* name, const char* value) {
  return guarded([&]() -> ptb_status {
    if (!options || !name || !value) return misuse("ptb_options_set: a NULL argument");
    const std::string key = name, text = value;
    ptb::robot::Options& o = options->options;
    if (key == "part") o.part = text;
    else if (key == "method") o.method = text;
    else if (key == "device" || key == "seed") {
      char* end = nullptr;
      errno = 0;
      const unsigned long long number = std::strtoull(text.c_str(), &end, 10);
      if (text.empty() || *end || errno || text[0] == '-' || (key == "device" && number > 1024))
        return misuse("option " + key + ": '" + text + "'; expected a decimal number");
      if (key == "device") o.device = static_cast<int>(number);
      else o.seed = number;
    } else if (key == "runtime") {
      if (text == "auto") o.runtime = ptb::robot::Runtime::Auto;
      else if (text == "builtin") o.runtime = ptb::robot::Runtime::Builtin;
      else if (text == "libtorch") o.runtime = ptb::robot::Runtime::LibTorch;
      else return misuse("option runtime: '" + text + "'; expected auto, builtin or libtorch");
    } else {
      bool* flag = key == "verify"              ? &o.verify
                   : key == "require_signature" ? &o.require_signature
                   : key == "staged_upload"     ? &o.staged_upload
                   : key == "cuda_graphs"       ? &o.cuda_graphs
                   : key == "use_tune_file"     ? &o.use_tune_file
                                                : nullptr;
      if (!flag) {
        return misuse("no option '" + key + "'; expected part, method, device, runtime, verify, require_signature, "
                      "staged_upload, cuda_graphs, use_tune_file or seed");
      }
      auto parsed = parse_bool(text);
      if (!parsed) return misuse("option " + key + ": '" + text + "'; expected true or false");
      *flag = *parsed;
    }
    return PTB_OK;
  });
}

ptb_status ptb_options_add_key(ptb_options* options, const char* key) {
  return guarded([&]() -> ptb_status {
    if (!options || !key) return misuse("ptb_options_add_key: a NULL argument");
    options->options.keys.emplace_back(key);
    return PTB_OK;
  });
}

ptb_status ptb_model_open(const char* bundle, const ptb_options* options, ptb_model** model) {
  return guarded([&]() -> ptb_status {
    if (!bundle || !model) return misuse("ptb_model_open: a NULL bundle path or result pointer");
    *model = nullptr;
    auto opened = ptb::robot::Model::open(bundle, options ? options->options : ptb::robot::Options{});
    if (!opened.ok()) return fail(opened.error());
    *model = new ptb_model{std::move(*opened)};
    return PTB_OK;
  });
}

void ptb_model_free(ptb_model* model) { delete model; }

size_t ptb_model_num_inputs(const ptb_model* model) { return model ? model->model.info().inputs.size() : 0; }
size_t ptb_model_num_outputs(const ptb_model* model) { return model ? model->model.info().outputs.size() : 0; }

ptb_status ptb_model_describe(const ptb_model* model, char** json) {
  return guarded([&]() -> ptb_status {
    if (!model || !json) return misuse("ptb_model_describe: a NULL model or result pointer");
    const ptb::robot::LoadInfo& info = model->model.info();
    const ptb::robot::Verification& verification = model->model.verification();
    ptb::Json out = {
        {"part", info.part},
        {"source", info.source},
        {"method", info.method},
        {"variant", info.variant},
        {"gpu", {{"index", info.gpu.index}, {"name", info.gpu.name}, {"sm", info.gpu.sm}, {"memory_bytes", info.gpu.memory_bytes}}},
        {"runtime", info.runtime},
        {"signature", signature_json(info.signature)},
        {"verification",
         {{"ran", verification.ran}, {"passed", verification.passed}, {"failed", verification.failed}, {"skipped", verification.skipped}}},
        {"load_ms",
         {{"check", info.check_ms}, {"read", info.read_ms}, {"library", info.library_ms}, {"create", info.create_ms},
          {"weights", info.weights_ms}, {"testcase", info.testcase_ms}, {"total", info.total_ms}}},
        {"inputs", tensors_json(info.inputs)},
        {"outputs", tensors_json(info.outputs)},
        {"tune", {{"file", info.tune_file}, {"choices", info.tuned_choices}, {"warning", info.tune_warning}}}};
    return give_json(out, json);
  });
}

ptb_status ptb_bundle_describe(const char* bundle, const ptb_options* options, char** json) {
  return guarded([&]() -> ptb_status {
    if (!bundle || !json) return misuse("ptb_bundle_describe: a NULL bundle path or result pointer");
    auto opened = ptb::robot::Bundle::open(bundle, options ? options->options : ptb::robot::Options{});
    if (!opened.ok()) return fail(opened.error());
    ptb::Json parts = ptb::Json::array();
    for (const ptb::robot::PartInfo& part : opened->parts()) {
      ptb::Json methods = ptb::Json::array();
      for (const ptb::robot::MethodInfo& method : part.methods)
        methods.push_back({{"name", method.name}, {"inputs", tensors_json(method.inputs)}, {"outputs", tensors_json(method.outputs)}});
      parts.push_back({{"name", part.name},
                       {"source", part.source},
                       {"gpu_targets", part.gpu_targets},
                       {"has_testcase", part.has_testcase},
                       {"methods", methods}});
    }
    ptb::Json out = {{"path", opened->path()}, {"signature", signature_json(opened->signature())}, {"parts", parts}};
    return give_json(out, json);
  });
}

void ptb_string_free(char* text) { std::free(text); }

ptb_status ptb_model_run(ptb_model* model, const DLTensor* inputs, size_t num_inputs, const DLTensor* outputs,
                         size_t num_outputs, void* stream) {
  return guarded([&]() -> ptb_status {
    if (!model) return misuse("ptb_model_run: a NULL model");
    if ((num_inputs && !inputs) || (num_outputs && !outputs))
      return misuse("ptb_model_run: NULL tensors with a count above 0");
    std::vector<ptb::robot::TensorView> in, out;
    for (size_t i = 0; i < num_inputs; ++i) {
      auto view = view_of(inputs[i], "input " + std::to_string(i));
      if (!view.ok()) return fail(view.error());
      in.push_back(std::move(*view));
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      auto view = view_of(outputs[i], "output " + std::to_string(i));
      if (!view.ok()) return fail(view.error());
      out.push_back(std::move(*view));
    }
    ptb::Status status = model->model.run(in, out, stream);
    if (!status.ok()) return fail(status.error());
    return PTB_OK;
  });
}

ptb_status ptb_model_run_timed(ptb_model* model, const DLTensor* inputs, size_t num_inputs, const DLTensor* outputs,
                               size_t num_outputs, void* stream, int iterations, double* seconds) {
  if (iterations < 1 || !seconds) return misuse("ptb_model_run_timed: iterations below 1 or a NULL result pointer");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    const ptb_status status = ptb_model_run(model, inputs, num_inputs, outputs, num_outputs, stream);
    if (status != PTB_OK) return status;
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iterations;
  return PTB_OK;
}

}  // extern "C"

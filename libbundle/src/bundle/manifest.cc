#include "ptbundle/bundle/manifest.h"
#include "ptbundle/bundle/manifest_json.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <set>

#include "ptbundle/base/file.h"
#include "ptbundle/bundle/names.h"
#include "ptbundle/formats/pte.h"

namespace ptb {
namespace {

// A string from the file inside a message.
std::string q(std::string_view text) { return "\"" + clipped(text) + "\""; }

// Reads one JSON document with every error naming the file and the JSON
// path ("bundle.json: parts[0].files[1].sha256: ...").
class JsonReader {
 public:
  explicit JsonReader(std::string name) : name_(std::move(name)) {}

  Error error(const std::string& path, const std::string& what) const {
    return invalid(name_ + ": " + path + ": " + what);
  }

  Status expect_object(const Json& value, const std::string& path, std::initializer_list<const char*> keys) const {
    if (!value.is_object()) return error(path, "is " + type_of(value) + "; expected an object");
    for (const auto& item : value.items()) {
      const std::string& key = item.key();
      bool known = std::any_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; });
      if (!known) return error(path, "has the unknown key " + q(key));
    }
    return {};
  }

  Result<const Json*> member(const Json& object, const std::string& path, const char* key) const {
    auto it = object.find(key);
    if (it == object.end()) return error(path, std::string("lacks the key \"") + key + "\"");
    return &*it;
  }

  Result<std::string> string(const Json& object, const std::string& path, const char* key) const {
    PTB_TRY(const Json* value, member(object, path, key));
    if (!value->is_string()) return error(path + "." + key, "is " + type_of(*value) + "; expected a string");
    return value->get<std::string>();
  }

  Result<std::optional<std::string>> optional_string(const Json& object, const std::string& path,
                                                     const char* key) const {
    PTB_TRY(const Json* value, member(object, path, key));
    if (value->is_null()) return std::optional<std::string>();
    if (!value->is_string()) return error(path + "." + key, "is " + type_of(*value) + "; expected a string or null");
    return std::optional<std::string>(value->get<std::string>());
  }

  Result<uint64_t> unsigned_number(const Json& object, const std::string& path, const char* key,
                                   uint64_t max = UINT64_MAX) const {
    PTB_TRY(const Json* value, member(object, path, key));
    if (!value->is_number_unsigned() && !(value->is_number_integer() && value->get<int64_t>() >= 0))
      return error(path + "." + key, "is " + type_of(*value) + "; expected an integer >= 0");
    auto number = value->get<uint64_t>();
    if (number > max) return error(path + "." + key, std::to_string(number) + " is too large; expected at most " + std::to_string(max));
    return number;
  }

  Result<double> tolerance(const Json& object, const std::string& path, const char* key) const {
    PTB_TRY(const Json* value, member(object, path, key));
    if (!value->is_number()) return error(path + "." + key, "is " + type_of(*value) + "; expected a number");
    double number = value->get<double>();
    if (!std::isfinite(number) || number < 0)
      return error(path + "." + key, (number < 0 ? "is negative" : "is not finite") + std::string("; expected a finite number >= 0"));
    return number;
  }

  Result<const Json*> array(const Json& object, const std::string& path, const char* key) const {
    PTB_TRY(const Json* value, member(object, path, key));
    if (!value->is_array()) return error(path + "." + key, "is " + type_of(*value) + "; expected an array");
    return value;
  }

  const std::string& name() const { return name_; }

 private:
  static std::string type_of(const Json& value) { return json_kind(value); }
  std::string name_;
};

bool is_sha256_hex(const std::string& text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// 2026-05-01T12:34:56Z
bool is_utc_timestamp(const std::string& text) {
  static const char* kPattern = "dddd-dd-ddTdd:dd:ddZ";
  if (text.size() != 20) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char p = kPattern[i];
    if (p == 'd' ? !(text[i] >= '0' && text[i] <= '9') : text[i] != p) return false;
  }
  return true;
}

Json optional_json(const std::optional<std::string>& value) { return value ? Json(*value) : Json(nullptr); }

Json value_json(const ManifestValue& value) {
  Json out;
  out["kind"] = value.kind;
  if (value.kind == "tensor") {
    out["dtype"] = value.dtype;
    out["shape"] = value.shape;
    out["dynamism"] = value.dynamism;
  }
  return out;
}

}  // namespace

void to_json(Json& json, const ManifestFile& file) {
  json = {{"role", file_role_name(file.role)}, {"path", file.path}, {"size", file.size}, {"sha256", file.sha256}};
  if (file.target) json["target"] = *file.target;
}

namespace {

Result<ManifestValue> read_value(const JsonReader& r, const Json& json, const std::string& path) {
  PTB_CHECK(r.expect_object(json, path, {"kind", "dtype", "shape", "dynamism"}));
  ManifestValue value;
  PTB_TRY(value.kind, r.string(json, path, "kind"));
  if (value.kind.empty()) return r.error(path + ".kind", "is empty; expected \"tensor\" or a value kind");
  if (value.kind != "tensor") {
    if (json.size() != 1) return r.error(path, "has tensor fields for a value of kind " + q(value.kind));
    return value;
  }
  PTB_TRY(value.dtype, r.string(json, path, "dtype"));
  if (!scalar_type_from_name(value.dtype))
    return r.error(path + ".dtype", q(value.dtype) + " is not a dtype ptbundle knows; expected e.g. \"float32\"");
  PTB_TRY(const Json* shape, r.array(json, path, "shape"));
  for (size_t i = 0; i < shape->size(); ++i) {
    const Json& size = (*shape)[i];
    if (!size.is_number_integer() || size.get<int64_t>() < 0)
      return r.error(path + ".shape[" + std::to_string(i) + "]", "expected an integer >= 0");
    value.shape.push_back(size.get<int64_t>());
  }
  PTB_TRY(value.dynamism, r.string(json, path, "dynamism"));
  if (value.dynamism != "static" && value.dynamism != "dynamic_bound" && value.dynamism != "dynamic_unbound")
    return r.error(path + ".dynamism", "is " + q(value.dynamism) + "; expected static, dynamic_bound or dynamic_unbound");
  return value;
}

Result<std::vector<ManifestValue>> read_values(const JsonReader& r, const Json& json, const std::string& path,
                                               const char* key) {
  PTB_TRY(const Json* list, r.array(json, path, key));
  std::vector<ManifestValue> values;
  for (size_t i = 0; i < list->size(); ++i) {
    PTB_TRY(auto value, read_value(r, (*list)[i], path + "." + key + "[" + std::to_string(i) + "]"));
    values.push_back(std::move(value));
  }
  return values;
}

Result<ManifestMethod> read_method(const JsonReader& r, const Json& json, const std::string& path) {
  PTB_CHECK(r.expect_object(json, path, {"name", "inputs", "outputs", "delegates"}));
  ManifestMethod method;
  PTB_TRY(method.name, r.string(json, path, "name"));
  if (method.name.empty()) return r.error(path + ".name", "is empty; expected a method name");
  PTB_TRY(method.inputs, read_values(r, json, path, "inputs"));
  PTB_TRY(method.outputs, read_values(r, json, path, "outputs"));
  PTB_TRY(const Json* delegates, r.array(json, path, "delegates"));
  for (size_t i = 0; i < delegates->size(); ++i) {
    std::string at = path + ".delegates[" + std::to_string(i) + "]";
    const Json& d = (*delegates)[i];
    PTB_CHECK(r.expect_object(d, at, {"id", "data_name"}));
    ManifestDelegate delegate;
    PTB_TRY(delegate.id, r.string(d, at, "id"));
    PTB_TRY(delegate.data_name, r.optional_string(d, at, "data_name"));
    if (delegate.data_name) PTB_CHECK(check_part_name(*delegate.data_name, r.name() + ": " + at + ".data_name"));
    method.delegates.push_back(std::move(delegate));
  }
  return method;
}

Result<CudaInfo> read_cuda(const JsonReader& r, const Json& json, const std::string& path) {
  PTB_CHECK(r.expect_object(json, path, {"kernel_targets", "built_on", "weights", "constants", "runtime"}));
  CudaInfo cuda;
  PTB_TRY(const Json* targets, r.array(json, path, "kernel_targets"));
  for (size_t i = 0; i < targets->size(); ++i) {
    std::string at = path + ".kernel_targets[" + std::to_string(i) + "]";
    const Json& t = (*targets)[i];
    PTB_CHECK(r.expect_object(t, at, {"target", "sm", "kind"}));
    KernelTarget target;
    PTB_TRY(target.target, r.string(t, at, "target"));
    PTB_TRY(auto sm, r.unsigned_number(t, at, "sm", 10000));
    target.sm = static_cast<uint32_t>(sm);
    PTB_TRY(target.kind, r.string(t, at, "kind"));
    if (target.kind != "cubin" && target.kind != "ptx")
      return r.error(at + ".kind", "is " + q(target.kind) + "; expected \"cubin\" or \"ptx\"");
    cuda.kernel_targets.push_back(std::move(target));
  }
  PTB_TRY(const Json* built_on, r.member(json, path, "built_on"));
  if (!built_on->is_null()) {
    std::string at = path + ".built_on";
    PTB_CHECK(r.expect_object(*built_on, at, {"name", "compute_capability", "driver_version"}));
    BuildGpu gpu;
    PTB_TRY(gpu.name, r.optional_string(*built_on, at, "name"));
    PTB_TRY(gpu.compute_capability, r.optional_string(*built_on, at, "compute_capability"));
    PTB_TRY(gpu.driver_version, r.optional_string(*built_on, at, "driver_version"));
    cuda.built_on = gpu;
  }
  if (json.contains("weights")) {
    PTB_TRY(std::string weights, r.string(json, path, "weights"));
    if (weights == "none") cuda.no_weights = true;
    else if (weights == "library") cuda.weights_in_library = true;
    else return r.error(path + ".weights", "is " + q(weights) + "; expected \"none\", \"library\" (or no key)");
  }
  if (json.contains("constants")) {
    const std::string at = path + ".constants";
    PTB_TRY(const Json* constants, r.member(json, path, "constants"));
    PTB_CHECK(r.expect_object(*constants, at, {"bytes", "sha256"}));
    CudaInfo::LibraryConstants read;
    PTB_TRY(read.bytes, r.unsigned_number(*constants, at, "bytes"));
    PTB_TRY(read.sha256, r.string(*constants, at, "sha256"));
    if (!is_sha256_hex(read.sha256)) return r.error(at + ".sha256", "expected 64 lowercase hexadecimal digits");
    cuda.constants = read;
  }
  if (json.contains("runtime")) {
    PTB_TRY(std::string runtime, r.string(json, path, "runtime"));
    if (runtime != "built-in" && runtime != "LibTorch")
      return r.error(path + ".runtime", "is " + q(runtime) + "; expected \"built-in\" or \"LibTorch\"");
    cuda.runtime = runtime;
  }
  return cuda;
}

Result<ManifestFile> read_file_entry(const JsonReader& r, const Json& json, const std::string& path,
                                     const std::string& part_name) {
  PTB_CHECK(r.expect_object(json, path, {"role", "path", "size", "sha256", "target"}));
  ManifestFile file;
  PTB_TRY(auto role, r.string(json, path, "role"));
  if (role == "program") file.role = FileRole::Program;
  else if (role == "data") file.role = FileRole::Data;
  else if (role == "testcase") file.role = FileRole::Testcase;
  else return r.error(path + ".role", "is " + q(role) + "; expected \"program\", \"data\" or \"testcase\"");
  PTB_TRY(file.path, r.string(json, path, "path"));
  if (json.contains("target")) {
    PTB_TRY(file.target, r.string(json, path, "target"));
    if (file.role != FileRole::Program || !is_gpu_target_name(*file.target))
      return r.error(path + ".target", "is " + q(*file.target) + "; expected a GPU target such as \"sm_90\" on a program file");
  }
  if (!is_part_file_path(file.path, part_name, file.role, file.target)) {
    std::string expected =
        file.target ? part_target_program_path(part_name, *file.target) : part_file_path(part_name, file.role);
    return r.error(path + ".path", "is " + q(file.path) + "; expected \"" + expected +
                                       "\" (a part's files are named after the part, inside the bundle folder)");
  }
  PTB_TRY(file.size, r.unsigned_number(json, path, "size"));
  PTB_TRY(file.sha256, r.string(json, path, "sha256"));
  if (!is_sha256_hex(file.sha256)) return r.error(path + ".sha256", "expected 64 lowercase hexadecimal digits");
  return file;
}

Result<ManifestPart> read_part(const JsonReader& r, const Json& json, const std::string& path) {
  PTB_CHECK(r.expect_object(json, path, {"name", "source", "files", "data_name", "methods", "cuda", "testcase"}));
  ManifestPart part;
  PTB_TRY(part.name, r.string(json, path, "name"));
  PTB_CHECK(check_part_name(part.name, r.name() + ": " + path + ".name"));

  PTB_TRY(const Json* source, r.member(json, path, "source"));
  PTB_CHECK(r.expect_object(*source, path + ".source", {"kind", "files"}));
  PTB_TRY(part.source.kind, r.string(*source, path + ".source", "kind"));
  if (part.source.kind != "executorch" && part.source.kind != "aoti_package" && part.source.kind != "merge")
    return r.error(path + ".source.kind", "is " + q(part.source.kind) + "; expected \"executorch\", \"aoti_package\" or \"merge\"");
  PTB_TRY(const Json* source_files, r.array(*source, path + ".source", "files"));
  for (const auto& name : *source_files) {
    if (!name.is_string()) return r.error(path + ".source.files", "expected an array of strings");
    part.source.files.push_back(name.get<std::string>());
  }

  PTB_TRY(const Json* files, r.array(json, path, "files"));
  std::set<FileRole> roles;
  std::set<std::string> targets;  // programs kept per GPU target
  bool untargeted_program = false;
  for (size_t i = 0; i < files->size(); ++i) {
    std::string at = path + ".files[" + std::to_string(i) + "]";
    PTB_TRY(auto file, read_file_entry(r, (*files)[i], at, part.name));
    if (file.role == FileRole::Program) {
      bool clash = file.target ? untargeted_program || !targets.insert(*file.target).second : roles.count(FileRole::Program) > 0;
      if (clash)
        return r.error(at, "is a second program file" + (file.target ? " for " + *file.target : std::string()) +
                               "; expected one program, or one per GPU target");
      untargeted_program = untargeted_program || !file.target;
      roles.insert(file.role);
    } else if (!roles.insert(file.role).second) {
      return r.error(at, std::string("is a second ") + file_role_name(file.role) + " file");
    }
    part.files.push_back(std::move(file));
  }
  if (!roles.count(FileRole::Program)) return r.error(path + ".files", "has no program file; expected \"" + part.name + ".pte\"");

  PTB_TRY(part.data_name, r.optional_string(json, path, "data_name"));
  bool has_data = roles.count(FileRole::Data) > 0;
  if (has_data && part.data_name != part.name)
    return r.error(path + ".data_name", "expected \"" + part.name + "\", the name of the part's data file");
  if (!has_data && part.data_name)
    return r.error(path + ".data_name", "is set but the part has no data file; expected null");

  PTB_TRY(const Json* methods, r.array(json, path, "methods"));
  std::set<std::string> method_names;
  for (size_t i = 0; i < methods->size(); ++i) {
    std::string at = path + ".methods[" + std::to_string(i) + "]";
    PTB_TRY(auto method, read_method(r, (*methods)[i], at));
    if (!method_names.insert(method.name).second) return r.error(at + ".name", q(method.name) + " appears twice");
    for (size_t d = 0; d < method.delegates.size(); ++d) {
      const auto& data_name = method.delegates[d].data_name;
      // All methods of a part share one data name: the part's.
      if (data_name && *data_name != part.name) {
        return r.error(at + ".delegates[" + std::to_string(d) + "].data_name",
                       "is " + q(*data_name) + "; expected \"" + part.name + "\", the part's name");
      }
    }
    part.methods.push_back(std::move(method));
  }

  PTB_TRY(const Json* cuda, r.member(json, path, "cuda"));
  if (!cuda->is_null()) {
    PTB_TRY(auto info, read_cuda(r, *cuda, path + ".cuda"));
    part.cuda = std::move(info);
  }

  PTB_TRY(const Json* testcase, r.member(json, path, "testcase"));
  if (!testcase->is_null()) {
    std::string at = path + ".testcase";
    PTB_CHECK(r.expect_object(*testcase, at, {"path", "atol", "rtol", "inputs", "outputs", "output_checks"}));
    ManifestTestcase t;
    PTB_TRY(t.path, r.string(*testcase, at, "path"));
    const ManifestFile* listed = part.find_file(FileRole::Testcase);
    if (!listed || t.path != listed->path)
      return r.error(at + ".path", "is " + q(t.path) + "; expected \"" + part_file_path(part.name, FileRole::Testcase) +
                                        "\", listed among the part's files");
    PTB_TRY(t.atol, r.tolerance(*testcase, at, "atol"));
    PTB_TRY(t.rtol, r.tolerance(*testcase, at, "rtol"));
    PTB_TRY(auto inputs, r.unsigned_number(*testcase, at, "inputs", UINT32_MAX));
    PTB_TRY(auto outputs, r.unsigned_number(*testcase, at, "outputs", UINT32_MAX));
    t.inputs = static_cast<uint32_t>(inputs);
    t.outputs = static_cast<uint32_t>(outputs);
    if (testcase->contains("output_checks")) {
      PTB_TRY(const Json* checks, r.array(*testcase, at, "output_checks"));
      if (checks->size() != t.outputs)
        return r.error(at + ".output_checks", "has " + std::to_string(checks->size()) + " entries; expected one per output (" +
                                                  std::to_string(t.outputs) + ")");
      for (size_t i = 0; i < checks->size(); ++i) {
        const Json& item = (*checks)[i];
        std::string where = at + ".output_checks[" + std::to_string(i) + "]";
        PTB_CHECK(r.expect_object(item, where, {"compare", "atol", "rtol", "rule"}));
        ManifestOutputCheck check;
        if (item.contains("compare")) {
          PTB_TRY(std::string compare, r.string(item, where, "compare"));
          if (compare != "values" && compare != "dtype_shape_finite")
            return r.error(where + ".compare", "is " + q(compare) + "; expected \"values\" or \"dtype_shape_finite\"");
          check.compare_values = compare == "values";
        }
        PTB_TRY(check.atol, r.tolerance(item, where, "atol"));
        PTB_TRY(check.rtol, r.tolerance(item, where, "rtol"));
        PTB_TRY(check.rule, r.string(item, where, "rule"));
        t.output_checks.push_back(std::move(check));
      }
    }
    part.testcase = t;
  } else if (roles.count(FileRole::Testcase)) {
    return r.error(path + ".testcase", "is null but the part lists a testcase file; expected its tolerances");
  }
  return part;
}

}  // namespace

const char* file_role_name(FileRole role) {
  switch (role) {
    case FileRole::Program: return "program";
    case FileRole::Data: return "data";
    case FileRole::Testcase: return "testcase";
  }
  return "program";
}

std::string part_file_path(std::string_view part_name, FileRole role, unsigned generation) {
  std::string name(part_name);
  if (generation > 0) name += "@" + std::to_string(generation);
  switch (role) {
    case FileRole::Program: return name + ".pte";
    case FileRole::Data: return name + ".ptd";
    case FileRole::Testcase: return std::string(kTestcaseFolder) + "/" + name + ".ptd";
  }
  return name + ".pte";
}

std::string tune_file_path(unsigned generation) {
  return generation == 0 ? std::string(kTuneFileName) : "tune@" + std::to_string(generation) + ".json";
}

bool is_tune_file_path(std::string_view path) {
  if (path == kTuneFileName) return true;
  if (!path.starts_with("tune@") || !path.ends_with(".json")) return false;
  const std::string_view digits = path.substr(5, path.size() - 5 - 5);
  if (digits.empty() || digits.size() > 9 || digits.front() == '0') return false;
  return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string part_target_program_path(std::string_view part_name, std::string_view target, unsigned generation) {
  return std::string(target) + "/" + std::string(part_name) +
         (generation > 0 ? "@" + std::to_string(generation) : std::string()) + ".pte";
}

bool is_part_file_path(std::string_view path, std::string_view part_name, FileRole role,
                       const std::optional<std::string>& target) {
  std::string canonical = target ? part_target_program_path(part_name, *target) : part_file_path(part_name, role);
  if (path == canonical) return true;
  // canonical = <prefix>.<ext>; a generation sits before the extension.
  const size_t dot = canonical.rfind('.');
  std::string_view prefix = std::string_view(canonical).substr(0, dot);
  std::string_view extension = std::string_view(canonical).substr(dot);
  if (!path.starts_with(prefix) || !path.ends_with(extension) || path.size() < canonical.size() + 2) return false;
  std::string_view middle = path.substr(prefix.size(), path.size() - prefix.size() - extension.size());
  if (middle.front() != '@' || middle.size() > 10) return false;
  std::string_view digits = middle.substr(1);
  return digits.front() != '0' && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string testcase_key(std::string_view method, bool output, size_t index) {
  return std::string(method) + (output ? ".output." : ".input.") + std::to_string(index);
}

const ManifestFile* ManifestPart::find_file(FileRole role) const {
  for (const auto& file : files)
    if (file.role == role) return &file;
  return nullptr;
}

const ManifestPart* Manifest::find_part(std::string_view name) const {
  for (const auto& part : parts)
    if (part.name == name) return &part;
  return nullptr;
}

ManifestPart* Manifest::find_part(std::string_view name) {
  for (auto& part : parts)
    if (part.name == name) return &part;
  return nullptr;
}

Json manifest_part_to_json(const ManifestPart& part) {
  Json out;
  out["name"] = part.name;
  out["source"] = {{"kind", part.source.kind}, {"files", part.source.files}};
  Json files = Json::array();
  for (const auto& file : part.files) files.push_back(file);
  out["files"] = files;
  out["data_name"] = optional_json(part.data_name);
  Json methods = Json::array();
  for (const auto& method : part.methods) {
    Json m;
    m["name"] = method.name;
    m["inputs"] = Json::array();
    for (const auto& value : method.inputs) m["inputs"].push_back(value_json(value));
    m["outputs"] = Json::array();
    for (const auto& value : method.outputs) m["outputs"].push_back(value_json(value));
    m["delegates"] = Json::array();
    for (const auto& delegate : method.delegates)
      m["delegates"].push_back({{"id", delegate.id}, {"data_name", optional_json(delegate.data_name)}});
    methods.push_back(m);
  }
  out["methods"] = methods;
  if (part.cuda) {
    Json cuda;
    cuda["kernel_targets"] = Json::array();
    for (const auto& target : part.cuda->kernel_targets)
      cuda["kernel_targets"].push_back({{"target", target.target}, {"sm", target.sm}, {"kind", target.kind}});
    if (part.cuda->built_on) {
      const auto& gpu = *part.cuda->built_on;
      cuda["built_on"] = {{"name", optional_json(gpu.name)},
                          {"compute_capability", optional_json(gpu.compute_capability)},
                          {"driver_version", optional_json(gpu.driver_version)}};
    } else {
      cuda["built_on"] = nullptr;
    }
    if (part.cuda->no_weights) cuda["weights"] = "none";
    if (part.cuda->weights_in_library) cuda["weights"] = "library";
    if (part.cuda->constants)
      cuda["constants"] = {{"bytes", part.cuda->constants->bytes}, {"sha256", part.cuda->constants->sha256}};
    if (part.cuda->runtime) cuda["runtime"] = *part.cuda->runtime;
    out["cuda"] = cuda;
  } else {
    out["cuda"] = nullptr;
  }
  if (part.testcase) {
    const auto& t = *part.testcase;
    out["testcase"] = {{"path", t.path}, {"atol", t.atol}, {"rtol", t.rtol}, {"inputs", t.inputs}, {"outputs", t.outputs}};
    if (!t.output_checks.empty()) {
      Json checks = Json::array();
      for (const auto& c : t.output_checks) {
        checks.push_back({{"compare", c.compare_values ? "values" : "dtype_shape_finite"},
                          {"atol", c.atol},
                          {"rtol", c.rtol},
                          {"rule", c.rule}});
      }
      out["testcase"]["output_checks"] = checks;
    }
  } else {
    out["testcase"] = nullptr;
  }
  return out;
}

Json manifest_to_json(const Manifest& manifest) {
  Json out;
  out["format"] = "ptbundle";
  out["format_version"] = manifest.format_version;
  out["ptbundle_version"] = manifest.ptbundle_version;
  out["created"] = manifest.created;
  out["parts"] = Json::array();
  for (const auto& part : manifest.parts) out["parts"].push_back(manifest_part_to_json(part));
  if (manifest.tune) {
    out["tune"] = {{"path", manifest.tune->path}, {"size", manifest.tune->size}, {"sha256", manifest.tune->sha256}};
  }
  return out;
}

Result<Manifest> manifest_header_from_json(const Json& json, const std::string& name) {
  JsonReader r(name);
  PTB_CHECK(r.expect_object(json, "top level", {"format", "format_version", "ptbundle_version", "created", "parts", "tune"}));
  PTB_TRY(auto format, r.string(json, "top level", "format"));
  if (format != "ptbundle") return r.error("format", "is " + q(format) + "; expected \"ptbundle\"");
  PTB_TRY(auto version, r.unsigned_number(json, "top level", "format_version", 1000000));
  if (version != static_cast<uint64_t>(kManifestFormatVersion)) {
    return r.error("format_version", std::to_string(version) + " is not supported; expected " +
                                         std::to_string(kManifestFormatVersion) +
                                         (version > kManifestFormatVersion ? " (written by a newer ptbundle)" : ""));
  }
  Manifest manifest;
  manifest.format_version = static_cast<int>(version);
  PTB_TRY(manifest.ptbundle_version, r.string(json, "top level", "ptbundle_version"));
  PTB_TRY(manifest.created, r.string(json, "top level", "created"));
  if (!is_utc_timestamp(manifest.created))
    return r.error("created", "is " + q(manifest.created) + "; expected a UTC time like 2026-05-01T12:34:56Z");
  PTB_TRY(const Json* parts, r.array(json, "top level", "parts"));
  (void)parts;
  if (json.contains("tune")) {
    const Json& tune = json["tune"];
    PTB_CHECK(r.expect_object(tune, "tune", {"path", "size", "sha256"}));
    ManifestTuneFile file;
    PTB_TRY(file.path, r.string(tune, "tune", "path"));
    if (!is_tune_file_path(file.path))
      return r.error("tune.path", "is " + q(file.path) + "; expected \"tune.json\" or \"tune@<generation>.json\"");
    PTB_TRY(file.size, r.unsigned_number(tune, "tune", "size"));
    PTB_TRY(file.sha256, r.string(tune, "tune", "sha256"));
    if (!is_sha256_hex(file.sha256)) return r.error("tune.sha256", "expected 64 lowercase hexadecimal digits");
    manifest.tune = std::move(file);
  }
  return manifest;
}

Result<ManifestPart> manifest_part_from_json(const Json& part, const std::string& name, const std::string& at) {
  JsonReader r(name);
  return read_part(r, part, at);
}

Result<Manifest> manifest_from_json(const Json& json, const std::string& name) {
  PTB_TRY(Manifest manifest, manifest_header_from_json(json, name));
  JsonReader r(name);
  const Json& parts = json.at("parts");
  std::vector<std::string> names;
  for (size_t i = 0; i < parts.size(); ++i) {
    PTB_TRY(auto part, read_part(r, parts[i], "parts[" + std::to_string(i) + "]"));
    names.push_back(part.name);
    manifest.parts.push_back(std::move(part));
  }
  PTB_CHECK(check_case_collisions(names, name));
  return manifest;
}

ManifestMethod manifest_method(const MethodInfo& method) {
  ManifestMethod out;
  out.name = method.name;
  auto value_of = [](const ValueSpec& spec) {
    ManifestValue value;
    value.kind = spec.kind;
    if (spec.kind == "tensor" && spec.tensor) {
      value.dtype = scalar_type_name(spec.tensor->scalar_type);
      value.shape = spec.tensor->sizes;
      value.dynamism = spec.tensor->dynamism;
    }
    return value;
  };
  for (const auto& v : method.inputs) out.inputs.push_back(value_of(v));
  for (const auto& v : method.outputs) out.outputs.push_back(value_of(v));
  for (const auto& d : method.delegates) {
    ManifestDelegate delegate{d.id, std::nullopt};
    if (const auto* spec = d.find_spec("data_name")) delegate.data_name = std::string(spec->value.begin(), spec->value.end());
    out.delegates.push_back(std::move(delegate));
  }
  return out;
}

Result<Manifest> parse_manifest(std::string_view text, const std::string& name) {
  if (text.size() > kMaxManifestBytes)
    return invalid(name + ": " + std::to_string(text.size()) + " bytes; expected a manifest under 64 MiB");
  PTB_TRY(Json json, parse_json_bounded(text, name, "a ptbundle manifest"));
  return manifest_from_json(json, name);
}

Result<Manifest> read_manifest(const BundleDir& dir) {
  PTB_TRY(auto file, MappedFile::open_in(dir, kManifestFileName));
  if (file.size() > kMaxManifestBytes)
    return invalid(file.path() + ": " + std::to_string(file.size()) + " bytes; expected a manifest under 64 MiB");
  auto bytes = file.bytes();
  return parse_manifest(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), file.path());
}

Result<Manifest> read_manifest(const std::string& bundle_dir) {
  PTB_TRY(auto dir, BundleDir::open(bundle_dir));
  return read_manifest(dir);
}

Status write_manifest(const BundleDir& dir, const Manifest& manifest) {
  std::string text = manifest_to_json(manifest).dump(2) + "\n";
  PTB_TRY(auto out, AtomicOutput::create_in(dir, kManifestFileName));
  PTB_CHECK(out.write(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  return out.commit();
}

Status write_manifest(const std::string& bundle_dir, const Manifest& manifest) {
  PTB_TRY(auto dir, BundleDir::open(bundle_dir));
  return write_manifest(dir, manifest);
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace ptb

// An ExecuTorch export as a part: the program is re-serialized with the data
// name set in its CUDA delegates, and its data file is copied whole, after
// every key the program needs has been found with the right size.
#include <algorithm>
#include <filesystem>

#include "prepared_part.h"
#include "ptbundle/formats/cuda_payload.h"

namespace ptb::exporter {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCudaBackend = "CudaBackend";
constexpr const char* kDataNameSpec = "data_name";
// ExecuTorch's CUDA export names its data file after this external tag.
constexpr const char* kDefaultDataFile = "aoti_cuda_blob.ptd";

Result<std::optional<std::string>> find_data_file(const PartRequest& request) {
  if (request.data_file) return std::optional<std::string>(*request.data_file);
  fs::path program(request.program);
  fs::path folder = program.parent_path().empty() ? fs::path(".") : program.parent_path();
  std::error_code ec;
  if (fs::is_regular_file(folder / kDefaultDataFile, ec)) return std::optional<std::string>((folder / kDefaultDataFile).string());
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() == ".ptd" && entry.is_regular_file(ec)) found.push_back(entry.path().string());
  }
  if (ec) return io_error(folder.string() + ": cannot list the folder to find the data file: " + ec.message());
  if (found.empty()) return std::optional<std::string>();
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + fs::path(f).filename().string();
    return usage_error(request.program + ": several data files beside it (" + list + "); name one: --part " +
                       request.name + "=" + request.program + ",DATA.ptd");
  }
  return std::optional<std::string>(found.front());
}

// A key the program reads from named data, and who needs it.
struct KeyNeed {
  std::string key;
  std::optional<uint64_t> size;
  std::string who;
  bool library = false;  // a CUDA shared object, scanned for kernel targets
};

std::string spec_text(const DelegateInfo& delegate, const char* key, const std::string& fallback) {
  const auto* spec = delegate.find_spec(key);
  if (!spec) return fallback;
  return std::string(spec->value.begin(), spec->value.end());
}

Result<std::vector<KeyNeed>> keys_needed(const PteFile& pte, const std::vector<MethodInfo>& methods) {
  std::vector<KeyNeed> needs;
  for (size_t p = 0; p < methods.size(); ++p) {
    const auto& method = methods[p];
    for (size_t d = 0; d < method.delegates.size(); ++d) {
      const auto& delegate = method.delegates[d];
      if (delegate.id != kCudaBackend) continue;
      std::string who = pte.name() + ": " + method.name + " delegate " + std::to_string(d) + " (CudaBackend)";
      PTB_TRY(auto payload, decode_cuda_payload(pte.delegate_payload(p, d), spec_text(delegate, "method_name", method.name), who));
      if (payload.form == CudaPayloadForm::MultiVariant) {
        for (const auto& variant : payload.variants) needs.push_back({variant.so_key, std::nullopt, who, true});
        for (const auto& weight : payload.weights) needs.push_back({weight.storage_key, weight.storage_nbytes, who, false});
      } else {
        needs.push_back({payload.so_key, std::nullopt, who, true});
        needs.push_back({payload.weights_key, std::nullopt, who, false});
      }
    }
  }
  // Tensors whose data ExecuTorch loads from a data file by name.
  const auto* plans = pte.program().execution_plan();
  for (size_t p = 0; plans && p < plans->size(); ++p) {
    const auto* values = plans->Get(static_cast<flatbuffers::uoffset_t>(p))->values();
    for (size_t v = 0; values && v < values->size(); ++v) {
      const auto* tensor = values->Get(static_cast<flatbuffers::uoffset_t>(v))->val_as_Tensor();
      if (!tensor || !tensor->extra_tensor_info() || !tensor->extra_tensor_info()->fully_qualified_name()) continue;
      if (tensor->extra_tensor_info()->location() != fb::TensorDataLocation::EXTERNAL) continue;
      auto element = scalar_type_size(static_cast<int8_t>(tensor->scalar_type()));
      std::optional<uint64_t> size;
      if (element && tensor->sizes()) {
        uint64_t count = 1;
        bool overflow = false;
        for (int32_t s : *tensor->sizes()) {
          if (s < 0 || (s != 0 && count > UINT64_MAX / static_cast<uint64_t>(s))) overflow = true;
          else count *= static_cast<uint64_t>(s);
        }
        if (!overflow && count <= UINT64_MAX / *element) size = count * *element;
      }
      needs.push_back({tensor->extra_tensor_info()->fully_qualified_name()->str(), size,
                       pte.name() + ": " + plans->Get(static_cast<flatbuffers::uoffset_t>(p))->name()->str() +
                           " value " + std::to_string(v) + " (external tensor)",
                       false});
    }
  }
  return needs;
}

// Sets data_name=NAME in every CUDA delegate; refuses backends that keep
// their data inside the program and so would silently ignore the name.
Status name_delegates(fb::ProgramT& program, const std::string& name, const std::string& path) {
  for (const auto& plan : program.execution_plan) {
    if (!plan) continue;
    for (size_t d = 0; d < plan->delegates.size(); ++d) {
      auto& delegate = *plan->delegates[d];
      if (backend_keeps_data_inside(delegate.id)) {
        return invalid(path + ": " + plan->name + " delegate " + std::to_string(d) + " is " + delegate.id +
                       ", which keeps its data inside the .pte and takes no data name; ptbundle names the data of "
                       "CudaBackend delegates (export this model with the CUDA backend)");
      }
      if (delegate.id != kCudaBackend) continue;
      fb::CompileSpecT* existing = nullptr;
      for (auto& spec : delegate.compile_specs)
        if (spec && spec->key == kDataNameSpec) existing = spec.get();
      if (!existing) {
        delegate.compile_specs.push_back(std::make_unique<fb::CompileSpecT>());
        existing = delegate.compile_specs.back().get();
        existing->key = kDataNameSpec;
      }
      existing->value.assign(name.begin(), name.end());
    }
  }
  return {};
}

// Keeps any alignment the original segment offsets show (up to a page), so
// that re-serializing never loosens a backend's alignment.
uint64_t observed_alignment(uint64_t offset) {
  constexpr uint64_t kMax = 4096;
  if (offset == 0) return 1;
  uint64_t alignment = offset & (~offset + 1);
  return std::min(alignment, kMax);
}

}  // namespace

Result<PreparedPart> prepare_executorch_part(const PartRequest& request) {
  PreparedPart part;
  part.name = request.name;
  part.source.kind = "executorch";
  part.source.files.push_back(fs::path(request.program).filename().string());

  PTB_TRY(auto pte_value, PteFile::open(request.program));
  auto& pte = *part.ptes.emplace_back(std::make_unique<PteFile>(std::move(pte_value)));
  auto methods = describe_methods(pte);

  PTB_TRY(auto data_path, find_data_file(request));
  const PtdFile* ptd = nullptr;
  if (data_path) {
    PTB_TRY(auto ptd_value, PtdFile::open(*data_path));
    ptd = part.ptds.emplace_back(std::make_unique<PtdFile>(std::move(ptd_value))).get();
  }

  PTB_TRY(auto needs, keys_needed(pte, methods));
  bool data_needed = false;
  std::vector<Bytes> libraries;
  std::vector<std::string> library_names;
  for (const auto& need : needs) {
    Bytes bytes;
    if (const auto* entry = pte.find_named_data(need.key)) {
      bytes = pte.named_data_bytes(*entry);
    } else if (const auto* data_entry = ptd ? ptd->find(need.key) : nullptr) {
      bytes = ptd->bytes(*data_entry);
      data_needed = true;
    } else if (!ptd) {
      return invalid(need.who + " needs the key \"" + need.key + "\", which " + request.program +
                     " does not hold, and no data file was given or found beside it; expected --part " + request.name +
                     "=" + request.program + ",DATA.ptd");
    } else {
      return invalid(need.who + " needs the key \"" + need.key + "\", which neither " + request.program + " nor " +
                     ptd->path() + " holds; expected the data file exported with this program");
    }
    if (need.size && bytes.size() != *need.size) {
      return invalid(need.who + " needs the key \"" + need.key + "\" with " + std::to_string(*need.size) +
                     " bytes; the file holds " + std::to_string(bytes.size()) + " bytes under it (a data file from another export?)");
    }
    if (need.library) {
      libraries.push_back(bytes);
      library_names.push_back(request.program + " key " + need.key);
    }
  }
  if (ptd && !data_needed) {
    if (request.data_file)
      return invalid(request.program + " uses no key of " + ptd->path() + "; expected the data file exported with this program");
    part.notes.push_back(ptd->path() + " lies beside the program but the program uses none of its keys: no data file written");
    ptd = nullptr;
  }
  if (ptd) {
    part.data_copy = &ptd->file();
    part.source.files.push_back(fs::path(ptd->path()).filename().string());
  }

  part.program.reset(pte.program().UnPack());
  PTB_CHECK(name_delegates(*part.program, part.name, request.program));
  for (const auto& segment : pte.segments()) {
    part.pte_segments.push_back(SegmentSource::file_range(pte.file(), segment.file_offset, segment.size,
                                                          observed_alignment(segment.offset)));
  }

  bool has_cuda = std::any_of(methods.begin(), methods.end(), [](const MethodInfo& m) {
    return std::any_of(m.delegates.begin(), m.delegates.end(), [](const DelegateInfo& d) { return d.id == kCudaBackend; });
  });
  if (has_cuda) {
    PTB_TRY(auto targets, kernel_targets_of(libraries, library_names));
    part.cuda = CudaInfo{std::move(targets), std::nullopt};
  }

  if (request.example) {
    ExampleTarget target;
    auto it = std::find_if(methods.begin(), methods.end(), [](const MethodInfo& m) { return m.name == "forward"; });
    if (it == methods.end() && methods.size() == 1) it = methods.begin();
    if (it == methods.end())
      return usage_error(request.program + ": no method \"forward\" and several methods; an example needs one method");
    // attach_example keeps no reference past the call.
    target.method_name = it->name;
    target.method = &*it;
    PTB_CHECK(attach_example(part, *request.example, target));
  }
  return part;
}

}  // namespace ptb::exporter

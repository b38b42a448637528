// Opening a program with its data, and the walk over its CUDA delegates that
// every command shares.
#include "ptbundle/program/program_with_data.h"

#include <algorithm>
#include <filesystem>

#include "ptbundle/bundle/names.h"

namespace ptb {
namespace {

namespace fs = std::filesystem;

// ExecuTorch's CUDA export names its data file after this external tag.
constexpr const char* kDefaultDataFile = "aoti_cuda_blob.ptd";

std::vector<CudaDelegate> find_cuda_delegates(const PteFile& pte, const std::vector<MethodInfo>& methods,
                                              const std::string& name) {
  std::vector<CudaDelegate> out;
  for (size_t plan = 0; plan < methods.size(); ++plan) {
    const MethodInfo& method = methods[plan];
    for (size_t index = 0; index < method.delegates.size(); ++index) {
      if (method.delegates[index].id != kCudaBackendId) continue;
      CudaDelegate delegate;
      delegate.plan = plan;
      delegate.index = index;
      delegate.method = method.name;
      delegate.where = name + ": " + method.name + " delegate " + std::to_string(index);
      auto decoded = decode_cuda_payload(pte.delegate_payload(plan, index), method.name, delegate.where);
      if (decoded.ok()) {
        delegate.payload = std::move(decoded).value();
      } else {
        delegate.error = decoded.take_error();
      }
      out.push_back(std::move(delegate));
    }
  }
  return out;
}

}  // namespace

Result<const CudaPayload*> CudaDelegate::decoded() const {
  if (payload) return &*payload;
  return *error;
}

std::optional<NamedBytes> find_named_bytes(const PteFile& pte, const PtdFile* ptd, std::string_view key) {
  if (ptd) {
    if (const PtdEntry* entry = ptd->find(key)) return NamedBytes{ptd->bytes(*entry), ptd->path(), true};
  }
  if (const PteNamedData* entry = pte.find_named_data(key)) {
    return NamedBytes{pte.named_data_bytes(*entry), pte.name(), false};
  }
  return std::nullopt;
}

std::vector<std::string> data_names(const std::vector<MethodInfo>& methods) {
  std::vector<std::string> names;
  for (const MethodInfo& method : methods) {
    for (const DelegateInfo& delegate : method.delegates) {
      const CompileSpecEntry* spec = delegate.find_spec("data_name");
      if (!spec) continue;
      std::string name(spec->value.begin(), spec->value.end());
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

std::vector<std::string> data_file_candidates(const std::string& program_path, const std::vector<MethodInfo>& methods) {
  fs::path program(program_path);
  std::vector<std::string> candidates{fs::path(program).replace_extension(".ptd").string()};
  auto add = [&](const std::string& path) {
    if (std::find(candidates.begin(), candidates.end(), path) == candidates.end()) candidates.push_back(path);
  };
  for (const std::string& name : data_names(methods)) {
    // Only a name that passes the rules may become a path, and then only
    // inside the program's folder.
    if (check_part_name(name, "data_name").ok()) add((program.parent_path() / (name + ".ptd")).string());
  }
  add((program.parent_path() / kDefaultDataFile).string());
  return candidates;
}

std::optional<std::string> find_data_file_beside(const std::string& program_path, const std::vector<MethodInfo>& methods) {
  for (const std::string& candidate : data_file_candidates(program_path, methods)) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

ProgramWithData::ProgramWithData(std::shared_ptr<const PteFile> pte, std::shared_ptr<const PtdFile> ptd, std::string name)
    : pte_(std::move(pte)),
      ptd_(std::move(ptd)),
      name_(name.empty() ? pte_->name() : std::move(name)),
      methods_(describe_methods(*pte_)),
      cuda_(find_cuda_delegates(*pte_, methods_, name_)) {}

Result<ProgramWithData> ProgramWithData::open(const std::string& program, const std::optional<std::string>& data) {
  PTB_TRY(PteFile pte, PteFile::open(program));
  ProgramWithData out(std::make_shared<const PteFile>(std::move(pte)), nullptr);
  std::optional<std::string> data_path = data;
  if (!data_path) data_path = find_data_file_beside(program, out.methods());
  if (data_path) {
    PTB_TRY(PtdFile opened, PtdFile::open(*data_path));
    out.set_data(std::make_shared<const PtdFile>(std::move(opened)));
  }
  return out;
}

const MethodInfo* ProgramWithData::find_method(std::string_view name) const {
  for (const MethodInfo& method : methods_) {
    if (method.name == name) return &method;
  }
  return nullptr;
}

std::vector<const CudaDelegate*> ProgramWithData::cuda_delegates_of(size_t plan) const {
  std::vector<const CudaDelegate*> out;
  for (const CudaDelegate& delegate : cuda_) {
    if (delegate.plan == plan) out.push_back(&delegate);
  }
  return out;
}

}  // namespace ptb

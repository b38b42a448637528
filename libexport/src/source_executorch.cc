// An ExecuTorch export as a part: the program is re-serialized with the data
// name set in its CUDA delegates, and its data file is copied whole, after
// every key the program needs has been found with the right size.
#include <algorithm>
#include <filesystem>

#include "prepared_part.h"
#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/program/program_with_data.h"
#include "ptbundle/signing/folder_digests.h"

namespace ptb::detail {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDataNameSpec = "data_name";

// Every key the program reads from named data: its delegates' (payload_keys,
// `what` prefixed with the delegate) and its external tensors'.
Result<std::vector<PayloadKey>> keys_needed(const ProgramWithData& program) {
  const PteFile& pte = program.pte();
  std::vector<PayloadKey> needs;
  for (const CudaDelegate& delegate : program.cuda_delegates()) {
    PTB_TRY(const CudaPayload* payload, delegate.decoded());
    for (PayloadKey key : payload_keys(*payload)) {
      key.what = delegate.where + " (CudaBackend), " + key.what + ",";
      needs.push_back(std::move(key));
    }
  }
  // Tensors whose data ExecuTorch loads from a data file by name.
  const auto* plans = pte.program().execution_plan();
  for (size_t p = 0; plans && p < plans->size(); ++p) {
    const auto* plan = plans->Get(static_cast<flatbuffers::uoffset_t>(p));
    const auto* values = plan->values();
    for (size_t v = 0; values && v < values->size(); ++v) {
      const auto* tensor = values->Get(static_cast<flatbuffers::uoffset_t>(v))->val_as_Tensor();
      if (!tensor || !tensor->extra_tensor_info() || !tensor->extra_tensor_info()->fully_qualified_name()) continue;
      if (tensor->extra_tensor_info()->location() != fb::TensorDataLocation::EXTERNAL) continue;
      std::optional<uint64_t> size;
      if (tensor->sizes()) size = tensor_bytes(*tensor->sizes(), static_cast<int8_t>(tensor->scalar_type()));
      needs.push_back({tensor->extra_tensor_info()->fully_qualified_name()->str(),
                       pte.name() + ": " + plan->name()->str() + " value " + std::to_string(v) + " (external tensor)",
                       false, size});
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
      if (delegate.id != kCudaBackendId) continue;
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

  PTB_TRY(ProgramWithData opened, ProgramWithData::open(request.program, request.data_file));
  const ProgramWithData& program = *part.programs.emplace_back(std::make_shared<const ProgramWithData>(std::move(opened)));
  const PteFile& pte = program.pte();
  const std::vector<MethodInfo>& methods = program.methods();
  const PtdFile* ptd = program.ptd();

  // verify holds every "<sha256>_so_blob"/"<sha256>_weights_blob" key to
  // the SHA-256 of its bytes: a replaced blob is refused, so export never
  // writes a bundle that verify fails. The data file's keys are checked
  // while it is copied (data_copy_keys), from the one read of its bytes.
  PTB_CHECK(check_program_content_keys(program, DataFileKeys::CheckedByCopy));
  PTB_TRY(auto needs, keys_needed(program));
  bool data_needed = false;
  std::vector<Bytes> libraries;
  std::vector<std::string> library_names;
  for (const auto& need : needs) {
    auto found = program.find(need.key);
    if (!found && !ptd) {
      return invalid(need.what + " needs the key \"" + need.key + "\", which " + request.program +
                     " does not hold, and no data file was given or found beside it; expected --part " + request.name +
                     "=" + request.program + ",DATA.ptd");
    }
    if (!found) {
      return invalid(need.what + " needs the key \"" + need.key + "\", which neither " + request.program + " nor " +
                     ptd->path() + " holds; expected the data file exported with this program");
    }
    const Bytes bytes = found->bytes;
    data_needed = data_needed || found->in_data_file;
    if (need.exact_size && bytes.size() != *need.exact_size) {
      return invalid(need.what + " needs the key \"" + need.key + "\" with " + std::to_string(*need.exact_size) +
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
    part.data_copy_keys = content_keys_of(*ptd);
    part.source.files.push_back(fs::path(ptd->path()).filename().string());
  }

  part.program.reset(pte.program().UnPack());
  PTB_CHECK(name_delegates(*part.program, part.name, request.program));
  for (const auto& segment : pte.segments()) {
    part.pte_segments.push_back(SegmentSource::file_range(pte.file(), segment.file_offset, segment.size,
                                                          observed_alignment(segment.offset)));
  }

  if (program.has_cuda()) {
    PTB_TRY(PartKernels kernels, scan_part_kernels(libraries, library_names));
    part.cuda = CudaInfo{std::move(kernels.targets), std::nullopt};
    if (!kernels.template_note.empty()) part.notes.push_back(request.program + ": " + kernels.template_note);
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

}  // namespace ptb::detail

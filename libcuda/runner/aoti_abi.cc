#include "runner/aoti_abi.h"

namespace ptb::detail {
namespace {

template <class Function>
void look_up(const LoadedLibrary& library, const char* name, Function& slot) {
  slot = reinterpret_cast<Function>(library.symbol(name));
}

}  // namespace

Result<AotiAbi> AotiAbi::bind(const LoadedLibrary& library, const std::string& origin) {
  AotiAbi abi;
  look_up(library, "AOTInductorModelContainerCreateWithDevice", abi.create_with_device);
  look_up(library, "AOTInductorModelContainerDelete", abi.destroy);
  look_up(library, "AOTInductorModelContainerGetNumInputs", abi.get_num_inputs);
  look_up(library, "AOTInductorModelContainerGetNumOutputs", abi.get_num_outputs);
  look_up(library, "AOTInductorModelContainerRun", abi.run);
  look_up(library, "AOTInductorModelContainerRunSingleThreaded", abi.run_single_threaded);
  look_up(library, "AOTInductorModelContainerGetInputName", abi.get_input_name);
  look_up(library, "AOTInductorModelContainerGetOutputName", abi.get_output_name);
  look_up(library, "AOTInductorModelContainerGetNumConstants", abi.get_num_constants);
  look_up(library, "AOTInductorModelContainerGetConstantName", abi.get_constant_name);
  look_up(library, "AOTInductorModelContainerGetConstantOriginalFQN", abi.get_constant_original_fqn);
  look_up(library, "AOTInductorModelContainerGetConstantDtype", abi.get_constant_dtype);
  look_up(library, "AOTInductorModelContainerGetConstantDataSize", abi.get_constant_data_size);
  look_up(library, "AOTInductorModelContainerGetConstantFromFolded", abi.get_constant_from_folded);
  look_up(library, "AOTInductorModelContainerExtractConstantsMap", abi.extract_constants_map);
  look_up(library, "AOTInductorModelUpdateConstantsFromBlob", abi.update_constants_from_blob);
  look_up(library, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs",
          abi.update_user_managed_constant_buffer_pairs);
  look_up(library, "AOTInductorModelContainerUpdateUserManagedConstantBuffer", abi.update_user_managed_constant_buffer);
  look_up(library, "AOTInductorModelContainerUpdateConstantBuffer", abi.update_constant_buffer);

  const std::pair<const char*, bool> required[] = {
      {"AOTInductorModelContainerCreateWithDevice", abi.create_with_device != nullptr},
      {"AOTInductorModelContainerDelete", abi.destroy != nullptr},
      {"AOTInductorModelContainerGetNumInputs", abi.get_num_inputs != nullptr},
      {"AOTInductorModelContainerGetNumOutputs", abi.get_num_outputs != nullptr},
      {"AOTInductorModelContainerRun", abi.run != nullptr},
  };
  for (const auto& [name, present] : required) {
    if (!present) {
      return invalid(origin + ": the library does not export " + name +
                     "; expected an AOTInductor model library (PyTorch 2.6 or newer)");
    }
  }
  return abi;
}

}  // namespace ptb::detail

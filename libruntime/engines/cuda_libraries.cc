#include "engines/cuda_libraries.h"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <mutex>

#include "ptbundle/kernels/aoti_shims.h"
#include "engines/settings.h"

namespace ptb::builtin {
namespace {

namespace fs = std::filesystem;

struct Opened {
  void* handle = nullptr;
  std::string path;  // where it was found
  std::string why;   // why it was not
};

// The folders looked in after the loader's own search.
std::vector<std::string> toolkit_folders(const std::string& override_dir) {
  std::vector<std::string> folders;
  if (!override_dir.empty()) folders.push_back(override_dir);
  if (const std::string& home = settings().cuda_home; !home.empty()) folders.push_back(home + "/lib64");
  folders.emplace_back("/usr/local/cuda/lib64");
  folders.emplace_back("/usr/local/cuda/targets/x86_64-linux/lib");
  return folders;
}

// RTLD_LOCAL: their own exports stay theirs; RTLD_NOW: a broken install
// fails here, not at the first call.
// `override_dir`: the folder `override_variable` names (settings.h).
Opened open_library(const char* file, const char* override_variable, const std::string& override_dir) {
  Opened opened;
  const std::vector<std::string> folders = toolkit_folders(override_dir);
  std::string tried;
  // An explicit folder wins over the loader's search.
  const bool explicit_first = !override_dir.empty();
  auto try_path = [&](const std::string& path) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      opened.handle = handle;
      link_map* map = nullptr;
      opened.path = ::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name
                        ? std::string(map->l_name)
                        : path;
      return true;
    }
    tried += (tried.empty() ? "" : "; ") + std::string(::dlerror());
    return false;
  };
  if (explicit_first && try_path(folders.front() + "/" + file)) return opened;
  if (try_path(file)) return opened;
  for (size_t i = explicit_first ? 1 : 0; i < folders.size(); ++i) {
    std::error_code ec;
    const std::string path = folders[i] + "/" + file;
    if (fs::exists(path, ec) && try_path(path)) return opened;
  }
  std::string looked;
  for (const auto& folder : folders) looked += (looked.empty() ? "" : ", ") + folder;
  opened.why = std::string(file) + " not found (the loader's search, then " + looked + "; set " + override_variable +
               " to its folder): " + tried;
  return opened;
}

template <class F>
bool bind(void* handle, const char* name, F& slot, std::string& missing) {
  slot = reinterpret_cast<F>(::dlsym(handle, name));
  if (!slot) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return slot != nullptr;
}

struct LoadedCublas {
  CublasLt api;
  Opened library;
  bool ok = false;
};

struct LoadedCudnn {
  Cudnn api;
  Opened library;
  bool ok = false;
};

std::mutex open_mutex;

LoadedCublas& cublas_state() {
  static LoadedCublas state = [] {
    LoadedCublas loaded;
    loaded.library = open_library("libcublasLt.so.13", "PTBUNDLE_CUBLAS_DIR", settings().cublas_dir);
    if (!loaded.library.handle) return loaded;
    void* h = loaded.library.handle;
    CublasLt& a = loaded.api;
    std::string missing;
    bind(h, "cublasLtCreate", a.create, missing);
    bind(h, "cublasLtGetVersion", a.version, missing);
    bind(h, "cublasLtMatmul", a.matmul, missing);
    bind(h, "cublasLtMatmulDescCreate", a.desc_create, missing);
    bind(h, "cublasLtMatmulDescDestroy", a.desc_destroy, missing);
    bind(h, "cublasLtMatmulDescSetAttribute", a.desc_set, missing);
    bind(h, "cublasLtMatrixLayoutCreate", a.layout_create, missing);
    bind(h, "cublasLtMatrixLayoutDestroy", a.layout_destroy, missing);
    bind(h, "cublasLtMatrixLayoutSetAttribute", a.layout_set, missing);
    bind(h, "cublasLtMatmulPreferenceCreate", a.preference_create, missing);
    bind(h, "cublasLtMatmulPreferenceDestroy", a.preference_destroy, missing);
    bind(h, "cublasLtMatmulPreferenceSetAttribute", a.preference_set, missing);
    bind(h, "cublasLtMatmulAlgoGetHeuristic", a.heuristic, missing);
    bind(h, "cublasLtMatmulAlgoConfigGetAttribute", a.algo_config_get, missing);
    bind(h, "cublasLtMatmulAlgoCheck", a.algo_check, missing);
    bind(h, "cublasLtGetStatusString", a.status_string, missing);
    if (!missing.empty()) {
      loaded.library.why = loaded.library.path + " lacks " + missing + " (cuBLAS 13 is needed)";
      return loaded;
    }
    loaded.ok = true;
    return loaded;
  }();
  return state;
}

LoadedCudnn& cudnn_state() {
  static LoadedCudnn state = [] {
    LoadedCudnn loaded;
    loaded.library = open_library("libcudnn.so.9", "PTBUNDLE_CUDNN_DIR", settings().cudnn_dir);
    if (!loaded.library.handle) return loaded;
    void* h = loaded.library.handle;
    Cudnn& a = loaded.api;
    std::string missing;
    bind(h, "cudnnGetVersion", a.version, missing);
    bind(h, "cudnnGetErrorString", a.error_string, missing);
    bind(h, "cudnnCreate", a.create, missing);
    bind(h, "cudnnSetStream", a.set_stream, missing);
    bind(h, "cudnnCreateTensorDescriptor", a.tensor_create, missing);
    bind(h, "cudnnSetTensorNdDescriptor", a.tensor_set, missing);
    bind(h, "cudnnDestroyTensorDescriptor", a.tensor_destroy, missing);
    bind(h, "cudnnCreateFilterDescriptor", a.filter_create, missing);
    bind(h, "cudnnSetFilterNdDescriptor", a.filter_set, missing);
    bind(h, "cudnnDestroyFilterDescriptor", a.filter_destroy, missing);
    bind(h, "cudnnCreateConvolutionDescriptor", a.conv_create, missing);
    bind(h, "cudnnSetConvolutionNdDescriptor", a.conv_set, missing);
    bind(h, "cudnnSetConvolutionGroupCount", a.conv_groups, missing);
    bind(h, "cudnnSetConvolutionMathType", a.conv_math, missing);
    bind(h, "cudnnDestroyConvolutionDescriptor", a.conv_destroy, missing);
    bind(h, "cudnnFindConvolutionForwardAlgorithmEx", a.find_forward, missing);
    bind(h, "cudnnGetConvolutionForwardWorkspaceSize", a.forward_workspace, missing);
    bind(h, "cudnnConvolutionForward", a.forward, missing);
    bind(h, "cudnnFindConvolutionBackwardDataAlgorithmEx", a.find_backward_data, missing);
    bind(h, "cudnnGetConvolutionBackwardDataWorkspaceSize", a.backward_data_workspace, missing);
    bind(h, "cudnnConvolutionBackwardData", a.backward_data, missing);
    bind(h, "cudnnAddTensor", a.add_tensor, missing);
    bind(h, "cudnnBackendCreateDescriptor", a.backend_create, missing);
    bind(h, "cudnnBackendDestroyDescriptor", a.backend_destroy, missing);
    bind(h, "cudnnBackendSetAttribute", a.backend_set, missing);
    bind(h, "cudnnBackendGetAttribute", a.backend_get, missing);
    bind(h, "cudnnBackendFinalize", a.backend_finalize, missing);
    bind(h, "cudnnBackendExecute", a.backend_execute, missing);
    if (!missing.empty()) {
      loaded.library.why = loaded.library.path + " lacks " + missing + " (cuDNN 9 is needed)";
      return loaded;
    }
    if (a.version() / 10000 != 9) {
      loaded.library.why = loaded.library.path + " is cuDNN " + std::to_string(a.version()) + "; cuDNN 9 is needed";
      return loaded;
    }
    loaded.ok = true;
    return loaded;
  }();
  return state;
}

std::string version_text(size_t version, size_t per_major) {
  return std::to_string(version / per_major) + "." + std::to_string(version % per_major / (per_major / 100));
}

}  // namespace

const CublasLt* cublas_lt() {
  std::lock_guard lock(open_mutex);
  LoadedCublas& state = cublas_state();
  return state.ok ? &state.api : nullptr;
}

const Cudnn* cudnn() {
  std::lock_guard lock(open_mutex);
  LoadedCudnn& state = cudnn_state();
  return state.ok ? &state.api : nullptr;
}

std::string why_cublas() {
  std::lock_guard lock(open_mutex);
  return cublas_state().library.why;
}

std::string why_cudnn() {
  std::lock_guard lock(open_mutex);
  return cudnn_state().library.why;
}

Status open_libraries_for(const std::vector<std::string>& imports, const std::string& label, std::string& opened) {
  std::string failures;
  for (const ShimLibraryNeed& need : shim_libraries_needed(imports)) {
    std::string shims;
    for (const auto& name : need.shims) shims += (shims.empty() ? "" : ", ") + name;
    std::string why;
    std::string found;
    if (need.library == ShimLibrary::Cublas) {
      if (cublas_lt()) {
        found = "cuBLASLt " + version_text(cublas_lt()->version(), 10000) + " (" + cublas_state().library.path + ")";
      } else {
        why = why_cublas();
      }
    } else if (need.library == ShimLibrary::Cudnn) {
      if (cudnn()) {
        found = "cuDNN " + version_text(cudnn()->version(), 10000) + " (" + cudnn_state().library.path + ")";
      } else {
        why = why_cudnn();
      }
    }
    if (!found.empty()) opened += (opened.empty() ? "" : ", ") + found;
    if (why.empty()) continue;
    const AotiShim* row = find_builtin_shim(need.shims.front());
    const std::string fix = row ? shim_fix_text(row->fix) : "";
    failures += (failures.empty() ? "" : "; ") + std::string(shim_library_name(need.library)) + " is needed for " +
                shims + " and cannot be opened: " + why + (fix.empty() ? "" : "; or " + fix);
  }
  if (failures.empty()) return {};
  return invalid(label + ": " + failures);
}

}  // namespace ptb::builtin

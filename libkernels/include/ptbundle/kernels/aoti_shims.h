// What the aoti_* functions an AOTInductor library imports mean for the
// built-in runtime: the shim table (aoti_shim_table.inc) as data, and the
// words that explain a shim that is missing or cannot run. Knowledge of a
// library's imports, so it lives beside the ELF reader: inspect, verify, run
// and the runtime module all read the same table.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ptb {

enum class ShimFamily {
  Numbering,    // dtype, device, layout and memory-format numbers
  Runtime,      // grad mode, warnings, checks
  Tensor,       // tensor handles: allocation, views, copies, getters
  Device,       // device and stream guards
  Gemm,         // mm, addmm, bmm, baddbmm, ...
  Convolution,  // convolution in 1 to 3 d, transposed and grouped
  Attention,    // scaled dot-product attention
  Sort,         // sort, topk
  Index,        // index, index_put, scatter, nonzero
  Random,       // rand, randn, randint
  Quantized,    // weight-only integer matrix products
  Scalar,       // .item() and scalars as tensors
};

enum class ShimLibrary { None, Cublas, Cudnn };

// What makes a part run without a shim whose library is missing.
enum class ShimFix { None, TritonGemm, TritonConv, TritonSdpa };

struct AotiShim {
  std::string_view name;
  ShimFamily family = ShimFamily::Tensor;
  ShimLibrary library = ShimLibrary::None;
  ShimFix fix = ShimFix::None;
};

// Every row of the table, sorted by name.
std::span<const AotiShim> builtin_runtime_shims();
// The row of `name`, or nullptr when the built-in runtime lacks it.
const AotiShim* find_builtin_shim(std::string_view name);

const char* shim_family_name(ShimFamily family);  // "GEMM", "convolution", ...
// "cuBLAS", "cuDNN"; "" for None.
const char* shim_library_name(ShimLibrary library);
// The file the runtime opens: "libcublasLt.so.13", "libcudnn.so.9".
const char* shim_library_file(ShimLibrary library);
// "compile with max_autotune and Triton-only GEMM backends (...)".
std::string shim_fix_text(ShimFix fix);

// For a shim the table lacks: its likely family, from its name (an ATen
// fallback: aoti_torch_cuda_<op>), and what fixes a library importing it.
ShimFamily guess_shim_family(std::string_view name);
std::string missing_shim_fix(std::string_view name);

// The aoti_* names among `imports` the built-in runtime lacks.
std::vector<std::string> missing_builtin_shims(const std::vector<std::string>& imports);

// One line naming every missing shim, grouped by what fixes it:
// "<origin>: the built-in AOTInductor runtime lacks 2 functions the library
// imports: a, b (fix: ...)".
std::string missing_shims_message(const std::string& origin, const std::vector<std::string>& missing);

// The libraries (cuBLAS, cuDNN) the shims among `imports` need, each with
// the shims that need it.
struct ShimLibraryNeed {
  ShimLibrary library = ShimLibrary::None;
  std::vector<std::string> shims;
};
std::vector<ShimLibraryNeed> shim_libraries_needed(const std::vector<std::string>& imports);

}  // namespace ptb

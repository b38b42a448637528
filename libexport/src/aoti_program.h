// The ExecuTorch program for one AOTInductor model: what ExecuTorch's
// to_executorch() emits for a graph that the CUDA partitioner lowered whole
// (see ../shared/fixtures/cuda/sm80/model.pte): each input copied to the GPU
// (et_copy::_h2d_copy.out), one CudaBackend delegate call, each output copied
// back (et_copy::_d2h_copy.out); host tensors in memory buffer 1, device
// tensors in buffer 2 (placed on CUDA by non_const_buffer_device).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptbundle/fb/program_generated.h"

namespace ptb::detail {

struct TensorSignature {
  int8_t scalar_type = 0;
  std::vector<int32_t> sizes;  // upper bounds where `bounded`
  uint64_t nbytes = 0;         // at those sizes: what memory planning reserves
  bool bounded = false;        // ExecuTorch's DYNAMIC_BOUND: any sizes up to `sizes`
};

// Segment order of the program: ExecuTorch's empty constant segment, the
// delegate payload, the library as named data, then its kernel files.
inline constexpr uint32_t kConstantSegment = 0;
inline constexpr uint32_t kPayloadSegment = 1;
inline constexpr uint32_t kLibrarySegment = 2;

struct SingleDelegateProgram {
  std::string method_name;  // "forward"
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  std::string data_name;    // the part name
  std::string library_key;  // "<sha256 of the .so>_so_blob"
  // The library's kernel files (kernel_files.h), in segments after the
  // library's, in this order.
  std::vector<std::string> kernel_file_keys;
};

std::unique_ptr<fb::ProgramT> make_single_delegate_program(const SingleDelegateProgram& spec);

// torch.utils._pytree's serialized specs, as ExecuTorch stores them in
// container_meta_type: ((x0, ..., xn-1), {}) for the inputs, a leaf for one
// output and a tuple of leaves for several.
std::string input_tree_spec(size_t count);
std::string output_tree_spec(size_t count);

}  // namespace ptb::detail

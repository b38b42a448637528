// Kernel files: the GPU code of an AOTInductor library compiled with
// PyTorch's default embed_kernel_binary=False. Each Triton kernel is a file of
// its own (.cubin; .fatbin with emit_multi_arch_kernel) that the library
// loads at the kernel's first launch with cuModuleLoad(<cubin_dir>/<name>),
// where <name> is the file name of the path it was compiled with and
// <cubin_dir> the folder its container was created with
// (AOTInductorModelContainerCreateWithDevice). In a .pt2 they sit beside the
// library; in a bundle each is named data of the program that holds the
// library, keyed "<library key>/<file name>", so that the library and its
// kernels travel, hash and merge together. ExecuTorch reads no such key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/kernel_file_name.h"  // check_kernel_file_name
#include "ptbundle/base/result.h"

namespace ptb {

class PteFile;
struct PteNamedData;

// "<library key>/<file name>".
std::string kernel_file_key(std::string_view library_key, std::string_view file_name);

struct KernelFile {
  std::string name;  // the file name the library loads
  std::string key;   // the named-data key
  const PteNamedData* entry = nullptr;
};

// The kernel files of the library keyed `library_key` among `pte`'s named
// data, in key order; an error names the first key under the library's
// prefix whose file name fails check_kernel_file_name.
Result<std::vector<KernelFile>> kernel_files_of(const PteFile& pte, std::string_view library_key);

// The kernel file names a library loads: the file name of every
// NUL-terminated path in its bytes that ends in ".cubin", ".fatbin" or ".ptx"
// (AOTInductor compiles each kernel's path into the library as a string),
// sorted and distinct; names that fail check_kernel_file_name (a format
// string such as "%s.cubin") are left out.
std::vector<std::string> kernel_files_named_by(Bytes library);

// The library's named kernel files that `available` lacks, as one error:
// "<context>: the library loads kernel file(s) a, b, which <where> does not
// hold; expected ...". `available` holds file names.
Status check_kernel_files_present(Bytes library, const std::vector<std::string>& available, const std::string& context,
                                  const std::string& where);

}  // namespace ptb

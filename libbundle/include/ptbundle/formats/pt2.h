// AOTInductor packages (.pt2): the zip that torch._inductor.aoti_compile_and_package
// writes. Every entry sits under one archive root folder ("<root>/..."):
//   <root>/archive_format ("pt2"), archive_version, byteorder, .data/version, ...
//   <root>/data/aotinductor/<model>/<hash>.wrapper.so      the compiled model
//   <root>/data/aotinductor/<model>/<hash>.wrapper_metadata.json  AOTI_* facts
//   <root>/data/aotinductor/<model>/<hash>.wrapper_weights.blob   weights, when
//        compiled with package_constants_in_so=False (binary_blob format)
//   <root>/data/aotinductor/<model>/<hash>.cubin / .fatbin / .ptx   kernels, when
//        not embedded in the library (the default)
//   <root>/data/aotinductor/<model>/*.cpp, *.o, *_compile_flags.json, ...
//   <root>/data/constants/..., <root>/data/weights/...    weights kept outside
//        the model folder by torch.export's archive format
//
// open() reads the central directory only (and the small metadata JSONs).
// Entry names come from the file and are untrusted: this code never turns
// them into paths; callers choose output paths. Every read is bounded by a
// limit the caller passes, checked against the declared size and against
// the bytes actually produced, so a zip bomb fails instead of filling memory
// or disk. libzip checks each entry's CRC-32 when it has been read through.
// A Pt2Package is not safe to use from two threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptbundle/base/file.h"
#include "ptbundle/base/result.h"

namespace ptb {

struct Pt2Entry {
  std::string name;             // full name inside the zip, "<root>/data/..."
  uint64_t index = 0;           // libzip's index
  uint64_t size = 0;            // uncompressed, as the central directory says
  uint64_t compressed_size = 0;
  uint16_t compression_method = 0;  // ZIP method number: 0 stored, 8 deflate, ...
  uint32_t crc32 = 0;
  bool encrypted = false;
};

// One data/aotinductor/<model>/ folder. Fields hold full entry names.
struct Pt2Model {
  std::string name;       // <model> ("model" unless the package was made otherwise)
  std::string directory;  // "<root>/data/aotinductor/<model>/"
  std::string wrapper_library;                  // the *.so
  std::optional<std::string> weights_blob;      // *_weights.blob
  std::vector<std::string> kernel_binaries;     // *.cubin, *.fatbin, *.ptx
  std::vector<std::string> cpp_sources;         // *.cpp
  std::vector<std::string> object_files;        // *.o (kept constants when compiled from source)
  std::optional<std::string> metadata_entry;    // the wrapper library's *_metadata.json
  std::vector<std::pair<std::string, std::string>> metadata;  // in file order

  // With no blob, the weights are linked into the library (the default).
  bool weights_in_library() const { return !weights_blob.has_value(); }
  bool kernels_in_separate_files() const { return !kernel_binaries.empty(); }
  const std::string* metadata_value(std::string_view key) const;
};

struct Pt2Limits {
  uint64_t max_metadata_bytes = 1 << 20;  // each *_metadata.json and small marker file
};

class Pt2Package {
 public:
  static Result<Pt2Package> open(const std::string& path, Pt2Limits limits = {});

  Pt2Package();
  Pt2Package(Pt2Package&&) noexcept;
  Pt2Package& operator=(Pt2Package&&) noexcept;
  ~Pt2Package();

  const std::string& path() const { return path_; }
  const std::string& root() const { return root_; }  // "mlp_et/"; "" when entries have no root folder
  const std::string& archive_format() const { return archive_format_; }    // "pt2", or "" if absent
  const std::string& archive_version() const { return archive_version_; }  // "0", or "" if absent
  const std::vector<Pt2Entry>& entries() const { return entries_; }
  const std::vector<Pt2Model>& models() const { return models_; }
  // Entries under <root>/data/constants/ and <root>/data/weights/.
  const std::vector<std::string>& external_weight_entries() const { return external_weights_; }

  const Pt2Entry* find_entry(std::string_view name) const;
  const Pt2Model* find_model(std::string_view name) const;

  // Every read below goes through one streaming function that checks, in
  // chunks of 1 MiB, that the entry inflates to exactly its declared size (and
  // no more than max_bytes) and that its CRC-32 matches: every command sees
  // the same verdict on a damaged package.

  // The whole entry in memory; fails if it is, or inflates to, more than
  // max_bytes, or if its CRC does not match.
  Result<std::vector<uint8_t>> read_entry(std::string_view name, uint64_t max_bytes) const;
  // Appends the entry to `out` in chunks. Same limits and checks as read_entry;
  // on failure `out` holds a partial copy and should be discarded.
  Status extract_entry(std::string_view name, AtomicOutput& out, uint64_t max_bytes) const;
  // extract_entry into a new file at `output_path` (chosen by the caller).
  Status extract_entry_to(std::string_view name, const std::string& output_path, uint64_t max_bytes) const;
  // Reads the entry through (size and CRC checked) with memory independent
  // of its size; returns its SHA-256 in lowercase hex.
  Result<std::string> sha256_entry(std::string_view name, uint64_t max_bytes) const;
  // The first `count` bytes of the entry (fewer if it is shorter); its size
  // and CRC are not checked, as the entry is not read through.
  Result<std::vector<uint8_t>> read_entry_prefix(std::string_view name, size_t count) const;
  // The entry inflated into an unnamed temporary file (O_TMPFILE in $TMPDIR)
  // and mapped: for scanners that need random access, without holding the
  // inflated bytes in anonymous memory.
  Result<MappedFile> extract_entry_mapped(std::string_view name, uint64_t max_bytes) const;

 private:
  struct Archive;
  template <class Sink>
  Status stream_entry(std::string_view name, uint64_t max_bytes, Sink&& sink) const;

  std::string path_;
  std::string root_;
  std::string archive_format_;
  std::string archive_version_;
  std::vector<Pt2Entry> entries_;
  std::vector<Pt2Model> models_;
  std::vector<std::string> external_weights_;
  std::unique_ptr<Archive> archive_;
};

// What `ptbundle export` requires of an AOTInductor model and `verify`
// checks the same way: the layout ExecuTorch's CUDA backend compiles (kernels
// embedded in the library, weights in a *_weights.blob), device "cuda", the
// library and the blob inflating to their declared sizes with matching
// CRC-32s, and a blob at least as large as the constants the model's
// wrapper source declares (when the package holds it). `compile_hint` is
// appended to layout errors. Without `read_through` the entries are not read
// here: export reads them as it copies them, through the same checks.
Status check_cuda_package_model(const Pt2Package& package, const Pt2Model& model, const std::string& compile_hint,
                                bool read_through);
// The weights blob the model needs: the sum of the data_size of the
// constants its *.wrapper.cpp declares (folded constants excluded); nullopt
// when the package has no wrapper source.
Result<std::optional<uint64_t>> pt2_needed_weights_bytes(const Pt2Package& package, const Pt2Model& model);

// What AOTInductor's generated wrapper source (*.wrapper.cpp) says where the
// package records nothing else (pt2_wrapper.cc). The text of the model's
// wrapper source, nullopt when the package has none:
Result<std::optional<std::string>> pt2_wrapper_source(const Pt2Package& package, const Pt2Model& model);
// The counts its constructor passes to AOTInductorModelBase(inputs,
// outputs, constants, ...); nullopt when the text has no such call.
struct Pt2WrapperCounts {
  uint64_t inputs = 0;
  uint64_t outputs = 0;
  uint64_t constants = 0;
};
std::optional<Pt2WrapperCounts> pt2_wrapper_counts(std::string_view source);
// Each of `count` outputs' dtype and sizes, as run_impl allocates the buffer
// it returns (aoti_torch_empty_strided with constant sizes); nullopt for an
// output it cannot follow (a view, an input returned, a symbolic size).
struct Pt2OutputSignature {
  int8_t scalar_type = 0;
  std::vector<int64_t> sizes;
};
std::vector<std::optional<Pt2OutputSignature>> pt2_wrapper_outputs(std::string_view source, uint64_t count);
// Each of `count` inputs as its generated check (check_input_<i>, what
// AOTI_RUNTIME_CHECK_INPUTS runs) states it: the dtype, and the size of each
// dimension it fixes (a dynamic one is checked against bounds instead, and
// is absent). nullopt for an input with no such check.
struct Pt2InputCheck {
  std::optional<int8_t> scalar_type;
  std::vector<std::pair<uint32_t, int64_t>> sizes;  // (dimension, size), in the text's order
};
std::vector<std::optional<Pt2InputCheck>> pt2_wrapper_inputs(std::string_view source, uint64_t count);

}  // namespace ptb

// Making CUDA exports for merge tests and the merge benchmark: the program of
// a real ExecuTorch export (a template .pte) with its CUDA delegate's payload,
// libraries and weights replaced, written by ptbundle's own .pte and .ptd
// writers. Weights come from ranges of files, so a 2 GiB export costs no
// memory to write. Header-only so that bench/ can include it too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ptbundle/formats/cuda_payload.h"
#include "ptbundle/formats/ptd_writer.h"
#include "ptbundle/formats/pte.h"
#include "ptbundle/formats/pte_writer.h"
#include "ptbundle/base/sha256.h"

namespace ptb::test {

struct ExportLibrary {
  uint32_t target_sm = 0;
  uint32_t ptx_compute = 0;
  bool fallback_only = false;
  std::vector<uint8_t> bytes;  // the shared library
};

struct ExportWeight {
  std::string fqn;
  const MappedFile* file = nullptr;  // bytes [offset, offset + size) of it
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct ExportSpec {
  std::vector<ExportLibrary> libraries;
  std::vector<ExportWeight> weights;
  // Extra named data in the .pte, not CUDA's (a program's own blobs).
  std::vector<std::pair<std::string, std::vector<uint8_t>>> extra_named_data;
  // Compile specs appended to the CUDA delegate.
  std::vector<std::pair<std::string, std::string>> extra_specs;
  // ExecuTorch's older layout: payload "<so_key>\n<weights_key>", one library
  // (libraries[0], its target not recorded) and one weights blob (weights[0]).
  bool single_blob = false;
};

inline std::string library_key(const std::vector<uint8_t>& bytes) {
  return to_hex(sha256(Bytes(bytes.data(), bytes.size()))) + "_so_blob";
}

inline std::string weight_key(const std::string& fqn) { return "cuda_fqn_weight:cuda:" + fqn; }

inline std::string blob_weights_key(const ExportWeight& weight) {
  return to_hex(sha256(weight.file->bytes().subspan(weight.offset, weight.size))) + "_weights_blob";
}

// The key each weight is stored under in the data file (or the .pte).
inline std::string stored_key(const ExportSpec& spec, const ExportWeight& weight) {
  return spec.single_blob ? blob_weights_key(weight) : weight_key(weight.fqn);
}

// Float32 1-D weights, as the CUDA backend records a Linear's bias.
inline CudaPayload payload_for(const ExportSpec& spec) {
  CudaPayload payload;
  if (spec.single_blob) {
    payload.form = CudaPayloadForm::SingleBlob;
    payload.so_key = library_key(spec.libraries.at(0).bytes);
    payload.weights_key = blob_weights_key(spec.weights.at(0));
    return payload;
  }
  payload.form = CudaPayloadForm::MultiVariant;
  for (const ExportLibrary& library : spec.libraries) {
    payload.variants.push_back({library.target_sm, library.ptx_compute, library.fallback_only, library_key(library.bytes)});
  }
  for (const ExportWeight& weight : spec.weights) {
    CudaWeight entry;
    entry.fqn = weight.fqn;
    entry.storage_key = weight_key(weight.fqn);
    entry.storage_nbytes = weight.size;
    entry.dtype = 6;
    entry.device_type = 1;
    entry.sizes = {static_cast<int64_t>(weight.size / 4)};
    entry.strides = {1};
    payload.weights.push_back(entry);
  }
  return payload;
}

// Writes `pte_path` (program of `template_pte`, whose first CUDA delegate
// gets the payload of `spec`) and, when `ptd_path` is not empty, the weights
// into `ptd_path`; with an empty `ptd_path` the weights go into the .pte.
inline Status write_export(const std::string& template_pte, const ExportSpec& spec, const std::string& pte_path,
                           const std::string& ptd_path) {
  PTB_TRY(PteFile base, PteFile::open(template_pte));
  std::unique_ptr<fb::ProgramT> program(base.program().UnPack());
  std::vector<uint8_t> payload = encode_cuda_payload(payload_for(spec));

  std::vector<SegmentSource> segments;
  segments.push_back(SegmentSource::memory(Bytes()));  // constants: none
  if (program->constant_segment) program->constant_segment->segment_index = 0;
  program->backend_delegate_data.clear();
  program->named_data.clear();
  bool placed = false;
  for (auto& plan : program->execution_plan) {
    for (auto& delegate : plan->delegates) {
      if (delegate->id != "CudaBackend" || placed) continue;
      delegate->processed = std::make_unique<fb::BackendDelegateDataReferenceT>();
      delegate->processed->location = fb::DataLocation::SEGMENT;
      delegate->processed->index = static_cast<uint32_t>(segments.size());
      segments.push_back(SegmentSource::memory(Bytes(payload.data(), payload.size())));
      for (const auto& [key, value] : spec.extra_specs) {
        auto compile_spec = std::make_unique<fb::CompileSpecT>();
        compile_spec->key = key;
        compile_spec->value.assign(value.begin(), value.end());
        delegate->compile_specs.push_back(std::move(compile_spec));
      }
      placed = true;
    }
  }
  if (!placed) return invalid(template_pte + ": no CudaBackend delegate to replace");

  auto add_named = [&](const std::string& key, SegmentSource source) {
    auto entry = std::make_unique<fb::NamedDataT>();
    entry->key = key;
    entry->segment_index = static_cast<uint32_t>(segments.size());
    segments.push_back(source);
    program->named_data.push_back(std::move(entry));
  };
  for (const ExportLibrary& library : spec.libraries) {
    add_named(library_key(library.bytes), SegmentSource::memory(Bytes(library.bytes.data(), library.bytes.size())));
  }
  for (const auto& [key, value] : spec.extra_named_data) add_named(key, SegmentSource::memory(Bytes(value.data(), value.size())));
  if (ptd_path.empty()) {
    for (const ExportWeight& weight : spec.weights) {
      add_named(stored_key(spec, weight), SegmentSource::file_range(*weight.file, weight.offset, weight.size));
    }
  } else {
    PtdContents contents;
    for (const ExportWeight& weight : spec.weights) {
      contents.add(stored_key(spec, weight), SegmentSource::file_range(*weight.file, weight.offset, weight.size));
    }
    PTB_TRY(auto ptd_layout, write_ptd_file(ptd_path, contents));
    (void)ptd_layout;
  }
  PTB_TRY(auto pte_layout, write_pte_file(pte_path, *program, segments));
  (void)pte_layout;
  return {};
}

}  // namespace ptb::test

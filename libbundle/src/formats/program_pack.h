// Serializing the flatc object API tables the way ExecuTorch's serializer
// does. flatc's generated Pack() leaves out empty vectors and empty strings,
// but ExecuTorch writes every list and string field of its schema (only the
// Optional ones may be absent), and its runtime refuses a program whose
// plan lacks e.g. `delegates` or whose scalar tensor lacks `sizes`. These
// packers emit every such field, empty or not.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include "ptbundle/fb/flat_tensor_generated.h"
#include "ptbundle/fb/program_generated.h"

namespace ptb::detail {

flatbuffers::Offset<fb::Program> pack_program(flatbuffers::FlatBufferBuilder& builder, const fb::ProgramT& program);
flatbuffers::Offset<fb::ptd::FlatTensor> pack_flat_tensor(flatbuffers::FlatBufferBuilder& builder,
                                                         const fb::ptd::FlatTensorT& table);

}  // namespace ptb::detail

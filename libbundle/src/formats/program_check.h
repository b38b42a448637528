// The checks PteFile::open runs on a verified Program: every index a reader
// could follow (segments, named data, constants, values, operators,
// delegates, instruction targets) is compared with what it indexes, so that
// nothing after open() needs a bounds check. Private to libbundle.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ptbundle/formats/pte.h"
#include "ptbundle/fb/program_generated.h"

namespace ptb::detail {

Result<std::vector<PteSegment>> check_segments(const fb::Program& program,
                                               const std::optional<PteExtendedHeader>& header,
                                               uint64_t data_size, const std::string& where);

Result<std::vector<PteNamedData>> check_named_data(const fb::Program& program,
                                                   const std::vector<PteSegment>& segments,
                                                   const std::string& where);

Status check_constants(const fb::Program& program, const std::vector<PteSegment>& segments,
                       const std::string& where);

// Where each delegate's processed bytes are, per plan and delegate.
struct DelegateRef {
  bool in_segment = false;
  uint32_t index = 0;
};

Result<std::vector<std::vector<DelegateRef>>> check_plans(const fb::Program& program,
                                                          const std::vector<PteSegment>& segments,
                                                          const std::string& where);

}  // namespace ptb::detail

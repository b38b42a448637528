// Where things are inside an AOTInductor package, decided from entry names
// alone (no entry is read here), and the metadata JSON's shape.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ptbundle/formats/pt2.h"

namespace ptb {

struct Pt2Layout {
  std::string root;  // "<root>/" or ""
  std::vector<Pt2Model> models;
  std::vector<std::string> external_weights;
};

Result<Pt2Layout> classify_pt2_entries(const std::string& path, const std::vector<Pt2Entry>& entries);

// {"AOTI_DEVICE_KEY": "cuda", ...}: an object of strings, in file order.
Result<std::vector<std::pair<std::string, std::string>>> parse_pt2_metadata(const std::string& context,
                                                                            const std::string& text);

}  // namespace ptb

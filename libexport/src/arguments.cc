// The command-line shapes of --part and --example, parsed here so that the
// CLI stays a thin layer and the rules are tested with the library.
#include "ptbundle/export/export.h"
#include "ptbundle/program/program_argument.h"

namespace ptb {
namespace {

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace

// ExecuTorch's Metal backend (backends/apple/metal) stores its library and
// weights as named data of the program itself: no data file, no data name.
bool backend_keeps_data_inside(std::string_view backend_id) { return backend_id == "MetalBackend"; }

Result<PartRequest> parse_part_argument(std::string_view text) {
  size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0 || equals + 1 == text.size()) {
    return usage_error("--part \"" + std::string(text) +
                       "\": expected NAME=SOURCE, where SOURCE is model.pte, model.pte,data.ptd or package.pt2");
  }
  PartRequest request;
  request.name = std::string(text.substr(0, equals));
  // The rule every command splits PROGRAM[,DATA] by (program_argument.h).
  auto source = parse_program_argument(text.substr(equals + 1));
  if (!source.ok()) return usage_error("--part " + request.name + ": " + source.error().message);
  request.program = std::move(source->program);
  request.data_file = std::move(source->data);
  return request;
}

Result<std::pair<std::string, ExampleFiles>> parse_example_argument(std::string_view text) {
  size_t equals = text.find('=');
  size_t colon = text.find(':', equals == std::string_view::npos ? 0 : equals);
  if (equals == std::string_view::npos || equals == 0 || colon == std::string_view::npos) {
    return usage_error("--example \"" + std::string(text) +
                       "\": expected PART=in0.npy[,in1.npy...]:out0.npy[,...] (or nothing after ':' for a program "
                       "that draws its own noise)");
  }
  ExampleFiles files;
  auto inputs = text.substr(equals + 1, colon - equals - 1);
  auto outputs = text.substr(colon + 1);
  if (!inputs.empty()) files.inputs = split(inputs, ',');
  if (!outputs.empty()) files.outputs = split(outputs, ',');
  for (const auto* list : {&files.inputs, &files.outputs}) {
    for (const auto& file : *list) {
      if (file.empty()) return usage_error("--example \"" + std::string(text) + "\": an empty file name between commas");
    }
  }
  // No outputs: a sampler's example (the test case checks dtype, shape and
  // finiteness); no inputs is never an example.
  if (files.inputs.empty())
    return usage_error("--example \"" + std::string(text) + "\": expected at least one input file before ':'");
  return std::make_pair(std::string(text.substr(0, equals)), std::move(files));
}

}  // namespace ptb

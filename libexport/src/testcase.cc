// A part's test case: the example inputs and expected outputs, given as .npy
// files, stored as testcases/<name>.ptd with one named tensor per value
// (keys from testcase_key) so that `verify` and `run` read them like any
// ExecuTorch data file.
#include <limits>

#include "prepared_part.h"
#include "ptbundle/base/text.h"
#include "ptbundle/results/tolerance.h"

namespace ptb::detail {
namespace {

// A dynamic_bound tensor accepts any sizes up to its bounds.
Status check_against(const NpyHeader& npy, const ValueSpec& spec, const std::string& what) {
  if (spec.kind != "tensor" || !spec.tensor)
    return invalid(what + ": the method takes a " + spec.kind + " here; expected a tensor for a .npy example");
  const auto& tensor = *spec.tensor;
  if (tensor.scalar_type != npy.scalar_type) {
    const bool raw = npy.descr.ends_with("V2");
    return invalid(what + ": dtype " + scalar_type_name(npy.scalar_type) + " (" + npy.descr +
                   (raw ? ": 2-byte raw values, read as bfloat16 as ml_dtypes saves it" : "") + "); the method expects " +
                   scalar_type_name(tensor.scalar_type));
  }
  bool bounded = tensor.dynamism != "static";
  bool fits = npy.shape.size() == tensor.sizes.size();
  for (size_t d = 0; fits && d < npy.shape.size(); ++d) {
    auto expected = static_cast<uint64_t>(tensor.sizes[d]);
    fits = bounded ? npy.shape[d] <= expected : npy.shape[d] == expected;
  }
  if (!fits) {
    return invalid(what + ": shape " + shape_text(npy.shape) + "; the method expects " + shape_text(tensor.sizes) +
                   (bounded ? " (upper bounds)" : ""));
  }
  return {};
}

Result<TensorLayout> layout_of(const NpyHeader& npy, const std::string& what) {
  TensorLayout layout;
  layout.scalar_type = npy.scalar_type;
  for (size_t d = 0; d < npy.shape.size(); ++d) {
    // ExecuTorch tensor sizes are int32.
    if (npy.shape[d] > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      return invalid(what + ": dimension " + std::to_string(d) + " is " + std::to_string(npy.shape[d]) +
                     "; expected at most 2147483647 (ExecuTorch sizes are 32-bit)");
    layout.sizes.push_back(static_cast<int32_t>(npy.shape[d]));
    layout.dim_order.push_back(static_cast<uint8_t>(d));
  }
  if (npy.shape.size() > 16) return invalid(what + ": " + std::to_string(npy.shape.size()) + " dimensions; expected at most 16");
  return layout;
}

Status add_values(PreparedPart& part, PtdContents& contents, const std::vector<std::string>& paths, bool outputs,
                  const ExampleTarget& target) {
  const char* role = outputs ? "output" : "input";
  if (target.method) {
    const auto& specs = outputs ? target.method->outputs : target.method->inputs;
    if (paths.size() != specs.size()) {
      return invalid("--example for part " + part.name + ": " + std::to_string(paths.size()) + " " + role +
                     " file(s); method " + target.method_name + " has " + std::to_string(specs.size()) + " " + role +
                     "(s)");
    }
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    PTB_TRY(auto npy, NpyFile::open(paths[i]));
    std::string what = paths[i] + " (" + role + " " + std::to_string(i) + " of " + target.method_name + ")";
    if (target.method) PTB_CHECK(check_against(npy.header(), (outputs ? target.method->outputs : target.method->inputs)[i], what));
    PTB_TRY(auto layout, layout_of(npy.header(), what));
    auto owned = std::make_unique<NpyFile>(std::move(npy));
    if (outputs) {
      const NpyHeader& header = owned->header();
      Tolerance tolerance = output_tolerance({header.scalar_type, header.shape, owned->data()});
      part.output_checks.push_back({true, tolerance.atol, tolerance.rtol, tolerance.rule});
    }
    contents.add(testcase_key(target.method_name, outputs, i),
                 SegmentSource::file_range(owned->file(), owned->header().data_offset, owned->header().data_size),
                 std::move(layout));
    part.npys.push_back(std::move(owned));
  }
  return {};
}

}  // namespace

void mark_outputs_unchecked(PreparedPart& part, size_t count, const std::vector<std::string>& noise) {
  std::string why;
  if (noise.empty()) {
    why = "the example gives inputs only (--example " + part.name +
          "=IN.npy[,...]: with nothing after ':', as for a program that draws its own noise and never reproduces "
          "its outputs)";
  } else {
    why = "the program draws its own noise (its library imports " + join(noise, ", ") +
          "), so no run reproduces the example's outputs; they fixed only the dtypes and shapes";
  }
  part.testcase_outputs = static_cast<uint32_t>(count);
  part.output_checks.assign(count, ManifestOutputCheck{
      false, 0, 0, "values not compared: " + why + "; checked: dtype and shape against the signature, every value finite"});
}

Status attach_example(PreparedPart& part, const ExampleFiles& example, const ExampleTarget& target) {
  if (example.inputs.empty()) return usage_error("--example for part " + part.name + ": no input files; expected PART=in0.npy[,in1.npy...]:out0.npy[,...]");
  PtdContents contents;
  PTB_CHECK(add_values(part, contents, example.inputs, false, target));
  if (!example.outputs.empty()) PTB_CHECK(add_values(part, contents, example.outputs, true, target));
  part.testcase_inputs = static_cast<uint32_t>(example.inputs.size());
  part.testcase_outputs = static_cast<uint32_t>(example.outputs.size());
  // Inputs only: the method's signature fixes the outputs (a .pt2 part's
  // caller marks them once it has read them from the package).
  if (example.outputs.empty() && target.method) mark_outputs_unchecked(part, target.method->outputs.size());
  part.testcase = std::move(contents);
  return {};
}

}  // namespace ptb::detail

// testcases/<part>.ptd: one named tensor per input and expected output
// ("<method>.input.<i>", "<method>.output.<i>"), each with a layout whose
// dtype and shape match the method and whose bytes match the layout, so that
// reproducing the test case later cannot trip over the file itself.
#include <algorithm>

#include "integrity/integrity_internal.h"

namespace ptb::detail {
namespace {

// The problem with one value, or "" when there is none.
std::string value_problem(const PtdEntry& entry, const ValueSpec* spec) {
  if (!entry.layout) return "has no tensor layout (dtype, sizes); expected a tensor";
  const TensorLayout& layout = *entry.layout;
  if (!scalar_type_size(layout.scalar_type))
    return "has dtype " + std::to_string(layout.scalar_type) + ", which ptbundle cannot compare";
  for (int32_t size : layout.sizes) {
    if (size < 0) return "has a negative size in " + shape_text(layout.sizes);
  }
  const std::optional<uint64_t> nbytes = tensor_bytes(layout.sizes, layout.scalar_type);
  if (!nbytes) return "has sizes that overflow 64 bits";
  const uint64_t bytes = *nbytes;
  if (bytes != entry.size) {
    return "holds " + std::to_string(entry.size) + " bytes; its layout " + std::string(scalar_type_name(layout.scalar_type)) +
           " " + shape_text(layout.sizes) + " needs " + std::to_string(bytes);
  }
  if (!spec) return "";
  if (spec->kind != "tensor" || !spec->tensor) return "is a tensor; the method has a " + spec->kind + " there";
  const TensorSpec& tensor = *spec->tensor;
  const bool bounded = tensor.dynamism != "static";
  bool fits = layout.scalar_type == tensor.scalar_type && layout.sizes.size() == tensor.sizes.size();
  for (size_t d = 0; fits && d < layout.sizes.size(); ++d) {
    fits = bounded ? layout.sizes[d] <= tensor.sizes[d] : layout.sizes[d] == tensor.sizes[d];
  }
  if (fits) return "";
  return "is " + std::string(scalar_type_name(layout.scalar_type)) + " " + shape_text(layout.sizes) + "; the method has " +
         scalar_type_name(tensor.scalar_type) + " " + shape_text(tensor.sizes) + (bounded ? " (upper bounds)" : "");
}

}  // namespace

std::optional<std::string> check_testcase_file(const ManifestPart& part, const ManifestTestcase& testcase,
                                               const PtdFile& file, const ProgramWithData& program, CheckList& checks) {
  const std::string subject = file.path();
  const std::string fix = "; export the part again with --example";
  const std::vector<MethodInfo>& methods = program.methods();
  auto method = std::find_if(methods.begin(), methods.end(), [&](const MethodInfo& m) {
    return file.find(testcase_key(m.name, false, 0)) || file.find(testcase_key(m.name, true, 0));
  });
  if (method == methods.end()) {
    std::vector<std::string> names;
    for (const auto& m : methods) names.push_back(in_quotes(testcase_key(m.name, false, 0)));
    checks.fail(checks::kTestcaseFile, subject,
                "holds none of the keys " + join(names, ", ") + "; expected the test case of a method of " +
                    part.name + ".pte" + fix);
    return std::nullopt;
  }
  size_t problems = 0;
  auto count_problem = [&](const char* role, uint32_t recorded, size_t taken) {
    if (recorded == taken) return;
    ++problems;
    checks.fail(checks::kTestcaseFile, subject,
                "bundle.json records " + std::to_string(recorded) + " " + role + "(s); method " + in_quotes(method->name) +
                    " has " + std::to_string(taken) + fix);
  };
  count_problem("input", testcase.inputs, method->inputs.size());
  count_problem("output", testcase.outputs, method->outputs.size());
  for (bool output : {false, true}) {
    // The method's own count bounds the loop: a hand-edited manifest may say 4 billion.
    const auto& specs = output ? method->outputs : method->inputs;
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::string key = testcase_key(method->name, output, i);
      const PtdEntry* entry = file.find(key);
      // An output whose values are not compared (a sampler's) has no key.
      if (output && i < testcase.output_checks.size() && !testcase.output_checks[i].compare_values) {
        if (entry) {
          ++problems;
          checks.fail(checks::kTestcaseFile, subject,
                      "holds key " + in_quotes(key) + ", but bundle.json says output " + std::to_string(i) +
                          " is checked by dtype, shape and finiteness only (no expected values)" + fix);
        } else if (specs[i].kind != "tensor" || !specs[i].tensor) {
          ++problems;
          checks.fail(checks::kTestcaseFile, subject,
                      "output " + std::to_string(i) + " of method " + in_quotes(method->name) + " is a " + specs[i].kind +
                          "; only a tensor output can be checked by dtype, shape and finiteness" + fix);
        }
        continue;
      }
      if (!entry) {
        ++problems;
        checks.fail(checks::kTestcaseFile, subject, "lacks key " + in_quotes(key) + fix);
        continue;
      }
      std::string problem = value_problem(*entry, &specs[i]);
      if (problem.empty()) continue;
      ++problems;
      checks.fail(checks::kTestcaseFile, subject, "key " + in_quotes(key) + " " + problem + fix);
    }
  }
  if (problems != 0) return std::nullopt;
  size_t unchecked = static_cast<size_t>(std::count_if(testcase.output_checks.begin(), testcase.output_checks.end(),
                                                       [](const ManifestOutputCheck& c) { return !c.compare_values; }));
  checks.pass(checks::kTestcaseFile, subject,
              "test case of method " + in_quotes(method->name) + ": " + std::to_string(testcase.inputs) + " input(s), " +
                  std::to_string(testcase.outputs - unchecked) + " expected output(s)" +
                  (unchecked ? ", " + std::to_string(unchecked) + " output(s) without expected values (dtype, shape and "
                                   "finiteness only)"
                             : std::string()) +
                  ", matching its signature");
  return method->name;
}

}  // namespace ptb::detail

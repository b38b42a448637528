#include "formats/pt2_layout.h"

#include <string_view>

namespace ptb {
namespace {

constexpr std::string_view kAotiDir = "data/aotinductor/";
constexpr std::string_view kConstantsDir = "data/constants/";
constexpr std::string_view kWeightsDir = "data/weights/";

bool ends_with(std::string_view text, std::string_view suffix) { return text.ends_with(suffix); }

// PyTorch puts every entry under one folder named after the archive; older
// packages had none. The root is that shared first component, unless the
// names already start at data/.
std::string find_root(const std::vector<Pt2Entry>& entries) {
  if (entries.empty()) return "";
  auto slash = entries.front().name.find('/');
  if (slash == std::string::npos) return "";
  std::string root = entries.front().name.substr(0, slash + 1);
  if (root == "data/") return "";
  for (const auto& entry : entries)
    if (!std::string_view(entry.name).starts_with(root)) return "";
  return root;
}

Pt2Model& model_named(std::vector<Pt2Model>& models, const std::string& name, const std::string& directory) {
  for (auto& model : models)
    if (model.name == name) return model;
  Pt2Model model;
  model.name = name;
  model.directory = directory;
  models.push_back(std::move(model));
  return models.back();
}

// Several candidates: the one whose name has the "wrapper" form wins; more
// than one left means we cannot tell which file PyTorch would load.
Result<std::string> pick_one(const std::string& path, const Pt2Model& model, const std::vector<std::string>& names,
                             std::string_view preferred_suffix, const std::string& what) {
  if (names.size() == 1) return names.front();
  std::vector<std::string> preferred;
  for (const auto& name : names)
    if (ends_with(name, preferred_suffix)) preferred.push_back(name);
  if (preferred.size() == 1) return preferred.front();
  std::string list;
  for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
  return invalid(path + ": model '" + model.name + "': " + std::to_string(names.size()) + " " + what +
                 " entries (" + list + "); expected one");
}

struct ModelFiles {
  std::vector<std::string> libraries, blobs, cpp_sources;
};

}  // namespace

Result<Pt2Layout> classify_pt2_entries(const std::string& path, const std::vector<Pt2Entry>& entries) {
  Pt2Layout layout;
  layout.root = find_root(entries);
  std::vector<ModelFiles> files;
  for (const auto& entry : entries) {
    std::string_view relative = std::string_view(entry.name).substr(layout.root.size());
    if (relative.starts_with(kConstantsDir) || relative.starts_with(kWeightsDir)) {
      if (!relative.ends_with('/')) layout.external_weights.push_back(entry.name);
      continue;
    }
    if (!relative.starts_with(kAotiDir)) continue;
    std::string_view rest = relative.substr(kAotiDir.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) continue;
    std::string_view file = rest.substr(slash + 1);
    if (file.empty()) continue;
    const bool kernel = file.ends_with(".cubin") || file.ends_with(".fatbin") || file.ends_with(".ptx");
    // Files in nested folders are not part of what the loader looks for,
    // except kernel files, kept to be refused by name.
    if (file.find('/') != std::string_view::npos && !kernel) continue;
    std::string model_name(rest.substr(0, slash));
    std::string directory = layout.root + std::string(kAotiDir) + model_name + "/";
    Pt2Model& model = model_named(layout.models, model_name, directory);
    files.resize(layout.models.size());
    ModelFiles& mine = files[static_cast<size_t>(&model - layout.models.data())];
    if (file.ends_with(".so")) mine.libraries.push_back(entry.name);
    else if (file.ends_with("_weights.blob")) mine.blobs.push_back(entry.name);
    else if (file.ends_with(".cpp")) mine.cpp_sources.push_back(entry.name);
    else if (file.ends_with(".o")) model.object_files.push_back(entry.name);
    else if (kernel)
      model.kernel_binaries.push_back(entry.name);
  }

  for (size_t i = 0; i < layout.models.size(); ++i) {
    Pt2Model& model = layout.models[i];
    ModelFiles& mine = files[i];
    model.cpp_sources = mine.cpp_sources;
    // The metadata sits beside whichever file names the compiled wrapper:
    // "<hash>.wrapper.so" -> "<hash>.wrapper_metadata.json".
    std::string stem;
    if (!mine.libraries.empty()) {
      PTB_TRY(model.wrapper_library, pick_one(path, model, mine.libraries, ".wrapper.so", "shared library"));
      stem = model.wrapper_library.substr(0, model.wrapper_library.size() - 3);
    } else if (!mine.cpp_sources.empty()) {
      PTB_TRY(std::string cpp, pick_one(path, model, mine.cpp_sources, ".wrapper.cpp", "C++ source"));
      stem = cpp.substr(0, cpp.size() - 4);
    }
    if (!mine.blobs.empty()) {
      PTB_TRY(std::string blob, pick_one(path, model, mine.blobs, stem + "_weights.blob", "weights blob"));
      model.weights_blob = blob;
    }
    if (!stem.empty()) {
      std::string metadata = stem + "_metadata.json";
      for (const auto& entry : entries)
        if (entry.name == metadata) model.metadata_entry = metadata;
    }
  }
  return layout;
}

}  // namespace ptb

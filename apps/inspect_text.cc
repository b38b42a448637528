// `ptbundle inspect` for people: the same object --json prints, laid out as
// headed sections and aligned tables. Every fact shown here is in the JSON;
// this file only arranges it.
#include "inspect_text.h"

#include <cstdio>

#include "text_table.h"

namespace ptb::app {
namespace {

using Align = TextTable::Align;

class Lines {
 public:
  void add(const std::string& indent, const std::string& text) { out_ += indent + text + "\n"; }
  void blank() { out_ += "\n"; }
  void table(const std::string& indent, const TextTable& table) {
    for (const auto& line : table.lines(indent)) out_ += line + "\n";
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};


std::string str(const Json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return printable(value.get<std::string>());
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  return value.dump();
}

std::string num(const Json& value) { return value.is_null() ? "-" : std::to_string(value.get<uint64_t>()); }

std::string size(const Json& value) { return value.is_null() ? "-" : human_size(value.get<uint64_t>()); }

std::string size_and_bytes(const Json& value) {
  uint64_t bytes = value.get<uint64_t>();
  return human_size(bytes) + (bytes >= 1024 ? " (" + std::to_string(bytes) + " bytes)" : "");
}

std::string list(const Json& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + str(values[i]);
  return out + "]";
}

std::string value_text(const Json& value) {
  if (value["kind"] != "tensor") return str(value["kind"]);
  return str(value["dtype"]) + " " + list(value["shape"]);
}

void values(Lines& out, const std::string& indent, const char* title, const Json& specs) {
  if (specs.empty()) {
    out.add(indent, std::string(title) + ": none");
    return;
  }
  out.add(indent, std::string(title) + ":");
  TextTable table({{"#", Align::Right}, {"kind"}, {"dtype"}, {"shape"}, {"dim order"}, {"dynamism"}});
  for (size_t i = 0; i < specs.size(); ++i) {
    const Json& v = specs[i];
    bool tensor = v["kind"] == "tensor";
    table.add({std::to_string(i), str(v["kind"]), tensor ? str(v["dtype"]) : "-", tensor ? list(v["shape"]) : "-",
               tensor ? list(v["dim_order"]) : "-", tensor ? str(v["dynamism"]) : "-"});
  }
  out.table(indent + "  ", table);
}

void kernels(Lines& out, const std::string& indent, const Json& owner) {
  if (owner.contains("kernels_error")) {
    out.add(indent, "Kernels: cannot read: " + str(owner["kernels_error"]));
    return;
  }
  if (!owner.contains("kernels")) return;
  const Json& images = owner["kernels"];
  if (images.empty()) {
    out.add(indent, "Kernels: none found");
    return;
  }
  out.add(indent, "Kernels:");
  TextTable table({{"target"}, {"kind"}, {"ptx"}, {"container"}, {"size", Align::Right}, {"compression"}, {"location"}});
  for (const Json& image : images) {
    table.add({str(image["target"]), str(image["kind"]), str(image["ptx_version"]), str(image["container"]),
               size(image["size"]), str(image["compression"]), str(image["location"])});
  }
  out.table(indent + "  ", table);
}

void cuda_payload(Lines& out, const std::string& indent, const Json& cuda) {
  out.add(indent, "CUDA payload: " + str(cuda["form"]));
  std::string inner = indent + "  ";
  if (cuda["form"] != "multi_variant") {
    out.add(inner, "Library: " + str(cuda["library_key"]) +
                       (cuda["library_in_program"].get<bool>() ? ", " + size(cuda["library_size"]) + " in the program"
                                                               : ", not in the program"));
    kernels(out, inner + "  ", cuda);
    out.add(inner, "Weights: " + str(cuda["weights_key"]) +
                       (cuda["weights_in_program"].get<bool>() ? ", " + size(cuda["weights_size"]) + " in the program"
                                                               : ", in a data file"));
    return;
  }
  out.add(inner, "Variants:");
  for (const Json& variant : cuda["variants"]) {
    uint32_t ptx = variant["ptx_compute"].get<uint32_t>();
    std::string line = "sm_" + num(variant["target_sm"]) + (ptx ? ", PTX compute_" + std::to_string(ptx) : ", no PTX") +
                       (variant["fallback_only"].get<bool>() ? ", fallback only" : "") + ": " + str(variant["library_key"]) +
                       (variant["library_in_program"].get<bool>() ? " (" + size(variant["library_size"]) + ")"
                                                                  : " (not in the program)");
    out.add(inner + "  ", line);
    kernels(out, inner + "    ", variant);
  }
  out.add(inner, "Weights:");
  TextTable table({{"fqn"}, {"dtype"}, {"sizes"}, {"strides"}, {"offset", Align::Right}, {"storage", Align::Right},
                   {"device"}, {"storage key"}});
  for (const Json& weight : cuda["weights"]) {
    table.add({str(weight["fqn"]), str(weight["dtype"]), list(weight["sizes"]), list(weight["strides"]),
               std::to_string(weight["storage_offset"].get<int64_t>()), size(weight["storage_nbytes"]),
               weight["device_type"] == 1 ? "cuda" : weight["device_type"] == 0 ? "cpu" : str(weight["device_type"]),
               str(weight["storage_key"])});
  }
  out.table(inner + "  ", table);
}

void delegate(Lines& out, const std::string& indent, const Json& d) {
  out.add(indent, "Delegate " + num(d["index"]) + ": " + str(d["id"]) + ", " + str(d["location"]) + " " +
                      num(d["data_index"]) + ", " + size(d["payload_size"]) +
                      (d.contains("payload_sha256") ? ", sha256 " + str(d["payload_sha256"]) : ""));
  std::string inner = indent + "  ";
  if (d["compile_specs"].empty()) {
    out.add(inner, "Compile specs: none");
  } else {
    out.add(inner, "Compile specs:");
    TextTable table({{"key"}, {"value"}});
    for (const Json& spec : d["compile_specs"]) {
      table.add({str(spec["key"]), spec["encoding"] == "hex" ? "0x" + str(spec["value"]) : str(spec["value"])});
    }
    out.table(inner + "  ", table);
  }
  if (d.contains("cuda")) cuda_payload(out, inner, d["cuda"]);
  if (d.contains("cuda_error")) out.add(inner, "CUDA payload: cannot decode: " + str(d["cuda_error"]));
}

void program(Lines& out, const std::string& indent, const Json& p, bool sha256) {
  const Json& header = p["extended_header"];
  if (header.is_null()) {
    out.add(indent, "Extended header: none");
  } else {
    // The short (24-byte) header does not record the segment data size.
    bool has_data_size = header["length"].get<uint64_t>() >= 32;
    out.add(indent, "Extended header: eh00, length " + num(header["length"]) + ", program " +
                        size_and_bytes(header["program_size"]) + ", segments at " + num(header["segment_base_offset"]) +
                        (has_data_size ? " (" + size(header["segment_data_size"]) + ")" : ""));
  }
  out.add(indent, "Program version: " + num(p["program_version"]));
  const Json& constants = p["constants"];
  std::string storage = str(constants["storage"]);
  out.add(indent, "Constants: " + num(constants["count"]) + " tensors" +
                      (storage == "segment"           ? " in segment " + num(constants["segment_index"])
                       : storage == "constant_buffer" ? " in constant_buffer (inside the flatbuffer)"
                                                      : ""));
  for (const Json& method : p["methods"]) {
    out.blank();
    out.add(indent, "Method " + str(method["name"]));
    std::string inner = indent + "  ";
    out.add(inner, "Values: " + num(method["num_values"]) + ", instructions: " + num(method["num_instructions"]) +
                       ", planned buffers: " + list(method["non_const_buffer_sizes"]));
    values(out, inner, "Inputs", method["inputs"]);
    values(out, inner, "Outputs", method["outputs"]);
    if (method["operators"].empty()) {
      out.add(inner, "Operators: none");
    } else {
      out.add(inner, "Operators:");
      for (const Json& op : method["operators"]) out.add(inner + "  ", str(op));
    }
    for (const Json& d : method["delegates"]) delegate(out, inner, d);
  }
  out.blank();
  if (p["segments"].empty()) {
    out.add(indent, "Segments: none");
  } else {
    out.add(indent, "Segments:");
    std::vector<TextTable::Column> columns = {{"#", Align::Right},     {"file offset", Align::Right}, {"size", Align::Right},
                                              {"align", Align::Right}, {"used by"}};
    if (sha256) columns.push_back({"sha256"});
    TextTable table(columns);
    for (const Json& s : p["segments"]) {
      std::string users;
      for (const Json& user : s["used_by"]) users += (users.empty() ? "" : ", ") + str(user);
      std::vector<std::string> row = {num(s["index"]), num(s["file_offset"]), size(s["size"]), num(s["alignment"]),
                                      users.empty() ? "-" : users};
      if (sha256) row.push_back(str(s["sha256"]));
      table.add(row);
    }
    out.table(indent + "  ", table);
  }
  if (p["named_data"].empty()) {
    out.add(indent, "Named data: none");
  } else {
    out.add(indent, "Named data:");
    std::vector<TextTable::Column> columns = {{"key"}, {"segment", Align::Right}, {"size", Align::Right}, {"align", Align::Right}};
    if (sha256) columns.push_back({"sha256"});
    TextTable table(columns);
    for (const Json& n : p["named_data"]) {
      std::vector<std::string> row = {str(n["key"]), num(n["segment_index"]), size(n["size"]), num(n["alignment"])};
      if (sha256) row.push_back(str(n["sha256"]));
      table.add(row);
    }
    out.table(indent + "  ", table);
  }
}

void data_file(Lines& out, const std::string& indent, const Json& d, bool sha256) {
  const Json& header = d["header"];
  out.add(indent, "Header: FH01, length " + num(header["length"]) + ", flatbuffer " + size(header["flatbuffer_size"]) +
                      " after " + num(header["flatbuffer_offset"]) + " header bytes, segments at " +
                      num(header["segment_base_offset"]) + " (" + size(header["segment_data_size"]) + ")");
  out.add(indent, "Version: " + num(d["version"]) + ", " + std::to_string(d["segments"].size()) + " segments");
  if (d["named_data"].empty()) {
    out.add(indent, "Named data: none");
    return;
  }
  out.add(indent, "Named data:");
  std::vector<TextTable::Column> columns = {{"key"},
                                            {"segment", Align::Right},
                                            {"file offset", Align::Right},
                                            {"size", Align::Right},
                                            {"align", Align::Right},
                                            {"layout"}};
  if (sha256) columns.push_back({"sha256"});
  TextTable table(columns);
  for (const Json& n : d["named_data"]) {
    const Json& layout = n["tensor_layout"];
    std::string layout_text = layout.is_null() ? "-" : str(layout["dtype"]) + " " + list(layout["shape"]);
    std::vector<std::string> row = {str(n["key"]),  num(n["segment_index"]), num(n["file_offset"]),
                                    size(n["size"]), num(n["alignment"]),     layout_text};
    if (sha256) row.push_back(str(n["sha256"]));
    table.add(row);
  }
  out.table(indent + "  ", table);
}

void bundled(Lines& out, const std::string& indent, const Json& b, bool sha256) {
  out.add(indent, "Bundled program version: " + num(b["version"]));
  const Json& p = b["program"];
  out.add(indent, "Program: " + size_and_bytes(p["size"]) + " at offset " + num(p["offset"]));
  program(out, indent + "  ", p, sha256);
  out.blank();
  out.add(indent, "Test suites:");
  for (const Json& suite : b["test_suites"]) {
    out.add(indent + "  ", str(suite["method"]) + ": " + std::to_string(suite["test_cases"].size()) + " test cases");
    TextTable table({{"#", Align::Right}, {"inputs"}, {"expected outputs"}});
    for (size_t i = 0; i < suite["test_cases"].size(); ++i) {
      const Json& test = suite["test_cases"][i];
      auto join = [](const Json& items) {
        std::string text;
        for (const Json& v : items) text += (text.empty() ? "" : ", ") + value_text(v);
        return text.empty() ? std::string("-") : text;
      };
      table.add({std::to_string(i), join(test["inputs"]), join(test["expected_outputs"])});
    }
    out.table(indent + "    ", table);
  }
}

void entry_line(Lines& out, const std::string& indent, const std::string& title, const Json& entry) {
  out.add(indent, title + ": " + str(entry["name"]) + ", " + size(entry["size"]) +
                      (entry.contains("sha256") ? ", sha256 " + str(entry["sha256"]) : "") +
                      (entry.contains("skipped") ? " (" + str(entry["skipped"]) + ")" : ""));
  kernels(out, indent + "  ", entry);
}

void package(Lines& out, const std::string& indent, const Json& p) {
  out.add(indent, "Root: " + (p["root"] == "" ? std::string("(none)") : str(p["root"])) + ", archive format " +
                      (p["archive_format"] == "" ? std::string("-") : str(p["archive_format"])) + ", version " +
                      (p["archive_version"] == "" ? std::string("-") : str(p["archive_version"])));
  for (const Json& model : p["models"]) {
    out.blank();
    out.add(indent, "Model " + str(model["name"]) + " (" + str(model["directory"]) + ")");
    std::string inner = indent + "  ";
    out.add(inner, "Compute capability: " + str(model["compute_capability"]) + ", device: " + str(model["device"]));
    entry_line(out, inner, "Library", model["wrapper_library"]);
    if (model["weights_blob"].is_null()) {
      out.add(inner, "Weights: inside the library");
    } else {
      entry_line(out, inner, "Weights blob", model["weights_blob"]);
    }
    for (const Json& kernel : model["kernel_files"]) entry_line(out, inner, "Kernel file", kernel);
    if (!model["metadata"].empty()) {
      out.add(inner, "Metadata:");
      TextTable table({{"key"}, {"value"}});
      for (const auto& [key, value] : model["metadata"].items()) table.add({printable(key), str(value)});
      out.table(inner + "  ", table);
    }
  }
  out.blank();
  out.add(indent, "Entries:");
  TextTable table({{"name"}, {"size", Align::Right}, {"compressed", Align::Right}, {"method", Align::Right}});
  for (const Json& e : p["entries"]) {
    table.add({str(e["name"]), size(e["size"]), size(e["compressed_size"]), num(e["compression_method"])});
  }
  out.table(indent + "  ", table);
}

const char* kind_title(const std::string& kind) {
  if (kind == "pte") return "ExecuTorch program (.pte)";
  if (kind == "ptd") return "ExecuTorch data (.ptd)";
  if (kind == "bpte") return "ExecuTorch bundled program (.bpte)";
  if (kind == "pt2") return "AOTInductor package (.pt2)";
  if (kind == "signature") return "model signature (OpenSSF model signing, Sigstore bundle)";
  return "ptbundle bundle folder";
}

// Who signed and what: the statement's subject and files, as read (not verified).
void signature(Lines& out, const std::string& indent, const Json& s) {
  out.add(indent, "Signed by the key with fingerprint " + (s["key_fingerprint"].is_null() ? std::string("(none recorded)")
                                                                                             : str(s["key_fingerprint"])) +
                      " (not verified here: ptbundle verify --key)");
  if (!s["statement_error"].is_null()) out.add(indent, "STATEMENT NOT VALID: " + str(s["statement_error"]));
  const Json& statement = s["statement"];
  if (!statement.is_object()) return;
  out.add(indent, "Statement: " + str(statement.value("_type", Json(""))) + ", predicate " + str(statement.value("predicateType", Json(""))));
  if (statement.contains("subject") && statement["subject"].is_array()) {
    for (const Json& subject : statement["subject"]) {
      if (!subject.is_object()) continue;
      const Json digest = subject.value("digest", Json::object());
      out.add(indent + "  ", "subject " + str(subject.value("name", Json(""))) + " sha256:" +
                                 str(digest.is_object() ? digest.value("sha256", Json("")) : Json("")));
    }
  }
  const Json predicate = statement.value("predicate", Json::object());
  if (!predicate.is_object() || !predicate.contains("resources") || !predicate["resources"].is_array()) return;
  TextTable table({{"file"}, {"sha256"}});
  for (const Json& resource : predicate["resources"]) {
    if (resource.is_object()) table.add({str(resource.value("name", Json(""))), str(resource.value("digest", Json("")))});
  }
  out.table(indent + "  ", table);
}

void file(Lines& out, const std::string& indent, const Json& f, bool sha256);

void bundle(Lines& out, const std::string& indent, const Json& b, bool sha256) {
  const Json& manifest = b["manifest"];
  out.add(indent, "Manifest: format " + str(manifest["format_version"]) + ", written by ptbundle " +
                      str(manifest["ptbundle_version"]) + " at " + str(manifest["created"]));
  for (const Json& part : b["parts"]) {
    out.blank();
    out.add(indent, "Part " + str(part["name"]));
    for (const Json& f : part["files"]) {
      std::string check = f["size_matches"].get<bool>() ? "size matches the manifest" : "SIZE DIFFERS FROM THE MANIFEST";
      if (f.contains("sha256_matches")) {
        check += f["sha256_matches"].get<bool>() ? ", sha256 matches" : ", SHA256 DIFFERS FROM THE MANIFEST";
      }
      const std::string target = f.contains("target") ? " (" + str(f["target"]) + ")" : "";
      out.add(indent + "  ", str(f["role"]) + target + " " + str(f["path"]) + ": " + check);
      file(out, indent + "    ", f["file"], sha256);
    }
  }
  out.blank();
  if (b["signature"].is_null()) {
    out.add(indent, "Signature: none (ptbundle sign makes one)");
  } else {
    out.add(indent, "Signature: " + str(b["signature"]["file"]));
    signature(out, indent + "  ", b["signature"]);
  }
}

void file(Lines& out, const std::string& indent, const Json& f, bool sha256) {
  std::string kind = str(f["kind"]);
  out.add(indent, "File: " + str(f["path"]));
  std::string format = std::string("Format: ") + kind_title(kind);
  if (f.contains("size")) format += ", " + size_and_bytes(f["size"]);
  out.add(indent, format);
  if (f.contains("sha256")) out.add(indent, "SHA-256: " + str(f["sha256"]));
  if (kind == "pte") program(out, indent, f, sha256);
  if (kind == "ptd") data_file(out, indent, f, sha256);
  if (kind == "bpte") bundled(out, indent, f, sha256);
  if (kind == "pt2") package(out, indent, f);
  if (kind == "bundle") bundle(out, indent, f, sha256);
  if (kind == "signature") signature(out, indent, f);
}

}  // namespace

std::string render_inspect_text(const Json& file_object, bool sha256) {
  Lines out;
  file(out, "", file_object, sha256);
  return out.take();
}

}  // namespace ptb::app

#include "report.h"

#include <cstdio>
#include <iostream>

#include "ptbundle/base/mapping_guard.h"
#include "ptbundle/bundle/manifest_json.h"
#include "json_document.h"

namespace ptb::app {
namespace {

Json command_json(const std::string& command) { return command.empty() ? Json(nullptr) : Json(command); }

Json errors_json(const std::vector<Error>& errors) {
  Json out = Json::array();
  for (const Error& error : errors) out.push_back({{"message", error.message}, {"kind", error_kind_name(error.kind)}});
  return out;
}

void print_error_line(const Error& error) {
  std::fprintf(stderr, "ptbundle: error: %s\n", printable(error.message).c_str());
}

}  // namespace

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage: return "usage";
    case ErrorKind::Io: return "io";
    default: return "invalid";
  }
}

void JsonWriter::open(char bracket) {
  out_ << bracket;
  empty_.push_back(true);
}

void JsonWriter::close(char bracket) {
  const bool empty = empty_.back();
  empty_.pop_back();
  if (!empty) out_ << '\n' << std::string(2 * empty_.size(), ' ');
  out_ << bracket;
}

void JsonWriter::next() {
  out_ << (empty_.back() ? "\n" : ",\n") << std::string(2 * empty_.size(), ' ');
  empty_.back() = false;
}

void JsonWriter::key(std::string_view name) {
  next();
  out_ << JsonValue(name).dump() << ": ";
}

void JsonWriter::raw(const std::string& text) {
  // A string's newlines are escaped in JSON text: each one here starts a line.
  const std::string indent(2 * empty_.size(), ' ');
  size_t from = 0;
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', from)) {
    out_.write(text.data() + from, static_cast<std::streamsize>(at + 1 - from));
    out_ << indent;
    from = at + 1;
  }
  out_.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

void JsonWriter::manifest(const Manifest& manifest) {
  Manifest header;
  header.format_version = manifest.format_version;
  header.ptbundle_version = manifest.ptbundle_version;
  header.created = manifest.created;
  header.tune = manifest.tune;
  const Json top = manifest_to_json(header);
  begin_object();
  for (const auto& [name, member] : top.items()) {
    key(name);
    if (name != "parts") {
      raw(member.dump(2, ' ', false, Json::error_handler_t::replace));
      continue;
    }
    begin_array();
    for (const ManifestPart& part : manifest.parts) {
      element();
      raw(manifest_part_to_json(part).dump(2, ' ', false, Json::error_handler_t::replace));
    }
    end_array();
  }
  end_object();
}

std::ostream& Output::text_stream() {
  progress_->clear();  // a report streamed to a terminal never lands on the progress line
  return std::cout;
}

JsonWriter& Output::begin_stream() {
  progress_->clear();
  writer_.emplace(std::cout);
  if (json_) {
    writer_->begin_object();
    (*writer_)("format_version", kFormatVersion);
    writer_->key("command");
    if (command_.empty()) writer_->value(std::optional<int>());
    else writer_->value(command_);
  }
  return *writer_;
}

int Output::end_stream(int exit_code, const std::vector<Error>& errors) {
  for (const Error& error : errors) error_line(error);
  if (json_) {
    if (!errors.empty()) {
      writer_->key("errors");
      writer_->begin_array();
      for (const Error& error : errors) {
        writer_->element();
        writer_->begin_object();
        (*writer_)("message", error.message)("kind", error_kind_name(error.kind));
        writer_->end_object();
      }
      writer_->end_array();
    }
    (*writer_)("exit_code", exit_code);
    writer_->end_object();
    std::cout << '\n';
  }
  return flushed(exit_code);
}

std::optional<Error> Output::changed_input() {
  if (auto changed = changed_mapped_file()) return changed_while_read(*changed);
  return std::nullopt;
}

void Output::note(const std::string& text) {
  if (quiet_) return;
  progress_->clear();
  std::fprintf(stderr, "ptbundle: %s\n", printable(text).c_str());
}

void Output::error_line(const Error& error) {
  progress_->clear();
  print_error_line(error);
}

void Output::warning(const std::string& text) {
  progress_->clear();
  std::fprintf(stderr, "ptbundle: %s\n", printable(text).c_str());
}

int Output::finish(std::optional<JsonValue> body, int exit_code, const std::vector<Error>& errors) {
  progress_->clear();
  for (const Error& error : errors) print_error_line(error);
  if (json_) {
    Json document = Json::object();
    document["format_version"] = kFormatVersion;
    document["command"] = command_json(command_);
    if (body) {
      for (auto& [key, value] : body->document_->json.items()) document[key] = std::move(value);
    }
    if (!errors.empty() || !body) document["errors"] = errors_json(errors);
    document["exit_code"] = exit_code;
    // Strings read from files need not be UTF-8; dump() would throw on them,
    // so invalid bytes are replaced with U+FFFD instead.
    std::cout << document.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  }
  return flushed(exit_code);
}

int Output::flushed(int exit_code) {
  std::cout.flush();
  if (!std::cout && committed_) {
    std::fprintf(stderr, "ptbundle: warning: stdout: cannot write the report; the change was made\n");
    return exit_code;
  }
  if (!std::cout) {
    Error error = io_error("stdout: cannot write the report");
    print_error_line(error);
    return static_cast<int>(error.kind);
  }
  return exit_code;
}

int Output::fail(const Error& error) {
  // What went wrong may be only a symptom of an input that shrank under us.
  if (auto changed = changed_input(); changed && changed->message != error.message)
    return finish(std::nullopt, static_cast<int>(changed->kind), {*changed, error});
  return finish(std::nullopt, static_cast<int>(error.kind), {error});
}

std::string human_size(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

void report_removed_signatures(Output& out, const std::vector<std::string>& paths) {
  for (const auto& path : paths) out.warning("removed the signature " + path + ": the bundle changed; sign it again (ptbundle sign)");
}

}  // namespace ptb::app

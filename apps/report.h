// The printer layer: how every command's report reaches stdout.
//
// Each command fills one report model, a plain struct (cmd_<name>.cc), and
// hands it to Output::print. The model is rendered two ways:
//   - JSON, by the one generic renderer below: a struct lists its members once,
//     in the order schemas/<name>.schema.json gives them, through
//     `template <class F> void fields(F& f) const { f("key", member)...; }`,
//     and to_json() turns strings, numbers, booleans, std::optional (null),
//     vectors (arrays), nested models and manifests into the document
//     (JsonValue: opaque, so that no command compiles nlohmann/json);
//   - text for people, by the command's `render_text(std::ostream&, const Model&)`,
//     which reads the same typed members and lays them out (TextTable for
//     columns).
// Why typed structs and not llvm-readobj's ScopedPrinter (one describe() call
// sequence rendered by a text and a JSON printer): our text is not
// "Key: value" lines but headed tables and one-line summaries that combine
// several fields, which the tests and people rely on; a ScopedPrinter would
// either flatten that text or need text-only calls beside every field, i.e.
// the report written twice again. With structs, the JSON shape is declared
// once and generically rendered, no command builds Json by hand, and the text
// layout can only show what the model holds, by name checked by the compiler.
//
// inspect's model is libbundle's (ptbundle/inspect/inspect_model.h): its
// structs list their members with the same fields() protocol, so this
// renderer prints them too.
//
// A report too large to hold at once (inspect of a bundle of thousands of
// parts) is written as it is computed instead: Output::begin_stream opens the
// document and hands out a JsonWriter, which writes each member as it comes
// in the form JsonValue::dump gives the whole; end_stream closes it.
//
// Every --json document starts with "format_version" and "command" and ends
// with "exit_code"; a command that fails before it has a report prints an
// error document instead (schemas/error.schema.json), so stdout always holds
// exactly one document.
#pragma once

#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ptbundle/base/result.h"
#include "json_value.h"
#include "progress.h"

namespace ptb::app {

// The version of every --json document's envelope and of error documents.
inline constexpr int kFormatVersion = 1;

class JsonFields;

template <class T>
concept Described = requires(const T& value, JsonFields& fields) { value.fields(fields); };

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};

template <class T>
JsonValue to_json(const T& value);

// Adds members to one JSON object, in call order.
class JsonFields {
 public:
  explicit JsonFields(JsonValue& object) : object_(object) {}
  template <class T>
  JsonFields& operator()(std::string_view key, const T& value) {
    object_.set(key, to_json(value));
    return *this;
  }

 private:
  JsonValue& object_;
};

template <class T>
JsonValue to_json(const T& value) {
  if constexpr (Described<T>) {
    JsonValue object = JsonValue::object();
    JsonFields fields(object);
    value.fields(fields);
    return object;
  } else if constexpr (IsOptional<T>::value) {
    return value ? to_json(*value) : JsonValue();
  } else if constexpr (IsVector<T>::value) {
    JsonValue array = JsonValue::array();
    for (const auto& item : value) array.push(to_json(item));
    return array;
  } else {
    return JsonValue(value);
  }
}

// Writes one JSON document to a stream as it is visited, laid out as
// JsonValue::dump lays out the whole (two-space indent), so that only the
// member being written is held. Members of Described models are written one
// by one through their fields(); other values through to_json.
class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  // An object's member: its value follows (begin_object, begin_array or value).
  void key(std::string_view name);
  // The next element of an array.
  void element() { next(); }

  template <class T>
  void value(const T& v) {
    if constexpr (std::is_same_v<T, Manifest>) {
      manifest(v);
    } else if constexpr (Described<T>) {
      begin_object();
      v.fields(*this);
      end_object();
    } else if constexpr (IsOptional<T>::value) {
      if (v) value(*v);
      else raw("null");
    } else if constexpr (IsVector<T>::value) {
      begin_array();
      for (const auto& item : v) {
        element();
        value(item);
      }
      end_array();
    } else {
      raw(JsonValue(v).dump());
    }
  }
  // The fields() protocol: a member with its value.
  template <class T>
  JsonWriter& operator()(std::string_view name, const T& v) {
    key(name);
    value(v);
    return *this;
  }

 private:
  void open(char bracket);
  void close(char bracket);
  void next();
  // A value already laid out at depth 0, indented to the current depth.
  void raw(const std::string& text);
  // bundle.json's form, one part at a time (a manifest may list thousands).
  void manifest(const Manifest& manifest);

  std::ostream& out_;
  std::vector<bool> empty_;  // per open object or array: nothing written in it yet
};

// "usage", "io" or "invalid": an error's kind as JSON documents name it.
const char* error_kind_name(ErrorKind kind);

// One command's output. With --json, stdout gets exactly one document.
// Notes and the progress line go to stderr, never stdout; -q (`quiet`)
// silences both, never errors and warnings.
class Output {
 public:
  // `command` is empty when the command line named none (or an unknown one).
  Output(std::string command, bool json, bool quiet = false)
      : command_(std::move(command)), json_(json), quiet_(quiet),
        progress_(std::make_unique<ProgressLine>(!quiet && stderr_is_terminal())) {}
  bool json() const { return json_; }

  // The callback a long operation reports through: the progress line, or
  // empty (not a terminal, or -q).
  Progress progress() { return progress_->callback(); }
  // "ptbundle: TEXT" on stderr, for people, unless -q.
  void note(const std::string& text);
  // "ptbundle: TEXT" on stderr, -q or not: something the person must know.
  void warning(const std::string& text);
  // "ptbundle: error: MESSAGE" on stderr, for an error the report also
  // records (inspect's per-path errors).
  void error_line(const Error& error);

  // The report (JSON, or render_text for people) and `errors`, each also one
  // "ptbundle: error:" line on stderr, then exit_code; an unwritable stdout
  // is an I/O error.
  // A report computed while an input shrank under us (mapping_guard.cc) is
  // not printed: the error naming that file is, instead.
  template <class Model>
  int print(const Model& model, int exit_code = 0, const std::vector<Error>& errors = {}) {
    if (auto changed = changed_input()) return fail(*changed);
    if (json_) return finish(to_json(model), exit_code, errors);
    render_text(text_stream(), model);
    return finish(std::nullopt, exit_code, errors);
  }

  // A report written as it is computed (report.h's first comment says when).
  // With --json: the document's envelope is opened and the command writes
  // its members through the writer returned; without, it writes text to
  // text(). end_stream then adds `errors` and the exit code and flushes.
  JsonWriter& begin_stream();
  std::ostream& text() { return text_stream(); }
  int end_stream(int exit_code, const std::vector<Error>& errors = {});

  // The error naming an input that shrank while it was read (mapping_guard.h),
  // if one did: nothing computed from it may be reported.
  static std::optional<Error> changed_input();

  // No report: the error on stderr and, with --json, the error document.
  // Returns the error's exit code.
  int fail(const Error& error);

  // The command's change is made (committed): a report that cannot be
  // written now is a warning, and the exit code still says the change was made.
  void committed() { committed_ = true; }

 private:
  std::ostream& text_stream();
  int flushed(int exit_code);
  int finish(std::optional<JsonValue> body, int exit_code, const std::vector<Error>& errors);

  std::string command_;
  bool json_;
  bool quiet_;
  std::unique_ptr<ProgressLine> progress_;
  bool committed_ = false;
  std::optional<JsonWriter> writer_;
};

// "4.0 GiB", "312 B": sizes for people. JSON output always uses bytes.
std::string human_size(uint64_t bytes);

}  // namespace ptb::app

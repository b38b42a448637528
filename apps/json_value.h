// A JSON value under construction, opaque: the commands build their --json
// documents through it and never compile nlohmann/json themselves (its
// templates were most of each command file's compile time). json_value.cc
// holds the one nlohmann document, so the output is what nlohmann prints.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace ptb {
struct Manifest;
struct ManifestFile;
}  // namespace ptb

namespace ptb::app {

class JsonValue {
 public:
  JsonValue();  // null
  ~JsonValue();
  JsonValue(JsonValue&& other) noexcept;
  JsonValue& operator=(JsonValue&& other) noexcept;
  JsonValue(const JsonValue&) = delete;
  JsonValue& operator=(const JsonValue&) = delete;

  static JsonValue object();
  static JsonValue array();
  // An object's member, in call order; an array's next element.
  void set(std::string_view key, JsonValue value);
  void push(JsonValue value);

  // Leaves. Integers of every width take one of these by promotion.
  explicit JsonValue(std::string_view text);
  explicit JsonValue(const std::string& text) : JsonValue(std::string_view(text)) {}
  explicit JsonValue(const char* text) : JsonValue(std::string_view(text)) {}
  explicit JsonValue(bool value);
  explicit JsonValue(int value);
  explicit JsonValue(unsigned value);
  explicit JsonValue(long value);
  explicit JsonValue(unsigned long value);
  explicit JsonValue(long long value);
  explicit JsonValue(unsigned long long value);
  explicit JsonValue(double value);
  // bundle.json's own form (manifest_json.h).
  explicit JsonValue(const Manifest& manifest);
  explicit JsonValue(const ManifestFile& file);

  // Two-space indented; bytes that are not UTF-8 (strings read from files
  // need not be) become U+FFFD.
  std::string dump() const;

  struct Document;  // the nlohmann value, in json_value.cc

 private:
  friend class Output;
  std::unique_ptr<Document> document_;
};

}  // namespace ptb::app

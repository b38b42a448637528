#include "json_value.h"

#include "json_document.h"
#include "ptbundle/bundle/manifest_json.h"

namespace ptb::app {

JsonValue::JsonValue() : document_(std::make_unique<Document>()) {}
JsonValue::~JsonValue() = default;
JsonValue::JsonValue(JsonValue&& other) noexcept = default;
JsonValue& JsonValue::operator=(JsonValue&& other) noexcept = default;

JsonValue JsonValue::object() {
  JsonValue value;
  value.document_->json = Json::object();
  return value;
}

JsonValue JsonValue::array() {
  JsonValue value;
  value.document_->json = Json::array();
  return value;
}

void JsonValue::set(std::string_view key, JsonValue value) {
  document_->json[std::string(key)] = std::move(value.document_->json);
}

void JsonValue::push(JsonValue value) { document_->json.push_back(std::move(value.document_->json)); }

JsonValue::JsonValue(std::string_view text) : JsonValue() { document_->json = std::string(text); }
JsonValue::JsonValue(bool value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(int value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(unsigned value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(long value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(unsigned long value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(long long value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(unsigned long long value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(double value) : JsonValue() { document_->json = value; }
JsonValue::JsonValue(const Manifest& manifest) : JsonValue() { document_->json = manifest_to_json(manifest); }
JsonValue::JsonValue(const ManifestFile& file) : JsonValue() { to_json(document_->json, file); }

std::string JsonValue::dump() const { return document_->json.dump(2, ' ', false, Json::error_handler_t::replace); }

}  // namespace ptb::app

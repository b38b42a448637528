// What a JsonValue holds: for json_value.cc and the document printer
// (report.cc) only, the two files of the apps that compile nlohmann/json.
#pragma once

#include "json_value.h"
#include "ptbundle/formats/json.h"

namespace ptb::app {

struct JsonValue::Document {
  Json json;
};

}  // namespace ptb::app

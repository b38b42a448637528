// bundle.json's JSON form: what export and merge write, what verify reads part
// by part, and what reports embed. Apart from manifest.h so that the many
// files that only use a Manifest do not parse nlohmann/json.
#pragma once

#include <string>

#include "ptbundle/bundle/manifest.h"
#include "ptbundle/formats/json.h"

namespace ptb {

Json manifest_to_json(const Manifest& manifest);
// One entry of "parts", as manifest_to_json writes it: for a report that
// writes a manifest of many parts one part at a time.
Json manifest_part_to_json(const ManifestPart& part);
// The one JSON form of a file entry: in bundle.json, and in export's and
// merge's reports (nlohmann's hook, so a Json made from a ManifestFile is it).
void to_json(Json& json, const ManifestFile& file);
// nlohmann's hook: a Manifest converts to its bundle.json form wherever a Json is made from one.
inline void to_json(Json& json, const Manifest& manifest) { json = manifest_to_json(manifest); }
// `name` prefixes errors ("bundle/bundle.json").
Result<Manifest> manifest_from_json(const Json& json, const std::string& name);
// The top level without reading the parts (which must be an array): for
// verify, which reads each part on its own so that one bad entry does not
// hide the others.
Result<Manifest> manifest_header_from_json(const Json& json, const std::string& name);
// One entry of "parts"; `at` is its JSON path ("parts[3]").
Result<ManifestPart> manifest_part_from_json(const Json& part, const std::string& name, const std::string& at);

}  // namespace ptb

#include "ptbundle/bundle/tune_file.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "ptbundle/base/file.h"
#include "ptbundle/base/sha256.h"
#include "ptbundle/base/text.h"
#include "ptbundle/bundle/transaction.h"
#include "ptbundle/formats/json.h"
#include "ptbundle/signing/model_signature.h"

namespace ptb {
namespace {

// Errors name the file and the JSON path.
struct Reader {
  std::string name;

  Error error(const std::string& at, const std::string& what) const { return invalid(name + ": " + at + ": " + what); }

  Status object(const Json& value, const std::string& at, std::initializer_list<const char*> keys) const {
    if (!value.is_object()) return error(at, std::string("is ") + json_kind(value) + "; expected an object");
    for (const auto& item : value.items()) {
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return item.key() == k; })) {
        std::string known;
        for (const char* k : keys) known += std::string(known.empty() ? "" : ", ") + k;
        return error(at, "has the unknown key " + in_quotes(clipped(item.key())) + "; expected only " + known);
      }
    }
    for (const char* k : keys)
      if (!value.contains(k)) return error(at, std::string("lacks the key \"") + k + "\"");
    return {};
  }

  // Printable ASCII, 1 to `max` bytes.
  Result<std::string> text(const Json& object, const std::string& at, const char* key, size_t max) const {
    const Json& value = object[key];
    const std::string path = at + "." + key;
    if (!value.is_string()) return error(path, std::string("is ") + json_kind(value) + "; expected a string");
    const std::string& s = value.get_ref<const std::string&>();
    if (s.empty() || s.size() > max) {
      return error(path, std::to_string(s.size()) + " bytes; expected 1 to " + std::to_string(max));
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] < 0x20 || s[i] > 0x7e) return error(path, "byte " + std::to_string(i) + " is not printable ASCII");
    }
    return s;
  }

  Result<uint64_t> number(const Json& object, const std::string& at, const char* key, uint64_t max) const {
    const Json& value = object[key];
    const std::string path = at + "." + key;
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0))
      return error(path, std::string("is ") + json_kind(value) + "; expected an integer from 0 to " + std::to_string(max));
    const uint64_t n = value.get<uint64_t>();
    if (n > max) return error(path, std::to_string(n) + "; expected an integer from 0 to " + std::to_string(max));
    return n;
  }
};

bool known_shim(const std::string& shim) {
  return std::any_of(std::begin(kTuneShims), std::end(kTuneShims), [&](const char* s) { return shim == s; });
}

bool is_sm_name(const std::string& sm) {
  if (sm.size() < 4 || sm.size() > 8 || sm.compare(0, 3, "sm_") != 0) return false;
  return std::all_of(sm.begin() + 3, sm.end(), [](char c) { return (c >= '0' && c <= '9') || c == 'a' || c == 'f'; });
}

Result<TuneGpu> read_gpu(const Reader& r, const Json& json, const std::string& at, size_t& choices_left) {
  PTB_CHECK(r.object(json, at, {"name", "sm", "runtime", "tuned", "choices"}));
  TuneGpu gpu;
  PTB_TRY(gpu.name, r.text(json, at, "name", 256));
  PTB_TRY(gpu.sm, r.text(json, at, "sm", 16));
  if (!is_sm_name(gpu.sm)) return r.error(at + ".sm", "is " + in_quotes(gpu.sm) + "; expected \"sm_\" and the compute capability, like \"sm_90\"");
  PTB_TRY(gpu.runtime, r.text(json, at, "runtime", 256));
  PTB_TRY(gpu.tuned, r.text(json, at, "tuned", 64));
  const Json& choices = json["choices"];
  if (!choices.is_array()) return r.error(at + ".choices", std::string("is ") + json_kind(choices) + "; expected an array");
  if (choices.size() > choices_left) {
    return r.error(at + ".choices", "holds " + std::to_string(choices.size()) + " more choices than the " +
                                        std::to_string(kMaxTuneChoices) + " a tune file may hold");
  }
  choices_left -= choices.size();
  std::set<std::tuple<std::string, std::string, uint64_t>> seen;
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::string where = at + ".choices[" + std::to_string(i) + "]";
    PTB_CHECK(r.object(choices[i], where, {"shim", "key", "choice", "library"}));
    TuneChoice c;
    PTB_TRY(c.shim, r.text(choices[i], where, "shim", 32));
    if (!known_shim(c.shim)) return r.error(where + ".shim", "is " + in_quotes(c.shim) + "; expected \"gemm\" or \"convolution\"");
    PTB_TRY(c.key, r.text(choices[i], where, "key", kMaxTuneKeyBytes));
    PTB_TRY(c.choice, r.text(choices[i], where, "choice", kMaxTuneChoiceBytes));
    PTB_TRY(c.library, r.number(choices[i], where, "library", 999999999));
    if (!seen.insert({c.shim, c.key, c.library}).second) {
      return r.error(where + ".key", "the " + c.shim + " key " + in_quotes(clipped(c.key)) +
                                         " is listed twice for this GPU and library version");
    }
    gpu.choices.push_back(std::move(c));
  }
  return gpu;
}

void sort_choices(std::vector<TuneChoice>& choices) {
  std::sort(choices.begin(), choices.end(),
            [](const TuneChoice& a, const TuneChoice& b) {
              return std::tie(a.shim, a.key, a.library) < std::tie(b.shim, b.key, b.library);
            });
}

}  // namespace

size_t TuneFile::choice_count() const {
  size_t n = 0;
  for (const TuneGpu& gpu : gpus) n += gpu.choices.size();
  return n;
}

Result<TuneFile> parse_tune_file(std::string_view text, const std::string& name) {
  if (text.size() > kMaxTuneFileBytes) {
    return invalid(name + ": " + std::to_string(text.size()) + " bytes; expected a tune file of at most " +
                   std::to_string(kMaxTuneFileBytes) + " bytes");
  }
  PTB_TRY(Json json, parse_json_bounded(text, name, "the tune file ptbundle tune writes", 8));
  const Reader r{name};
  PTB_CHECK(r.object(json, "top level", {"format", "format_version", "gpus"}));
  if (json["format"] != kTuneFormat) return r.error("format", "expected \"" + std::string(kTuneFormat) + "\"");
  PTB_TRY(uint64_t version, r.number(json, "top level", "format_version", 1000000));
  if (version != kTuneFormatVersion) {
    return r.error("format_version", std::to_string(version) + " is not supported; expected " +
                                         std::to_string(kTuneFormatVersion) +
                                         (version > kTuneFormatVersion ? " (written by a newer ptbundle)" : ""));
  }
  const Json& gpus = json["gpus"];
  if (!gpus.is_array()) return r.error("gpus", std::string("is ") + json_kind(gpus) + "; expected an array");
  if (gpus.size() > kMaxTuneGpus) {
    return r.error("gpus", std::to_string(gpus.size()) + " entries; expected at most " + std::to_string(kMaxTuneGpus));
  }
  TuneFile file;
  size_t choices_left = kMaxTuneChoices;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const std::string at = "gpus[" + std::to_string(i) + "]";
    PTB_TRY(TuneGpu gpu, read_gpu(r, gpus[i], at, choices_left));
    for (const TuneGpu& earlier : file.gpus) {
      if (earlier.same_gpu(gpu)) {
        return r.error(at, "repeats the GPU " + in_quotes(gpu.name) + " (" + gpu.sm + "); expected one entry per GPU");
      }
    }
    file.gpus.push_back(std::move(gpu));
  }
  return file;
}

std::string tune_file_text(const TuneFile& file) {
  Json out;
  out["format"] = kTuneFormat;
  out["format_version"] = kTuneFormatVersion;
  out["gpus"] = Json::array();
  for (const TuneGpu& gpu : file.gpus) {
    Json entry;
    entry["name"] = gpu.name;
    entry["sm"] = gpu.sm;
    entry["runtime"] = gpu.runtime;
    entry["tuned"] = gpu.tuned;
    entry["choices"] = Json::array();
    for (const TuneChoice& c : gpu.choices) entry["choices"].push_back({{"shim", c.shim}, {"key", c.key}, {"choice", c.choice}, {"library", c.library}});
    out["gpus"].push_back(std::move(entry));
  }
  return out.dump(1) + "\n";
}

void add_tuned(TuneFile& file, TuneGpu update) {
  sort_choices(update.choices);
  for (TuneGpu& gpu : file.gpus) {
    if (!gpu.same_gpu(update)) continue;
    for (TuneChoice& c : update.choices) {
      auto same = std::find_if(gpu.choices.begin(), gpu.choices.end(),
                               [&](const TuneChoice& old) {
                                 return old.shim == c.shim && old.key == c.key && old.library == c.library;
                               });
      if (same != gpu.choices.end()) *same = std::move(c);
      else gpu.choices.push_back(std::move(c));
    }
    sort_choices(gpu.choices);
    gpu.runtime = update.runtime;
    gpu.tuned = update.tuned;
    return;
  }
  file.gpus.push_back(std::move(update));
}

Status refuse_signed_for_tune(const BundleDir& dir) {
  const std::optional<std::string> signature = signature_to_check(dir);
  if (!signature) return {};
  return invalid(dir.display(*signature) +
                 ": the bundle is signed, and tuning adds a tune file and changes bundle.json, which the signature "
                 "covers; tune before ptbundle sign, or delete the signature, tune, and sign again");
}

Result<std::string> write_bundle_tune_file(const std::string& bundle, const TuneFile& file,
                                           const std::string& tool_version) {
  PTB_TRY(BundleTransaction transaction, BundleTransaction::begin(bundle, false, bundle_lock_wait()));
  if (!transaction.manifest()) {
    return invalid(bundle + ": folder without bundle.json; expected a bundle folder made by ptbundle export");
  }
  // Under the lock: a sign that ran while the parts were tuned.
  PTB_CHECK(refuse_signed_for_tune(transaction.dir()));
  Manifest manifest = *transaction.manifest();
  std::vector<std::string> superseded;
  if (manifest.tune) superseded.push_back(manifest.tune->path);
  const std::string path =
      manifest.tune && manifest.tune->path == tune_file_path(0) ? tune_file_path(1) : tune_file_path(0);
  const std::string text = tune_file_text(file);
  const Bytes bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  PTB_TRY(AtomicOutput out, AtomicOutput::create_in(transaction.dir(), path));
  PTB_CHECK(out.write(bytes));
  manifest.tune = ManifestTuneFile{path, text.size(), to_hex(sha256(bytes))};
  manifest.created = utc_now_iso8601();
  if (!tool_version.empty()) manifest.ptbundle_version = tool_version;
  PTB_CHECK(transaction.commit({{path, &out}}, manifest, superseded));
  return path;
}

Result<TuneFile> read_tune_file(const BundleDir& dir, const ManifestTuneFile& listed) {
  const std::string name = dir.display(listed.path);
  PTB_TRY(MappedFile file, MappedFile::open_in(dir, listed.path));
  if (file.size() != listed.size) {
    return invalid(name + ": " + std::to_string(file.size()) + " bytes; bundle.json records " +
                   std::to_string(listed.size) + " (the file changed after ptbundle tune wrote it)");
  }
  if (file.size() > kMaxTuneFileBytes) {
    return invalid(name + ": " + std::to_string(file.size()) + " bytes; expected a tune file of at most " +
                   std::to_string(kMaxTuneFileBytes) + " bytes");
  }
  // A private copy: what is hashed is what is parsed, whatever another
  // process does to the file meanwhile.
  const Bytes bytes = file.bytes();
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string digest = to_hex(sha256(Bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  if (digest != listed.sha256) {
    return invalid(name + ": SHA-256 " + digest + "; bundle.json records " + listed.sha256 +
                   " (the file changed after ptbundle tune wrote it)");
  }
  return parse_tune_file(text, name);
}

}  // namespace ptb

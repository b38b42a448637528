#include "engines/tuned.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace ptb::builtin {
namespace {

using Slot = std::tuple<int, std::string, std::string>;  // device, shim, key

struct Recorded {
  std::string choice;
  uint64_t library_version = 0;
};

struct TunedState {
  std::mutex mutex;
  std::map<int, std::string> sources;  // per device: the tune file, for messages
  std::map<Slot, std::vector<Recorded>> recorded;  // a key may be recorded for several library versions
  std::map<Slot, TunedChoice> made;
  std::set<Slot> refused;
};

TunedState& tuned_state() {
  static TunedState* kept = new TunedState;  // as long as the plans it describes
  return *kept;
}

}  // namespace

void use_tuned(int device, const TunedChoices& tuned) {
  TunedState& s = tuned_state();
  std::lock_guard lock(s.mutex);
  std::erase_if(s.recorded, [device](const auto& entry) { return std::get<0>(entry.first) == device; });
  s.sources[device] = tuned.source;
  for (const TunedChoice& c : tuned.choices) {
    s.recorded[{device, c.shim, c.key}].push_back({c.choice, c.library_version});
  }
}

std::optional<std::string> recorded_choice(int device, const char* shim, const std::string& key,
                                           uint64_t library_version) {
  TunedState& s = tuned_state();
  std::lock_guard lock(s.mutex);
  const Slot slot{device, shim, key};
  if (s.refused.count(slot)) return std::nullopt;
  auto found = s.recorded.find(slot);
  if (found == s.recorded.end()) return std::nullopt;
  for (const Recorded& r : found->second)
    if (r.library_version == library_version) return r.choice;
  return std::nullopt;
}

void refuse_recorded(int device, const char* shim, const std::string& key, const std::string& why) {
  TunedState& s = tuned_state();
  std::lock_guard lock(s.mutex);
  if (!s.refused.insert({device, shim, key}).second) return;
  std::fprintf(stderr, "ptbundle aoti runtime: %s: %s %s: %s; ignored, the shape is searched\n",
               s.sources[device].c_str(), shim, key.c_str(), why.c_str());
}

void note_choice(int device, const char* shim, const std::string& key, const std::string& choice,
                 uint64_t library_version, bool searched) {
  TunedState& s = tuned_state();
  std::lock_guard lock(s.mutex);
  s.made[{device, shim, key}] = TunedChoice{shim, key, choice, library_version, searched};
}

std::vector<TunedChoice> choices_made(int device) {
  TunedState& s = tuned_state();
  std::lock_guard lock(s.mutex);
  std::vector<TunedChoice> out;
  for (const auto& [slot, choice] : s.made)
    if (std::get<0>(slot) == device) out.push_back(choice);
  return out;
}

std::string hex_of(const void* data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string text;
  text.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    text += digits[bytes[i] >> 4];
    text += digits[bytes[i] & 15];
  }
  return text;
}

bool bytes_of_hex(const std::string& text, void* data, size_t size) {
  if (text.size() != size * 2) return false;
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  auto* bytes = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    const int high = value(text[2 * i]), low = value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    bytes[i] = static_cast<unsigned char>(high << 4 | low);
  }
  return true;
}

}  // namespace ptb::builtin

// Stands in for a library AOTInductor builds with link_libtorch=False: it
// links libstdc++ statically, exports all of it, and compiles a std::regex
// in its first call, as AOTInductorModelContainerCreateWithDevice does
// (parse_device_str). LOCALE_USER_VARIANT makes each copy's bytes differ, so
// the loader cannot share one dlopen between them.
#include <exception>
#include <regex>
#include <string>

extern "C" int locale_user_variant() { return LOCALE_USER_VARIANT; }

// The device index of "cuda:N"; -1 when the text does not match; -2 when
// the regex threw (std::bad_cast from a broken locale table).
extern "C" int locale_user_device_index(const char* device) {
  try {
    static const std::regex pattern("(cpu|cuda)(:([0-9]+))?");
    std::smatch match;
    const std::string text(device);
    if (!std::regex_match(text, match, pattern)) return -1;
    return match[3].matched ? std::stoi(match[3].str()) : 0;
  } catch (const std::exception&) {
    return -2;
  }
}

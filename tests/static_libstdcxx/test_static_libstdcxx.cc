// Two libraries that each carry their own static libstdc++, opened by a
// program that links libstdc++ statically too (as some toolchains build
// ptbundle): without a shared libstdc++ in the global scope, the second
// library's locale table conflicts with the first's and its first std::regex
// crashes (loaded_library.cc says how). This program is built
// with -static-libstdc++ so that libstdc++.so.6 is not already global.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <string>

#include "ptbundle/base/file.h"
#include "ptbundle/base/sha256.h"
#include "runner/loaded_library.h"

namespace {

using DeviceIndex = int (*)(const char*);
using Variant = int (*)();

ptb::detail::LoadedLibrary open_locale_user(const char* path) {
  auto file = ptb::MappedFile::open(path);
  REQUIRE_MESSAGE(file.ok(), file.error().message);
  auto library = ptb::detail::LoadedLibrary::open(file->bytes(), ptb::to_hex(ptb::sha256(file->bytes())), "locale_user.so", path);
  REQUIRE_MESSAGE(library.ok(), library.error().message);
  return *library;
}

int device_index(const ptb::detail::LoadedLibrary& library, const char* device) {
  auto call = reinterpret_cast<DeviceIndex>(library.symbol("locale_user_device_index"));
  REQUIRE(library.symbol("locale_user_device_index") != nullptr);
  return call(device);
}

}  // namespace

// Run on its own (ctest: ptb_static_libstdcxx_tests): the refusal case below
// makes the loader act as a machine without libstdc++.so.6.
TEST_CASE("libraries with their own static libstdc++ each run std::regex in one process") {
  // This program's own libstdc++ is static: nothing made libstdc++.so.6 global
  // before the loader did.
  REQUIRE(::dlsym(RTLD_DEFAULT, "_ZNSt6locale7classicEv") == nullptr);

  ptb::detail::LoadedLibrary first = open_locale_user(PTB_LOCALE_USER_A);
  CHECK(device_index(first, "cuda:3") == 3);
  ptb::detail::LoadedLibrary second = open_locale_user(PTB_LOCALE_USER_B);
  auto variant = reinterpret_cast<Variant>(second.symbol("locale_user_variant"));
  REQUIRE(second.symbol("locale_user_variant") != nullptr);
  CHECK(variant() == 2);  // a second copy, not the first one shared
  CHECK(device_index(second, "cuda:1") == 1);
  CHECK(device_index(second, "cpu") == 0);
  CHECK(device_index(first, "cuda:7") == 7);
  CHECK(device_index(second, "tpu:0") == -1);
}

// Run on its own (ctest: ptb_static_libstdcxx_refusal): a machine with no
// libstdc++.so.6 to bind both copies to.
TEST_CASE("without a shared libstdc++ a second library with its own is refused, not run") {
  ptb::detail::LoadedLibrary::assume_no_shared_libstdcxx();
  ptb::detail::LoadedLibrary first = open_locale_user(PTB_LOCALE_USER_A);
  CHECK(device_index(first, "cuda:2") == 2);
  ptb::detail::LoadedLibrary again = open_locale_user(PTB_LOCALE_USER_A);  // the same bytes: one dlopen
  CHECK(device_index(again, "cuda:4") == 4);

  auto file = ptb::MappedFile::open(PTB_LOCALE_USER_B);
  REQUIRE(file.ok());
  auto second = ptb::detail::LoadedLibrary::open(file->bytes(), ptb::to_hex(ptb::sha256(file->bytes())), "locale_user.so", "b.pte: named data 'x_so_blob'");
  REQUIRE_FALSE(second.ok());
  const std::string& message = second.error().message;
  CHECK(message.find("b.pte: named data 'x_so_blob': this library carries its own libstdc++") == 0);
  CHECK(message.find("no shared libstdc++.so.6") != std::string::npos);
  CHECK(message.find("run each part in its own process") != std::string::npos);
  CHECK(device_index(first, "cuda:5") == 5);
}

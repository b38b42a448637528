// The choices of the runtime's searches, handed in from a bundle's tune file
// and reported back to `ptbundle tune` (runner.h's TunedChoice). Each search
// (a GEMM's cuBLASLt algorithm, a convolution's cuDNN engine and route) asks
// for a recorded choice of its shape before it searches, and notes what it
// took either way. A recorded choice is only a hint: the engine checks it
// against what the library accepts for the shape (cublasLtMatmulAlgoCheck,
// cuDNN's own finalize) and searches when it does not fit, saying so on
// stderr with the file and key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptbundle/cuda/runner.h"

namespace ptb::builtin {

inline constexpr const char* kTunedGemm = "gemm";
inline constexpr const char* kTunedConvolution = "convolution";

// Replaces the recorded choices of `device` (the ones already noted stay).
void use_tuned(int device, const TunedChoices& tuned);

// The recorded choice of `shim` for `key` on `device`, when one was made
// with `library_version`.
std::optional<std::string> recorded_choice(int device, const char* shim, const std::string& key,
                                           uint64_t library_version);

// A recorded choice that did not fit: once per key, on stderr, naming the
// tune file and the key; the shape is then searched.
void refuse_recorded(int device, const char* shim, const std::string& key, const std::string& why);

// What serves `key` from now on in this process.
void note_choice(int device, const char* shim, const std::string& key, const std::string& choice,
                 uint64_t library_version, bool searched);

// Every noted choice of `device`, sorted by shim and key.
std::vector<TunedChoice> choices_made(int device);

// Lowercase hex of bytes, and back (nullopt unless exactly 2*size hex digits).
std::string hex_of(const void* data, size_t size);
bool bytes_of_hex(const std::string& text, void* data, size_t size);

}  // namespace ptb::builtin

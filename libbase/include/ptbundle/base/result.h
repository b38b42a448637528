// Errors as values: every fallible function in ptbundle returns Result<T>.
// An Error carries the exit-code class it maps to and one line of text that
// names the file, the place in it and what was expected there.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ptb {

// The numbers are the process exit codes documented in man/ptbundle.1.
enum class ErrorKind : int {
  Invalid = 1,  // the input is malformed, or a check failed
  Usage = 2,    // the command line asks for something impossible
  Io = 3,       // the operating system refused a read or a write
};

struct Error {
  ErrorKind kind = ErrorKind::Invalid;
  std::string message;
};

inline Error invalid(std::string message) { return {ErrorKind::Invalid, std::move(message)}; }
inline Error usage_error(std::string message) { return {ErrorKind::Usage, std::move(message)}; }
inline Error io_error(std::string message) { return {ErrorKind::Io, std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(state_); }
  Error&& take_error() { return std::get<1>(std::move(state_)); }
  // The value, or `fallback` when this holds an error (which is dropped).
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), failed_(true) {}

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }
  Error&& take_error() { return std::move(error_); }

 private:
  Error error_;
  bool failed_ = false;
};

using Status = Result<void>;

// Prefixes an error with context ("model.pte: ") while keeping its kind.
inline Error with_context(const std::string& context, Error error) {
  error.message = context + ": " + error.message;
  return error;
}

// Text read from a file, safe inside a one-line message or a line of text
// output: control bytes (a newline in a part name) become \xNN.
inline std::string printable(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Text from a file cut for a message: printable(), and past `limit` bytes
// the first `limit` of them followed by "... (N bytes)", so that a 50 MB
// string in an input never becomes a 50 MB error line.
inline std::string clipped(std::string_view text, size_t limit = 200) {
  if (text.size() <= limit) return printable(text);
  return printable(text.substr(0, limit)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace ptb

// Early return on failure. `PTB_TRY(auto x, f())` declares x from the value.
#define PTB_CONCAT_INNER(a, b) a##b
#define PTB_CONCAT(a, b) PTB_CONCAT_INNER(a, b)
#define PTB_TRY_IMPL(tmp, decl, expr)      \
  auto tmp = (expr);                       \
  if (!tmp.ok()) return tmp.take_error();  \
  decl = std::move(tmp).value()
#define PTB_TRY(decl, expr) PTB_TRY_IMPL(PTB_CONCAT(ptb_try_, __LINE__), decl, expr)
#define PTB_CHECK(expr)                                      \
  do {                                                       \
    auto ptb_check_result = (expr);                          \
    if (!ptb_check_result.ok()) return ptb_check_result.take_error(); \
  } while (0)

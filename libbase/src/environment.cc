#include "ptbundle/base/environment.h"

#include <cstdlib>

namespace ptb {

std::string temporary_folder() {
  const char* folder = std::getenv("TMPDIR");
  return folder && *folder ? folder : "/tmp";
}

std::string temporary_folder_name() {
  const char* folder = std::getenv("TMPDIR");
  return folder && *folder ? "$TMPDIR" : "/tmp";
}

}  // namespace ptb

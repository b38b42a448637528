#include "ptbundle/base/environment.h"

#include <cstdlib>

namespace ptb {

std::string temporary_folder() {
  const char* folder = std::getenv("TMPDIR");
  return folder && *folder ? folder : "/tmp";
}

}  // namespace ptb

add_library(ptb_warnings INTERFACE)
target_compile_options(ptb_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
  -Wcast-align -Wunused -Woverloaded-virtual -Wimplicit-fallthrough)
if(PTB_WERROR)
  target_compile_options(ptb_warnings INTERFACE -Werror)
endif()

if(PTB_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

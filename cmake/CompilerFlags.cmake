# Warnings of CONVENTIONS.md; -Werror and the sanitizers are options so CI can
# turn them on while a developer's first build stays forgiving.
add_compile_options(
  -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes
  -Wno-unused-parameter)
add_compile_definitions(_GNU_SOURCE)
if(PLUGFS_WERROR)
  add_compile_options(-Werror)
endif()
if(PLUGFS_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Warnings and sanitizers shared by every target of the project.
add_library(edo_warnings INTERFACE)
target_compile_options(edo_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)

if(EDO_SANITIZE)
  string(REPLACE "," ";" _edo_san_list "${EDO_SANITIZE}")
  foreach(_san IN LISTS _edo_san_list)
    if(NOT _san MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "EDO_SANITIZE: unknown sanitizer '${_san}' (use address, undefined, thread or leak)")
    endif()
  endforeach()
  set(_edo_san_flags "-fsanitize=${EDO_SANITIZE}" -fno-omit-frame-pointer)
  if("undefined" IN_LIST _edo_san_list)
    list(APPEND _edo_san_flags -fno-sanitize-recover=undefined)
  endif()
  # Host code only (nvcc does not take these flags); one generator expression per flag, with
  # commas escaped, because a list inside $<...> would be split.
  foreach(_flag IN LISTS _edo_san_flags)
    string(REPLACE "," "$<COMMA>" _flag_escaped "${_flag}")
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:${_flag_escaped}>)
  endforeach()
  add_link_options(${_edo_san_flags})
endif()

# cmake -DIN=<file> -DOUT=<file.cpp> -DSYMBOL=<namespace::name> -P EdoEmbedBinary.cmake
# Writes a C++ source defining `extern const unsigned char name[]` (and name_size) holding
# the bytes of IN, inside the namespace (the fatbin libedo_trace.so loads with the driver).
file(READ "${IN}" _hex HEX)
string(LENGTH "${_hex}" _len)
math(EXPR _size "${_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n  " _bytes "${_bytes}")
string(REGEX MATCH "^(.*)::([^:]+)$" _m "${SYMBOL}")
set(_ns "${CMAKE_MATCH_1}")
set(_name "${CMAKE_MATCH_2}")
file(WRITE "${OUT}" "// Generated from ${IN} by cmake/EdoEmbedBinary.cmake: do not edit.\n#include <cstddef>\nnamespace ${_ns} {\nalignas(64) extern const unsigned char ${_name}[] = {\n  ${_bytes}\n};\nextern const size_t ${_name}_size = ${_size};\n}  // namespace ${_ns}\n")

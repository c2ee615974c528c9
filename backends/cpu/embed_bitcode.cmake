# Writes ${OUTPUT}: a C++ source defining uopd::kSupportBitcode from the bytes of ${INPUT}.
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUTPUT}
  "// Generated from uopd_support.c by embed_bitcode.cmake. Do not edit.\n"
  "#include \"backends/cpu/support_bitcode.h\"\n"
  "namespace uopd {\n"
  "const unsigned char kSupportBitcode[] = {${bytes}};\n"
  "const size_t kSupportBitcodeSize = ${size};\n"
  "}  // namespace uopd\n")

# Writes core/util/kernel_support.c as a C++ string constant for the CUDA prelude: the
# conversions and THREEFRY the CPU backend links as bitcode, compiled by NVRTC as device code.
#   cmake -DINPUT=kernel_support.c -DOUTPUT=kernel_support_source.inc -P embed_support.cmake
file(READ ${INPUT} text)
string(REPLACE "#include \"kernel_support.h\"" "" text "${text}")
file(WRITE ${OUTPUT}
     "// Generated from core/util/kernel_support.c by backends/cuda/embed_support.cmake.\n"
     "constexpr char kKernelSupportSource[] = R\"uopd_support(${text})uopd_support\";\n")

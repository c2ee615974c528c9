// libFuzzer target: the path every kernel a client sends takes (kernel_ast_check.h).
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/kernel_ast_check.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Malformed strings are the inputs' normal state: protobuf's log line for each is noise.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uopd::fuzz::CheckKernelAst(data, size);
  return 0;
}

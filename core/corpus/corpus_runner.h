// Running corpus cases and plans through the Device API directly (no daemon): render, compile,
// load, bind buffers, execute, compare with tinygrad's outputs. Used by uopd-conformance and
// the tests.
#ifndef UOPD_CORE_CORPUS_CORPUS_RUNNER_H_
#define UOPD_CORE_CORPUS_CORPUS_RUNNER_H_

#include <string>

#include "absl/status/status.h"
#include "core/corpus/corpus_file.h"
#include "core/device/device.h"

namespace uopd {

// OK when every output matches. Otherwise: FAILED_PRECONDITION with "slot N: element ..." for a
// wrong result, or the error that stopped the run (rendering, compiling, executing).
absl::Status RunCorpusEntry(Device& device, const CorpusEntry& entry);

}  // namespace uopd

#endif  // UOPD_CORE_CORPUS_CORPUS_RUNNER_H_

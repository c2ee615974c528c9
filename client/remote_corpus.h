// Running corpus cases and plans through a uopd daemon: a case as one Execute call, a plan as
// Prepare + RunPlan + ReleasePlan; outputs compared by the corpus rule.
#ifndef UOPD_CLIENT_REMOTE_CORPUS_H_
#define UOPD_CLIENT_REMOTE_CORPUS_H_

#include <string>

#include "absl/status/statusor.h"
#include "client/uopd_client.h"
#include "core/corpus/corpus_file.h"

namespace uopd {

// The kernels' device time (seconds, as the daemon timed them) when every output matches;
// FAILED_PRECONDITION naming the first differing element, or the daemon's error. Every kernel
// is optimized as `optimization` says.
absl::StatusOr<double> RunCorpusEntryRemote(Client& client, const CorpusEntry& entry,
                                            const std::string& device,
                                            const v1::Optimization& optimization = {});

}  // namespace uopd

#endif  // UOPD_CLIENT_REMOTE_CORPUS_H_

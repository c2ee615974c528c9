// Test helpers for talking to a daemon: requests built from graphs, and running a command.
#ifndef UOPD_TESTS_TESTING_DAEMON_REQUESTS_H_
#define UOPD_TESTS_TESTING_DAEMON_REQUESTS_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "uopd/v1/kernel_service.pb.h"

namespace uopd::testing {

inline v1::CompileRequest CompileOf(const v1::Graph& graph, const std::string& device = "CPU") {
  v1::CompileRequest request;
  *request.mutable_ast() = graph;
  request.set_device(device);
  return request;
}

// An Execute of the one kernel `graph` whose slot i is bound to the buffer `handles[i]`.
inline v1::ExecuteRequest ExecuteOf(const v1::Graph& graph,
                                    const std::vector<std::string>& handles) {
  v1::ExecuteRequest request;
  v1::KernelInvocation* kernel = request.add_kernels();
  *kernel->mutable_ast() = graph;
  for (size_t i = 0; i < handles.size(); ++i) {
    request.add_buffers()->set_handle(handles[i]);
    kernel->add_buffers(static_cast<int>(i));
  }
  return request;
}

// Runs `command` through the shell; returns its standard output and sets its exit code.
inline std::string RunCommand(const std::string& command, int* exit_code) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

}  // namespace uopd::testing

#endif  // UOPD_TESTS_TESTING_DAEMON_REQUESTS_H_

// Calls EnsureTracefs N times (argv[1], default 1) in one fresh process, with the
// privilege this process really has, and prints each answer on a line of stdout:
// "ok ROOT" or "error CODE: message". tracefs_test runs it in private mount namespaces,
// where a fresh process is the only way to see the once-per-process mount.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "lib/capabilities.h"
#include "lib/tracefs.h"

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 1;
  bool may_mount = perfscale::ProbeCapabilities().cap_sys_admin;
  for (int i = 0; i < calls; ++i) {
    absl::StatusOr<std::string> root = perfscale::EnsureTracefs(may_mount);
    if (root.ok()) {
      printf("ok %s\n", root->c_str());
    } else {
      printf("error %s: %s\n", absl::StatusCodeToString(root.status().code()).c_str(),
             std::string(root.status().message()).c_str());
    }
  }
  return 0;
}

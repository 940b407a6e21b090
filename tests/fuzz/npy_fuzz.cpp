// npy_fuzz.cpp: libFuzzer harness for the strict .npy reader (src/util/npy.cpp). Not part of the
// default build. Build and run (clang, from the repository root):
//   tests/fuzz/run_npy_fuzz.sh [SECONDS] [WORKDIR]
// which compiles this file with src/util/npy.cpp and src/util/report.cpp under
// -fsanitize=fuzzer,address,undefined, seeds a corpus with valid v1/v2/v3 files, and runs
// libFuzzer with -jobs=1. Crashes land in WORKDIR as crash-*; add each one to tests/util/test_npy.cpp.
// The contract under test: parse_npy either returns an array whose raw size equals
// prod(shape) * item_size, or throws fa4sim::Error; it never crashes, leaks, reads out of
// bounds, or throws anything else.
#include <cstdint>
#include <cstdlib>

#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"

// report.cpp (write_file_atomic, used by write_npy) stamps reports with these; the fuzz build
// does not run configure_file, so it gets fixed strings.
namespace fa4sim {
const char* version() { return "fuzz"; }
const char* git_describe() { return "fuzz"; }
}  // namespace fa4sim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fa4sim::NpyArray a = fa4sim::parse_npy(data, size, "fuzz.npy");
    if (a.raw.size() != a.size() * a.item_size()) std::abort();
    if (a.size() > 0) {
      volatile float sink = a.value(a.size() - 1);
      (void)sink;
    }
  } catch (const fa4sim::Error&) {}
  return 0;
}

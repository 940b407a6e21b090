// json_fuzz.cpp: libFuzzer harness for every JSON input fa4sim reads (Note [JSON input depth]):
// report --baseline, roofline --arch-file and --measured, the pipe model, data/published, the
// schedule model's kernel descriptions (--spec) and input lists (--inputs), and the text of exp2
// --coeffs files. Not part of the default build. Build and run (clang, from the
// repository root):
//   tests/fuzz/run_json_fuzz.sh [SECONDS] [WORKDIR]
// which compiles this file with the readers' sources under -fsanitize=fuzzer,address,undefined,
// seeds a corpus with the repository's own JSON files, and runs libFuzzer. The first input byte
// picks the reader (even: the JSON readers, odd: the --coeffs text). The contract under test:
// every reader returns or throws fa4sim::Error; it never crashes, overflows the stack, leaks,
// or throws anything else (a json::type_error escaping would print "this is a bug in fa4sim").
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fa4sim/analysis/fit.h"
#include "fa4sim/analysis/roofline.h"
#include "fa4sim/analysis/schedule.h"
#include "fa4sim/report/baseline.h"
#include "fa4sim/report/published.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"

// report.cpp stamps reports with these; the fuzz build does not run configure_file.
namespace fa4sim {
const char* version() { return "fuzz"; }
const char* git_describe() { return "fuzz"; }
}  // namespace fa4sim

namespace {

template <typename F>
void expect_only_errors(F&& f) {
  try {
    f();
  } catch (const fa4sim::Error&) {}
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fa4sim;
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 1) {
    expect_only_errors([&] { (void)parse_coeff_list("--coeffs", text); });
    return 0;
  }
  json j;
  try {
    j = parse_json_input(text, "fuzz.json is not JSON");
  } catch (const Error&) {
    return 0;
  }
  expect_only_errors([&] { (void)parse_arch(j, "fuzz.json"); });
  expect_only_errors([&] { (void)parse_measured(j, "fuzz.json"); });
  expect_only_errors([&] { (void)parse_pipe_model(j, "fuzz.json"); });
  expect_only_errors([&] { (void)PublishedValues::parse(j, "fuzz.json"); });
  expect_only_errors([&] { (void)parse_schedule_spec(j, "fuzz.json"); });
  expect_only_errors([&] {
    if (j.is_array())
      for (const auto& e : j) (void)schedule_input_from_json(e, ScheduleInput{}, "fuzz.json");
    else
      (void)schedule_input_from_json(j, ScheduleInput{}, "fuzz.json");
  });
  expect_only_errors([&] { (void)compare_results(j, j); });
  expect_only_errors([&] { (void)with_nonfinite_as_text(j).dump(2); });
  return 0;
}

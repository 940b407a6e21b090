// paths.h: where fa4sim finds its data/ and its drivers (scripts/drivers/), so that a copied or installed
// binary works (Note [Install layout]).
//
// Note [Install layout]: `cmake --install build --prefix P` puts the binary at P/bin/fa4sim and
// the folders at P/share/fa4sim/data and P/share/fa4sim/drivers (the source tree's
// scripts/drivers/: the Python programs the binary runs). At run time:
//   data     $FA4SIM_DATA_DIR when set; else the folder set_packaged_data_dir() named (the
//            Python wheel's fa4sim/data, set at import without touching the environment); else
//            <dir of the binary>/../share/fa4sim/data when it exists (an installed binary); else the source tree's data/ (a build-tree binary;
//            `roofline` and `report` warn when the binary is not inside that tree)
//   drivers  <dir of the binary>/../share/fa4sim/drivers when it exists; else the source tree's
//            scripts/drivers/ (drivers are code, not data: FA4SIM_DATA_DIR does not move them)
// docs/install.md says the same for users.
#pragma once

#include <string>

namespace fa4sim {

std::string data_dir();
// The data folder shipped with an embedding package (the Python wheel): data_dir() returns it
// unless FA4SIM_DATA_DIR is set. Call before any thread reads data_dir().
void set_packaged_data_dir(std::string dir);
// The folder of the Python drivers the binary runs (plot.py, sdpa_bench.py, fa4_upstream.py).
std::string drivers_dir();
// Whether data_dir() falls back to the source tree the binary was built from although the binary
// is neither in that tree nor in a build tree (a copied binary): its results then depend on
// whatever that checkout holds.
bool data_from_foreign_source_tree();
// The running binary's own path (/proc/self/exe), "" when unknown.
std::string executable_path();

}  // namespace fa4sim

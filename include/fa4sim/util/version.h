// fa4sim version and the git state the binary was configured from.
#pragma once

namespace fa4sim {
const char* version();       // e.g. "0.1.0"
const char* git_describe();  // `git describe --always --dirty` when the binary was built
}  // namespace fa4sim

// constants.h: the mathematical constants the models share, to full double precision (more
// digits than a double holds, so each rounds once, to nearest, at compile time).
#pragma once

namespace fa4sim {

inline constexpr double kLn2 = 0.693147180559945309417232121458176568;    // ln 2
inline constexpr double kLog2e = 1.442695040888963407359924681001892137;  // log2(e) = 1 / ln 2

}  // namespace fa4sim

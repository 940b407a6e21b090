// Tests for parse.h: splitting, trimming and whole-string numbers, the pieces the CLI's option
// parsing and the library's --dist/--exp specs share.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fa4sim/util/error.h"
#include "fa4sim/util/parse.h"

namespace fa4sim {
namespace {

using Parts = std::vector<std::string>;

TEST(Parse, SplitOnKeepsEmptyPartsAndBlanks) {
  EXPECT_EQ(split_on("a:b:c", ':'), (Parts{"a", "b", "c"}));
  EXPECT_EQ(split_on("", ':'), (Parts{""}));
  EXPECT_EQ(split_on("a,,b,", ','), (Parts{"a", "", "b", ""}));
  EXPECT_EQ(split_on(" a , b", ','), (Parts{" a ", " b"}));
  EXPECT_EQ(split_on("abc", ','), (Parts{"abc"}));
}

TEST(Parse, TrimBlanks) {
  EXPECT_EQ(trim_blanks(" \ta b\t "), "a b");
  EXPECT_EQ(trim_blanks(" \t "), "");
  EXPECT_EQ(trim_blanks(""), "");
  EXPECT_EQ(trim_blanks("x"), "x");
}

TEST(Parse, StrtodWhole) {
  EXPECT_EQ(strtod_whole("8"), 8.0);
  EXPECT_EQ(strtod_whole("-20.5"), -20.5);
  EXPECT_EQ(strtod_whole("1e6"), 1e6);
  EXPECT_EQ(strtod_whole("0x1p-3"), 0.125);
  EXPECT_EQ(strtod_whole(" 2"), 2.0);  // strtod skips leading blanks
  EXPECT_TRUE(std::isinf(*strtod_whole("inf")));
  EXPECT_TRUE(std::isnan(*strtod_whole("nan")));
  EXPECT_FALSE(strtod_whole(""));
  EXPECT_FALSE(strtod_whole("x"));
  EXPECT_FALSE(strtod_whole("2 "));
  EXPECT_FALSE(strtod_whole("1,2"));
}

TEST(Parse, ParseFiniteRefusesWithTheOptionsName) {
  EXPECT_EQ(parse_finite("--dist normal:SIGMA", "1.5"), 1.5);
  for (const char* bad : {"", "x", "inf", "nan", "1.5x"}) {
    try {
      parse_finite("--dist normal:SIGMA", bad);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("--dist normal:SIGMA: expected a finite number, got '") + bad + "'");
    }
  }
}

}  // namespace
}  // namespace fa4sim

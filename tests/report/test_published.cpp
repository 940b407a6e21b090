// The published figures of `fa4sim report` (data/published/*.json): every shipped file loads,
// and a missing or malformed one is an Error that names the file and what is wrong.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cli_helpers.h"
#include "fa4sim/report/published.h"
#include "fa4sim/util/error.h"

using namespace fa4sim;
namespace fs = std::filesystem;

namespace {

std::string error_of(const json& j) {
  try {
    PublishedValues::parse(j, "x.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

json good() {
  return json::parse(R"j({"schema": "fa4sim/published-v1", "section": "t",
                         "values": {"a": {"value": 8.77e-5, "source": "seed article"},
                                    "b": {"value": null, "text": "log2(65504)", "source": "upstream"},
                                    "c": {"value": 0.001953125, "text": "2^-9", "source": "OFP8"}}})j");
}

}  // namespace

TEST(Published, EveryShippedFileLoads) {
  for (const char* name : {"exp2", "formats", "rescale", "roofline"}) {
    const PublishedValues p = PublishedValues::load(name);
    EXPECT_FALSE(p.values().empty()) << name;
  }
  EXPECT_EQ(PublishedValues::load("exp2").value("degree5.max_rel"), 1.44e-7);
  EXPECT_EQ(PublishedValues::load("exp2").text("degree5.max_rel"), "1.44e-7");
}

TEST(Published, ValueTextAndSource) {
  const PublishedValues p = PublishedValues::parse(good(), "x.json");
  EXPECT_EQ(p.value("a"), 8.77e-5);
  EXPECT_EQ(p.text("a"), "8.77e-5");
  EXPECT_EQ(p.text("b"), "log2(65504)");
  EXPECT_EQ(p.text("c"), "2^-9");
  EXPECT_EQ(p.source("c"), "OFP8");
  EXPECT_THROW(p.value("b"), Error);  // no number was published
  try {
    p.value("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'x.json' are malformed: values.\"nope\" is missing"),
              std::string::npos)
        << e.what();
  }
}

TEST(Published, MalformedFilesAreNamed) {
  json j = good();
  j["schema"] = "fa4sim/published-v0";
  EXPECT_NE(error_of(j).find("'schema' must be \"fa4sim/published-v1\""), std::string::npos)
      << error_of(j);
  j = good();
  j["values"]["a"].erase("source");
  EXPECT_NE(error_of(j).find("values.\"a\".source must say where"), std::string::npos)
      << error_of(j);
  j = good();
  j["values"]["a"]["value"] = "8.77e-5";
  EXPECT_NE(error_of(j).find("values.\"a\".value must be a number"), std::string::npos)
      << error_of(j);
  j = good();
  j["values"]["b"].erase("text");
  EXPECT_NE(error_of(j).find("needs a 'text'"), std::string::npos) << error_of(j);
  j = good();
  j["values"] = json::object();
  EXPECT_NE(error_of(j).find("'values' must be a non-empty object"), std::string::npos)
      << error_of(j);
}

TEST(Published, MissingAndNonJsonFilesAreErrors) {
  const fs::path dir = fa4sim::test::temp_dir("published");
  fs::create_directories(dir / "published");
  std::ofstream(dir / "published" / "exp2.json") << "{\"schema\": ";
  ::setenv("FA4SIM_DATA_DIR", dir.c_str(), 1);
  auto message = [](const char* name) {
    try {
      PublishedValues::load(name);
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), kExitUsage);
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string missing = message("rescale"), broken = message("exp2");
  ::unsetenv("FA4SIM_DATA_DIR");
  EXPECT_NE(missing.find("cannot read the published figures '" +
                         (dir / "published" / "rescale.json").string() + "'"),
            std::string::npos)
      << missing;
  EXPECT_NE(missing.find("FA4SIM_DATA_DIR"), std::string::npos) << missing;  // the hint
  EXPECT_NE(broken.find("exp2.json' are not JSON"), std::string::npos) << broken;
  fs::remove_all(dir);
}

TEST(Published, CompactNumber) {
  EXPECT_EQ(compact_number(1.44e-7), "1.44e-7");
  EXPECT_EQ(compact_number(3.3895e38), "3.3895e38");
  EXPECT_EQ(compact_number(448), "448");
  EXPECT_EQ(compact_number(8.807), "8.807");
  EXPECT_EQ(compact_number(0.0016), "0.0016");
}

// The CLI shell: subcommand table, did-you-mean, --version, --help, exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"

using fa4sim::test::run_cli;

TEST(CliMain, UnknownSubcommandIsUsageErrorWithSuggestion) {
  auto r = run_cli("reprot");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("fa4sim: error: unknown command 'reprot'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'report'"), std::string::npos) << r.err;
}

TEST(CliMain, UnknownSubcommandFarFromAnyListsCommands) {
  auto r = run_cli("zzzzzzzzzz");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("commands:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

TEST(CliMain, NoSubcommandPrintsUsage) {
  auto r = run_cli("");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("fa4sim: error: give a command"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("report"), std::string::npos) << r.out;
}

TEST(CliMain, HelpCommandAndShortVersion) {
  auto a = run_cli("help rescale"), b = run_cli("rescale --help");
  EXPECT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("--softmax-scale"), std::string::npos);
  auto g = run_cli("help gpu attention");
  EXPECT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.out, run_cli("gpu attention --help").out);
  EXPECT_EQ(run_cli("help").code, 0);
  EXPECT_EQ(run_cli("help nosuch").code, 2);
  auto v = run_cli("-V");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out, run_cli("--version").out);
}

// One spelling per idea: head dim --d, key-tile order --order, keys per tile --block-n, softmax
// scale --softmax-scale, in every command's --help; the old spellings are hidden aliases that
// still parse; --help types every number (no TEXT).
TEST(CliMain, OneSpellingPerIdea) {
  for (const char* cmd :
       {"attention", "rescale", "gpu attention", "gpu upstream check", "roofline"}) {
    const auto h = run_cli(std::string(cmd) + " --help");
    ASSERT_EQ(h.code, 0) << cmd;
    for (const char* old : {"--head-dim", "--block-order", "--block ", "--scale "})
      EXPECT_EQ(h.out.find(old), std::string::npos) << cmd << " shows " << old << ":\n" << h.out;
    EXPECT_EQ(h.out.find("TEXT"), std::string::npos) << cmd << ":\n" << h.out;
  }
  EXPECT_NE(run_cli("gpu attention --help").out.find("--d D"), std::string::npos);
  EXPECT_NE(run_cli("rescale --help").out.find("--block-n N"), std::string::npos);
  // The hidden aliases parse into the same option.
  auto a = run_cli("rescale --rows 8 --keys 256 --d 8 --block 128 --scale 0.125 --json -");
  auto b =
      run_cli("rescale --rows 8 --keys 256 --d 8 --block-n 128 --softmax-scale 0.125 --json -");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["results"], nlohmann::json::parse(b.out)["results"]);
}

TEST(CliMain, VersionFlagAndCommandAgree) {
  auto a = run_cli("--version");
  auto b = run_cli("version");
  EXPECT_EQ(a.code, 0);
  EXPECT_EQ(b.code, 0);
  EXPECT_NE(a.out.find("fa4sim "), std::string::npos);
  EXPECT_EQ(a.out, b.out);
}

// One default seed: every command that draws random numbers shows --seed with default 1
// (kDefaultSeed) in its --help, and the JSON params of a run without --seed say 1.
TEST(CliMain, EveryCommandDefaultsToSeedOne) {
  for (const char* cmd :
       {"exp2", "rescale", "attention", "quantize", "gpu attention", "gpu upstream check"}) {
    const auto h = run_cli(std::string(cmd) + " --help");
    ASSERT_EQ(h.code, 0) << cmd;
    const size_t at = h.out.find("--seed");
    ASSERT_NE(at, std::string::npos) << cmd << ":\n" << h.out;
    const std::string line = h.out.substr(at, h.out.find('\n', at) - at);
    const std::string next = h.out.substr(at, h.out.find('\n', h.out.find('\n', at) + 1) - at);
    EXPECT_TRUE(line.find("=1") != std::string::npos ||
                next.find("(default 1)") != std::string::npos)
        << cmd << ": " << next;
  }
  for (const char* run :
       {"exp2 --samples 1000 --json -", "rescale --rows 8 --keys 256 --d 8 --json -",
        "attention --heads 1 --seq 64 --d 16 --json -"}) {
    const auto r = run_cli(run);
    ASSERT_EQ(r.code, 0) << run << r.err;
    EXPECT_NE(r.out.find("\"seed\": 1,"), std::string::npos) << run;
  }
}

TEST(CliMain, EverySubcommandHasHelp) {
  auto top = run_cli("--help");
  ASSERT_EQ(top.code, 0);
  for (const char* cmd : {"exp2", "report", "version"}) {
    EXPECT_NE(top.out.find(cmd), std::string::npos) << cmd;
    auto r = run_cli(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd << ": " << r.out;
  }
}

TEST(CliMain, UnknownOptionIsUsageError) {
  auto r = run_cli("report --no-such-option");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("fa4sim: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fa4sim report --help"), std::string::npos) << r.err;
}

TEST(CliMain, ReportUnknownSectionSuggests) {
  auto dir = fa4sim::test::temp_dir("rep");
  auto r = run_cli("report --out " + dir.string() + " --only reprt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown section 'reprt'"), std::string::npos) << r.err;
}

// Messages that name the right thing (each used to point elsewhere: "not expected: e4m3
// --dtype", "valid: -4611686018427387904..", "(e.g. 8 or -20.5)" for a list, "out of memory"
// for a folder, "pass another --json path" for --binary-out and --out).
TEST(CliMain, MessagesNameTheRightThing) {
  auto r = run_cli("formats --dtype e4m3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown option '--dtype' for 'fa4sim formats'"), std::string::npos)
      << r.err;
  r = run_cli("exp2 --degre 3");
  EXPECT_NE(r.err.find("did you mean '--degree'"), std::string::npos) << r.err;
  r = run_cli("exp2 --samples 1.5");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("4611686018427387904"), std::string::npos) << r.err;
  r = run_cli("roofline --tile 128x128x1");
  EXPECT_NE(r.err.find("--tile expects MxN (two whole numbers), got '128x128x1'"),
            std::string::npos)
      << r.err;
  r = run_cli("check --dtype bf16 --tau 0,4");  // a list, as every other --tau takes
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2^4 = 16"), std::string::npos) << r.out;
  r = run_cli("roofline --d 64,x");
  EXPECT_EQ(r.code, 2);
  const auto dir = fa4sim::test::temp_dir("messages");
  std::filesystem::create_directory(dir / "scores.npy");
  r = run_cli("rescale --dist file:" + (dir / "scores.npy").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("it is a directory"), std::string::npos) << r.err;
  r = run_cli("quantize 1 --binary-out /nonexistent-fa4sim/x.bin");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pass another --binary-out path"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

// ---- every option's --help line: its type, its range, and that the range is the one checked

namespace {

struct HelpOption {
  std::string name;   // --batch
  std::string type;   // N:1..65535 (empty for a flag)
  std::string deflt;  // 1 (after '='; empty when none is shown)
  std::string text;   // the description
};

// The options of `fa4sim <cmd> --help` (CLI11's layout: "  --name TYPE=DEFAULT  text", the text
// on the next line when the first is full) and the subcommands it lists.
void read_help(const std::string& cmd, std::vector<HelpOption>& opts,
               std::vector<std::string>& subs) {
  const auto h = run_cli(cmd + " --help");
  ASSERT_EQ(h.code, 0) << cmd << ": " << h.err;
  std::istringstream in(h.out);
  std::string line;
  bool in_subs = false;
  while (std::getline(in, line)) {
    if (line.rfind("Subcommands:", 0) == 0) in_subs = true;
    if (line.rfind("  ", 0) != 0) continue;
    const auto b = line.find_first_not_of(' ');
    if (line[b] != '-') {
      if (in_subs && b == 2)
        subs.push_back(line.substr(b, line.find(' ', b) - b));
      else if (!opts.empty())
        opts.back().text += " " + line.substr(b);  // a wrapped description
      continue;
    }
    HelpOption o;
    auto e = line.find(' ', b);
    o.name = line.substr(b, e - b);
    o.name = o.name.substr(o.name.rfind(',') == std::string::npos ? 0 : o.name.rfind(',') + 1);
    if (e != std::string::npos && e + 1 < line.size() && line[e + 1] != ' ') {  // "--name TYPE"
      const auto t = line.find(' ', e + 1);
      std::string type = line.substr(e + 1, t - e - 1);
      const auto eq = type.find('=');
      if (eq != std::string::npos) o.deflt = type.substr(eq + 1), type = type.substr(0, eq);
      o.type = type;
      e = t;
    }
    if (e != std::string::npos)
      o.text = line.substr(std::min(line.size(), line.find_first_not_of(' ', e)));
    opts.push_back(o);
  }
}

// Every command and subcommand, by walking the Subcommands: sections from the top.
std::vector<std::string> all_commands() {
  std::vector<std::string> out, todo = {""};
  while (!todo.empty()) {
    const std::string cmd = todo.back();
    todo.pop_back();
    std::vector<HelpOption> opts;
    std::vector<std::string> subs;
    read_help(cmd, opts, subs);
    if (!cmd.empty()) out.push_back(cmd);
    for (const auto& s : subs) todo.push_back(cmd.empty() ? s : cmd + " " + s);
  }
  return out;
}

// Whether an option takes a number: its type says so (N, D, T, ..., LO,HI, MxN, CLI11's INT and
// FLOAT) or its default is one.
bool takes_number(const HelpOption& o) {
  static const std::regex kNumericType(
      R"(^(N|D|T|M|K|S|B|H|HKV|ALPHA|X|F|INT|FLOAT|NUMBER|LO,HI|MxN|LO:HI:STEP|\[FREQ,RES,START\])(\[,.*\])?$)");
  static const std::regex kNumber(R"(^-?[0-9.]+(e[0-9]+)?(,-?[0-9.]+)*$)");
  const std::string base = o.type.substr(0, o.type.find(':'));
  return std::regex_match(base, kNumericType) || std::regex_match(o.deflt, kNumber);
}

// Where the range shows: after the type (`N:1..65535`), as an enumeration (`0|1`), or in the text.
bool shows_range(const HelpOption& o) {
  static const std::regex kInText(R"([0-9]\.\.[-0-9]|> ?0|\[-?[0-9.]+, ?-?[0-9.]+[)\]])");
  const std::string base = o.type.substr(0, o.type.find(':'));
  return o.type.find(':') != std::string::npos && o.type.find(':') + 1 < o.type.size() ? true
         : base.find('|') != std::string::npos                                         ? true
                                               : std::regex_search(o.text, kInText);
}

// "2^53" -> 9007199254740992, "2^62-1", "1e11", "64".
double bound_value(const std::string& s) {
  static const std::regex kPow(R"(^2\^([0-9]+)(-1)?$)");
  std::smatch m;
  if (std::regex_match(s, m, kPow))
    return std::ldexp(1.0, std::stoi(m[1])) - (m[2].matched ? 1 : 0);
  return std::strtod(s.c_str(), nullptr);
}

std::string number_text(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace

// Every option that takes a value names it in --help: never CLI11's TEXT, nor a bare VALUE or
// LIST (a list shows its element, N[,N...]); every option that takes a number shows its range.
TEST(CliMain, HelpTypesEveryValueAndShowsEveryRange) {
  const auto commands = all_commands();
  ASSERT_GE(commands.size(), 20u);  // the walk found the nested ones too (gpu upstream bench)
  size_t numeric = 0;
  for (const auto& cmd : commands) {
    std::vector<HelpOption> opts;
    std::vector<std::string> subs;
    read_help(cmd, opts, subs);
    for (const auto& o : opts) {
      if (o.type.empty()) continue;  // a flag
      const std::string base = o.type.substr(0, o.type.find(':'));
      for (const char* vague : {"TEXT", "VALUE", "LIST"})
        EXPECT_EQ(base.find(vague), std::string::npos)
            << "fa4sim " << cmd << " " << o.name << " " << o.type;
      if (!takes_number(o)) continue;
      ++numeric;
      EXPECT_TRUE(shows_range(o)) << "fa4sim " << cmd << " " << o.name << " " << o.type
                                  << " states no range: " << o.text;
    }
  }
  EXPECT_GE(numeric, 80u);
}

// The range --help shows after a type is the range that is checked: just outside it, the value
// is refused when the option is read (exit 2, the house message naming the option), before the
// unknown option that follows it is even looked at.
TEST(CliMain, HelpRangesAreTheCheckedRanges) {
  static const std::regex kRange(R"(^([^:]*):(-?[0-9.e^]+(?:-1)?)\.\.(-?[0-9.e^]+(?:-1)?)$)");
  static const std::regex kPositive(R"(^([^:]*):>0$)");
  size_t tried = 0;
  for (const auto& cmd : all_commands()) {
    std::vector<HelpOption> opts;
    std::vector<std::string> subs;
    read_help(cmd, opts, subs);
    for (const auto& o : opts) {
      std::smatch m;
      std::vector<std::string> outside;
      if (std::regex_match(o.type, m, kRange) && m[1] != "LO,HI") {  // a pair is not one number
        const double lo = bound_value(m[2]), hi = bound_value(m[3]);
        outside.push_back(number_text(hi + (hi >= 9e15 ? hi : 1)));
        outside.push_back(number_text(lo - 1));
      } else if (std::regex_match(o.type, m, kPositive)) {
        outside = {"0", "-1"};
      }
      for (const auto& v : outside) {
        const auto r = run_cli(cmd + " " + o.name + "=" + v + " --no-such-option-after-it");
        ++tried;
        EXPECT_EQ(r.code, 2) << "fa4sim " << cmd << " " << o.name << "=" << v;
        EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(o.name), std::string::npos)
            << "fa4sim " << cmd << " " << o.name << "=" << v << ": " << r.err;
        EXPECT_EQ(r.err.find("unknown option"), std::string::npos)
            << "fa4sim " << cmd << " " << o.name << "=" << v << " was accepted: " << r.err;
      }
    }
  }
  EXPECT_GE(tried, 100u);
}

// ---- the input policy (docs/input-policy.md)

// An unknown subcommand of a command with subcommands is named, with a suggestion (it said "A
// subcommand is required"); an option before the command says where it goes.
TEST(CliMain, UnknownNestedSubcommandAndOptionBeforeCommand) {
  auto r = fa4sim::test::expect_refused("gpu bogus", "unknown command 'bogus' for 'fa4sim gpu'");
  EXPECT_NE(r.err.find("commands: info"), std::string::npos) << r.err;
  fa4sim::test::expect_refused("gpu infoo", "did you mean 'info'?");
  fa4sim::test::expect_refused("gpu upstream bogus",
                               "unknown command 'bogus' for 'fa4sim gpu upstream'");
  fa4sim::test::expect_refused("--threads 2 exp2",
                               "--threads goes after the command (fa4sim exp2 --threads");
}

// Empty values are refused everywhere: `--q ""` (an unset shell variable) ran on seeded random
// tensors, `--tau ""` meant the default, `--measured ""` was ignored, `gpu verify --coeffs ""`
// was not looked at.
TEST(CliMain, EmptyValuesAreRefused) {
  fa4sim::test::expect_refused("attention --q '' --k '' --v ''",
                               "--q needs a value, got an empty one");
  fa4sim::test::expect_refused("attention --tau ''", "--tau needs a value, got an empty one");
  fa4sim::test::expect_refused("check --dtype ''", "--dtype needs a value, got an empty one");
  fa4sim::test::expect_refused("roofline --measured ''",
                               "--measured needs a value, got an empty one");
  fa4sim::test::expect_refused("gpu verify --coeffs ''",
                               "--coeffs needs a value, got an empty one");
  fa4sim::test::expect_refused("rescale --dist ''", "--dist needs a value, got an empty one");
  // The commands' own messages stay where they name what is needed.
  fa4sim::test::expect_refused("exp2 --coeffs ''", "--coeffs needs c0,c1,... or a file name");
}

// A value given twice in a list is refused in every list (only --arch refused it), and so is an
// empty item.
TEST(CliMain, ListsRefuseRepeatsAndEmptyItems) {
  fa4sim::test::expect_refused("exp2 --degree 3,3", "--degree lists '3' twice");
  fa4sim::test::expect_refused("attention --dtype bf16,bf16", "--dtype lists 'bf16' twice");
  fa4sim::test::expect_refused("check --tau 8,8.0",
                               "--tau lists the same value twice ('8' and '8.0')");
  fa4sim::test::expect_refused("report --only formats,formats", "--only lists 'formats' twice");
  fa4sim::test::expect_refused("rescale --tau 0,,8", "--tau needs a number in every item");
  fa4sim::test::expect_refused("rescale --dtype bf16,", "--dtype needs a format in every item");
}

// Seeds are read as integers, exactly, over their whole documented range: 2^53 and 2^53 + 1 were
// the same seed, 2^62 was accepted for exp2 (max 2^62-1) and 2^63-1 refused for quantize.
TEST(CliMain, SeedsAreExactIntegers) {
  auto seed_of = [](const std::string& args) {
    auto r = run_cli(args + " --json -");
    EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
    return nlohmann::json::parse(r.out)["params"]["seed"].dump();
  };
  EXPECT_EQ(seed_of("exp2 --samples 1000 --seed 4611686018427387903"), "4611686018427387903");
  EXPECT_EQ(seed_of("exp2 --samples 1000 --seed 9007199254740993"), "9007199254740993");
  EXPECT_EQ(seed_of("exp2 --samples 1000 --seed 9.007199254740993e15"), "9007199254740993");
  auto a = run_cli("exp2 --samples 1000 --seed 9007199254740992 --json -");
  auto b = run_cli("exp2 --samples 1000 --seed 9007199254740993 --json -");
  EXPECT_NE(nlohmann::json::parse(a.out)["results"].dump(),
            nlohmann::json::parse(b.out)["results"].dump());
  fa4sim::test::expect_refused("exp2 --seed 4611686018427387904",
                               "--seed = 4611686018427387904 is out of range");
  fa4sim::test::expect_refused("attention --seed 9007199254740993",
                               "--seed = 9007199254740993 is out of range (valid: 0..2^53)");
  fa4sim::test::expect_refused("rescale --rng numpy:9007199254740993",
                               "is out of range (valid: 0..2^53)");
  auto q = run_cli("quantize --rounding stochastic --seed 9223372036854775807 1.5");
  EXPECT_EQ(q.code, 0) << q.err;
  fa4sim::test::expect_refused("quantize --rounding stochastic --seed 9223372036854775808 1.5",
                               "is out of range");
  fa4sim::test::expect_refused("exp2 --seed 1.5", "--seed expects an integer, got '1.5'");
}

// Messages that fit the option: an integer option's hint is its range (not "e.g. 8 or -20.5"),
// --samples 1e308 is above the limit (it is an integer), and an empty range suggests no swap
// that is itself empty.
TEST(CliMain, NumberMessagesFitTheOption) {
  auto r = fa4sim::test::expect_refused("attention --block-n many",
                                        "--block-n expects a number, got 'many' (valid: 1..4096)");
  EXPECT_EQ(r.err.find("-20.5"), std::string::npos) << r.err;
  fa4sim::test::expect_refused("exp2 --samples 1e308",
                               "--samples 1e308 is above the limit of 1e+11");
  fa4sim::test::expect_refused("exp2 --samples 1e19", "--samples 1e19 is above the limit of 1e+11");
  r = fa4sim::test::expect_refused("exp2 --range=1,1", "--range is empty");
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  r = fa4sim::test::expect_refused("exp2 --range=-0,0", "--range is empty");
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

// -0 is 0: no "-0" in a table.
TEST(CliMain, NegativeZeroIsZero) {
  auto r = run_cli("check --dtype bf16 --tau -0");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("-0 "), std::string::npos) << r.out;
  r = run_cli("roofline --arch h200 --emu-fraction -0");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("f=-0"), std::string::npos) << r.out;
}

// Options the chosen mode ignores are named on stderr (they were dropped without a word).
TEST(CliMain, IgnoredOptionsAreNamed) {
  auto r = run_cli("exp2 --exhaustive --range=1,1.01 --sampling bits --seed 5");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("fa4sim: warning: --seed has no effect with --exhaustive"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("fa4sim: warning: --sampling has no effect with --exhaustive"),
            std::string::npos)
      << r.err;
  r = run_cli("fit --degree 1 --minimax-only --objective bf16-identical");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("fa4sim: warning: --objective has no effect with --minimax-only"),
            std::string::npos)
      << r.err;
}

// An unsafe check names each dtype once ("e4m3, e4m3" for two unsafe taus).
TEST(CliMain, UnsafeCheckNamesEachDtypeOnce) {
  auto r = run_cli("check --tau 0,4,8 --dtype e4m3");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("unsafe configuration for e4m3 ("), std::string::npos) << r.err;
}

// A quantize option typo gets the message every command gives.
TEST(CliMain, QuantizeUnknownOptionHasTheCommonFormat) {
  fa4sim::test::expect_refused(
      "quantize --dtpye e4m3 1",
      "unknown option '--dtpye' for 'fa4sim quantize' (did you mean '--dtype'?");
}

// FA4SIM_DATA_DIR that is a file: "is not a directory", as report says (roofline said "no
// architecture files in '<file>/archs'").
TEST(CliMain, DataDirThatIsAFileIsNamed) {
  auto r = run_cli("roofline --arch h200");  // sanity: the data are found
  ASSERT_EQ(r.code, 0) << r.err;
  const auto dir = fa4sim::test::temp_dir("datadir");
  std::ofstream(dir / "file") << "x";
  const std::string cmd = "env FA4SIM_DATA_DIR=" + (dir / "file").string() + " " + FA4SIM_BIN +
                          " roofline >/dev/null 2>" + (dir / "err").string();
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  EXPECT_NE(fa4sim::test::slurp((dir / "err").string())
                .find("FA4SIM_DATA_DIR '" + (dir / "file").string() + "' is not a directory"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// A binary copied out of its build tree, with no installed data next to it, reads the source
// tree it was built from: roofline and report say so on stderr (they did so silently).
TEST(CliMain, CopiedBinaryWarnsAboutItsData) {
  auto r = run_cli("roofline --arch h200");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  const auto dir = fa4sim::test::temp_dir("copied");
  std::filesystem::copy_file(FA4SIM_BIN, dir / "fa4sim");
  const std::string cmd =
      (dir / "fa4sim").string() + " roofline --arch h200 >/dev/null 2>" + (dir / "err").string();
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
  EXPECT_NE(fa4sim::test::slurp((dir / "err").string())
                .find("fa4sim: warning: no installed data next to this binary"),
            std::string::npos);
  std::ofstream(dir / "CMakeCache.txt") << "";  // a build tree outside the source tree: no warning
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
  EXPECT_EQ(fa4sim::test::slurp((dir / "err").string()).find("warning"), std::string::npos);
  std::filesystem::remove_all(dir);
}

#define BOOST_TEST_MODULE cli_flags
#include <boost/test/unit_test.hpp>

// The flag parser of every `actorgrad` subcommand, in process: for every
// flag, `--flag value` and `--flag=value` parse to the same options (and
// differ from the defaults, so the flag took effect); a flag this test has
// no sample value for fails it, so a new flag cannot skip the check. Also
// the typed validators, the output-path check and the nearest-flag search.

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "actorgrad/actors/engine.h"
#include "tools/cli/engine_flags.h"
#include "tools/cli/flags.h"
#include "tools/cli/trace.h"
#include "tools/cli/train.h"
#include "tools/cli/worker.h"

using namespace actorgrad::cli;
namespace fs = std::filesystem;

namespace {

/// A fresh `actorgrad` app with the three subcommands parsing into `o`.
struct Parsed {
  TrainOptions train;
  TraceOptions trace;
  WorkerOptions worker;
  std::optional<int> status;
};

Parsed parse_args(std::vector<std::string> args) {
  Parsed p;
  CLI::App app{"test", "actorgrad"};
  app.allow_extras();
  app.option_defaults()->always_capture_default()->multi_option_policy(
    CLI::MultiOptionPolicy::TakeLast);
  for (CLI::App* cmd :
       {add_train(app, p.train), add_trace(app, p.trace), add_worker(app, p.worker)})
    cmd->allow_extras();
  args.insert(args.begin(), "actorgrad");
  std::vector<const char*> argv;
  for (auto& a : args)
    argv.push_back(a.c_str());
  p.status = parse(app, static_cast<int>(argv.size()), argv.data());
  return p;
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("actorgrad_flags_" + std::to_string(::getpid()) + name))
    .string();
}

/// A non-default value for a flag ("" for a flag without value) and the
/// other flags it needs.
struct Sample {
  Sample(const char* v) : value(v) {}
  Sample(std::string v) : value(std::move(v)) {}
  Sample(std::string v, std::vector<std::string> n) : value(std::move(v)), needs(std::move(n)) {}
  Sample(std::string v, std::vector<std::string> n, std::vector<std::string> m)
    : value(std::move(v)), needs(std::move(n)), more(std::move(m)) {}
  std::string value;
  std::vector<std::string> needs;
  /// Further values of a flag that takes several (after the first, in both forms).
  std::vector<std::string> more;
};

/// Per command: the arguments every run needs, and a sample per flag.
struct Samples {
  std::vector<std::string> base;
  std::map<std::string, Sample> values;
};

/// The long flags of `cmd` but --help.
std::vector<std::string> flags_of(const std::string& cmd) {
  CLI::App app;
  TrainOptions a;
  TraceOptions b;
  WorkerOptions c;
  CLI::App* sub = cmd == "train"   ? add_train(app, a)
                  : cmd == "trace" ? add_trace(app, b)
                                   : add_worker(app, c);
  std::vector<std::string> out;
  for (const CLI::Option* opt : sub->get_options())
    for (const std::string& n : opt->get_lnames())
      if (n != "help")
        out.push_back("--" + n);
  return out;
}

template <class Options>
void check_both_forms(const std::string& cmd, const Samples& samples,
                      const std::function<const Options&(const Parsed&)>& get) {
  for (const std::string& flag : flags_of(cmd)) {
    auto it = samples.values.find(flag);
    BOOST_TEST_REQUIRE((it != samples.values.end()), cmd << " " << flag << ": no sample value");
    const Sample& sample = it->second;
    std::vector<std::string> common{cmd};
    common.insert(common.end(), samples.base.begin(), samples.base.end());
    common.insert(common.end(), sample.needs.begin(), sample.needs.end());
    const Parsed defaults = parse_args(common);
    BOOST_TEST_REQUIRE(!defaults.status.has_value(), cmd << " " << flag << ": base run fails");
    std::vector<std::string> spaced = common, joined = common;
    if (sample.value.empty()) {
      spaced.push_back(flag);
      joined.push_back(flag + "=true");
    } else {
      spaced.insert(spaced.end(), {flag, sample.value});
      joined.push_back(flag + "=" + sample.value);
    }
    spaced.insert(spaced.end(), sample.more.begin(), sample.more.end());
    joined.insert(joined.end(), sample.more.begin(), sample.more.end());
    const Parsed a = parse_args(spaced);
    const Parsed b = parse_args(joined);
    BOOST_TEST(!a.status.has_value(), cmd << " " << flag << " " << sample.value << " failed");
    BOOST_TEST(!b.status.has_value(), cmd << " " << flag << "=" << sample.value << " failed");
    BOOST_TEST((get(a) == get(b)), cmd << " " << flag << ": the two forms differ");
    BOOST_TEST(!(get(a) == get(defaults)), cmd << " " << flag << ": had no effect");
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(flag_value_and_flag_equals_value_parse_the_same_for_every_flag) {
  const std::string out = temp_path("_out");
  const std::string in = temp_path("_in.json");
  std::ofstream(in) << "{}";
  check_both_forms<TrainOptions>("train",
                                 {{},
                                  {{"--steps", "7"},
                                   {"--lr", "0.5"},
                                   {"--hidden", "9"},
                                   {"--seed", "0"},
                                   {"--log-every", "3"},
                                   {"--executor", "reference"},
                                   {"--devices", "sim:3"},
                                   {"--cpu-workers", "2"},
                                   {"--optimizer", "sgd"},
                                   {"--momentum", "0.5"},
                                   {"--activation", "relu"},
                                   {"--dtype", "float64"},
                                   {"--points", "11"},
                                   {"--batch", "4"},
                                   {"--trace", "-"},
                                   {"--trace-step", {"1", {"--trace", out}}},
                                   {"--html", {out, {"--trace", "-"}}}}},
                                 [](const Parsed& p) -> const TrainOptions& { return p.train; });
  check_both_forms<TraceOptions>("trace",
                                 {{"--summary", out},
                                  {{"--model", "chain"},
                                   {"--devices", "cpu"},
                                   {"--cpu-workers", "2"},
                                   {"--hidden", "5"},
                                   {"--points", "6"},
                                   {"--nodes", "7"},
                                   {"--seed", "0"},
                                   {"--in", in},
                                   {"--out", "-"},
                                   {"--html", "-"},
                                   {"--summary", "-"},
                                   {"--ops-csv", "-"},
                                   {"--top", "5"},
                                   {"--all", ""},
                                   {"--diff", {in, {}, {in}}},
                                   {"--merge", {in, {}, {in}}}}},
                                 [](const Parsed& p) -> const TraceOptions& { return p.trace; });
  check_both_forms<WorkerOptions>("worker",
                                  {{"--port", "0"},
                                   {{"--port", "4242"},
                                    {"--host", "0.0.0.0"},
                                    {"--timeout-ms", "5"},
                                    {"--enable-test-ops", ""},
                                    {"--quiet", ""},
                                    {"--verbose", ""},
                                    {"--trace", out + "_%r.json:5"}}},
                                  [](const Parsed& p) -> const WorkerOptions& { return p.worker; });
  fs::remove(in);
}

BOOST_AUTO_TEST_CASE(seed_zero_is_an_integer_like_any_other) {
  // Issue #24: `--seed 0` was refused by `trace` and taken by `train`.
  BOOST_TEST(parse_args({"train", "--seed", "0"}).train.seed == 0u);
  BOOST_TEST(parse_args({"trace", "--seed", "0", "--summary", "-"}).trace.seed == 0u);
  BOOST_TEST(*parse_args({"train", "--seed", "-1"}).status == kUsageError);
  BOOST_TEST(*parse_args({"trace", "--seed", "x"}).status == kUsageError);
}

BOOST_AUTO_TEST_CASE(cpu_workers_reach_the_engine_and_bad_counts_are_refused) {
  const Parsed train = parse_args({"train", "--devices", "sim:2", "--cpu-workers", "3"});
  const Parsed trace =
    parse_args({"trace", "--devices", "cpu", "--cpu-workers=4", "--summary", "-"});
  BOOST_TEST_REQUIRE(!train.status.has_value());
  BOOST_TEST_REQUIRE(!trace.status.has_value());
  actorgrad::Engine a(engine_config(train.train.devices, train.train.cpu_workers));
  BOOST_TEST(a.config().cpu_workers == 3u);
  BOOST_TEST(a.config().devices.size() == 2u);
  actorgrad::Engine b(engine_config(trace.trace.devices, trace.trace.cpu_workers));
  BOOST_TEST(b.config().cpu_workers == 4u);
  BOOST_TEST(b.config().devices.empty());
  BOOST_TEST(parse_args({"train"}).train.cpu_workers == 1, "1 unless given");
  for (const char* bad : {"0", "257", "-1", "two", "1.5"}) {
    BOOST_TEST(*parse_args({"train", "--cpu-workers", bad}).status == kUsageError, bad);
    BOOST_TEST(*parse_args({"trace", "--cpu-workers", bad, "--summary", "-"}).status == kUsageError,
               bad);
  }
  BOOST_TEST(*parse_args({"train", "--executor", "reference", "--cpu-workers", "2"}).status ==
             kUsageError);
}

BOOST_AUTO_TEST_CASE(validators_name_the_bad_value) {
  auto check = [](CLI::Validator v, std::string value) {
    return v(value); // "" when accepted
  };
  BOOST_TEST(check(integer_in(1), "3").empty());
  BOOST_TEST(check(integer_in(1), "0") == "expects an integer >= 1, not '0'");
  BOOST_TEST(!check(integer_in(1), "1.5").empty());
  BOOST_TEST(!check(integer_in(1), "").empty());
  BOOST_TEST(!check(integer_in(1), "3x").empty());
  BOOST_TEST(check(integer_in(0, 9), "10") == "expects an integer in [0, 9], not '10'");
  BOOST_TEST(check(device_set(), "sim:3").empty());
  BOOST_TEST(check(device_set(), "cpu").empty());
  for (const char* bad : {"sim:", "sim:0", "sim:x", "cuda:0", "gpu"})
    BOOST_TEST(check(device_set(), bad).find(std::string("not '") + bad + "'") != std::string::npos,
               bad);
  BOOST_TEST(device_list("sim:3").size() == 3u);
  BOOST_TEST(device_list("cpu").empty());
  const auto gpus = device_list("cuda:2");
  BOOST_TEST_REQUIRE(gpus.size() == 2u);
  BOOST_TEST(gpus[1].str() == "cuda:1");
  BOOST_TEST(check(one_of({"a", "b", "c"}), "d") == "must be a, b or c, not 'd'");
  BOOST_TEST(!check(number_where("> 0", [](double v) { return v > 0; }), "nan").empty());
  BOOST_TEST(check(number_where("> 0", [](double v) { return v > 0; }), "1e-3").empty());
}

BOOST_AUTO_TEST_CASE(output_paths_are_checked_before_use) {
  BOOST_TEST(output_problem("-").empty());
  BOOST_TEST(output_problem(temp_path("_new.json")).empty());
  const std::string missing = output_problem("/nonexistent-actorgrad-dir/t.json");
  BOOST_TEST(missing.find("directory '/nonexistent-actorgrad-dir' does not exist") !=
               std::string::npos,
             missing);
  BOOST_TEST(output_problem(fs::temp_directory_path().string()).find("is a directory") !=
             std::string::npos);
  const std::string file = temp_path("_file");
  std::ofstream(file) << "x";
  BOOST_TEST(output_problem(file).empty()); // overwritable
  BOOST_TEST(output_problem(file + "/t.json").find("is not a directory") != std::string::npos);
  fs::remove(file);
}

BOOST_AUTO_TEST_CASE(nearest_flag) {
  const std::vector<std::string> flags = {"--steps", "--seed", "--log-every", "--trace",
                                          "--trace-step"};
  BOOST_TEST(nearest("--stpes", flags) == "--steps");
  BOOST_TEST(nearest("--step", flags) == "--steps");
  BOOST_TEST(nearest("--log", flags) == "--log-every");
  BOOST_TEST(nearest("--trace-stpe", flags) == "--trace-step");
  BOOST_TEST(nearest("--zzzzzzzz", flags) == "");
}

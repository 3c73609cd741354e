/// @file test_preload.cpp
/// The preload path (issue #18): an unmodified libtorch program
/// (helpers/plain_libtorch_program.cpp, no actorgrad in it) run in child
/// processes plainly and with LD_PRELOAD=libactorgrad_torch_preload.so prints
/// the same losses, parameters, gradients and Hessian-vector product, in
/// hexadecimal floating point (so: bitwise equal). With ACTORGRAD_TRACE set,
/// the trace proves the backward ran on actorgrad: the JSON file passes the
/// Chrome trace checks (paired flow arrows, node slices) and names
/// libtorch's nodes (AddmmBackward0, ...) from one graph task per backward
/// call; the HTML report names them too. The example
/// (tools/examples/torch/train_transformer.cpp) trains, its trace passes
/// the same checks, and its plain build under LD_PRELOAD prints the same
/// losses as the build with the install line.

#define BOOST_TEST_MODULE torch_preload
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/chrome_trace_check.h"
#include "actorgrad/tools/trace/chrome_json.h"

using namespace actorgrad;
using namespace std::chrono_literals;

namespace {

/// Set by tests/CMakeLists.txt.
const std::string program = ACTORGRAD_TORCH_PLAIN_PROGRAM;
const std::string preload = ACTORGRAD_TORCH_PRELOAD_LIBRARY;
const std::string example = ACTORGRAD_TORCH_EXAMPLE;
const std::string example_plain = ACTORGRAD_TORCH_EXAMPLE_PLAIN;

/// Runs `argv` with `env` (NAME=value each) through env(1); requires exit 0.
test::RunResult run_with(const std::vector<std::string>& env, const std::vector<std::string>& argv) {
  std::vector<std::string> all{"/usr/bin/env"};
  all.insert(all.end(), env.begin(), env.end());
  all.insert(all.end(), argv.begin(), argv.end());
  test::RunResult r = test::run(all, 120s);
  BOOST_TEST_REQUIRE(r.status == 0, "exit " << r.status << " of " << argv.front() << " with "
                                            << env.size() << " variables set; stderr: " << r.err);
  return r;
}

test::RunResult run_program(const std::vector<std::string>& env) { return run_with(env, {program}); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("actorgrad_preload_" + std::to_string(::getpid()) + "_" + name))
    .string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The program's own count of its backward calls ("backward_calls N").
std::size_t backward_calls(const std::string& out) {
  const auto at = out.rfind("backward_calls ");
  BOOST_TEST_REQUIRE(at != std::string::npos, "the program printed its backward calls");
  return std::stoul(out.substr(at + 15));
}

/// Checks the Chrome trace at `path` (then removes it): its structure, the
/// libtorch nodes it names (`nodes` and AccumulateGrad), its graph tasks.
/// A CPU-only libtorch graph runs on the calling thread's actor: such a
/// trace has one track and no messages, so its flow checks pair nothing.
void check_trace(const std::string& path, const std::vector<std::string>& nodes, std::size_t tasks_expected) {
  BOOST_TEST_REQUIRE(std::filesystem::exists(path), path << " was written");
  const std::string json = read_file(path);
  const trace::Timeline tl = trace::read_chrome_json(path);
  std::remove(path.c_str());
  BOOST_TEST(test::check_chrome_structure(json, tl) == tl.slices.size());
  std::set<std::string> names;
  std::set<std::uint64_t> tasks;
  for (const auto& s : tl.slices) {
    names.insert(s.node);
    tasks.insert(s.graph_task);
  }
  BOOST_TEST(names.count("torch::autograd::AccumulateGrad") == 1u, "the trace names AccumulateGrad");
  for (const auto& node : nodes)
    BOOST_TEST(names.count(node) == 1u, "the trace names " << node);
  BOOST_TEST(tasks.size() == tasks_expected, "one graph task per backward call");
}

/// The lines of `out` that start with `prefix`.
std::string lines_starting(const std::string& out, const std::string& prefix) {
  std::string kept, line;
  std::istringstream in(out);
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0)
      kept += line + "\n";
  return kept;
}

const std::string& plain_output() {
  static const std::string out = run_program({}).out;
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(preloaded_program_prints_the_same_bits) {
  const std::string& plain = plain_output();
  BOOST_TEST_REQUIRE(plain.find("0.weight.grad ") != std::string::npos, plain.substr(0, 200));
  const test::RunResult preloaded = run_program({"LD_PRELOAD=" + preload});
  BOOST_TEST(preloaded.out == plain);
}

BOOST_AUTO_TEST_CASE(preloaded_program_writes_a_json_trace_of_libtorch_nodes) {
  const std::string path = temp_path("trace.json");
  std::remove(path.c_str());
  const test::RunResult r = run_program({"LD_PRELOAD=" + preload, "ACTORGRAD_TRACE=" + path});
  BOOST_TEST(r.out == plain_output());
  check_trace(path, {"AddmmBackward0", "ReluBackward0", "NllLossBackward0", "MulBackward0"},
              backward_calls(r.out));
}

BOOST_AUTO_TEST_CASE(preloaded_program_writes_an_html_report) {
  const std::string path = temp_path("trace.html");
  std::remove(path.c_str());
  const test::RunResult r = run_program({"LD_PRELOAD=" + preload, "ACTORGRAD_TRACE=" + path});
  BOOST_TEST(r.out == plain_output());
  const std::string html = read_file(path);
  std::remove(path.c_str());
  BOOST_TEST(html.rfind("<!DOCTYPE html>", 0) == 0u, html.substr(0, 80));
  BOOST_TEST(html.find("AddmmBackward0") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(example_trains_and_traces_its_last_backward) {
  const std::string path = temp_path("example.json");
  std::remove(path.c_str());
  const test::RunResult r = run_with({}, {example, "--steps", "5", "--trace", path});
  BOOST_TEST(r.out.find("trace of the last backward: " + path) != std::string::npos, r.out);
  check_trace(path, {"AddmmBackward0", "NativeLayerNormBackward0"}, 1);

  const std::string losses = lines_starting(r.out, "step ");
  BOOST_TEST(std::count(losses.begin(), losses.end(), '\n') == 5);
  BOOST_TEST(lines_starting(run_with({}, {example_plain, "--steps", "5"}).out, "step ") == losses);
  BOOST_TEST(lines_starting(run_with({"LD_PRELOAD=" + preload}, {example_plain, "--steps", "5"}).out, "step ") ==
             losses);
}

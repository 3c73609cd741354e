/// @file test_preload.cpp
/// The preload path (issue #18): an unmodified libtorch program
/// (helpers/plain_libtorch_program.cpp, no actorgrad in it) run in child
/// processes plainly and with LD_PRELOAD=libactorgrad_torch_preload.so prints
/// the same losses, parameters, gradients and Hessian-vector product, in
/// hexadecimal floating point (so: bitwise equal). With ACTORGRAD_TRACE set,
/// the trace proves the backward ran on actorgrad: the JSON file passes the
/// Chrome trace checks (paired flow arrows, node slices) and names
/// libtorch's nodes (AddmmBackward0, ...) from one graph task per backward
/// call; the HTML report names them too.

#define BOOST_TEST_MODULE torch_preload
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/chrome_trace_check.h"
#include "tools/trace/chrome_json.h"

using namespace actorgrad;
using namespace std::chrono_literals;

namespace {

/// Set by tests/CMakeLists.txt.
const std::string program = ACTORGRAD_TORCH_PLAIN_PROGRAM;
const std::string preload = ACTORGRAD_TORCH_PRELOAD_LIBRARY;

/// Runs the program with `env` (NAME=value each) through env(1).
test::RunResult run_program(const std::vector<std::string>& env) {
  std::vector<std::string> argv{"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(program);
  test::RunResult r = test::run(argv, 120s);
  BOOST_TEST_REQUIRE(r.status == 0, "exit " << r.status << " with " << argv.size() - 2
                                            << " variables set; stderr: " << r.err);
  return r;
}

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
  BOOST_TEST_REQUIRE(std::filesystem::exists(path), "ACTORGRAD_TRACE=" << path << " was written");
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
  for (const char* node : {"AddmmBackward0", "ReluBackward0", "NllLossBackward0", "MulBackward0",
                           "torch::autograd::AccumulateGrad"})
    BOOST_TEST(names.count(node) == 1u, "the trace names " << node);
  BOOST_TEST(tasks.size() == backward_calls(r.out), "one graph task per backward call");
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

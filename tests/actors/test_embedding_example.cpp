#define BOOST_TEST_MODULE actors_embedding_example
#include <boost/test/unit_test.hpp>

// Runs tools/examples/embed_in_actor_system.cpp (built as
// <build>/tools/example_embed_in_actor_system; found relative to this test
// binary, <build>/tests/<this>) and checks that it exits 0 and prints a
// decreasing loss, the error answer to its bad request and its plain call.

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

fs::path example_binary() {
  const auto& suite = boost::unit_test::framework::master_test_suite();
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec); // Linux; else argv[0]
  if (ec)
    self = fs::weakly_canonical(fs::absolute(suite.argv[0]));
  // <build>/tests/actors_test_embedding_example -> <build>
  fs::path build = self.parent_path().parent_path();
  return build / "tools" / "example_embed_in_actor_system";
}

} // namespace

BOOST_AUTO_TEST_CASE(example_trains_and_exits_zero) {
  fs::path bin = example_binary();
  BOOST_REQUIRE_MESSAGE(fs::exists(bin), "example binary not found at "
                                           << bin.string()
                                           << " (build target example_embed_in_actor_system)");
  // `timeout` bounds the run: a hang fails the test instead of blocking CI.
  const std::string cmd = "timeout 60 '" + bin.string() + "' 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  BOOST_REQUIRE(pipe != nullptr);
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe))
    output += buf;
  int status = pclose(pipe);
  BOOST_TEST_MESSAGE("example output:\n" << output);
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0, "exit code " << WEXITSTATUS(status) << ", output:\n"
                                                    << output);

  // Every step printed its loss, and the losses went down.
  std::regex step_re(R"(step (\d+) loss ([0-9.eE+-]+))");
  std::vector<double> losses;
  for (std::sregex_iterator it(output.begin(), output.end(), step_re), end; it != end; ++it)
    losses.push_back(std::stod((*it)[2].str()));
  BOOST_TEST(losses.size() == 8u, output);
  if (losses.size() >= 2) {
    BOOST_TEST(losses.back() < losses.front());
    for (std::size_t i = 1; i < losses.size(); ++i)
      BOOST_TEST(losses[i] < losses[i - 1], "step " << i);
  }
  BOOST_TEST(output.find("loss decreased") != std::string::npos, output);
  // The bad request was answered with the engine's message, and the plain
  // call on the engine ran.
  BOOST_TEST(output.find("bad request answered with an error: ") != std::string::npos, output);
  BOOST_TEST(output.find("does not require grad") != std::string::npos, output);
  BOOST_TEST(output.find("plain call engine.grad: dloss/dw = (") != std::string::npos, output);
}

#define BOOST_TEST_MODULE cli_binary
#include <boost/test/unit_test.hpp>

// The built `actorgrad` binary, run as a child process: every bad command
// line exits 2 with one line on stderr naming the problem, before any work
// (nothing on stdout, nothing written); --version prints the project
// version; `trace --summary -` writes the summary to stdout and no file;
// `-` reads standard input and writes standard output; `train` prints
// plain progress lines when not on a terminal, a redrawn status line on
// one, and a final line with the accuracy and where the trace went.

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgrad/device/cuda/cuda_backend.h"
#include "actorgrad/version.h"
#include "tests/support/child_process.h"

using namespace actorgrad::testing;
namespace fs = std::filesystem;
using std::chrono::seconds;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A fresh empty directory, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("actorgrad_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path))
      out.push_back(e.path().filename().string());
    return out;
  }
};

RunResult run_actorgrad(std::vector<std::string> args, const std::string& cwd = {},
                        const std::string& stdin_file = {}) {
  args.insert(args.begin(), actorgrad_binary());
  return run(std::move(args), std::chrono::seconds(120), {cwd, stdin_file});
}

/// Small, fast training runs.
const std::vector<std::string> kSmallTrain = {"train",    "--steps", "12",          "--hidden", "8",
                                              "--points", "40",      "--log-every", "5"};

} // namespace

BOOST_AUTO_TEST_CASE(bad_usage_exits_2_with_one_line_before_any_work) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> words; // each must be in the line
  };
  const std::vector<Case> cases = {
    {{"train", "--stpes", "5"},
     {"unknown flag '--stpes'", "nearest: --steps", "see 'actorgrad train --help'"}},
    {{"train", "--stpes=5"}, {"unknown flag '--stpes'", "nearest: --steps"}},
    {{"trace", "--sumary", "-"},
     {"unknown flag '--sumary'", "nearest: --summary", "see 'actorgrad trace --help'"}},
    {{"worker", "--port", "0", "--verbos"}, {"unknown flag '--verbos'", "nearest: --verbose"}},
    {{"trian"}, {"unknown command 'trian'", "nearest: train", "see 'actorgrad --help'"}},
    {{"train", "--steps"}, {"--steps needs a value"}},
    {{"worker", "--port"}, {"--port needs a value"}},
    {{"train", "--steps", "abc"}, {"--steps", "expects an integer >= 1, not 'abc'"}},
    {{"train", "--steps=1.5"}, {"--steps", "not '1.5'"}},
    {{"trace", "--nodes", "0"}, {"--nodes", "not '0'"}},
    {{"worker", "--port", "70000"}, {"--port", "[0, 65535]", "not '70000'"}},
    {{"train", "--devices", "gpu"}, {"--devices", "cpu, sim:N or cuda:N", "not 'gpu'"}},
    {{"train", "--cpu-workers", "0"}, {"--cpu-workers", "expects an integer in [1, 256], not '0'"}},
    {{"trace", "--cpu-workers=300"}, {"--cpu-workers", "not '300'"}},
    {{"train", "--executor", "reference", "--cpu-workers", "2"},
     {"--cpu-workers", "--executor actor"}},
    {{"train", "--devices", "cuda:65"}, {"--devices", "not 'cuda:65'"}},
    {{"trace", "--devices=sim:0"}, {"--devices", "not 'sim:0'"}},
    {{"train", "--trace", "/nonexistent-actorgrad/t.json"},
     {"--trace", "'/nonexistent-actorgrad' does not exist"}},
    {{"train", "--trace", "/etc/hostname/t.json"}, {"--trace", "is not a directory"}},
    {{"trace", "--out", "/"}, {"--out", "'/' is a directory"}},
    {{"trace", "--html", "/nonexistent-actorgrad/r.html"}, {"--html", "does not exist"}},
    {{"trace", "--in", "/nonexistent-actorgrad.json"}, {"--in", "no such file"}},
    {{"trace", "--out", "-", "--summary", "-"}, {"--out and --summary", "standard output"}},
    {{"train", "--html", "r.html"}, {"--html requires --trace"}},
    {{"train", "--executor", "reference", "--trace", "t.json"}, {"--trace", "--executor actor"}},
    {{"train", "stray"}, {"unexpected argument 'stray'"}},
    {{"worker"}, {"--port is required"}},
    {{"trace", "--diff", "/etc/passwd"}, {"--diff", "two recordings"}},
    {{"trace", "--diff", "/etc/passwd", "/etc/passwd", "--in", "/etc/passwd"}, {"--in", "--diff"}},
    {{"worker", "--port", "0", "--quiet", "--verbose"}, {"--quiet excludes --verbose"}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    std::string cmdline;
    for (const auto& a : c.args)
      cmdline += " " + a;
    const RunResult r = run_actorgrad(c.args, dir.path.string());
    BOOST_TEST_MESSAGE("actorgrad" << cmdline << " -> " << r.status << ": " << r.err);
    BOOST_TEST(r.status == 2, cmdline << ": exit " << r.status);
    BOOST_TEST(r.out.empty(), cmdline << ": stdout '" << r.out << "'");
    BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, cmdline << ": " << r.err);
    for (const auto& w : c.words)
      BOOST_TEST(contains(r.err, w), cmdline << ": '" << w << "' not in: " << r.err);
    BOOST_TEST(dir.files().empty(), cmdline << ": wrote a file");
    BOOST_TEST(r.seconds < 5.0, cmdline << ": took " << r.seconds << " s");
  }
}

BOOST_AUTO_TEST_CASE(version_and_help) {
  RunResult r = run_actorgrad({"--version"});
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.out == std::string("actorgrad ") + ACTORGRAD_VERSION + "\n");
  BOOST_TEST(std::regex_search(r.out, std::regex(R"(^actorgrad \d+\.\d+\.\d+\n$)")));
  for (const char* cmd : {"train", "trace", "worker"}) {
    r = run_actorgrad({cmd, "--help"});
    BOOST_TEST(r.status == 0, cmd);
    BOOST_TEST(contains(r.out, std::string("Usage: actorgrad ") + cmd), r.out);
    BOOST_TEST(contains(r.out, "Exit status"), r.out);
  }
  r = run_actorgrad({"--help"});
  BOOST_TEST(r.status == 0);
  for (const char* cmd : {"train", "trace", "worker"})
    BOOST_TEST(contains(r.out, cmd));
  r = run_actorgrad({}); // no command: the help, as a usage error
  BOOST_TEST(r.status == 2);
  BOOST_TEST(contains(r.err, "train"));
}

BOOST_AUTO_TEST_CASE(trace_summary_to_stdout_writes_no_file) {
  // Issue #24: `trace --summary -` wrote ./trace.json besides.
  TempDir dir;
  const RunResult r = run_actorgrad(
    {"trace", "--model", "chain", "--nodes", "40", "--devices", "sim:2", "--summary", "-"},
    dir.path.string());
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(contains(r.out, "critical path"), r.out);
  BOOST_TEST(dir.files().empty(), "files written: " << dir.files().size());
}

BOOST_AUTO_TEST_CASE(trace_of_an_ensemble_on_cpu_workers_shows_its_parallelism) {
  // `actorgrad trace --cpu-workers N` (issue #60): the summary gives the
  // pass's parallelism, each track's busy % of it and its longest chain;
  // every node of the 16 MLPs is on a caller or CPU worker track.
  TempDir dir;
  const RunResult r =
    run_actorgrad({"trace", "--model", "ensemble", "--devices", "cpu", "--cpu-workers", "2",
                   "--hidden", "8", "--points", "20", "--summary", "-"},
                  dir.path.string());
  BOOST_TEST(r.status == 0, r.err);
  for (const char* part : {"parallelism of GraphTask", "longest chain of dependent nodes",
                           "with any number of workers", "caller"})
    BOOST_TEST(contains(r.out, part), part << " not in: " << r.out);
  BOOST_TEST(!contains(r.out, "sim:"), "no device worker: " << r.out);
}

BOOST_AUTO_TEST_CASE(trace_of_the_wide_graph_runs_its_branches_on_both_lanes) {
  // `trace --model wide`: bench_cpu_workers' wide_dag/64x20 (64 chains of
  // 20 matrix products, their sums added: 1408 nodes), on 2 CPU lanes.
  TempDir dir;
  const RunResult r =
    run_actorgrad({"trace", "--model", "wide", "--cpu-workers", "2", "--summary", "-", "--all"},
                  dir.path.string());
  BOOST_TEST(r.status == 0, r.err);
  for (const char* part : {"1408 node executions", "MmBackward", "1280", "caller", "cpu worker",
                           "parallelism of GraphTask"})
    BOOST_TEST(contains(r.out, part), part << " not in: " << r.out);
}

BOOST_AUTO_TEST_CASE(dash_is_stdin_and_stdout) {
  TempDir dir;
  // --out - : the Chrome trace on stdout, nothing else there.
  const RunResult json = run_actorgrad(
    {"trace", "--model", "chain", "--nodes", "40", "--devices", "sim:2", "--out", "-"},
    dir.path.string());
  BOOST_TEST_REQUIRE(json.status == 0, json.err);
  BOOST_TEST(json.out.rfind("{", 0) == 0u, json.out.substr(0, 80));
  BOOST_TEST(contains(json.out, "traceEvents"));
  BOOST_TEST(dir.files().empty());
  // --in - : read it back from stdin.
  const std::string file = (dir.path / "saved.json").string();
  std::ofstream(file) << json.out;
  const RunResult back = run_actorgrad({"trace", "--in", "-", "--summary", "-"}, {}, file);
  BOOST_TEST(back.status == 0, back.err);
  BOOST_TEST(contains(back.out, "critical path"), back.out);
  // train --trace - : the trace on stdout, the log on stderr.
  std::vector<std::string> args = kSmallTrain;
  args.insert(args.end(), {"--devices", "sim:2", "--trace", "-"});
  const RunResult train = run_actorgrad(args, dir.path.string());
  BOOST_TEST(train.status == 0, train.err);
  BOOST_TEST(train.out.rfind("{", 0) == 0u, train.out.substr(0, 80));
  BOOST_TEST(contains(train.err, "final accuracy"), train.err);
  BOOST_TEST(contains(train.err, "trace of step 12 written to standard output"), train.err);
}

// --devices cuda:1 trains on the GPU where there is one; elsewhere (CI) the
// run stops before training: exit 1, one line naming cuda:0 and why.
BOOST_AUTO_TEST_CASE(train_on_cuda_trains_there_or_names_the_missing_gpu) {
  TempDir dir;
  std::vector<std::string> args = kSmallTrain;
  args.insert(args.end(), {"--devices", "cuda:1"});
  const RunResult r = run_actorgrad(args, dir.path.string());
  if (actorgrad::cuda::available()) {
    BOOST_TEST(r.status == 0, r.err);
    BOOST_TEST(contains(r.out, "final accuracy"), r.out);
  } else {
    BOOST_TEST(r.status == 1, r.err);
    BOOST_TEST(r.out.empty(), r.out);
    BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
    BOOST_TEST(contains(r.err, "actorgrad train: error: EngineConfig.devices lists cuda:0, which "
                               "cannot be served: "),
               r.err);
  }
  BOOST_TEST(dir.files().empty());
}

BOOST_AUTO_TEST_CASE(train_prints_plain_lines_and_a_final_line_off_a_terminal) {
  TempDir dir;
  std::vector<std::string> args = kSmallTrain;
  args.insert(args.end(), {"--trace", "t.json", "--html", "t.html", "--trace-step", "10"});
  const RunResult r = run_actorgrad(args, dir.path.string());
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(!contains(r.out, "\r"));
  BOOST_TEST(!contains(r.out, "\x1b["));
  BOOST_TEST(
    std::regex_search(r.out, std::regex(R"(step +10/12 +loss [0-9.]+ .* steps/s +ETA \S+)")),
    r.out);
  BOOST_TEST(std::regex_search(
               r.out, std::regex(R"(\nfinal accuracy [0-9.]+% .*; trace of step 10 written to )"
                                 R"(t\.json and t\.html\n$)")),
             r.out);
  BOOST_TEST(fs::exists(dir.path / "t.json"));
  BOOST_TEST(fs::exists(dir.path / "t.html"));
}

BOOST_AUTO_TEST_CASE(a_loss_fitted_to_zero_prints_as_zero_not_minus_zero) {
  // Ten points a spiral fit exactly long before 20,000 steps: nll_loss is
  // then -0.0 (a sum of 0 * -1/N), which printf writes "-0.0000".
  const RunResult r = run_actorgrad({"train", "--steps", "20000", "--hidden", "16", "--points",
                                     "10", "--lr", "0.1", "--log-every", "10000"});
  BOOST_TEST(r.status == 0, r.err);
  BOOST_TEST(contains(r.out, "(loss 0.0000,"), r.out);
  BOOST_TEST(!contains(r.out, "loss -"), r.out);
}

BOOST_AUTO_TEST_CASE(train_redraws_a_status_line_on_a_terminal) {
  std::vector<std::string> args = {actorgrad_binary()};
  args.insert(args.end(), kSmallTrain.begin(), kSmallTrain.end());
  args.insert(args.end(), {"--steps", "400"});
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  BOOST_TEST_REQUIRE(pid >= 0, std::strerror(errno));
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0)
      continue;
    char buf[4096];
    const auto n = ::read(master, buf, sizeof buf);
    if (n <= 0)
      break; // EIO once the child is gone
    out.append(buf, static_cast<std::size_t>(n));
  }
  int status = 0;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  ::close(master);
  BOOST_TEST(std::regex_search(out, std::regex(R"(\r\x1b\[Kstep \d+/400  loss [0-9.]+  [0-9.]+ )"
                                               R"(steps/s  ETA \S+)")),
             out.substr(0, 400));
  BOOST_TEST(contains(out, "final accuracy"), out.substr(out.size() > 400 ? out.size() - 400 : 0));
}

BOOST_AUTO_TEST_CASE(trace_diff_compares_two_recordings) {
  TempDir dir;
  const std::string a = (dir.path / "a.json").string(), b = (dir.path / "b.json").string();
  for (const auto& [file, model] : {std::pair{a, "chain"}, std::pair{b, "mlp"}}) {
    const RunResult r = run_actorgrad({"trace", "--model", model, "--nodes", "30", "--hidden", "8",
                                       "--points", "20", "--out", file, "--summary", "/dev/null"});
    BOOST_TEST_REQUIRE(r.status == 0, r.err);
  }
  // Against itself: no change anywhere.
  RunResult same = run_actorgrad({"trace", "--diff", a, a});
  BOOST_TEST(same.status == 0, same.err);
  BOOST_TEST(contains(same.out, "change: 0 ns (0.0%)"), same.out);
  BOOST_TEST(!contains(same.out, "added"), same.out);
  BOOST_TEST(!contains(same.out, "removed"), same.out);
  // The chain's MulBackward is gone in the MLP, whose MmBackward is new;
  // --html writes the MLP's report with the comparison in it.
  const std::string html = (dir.path / "d.html").string();
  RunResult other = run_actorgrad({"trace", "--diff", a, b, "--summary", "-", "--html", html});
  BOOST_TEST(other.status == 0, other.err);
  BOOST_TEST(std::regex_search(other.out, std::regex(R"(MulBackward +\d+ +0 +removed)")),
             other.out);
  BOOST_TEST(std::regex_search(other.out, std::regex(R"(MmBackward +0 +\d+ +added)")), other.out);
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(contains(page, "id=\"diff-ops\""));
  BOOST_TEST(contains(page, "class=\"removed\""));
  BOOST_TEST(contains(page, "class=\"added\""));
}

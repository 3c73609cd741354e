#define BOOST_TEST_MODULE unit_trace_request
#include <boost/test/unit_test.hpp>

// ACTORGRAD_TRACE and `actorgrad worker --trace` (tools/trace/
// trace_request.h): the file, the `:N` window, `%p`, `%r` and `%%` (Note
// [Trace file names of many processes]), each bad value refused by name,
// and a recording with no event written nowhere.

#include <filesystem>
#include <stdexcept>

#include <unistd.h>

#include "actorgrad/tools/trace/trace_request.h"

using namespace actorgrad::trace;

namespace {

/// The message parse_trace_request throws for `spec` ("" when none).
std::string refusal(const std::string& spec) {
  try {
    parse_trace_request(spec, "ACTORGRAD_TRACE");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

} // namespace

BOOST_AUTO_TEST_CASE(the_path_and_the_window_are_read) {
  const TraceRequest r = parse_trace_request("/tmp/t_%r.json:5", "ACTORGRAD_TRACE");
  BOOST_TEST(r.path == "/tmp/t_%r.json");
  BOOST_TEST(r.keep_passes == 5u);
  BOOST_TEST(parse_trace_request("out/t.html", "x").keep_passes == 0u);
}

BOOST_AUTO_TEST_CASE(bad_values_are_refused_naming_the_problem) {
  BOOST_TEST(refusal("t.txt") == "ACTORGRAD_TRACE='t.txt': name a .json (Chrome trace) or .html "
                                 "(report) file");
  for (const char* bad : {"t.json:0", "t.json:", "t.json:x", "t.json:-1"})
    BOOST_TEST(refusal(bad).find("the number after ':' must be a positive count of passes") !=
                 std::string::npos,
               bad);
  BOOST_TEST(
    refusal("t_%q.json") ==
    "ACTORGRAD_TRACE='t_%q.json': '%q' is not one of %p (process id), %r (rank), %% (a '%')");
  BOOST_TEST(refusal("t_%.json").find("'%.' is not one of") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(percent_sequences_name_the_process) {
  TraceProcess p{4242, "", ""};
  BOOST_TEST(expand_trace_path("t_%p_%r_%%.json", p) == "t_4242_pid4242_%.json");
  BOOST_TEST(p.label() == "pid 4242");
  p.worker = "127.0.0.1:5000";
  BOOST_TEST(expand_trace_path("w_%r.json", p) == "w_127.0.0.1-5000.json", "':' is not kept");
  BOOST_TEST(p.label() == "127.0.0.1:5000");
  p.rank = "7";
  BOOST_TEST(expand_trace_path("t_%r.json", p) == "t_7.json", "RANK first");
  BOOST_TEST(p.label() == "rank 7");
  p.rank = "a/b";
  BOOST_TEST(expand_trace_path("t_%r.json", p) == "t_a-b.json", "no directory from a rank");
}

BOOST_AUTO_TEST_CASE(a_recording_without_events_writes_nothing) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("actorgrad_request_" + std::to_string(::getpid()) + ".json"))
                             .string();
  std::filesystem::remove(path);
  Trace empty;
  empty.tracks.push_back({"caller 1", {}}); // a track opened, nothing in it
  BOOST_TEST(write_recording(empty, {path, 0}, TraceProcess{1, "", ""}).empty());
  BOOST_TEST(!std::filesystem::exists(path));
}

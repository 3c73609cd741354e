#define BOOST_TEST_MODULE actors_trace_report_html
#include <boost/test/unit_test.hpp>

// The HTML report renders in headless Chromium: the rendered DOM has one
// SVG lane per actor with a non-empty slice per node execution, and the
// screenshot is a real, non-blank PNG; a view opened zoomed and searching
// (its URL fragment) is zoomed, and outlines exactly the nodes searched for.
// Exits 77 (skipped) when Chromium is not installed (tools/setup.sh
// --with-test-deps installs it).

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include "actorgrad/tools/trace/detail/html_report.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/timeline.h"
#include "tests/actors/trace_test_util.h"

using namespace actorgrad;
using namespace actorgrad::testing;
namespace fs = std::filesystem;

namespace {

bool have_chromium() { return std::system("command -v chromium >/dev/null 2>&1") == 0; }

/// Runs headless Chromium on `html` with `what` (--dump-dom or --screenshot=...),
/// its stdout into `stdout_path`. Returns the exit status.
int chromium(const fs::path& dir, const fs::path& html, const std::string& what,
             const fs::path& stdout_path) {
  const std::string cmd =
    "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
    "--disable-component-update --disable-sync --no-first-run --user-data-dir=" +
    (dir / "profile").string() + " --window-size=1400,900 " + what + " 'file://" + html.string() +
    "' >" + stdout_path.string() + " 2>" + (dir / "chromium.log").string();
  return std::system(cmd.c_str());
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

std::uint32_t big_endian(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

} // namespace

/// Checks that `png` is a real 1400x900 screenshot; returns its bytes.
std::string check_screenshot(const fs::path& png) {
  const std::string image = read(png);
  BOOST_TEST_REQUIRE(image.size() > 24u);
  BOOST_TEST(image.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0, "a PNG file");
  BOOST_TEST(image.compare(12, 4, "IHDR") == 0);
  BOOST_TEST(big_endian(image, 16) == 1400u);
  BOOST_TEST(big_endian(image, 20) == 900u);
  // A blank 1400x900 page compresses to a few KB; the timeline and tables do not.
  BOOST_TEST(image.size() > 30'000u, "screenshot of " << image.size() << " bytes is not blank");
  return image;
}

void skip_without_chromium() {
  if (!have_chromium()) {
    std::cerr << "chromium is not installed: skipped\n";
    std::exit(77);
  }
}

/// Records the backward of cross_device_loss, then with `async` a second
/// one through backward_async.
trace::Timeline record_cross_device(bool async) {
  CountingEngine ce;
  Tensor x = leaf3();
  ce.engine.start_recording();
  backward({cross_device_loss(x)}, {}, ce.engine);
  if (async)
    ce.engine.backward_async({cross_device_loss(x)}).get();
  return trace::build_timeline(ce.engine.stop_recording());
}

/// Writes `tl`'s report into a new directory `dir`; returns its path.
fs::path write_report(const trace::Timeline& tl, const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path html = dir / "report.html";
  std::ofstream out(html);
  trace::detail::write_html_report(tl, trace::detail::summarize(tl), out);
  return html;
}

BOOST_AUTO_TEST_CASE(report_renders_in_headless_chromium) {
  skip_without_chromium();
  const trace::Timeline tl = record_cross_device(true);
  BOOST_TEST(tl.actors.size() == 4u, "caller, async coordinator, sim:0 and sim:1 workers");

  const fs::path dir = fs::temp_directory_path() / ("actorgrad_html_" + std::to_string(::getpid()));
  const fs::path html = write_report(tl, dir);
  const std::string source = read(html);
  // One inline script (sorting, zoom, search): nothing loaded.
  for (const char* forbidden : {"https://", "@font-face", "@import", "src="})
    BOOST_TEST(occurrences(source, forbidden) == 0u, "no external resource: " << forbidden);
  BOOST_TEST(occurrences(source, "http://") == occurrences(source, "http://www.w3.org/2000/svg"),
             "no URL but the SVG namespace");

  BOOST_TEST_REQUIRE(chromium(dir, html, "--dump-dom", dir / "dom.html") == 0,
                     read(dir / "chromium.log"));
  const std::string dom = read(dir / "dom.html");
  BOOST_TEST(occurrences(dom, "<g class=\"lane\"") == tl.actors.size(), "one lane per actor");
  for (const std::string& actor : tl.actors)
    BOOST_TEST(dom.find("data-actor=\"" + actor + "\"") != std::string::npos);
  const std::regex node_rect(R"re(<rect class="node[^"]*" x="[^"]*" y="[^"]*" width="([^"]*)")re");
  std::size_t slices = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), node_rect);
       it != std::sregex_iterator(); ++it, ++slices)
    BOOST_TEST(std::stod((*it)[1]) > 0.0, "slice drawn with a width");
  BOOST_TEST(slices == tl.slices.size(), "a slice per node execution");
  BOOST_TEST(occurrences(dom, "<line class=\"msg") > 0u, "message arrows");
  // Stream tracks (Note [Stream tracks]): a lane per stream, a span per item.
  BOOST_TEST(tl.streams.size() >= 2u, "sim:0's and sim:1's streams ran the kernels");
  BOOST_TEST(occurrences(dom, "<g class=\"lane stream\"") == tl.streams.size());
  BOOST_TEST(occurrences(dom, "<rect class=\"device ") == tl.device_spans.size());
  BOOST_TEST(occurrences(dom, "<line class=\"launch\"") > 0u, "launch arrows");
  BOOST_TEST(occurrences(dom, "<table id=\"ops\" class=\"sortable\"") == 1u,
             "the operations table");
  BOOST_TEST(occurrences(dom, "<pre class=\"parallelism\">parallelism of GraphTask") ==
               trace::detail::summarize(tl).critical_paths.size(),
             "each call's parallelism");

  const fs::path png = dir / "out.png";
  BOOST_TEST_REQUIRE(chromium(dir, html, "--screenshot=" + png.string(), dir / "stdout.txt") == 0,
                     read(dir / "chromium.log"));
  check_screenshot(png);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(a_view_opens_zoomed_and_searching) {
  skip_without_chromium();
  const trace::Timeline tl = record_cross_device(false);
  std::size_t muls = 0;
  for (const trace::Slice& sl : tl.slices)
    muls += sl.node == "MulBackward";
  BOOST_TEST_REQUIRE(muls > 0u);

  const fs::path dir = fs::temp_directory_path() / ("actorgrad_view_" + std::to_string(::getpid()));
  const fs::path html = write_report(tl, dir);
  const fs::path view = html.string() + "#zoom=8&at=0.5&search=mulbackward";
  BOOST_TEST_REQUIRE(chromium(dir, view, "--dump-dom", dir / "dom.html") == 0,
                     read(dir / "chromium.log"));
  const std::string dom = read(dir / "dom.html");
  BOOST_TEST(dom.find("data-zoom=\"8\"") != std::string::npos, "the view is zoomed 8x");
  BOOST_TEST(occurrences(dom, "scale(8 1)") == tl.actors.size() + tl.streams.size() + 1,
             "every lane and the arrows");
  BOOST_TEST(occurrences(dom, "class=\"node match\"") +
                 occurrences(dom, "class=\"node critical match\"") ==
               muls,
             "exactly the MulBackward slices are outlined");
  BOOST_TEST(dom.find(std::to_string(muls) + " nodes</span>") != std::string::npos, "the count");
  BOOST_TEST(dom.find("class=\"searching\"") != std::string::npos);
  // The axis shows the times in view: its first tick is no longer 0.
  const std::regex first_tick(
    R"re(<g class="axis">\s*<line[^>]*>(?:</line>)?<text[^>]*>([^<]*)</text>)re");
  std::smatch tick;
  BOOST_TEST_REQUIRE(std::regex_search(dom, tick, first_tick));
  BOOST_TEST(tick[1].str() != "0 ns", "first tick " << tick[1].str());

  // Two zoom levels, looked at: the whole recording and 8x around its middle.
  const std::string whole = check_screenshot([&] {
    const fs::path png = dir / "whole.png";
    BOOST_TEST_REQUIRE(chromium(dir, html, "--screenshot=" + png.string(), dir / "out.txt") == 0);
    return png;
  }());
  const std::string zoomed = check_screenshot([&] {
    const fs::path png = dir / "zoomed.png";
    BOOST_TEST_REQUIRE(chromium(dir, view, "--screenshot=" + png.string(), dir / "out.txt") == 0);
    return png;
  }());
  BOOST_TEST((whole != zoomed), "the zoomed view differs");
  if (const char* keep = std::getenv("ACTORGRAD_KEEP_SCREENSHOTS"))
    for (const char* name : {"whole.png", "zoomed.png"})
      fs::copy_file(dir / name, fs::path(keep) / name, fs::copy_options::overwrite_existing);
  fs::remove_all(dir);
}

#include "tools/cli/flags.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

#include <unistd.h>

namespace actorgrad::cli {

namespace fs = std::filesystem;

namespace {

std::optional<std::int64_t> to_int(const std::string& s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || p != end)
    return std::nullopt;
  return v;
}

/// `a, b or c` (`conjunction` "or"), or `a, b and c`.
std::string join(const std::vector<std::string>& words, const char* conjunction) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i)
    out += (i == 0                  ? ""
            : i + 1 == words.size() ? std::string(" ") + conjunction + " "
                                    : ", ") +
           words[i];
  return out;
}

/// Levenshtein distance.
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// `actorgrad` or `actorgrad train`: the command `app` was given for.
std::string command_name(const CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* sub : app.get_subcommands())
    name += " " + sub->get_name();
  return name;
}

/// The long flags of `app` (`--steps`, ...), --help included.
std::vector<std::string> flags_of(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : app.get_options())
    for (const std::string& n : opt->get_lnames())
      out.push_back("--" + n);
  return out;
}

/// `what 'word'` and the nearest of `names`.
std::string unknown(const std::string& what, const std::string& word,
                    const std::vector<std::string>& names) {
  const std::string near = nearest(word, names);
  return "unknown " + what + " '" + word + "'" + (near.empty() ? "" : " (nearest: " + near + ")");
}

/// The first argument `app` did not take, as a message ("" when none):
/// an unknown flag, an unknown command (when `app` has `commands`), or a
/// stray word.
std::string leftover(const CLI::App& app, const std::vector<std::string>& commands) {
  const std::vector<std::string> rest = app.remaining();
  if (rest.empty())
    return {};
  const std::string& arg = rest.front();
  if (arg.size() > 1 && arg[0] == '-')
    return unknown("flag", arg.substr(0, arg.find('=')), flags_of(app));
  if (!commands.empty())
    return unknown("command", arg, commands);
  return "unexpected argument '" + arg + "' (flags start with --)";
}

/// CLI11's message for a ParseError, in the words of the other errors.
std::string message_of(const CLI::ParseError& e) {
  static const std::regex missing(R"(^(\S+): \d+ required .* missing$)");
  std::smatch m;
  const std::string what = e.what();
  if (std::regex_match(what, m, missing))
    return m[1].str() + " needs a value";
  return what;
}

/// `--steps INT >= 1   optimizer steps (default 1000)`: the value's
/// validator in the left column, default and constraints after the text.
class HelpFormatter : public CLI::Formatter {
public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0)
      return {};
    // CLI11's type name is `TYPE:VALIDATOR` (`INT:INT >= 1`); show the validator.
    const std::string type = opt->get_type_name();
    const auto colon = type.find(':');
    return " " + (colon == std::string::npos ? type : type.substr(colon + 1));
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string out = opt->get_description();
    if (opt->get_required())
      out += " (required)";
    else if (opt->get_type_size() != 0 && !opt->get_default_str().empty())
      out += " (default " + opt->get_default_str() + ")";
    for (const CLI::Option* other : opt->get_needs())
      out += " (needs " + other->get_name() + ")";
    for (const CLI::Option* other : opt->get_excludes())
      out += " (not with " + other->get_name() + ")";
    return out;
  }
};

} // namespace

CLI::Validator integer_in(std::int64_t lo, std::int64_t hi) {
  std::string range = hi == std::numeric_limits<std::int64_t>::max()
                        ? ">= " + std::to_string(lo)
                        : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
    [lo, hi, range](std::string& s) -> std::string {
      auto v = to_int(s);
      if (!v || *v < lo || *v > hi)
        return "expects an integer " + range + ", not '" + s + "'";
      return {};
    },
    "INT " + range);
}

CLI::Validator number_where(std::string what, bool (*ok)(double)) {
  return CLI::Validator(
    [what, ok](std::string& s) -> std::string {
      char* end = nullptr;
      errno = 0;
      const double v = s.empty() ? 0.0 : std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v) || !ok(v))
        return "expects a number " + what + ", not '" + s + "'";
      return {};
    },
    "NUMBER " + what);
}

CLI::Validator one_of(std::vector<std::string> choices) {
  const std::string desc = "{" + CLI::detail::join(choices, ",") + "}";
  return CLI::Validator(
    [choices](std::string& s) -> std::string {
      if (std::find(choices.begin(), choices.end(), s) == choices.end())
        return "must be " + join(choices, "or") + ", not '" + s + "'";
      return {};
    },
    desc);
}

CLI::Validator device_set() {
  return CLI::Validator(
    [](std::string& s) -> std::string {
      try {
        // Device::parse reads "sim:N" / "cuda:N" as a type and, here, a count.
        if (const Device d = Device::parse(s); d.is_cpu() || (d.index >= 1 && d.index <= 64))
          return {};
      } catch (const std::invalid_argument&) {
      }
      return "must be cpu, sim:N or cuda:N with N in [1, 64], not '" + s + "'";
    },
    "cpu|sim:N|cuda:N");
}

std::vector<Device> device_list(const std::string& devices) {
  const Device last = Device::parse(devices); // cpu: a count of 0
  std::vector<Device> out;
  for (std::int16_t i = 0; i < last.index; ++i)
    out.emplace_back(last.type, i);
  return out;
}

std::string output_problem(const std::string& path) {
  if (path.empty())
    return "needs a file name (or - for standard output)";
  if (path == "-")
    return {};
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec))
    return "'" + path + "' is a directory";
  if (fs::exists(p, ec))
    return ::access(path.c_str(), W_OK) == 0
             ? std::string()
             : "cannot write '" + path + "': " + std::strerror(errno);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec))
    return "cannot write '" + path + "': directory '" + dir.string() + "' does not exist";
  if (!fs::is_directory(dir, ec))
    return "cannot write '" + path + "': '" + dir.string() + "' is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "cannot write '" + path + "': directory '" + dir.string() + "': " + std::strerror(errno);
  return {};
}

CLI::Validator output_file() {
  return CLI::Validator([](std::string& s) { return output_problem(s); }, "FILE|-");
}

CLI::Validator input_file() {
  return CLI::Validator(
    [](std::string& s) -> std::string {
      if (s == "-")
        return {};
      std::error_code ec;
      if (!fs::is_regular_file(s, ec))
        return "cannot read '" + s +
               "': " + (fs::exists(s, ec) ? "not a regular file" : "no such file");
      if (!std::ifstream(s))
        return "cannot read '" + s + "': " + std::strerror(errno);
      return {};
    },
    "FILE|-");
}

void at_most_one_stdout(const std::vector<std::pair<std::string, std::string>>& paths) {
  std::vector<std::string> dashed;
  for (const auto& [flag, path] : paths)
    if (path == "-")
      dashed.push_back(flag);
  if (dashed.size() > 1)
    throw CLI::ValidationError(join(dashed, "and") +
                               " both write to standard output ('-'): give a file to all but one");
}

std::string nearest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& n : names) {
    std::size_t d = distance(word, n);
    // A prefix of a long name (`--log` for `--log-every`) counts as close.
    if (word.size() >= 4 && n.rfind(word, 0) == 0)
      d = 1;
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

void use_help_format(CLI::App& app) {
  auto fmt = std::make_shared<HelpFormatter>();
  fmt->column_width(34);
  app.formatter(fmt);
}

std::optional<int> parse(CLI::App& app, int argc, const char* const* argv) {
  auto usage_error = [&](const std::string& what) {
    const std::string cmd = command_name(app);
    std::fprintf(stderr, "%s: %s; see '%s --help'\n", cmd.c_str(), what.c_str(), cmd.c_str());
    return kUsageError;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e); // --help, --version
  } catch (const CLI::ParseError& e) {
    return usage_error(message_of(e));
  }
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    commands.push_back(sub->get_name());
  if (auto top = leftover(app, commands); !top.empty())
    return usage_error(top);
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stderr);
    return kUsageError;
  }
  CLI::App* sub = app.get_subcommands().front();
  if (auto rest = leftover(*sub, {}); !rest.empty())
    return usage_error(rest);
  return std::nullopt;
}

} // namespace actorgrad::cli

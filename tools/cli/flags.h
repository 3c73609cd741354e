#pragma once
/// @file flags.h
/// What every `actorgrad` subcommand's command line shares, on CLI11
/// (libcli11-dev): typed flag values with range checks, `-` for standard
/// input or output wherever a path is taken, output paths checked before any
/// work starts, and usage errors answered with one line that names the flag
/// (exit status kUsageError).
///
/// `--flag value` and `--flag=value` are the same to CLI11; a flag given
/// twice takes the last value.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "actorgrad/device/device.h"

namespace actorgrad::cli {

/// Exit status for a bad command line (unknown flag, missing or bad value,
/// unwritable output).
inline constexpr int kUsageError = 2;

/// An integer in [lo, hi]: `expects an integer >= 1, not 'abc'`.
CLI::Validator integer_in(std::int64_t lo,
                          std::int64_t hi = std::numeric_limits<std::int64_t>::max());

/// A finite number satisfying `ok`, described as `what` in the error
/// (`expects a number > 0, not 'x'`).
CLI::Validator number_where(std::string what, bool (*ok)(double));

/// One of `choices`: `must be adam or sgd, not 'x'`.
CLI::Validator one_of(std::vector<std::string> choices);

/// A device set: `cpu`, `sim:N` (N simulated devices) or `cuda:N` (the
/// first N GPUs), 1 <= N <= 64. Whether the GPUs exist is the engine's to
/// say when it starts.
CLI::Validator device_set();

/// The devices of a device_set() value: sim:0 .. sim:N-1 or cuda:0 ..
/// cuda:N-1, none for cpu.
std::vector<Device> device_list(const std::string& devices);

/// Why `path` cannot be written as an output ("" when it can): `-` is
/// standard output; otherwise its directory must exist and be writable,
/// and the path must not be a directory or a read-only file.
std::string output_problem(const std::string& path);

/// A path that output_problem accepts.
CLI::Validator output_file();

/// `-` (standard input) or a readable regular file.
CLI::Validator input_file();

/// Fails (CLI::ValidationError) when more than one of `paths` (flag name,
/// value) is `-`: standard output can take one of them only.
void at_most_one_stdout(const std::vector<std::pair<std::string, std::string>>& paths);

/// The name in `names` nearest to `word` by edit distance, or "" when none
/// is within a third of its length.
std::string nearest(const std::string& word, const std::vector<std::string>& names);

/// Gives `app` (and the subcommands added afterwards) the help layout of
/// `actorgrad`: `--steps INT >= 1   optimizer steps (default 1000)`.
void use_help_format(CLI::App& app);

/// Parses `argv` into `app` (a program with subcommands). Returns nullopt
/// when a subcommand should run (app.get_subcommands() names it); otherwise
/// the exit status: 0 after --help or --version (printed to stdout), or
/// kUsageError after one line on stderr naming the problem, the nearest
/// known flag or command for an unknown one, and `see '... --help'`.
std::optional<int> parse(CLI::App& app, int argc, const char* const* argv);

} // namespace actorgrad::cli

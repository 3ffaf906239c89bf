// gattn's command line. Exit codes (docs/cli.md): 0 success, 2 usage or config error, 3 data or
// checkpoint error (an I/O error of the file system too), 4 numerical failure. Every exception is
// caught here, whatever its type: never a crash.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "core/tensor/error.h"
#include "framework/base/errors.h"
#include "framework/dist/errors.h"
#include "framework/dist/launch_env.h"
#include "framework/io/errors.h"
#include "framework/runtime/build_info.h"
#include "framework/runtime/library_environment.h"
#include "recipes/common/recipe.h"
#include "recipes/common/stop_signal.h"

// Every recipes/<family>/<name>_command.cpp defines add_<name> (recipes/common/recipe.h).
namespace gattn::recipes {
#define GATTN_REGISTERED_COMMAND(name) Action add_##name(CLI::App& app);
#include "gattn_generated/commands.inc"
#undef GATTN_REGISTERED_COMMAND
}  // namespace gattn::recipes

namespace {

// One line on stderr, then the exit code docs/cli.md gives the kind of failure. A rank of a
// multi-process run says which rank it is: mpirun interleaves every rank's stderr.
int fail(const std::string& message, int code) {
  const gattn::dist::LaunchInfo launch = gattn::dist::detect_launch();
  std::cerr << "gattn: ";
  if (launch.size > 1) std::cerr << "rank " << launch.rank << " of " << launch.size << ": ";
  std::cerr << message << "\n";
  return code;
}

// "cannot access PATH: Too many levels of symbolic links", naming both paths of a two-path
// operation (a rename).
std::string filesystem_message(const std::filesystem::filesystem_error& e) {
  std::string paths = e.path1().string();
  if (!e.path2().empty()) paths += " or " + e.path2().string();
  if (paths.empty()) return std::string("file system error: ") + e.code().message();
  return "cannot access " + paths + ": " + e.code().message();
}

int print_version() {
  for (const auto& [key, value] : gattn::build_info()) std::cout << key << ": " << value << "\n";
  return 0;
}

// CLI11 reads an integer past the 64-bit range as the nearest one it can hold (strtoll's
// saturation): `--max-new-tokens 1e30`-like typos would run with 9223372036854775807. Every integer
// option of every command gets a check that refuses them, naming the option.
void refuse_saturated_integers(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type != "INT" && type != "UINT") continue;
    option->check(CLI::Validator(
        [](std::string& text) -> std::string {
          const char* first = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
          const char* last = text.data() + text.size();
          std::int64_t value = 0;
          if (std::from_chars(first, last, value).ec == std::errc::result_out_of_range)
            return text + " is beyond the 64-bit integers";
          return std::string();
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_saturated_integers(*sub);
}

// Parses the command line and runs the chosen sub-command; main() turns what it throws into an
// exit code.
int run_cli(int argc, char** argv) {
  CLI::App app{"gattn: train and study gated-attention Transformers"};
  app.require_subcommand(0, 1);
  // A usage error is one line on stderr, like every other error (CLI11's default adds a second).
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("gattn: ") + e.what() + " (--help lists the options)\n";
  });
  bool show_version = false;
  app.add_flag("--version", show_version, "print the build's version and libraries as key: value lines");
  std::vector<std::pair<CLI::App*, gattn::recipes::Action>> recipes;
  auto add = [&](gattn::recipes::Action (*adder)(CLI::App&)) {
    std::size_t before = app.get_subcommands({}).size();
    gattn::recipes::Action action = adder(app);
    recipes.emplace_back(app.get_subcommands({}).at(before), std::move(action));
  };
#define GATTN_REGISTERED_COMMAND(name) add(gattn::recipes::add_##name);
#include "gattn_generated/commands.inc"
#undef GATTN_REGISTERED_COMMAND
  refuse_saturated_integers(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help or the parse error
    return rc == 0 ? 0 : 2;
  }
  if (show_version) return print_version();
  for (auto& [cmd, action] : recipes)
    if (cmd->parsed()) return action();
  std::cout << app.help();
  return 0;
}

}  // namespace

// Before anything else: a SIGTERM while the libraries start, or the config, data or model load,
// must end with a message and an exit status, not kill the process bare. main() comes too late
// for that (the libraries' initialisers, OpenBLAS's thread pool among them, take milliseconds
// before it), so the handlers go in from the executable's .preinit_array, which the dynamic loader
// runs once every library is mapped and before any library's initialiser. First, the same place
// gives libgomp gattn's default wait policy and OpenBLAS its core on CPUs it does not know, by
// executing gattn again with them in the environment (framework/runtime/library_environment.h);
// the handlers go into the image that runs.
extern "C" void gattn_install_signal_handlers(int, char** argv, char** envp) {
  gattn::apply_library_environment_defaults(argv, envp);
  gattn::recipes::install_exit_on_signal();
}
__attribute__((section(".preinit_array"),
               used)) static void (*const install_signal_handlers_first)(int, char**,
                                                                         char**) = &gattn_install_signal_handlers;

int main(int argc, char** argv) {
  try {
    return run_cli(argc, argv);
  } catch (const gattn::CheckpointError& e) {
    return fail(e.what(), 3);
  } catch (const gattn::DataError& e) {
    return fail(e.what(), 3);
  } catch (const gattn::DistError& e) {
    return fail(e.what(), 3);  // a peer died or stalled: the run's environment failed, as with data
  } catch (const gattn::NumericalError& e) {
    return fail(e.what(), 4);
  } catch (const gattn::Error& e) {
    return fail(e.what(), 2);
  } catch (const std::filesystem::filesystem_error& e) {
    return fail(filesystem_message(e), 3);  // an I/O error, like unreadable data or checkpoints
  } catch (const std::bad_alloc&) {
    return fail(
        "out of memory: a setting or an input is larger than this machine's memory (the sizes a run "
        "needs are checked up front; this one was not)",
        2);
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what(), 2);
  } catch (...) {
    return fail("internal error: an exception of unknown type", 2);
  }
}

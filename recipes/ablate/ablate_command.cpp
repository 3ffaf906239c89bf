// `gattn ablate --config ABLATION.yaml [run.dir=DIR] [key.path=value ...]`: trains every cell of an
// ablation grid, one after another, each as a `gattn train` child process into DIR/cells/<name>/
// (its output in DIR/logs/<name>.log); finished cells are skipped and interrupted ones resumed, so
// re-running the command continues where it stopped. After a cell trains, its final checkpoint's
// KV-cached generation speed is measured here (DIR/cells/<name>/generation.json). summary.csv and
// summary.md cover the finished cells after each one; report.html comes at the end.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "framework/io/checkpoint.h"
#include "framework/io/errors.h"
#include "framework/io/run_files.h"
#include "recipes/ablate/ablation.h"
#include "recipes/ablate/ablation_summary.h"
#include "recipes/ablate/generation_speed.h"
#include "recipes/ablate/report_writer.h"
#include "recipes/common/recipe.h"
#include "recipes/common/run_config.h"

extern char** environ;

namespace gattn::recipes {

namespace {

namespace fs = std::filesystem;

struct AblateArgs {
  std::string config;
  std::vector<std::string> overrides;
};

struct PlannedCell {
  Cell cell;
  std::string dir;
  std::vector<std::string> train_overrides;  // everything after --config BASE
  std::int64_t max_steps = 0;
};

// The running child: SIGINT/SIGTERM reach ablate (the terminal's process group) and are passed on
// once to the child, which runs in its own group; the child then checkpoints and stops.
volatile std::sig_atomic_t g_child = 0;
volatile std::sig_atomic_t g_signal = 0;

extern "C" void forward_signal(int signo) {
  g_signal = signo;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), signo);
}

class ForwardSignals {
 public:
  ForwardSignals() {
    struct sigaction sa {};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~ForwardSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

// Runs `gattn train` (this same binary) with `args`, stdout and stderr appended to `log`; returns its
// exit status (128 + N when a signal ended it).
int run_child(const std::vector<std::string>& args, const std::string& log) {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &files, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw CheckpointError("ablate: cannot start " + exe + ": " + std::strerror(rc));
  g_child = pid;
  if (g_signal != 0) kill(pid, g_signal);  // a signal that came while starting
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 100 ? "%.1f s" : "%.0f s", s);
  return buf;
}

// Everything ablate writes outside the cells (whose run directories `gattn train` checks): the
// directory must be new, empty or an ablation's, and the tables, report and logs regular files.
void check_ablation_outputs(const std::string& dir, const std::vector<PlannedCell>& plan) {
  const fs::path d(dir);
  std::error_code ec;
  const bool ablation = fs::is_directory(d / "cells", ec) || fs::is_directory(d / "logs", ec);
  if (holds_run(dir))
    throw OutputPathError("run.dir: " + dir + " holds a training run, not an ablation; choose another run.dir");
  if (!ablation && fs::is_directory(d, ec) && !fs::is_empty(d, ec))
    throw OutputPathError("run.dir: " + dir +
                          " is not empty and holds no ablation (no cells/ or logs/); choose a new or empty directory");
  if (fs::exists(d, ec) && !fs::is_directory(d, ec))
    throw OutputPathError("run.dir: " + dir + " exists and is not a directory");
  for (const char* f : {"summary.csv", "summary.md", "report.html"}) check_output_file((d / f).string(), "ablate");
  for (const PlannedCell& p : plan) {
    check_output_file((d / "logs" / (p.cell.name + ".log")).string(), "ablate");
    check_output_file((fs::path(p.dir) / kGenerationFile).string(), "ablate");
  }
}

// Measures a finished cell's generation speed unless generation.json already holds it for the
// cell's final checkpoint; returns the tokens/s. A checkpoint that cannot be loaded here only costs
// the column (one line says why).
std::optional<double> ensure_generation_speed(const PlannedCell& p) {
  if (auto known = read_generation_tokens_per_s(p.dir)) return known;
  try {
    const GenerationSpeed g = measure_generation(p.dir);
    write_generation(p.dir, g);
    return g.tokens_per_s;
  } catch (const std::exception& e) {
    std::cerr << "gattn: ablate: cell " << p.cell.name << ": generation speed not measured: " << e.what() << "\n";
    return std::nullopt;
  }
}

int run_ablate(const AblateArgs& args) {
  const AblationSpec spec = load_ablation(args.config);
  std::string dir = "runs/ablation_";
  dir += fs::path(args.config).stem().string();
  std::vector<std::string> extra;  // command-line overrides for every cell
  for (const std::string& ov : args.overrides) {
    const std::size_t eq = ov.find('=');
    const std::string key = eq == std::string::npos ? ov : ov.substr(0, eq);
    if (key == "run.dir") {
      dir = ov.substr(eq + 1);
      if (dir.empty()) throw ConfigError("override 'run.dir=': give the ablation's directory");
    } else if (key == "run.name") {
      throw ConfigError("override '" + ov +
                        "': gattn ablate names each cell's run; use run.dir=DIR for the ablation's directory");
    } else {
      extra.push_back(ov);
    }
  }
  if (!fs::is_regular_file(spec.base))
    throw ConfigError(spec.path + ": base '" + spec.base +
                      "' is not a file (paths are relative to the directory gattn runs in, the project root)");

  // Every cell's config is checked before the first one trains.
  std::vector<PlannedCell> plan;
  for (Cell& cell : expand_grid(spec.grid)) {
    PlannedCell p;
    p.dir = (fs::path(dir) / "cells" / cell.name).string();
    p.train_overrides = spec.overrides;
    p.train_overrides.insert(p.train_overrides.end(), extra.begin(), extra.end());
    for (const std::string& ov : cell.overrides()) p.train_overrides.push_back(ov);
    p.train_overrides.push_back("run.dir=" + p.dir);
    try {
      p.max_steps = Config::load(spec.base, p.train_overrides).get_int("train.max_steps");
    } catch (const ConfigError& e) {
      throw ConfigError("cell " + cell.name + ": " + e.what());
    }
    p.cell = std::move(cell);
    plan.push_back(std::move(p));
  }

  check_ablation_outputs(dir, plan);
  const fs::path logs = fs::path(dir) / "logs";
  fs::create_directories(logs);
  std::cout << "ablation: " << plan.size() << " cell(s) of " << spec.base << " into " << dir << "\n";
  // The tables over the cells finished so far, rewritten after each one: a long ablation can be
  // read (or stopped) part-way.
  auto write_summaries = [&]() {
    std::vector<CellResult> results;
    for (const PlannedCell& p : plan)
      if (run_finished(p.dir, p.max_steps)) results.push_back(CellResult{p.cell, read_run(p.dir)});
    const std::string md = summary_markdown(spec.grid, results);
    write_file_atomically((fs::path(dir) / "summary.csv").string(), summary_csv(spec.grid, results));
    write_file_atomically((fs::path(dir) / "summary.md").string(), md);
    return md;
  };
  ForwardSignals forward;
  const std::size_t n = plan.size();
  for (std::size_t i = 0; i < n; ++i) {
    const PlannedCell& p = plan[i];
    const std::string tag =
        std::string("[").append(std::to_string(i + 1)) + "/" + std::to_string(n) + "] " + p.cell.name;
    if (run_finished(p.dir, p.max_steps)) {
      std::cout << tag << ": finished, skipped\n" << std::flush;
      ensure_generation_speed(p);  // a cell an older gattn trained, or whose file was removed
      continue;
    }
    // A cell with a run directory was interrupted: continue it from its last checkpoint.
    const bool resume = fs::exists(fs::path(p.dir) / "metrics.jsonl") || fs::exists(fs::path(p.dir) / "checkpoints");
    std::vector<std::string> child{"train", "--config", spec.base};
    child.insert(child.end(), p.train_overrides.begin(), p.train_overrides.end());
    if (resume) {
      child.push_back("--resume");
      child.push_back("auto");
    }
    const std::string log = (logs / (p.cell.name + ".log")).string();
    std::cout << tag << ": " << (resume ? "resuming" : "training") << " (log: " << log << ")\n" << std::flush;
    const auto start = std::chrono::steady_clock::now();
    const int rc = run_child(child, log);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc != 0) {
      std::cerr << "gattn: ablate: cell " << p.cell.name << " failed (gattn train exit " << rc << "); see " << log
                << "\n";
      return rc;  // the exit codes of docs/cli.md, or 130/143 after a second signal
    }
    if (!run_finished(p.dir, p.max_steps)) {
      std::cout << "ablate: stopped during cell " << p.cell.name
                << " (checkpointed); run the same command again to resume\n";
      return 0;
    }
    const std::optional<double> generation = ensure_generation_speed(p);
    const RunRecord r = read_run(p.dir);
    char result[96];
    std::snprintf(result, sizeof result, ", val loss %.4f", r.val_loss.value_or(std::nan("")));
    std::cout << tag << ": done in " << seconds(took) << result;
    if (r.val_accuracy) {
      std::snprintf(result, sizeof result, ", accuracy %.1f%%", 100 * *r.val_accuracy);
      std::cout << result;
    }
    if (generation) {
      std::snprintf(result, sizeof result, ", generation %.0f tokens/s", *generation);
      std::cout << result;
    }
    std::cout << "\n" << std::flush;
    write_summaries();
    if (g_signal != 0) {
      std::cout << "ablate: stopped after cell " << p.cell.name << "; run the same command again to continue\n";
      return 0;
    }
  }

  const std::string md = write_summaries();
  std::vector<std::string> dirs;
  for (const PlannedCell& p : plan) dirs.push_back(p.dir);
  ReportRequest report;
  report.run_dirs = dirs;
  report.output = (fs::path(dir) / "report.html").string();
  report.options.title = "gattn ablation: " + args.config;
  report.options.heads = parse_heads("0:0,-1:0");
  write_report(report);
  std::cout << "\n"
            << md << "\nsummary: " << (fs::path(dir) / "summary.md").string() << ", "
            << (fs::path(dir) / "summary.csv").string() << "\nreport: " << report.output << "\n";
  return 0;
}

}  // namespace

Action add_ablate(CLI::App& app) {
  auto args = std::make_shared<AblateArgs>();
  CLI::App* cmd = app.add_subcommand("ablate", "train every cell of an ablation grid, then summarise and report");
  cmd->add_option("--config", args->config, "ablation file (base, overrides, grid)")->required();
  cmd->add_option("overrides", args->overrides,
                  "run.dir=DIR (the ablation's directory, default runs/ablation_<file stem>) and key.path=value "
                  "overrides for every cell");
  return [args] { return run_ablate(*args); };
}

}  // namespace gattn::recipes

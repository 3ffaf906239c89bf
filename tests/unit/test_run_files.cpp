// Where commands may write (framework/io/run_files.h): output files that are not regular files or
// that belong to a run are refused, a run directory must be new, empty or a gattn run, and the
// atomic writer never replaces a symlink, FIFO or device node.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "framework/io/checkpoint.h"
#include "framework/io/errors.h"
#include "framework/io/run_files.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::TempDir;
using test::write_text;

std::string refusal(const std::function<void()>& f) { return test::message_of<OutputPathError>(f); }

// A run directory as `gattn train` leaves it: config, metrics, lock and one checkpoint.
std::string make_run(const TempDir& dir) {
  const fs::path run = dir.path() / "run";
  fs::create_directories(run / "checkpoints" / "step_00000002");
  for (const char* f : {"config.yaml", "metrics.jsonl", ".lock", "checkpoints/latest",
                        "checkpoints/step_00000002/state.json", "checkpoints/step_00000002/model.safetensors"})
    write_text((run / f).string(), "x");
  return run.string();
}

TEST(RunFiles, OutputsThatAreNotRegularFilesAreRefused) {
  TempDir dir;
  write_text(dir.file("target.html"), "the user's file");
  fs::create_symlink(dir.file("target.html"), dir.file("link.html"));
  ASSERT_EQ(::mkfifo(dir.file("fifo.html").c_str(), 0644), 0);
  fs::create_directories(dir.path() / "folder");
  EXPECT_TRUE(contains(refusal([&] { check_output_file(dir.file("link.html"), "report: output"); }),
                       "link.html is a symbolic link"));
  EXPECT_TRUE(contains(refusal([&] { check_output_file(dir.file("fifo.html"), "report: output"); }), "is a FIFO"));
  EXPECT_TRUE(contains(refusal([&] { check_output_file(dir.file("folder"), "report: output"); }), "is a directory"));
  EXPECT_TRUE(contains(refusal([&] { check_output_file("/dev/full", "report: output"); }), "is a character device"));
  EXPECT_TRUE(contains(refusal([&] { check_output_file("/dev/null", "x"); }), "x: /dev/null is a character device"));
  check_output_file(dir.file("target.html"), "report: output");  // a regular file may be replaced
  check_output_file(dir.file("new.html"), "report: output");     // and a new one written
}

TEST(RunFiles, OutputsThatBelongToARunAreRefused) {
  TempDir dir;
  const std::string run = make_run(dir);
  for (const char* f : {"metrics.jsonl", "config.yaml", ".lock", "checkpoints", "checkpoints/latest",
                        "checkpoints/new.html", "checkpoints/step_00000002/model.safetensors",
                        "checkpoints/step_00000002/report.html", "./checkpoints/../metrics.jsonl"}) {
    const std::string path = run + "/" + f;
    const std::string msg = refusal([&] { check_output_file(path, "report: output"); });
    EXPECT_TRUE(contains(msg, path)) << f;
  }
  EXPECT_TRUE(contains(refusal([&] { check_output_file(run + "/metrics.jsonl", "x"); }), "metrics.jsonl of the run"));
  // Through a symlinked directory too.
  fs::create_directory_symlink(run, dir.file("alias"));
  EXPECT_TRUE(contains(refusal([&] { check_output_file(dir.file("alias/metrics.jsonl"), "x"); }), "of the run"));
  // A copied checkpoint directory outside any run.
  fs::copy(run + "/checkpoints/step_00000002", dir.file("copied"));
  EXPECT_TRUE(contains(refusal([&] { check_output_file(dir.file("copied/out.html"), "x"); }), "checkpoint directory"));
  // What a run directory may hold besides: the report gattn writes there by default.
  check_output_file(run + "/report.html", "report: output");
  // A folder that happens to be called checkpoints, in no run.
  fs::create_directories(dir.path() / "mine" / "checkpoints");
  check_output_file(dir.file("mine/checkpoints/out.html"), "x");
}

TEST(RunFiles, RunDirectoryMustBeNewEmptyOrARun) {
  TempDir dir;
  check_run_directory(dir.file("new"), "run.dir");
  fs::create_directories(dir.path() / "empty");
  check_run_directory(dir.file("empty"), "run.dir");
  const std::string run = make_run(dir);
  check_run_directory(run, "run.dir");
  // A folder of the user's: `run.dir=.` beside the config being read.
  fs::create_directories(dir.path() / "project");
  write_text(dir.file("project/config.yaml"), "the user's config");
  const std::string msg = refusal([&] { check_run_directory(dir.file("project"), "run.dir"); });
  EXPECT_TRUE(contains(msg, "run.dir: " + dir.file("project") + " is not empty (config.yaml)"));
  EXPECT_TRUE(contains(msg, "holds no gattn run"));
  write_text(dir.file("a_file"), "x");
  EXPECT_TRUE(contains(refusal([&] { check_run_directory(dir.file("a_file"), "run.dir"); }), "is not a directory"));
  EXPECT_TRUE(contains(refusal([&] { check_run_directory(run + "/checkpoints/new_run", "run.dir"); }),
                       "inside the checkpoints of the run in " + run));
  // A run whose own files were replaced by links is not written through.
  fs::remove(run + "/metrics.jsonl");
  fs::create_symlink(dir.file("a_file"), run + "/metrics.jsonl");
  EXPECT_TRUE(contains(refusal([&] { check_run_directory(run, "run.dir"); }), "metrics.jsonl is a symbolic link"));
}

TEST(RunFiles, AtomicWriterNeverReplacesALinkOrFollowsOne) {
  TempDir dir;
  write_text(dir.file("target"), "kept");
  fs::create_symlink(dir.file("target"), dir.file("link"));
  EXPECT_THROW(write_file_atomically(dir.file("link"), "new"), CheckpointError);
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
  // A symlink at the temporary name is not followed.
  fs::create_symlink(dir.file("target"), dir.file("out.tmp"));
  EXPECT_THROW(write_file_atomically(dir.file("out"), "new"), CheckpointError);
  EXPECT_EQ(test::read_file(dir.file("target")), "kept");
  fs::remove(dir.file("out.tmp"));
  write_file_atomically(dir.file("out"), "new");
  EXPECT_EQ(test::read_file(dir.file("out")), "new");
}

TEST(RunFiles, AtomicWriterSaysWhyAWriteFailed) {
  TempDir dir;
  // No such folder: the message carries the system's reason, not only the path.
  EXPECT_TRUE(contains(test::message_of<CheckpointError>([&] { write_file_atomically(dir.file("missing/out"), "x"); }),
                       "No such file or directory"));
}

}  // namespace
}  // namespace gattn

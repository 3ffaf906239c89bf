// StagedDirectory's refusals: what --force may replace, outputs over inputs, an output that appears
// while the command runs, and the staging directories of stopped and dead processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "framework/io/errors.h"
#include "framework/io/staged_directory.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::message_of;
using test::read_file;
using test::TempDir;
using test::write_text;

const OutputDirectoryKind kKind{
    "test", {"model"}, [](const std::string& name) { return name == "model" || name == "info"; }};

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A PID that names no process now.
long dead_pid() {
  for (long pid = 4000000; pid > 300; --pid)
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return pid;
  return -1;
}

TEST(StagedDirectory, ForceReplacesOnlyAnEmptyDirectoryOrItsOwnOutput) {
  TempDir dir;
  const std::string out = dir.file("out");
  fs::create_directories(out);
  write_text(out + "/corpus.txt", "precious");
  std::string msg = message_of<OutputPathError>([&] { StagedDirectory(out, true, "--out", kKind); });
  EXPECT_TRUE(contains(msg, "corpus.txt")) << msg;
  EXPECT_TRUE(contains(msg, "--force replaces only")) << msg;
  EXPECT_EQ(read_file(out + "/corpus.txt"), "precious");
  // Its own file names, but without the marker: not an output of the command either.
  fs::remove(out + "/corpus.txt");
  write_text(out + "/info", "x");
  EXPECT_TRUE(contains(message_of<OutputPathError>([&] { StagedDirectory(out, true, "--out", kKind); }), "missing"));
  // An earlier output with a stray file in it is refused; a clean one is replaced, file by file.
  write_text(out + "/model", "old");
  write_text(out + "/notes.txt", "mine");
  EXPECT_TRUE(contains(message_of<OutputPathError>([&] { StagedDirectory(out, true, "--out", kKind); }), "notes.txt"));
  fs::remove(out + "/notes.txt");
  {
    StagedDirectory staged(out, true, "--out", kKind);
    write_text(staged.file("model").string(), "new");
    staged.commit();
  }
  EXPECT_EQ(read_file(out + "/model"), "new");
  EXPECT_FALSE(fs::exists(out + "/info"));
  EXPECT_EQ(entries(dir.path()), 1u);
  // An empty directory, with or without --force.
  const std::string empty = dir.file("empty");
  for (bool force : {false, true}) {
    fs::create_directories(empty);
    StagedDirectory staged(empty, force, "--out", kKind);
    write_text(staged.file("model").string(), "m");
    staged.commit();
    EXPECT_EQ(read_file(empty + "/model"), "m");
    fs::remove_all(empty);
  }
}

TEST(StagedDirectory, RefusesAnOutputThatIsContainsOrLiesInsideAnInput) {
  TempDir dir;
  fs::create_directories(dir.file("corpus"));
  write_text(dir.file("corpus/a.txt"), "text");
  fs::create_directories(dir.file("tok"));
  write_text(dir.file("tok/model"), "m");
  const std::vector<std::pair<std::string, std::string>> inputs{{"--input", dir.file("corpus/a.txt")},
                                                                {"--tokenizer", dir.file("tok")}};
  std::string msg =
      message_of<OutputPathError>([&] { StagedDirectory(dir.file("corpus"), true, "--out", kKind, inputs); });
  EXPECT_TRUE(contains(msg, "contains the --input")) << msg;
  msg = message_of<OutputPathError>([&] { StagedDirectory(dir.file("tok") + "/", true, "--out", kKind, inputs); });
  EXPECT_TRUE(contains(msg, "is the --tokenizer")) << msg;
  msg = message_of<OutputPathError>([&] { StagedDirectory(dir.file("tok/shards"), false, "--out", kKind, inputs); });
  EXPECT_TRUE(contains(msg, "lies inside the --tokenizer")) << msg;
  // Through a symbolic link and a "..": the same directories.
  fs::create_directory_symlink(dir.file("corpus"), dir.file("link"));
  msg = message_of<OutputPathError>([&] { StagedDirectory(dir.file("tok/../link"), true, "--out", kKind, inputs); });
  EXPECT_TRUE(contains(msg, "contains the --input")) << msg;
  EXPECT_EQ(read_file(dir.file("corpus/a.txt")), "text");
  EXPECT_EQ(read_file(dir.file("tok/model")), "m");
  // A sibling whose name merely starts like an input's is apart from it.
  StagedDirectory ok(dir.file("corpus2"), false, "--out", kKind, inputs);
}

TEST(StagedDirectory, CommitDoesNotReplaceAnOutputThatAppeared) {
  TempDir dir;
  const std::string out = dir.file("out");
  for (bool force : {false, true}) {
    {
      StagedDirectory staged(out, force, "--out", kKind);
      write_text(staged.file("model").string(), "mine");
      fs::create_directories(out);  // another writer, or the user, meanwhile
      write_text(out + "/theirs.txt", "theirs");
      const std::string msg = message_of<OutputPathError>([&] { staged.commit(); });
      EXPECT_FALSE(msg.empty());
    }
    EXPECT_EQ(read_file(out + "/theirs.txt"), "theirs");
    EXPECT_EQ(entries(out), 1u);
    EXPECT_EQ(entries(dir.path()), 1u);  // the staging directory is gone
    fs::remove_all(out);
  }
  // A file that appeared.
  {
    StagedDirectory staged(out, false, "--out", kKind);
    write_text(out, "a file");
    EXPECT_TRUE(contains(message_of<OutputPathError>([&] { staged.commit(); }), "appeared"));
  }
  EXPECT_EQ(read_file(out), "a file");
}

TEST(StagedDirectory, StagingOfStoppedAndDeadProcessesIsRemoved) {
  TempDir dir;
  const std::string out = dir.file("out");
  {
    StagedDirectory staged(out, false, "--out", kKind);
    write_text(staged.file("model").string(), "partial");
    write_text(staged.file("info").string(), "partial");
    remove_staging_directories_on_signal();  // what the SIGINT/SIGTERM handler runs before _exit
    EXPECT_EQ(entries(dir.path()), 0u);
  }
  const long pid = dead_pid();
  ASSERT_GT(pid, 0);
  const std::string dead = dir.file(".out.partial-" + std::to_string(pid));
  const std::string live = dir.file(".out.partial-" + std::to_string(::getppid()));
  const std::string other = dir.file(".other.partial-" + std::to_string(pid));
  for (const std::string& d : {dead, live, other}) {
    fs::create_directories(d);
    write_text(d + "/model", "left over");
  }
  {
    StagedDirectory staged(out, false, "--out", kKind);
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_TRUE(fs::exists(live));   // its process is alive
    EXPECT_TRUE(fs::exists(other));  // another output's
  }
}

}  // namespace
}  // namespace gattn

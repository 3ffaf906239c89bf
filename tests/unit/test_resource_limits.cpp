// The limits (docs/cli.md) on what a setting or an input may ask for: input files are regular files of a
// bounded size (framework/base/input_file.h), a model must fit in memory (recipes/common/memory_check.h),
// thread counts are clamped to the cores and their threads must start (framework/runtime/threads.h).
// A FIFO is tested from the CLI (tests/integration/cli_input_files.sh), under a timeout.
#include <gtest/gtest.h>

#include "framework/base/input_file.h"
#include "framework/io/errors.h"
#include "framework/runtime/memory_budget.h"
#include "framework/runtime/threads.h"
#include "recipes/common/memory_check.h"
#include "recipes/common/run_config.h"
#include "test_util.h"

namespace gattn {
namespace {

std::string config_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(InputFile, ReadsARegularFileWhole) {
  test::TempDir dir;
  std::ofstream(dir.file("a.txt")) << "hello";
  EXPECT_EQ(read_input_file<CheckpointError>(dir.file("a.txt"), "the test file"), "hello");
  std::string out;
  EXPECT_EQ(read_whole_file(dir.file("a.txt"), 4, out), "it is 5 bytes, more than the 4 such a file may be");
}

TEST(InputFile, RefusesWhatIsNotARegularFileBeforeReading) {
  test::TempDir dir;
  const std::string msg = test::error_of([&] { read_input_file<CheckpointError>("/dev/zero", "the test file"); });
  EXPECT_EQ(msg, "cannot read the test file /dev/zero: it is a character device, not a regular file");
  std::string out;
  EXPECT_EQ(read_whole_file(dir.path().string(), kNoSizeLimit, out), "it is a directory, not a regular file");
  EXPECT_EQ(read_whole_file(dir.file("nope"), kNoSizeLimit, out), "it does not exist");
  std::filesystem::create_symlink("loop", dir.file("loop"));
  EXPECT_NE(read_whole_file(dir.file("loop"), kNoSizeLimit, out).find("symlink loop"), std::string::npos);
}

TEST(MemoryCheck, RefusesAModelThatCannotFitNamingTheSetting) {
  // A terabyte of position embedding; 2·10^13 parameters per block.
  const Config long_block = Config::from_string("model: {block_size: 1000000000}\n", {}, "big.yaml");
  std::string msg =
      config_error_of([&] { recipes::check_model_memory(long_block, recipes::ModelUse::train, Device::cpu); });
  EXPECT_NE(msg.find("big.yaml:1: model.block_size 1000000000: needs about"), std::string::npos) << msg;
  const Config wide = Config::from_string("", {"model.n_embd=2000000"});
  msg = config_error_of([&] { recipes::check_model_memory(wide, recipes::ModelUse::inference, Device::cpu); });
  EXPECT_NE(msg.find("override 'model.n_embd=2000000': model.n_embd 2000000: needs about"), std::string::npos) << msg;
  // The defaults and the quick-start sizes fit anywhere.
  EXPECT_NO_THROW(recipes::check_model_memory(Config::defaults(), recipes::ModelUse::train, Device::cpu));
  EXPECT_EQ(memory_shortfall(1e6, "a megabyte"), "");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
}

TEST(Threads, CountsAreClampedToTheCores) {
  const int cores = num_procs();
  EXPECT_EQ(resolve_thread_count(0).threads, cores);
  EXPECT_FALSE(resolve_thread_count(0).clamped);
  EXPECT_EQ(resolve_thread_count(1).threads, 1);
  const ThreadCount many = resolve_thread_count(1000);
  EXPECT_EQ(many.threads, cores);
  EXPECT_TRUE(many.clamped);
  EXPECT_EQ(probe_thread_start(cores), "");
}

}  // namespace
}  // namespace gattn

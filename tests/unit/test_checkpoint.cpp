// Checkpoints for exact resume: CRC-32 and per-tensor checksums, optimizer state round trips and
// refusals, state.json (fields, CRC, config hash), the checkpoint directory (atomic layout, latest,
// retention, reading back verified) and metrics rewinding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include "framework/io/checkpoint.h"
#include "framework/io/checksums.h"
#include "framework/io/metrics_rewind.h"
#include "framework/io/module_io.h"
#include "framework/io/optimizer_io.h"
#include "framework/io/safetensors.h"
#include "framework/io/train_state.h"
#include "model_test_util.h"
#include "models/gpt.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::TempDir;
using test::write_text;

std::string checkpoint_error(const std::function<void()>& f) { return test::message_of<CheckpointError>(f); }

// A tiny f32 GPT with an output gate, its optimizer (a frozen gate group, so step counts differ),
// and a few real steps so that moments and counts are not trivial.
struct Trained {
  models::GPT model;
  optim::AdamW opt;
  explicit Trained(std::uint64_t seed, int steps = 3)
      : model(test::tiny_config("output", DType::f32), seed), opt(model.named_parameters(), options()) {
    for (int s = 0; s < steps; ++s) {
      Tensor idx = test::tokens(2, 6, 5, seed + static_cast<std::uint64_t>(s));
      model.forward(idx, idx).loss.backward();
      opt.step(s);
      opt.zero_grad();
    }
  }
  static optim::AdamWOptions options() {
    optim::AdamWOptions o;
    o.schedule.kind = "constant";
    optim::ParamGroupOptions gates;
    gates.name = "gates";
    gates.match = {"*.attn.gate.*"};
    gates.freeze_steps = 2;
    o.groups.push_back(gates);
    return o;
  }
};

TrainState sample_state(const nlohmann::json& config) {
  TrainState s;
  s.step = 3;
  s.rng[kDataRng] = GeneratorState{7, 2, 1024};
  s.rng[kModelNoiseRng] = GeneratorState{7, 1, std::numeric_limits<std::uint64_t>::max() - 3};
  s.bad_steps_in_a_row = 1;
  s.elapsed_s = 12.5;
  s.lr = {{"default", 1e-3}, {"gates", 0.0}};
  s.config = config;
  s.config_hash = config_hash(config);
  return s;
}

nlohmann::json sample_config() {
  return {{"model", {{"n_layer", 2}, {"n_embd", 4}, {"gate", {{"kind", "output"}}}}},
          {"data", {{"kind", "text"}, {"task", "copy"}, {"path", "a.txt"}}},
          {"train", {{"max_steps", 10}}}};
}

// ---- checksums ----

TEST(Checksums, Crc32KnownValues) {
  EXPECT_EQ(crc32("", 0), 0u);
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);  // the standard check value of CRC-32/ISO-HDLC
  EXPECT_EQ(crc32_hex(0xCBF43926u), "cbf43926");
  // Any split gives the same CRC as one pass (covers the 8-byte loop and the byte tail).
  std::string data(1000, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  const std::uint32_t whole = crc32(data.data(), data.size());
  for (std::size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000})
    EXPECT_EQ(crc32(data.data() + cut, data.size() - cut, crc32(data.data(), cut)), whole) << cut;
}

TEST(Checksums, SaveModuleWritesThemAndLoadVerifies) {
  TempDir dir;
  Trained a(1, 0);
  const std::string path = dir.file("m.safetensors");
  save_module(path, a.model);
  SafetensorsFile file = load_safetensors(path);
  ASSERT_TRUE(file.metadata.count(kChecksumsKey));
  EXPECT_TRUE(verify_checksums(file, true));

  // A flipped bit in the data of the last tensor: refused, naming the file and the tensor.
  std::string bytes = test::read_file(path);
  bytes[bytes.size() - 2] ^= 0x10;
  write_text(path, bytes);
  models::GPT b(test::tiny_config("output", DType::f32), 2);
  const std::string msg = checkpoint_error([&] { load_module(path, b); });
  EXPECT_TRUE(contains(msg, path));
  EXPECT_TRUE(contains(msg, "checksum mismatch"));
  EXPECT_TRUE(contains(msg, "tensor '" + load_safetensors(path).tensors.back().first + "'"));
}

TEST(Checksums, FilesWithoutThemLoadUnlessRequired) {
  TempDir dir;
  const std::string path = dir.file("plain.safetensors");
  save_safetensors(path, {{"x", Tensor::from({1, 2}, {2}, DType::f32)}});
  SafetensorsFile file = load_safetensors(path);
  EXPECT_FALSE(verify_checksums(file, false));
  EXPECT_TRUE(contains(checkpoint_error([&] { verify_checksums(file, true); }), "no \"crc32\""));
}

TEST(Checksums, MissingExtraAndMalformedEntries) {
  SafetensorsFile file;
  file.path = "f.safetensors";
  file.tensors.emplace_back("a", Tensor::from({1, 2}, {2}, DType::f32));
  file.tensors.emplace_back("b", Tensor::from({3}, {1}, DType::f32));
  file.metadata[kChecksumsKey] = tensor_checksums(file.tensors);
  EXPECT_TRUE(verify_checksums(file, true));

  SafetensorsFile missing = file;
  missing.tensors.pop_back();  // listed by the checksums, absent from the file
  EXPECT_TRUE(contains(checkpoint_error([&] { verify_checksums(missing, true); }), "tensor 'b' is missing"));
  SafetensorsFile extra = file;
  extra.tensors.emplace_back("c", Tensor::from({4}, {1}, DType::f32));
  EXPECT_TRUE(contains(checkpoint_error([&] { verify_checksums(extra, true); }), "tensor 'c' has no checksum"));
  SafetensorsFile garbled = file;
  garbled.metadata[kChecksumsKey] = "{\"a\": 1";
  EXPECT_TRUE(contains(checkpoint_error([&] { verify_checksums(garbled, false); }), "not a JSON object"));
}

// Whatever happens to the bytes of a file with checksums, reading and verifying it either throws
// CheckpointError or gives every tensor's bytes exactly as written: no damage goes unnoticed into
// a model. (test_safetensors.cpp fuzzes the reader itself; this adds the data the structure
// cannot vouch for.)
TEST(Checksums, RandomMutationsAreCaughtOrHarmless) {
  TempDir dir;
  const std::string path = dir.file("valid.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  tensors.emplace_back("a", test::randn({3, 4}, 1, 1.0, DType::f32));
  tensors.emplace_back("b", test::randn({5}, 2, 1.0, DType::f32));
  save_safetensors(path, tensors, {{kChecksumsKey, tensor_checksums(tensors)}});
  const std::string valid = test::read_file(path);
  std::mt19937_64 rng(7);
  auto below = [&](std::uint64_t n) { return n == 0 ? 0 : rng() % n; };
  const std::string target = dir.file("mutant.safetensors");
  int loaded = 0, rejected = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    std::string bytes = valid;
    switch (below(3)) {
      case 0:  // flip one bit anywhere
        bytes[below(bytes.size())] ^= static_cast<char>(1 << below(8));
        break;
      case 1:  // flip bits in the data section only
        bytes[bytes.size() - 1 - below(68)] ^= static_cast<char>(1 + below(255));
        break;
      default:  // truncate
        bytes.resize(below(bytes.size()));
    }
    std::error_code ec;
    fs::remove(target, ec);
    write_text(target, bytes);
    try {
      SafetensorsFile f = load_safetensors(target);
      verify_checksums(f, true);
      for (const auto& [name, t] : tensors) {
        const Tensor& got = f.get(name);
        ASSERT_EQ(got.numel(), t.numel()) << iter;
        ASSERT_EQ(std::memcmp(got.raw_data(), t.raw_data(), static_cast<std::size_t>(t.numel()) * 4), 0) << iter;
      }
      ++loaded;
    } catch (const CheckpointError&) {
      ++rejected;
    }
  }
  // Nearly every mutation is caught; one that loads (none with this seed) must have been harmless.
  EXPECT_EQ(loaded + rejected, 1000);
  EXPECT_GT(rejected, 900);
}

// ---- optimizer state ----

TEST(OptimizerIo, RoundTripRestoresMomentsAndStepCounts) {
  TempDir dir;
  Trained a(1);
  const std::string path = dir.file("optimizer.safetensors");
  save_optimizer(path, a.opt);
  Trained b(2, 0);  // fresh optimizer of the same model shape
  load_optimizer(load_safetensors(path), b.opt);
  for (const auto& [name, p] : a.opt.named_parameters()) {
    const optim::ParamState &sa = a.opt.state(name), &sb = b.opt.state(name);
    EXPECT_EQ(sa.t, sb.t) << name;
    EXPECT_EQ(sa.exp_avg.to_vector(), sb.exp_avg.to_vector()) << name;
    EXPECT_EQ(sa.exp_avg_sq.to_vector(), sb.exp_avg_sq.to_vector()) << name;
  }
  // The frozen gate group took fewer steps: the counts differ per group and survive the trip.
  EXPECT_EQ(b.opt.state("blocks.0.attn.gate.weight").t, 1);
  EXPECT_EQ(b.opt.state("wte.weight").t, 3);
  const SafetensorsFile file = load_safetensors(path);
  EXPECT_EQ(file.get("wte.weight.exp_avg").dtype(), DType::f32);
  EXPECT_EQ(file.metadata.at("format"), kCheckpointFormat);
}

TEST(OptimizerIo, RefusesFilesThatDoNotFitWithoutChangingState) {
  TempDir dir;
  Trained a(1);
  const std::string path = dir.file("optimizer.safetensors");
  save_optimizer(path, a.opt);
  const SafetensorsFile good = load_safetensors(path);
  Trained b(2, 1);
  const std::vector<double> before = b.opt.state("wte.weight").exp_avg.to_vector();
  auto refuse = [&](SafetensorsFile f, const std::string& needle) {
    f.metadata[kChecksumsKey] = tensor_checksums(f.tensors);  // damage only what the test names
    EXPECT_TRUE(contains(checkpoint_error([&] { load_optimizer(f, b.opt); }), needle));
    EXPECT_EQ(b.opt.state("wte.weight").exp_avg.to_vector(), before);
    EXPECT_EQ(b.opt.state("wte.weight").t, 1);
  };
  SafetensorsFile f = good;
  f.tensors.erase(f.tensors.begin());
  refuse(f, "tensor 'wte.weight.exp_avg' is missing");
  f = good;
  f.tensors.emplace_back("ghost.exp_avg", Tensor::zeros({1}, DType::f32));
  refuse(f, "extra tensor 'ghost.exp_avg'");
  f = good;
  for (auto& [name, t] : f.tensors)
    if (name == "ln_f.bias.exp_avg_sq") t = Tensor::zeros({3}, DType::f32);
  refuse(f, "'ln_f.bias.exp_avg_sq' has shape [3]");
  f = good;
  f.metadata["step_counts"] = "{}";
  refuse(f, "no valid step count");
  f = good;
  f.metadata["step_counts"] = "[1";
  refuse(f, "\"step_counts\" is not a JSON object");
  // A file without checksums is not trusted for a resume.
  f = good;
  f.metadata.erase(kChecksumsKey);
  EXPECT_TRUE(contains(checkpoint_error([&] { load_optimizer(f, b.opt); }), "no \"crc32\""));
}

// ---- state.json ----

TEST(TrainStateJson, RoundTripKeepsEveryField) {
  const TrainState s = sample_state(sample_config());
  const nlohmann::json j = nlohmann::json::parse(train_state_to_json(s).dump(2));
  const TrainState r = train_state_from_json(j, "state.json");
  EXPECT_EQ(r.step, 3);
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.bad_steps_in_a_row, 1);
  EXPECT_EQ(r.elapsed_s, 12.5);
  EXPECT_EQ(r.rng.at(kDataRng).offset, 1024u);
  EXPECT_EQ(r.rng.at(kModelNoiseRng).offset, std::numeric_limits<std::uint64_t>::max() - 3);  // full 64 bits
  EXPECT_EQ(r.rng.at(kModelNoiseRng).stream, 1u);
  EXPECT_EQ(r.lr.at("default"), 1e-3);
  EXPECT_EQ(r.config, s.config);
  EXPECT_EQ(r.config_hash, s.config_hash);
}

TEST(TrainStateJson, RefusesDamageNamingTheField) {
  const nlohmann::json good = train_state_to_json(sample_state(sample_config()));
  auto refuse = [](nlohmann::json j, const std::string& needle, bool fix_crc = true) {
    if (fix_crc) {  // re-sign, so the field check (not the CRC) has to catch it
      j.erase("crc32");
      const std::string text = j.dump();
      j["crc32"] = crc32_hex(crc32(text.data(), text.size()));
    }
    const std::string msg = checkpoint_error([&] { train_state_from_json(j, "ck/state.json"); });
    EXPECT_TRUE(contains(msg, "ck/state.json"));
    EXPECT_TRUE(contains(msg, needle));
  };
  nlohmann::json j = good;
  j["step"] = 4;
  refuse(j, "checksum mismatch", /*fix_crc=*/false);
  j = good;
  j.erase("step");
  refuse(j, "field 'step' is missing");
  j = good;
  j["step"] = -1;
  refuse(j, "field 'step' must be >= 0");
  j = good;
  j["rng"]["data"]["offset"] = "12";
  refuse(j, "field 'rng.data.offset' is not a non-negative integer");
  j = good;
  j["rng"]["data"]["offset"] = 13;
  refuse(j, "multiple of 4");
  j = good;
  j["elapsed_s"] = nullptr;
  refuse(j, "field 'elapsed_s' is not a finite number");
  j = good;
  j["config"]["model"]["n_layer"] = 3;  // config edited by hand: no longer matches its hash
  refuse(j, "field 'config_hash' does not match");
  j = good;
  j["format"] = "gattn/0";
  refuse(j, "field 'format'");
  j = good;
  j.erase("crc32");
  refuse(j, "field 'crc32' is missing", /*fix_crc=*/false);
}

TEST(TrainStateJson, ReadRefusesMissingAndTruncatedFiles) {
  TempDir dir;
  EXPECT_TRUE(contains(checkpoint_error([&] { read_train_state(dir.file("nope.json")); }), "does not exist"));
  const std::string text = train_state_to_json(sample_state(sample_config())).dump(2);
  write_text(dir.file("cut.json"), text.substr(0, text.size() / 2));
  EXPECT_TRUE(contains(checkpoint_error([&] { read_train_state(dir.file("cut.json")); }), "not valid JSON"));
}

TEST(ConfigHash, CoversModelAndDataKindOnly) {
  const nlohmann::json base = sample_config();
  nlohmann::json other = base;
  other["train"]["max_steps"] = 99;
  other["data"]["path"] = "b.txt";
  EXPECT_EQ(config_hash(other), config_hash(base));
  other = base;
  other["model"]["gate"]["kind"] = "score";
  EXPECT_NE(config_hash(other), config_hash(base));
  other = base;
  other["data"]["task"] = "assoc_recall";
  EXPECT_NE(config_hash(other), config_hash(base));
  EXPECT_EQ(config_hash(base).rfind("fnv1a64:", 0), 0u);
  EXPECT_EQ(config_hash(base).size(), 8u + 16u);
}

TEST(ConfigHash, ResumeCheckNamesTheChangedKey) {
  const TrainState saved = sample_state(sample_config());
  nlohmann::json now = sample_config();
  now["train"]["max_steps"] = 20;
  EXPECT_NO_THROW(check_resume_config(saved, now, "s.json"));
  now["model"]["n_layer"] = 3;
  const std::string msg = checkpoint_error([&] { check_resume_config(saved, now, "s.json"); });
  EXPECT_TRUE(contains(msg, "s.json"));
  EXPECT_TRUE(contains(msg, "model.n_layer: 2 -> 3"));
  EXPECT_EQ(config_differences(sample_config(), sample_config()), std::vector<std::string>{});
}

TEST(ConfigHash, KeysNewerThanTheCheckpointAtTheirDefaultsDoNotBlockAResume) {
  // A checkpoint written before gattn knew model.gate.new_key (its config lacks the key).
  nlohmann::json old_config = sample_config();
  const TrainState saved = sample_state(old_config);
  nlohmann::json defaults = sample_config();
  defaults["model"]["gate"]["new_key"] = 0.5;
  nlohmann::json now = sample_config();
  now["model"]["gate"]["new_key"] = 0.5;
  EXPECT_THROW(check_resume_config(saved, now, "s.json"), CheckpointError);  // without the defaults
  EXPECT_NO_THROW(check_resume_config(saved, now, "s.json", defaults));
  now["model"]["gate"]["new_key"] = 0.7;  // set to something else: a different model
  const std::string msg = checkpoint_error([&] { check_resume_config(saved, now, "s.json", defaults); });
  EXPECT_TRUE(contains(msg, "model.gate.new_key: 0.5 -> 0.7")) << msg;
}

// ---- checkpoint directories ----

TEST(CheckpointDir, WriteThenReadBackVerified) {
  TempDir dir;
  Trained a(1);
  const nlohmann::json config = sample_config();
  TrainState st = sample_state(config);
  const CheckpointWritten w = write_checkpoint(dir.path().string(), a.model, a.opt, {{"format", "gattn/1"}}, st);
  EXPECT_EQ(w.dir, (dir.path() / "checkpoints" / "step_00000003").string());
  std::uint64_t bytes = 0;
  for (const char* f : {kModelFile, kOptimizerFile, kStateFile}) {
    ASSERT_TRUE(fs::exists(fs::path(w.dir) / f)) << f;
    bytes += fs::file_size(fs::path(w.dir) / f);
  }
  EXPECT_EQ(w.bytes, bytes);
  EXPECT_GE(w.seconds, 0.0);
  EXPECT_EQ(latest_checkpoint(dir.path().string()), w.dir);
  for (const auto& e : fs::directory_iterator(dir.path() / "checkpoints"))
    EXPECT_TRUE(e.path().filename() == "latest" || e.path().filename() == "step_00000003") << e.path();

  const CheckpointFiles back = read_checkpoint(w.dir);
  EXPECT_EQ(back.state.step, 3);
  EXPECT_EQ(back.state.rng.at(kDataRng).offset, 1024u);
  Trained b(2, 0);
  load_module(back.model, b.model);
  load_optimizer(back.optimizer, b.opt);
  for (const auto& [name, p] : a.opt.named_parameters()) {
    EXPECT_EQ(a.opt.state(name).exp_avg_sq.to_vector(), b.opt.state(name).exp_avg_sq.to_vector()) << name;
    EXPECT_EQ(a.opt.state(name).t, b.opt.state(name).t) << name;
  }
  a.model.visit_parameters([&](const std::string& name, Tensor& p) {
    b.model.visit_parameters([&](const std::string& other, Tensor& q) {
      if (other == name) {
        EXPECT_EQ(p.to_vector(), q.to_vector()) << name;
      }
    });
  });

  // Rewriting the same step replaces the directory whole.
  st.elapsed_s = 99;
  write_checkpoint(dir.path().string(), a.model, a.opt, {}, st);
  EXPECT_EQ(read_checkpoint(w.dir).state.elapsed_s, 99.0);
}

TEST(CheckpointDir, ReadRefusesEachDamagedFile) {
  TempDir dir;
  Trained a(1);
  const std::string ck = write_checkpoint(dir.path().string(), a.model, a.opt, {}, sample_state(sample_config())).dir;
  const std::string model = (fs::path(ck) / kModelFile).string(), opt = (fs::path(ck) / kOptimizerFile).string();
  const std::string model_bytes = test::read_file(model), opt_bytes = test::read_file(opt);

  write_text(model, model_bytes.substr(0, model_bytes.size() - 5));
  EXPECT_TRUE(contains(checkpoint_error([&] { read_checkpoint(ck); }), model));
  std::string flipped = opt_bytes;
  flipped[flipped.size() - 1] ^= 1;
  write_text(model, model_bytes);
  write_text(opt, flipped);
  const std::string msg = checkpoint_error([&] { read_checkpoint(ck); });
  EXPECT_TRUE(contains(msg, opt));
  EXPECT_TRUE(contains(msg, "checksum mismatch"));
  fs::remove(opt);
  EXPECT_TRUE(contains(checkpoint_error([&] { read_checkpoint(ck); }), opt));
  EXPECT_TRUE(contains(checkpoint_error([&] { read_checkpoint(dir.file("nowhere")); }), "not a directory"));
}

TEST(CheckpointDir, LatestNoneGarbageOrDangling) {
  TempDir dir;
  const std::string run = dir.path().string();
  EXPECT_EQ(latest_checkpoint(run), "");  // no checkpoints at all
  fs::create_directories(dir.path() / "checkpoints" / "step_00000002");
  EXPECT_EQ(latest_checkpoint(run), "");  // a directory but no `latest`: nothing was completed
  write_text(dir.file("checkpoints/latest"), "step_00000002\n");
  EXPECT_EQ(latest_checkpoint(run), (dir.path() / "checkpoints" / "step_00000002").string());
  write_text(dir.file("checkpoints/latest"), "step_00000005\n");
  EXPECT_TRUE(contains(checkpoint_error([&] { latest_checkpoint(run); }), "does not exist"));
  write_text(dir.file("checkpoints/latest"), "../../etc\n");
  EXPECT_TRUE(contains(checkpoint_error([&] { latest_checkpoint(run); }), "not a checkpoint name"));
  write_text(dir.file("checkpoints/latest"), "");
  EXPECT_TRUE(contains(checkpoint_error([&] { latest_checkpoint(run); }), "cannot be read"));
}

TEST(CheckpointDir, LatestWithAnythingAfterTheNameIsRefused) {
  TempDir dir;
  const std::string run = dir.path().string();
  fs::create_directories(dir.path() / "checkpoints" / "step_00000002");
  write_text(dir.file("checkpoints/latest"), "step_00000002");  // no newline: still one name
  EXPECT_EQ(latest_checkpoint(run), (dir.path() / "checkpoints" / "step_00000002").string());
  for (const char* damaged : {"step_00000002\ngarbage", "step_00000002\n\n", "step_00000002\nstep_00000003\n"}) {
    write_text(dir.file("checkpoints/latest"), damaged);
    EXPECT_TRUE(contains(checkpoint_error([&] { latest_checkpoint(run); }), "more than a checkpoint name")) << damaged;
  }
  // A dangling symlink is a damaged `latest`, not a missing one.
  fs::remove(dir.file("checkpoints/latest"));
  fs::create_symlink("nowhere", dir.file("checkpoints/latest"));
  EXPECT_TRUE(contains(checkpoint_error([&] { latest_checkpoint(run); }), "checkpoints/latest"));
}

TEST(CheckpointDir, DirectoriesAreListedNewestFirst) {
  TempDir dir;
  EXPECT_TRUE(checkpoint_directories(dir.path().string()).empty());
  for (int s : {2, 10, 4}) fs::create_directories(dir.path() / "checkpoints" / checkpoint_name(s));
  fs::create_directories(dir.path() / "checkpoints" / ".tmp_step_00000012");
  write_text(dir.file("checkpoints/step_00000011"), "a file, not a checkpoint");
  const fs::path root = dir.path() / "checkpoints";
  EXPECT_EQ(checkpoint_directories(dir.path().string()),
            (std::vector<std::string>{(root / "step_00000010").string(), (root / "step_00000004").string(),
                                      (root / "step_00000002").string()}));
}

// Rewrites a safetensors file with `edit` applied to its tensors and metadata; the checksums are
// recomputed unless the edit removed them, so only the edit itself is wrong with the file.
void rewrite_safetensors(const std::string& path,
                         const std::function<void(std::vector<std::pair<std::string, Tensor>>&,
                                                  std::map<std::string, std::string>&)>& edit) {
  SafetensorsFile file = load_safetensors(path);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : file.tensors) tensors.emplace_back(name, t.clone());
  std::map<std::string, std::string> meta = file.metadata;
  const bool had_checksums = meta.count(kChecksumsKey) > 0;
  edit(tensors, meta);
  if (had_checksums && meta.count(kChecksumsKey)) meta[kChecksumsKey] = tensor_checksums(tensors);
  save_safetensors(path, tensors, meta);
}

TEST(CheckpointDir, ReadRefusesUnknownFormatMissingChecksumsAndGarbageVocab) {
  TempDir dir;
  Trained a(1);
  const std::map<std::string, std::string> meta{{"vocab", "[97,98,99]"}};
  const std::string ck = write_checkpoint(dir.path().string(), a.model, a.opt, meta, sample_state(sample_config())).dir;
  const std::string model = (fs::path(ck) / kModelFile).string(), opt = (fs::path(ck) / kOptimizerFile).string();
  const std::string model_bytes = test::read_file(model), opt_bytes = test::read_file(opt);
  EXPECT_EQ(load_safetensors(model).metadata.at("format"), kCheckpointFormat);  // written whatever the caller passed
  read_checkpoint(ck);

  using Meta = std::map<std::string, std::string>;
  using Tensors = std::vector<std::pair<std::string, Tensor>>;
  struct Case {
    std::string file, what, needle;
    std::function<void(Meta&)> edit;
  };
  const std::vector<Case> cases = {
      {model, "unknown format", "format 'gattn/99'", [](Meta& m) { m["format"] = "gattn/99"; }},
      {opt, "unknown format", "format 'gattn/2'", [](Meta& m) { m["format"] = "gattn/2"; }},
      {model, "no format", "no \"format\"", [](Meta& m) { m.erase("format"); }},
      {model, "checksums removed", "no \"crc32\"", [](Meta& m) { m.erase(kChecksumsKey); }},
      {opt, "checksums removed", "no \"crc32\"", [](Meta& m) { m.erase(kChecksumsKey); }},
      {model, "garbage vocab", "\"vocab\"", [](Meta& m) { m["vocab"] = "garbage"; }},
      {model, "vocab out of range", "\"vocab\"", [](Meta& m) { m["vocab"] = "[97,300]"; }},
      {model, "vocab repeats", "\"vocab\"", [](Meta& m) { m["vocab"] = "[97,97]"; }},
  };
  for (const Case& c : cases) {
    rewrite_safetensors(c.file, [&](Tensors&, Meta& m) { c.edit(m); });
    const std::string msg = checkpoint_error([&] { read_checkpoint(ck); });
    EXPECT_TRUE(contains(msg, c.file)) << c.what;
    EXPECT_TRUE(contains(msg, c.needle)) << c.what;
    write_text(model, model_bytes);
    write_text(opt, opt_bytes);
  }
}

TEST(CheckpointDir, ReadRefusesNonFiniteWeightsAndMomentsNamingTheTensor) {
  TempDir dir;
  Trained a(1);
  const std::string ck = write_checkpoint(dir.path().string(), a.model, a.opt, {}, sample_state(sample_config())).dir;
  const std::string model = (fs::path(ck) / kModelFile).string(), opt = (fs::path(ck) / kOptimizerFile).string();
  const std::string model_bytes = test::read_file(model);
  using Meta = std::map<std::string, std::string>;
  using Tensors = std::vector<std::pair<std::string, Tensor>>;
  auto poison = [](const std::string& name, float value) {
    return [=](Tensors& tensors, Meta&) {
      for (auto& [n, t] : tensors)
        if (n == name) t.data<float>()[1] = value;
    };
  };
  rewrite_safetensors(model, poison("wpe.weight", std::numeric_limits<float>::quiet_NaN()));
  std::string msg = checkpoint_error([&] { read_checkpoint(ck); });
  EXPECT_TRUE(contains(msg, model));
  EXPECT_TRUE(contains(msg, "tensor 'wpe.weight' holds NaN or Inf"));
  write_text(model, model_bytes);
  rewrite_safetensors(opt, poison("ln_f.bias.exp_avg_sq", std::numeric_limits<float>::infinity()));
  msg = checkpoint_error([&] { read_checkpoint(ck); });
  EXPECT_TRUE(contains(msg, opt));
  EXPECT_TRUE(contains(msg, "tensor 'ln_f.bias.exp_avg_sq' holds NaN or Inf"));
}

TEST(CheckpointDir, NonFiniteWeightsOrMomentsAreNeverWritten) {
  TempDir dir;
  Trained a(1);
  TrainState st = sample_state(sample_config());
  const std::string first = write_checkpoint(dir.path().string(), a.model, a.opt, {}, st).dir;
  const std::string latest_before = test::read_file(dir.file("checkpoints/latest"));
  auto expect_refused = [&](const std::string& needle) {
    st.step = 4;
    try {
      write_checkpoint(dir.path().string(), a.model, a.opt, {}, st);
      ADD_FAILURE() << "wrote a checkpoint holding NaN/Inf (" << needle << ")";
    } catch (const NumericalError& e) {
      EXPECT_TRUE(contains(e.what(), needle));
    }
    EXPECT_FALSE(fs::exists(dir.path() / "checkpoints" / "step_00000004"));
    EXPECT_FALSE(fs::exists(dir.path() / "checkpoints" / ".tmp_step_00000004"));
    EXPECT_EQ(test::read_file(dir.file("checkpoints/latest")), latest_before);
  };
  Tensor wpe;
  a.model.visit_parameters([&](const std::string& name, Tensor& p) {
    if (name == "wpe.weight") wpe = p;
  });
  const float kept = wpe.data<float>()[0];
  wpe.data<float>()[0] = std::numeric_limits<float>::infinity();
  expect_refused("parameter 'wpe.weight'");
  wpe.data<float>()[0] = kept;
  a.opt.state("ln_f.bias").exp_avg.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  expect_refused("optimizer moment 'ln_f.bias.exp_avg'");
  EXPECT_EQ(read_checkpoint(first).state.step, 3);  // the earlier checkpoint stands
}

TEST(CheckpointDir, RetentionKeepsNewestMilestonesAndLaterAttempts) {
  TempDir dir;
  const fs::path root = dir.path() / "checkpoints";
  for (int s = 1; s <= 12; ++s) fs::create_directories(root / checkpoint_name(s));
  fs::create_directories(root / ".tmp_step_00000013");  // a write killed midway
  write_text((root / "latest.tmp").string(), "x");
  // Step 10 was just written; 11 and 12 are from an attempt the run rewound past.
  const auto removed = prune_checkpoints(dir.path().string(), 10, 3, 4);
  EXPECT_EQ(removed, (std::vector<std::string>{"step_00000007", "step_00000006", "step_00000005", "step_00000003",
                                               "step_00000002", "step_00000001"}));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(root)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"step_00000004", "step_00000008", "step_00000009", "step_00000010",
                                            "step_00000011", "step_00000012"}));
  // keep_last 0 keeps everything.
  EXPECT_TRUE(prune_checkpoints(dir.path().string(), 12, 0, 0).empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(root), fs::directory_iterator()), 6);
}

// ---- metrics ----

TEST(MetricsRewind, DropsLaterAndTornLines) {
  TempDir dir;
  const std::string path = dir.file("metrics.jsonl");
  EXPECT_EQ(rewind_metrics(path, 3), 0);  // a missing file stays missing
  EXPECT_FALSE(fs::exists(path));
  write_text(path,
             "{\"step\":1,\"split\":\"train\"}\n{\"step\":2,\"split\":\"train\"}\n{\"step\":2,\"split\":\"val\"}\n"
             "{\"step\":3,\"split\":\"train\"}\n{\"step\":4,\"split\":\"train\"}\n{\"step\":5,\"spl");
  EXPECT_EQ(rewind_metrics(path, 2), 3);
  EXPECT_EQ(test::read_file(path),
            "{\"step\":1,\"split\":\"train\"}\n{\"step\":2,\"split\":\"train\"}\n"
            "{\"step\":2,\"split\":\"val\"}\n");
  EXPECT_EQ(rewind_metrics(path, 2), 0);  // nothing to drop: untouched
  EXPECT_EQ(rewind_metrics(path, 0), 3);
  EXPECT_EQ(test::read_file(path), "");
}

}  // namespace
}  // namespace gattn

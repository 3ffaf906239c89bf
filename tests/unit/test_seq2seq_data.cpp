// Sequence-to-sequence data (docs/seq2seq.md): the synthetic tasks reverse, sort and noisy_copy (targets,
// token layout, determinism, errors), exact match, text pairs (split, per-batch padding, the byte
// vocabulary with reserved ids, the tokenizer variant, every error with its line) and the config keys.
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/io/byte_vocab.h"
#include "framework/text/subword_tokenizer.h"
#include "framework/text/tokenizer_training.h"
#include "recipes/common/run_config.h"
#include "recipes/common/run_setup.h"
#include "test_util.h"

namespace gattn {
namespace {

namespace fs = std::filesystem;
using test::contains;
using test::message_of;
using test::TempDir;
using test::write_text;

using Row = std::vector<std::int32_t>;

Row row_of(const Tensor& t, std::int64_t r) {
  const std::int64_t width = t.size(1);
  const std::int32_t* p = t.data<std::int32_t>() + r * width;
  return Row(p, p + width);
}

DataOptions task_options(const std::string& task, std::int64_t n = 0, std::int64_t distractors = 0,
                         std::int64_t vocab = 0) {
  DataOptions o;
  o.kind = "synthetic";
  o.task = task;
  o.n_pairs = n;
  o.n_distractors = distractors;
  o.vocab_size = vocab;
  o.seed = 7;
  return o;
}

bool same_batch(const Batch& a, const Batch& b) {
  return a.x.shape() == b.x.shape() && a.y.shape() == b.y.shape() && a.source.shape() == b.source.shape() &&
         row_of(a.x, 0).size() == row_of(b.x, 0).size() && a.x.to_vector() == b.x.to_vector() &&
         a.y.to_vector() == b.y.to_vector() && a.source.to_vector() == b.source.to_vector();
}

// The target row r spells out: y up to its end token. Checks the layout of x and y around it (start,
// shifted target, end, padding, -1) on the way.
Row checked_target(const Batch& b, std::int64_t r) {
  const Row x = row_of(b.x, r), y = row_of(b.y, r);
  EXPECT_EQ(x.size(), y.size());
  EXPECT_EQ(x[0], kSeq2SeqStart);
  const auto end = std::find(y.begin(), y.end(), kSeq2SeqEnd);
  EXPECT_NE(end, y.end()) << "row " << r << " has no end token";
  const auto n = static_cast<std::size_t>(end - y.begin());
  for (std::size_t t = 0; t < n; ++t) {
    EXPECT_GE(y[t], kSeq2SeqFirstContent);
    EXPECT_EQ(x[t + 1], y[t]);  // teacher forcing: x is y shifted right behind start
  }
  for (std::size_t t = n + 1; t < y.size(); ++t) {
    EXPECT_EQ(y[t], -1);
    EXPECT_EQ(x[t], kSeq2SeqPad);
  }
  return Row(y.begin(), end);
}

// The source row r without its padding (content never uses the pad id).
Row checked_source(const Batch& b, std::int64_t r) {
  const Row s = row_of(b.source, r);
  const auto end = std::find(s.begin(), s.end(), kSeq2SeqPad);
  for (auto it = end; it != s.end(); ++it) EXPECT_EQ(*it, kSeq2SeqPad);
  return Row(s.begin(), end);
}

// --- synthetic tasks ---

TEST(Seq2SeqSynthetic, ReverseTargetIsTheSourceBackwards) {
  auto ds = make_dataset(task_options("reverse", 5), 16);
  EXPECT_TRUE(ds->seq2seq());
  EXPECT_TRUE(ds->reports_accuracy());
  EXPECT_EQ(ds->vocab_size(), 3 + 16);
  EXPECT_EQ(ds->text_codec(), nullptr);
  EXPECT_EQ(ds->describe().find('\n'), std::string::npos);
  EXPECT_TRUE(contains(ds->describe(), "reverse"));
  Generator gen(1);
  Batch b = ds->sample_train(8, 16, gen);
  ASSERT_EQ(b.source.shape(), (Shape{8, 5}));
  ASSERT_EQ(b.x.shape(), (Shape{8, 6}));
  ASSERT_EQ(b.y.shape(), (Shape{8, 6}));
  for (std::int64_t r = 0; r < 8; ++r) {
    const Row source = row_of(b.source, r), target = checked_target(b, r);
    for (std::int32_t t : source) EXPECT_TRUE(t >= kSeq2SeqFirstContent && t < 19) << t;
    EXPECT_EQ(target, Row(source.rbegin(), source.rend()));
    EXPECT_EQ(row_of(b.y, r).back(), kSeq2SeqEnd);  // fixed lengths: every row ends at the last column
  }
}

TEST(Seq2SeqSynthetic, SortTargetIsTheSourceInAscendingOrder) {
  auto ds = make_dataset(task_options("sort", 7, 0, 6), 8);  // 3 content ids: duplicates are certain
  Generator gen(2);
  Batch b = ds->sample_train(16, 8, gen);
  ASSERT_EQ(b.source.shape(), (Shape{16, 7}));
  ASSERT_EQ(b.y.shape(), (Shape{16, 8}));
  bool unsorted_source = false;
  for (std::int64_t r = 0; r < 16; ++r) {
    Row source = row_of(b.source, r);
    const Row target = checked_target(b, r);
    unsorted_source |= !std::is_sorted(source.begin(), source.end());
    std::sort(source.begin(), source.end());
    EXPECT_EQ(target, source);
  }
  EXPECT_TRUE(unsorted_source);
}

TEST(Seq2SeqSynthetic, NoisyCopyDropsExactlyTheDistractors) {
  // Default vocabulary: 3 reserved, 16 content ids [3, 19), 8 distractor ids [19, 27).
  auto ds = make_dataset(task_options("noisy_copy", 4, 6), 12);
  EXPECT_EQ(ds->vocab_size(), 27);
  EXPECT_TRUE(contains(ds->describe(), "4 payload + 6 distractor"));
  Generator gen(3);
  Batch b = ds->sample_train(32, 12, gen);
  ASSERT_EQ(b.source.shape(), (Shape{32, 10}));
  ASSERT_EQ(b.x.shape(), (Shape{32, 5}));
  std::set<Row> patterns;  // where the distractors sit, per row
  for (std::int64_t r = 0; r < 32; ++r) {
    const Row source = row_of(b.source, r), target = checked_target(b, r);
    Row payload, pattern;
    for (std::int32_t t : source) {
      ASSERT_TRUE(t >= kSeq2SeqFirstContent && t < 27) << t;
      pattern.push_back(t >= 19);
      if (t < 19) payload.push_back(t);
    }
    EXPECT_EQ(payload.size(), 4u);
    EXPECT_EQ(target, payload);  // the payload in order, the 6 distractors dropped
    patterns.insert(pattern);
  }
  EXPECT_GT(patterns.size(), 10u);  // random positions, not one fixed pattern
}

TEST(Seq2SeqSynthetic, DefaultsFitTheBlock) {
  // n: min(8, block_size - 1); noisy_copy: as many distractors as payload, both fitting the block.
  auto reverse = make_dataset(task_options("sort"), 32);
  Generator gen(4);
  Batch b = reverse->sample_train(2, 32, gen);
  EXPECT_EQ(b.source.shape(), (Shape{2, 8}));
  EXPECT_EQ(b.x.shape(), (Shape{2, 9}));
  b = make_dataset(task_options("reverse"), 4)->sample_train(2, 4, gen);
  EXPECT_EQ(b.source.shape(), (Shape{2, 3}));
  EXPECT_EQ(b.x.shape(), (Shape{2, 4}));
  b = make_dataset(task_options("noisy_copy"), 32)->sample_train(2, 32, gen);
  EXPECT_EQ(b.source.shape(), (Shape{2, 16}));
  EXPECT_EQ(b.x.shape(), (Shape{2, 9}));
  b = make_dataset(task_options("noisy_copy"), 10)->sample_train(2, 10, gen);
  EXPECT_EQ(b.source.shape(), (Shape{2, 10}));  // 5 + 5
  b = make_dataset(task_options("noisy_copy", 0, 7), 10)->sample_train(2, 10, gen);
  EXPECT_EQ(b.source.shape(), (Shape{2, 10}));  // 3 + 7
  // The decoder-only tasks are not seq2seq.
  EXPECT_FALSE(make_dataset(task_options("copy"), 16)->seq2seq());
  EXPECT_FALSE(make_dataset(task_options("noisy_recall"), 32)->seq2seq());
}

TEST(Seq2SeqSynthetic, SameGeneratorStateSameBatchAndAFixedValSet) {
  for (const char* task : {"reverse", "sort", "noisy_copy"}) {
    SCOPED_TRACE(task);
    auto ds = make_dataset(task_options(task, 5, 3), 16);
    Generator g1(11), g2(11);
    EXPECT_TRUE(same_batch(ds->sample_train(6, 16, g1), ds->sample_train(6, 16, g2)));
    EXPECT_TRUE(same_batch(ds->sample_train(6, 16, g1), ds->sample_train(6, 16, g2)));
    EXPECT_FALSE(same_batch(ds->sample_train(6, 16, g1), ds->sample_train(6, 16, g1)));  // the stream moves on

    EXPECT_EQ(ds->eval_windows(16, 0), 256);
    EXPECT_EQ(ds->eval_windows(16, 40), 40);
    const Batch all = ds->eval_batch(0, 8, 16);
    const Batch part = ds->eval_batch(3, 2, 16);
    for (std::int64_t r = 0; r < 2; ++r) {
      EXPECT_EQ(row_of(part.source, r), row_of(all.source, r + 3));
      EXPECT_EQ(row_of(part.y, r), row_of(all.y, r + 3));
      EXPECT_EQ(row_of(part.x, r), row_of(all.x, r + 3));
    }
    // The same seed gives the same val set whatever training drew; another seed another one.
    EXPECT_TRUE(same_batch(make_dataset(task_options(task, 5, 3), 16)->eval_batch(0, 8, 16), all));
    DataOptions other = task_options(task, 5, 3);
    other.seed = 8;
    EXPECT_FALSE(same_batch(make_dataset(other, 16)->eval_batch(0, 8, 16), all));
  }
}

TEST(Seq2SeqSynthetic, ErrorsNameTheKeys) {
  std::string m = message_of<DataError>([] { make_dataset(task_options("reverse", 10), 8); });
  EXPECT_TRUE(contains(m, "data.n_pairs")) << m;
  EXPECT_TRUE(contains(m, "model.block_size >= 11, got 8")) << m;
  EXPECT_TRUE(contains(message_of<DataError>([] { make_dataset(task_options("sort", 8), 8); }), ">= 9"));
  m = message_of<DataError>([] { make_dataset(task_options("noisy_copy", 4, 5), 8); });
  EXPECT_TRUE(contains(m, "4 + 5 tokens (data.n_pairs + data.n_distractors)")) << m;
  EXPECT_TRUE(contains(m, ">= 9, got 8")) << m;
  m = message_of<DataError>([] { make_dataset(task_options("reverse"), 1); });
  EXPECT_TRUE(contains(m, "model.block_size")) << m;
  // A dataset made for one block does not silently serve a smaller one.
  auto ds = make_dataset(task_options("reverse", 6), 8);
  Generator gen(1);
  EXPECT_TRUE(contains(message_of<DataError>([&] { ds->sample_train(2, 6, gen); }), "data.n_pairs"));
  EXPECT_TRUE(contains(message_of<DataError>([&] { ds->eval_batch(0, 2, 6); }), "data.n_pairs"));
  // Vocabularies too small for the reserved ids plus content (and distractors).
  m = message_of<DataError>([] { make_dataset(task_options("reverse", 2, 0, 4), 8); });
  EXPECT_TRUE(contains(m, "data.vocab_size 4 is too small")) << m;
  EXPECT_NO_THROW(make_dataset(task_options("reverse", 2, 0, 5), 8));
  m = message_of<DataError>([] { make_dataset(task_options("noisy_copy", 2, 2, 5), 8); });
  EXPECT_TRUE(contains(m, "data.vocab_size 5 is too small")) << m;
  EXPECT_NO_THROW(make_dataset(task_options("noisy_copy", 2, 2, 6), 8));
  m = message_of<DataError>([] { make_dataset(task_options("reverso"), 8); });
  EXPECT_TRUE(contains(m, "reverse, sort or noisy_copy")) << m;
}

// --- exact match ---

// Logits [rows, width, vocab] whose argmax at (r, t) is argmax[r][t] (all others 0).
Tensor logits_with_argmax(const std::vector<Row>& argmax, std::int64_t vocab, DType dtype = DType::f32) {
  const auto rows = static_cast<std::int64_t>(argmax.size()), width = static_cast<std::int64_t>(argmax[0].size());
  std::vector<double> v(static_cast<std::size_t>(rows * width * vocab), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t t = 0; t < width; ++t) v[static_cast<std::size_t>((r * width + t) * vocab + argmax[r][t])] = 1.0;
  return Tensor::from(v, {rows, width, vocab}, dtype);
}

Batch targets(const std::vector<Row>& y) {
  const auto rows = static_cast<std::int64_t>(y.size()), width = static_cast<std::int64_t>(y[0].size());
  Batch b{Tensor::empty({rows, width}, DType::i32), Tensor::empty({rows, width}, DType::i32)};
  for (std::int64_t r = 0; r < rows; ++r) std::copy(y[r].begin(), y[r].end(), b.y.data<std::int32_t>() + r * width);
  return b;
}

TEST(Seq2SeqExactMatch, CountsRowsRightAtEveryTarget) {
  const Batch b = targets({{3, 4, 2, -1}, {5, 2, -1, -1}, {-1, -1, -1, -1}});
  // All right; the ignored positions predict anything.
  EXPECT_DOUBLE_EQ(Dataset::exact_match(logits_with_argmax({{3, 4, 2, 0}, {5, 2, 6, 1}, {0, 1, 2, 3}}, 7), b), 1.0);
  // One wrong token makes its row wrong, not half right.
  EXPECT_DOUBLE_EQ(Dataset::exact_match(logits_with_argmax({{3, 5, 2, 0}, {5, 2, 6, 1}, {0, 1, 2, 3}}, 7), b), 0.5);
  EXPECT_DOUBLE_EQ(Dataset::exact_match(logits_with_argmax({{3, 4, 0, 0}, {5, 3, 6, 1}, {0, 1, 2, 3}}, 7), b), 0.0);
  // Any floating dtype.
  EXPECT_DOUBLE_EQ(
      Dataset::exact_match(logits_with_argmax({{3, 4, 2, 0}, {5, 6, 6, 1}, {0, 1, 2, 3}}, 7, DType::f64), b), 0.5);
  EXPECT_DOUBLE_EQ(
      Dataset::exact_match(logits_with_argmax({{3, 4, 2, 0}, {5, 2, 6, 1}, {0, 1, 2, 3}}, 7, DType::bf16), b), 1.0);
  // Per token the same logits are 4 of 5 right: answer_accuracy and exact_match differ.
  const Tensor one_wrong = logits_with_argmax({{3, 5, 2, 0}, {5, 2, 6, 1}, {0, 1, 2, 3}}, 7);
  EXPECT_DOUBLE_EQ(Dataset::answer_accuracy(one_wrong, b), 0.8);
}

TEST(Seq2SeqExactMatch, NoTargetsTiesAndShapes) {
  const Batch none = targets({{-1, -1}, {-1, -1}});
  EXPECT_DOUBLE_EQ(Dataset::exact_match(logits_with_argmax({{0, 1}, {1, 0}}, 3), none), 0.0);
  // All-equal logits: ties go to the lowest id.
  const Tensor flat = Tensor::zeros({1, 2, 4}, DType::f32);
  EXPECT_DOUBLE_EQ(Dataset::exact_match(flat, targets({{0, 0}})), 1.0);
  EXPECT_DOUBLE_EQ(Dataset::exact_match(flat, targets({{0, 1}})), 0.0);
  EXPECT_THROW(Dataset::exact_match(Tensor::zeros({1, 3, 4}, DType::f32), targets({{0, 0}})), ShapeError);
  EXPECT_THROW(Dataset::exact_match(Tensor::zeros({2, 2, 4}, DType::f32), targets({{0, 0}})), ShapeError);
  EXPECT_THROW(Dataset::exact_match(Tensor::zeros({2, 4}, DType::f32), targets({{0, 0}})), ShapeError);
}

// --- the byte vocabulary with reserved ids ---

TEST(Seq2SeqByteVocab, PlainArraysReadAsBefore) {
  const std::optional<ByteVocab> v = ByteVocab::from_json("[10,97,98]");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->size(), 3);
  EXPECT_EQ(v->encode("ab\n"), (Row{1, 2, 0}));
  EXPECT_EQ(v->decode({1, 2, 0, 7, -1}), "ab\n??");
  EXPECT_EQ(v->start_token(), 0);
  EXPECT_FALSE(v->reserved(0));
  for (const char* bad : {"", "[]", "[1,1]", "[256]", "[-1]", "[\"a\"]", "{}", "[1.5]", "[null]", "[null,null]"})
    EXPECT_FALSE(ByteVocab::from_json(bad)) << bad;
}

TEST(Seq2SeqByteVocab, NullEntriesAreReservedIds) {
  const std::optional<ByteVocab> v = ByteVocab::from_json("[null,null,null,32,97,98]");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->size(), 6);
  EXPECT_TRUE(v->reserved(0) && v->reserved(1) && v->reserved(2));
  EXPECT_FALSE(v->reserved(3));
  EXPECT_EQ(v->encode("a b"), (Row{4, 3, 5}));
  EXPECT_EQ(v->decode({kSeq2SeqStart, 4, 3, 5, kSeq2SeqEnd, kSeq2SeqPad}), "a b");  // reserved ids are no text
  EXPECT_EQ(v->token_bytes(kSeq2SeqEnd), "");
  EXPECT_EQ(v->decode({6}), "?");
  EXPECT_EQ(token_byte_lengths(*v), (Row{0, 0, 0, 1, 1, 1}));
  EXPECT_FALSE(ByteVocab::from_json("[null,97,97]"));
  EXPECT_THROW(v->encode("c"), ValueError);
}

// --- text pairs ---

DataOptions pair_options(const std::string& path, const std::string& tokenizer = "") {
  DataOptions o;
  o.kind = "pairs";
  o.path = path;
  o.tokenizer = tokenizer;
  return o;
}

// "s<i>" -> "t<i>" style pairs with lengths that vary from line to line.
std::string numbered_pairs(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += std::string(static_cast<std::size_t>(1 + i % 5), 'a' + static_cast<char>(i % 3)) + "\t";
    s += std::string(static_cast<std::size_t>(1 + (i * 3) % 7), 'x' + static_cast<char>(i % 2)) + "\n";
  }
  return s;
}

TEST(Seq2SeqPairs, SplitByteVocabAndEvalOrder) {
  TempDir dir;
  // 10 pairs among blank lines and a CRLF line: 9 train, the last 1 validates.
  write_text(dir.file("p.txt"),
             "ab\tba\n\nabc\tcba\r\nb\tb\nc\tc\na\ta\nbb\tbb\ncc\tcc\n\naa\taa\nca\tac\nhello world\tdlrow olleh");
  auto ds = make_dataset(pair_options(dir.file("p.txt")), 16);
  EXPECT_TRUE(ds->seq2seq());
  EXPECT_TRUE(ds->reports_accuracy());
  EXPECT_EQ(ds->tokenizer(), nullptr);
  // Sorted distinct bytes of the sources and targets: ' ' a b c d e h l o r w.
  EXPECT_EQ(ds->vocab_json(), "[null,null,null,32,97,98,99,100,101,104,108,111,114,119]");
  EXPECT_EQ(ds->vocab_size(), 14);
  EXPECT_TRUE(contains(ds->describe(), "9 train / 1 val pairs")) << ds->describe();
  EXPECT_EQ(ds->eval_windows(16, 0), 1);
  const Batch b = ds->eval_batch(0, 1, 16);
  const std::shared_ptr<const TextCodec> codec = ds->text_codec();
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(checked_source(b, 0), codec->encode("hello world"));  // a source text encodes with the codec
  EXPECT_EQ(codec->decode(checked_target(b, 0)), "dlrow olleh");
  EXPECT_EQ(codec->decode(row_of(b.x, 0)), "dlrow olleh");  // start and padding decode to nothing
  EXPECT_EQ(b.source.shape(), (Shape{1, 11}));
  EXPECT_EQ(b.x.shape(), (Shape{1, 12}));
  EXPECT_THROW(ds->eval_batch(0, 2, 16), ValueError);
  EXPECT_THROW(ds->eval_batch(1, 1, 16), ValueError);

  // 20 pairs: 18 train, 2 val in file order; eval.max_windows caps the count.
  write_text(dir.file("q.txt"), numbered_pairs(20));
  auto q = make_dataset(pair_options(dir.file("q.txt")), 16);
  ASSERT_EQ(q->eval_windows(16, 0), 2);
  EXPECT_EQ(q->eval_windows(16, 1), 1);
  const std::shared_ptr<const TextCodec> qc = q->text_codec();
  const Batch v = q->eval_batch(0, 2, 16);
  EXPECT_EQ(qc->decode(checked_source(v, 0)), "aaaa");  // line 19 (i = 18)
  EXPECT_EQ(qc->decode(checked_target(v, 0)), "xxxxxx");
  EXPECT_EQ(qc->decode(checked_source(v, 1)), "bbbbb");  // line 20 (i = 19)
  EXPECT_EQ(qc->decode(checked_target(v, 1)), "yy");
  // Training draws only the first 18 pairs.
  Generator gen(5);
  for (int k = 0; k < 20; ++k) {
    const Batch t = q->sample_train(4, 16, gen);
    for (std::int64_t r = 0; r < 4; ++r) {
      const std::string s = qc->decode(checked_source(t, r)), tt = qc->decode(checked_target(t, r));
      EXPECT_FALSE(s == "aaaa" && tt == "xxxxxx");
      EXPECT_FALSE(s == "bbbbb" && tt == "yy");
    }
  }

  // Two pairs: one trains, one validates.
  write_text(dir.file("two.txt"), "a\tb\nb\ta\n");
  auto two = make_dataset(pair_options(dir.file("two.txt")), 4);
  EXPECT_EQ(two->eval_windows(4, 0), 1);
  EXPECT_TRUE(contains(two->describe(), "1 train / 1 val")) << two->describe();
}

TEST(Seq2SeqPairs, BatchesArePaddedToTheirLongestSourceAndTarget) {
  TempDir dir;
  write_text(dir.file("p.txt"), numbered_pairs(50));
  auto ds = make_dataset(pair_options(dir.file("p.txt")), 16);
  const std::shared_ptr<const TextCodec> codec = ds->text_codec();
  Generator gen(9), again(9);
  std::set<std::int64_t> widths;
  for (int k = 0; k < 30; ++k) {
    const Batch b = ds->sample_train(3, 16, gen);
    EXPECT_TRUE(same_batch(b, ds->sample_train(3, 16, again)));
    std::int64_t longest_source = 0, longest_target = 0;
    for (std::int64_t r = 0; r < 3; ++r) {
      const Row source = checked_source(b, r), target = checked_target(b, r);
      longest_source = std::max<std::int64_t>(longest_source, static_cast<std::int64_t>(source.size()));
      longest_target = std::max<std::int64_t>(longest_target, static_cast<std::int64_t>(target.size()));
      // Every row is a pair of the file: a run of one letter, then a run of x or y.
      const std::string s = codec->decode(source), t = codec->decode(target);
      EXPECT_EQ(s, std::string(s.size(), s[0]));
      EXPECT_TRUE(t == std::string(t.size(), 'x') || t == std::string(t.size(), 'y')) << t;
    }
    EXPECT_EQ(b.source.size(1), longest_source);
    EXPECT_EQ(b.x.size(1), longest_target + 1);
    widths.insert(b.x.size(1));
  }
  EXPECT_GT(widths.size(), 1u);  // widths vary between batches
}

TEST(Seq2SeqPairs, WithATokenizer) {
  TempDir dir;
  std::string corpus;
  for (int i = 0; i < 200; ++i)
    corpus += "the cat sat on the mat\tle chat est sur le tapis " + std::to_string(i) + "\n";
  write_text(dir.file("corpus.txt"), corpus);
  TokenizerTrainingOptions t;
  t.inputs = {dir.file("corpus.txt")};
  t.vocab_size = 300;
  fs::create_directories(dir.path() / "tok");
  write_text((dir.path() / "tok" / kTokenizerModelFile).string(), train_tokenizer(t).serialized_model);

  write_text(dir.file("p.txt"), corpus);
  auto ds = make_dataset(pair_options(dir.file("p.txt"), (dir.path() / "tok").string()), 64);
  ASSERT_NE(ds->tokenizer(), nullptr);
  EXPECT_EQ(ds->vocab_size(), 300);
  EXPECT_EQ(ds->vocab_json(), "");
  EXPECT_EQ(ds->text_codec(), ds->tokenizer());
  EXPECT_TRUE(contains(ds->describe(), "180 train / 20 val")) << ds->describe();
  const Batch b = ds->eval_batch(0, 2, 64);
  EXPECT_EQ(checked_source(b, 0), ds->tokenizer()->encode("the cat sat on the mat"));
  EXPECT_EQ(ds->tokenizer()->decode(checked_target(b, 1)), "le chat est sur le tapis 181");
  EXPECT_LT(b.source.size(1), 22);  // subwords, not bytes

  // A pair longer than the block in tokens is refused, naming its line.
  std::string m =
      message_of<DataError>([&] { make_dataset(pair_options(dir.file("p.txt"), (dir.path() / "tok").string()), 3); });
  EXPECT_TRUE(contains(m, "p.txt line 1:")) << m;

  // A tokenizer whose ids 0, 1, 2 are not <unk>, <s>, </s> cannot lay out seq2seq data.
  const std::string prefix = (dir.path() / "bad" / "tokenizer").string();
  fs::create_directories(dir.path() / "bad");
  ASSERT_TRUE(sentencepiece::SentencePieceTrainer::Train("--input=" + dir.file("corpus.txt") + " --model_prefix=" +
                                                         prefix + " --model_type=char --vocab_size=30 --bos_id=2" +
                                                         " --eos_id=1 --hard_vocab_limit=false --minloglevel=2")
                  .ok());
  m = message_of<DataError>([&] { make_dataset(pair_options(dir.file("p.txt"), (dir.path() / "bad").string()), 64); });
  EXPECT_TRUE(contains(m, "ids 0, 1, 2 must be <unk>, <s>, </s>")) << m;
  m = message_of<DataError>([&] { make_dataset(pair_options(dir.file("p.txt"), dir.file("missing")), 64); });
  EXPECT_TRUE(contains(m, "missing")) << m;
}

TEST(Seq2SeqPairs, ErrorsNameTheFileAndLine) {
  TempDir dir;
  auto error_for = [&](const std::string& text, std::int64_t block_size = 16) {
    write_text(dir.file("p.txt"), text);
    return message_of<DataError>([&] { make_dataset(pair_options(dir.file("p.txt")), block_size); });
  };
  const std::string file = "pairs file " + dir.file("p.txt");
  EXPECT_EQ(error_for("a\tb\n\nno tab here\nc\td\n"), file + " line 3: no tab between source and target");
  EXPECT_EQ(error_for("a\tb\n\tb\n"), file + " line 2: the source (before the tab) is empty");
  EXPECT_EQ(error_for("a\tb\nc\td\ne\t\r\n"), file + " line 3: the target (after the tab) is empty");
  EXPECT_TRUE(contains(error_for("\n\na\tb\n\n"), "has 1 source<TAB>target line(s): it needs at least 2"));
  EXPECT_TRUE(contains(error_for(""), "has 0 source<TAB>target line(s)"));
  // Too long for the block: the source, or the target with its end token. Never truncated.
  std::string m = error_for("a\tb\nabcde\tb\nc\td\n", 4);
  EXPECT_TRUE(contains(m, file + " line 2: the source is 5 tokens")) << m;
  EXPECT_TRUE(contains(m, "model.block_size 4")) << m;
  m = error_for("a\tb\nc\td\n\nab\tabcd\n", 4);
  EXPECT_TRUE(contains(m, file + " line 4: the source is 2 tokens and the target 4 + end")) << m;
  EXPECT_NO_THROW(make_dataset(pair_options(dir.file("p.txt")), 5));
  // A dataset made for one block refuses a smaller one the same way.
  auto ds = make_dataset(pair_options(dir.file("p.txt")), 5);
  Generator gen(1);
  EXPECT_TRUE(contains(message_of<DataError>([&] { ds->sample_train(2, 4, gen); }), "line 4"));

  EXPECT_TRUE(contains(message_of<DataError>([&] { make_dataset(pair_options(dir.file("none.txt")), 8); }),
                       dir.file("none.txt")));
  EXPECT_TRUE(contains(message_of<DataError>([&] { make_dataset(pair_options(""), 8); }), "data.path is empty"));
  // data.tokenizer belongs to pairs only.
  DataOptions text;
  text.kind = "text";
  text.path = dir.file("p.txt");
  text.tokenizer = "tok";
  // A setting that means nothing for the kind: a config error (exit 2), not a data error (exit 3).
  EXPECT_TRUE(contains(message_of<ValueError>([&] { make_dataset(text, 4); }), "only data.kind pairs uses it"));
}

// --- config keys ---

TEST(Seq2SeqPairs, ConfigKeysReachDataOptions) {
  const Config defaults = Config::defaults();
  EXPECT_EQ(defaults.get_string("data.tokenizer"), "");
  const Config c = Config::from_string("data: {kind: pairs, path: p.txt, tokenizer: tok}");
  const DataOptions o = recipes::data_options(c);
  EXPECT_EQ(o.kind, "pairs");
  EXPECT_EQ(o.path, "p.txt");
  EXPECT_EQ(o.tokenizer, "tok");
  for (const char* task : {"reverse", "sort", "noisy_copy"})
    EXPECT_EQ(recipes::data_options(Config::from_string("", {std::string("data.task=") + task})).task, task);
}

}  // namespace
}  // namespace gattn

// data.task mqar (framework/data/mqar_dataset.cpp): the layout of a sequence (the pairs first, every
// key asked once after them with its value as the answer), the id ranges, the power law of the
// query distances, deterministic validation rows, the sizes that do not fit, and sequences up to
// 4096 tokens.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "framework/data/dataset.h"
#include "test_util.h"

namespace gattn {
namespace {

DataOptions mqar(std::int64_t vocab, std::int64_t pairs) {
  DataOptions o;
  o.kind = "synthetic";
  o.task = "mqar";
  o.vocab_size = vocab;
  o.n_pairs = pairs;
  o.seed = 7;
  return o;
}

struct RowCheck {
  std::int64_t answers = 0;
  std::vector<std::int64_t> slots;  // each query's slot in the query region
};

// Checks one row of T inputs and targets with n pairs over a vocabulary of V; returns its queries.
RowCheck check_row(const std::int32_t* x, const std::int32_t* y, std::int64_t T, std::int64_t n, std::int64_t V) {
  const std::int64_t K = (V - 1) / 2;  // key ids [1, 1 + K), value ids [1 + K, V)
  std::map<std::int32_t, std::int32_t> value_of;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t k = x[2 * i], v = x[2 * i + 1];
    EXPECT_GE(k, 1);
    EXPECT_LT(k, 1 + K);
    EXPECT_GE(v, 1 + K);
    EXPECT_LT(v, V);
    EXPECT_TRUE(value_of.emplace(k, v).second) << "key " << k << " twice";
    EXPECT_EQ(y[2 * i], -1);
    EXPECT_EQ(y[2 * i + 1], -1);
  }
  RowCheck out;
  std::set<std::int32_t> asked;
  for (std::int64_t t = 2 * n; t < T; ++t) {
    if (y[t] < 0) {
      // Outside the answers: pads, or a query key (whose target is its value) or an answer's input.
      continue;
    }
    ++out.answers;
    const std::int32_t key = x[t];
    EXPECT_EQ((t - 2 * n) % 2, 0) << "a query at an odd offset";
    if (!value_of.count(key)) {
      ADD_FAILURE() << "query " << key << " is no key of the row";
      continue;
    }
    EXPECT_EQ(y[t], value_of[key]);
    EXPECT_TRUE(asked.insert(key).second) << "key " << key << " asked twice";
    if (t + 1 < T) {
      EXPECT_EQ(x[t + 1], y[t]);  // the answer is the next input too
    }
    out.slots.push_back((t - 2 * n) / 2);
  }
  // The rest of the query region is pads.
  for (std::int64_t t = 2 * n; t < T; ++t)
    if (y[t] < 0 && y[t - 1] < 0) {
      EXPECT_EQ(x[t], 0) << "position " << t;
    }
  return out;
}

TEST(Mqar, EveryKeyAskedOnceWithItsValue) {
  const std::int64_t T = 255, n = 16, V = 128;  // sequences of 256 tokens
  auto ds = make_dataset(mqar(V, n), T);
  EXPECT_EQ(ds->vocab_size(), V);
  EXPECT_TRUE(ds->reports_accuracy());
  EXPECT_NE(ds->describe().find("16 key-value pairs"), std::string::npos) << ds->describe();
  Generator gen(3);
  Batch b = ds->sample_train(8, T, gen);
  for (int r = 0; r < 8; ++r) {
    const RowCheck c = check_row(b.x.data<std::int32_t>() + r * T, b.y.data<std::int32_t>() + r * T, T, n, V);
    // The last slot's answer falls on the sequence's final token (the target of x[T−1]): all n
    // answers are predicted.
    EXPECT_EQ(c.answers, n);
  }
}

TEST(Mqar, QueryDistancesFollowThePowerLaw) {
  // Weights s^(−0.99) over 1000 slots: about 90 % of the mass in the first half, yet the far half is
  // reached.
  const std::int64_t T = 2063, n = 8;  // 2064 tokens: 1024 slots after the pairs
  auto ds = make_dataset(mqar(64, n), T);
  Generator gen(11);
  std::int64_t near = 0, far = 0;
  const std::int64_t slots = (T + 1 - 2 * n) / 2;
  for (int batch = 0; batch < 8; ++batch) {
    Batch b = ds->sample_train(8, T, gen);
    for (int r = 0; r < 8; ++r)
      for (std::int64_t s :
           check_row(b.x.data<std::int32_t>() + r * T, b.y.data<std::int32_t>() + r * T, T, n, 64).slots)
        (s < slots / 2 ? near : far) += 1;
  }
  EXPECT_EQ(near + far, 8 * 8 * n);
  EXPECT_GT(near, 3 * far) << near << " near, " << far << " far";
  EXPECT_GT(far, 0);
}

TEST(Mqar, ValidationRowsAreFixedAndLongSequencesWork) {
  auto ds = make_dataset(mqar(8192, 0), 4095);  // n_pairs 0: one per 16 tokens, 256
  EXPECT_NE(ds->describe().find("256 key-value pairs"), std::string::npos) << ds->describe();
  Batch a = ds->eval_batch(3, 2, 4095), b = ds->eval_batch(4, 1, 4095);
  EXPECT_EQ(a.x.size(1), 4095);
  for (std::int64_t t = 0; t < 4095; ++t) {
    EXPECT_EQ(a.x.data<std::int32_t>()[4095 + t], b.x.data<std::int32_t>()[t]);
    EXPECT_EQ(a.y.data<std::int32_t>()[4095 + t], b.y.data<std::int32_t>()[t]);
  }
  const RowCheck c = check_row(b.x.data<std::int32_t>(), b.y.data<std::int32_t>(), 4095, 256, 8192);
  EXPECT_EQ(c.answers, 256);
  // Another data seed gives other rows.
  DataOptions other = mqar(8192, 0);
  other.seed = 8;
  EXPECT_FALSE(
      test::all_close(make_dataset(other, 4095)->eval_batch(4, 1, 4095).x.to(DType::f64), b.x.to(DType::f64), 0, 0));
}

TEST(Mqar, SizesThatDoNotFitNameTheKey) {
  // 4 tokens per pair: 64 pairs fit 256 tokens, 65 do not.
  EXPECT_NO_THROW(make_dataset(mqar(512, 64), 255));
  std::string msg = test::error_of([] { make_dataset(mqar(512, 65), 255); });
  EXPECT_NE(msg.find("data.n_pairs 65"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at most 64"), std::string::npos) << msg;
  EXPECT_THROW(make_dataset(mqar(512, 65), 255), ValueError);  // exit 2, a setting
  msg = test::error_of([] { make_dataset(mqar(40, 32), 255); });
  EXPECT_NE(msg.find("data.vocab_size 40"), std::string::npos) << msg;
  // A dataset made for a long block refuses a shorter one it does not fit.
  auto ds = make_dataset(mqar(512, 32), 255);
  EXPECT_NE(test::error_of([&] { ds->eval_batch(0, 1, 64); }).find("data.n_pairs 32"), std::string::npos);
}

}  // namespace
}  // namespace gattn

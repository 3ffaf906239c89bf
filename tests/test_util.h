// Helpers shared by the test suites: seeded random tensors and element-wise comparisons.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd/gradcheck.h"
#include "core/tensor/random.h"
#include "core/tensor/tensor.h"

namespace gattn::test {

// Uniform values in [low, high) from a fixed seed: the same tensor on every run.
inline Tensor rand(const Shape& shape, std::uint64_t seed, double low = -1.0, double high = 1.0,
                   DType dtype = DType::f64) {
  Tensor t = Tensor::empty(shape, dtype);
  Generator g(seed);
  g.uniform_(t, low, high);
  return t;
}

inline Tensor randn(const Shape& shape, std::uint64_t seed, double std = 1.0, DType dtype = DType::f64) {
  Tensor t = Tensor::empty(shape, dtype);
  Generator g(seed);
  g.normal_(t, 0.0, std);
  return t;
}

// Expects equal shapes and |a - b| <= atol + rtol |b| everywhere; reports the first mismatch.
inline ::testing::AssertionResult all_close(const Tensor& a, const Tensor& b, double atol = 1e-6, double rtol = 1e-5) {
  if (a.shape() != b.shape())
    return ::testing::AssertionFailure() << "shapes differ: " << shape_str(a.shape()) << " vs " << shape_str(b.shape());
  std::vector<double> va = a.to_vector(), vb = b.to_vector();
  for (std::size_t i = 0; i < va.size(); ++i) {
    double tol = atol + rtol * std::abs(vb[i]);
    if (!(std::abs(va[i] - vb[i]) <= tol))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << va[i] << " vs " << vb[i] << " (tol " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

// gradcheck as a gtest assertion with the report attached.
inline ::testing::AssertionResult grads_ok(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                           const std::vector<Tensor>& inputs, const GradcheckOptions& opt = {},
                                           const std::vector<int>& no_grad_inputs = {}) {
  auto r = gradcheck(f, inputs, opt, no_grad_inputs);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.report;
}

// The message of the gattn::Error that f throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The message of the E that f throws, or "" with a test failure when it throws none or another kind.
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another kind of error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

inline ::testing::AssertionResult contains(const std::string& text, const std::string& needle) {
  if (text.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << needle << "' not in: " << text;
}

// Writes `text` to `path` as it is (replacing the file).
inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// The whole content of a file, bytes as they are ("" when it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory per test (named after the test and the process), removed afterwards even when
// a test left it read-only.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("gattn_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace gattn::test

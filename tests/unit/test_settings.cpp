// The generic config machinery on a schema of its own (not the run schema): the Schema's lookups
// and its refusal of an ambiguous table, and the Rules an application passes to Settings (two
// exclusive forms of one setting, the whole-config hook and where its errors point).
#include <gtest/gtest.h>

#include <stdexcept>

#include "framework/config/schema.h"
#include "framework/config/settings.h"
#include "test_util.h"

namespace gattn {

namespace {

using config::Rules;
using config::Schema;
using config::Settings;

const Schema& toy_schema() {
  static const Schema schema({
      config::int_key("size", 4, "a size").greater_than(0),
      config::int_key("shape.width", 2, "a width").at_least(1),
      config::choice_key("shape.one.mode", "a", {"a", "b"}, "one shape's mode"),
      config::int_key("shape.one.count", 1, "one shape's count").at_least(0),
      config::map_list_key("shape.many", "shape entries", "{mode: ...}", "several shapes"),
  });
  return schema;
}

// shape.one.* and shape.many replace each other; the hook refuses width > size.
Rules toy_rules() {
  Rules r;
  r.exclusive_forms = {{"shape.one", "shape.many", "keep one"}};
  r.validate = [](const Settings& s) {
    if (s.get_int("shape.width") > s.get_int("size")) throw ValueError("shape.width: must be <= size");
    if (s.get_int("shape.one.count") == 7) throw ConfigError("seven: refused as is");
  };
  return r;
}

Settings toy(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return Settings::from_string(toy_schema(), toy_rules(), yaml, overrides, "toy.yaml");
}

}  // namespace

TEST(ConfigSchemaClass, LooksUpKeysAndSections) {
  const Schema& s = toy_schema();
  ASSERT_NE(s.find("shape.one.mode"), nullptr);
  EXPECT_EQ(s.find("shape.one.mode")->choices, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.find("shape.one"), nullptr);
  EXPECT_TRUE(s.is_section("shape"));
  EXPECT_TRUE(s.is_section("shape.one"));
  EXPECT_FALSE(s.is_section("shape.one.mode"));
  EXPECT_FALSE(s.is_section(""));
  EXPECT_EQ(s.closest_key("shape.one.mod"), "shape.one.mode");
  EXPECT_EQ(s.closest_key("shap"), "shape");
  EXPECT_EQ(s.keys().size(), 5u);
}

TEST(ConfigSchemaClass, RefusesAnAmbiguousTable) {
  EXPECT_THROW(Schema({config::int_key("a", 1, ""), config::int_key("a", 2, "")}), std::invalid_argument);
  EXPECT_THROW(Schema({config::int_key("a", 1, ""), config::int_key("a.b", 2, "")}), std::invalid_argument);
}

TEST(ConfigSettings, ExclusiveFormsAreGenericRules) {
  const std::string msg =
      test::message_of<ConfigError>([] { toy("shape:\n  one:\n    mode: b\n  many:\n    - {mode: a}\n"); });
  EXPECT_EQ(msg, "toy.yaml:3: shape.one and shape.many are both given (shape.many at toy.yaml:4): keep one");
  // At its default, or beside an empty list, a shorthand key does not clash.
  EXPECT_NO_THROW(toy("shape:\n  one:\n    mode: a\n  many:\n    - {mode: b}\n"));
  EXPECT_NO_THROW(toy("shape:\n  one:\n    mode: b\n  many: []\n"));
  // An override of one form puts the other back to its defaults.
  Settings a = toy("shape:\n  one:\n    mode: b\n    count: 3\n", {"shape.many=[{mode: a}]"});
  EXPECT_EQ(a.get_string("shape.one.mode"), "a");
  EXPECT_EQ(a.get_int("shape.one.count"), 1);
  EXPECT_FALSE(a.set_by_user("shape.one.mode"));
  EXPECT_EQ(a.value("shape.many").size(), 1u);
  Settings b = toy("shape:\n  many:\n    - {mode: a}\n", {"shape.one.count=2"});
  EXPECT_TRUE(b.value("shape.many").empty());
  EXPECT_EQ(b.where("shape.many"), "toy.yaml");
  // The map list's shape errors use the names the schema gave its items.
  EXPECT_EQ(test::message_of<ConfigError>([] { toy("shape:\n  many: 3\n"); }),
            "toy.yaml:2: shape.many must be a list of shape entries ({mode: ...}), got 3");
}

TEST(ConfigSettings, TheHookErrorsPointAtTheKeyTheUserSet) {
  // A ValueError names the key; the message points at the first key it names that the user set.
  EXPECT_EQ(test::message_of<ConfigError>([] { toy("size: 1\n"); }), "toy.yaml:1: shape.width: must be <= size");
  EXPECT_EQ(test::message_of<ConfigError>([] { toy("", {"shape.width=9"}); }),
            "override 'shape.width=9': shape.width: must be <= size");
  // A ConfigError passes through as it is.
  EXPECT_EQ(test::message_of<ConfigError>([] { toy("", {"shape.one.count=7"}); }), "seven: refused as is");
  // No rules: only the schema's checks.
  EXPECT_EQ(Settings::from_string(toy_schema(), Rules{}, "size: 1\n").get_int("size"), 1);
  EXPECT_EQ(Settings::defaults(toy_schema(), Rules{}).to_yaml(),
            "size: 4\nshape:\n  width: 2\n  one:\n    mode: a\n    count: 1\n  many: []\n");
}

}  // namespace gattn

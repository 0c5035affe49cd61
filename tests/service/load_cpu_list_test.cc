// posewire-load's --cpus: parsing CPU lists, formatting them back, and
// confining a thread (and the threads it starts) to one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <thread>

#include "clients/load/cpu_list.h"

namespace posewire::load {
namespace {

using ::testing::HasSubstr;

cpu_set_t Cpus(std::initializer_list<int> list) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : list) CPU_SET(cpu, &cpus);
  return cpus;
}

const cpu_set_t kEight = Cpus({0, 1, 2, 3, 4, 5, 6, 7});

bool Same(const cpu_set_t& a, const cpu_set_t& b) { return CPU_EQUAL(&a, &b); }

TEST(CpuListTest, ParsesNumbersAndRanges) {
  auto one = ParseCpuList("1", kEight);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(Same(*one, Cpus({1})));

  auto mixed = ParseCpuList("0,2-4,7", kEight);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_TRUE(Same(*mixed, Cpus({0, 2, 3, 4, 7})));
  EXPECT_EQ(FormatCpuList(*mixed), "0,2-4,7");

  auto single_range = ParseCpuList("5-5", kEight);
  ASSERT_TRUE(single_range.ok()) << single_range.status();
  EXPECT_EQ(FormatCpuList(*single_range), "5");
}

TEST(CpuListTest, FormatsRuns) {
  EXPECT_EQ(FormatCpuList(kEight), "0-7");
  EXPECT_EQ(FormatCpuList(Cpus({1, 3, 4})), "1,3-4");
  EXPECT_EQ(FormatCpuList(Cpus({})), "");
}

TEST(CpuListTest, RejectsMalformedListsNamingTheItem) {
  struct Case {
    const char* list;
    const char* message;
  };
  for (const Case& c : {
           Case{"", "empty"},
           Case{"x", "'x' is not a CPU number"},
           Case{"1,,2", "'' is not a CPU number"},
           Case{"1,", "'' is not a CPU number"},
           Case{"-1", "'-1' is not a CPU number"},
           Case{"2-", "'2-' is not a CPU number"},
           Case{"1-2-3", "'1-2-3' is not a CPU number"},
           Case{"3-1", "'3-1' is a range that runs backwards"},
           Case{"99999", "'99999' is not a CPU number"},
       }) {
    auto parsed = ParseCpuList(c.list, kEight);
    ASSERT_FALSE(parsed.ok()) << "'" << c.list << "' was accepted";
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.message)) << c.list;
  }
}

TEST(CpuListTest, RejectsCpusTheProcessCannotUse) {
  auto parsed = ParseCpuList("1,9", Cpus({0, 1, 2}));
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(),
              HasSubstr("CPU 9 is not available to this process "
                        "(available: 0-2)"));
}

// The confinement --cpus relies on: a thread started after it inherits the
// set, and the confining thread gets its CPUs back afterwards.
TEST(CpuListTest, ThreadsStartedWhileConfinedInheritTheSet) {
  auto all = ThreadAffinity();
  ASSERT_TRUE(all.ok()) << all.status();
  int first = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; ++cpu) {
    if (CPU_ISSET(cpu, &*all)) first = cpu;
  }
  ASSERT_GE(first, 0);
  const cpu_set_t one = Cpus({first});

  ASSERT_TRUE(SetThreadAffinity(one).ok());
  cpu_set_t inherited;
  CPU_ZERO(&inherited);
  std::thread([&] {
    auto mine = ThreadAffinity();
    ASSERT_TRUE(mine.ok());
    inherited = *mine;
  }).join();
  EXPECT_TRUE(Same(inherited, one)) << FormatCpuList(inherited);

  ASSERT_TRUE(SetThreadAffinity(*all).ok());
  auto restored = ThreadAffinity();
  ASSERT_TRUE(restored.ok());
  EXPECT_TRUE(Same(*restored, *all)) << FormatCpuList(*restored);
}

}  // namespace
}  // namespace posewire::load

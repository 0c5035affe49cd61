#include "clients/load/cpu_list.h"

#include <pthread.h>

#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace posewire::load {
namespace {

absl::StatusOr<int> ParseCpu(absl::string_view text, absl::string_view item) {
  int cpu = 0;
  if (!absl::SimpleAtoi(text, &cpu) || cpu < 0 || cpu >= CPU_SETSIZE) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", item, "' is not a CPU number or a range such as 2-3"));
  }
  return cpu;
}

}  // namespace

absl::StatusOr<cpu_set_t> ParseCpuList(absl::string_view list,
                                       const cpu_set_t& available) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (list.empty()) {
    return absl::InvalidArgumentError("an empty CPU list");
  }
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    const std::vector<absl::string_view> ends =
        absl::StrSplit(item, absl::MaxSplits('-', 1));
    absl::StatusOr<int> first = ParseCpu(ends[0], item);
    if (!first.ok()) return first.status();
    absl::StatusOr<int> last =
        ends.size() == 2 ? ParseCpu(ends[1], item) : first;
    if (!last.ok()) return last.status();
    if (*last < *first) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", item, "' is a range that runs backwards"));
    }
    for (int cpu = *first; cpu <= *last; ++cpu) {
      if (!CPU_ISSET(cpu, &available)) {
        return absl::InvalidArgumentError(
            absl::StrCat("CPU ", cpu,
                         " is not available to this process "
                         "(available: ",
                         FormatCpuList(available), ")"));
      }
      CPU_SET(cpu, &cpus);
    }
  }
  return cpus;
}

std::string FormatCpuList(const cpu_set_t& cpus) {
  std::vector<std::string> ranges;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &cpus)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &cpus)) ++last;
    ranges.push_back(last == cpu ? absl::StrCat(cpu)
                                 : absl::StrCat(cpu, "-", last));
    cpu = last;
  }
  return absl::StrJoin(ranges, ",");
}

absl::StatusOr<cpu_set_t> ThreadAffinity() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (const int error =
          pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus);
      error != 0) {
    return absl::InternalError(
        absl::StrCat("pthread_getaffinity_np: ", std::strerror(error)));
  }
  return cpus;
}

absl::Status SetThreadAffinity(const cpu_set_t& cpus) {
  if (const int error =
          pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
      error != 0) {
    return absl::InternalError(absl::StrCat("pthread_setaffinity_np(",
                                            FormatCpuList(cpus),
                                            "): ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace posewire::load

#include "proto/program.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "proto/version.h"

namespace posewire {
namespace {

constexpr size_t kHelpWidth = 80;
constexpr absl::string_view kHelpIndent = "      ";

// A flag's source file relative to the source tree. The programs are built
// with -fmacro-prefix-map (proto/CMakeLists.txt), so their own files already
// are; this catches a build without it, where __FILE__ is absolute and would
// show the build machine's path: everything before the last of our
// top-level folders goes. Other files (Abseil's "./absl/...") stay.
std::string NormalizeFilename(absl::string_view file) {
  size_t start = absl::string_view::npos;
  for (absl::string_view top :
       {"/clients/", "/server/", "/proto/", "/solver_core/"}) {
    const size_t at = file.rfind(top);
    if (at != absl::string_view::npos &&
        (start == absl::string_view::npos || at > start)) {
      start = at + 1;
    }
  }
  return std::string(start == absl::string_view::npos ? file
                                                      : file.substr(start));
}

// Appends `text` wrapped at kHelpWidth, each line indented.
void AppendWrapped(std::string* out, absl::string_view text) {
  size_t column = 0;
  for (absl::string_view word :
       absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    if (column > 0 && column + 1 + word.size() > kHelpWidth) {
      out->push_back('\n');
      column = 0;
    }
    if (column == 0) {
      absl::StrAppend(out, kHelpIndent, word);
      column = kHelpIndent.size() + word.size();
    } else {
      absl::StrAppend(out, " ", word);
      column += 1 + word.size();
    }
  }
  out->push_back('\n');
}

// "  --server="127.0.0.1:50051"" and the meaning below it: how to write the
// flag, its default and what it does.
void AppendFlag(std::string* out, const absl::CommandLineFlag& flag) {
  const std::string value = flag.IsOfType<std::string>()
                                ? absl::StrCat("\"", flag.DefaultValue(), "\"")
                                : flag.DefaultValue();
  absl::StrAppend(out, "  --", flag.Name(), "=", value, "\n");
  AppendWrapped(out, flag.Help());
}

// --help (or -help) before any "--": Abseil's own --help lists flags too,
// but exits 1, and a request for help is not a failure.
bool AsksForHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-help") return true;
  }
  return false;
}

bool IsPort(absl::string_view text, PortZero port_zero) {
  int port = 0;
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), absl::ascii_isdigit) &&
         absl::SimpleAtoi(text, &port) && port <= 65535 &&
         (port > 0 || port_zero == PortZero::kAllowed);
}

}  // namespace

std::string VersionLine(absl::string_view program_name) {
  return absl::StrCat(program_name, " ", kVersion, " (revision ", kGitRevision,
                      ")");
}

std::string ProgramHelp(const Program& program) {
  std::vector<const absl::CommandLineFlag*> own;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!flag->IsRetired() &&
        absl::StartsWith(flag->Filename(), program.flags_folder)) {
      own.push_back(flag);
    }
  }
  std::sort(own.begin(), own.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string help =
      absl::StrCat(program.name, ": ", program.usage, "\n\nFlags:\n");
  for (const absl::CommandLineFlag* flag : own) AppendFlag(&help, *flag);
  absl::StrAppend(&help, "  --help\n", kHelpIndent,
                  "Print this help and exit 0.\n", "  --version\n", kHelpIndent,
                  "Print the version and git revision and exit 0.\n",
                  "  --helpfull\n", kHelpIndent,
                  "List every flag, the libraries' too.\n\n",
                  program.exit_codes, "\n");
  return help;
}

std::vector<char*> ParseProgramFlags(int argc, char** argv,
                                     const Program& program) {
  absl::SetProgramUsageMessage(program.usage);
  const std::string folder(program.flags_folder);
  const std::string name(program.name);
  auto own_file = [folder](absl::string_view file) {
    return absl::StartsWith(file, folder);
  };
  absl::FlagsUsageConfig config;
  config.contains_helpshort_flags = own_file;
  config.contains_help_flags = own_file;
  config.contains_helppackage_flags = own_file;
  config.version_string = [name] { return VersionLine(name) + "\n"; };
  config.normalize_filename = NormalizeFilename;
  absl::SetFlagsUsageConfig(config);
  if (AsksForHelp(argc, argv)) {
    std::cout << ProgramHelp(program) << std::flush;
    std::exit(0);
  }
  return absl::ParseCommandLine(argc, argv);
}

absl::Status CheckHostPort(absl::string_view flag, absl::string_view address,
                           PortZero port_zero) {
  if (absl::StartsWith(address, "unix:") ||
      absl::StartsWith(address, "unix-abstract:")) {
    return absl::OkStatus();
  }
  const std::string example =
      port_zero == PortZero::kAllowed
          ? "e.g. 127.0.0.1:50051, 0.0.0.0:50051 for every interface, or "
            "port 0 for any free port"
          : "e.g. 127.0.0.1:50051";
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", address, ": ", why, "; write HOST:PORT, ", example));
  };
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos) return refuse("no port");
  const absl::string_view host = address.substr(0, colon);
  const absl::string_view port = address.substr(colon + 1);
  if (host.empty()) return refuse("no host");
  const bool bracketed = host.front() == '[' && host.back() == ']';
  if (!bracketed && absl::StrContains(host, ':')) {
    return refuse("no port, or an IPv6 address without brackets ([::1]:PORT)");
  }
  if (!IsPort(port, port_zero)) {
    return refuse(absl::StrCat("port '", port, "' is not in [",
                               port_zero == PortZero::kAllowed ? 0 : 1,
                               ", 65535]"));
  }
  return absl::OkStatus();
}

absl::string_view AddressHost(absl::string_view address) {
  absl::string_view host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

absl::string_view AddressPort(absl::string_view address) {
  return address.substr(address.rfind(':') + 1);
}

}  // namespace posewire

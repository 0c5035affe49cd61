// Field names for error messages, built only when an error needs one.
//
// Every wire conversion takes the name of the field it converts
// ("frame.characters[3].ops[1].two_bone_ik.target") so that its error says
// where the problem is. Building every such name with StrCat cost an
// allocation per field of every op of every character, for messages nobody
// reads when the input is good: about a fifth of a batch-loaded server's
// instructions (callgrind, docs/PERFORMANCE.md).
#ifndef POSEWIRE_SERVER_WIRE_FIELD_NAME_H_
#define POSEWIRE_SERVER_WIRE_FIELD_NAME_H_

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace posewire::server {

// Runs `convert(field)` (returning absl::Status or absl::StatusOr) with an
// empty field name, and only if that fails runs it again with the name
// `base` + `leaf`. The converters are pure (or idempotent), so the result
// and the error are exactly those of a single call with the full name.
template <typename Convert>
auto NamedOnError(absl::string_view base, absl::string_view leaf,
                  Convert convert) {
  auto result = convert(absl::string_view());
  if (!result.ok()) result = convert(absl::StrCat(base, leaf));
  return result;
}

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_WIRE_FIELD_NAME_H_

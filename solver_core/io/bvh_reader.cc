#include "solver_core/io/bvh_reader.h"

#include <Eigen/Geometry>
#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/deterministic_math.h"
#include "solver_core/model/skeleton.h"

namespace posewire {
namespace {

// A generous cap (38 hours at 120 fps) that keeps times exactly
// representable as distinct floats and bounds what a hostile "Frames:" value
// can make us expect. Allocation never trusts the declared count anyway.
constexpr int kMaxBvhFrames = 1 << 24;

enum class Channel : uint8_t {
  kXposition,
  kYposition,
  kZposition,
  kXrotation,
  kYrotation,
  kZrotation,
};
constexpr int kNumChannelKinds = 6;
constexpr std::array<absl::string_view, kNumChannelKinds> kChannelNames = {
    "Xposition", "Yposition", "Zposition",
    "Xrotation", "Yrotation", "Zrotation"};

bool IsPosition(Channel c) { return c <= Channel::kZposition; }
int Axis(Channel c) { return static_cast<int>(c) % 3; }

// The channels of one joint, in the order its CHANNELS line lists them.
struct JointChannels {
  int first = 0;  // index of the joint's first value in a frame line
  int count = 0;
  std::array<Channel, kNumChannelKinds> channels{};
  bool has_position = false;
  bool has_rotation = false;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
bool IsBreak(char c) { return c == '\n' || c == '\r'; }
bool IsBrace(char c) { return c == '{' || c == '}'; }

// A cursor over the text that knows its line number. Tokens are braces and
// runs of characters other than braces, spaces, tabs and line breaks; LF,
// CRLF and a lone CR all end a line.
class Scanner {
 public:
  explicit Scanner(absl::string_view text) : text_(text) {
    // A UTF-8 byte order mark is not part of the first keyword.
    if (absl::StartsWith(text_, "\xEF\xBB\xBF")) pos_ = 3;
  }

  int line() const { return line_; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  bool AtLineEnd() const { return AtEnd() || IsBreak(text_[pos_]); }
  size_t remaining() const { return text_.size() - pos_; }

  // The line an error at end of file is reported on: the last line that
  // exists, not the empty one after a final line break.
  int EofLine() const {
    const bool ends_with_break = !text_.empty() && IsBreak(text_.back());
    return ends_with_break && line_ > 1 ? line_ - 1 : line_;
  }

  void SkipSpaces() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }

  // Consumes one line break, if the cursor is on one.
  void SkipLineBreak() {
    if (pos_ >= text_.size()) return;
    if (text_[pos_] == '\r') {
      ++pos_;
      if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
      ++line_;
    } else if (text_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
  }

  // Skips spaces and line breaks (blank lines included).
  void SkipWhitespace() {
    for (;;) {
      SkipSpaces();
      if (AtEnd() || !IsBreak(text_[pos_])) return;
      SkipLineBreak();
    }
  }

  // The token at the cursor; empty at a line end or the end of the text.
  // A brace is a token of its own even without spaces around it ("}}").
  absl::string_view Token() {
    const size_t begin = pos_;
    if (pos_ < text_.size() && IsBrace(text_[pos_])) {
      ++pos_;
    } else {
      while (pos_ < text_.size() && !IsSpace(text_[pos_]) &&
             !IsBreak(text_[pos_]) && !IsBrace(text_[pos_])) {
        ++pos_;
      }
    }
    return text_.substr(begin, pos_ - begin);
  }

  // The next token on any line.
  absl::string_view NextToken() {
    SkipWhitespace();
    return Token();
  }

  // The next token on the current line; empty when the line has no more.
  absl::string_view NextTokenOnLine() {
    SkipSpaces();
    return Token();
  }

  // Counts the tokens left on the current line (for error messages).
  int CountTokensOnLine() {
    int count = 0;
    while (!NextTokenOnLine().empty()) ++count;
    return count;
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
};

// A token as an error message shows it: quoted, escaped, cut short.
std::string Quote(absl::string_view token) {
  constexpr size_t kMaxShown = 40;
  if (token.size() > kMaxShown) {
    return absl::StrCat("'", absl::CHexEscape(token.substr(0, kMaxShown)),
                        "...'");
  }
  return absl::StrCat("'", absl::CHexEscape(token), "'");
}

// Parses a whole token as a finite number that fits a float. Locale
// independent; rejects partial parses ("1.2.3", "1e"), NaN and infinities.
// On failure `*why` says what is wrong with it.
bool ParseNumber(absl::string_view token, double* value, const char** why) {
  const char* begin = token.data();
  const char* end = begin + token.size();
  // from_chars rejects a leading '+', which strtod and some exporters allow.
  if (begin != end && *begin == '+') {
    ++begin;
    if (begin != end && (*begin == '+' || *begin == '-')) {
      *why = "is not a number";
      return false;
    }
  }
  const auto [ptr, ec] = std::from_chars(begin, end, *value);
  if (ec == std::errc::result_out_of_range) {
    *why = "is out of range";
    return false;
  }
  if (ec != std::errc() || ptr != end) {
    *why = "is not a number";
    return false;
  }
  if (!std::isfinite(*value)) {
    *why = "is not finite (NaN and infinities are not allowed)";
    return false;
  }
  if (std::fabs(*value) > std::numeric_limits<float>::max()) {
    *why = "is out of float range";
    return false;
  }
  return true;
}

// "walk" from "data/walk.bvh".
std::string FileStem(absl::string_view path) {
  const size_t slash = path.find_last_of("/\\");
  if (slash != absl::string_view::npos) path.remove_prefix(slash + 1);
  const size_t dot = path.rfind('.');
  if (dot != absl::string_view::npos && dot > 0) path = path.substr(0, dot);
  return path.empty() ? std::string("clip") : std::string(path);
}

// The half angle's sine and cosine by dmath, not libm: glibc's double sin
// and cos round differently in their FMA and SSE2 variants, which changed
// imported clips with the machine. Halving the degrees is exact.
Eigen::Quaterniond AxisRotation(int axis, double degrees) {
  const dmath::SinCosD sc = dmath::SinCosDegrees(0.5 * degrees);
  const double s = sc.sin;
  return Eigen::Quaterniond(sc.cos, axis == 0 ? s : 0.0, axis == 1 ? s : 0.0,
                            axis == 2 ? s : 0.0);
}

class BvhParser {
 public:
  BvhParser(absl::string_view text, absl::string_view source)
      : scanner_(text), source_(source) {}

  absl::StatusOr<ImportedAsset> Parse();

 private:
  absl::Status Error(int line, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", line, ": ", message));
  }

  // What a token read with NextToken() was: itself or "end of file".
  std::string Found(absl::string_view token) const {
    return token.empty() ? std::string("end of file") : Quote(token);
  }
  // Same for NextTokenOnLine(), which also stops at a line end.
  std::string FoundOnLine(absl::string_view token) const {
    if (!token.empty()) return Quote(token);
    return scanner_.AtEnd() ? "end of file" : "end of line";
  }
  int TokenLine(absl::string_view token) const {
    return token.empty() && scanner_.AtEnd() ? scanner_.EofLine()
                                             : scanner_.line();
  }

  std::string JointLabel(int joint) const {
    return absl::StrCat("joint ", joint, " '", absl::CHexEscape(names_[joint]),
                        "'");
  }

  absl::Status ParseHierarchy();
  // Reads "<name> { OFFSET x y z CHANNELS n ..." after ROOT or JOINT.
  absl::Status ParseJointHead(absl::string_view keyword, int parent);
  // Reads "Site { OFFSET x y z }" after End.
  absl::Status ParseEndSite(int joint);
  absl::Status ParseOffset(absl::string_view owner, Eigen::Vector3f* offset);
  absl::Status ParseChannels(int joint);
  absl::Status ParseMotion();
  // Reads one frame line into `values` (one per channel). `frame` counts
  // from 1; a frame past the declared count is the tolerated extra line.
  absl::Status ParseFrameLine(int frame, absl::Span<double> values);
  std::string FrameLabel(int frame) const;
  absl::Status ExpectOpenBrace(absl::string_view after);

  Scanner scanner_;
  absl::string_view source_;

  std::vector<std::string> names_;
  std::vector<int> parents_;
  std::vector<Eigen::Vector3f> offsets_;
  std::vector<int> lines_;  // where each joint was declared
  std::vector<JointChannels> channels_;
  absl::flat_hash_map<absl::string_view, int> joint_by_name_;
  std::vector<EndSite> end_sites_;
  int num_values_ = 0;  // values per frame line

  int declared_frames_ = 0;
  double frame_time_ = 0.0;
  int frame_time_line_ = 0;
  int parsed_frames_ = 0;
  std::vector<JointTracks> tracks_;
  std::vector<std::string> warnings_;
};

absl::Status BvhParser::ExpectOpenBrace(absl::string_view after) {
  const absl::string_view token = scanner_.NextToken();
  if (token != "{") {
    return Error(TokenLine(token), absl::StrCat("expected '{' after ", after,
                                                ", found ", Found(token)));
  }
  return absl::OkStatus();
}

absl::Status BvhParser::ParseOffset(absl::string_view owner,
                                    Eigen::Vector3f* offset) {
  const absl::string_view keyword = scanner_.NextToken();
  if (keyword != "OFFSET") {
    return Error(TokenLine(keyword), absl::StrCat("expected OFFSET in ", owner,
                                                  ", found ", Found(keyword)));
  }
  for (int i = 0; i < 3; ++i) {
    const absl::string_view token = scanner_.NextTokenOnLine();
    if (token.empty()) {
      return Error(TokenLine(token),
                   absl::StrCat("OFFSET of ", owner,
                                " needs 3 numbers on its line, found ", i,
                                " before ", FoundOnLine(token)));
    }
    double value = 0.0;
    const char* why = "";
    if (!ParseNumber(token, &value, &why)) {
      return Error(scanner_.line(),
                   absl::StrCat("OFFSET of ", owner, ": expected a number, ",
                                Quote(token), " ", why));
    }
    (*offset)[i] = static_cast<float>(value);
  }
  const absl::string_view extra = scanner_.NextTokenOnLine();
  if (!extra.empty()) {
    return Error(scanner_.line(),
                 absl::StrCat("OFFSET of ", owner,
                              " has 3 numbers, found more: ", Quote(extra)));
  }
  return absl::OkStatus();
}

absl::Status BvhParser::ParseChannels(int joint) {
  const std::string owner = JointLabel(joint);
  const absl::string_view keyword = scanner_.NextToken();
  if (keyword != "CHANNELS") {
    return Error(TokenLine(keyword),
                 absl::StrCat("expected CHANNELS after the OFFSET of ", owner,
                              ", found ", Found(keyword)));
  }
  const int line = scanner_.line();
  const absl::string_view count_token = scanner_.NextTokenOnLine();
  int count = -1;
  const char* end = count_token.data() + count_token.size();
  const auto [ptr, ec] = std::from_chars(count_token.data(), end, count);
  if (count_token.empty() || ec != std::errc() || ptr != end || count < 0 ||
      count > kNumChannelKinds) {
    return Error(line, absl::StrCat("CHANNELS of ", owner,
                                    ": expected a channel count from 0 to ",
                                    kNumChannelKinds, ", found ",
                                    FoundOnLine(count_token)));
  }
  JointChannels& jc = channels_[joint];
  jc.first = num_values_;
  jc.count = count;
  std::array<bool, kNumChannelKinds> seen{};
  for (int i = 0; i < count; ++i) {
    const absl::string_view name = scanner_.NextTokenOnLine();
    if (name.empty()) {
      return Error(line, absl::StrCat("CHANNELS of ", owner, " declares ",
                                      count, " channels, found ", i,
                                      " names before ", FoundOnLine(name)));
    }
    int kind = 0;
    while (kind < kNumChannelKinds &&
           !absl::EqualsIgnoreCase(name, kChannelNames[kind])) {
      ++kind;
    }
    if (kind == kNumChannelKinds) {
      return Error(
          line,
          absl::StrCat("CHANNELS of ", owner, ": unknown channel ", Quote(name),
                       " (expected one of Xposition, Yposition, "
                       "Zposition, Xrotation, Yrotation, Zrotation)"));
    }
    if (seen[kind]) {
      return Error(line, absl::StrCat("CHANNELS of ", owner, ": channel ",
                                      kChannelNames[kind], " is listed twice"));
    }
    seen[kind] = true;
    const Channel channel = static_cast<Channel>(kind);
    jc.channels[i] = channel;
    (IsPosition(channel) ? jc.has_position : jc.has_rotation) = true;
  }
  const absl::string_view extra = scanner_.NextTokenOnLine();
  if (!extra.empty()) {
    return Error(line, absl::StrCat("CHANNELS of ", owner, " declares ", count,
                                    " channels, found more: ", Quote(extra)));
  }
  num_values_ += count;
  return absl::OkStatus();
}

absl::Status BvhParser::ParseJointHead(absl::string_view keyword, int parent) {
  const int line = scanner_.line();
  const absl::string_view name = scanner_.NextTokenOnLine();
  if (name.empty() || name == "{" || name == "}") {
    return Error(line,
                 absl::StrCat("expected a joint name after ", keyword,
                              " on the same line, found ", FoundOnLine(name)));
  }
  if (names_.size() >= static_cast<size_t>(kMaxSkeletonJoints)) {
    return Error(line, absl::StrCat("more than ", kMaxSkeletonJoints,
                                    " joints (the skeleton limit)"));
  }
  const int joint = static_cast<int>(names_.size());
  const auto [it, inserted] = joint_by_name_.emplace(name, joint);
  if (!inserted) {
    return Error(line, absl::StrCat("duplicate joint name ", Quote(name),
                                    " (joint ", it->second, " at line ",
                                    lines_[it->second], " has it already)"));
  }
  names_.emplace_back(name);
  parents_.push_back(parent);
  offsets_.emplace_back(Eigen::Vector3f::Zero());
  lines_.push_back(line);
  channels_.emplace_back();
  const std::string label = JointLabel(joint);
  if (absl::Status s = ExpectOpenBrace(absl::StrCat(keyword, " ", Quote(name)));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseOffset(label, &offsets_[joint]); !s.ok()) {
    return s;
  }
  return ParseChannels(joint);
}

absl::Status BvhParser::ParseEndSite(int joint) {
  const int line = scanner_.line();
  const absl::string_view site = scanner_.NextTokenOnLine();
  if (site != "Site") {
    return Error(line,
                 absl::StrCat("expected 'End Site' in ", JointLabel(joint),
                              ", found 'End' then ", FoundOnLine(site)));
  }
  const std::string owner = absl::StrCat("the End Site of ", JointLabel(joint));
  if (absl::Status s = ExpectOpenBrace("End Site"); !s.ok()) return s;
  EndSite end_site;
  end_site.joint = joint;
  if (absl::Status s = ParseOffset(owner, &end_site.offset); !s.ok()) {
    return s;
  }
  const absl::string_view close = scanner_.NextToken();
  if (close != "}") {
    return Error(TokenLine(close),
                 absl::StrCat("expected '}' closing ", owner,
                              " (an End Site has only an OFFSET: no channels "
                              "and no children), found ",
                              Found(close)));
  }
  end_sites_.push_back(end_site);
  return absl::OkStatus();
}

absl::Status BvhParser::ParseHierarchy() {
  const absl::string_view first = scanner_.NextToken();
  if (first != "HIERARCHY") {
    return Error(TokenLine(first),
                 absl::StrCat("expected HIERARCHY at the start of a BVH "
                              "file, found ",
                              Found(first)));
  }
  // Joints still open, innermost last. An explicit stack instead of
  // recursion: nesting depth is attacker-controlled.
  std::vector<int> open;
  for (;;) {
    const absl::string_view token = scanner_.NextToken();
    if (token == "ROOT") {
      if (absl::Status s = ParseJointHead("ROOT", kNoParent); !s.ok()) {
        return s;
      }
      open.push_back(static_cast<int>(names_.size()) - 1);
    } else if (token == "MOTION" && !names_.empty()) {
      return absl::OkStatus();
    } else if (names_.empty()) {
      return Error(
          TokenLine(token),
          absl::StrCat("expected ROOT after HIERARCHY, found ", Found(token)));
    } else {
      std::string hint;
      if (token == "}") hint = " (unbalanced braces: one '}' too many)";
      if (token == "JOINT") hint = " (JOINT outside any joint's braces)";
      return Error(
          TokenLine(token),
          absl::StrCat("expected ROOT or MOTION, found ", Found(token), hint));
    }
    while (!open.empty()) {
      const int parent = open.back();
      const absl::string_view inner = scanner_.NextToken();
      if (inner == "JOINT") {
        if (absl::Status s = ParseJointHead("JOINT", parent); !s.ok()) {
          return s;
        }
        open.push_back(static_cast<int>(names_.size()) - 1);
      } else if (inner == "End") {
        if (absl::Status s = ParseEndSite(parent); !s.ok()) return s;
      } else if (inner == "}") {
        open.pop_back();
      } else {
        std::string hint;
        if (inner.empty() || inner == "MOTION" || inner == "ROOT") {
          hint = absl::StrCat(" (unbalanced braces: ", open.size(),
                              " still open)");
        }
        return Error(
            TokenLine(inner),
            absl::StrCat("expected JOINT, End Site or '}' closing ",
                         JointLabel(parent), " (opened at line ",
                         lines_[parent], "), found ", Found(inner), hint));
      }
    }
  }
}

std::string BvhParser::FrameLabel(int frame) const {
  if (frame <= declared_frames_) return absl::StrCat("frame ", frame);
  return absl::StrCat("frame ", frame, " (one line after the ",
                      declared_frames_,
                      " declared frames, tolerated only if well-formed)");
}

absl::Status BvhParser::ParseFrameLine(int frame, absl::Span<double> values) {
  const int line = scanner_.line();
  const int n = static_cast<int>(values.size());
  for (int v = 0; v < n; ++v) {
    scanner_.SkipSpaces();
    if (scanner_.AtLineEnd()) {
      return Error(line, absl::StrCat(FrameLabel(frame), ": expected ", n,
                                      " values (one per channel), found ", v));
    }
    const absl::string_view token = scanner_.Token();
    const char* why = "";
    if (!ParseNumber(token, &values[v], &why)) {
      // Name the joint and channel so a user can find the column.
      int joint = 0;
      while (v >= channels_[joint].first + channels_[joint].count) ++joint;
      const JointChannels& jc = channels_[joint];
      const Channel channel = jc.channels[v - jc.first];
      return Error(
          line, absl::StrCat(FrameLabel(frame), " value ", v + 1, " (",
                             JointLabel(joint), " ",
                             kChannelNames[static_cast<int>(channel)],
                             "): expected a number, ", Quote(token), " ", why));
    }
  }
  scanner_.SkipSpaces();
  if (!scanner_.AtLineEnd()) {
    const int found = n + scanner_.CountTokensOnLine();
    return Error(line,
                 absl::StrCat(FrameLabel(frame), ": expected ", n,
                              " values (one per channel), found ", found));
  }
  scanner_.SkipLineBreak();
  return absl::OkStatus();
}

absl::Status BvhParser::ParseMotion() {
  if (num_values_ == 0) {
    return Error(scanner_.line(),
                 "no joint has channels, so there is no motion to read "
                 "(expected a CHANNELS line with at least one channel)");
  }
  // "Frames: <count>", the number possibly glued to the colon.
  absl::string_view token = scanner_.NextToken();
  const int frames_line = TokenLine(token);
  if (!absl::ConsumePrefix(&token, "Frames:")) {
    return Error(frames_line,
                 absl::StrCat("expected 'Frames: <count>' after MOTION, found ",
                              Found(token)));
  }
  if (token.empty()) token = scanner_.NextTokenOnLine();
  {
    const char* end = token.data() + token.size();
    const auto [ptr, ec] = std::from_chars(token.data(), end, declared_frames_);
    if (token.empty() || ec != std::errc() || ptr != end) {
      return Error(frames_line,
                   absl::StrCat("Frames: expected a whole number, found ",
                                FoundOnLine(token)));
    }
  }
  if (declared_frames_ <= 0) {
    return Error(frames_line, absl::StrCat("Frames: expected at least 1 "
                                           "frame, found ",
                                           declared_frames_));
  }
  if (declared_frames_ > kMaxBvhFrames) {
    return Error(frames_line,
                 absl::StrCat("Frames: ", declared_frames_,
                              " is more than the limit of ", kMaxBvhFrames));
  }
  if (absl::string_view extra = scanner_.NextTokenOnLine(); !extra.empty()) {
    return Error(frames_line, absl::StrCat("unexpected ", Quote(extra),
                                           " after the frame count"));
  }

  // "Frame Time: <seconds>".
  token = scanner_.NextToken();
  frame_time_line_ = TokenLine(token);
  absl::string_view time_token;
  if (token == "Frame") {
    time_token = scanner_.NextTokenOnLine();
  }
  if (token != "Frame" || !absl::ConsumePrefix(&time_token, "Time:")) {
    return Error(frame_time_line_,
                 absl::StrCat("expected 'Frame Time: <seconds>' after the "
                              "frame count, found ",
                              Found(token)));
  }
  if (time_token.empty()) time_token = scanner_.NextTokenOnLine();
  const char* why = "";
  if (time_token.empty()) {
    return Error(frame_time_line_,
                 absl::StrCat("Frame Time: expected a number of seconds, "
                              "found ",
                              FoundOnLine(time_token)));
  }
  if (!ParseNumber(time_token, &frame_time_, &why)) {
    return Error(frame_time_line_,
                 absl::StrCat("Frame Time: expected a number of seconds, ",
                              Quote(time_token), " ", why));
  }
  if (!(frame_time_ > 0.0)) {
    return Error(frame_time_line_,
                 absl::StrCat("Frame Time: expected a positive number of "
                              "seconds, found ",
                              Quote(time_token)));
  }
  if (!std::isfinite(
          static_cast<float>(frame_time_ * (declared_frames_ - 1)))) {
    return Error(frame_time_line_,
                 absl::StrCat("Frame Time: ", Quote(time_token), " times ",
                              declared_frames_,
                              " frames is longer than a float can hold"));
  }
  if (absl::string_view extra = scanner_.NextTokenOnLine(); !extra.empty()) {
    return Error(frame_time_line_, absl::StrCat("unexpected ", Quote(extra),
                                                " after the frame time"));
  }

  // Tracks. Reserve only what the remaining text could possibly hold (each
  // value takes at least a digit and a separator), never the declared count
  // unchecked: "Frames: 16000000" in a tiny file must not allocate gigabytes.
  const size_t possible = scanner_.remaining() / (2 * num_values_) + 1;
  const size_t reserve =
      std::min(static_cast<size_t>(declared_frames_), possible);
  const int num_joints = static_cast<int>(names_.size());
  tracks_.resize(num_joints);
  for (int j = 0; j < num_joints; ++j) {
    if (channels_[j].has_position)
      tracks_[j].translation.values.reserve(reserve);
    if (channels_[j].has_rotation) tracks_[j].rotation.values.reserve(reserve);
  }

  std::vector<double> values(num_values_);
  for (int frame = 0; frame < declared_frames_; ++frame) {
    scanner_.SkipWhitespace();
    if (scanner_.AtEnd()) {
      return Error(scanner_.EofLine(),
                   absl::StrCat("expected ", declared_frames_,
                                " frame lines (Frames: at line ", frames_line,
                                "), found ", frame, " before end of file"));
    }
    if (absl::Status s = ParseFrameLine(frame + 1, absl::MakeSpan(values));
        !s.ok()) {
      return s;
    }
    for (int j = 0; j < num_joints; ++j) {
      const JointChannels& jc = channels_[j];
      if (jc.count == 0) continue;
      const double* v = values.data() + jc.first;
      if (jc.has_position) {
        // Position channels replace the OFFSET; an axis without a channel
        // keeps the OFFSET's component.
        Eigen::Vector3f t = offsets_[j];
        for (int c = 0; c < jc.count; ++c) {
          if (IsPosition(jc.channels[c])) {
            t[Axis(jc.channels[c])] = static_cast<float>(v[c]);
          }
        }
        tracks_[j].translation.values.push_back(t);
      }
      if (jc.has_rotation) {
        // Listed order is multiplication order: "Zrotation Yrotation
        // Xrotation" is Rz * Ry * Rx. Composed in double, rounded once.
        Eigen::Quaterniond q = Eigen::Quaterniond::Identity();
        for (int c = 0; c < jc.count; ++c) {
          if (!IsPosition(jc.channels[c])) {
            q = q * AxisRotation(Axis(jc.channels[c]), v[c]);
          }
        }
        q.normalize();
        tracks_[j].rotation.values.push_back(q.cast<float>());
      }
    }
    ++parsed_frames_;
  }

  // Some exporters write one frame more than they declare: accept a single
  // well-formed extra line, but nothing beyond it.
  scanner_.SkipWhitespace();
  if (scanner_.AtEnd()) return absl::OkStatus();
  const int extra_line = scanner_.line();
  if (absl::Status s =
          ParseFrameLine(declared_frames_ + 1, absl::MakeSpan(values));
      !s.ok()) {
    return s;
  }
  scanner_.SkipWhitespace();
  if (!scanner_.AtEnd()) {
    const int line = scanner_.line();
    return Error(
        line, absl::StrCat("expected end of file after the ", declared_frames_,
                           " declared frames and one tolerated extra "
                           "frame line, found ",
                           Quote(scanner_.Token())));
  }
  warnings_.push_back(absl::StrCat(
      source_, ":", extra_line, ": one frame line after the ", declared_frames_,
      " declared frames (Frames: at line ", frames_line, ") was ignored"));
  return absl::OkStatus();
}

absl::StatusOr<ImportedAsset> BvhParser::Parse() {
  if (absl::Status s = ParseHierarchy(); !s.ok()) return s;
  if (absl::Status s = ParseMotion(); !s.ok()) return s;

  const int num_joints = static_cast<int>(names_.size());
  SkeletonDesc desc;
  desc.joint_names = std::move(names_);
  desc.parents = std::move(parents_);
  desc.rest_pose.resize(num_joints);
  for (int j = 0; j < num_joints; ++j) {
    desc.rest_pose[j].translation = offsets_[j];
  }
  absl::StatusOr<Skeleton> skeleton = Skeleton::Create(std::move(desc));
  if (!skeleton.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": ", skeleton.status().message()));
  }

  Clip clip;
  clip.name = FileStem(source_);
  clip.duration = static_cast<float>(frame_time_ * (parsed_frames_ - 1));
  std::vector<float> times(parsed_frames_);
  for (int k = 0; k < parsed_frames_; ++k) {
    times[k] = static_cast<float>(frame_time_ * k);
  }
  for (JointTracks& jt : tracks_) {
    if (!jt.translation.values.empty()) jt.translation.times = times;
    if (!jt.rotation.values.empty()) jt.rotation.times = times;
  }
  clip.tracks = std::move(tracks_);
  // A last net for what the checks above cannot see, such as a frame time
  // so small that successive key times round to the same float.
  if (absl::Status s = clip.Validate(*skeleton); !s.ok()) {
    return Error(
        frame_time_line_,
        absl::StrCat("the motion does not form a valid clip: ", s.message()));
  }

  ImportedAsset asset;
  asset.source = std::string(source_);
  asset.skeleton = *std::move(skeleton);
  asset.clips.push_back(std::move(clip));
  asset.end_sites = std::move(end_sites_);
  asset.warnings = std::move(warnings_);
  return asset;
}

}  // namespace

absl::StatusOr<ImportedAsset> ParseBvh(absl::string_view text,
                                       absl::string_view source) {
  return BvhParser(text, source).Parse();
}

absl::StatusOr<ImportedAsset> ReadBvhFile(const std::string& path) {
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot open"));
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof(buffer), file.get());
    text.append(buffer, n);
    if (n < sizeof(buffer)) break;
  }
  if (std::ferror(file.get())) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot read"));
  }
  return ParseBvh(text, path);
}

}  // namespace posewire

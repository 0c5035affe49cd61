// The contract between the op table and each op's adapter.
//
// An op is compiled once for a skeleton into a PreparedOp: joint names
// become indices, limits, mappings and rigs are built and checked, and
// every wire parameter is converted. A frame then only runs it: it applies
// the frame's op update, if any, and calls the core job. A session compiles
// a rig when it is registered; a Solve compiles its op list per call.
//
// A PreparedOp owns everything it needs (it never points into the request
// it was compiled from) and is immutable, so one plan can serve many
// characters. What changes from frame to frame lives in CharacterState.
#ifndef POSEWIRE_SERVER_OPS_OP_H_
#define POSEWIRE_SERVER_OPS_OP_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "posewire/v1/operations.pb.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/clip_library.h"
#include "server/wire/wire_convert.h"
#include "solver_core/analytic_ik/ground.h"
#include "solver_core/analytic_ik/look_at.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"
#include "solver_core/pose_ops/crossfade.h"
#include "solver_core/referee/plausibility.h"
#include "solver_core/retarget/retarget_feet.h"

namespace posewire::server {

// A stateful op's memory under one state_key: the state, and a buffer of
// the same shape the op solves into before swapping the two, so that a
// frame neither copies nor allocates state.
template <typename State>
struct StateSlot {
  State state;
  State next;
};

// What a character remembers between frames, keyed by the ops' state_key.
// Node maps: an undo log (StateUndo) keeps pointers across insertions.
struct CharacterState {
  absl::node_hash_map<std::string, StateSlot<CrossfadeState>> crossfades;
  absl::node_hash_map<std::string, StateSlot<DynamicsState>> springs;
  absl::node_hash_map<std::string, StateSlot<GroundState>> grounds;
  absl::node_hash_map<std::string, StateSlot<LookAtState>> looks;
  absl::node_hash_map<std::string, StateSlot<PlausibilityHistory>> plausibility;
  absl::node_hash_map<std::string, StateSlot<RetargetFeetState>> retarget_feet;

  void Clear() {
    crossfades.clear();
    springs.clear();
    grounds.clear();
    looks.clear();
    plausibility.clear();
    retarget_feet.clear();
  }
};

// What a frame changed in a CharacterState, so that a character whose frame
// fails part-way keeps exactly the state it had (a session answers such a
// character with an error and leaves it as it was).
class StateUndo {
 public:
  // `slot` under `key` in `map` is about to be swapped; `created` when the
  // frame has just inserted it.
  template <typename State>
  void Swapped(absl::node_hash_map<std::string, StateSlot<State>>& map,
               const std::string& key, bool created) {
    entries_.push_back(Entry{
        .key = &key,
        .created = created,
        .undo =
            [](void* map, const std::string& key, bool created) {
              auto& m = *static_cast<
                  absl::node_hash_map<std::string, StateSlot<State>>*>(map);
              auto it = m.find(key);
              if (created) {
                m.erase(it);
              } else {
                std::swap(it->second.state, it->second.next);
              }
            },
        .map = &map});
  }

  // Undoes every recorded change, newest first.
  void Rollback() {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      // Keys live in the prepared ops, which outlive the frame.
      it->undo(it->map, *it->key, it->created);
    }
    entries_.clear();
  }
  void Clear() { entries_.clear(); }

 private:
  struct Entry {
    const std::string* key;
    bool created;
    void (*undo)(void* map, const std::string& key, bool created);
    void* map;
  };
  absl::InlinedVector<Entry, 4> entries_;
};

// One frame of a stateful op under `key` in `map`: `solve(state, next)`
// reads the slot's state and writes the next one into the spare buffer. On
// success the two are swapped and the swap recorded in `undo` (may be
// null); on failure a slot this frame created is removed again, so a failed
// frame leaves the character's state as it was. `key` must outlive the
// frame (ops keep theirs).
template <typename State, typename Solve>
absl::Status StepState(absl::node_hash_map<std::string, StateSlot<State>>& map,
                       const std::string& key, StateUndo* undo, Solve&& solve) {
  // Not a structured binding: clang before 16 cannot capture one.
  const auto emplaced = map.try_emplace(key);
  const auto slot = emplaced.first;
  const bool created = emplaced.second;
  if (absl::Status s = solve(slot->second.state, slot->second.next); !s.ok()) {
    if (created) map.erase(slot);
    return s;
  }
  std::swap(slot->second.state, slot->second.next);
  if (undo != nullptr) undo->Swapped(map, key, created);
  return absl::OkStatus();
}

// The server limits ops are compiled under.
struct OpLimits {
  int max_solver_iterations = 1000;
};

// A limit set a session registered (RegisterLimits) for one of its
// skeletons.
struct RegisteredLimits {
  std::shared_ptr<const Skeleton> skeleton;
  std::string skeleton_id;
  google::protobuf::RepeatedPtrField<v1::JointLimitSpec> limits;
};

// What an op may name besides the character's skeleton: other skeletons
// (retarget's source) by content hash (a Solve's skeleton cache) or by
// registration id (a session's), and a session's limit sets by id
// (plausibility). An empty function, or a null result, is NOT_FOUND.
struct RegistryLookup {
  std::function<std::shared_ptr<const Skeleton>(const std::string& hash)>
      by_hash;
  std::function<std::shared_ptr<const Skeleton>(const std::string& id)> by_id;
  std::function<const RegisteredLimits*(const std::string& id)> limits_by_id;
  // Largest skeleton an op may send inline, in joints.
  int max_joints = kMaxSkeletonJoints;
};

// What compiling one op reads.
struct OpCompileInput {
  const Skeleton& skeleton;
  const v1::Operation& op;
  OpLimits limits;
  // The op's field, which every error starts with, e.g.
  // "register_rig.ops[1].two_bone_ik".
  absl::string_view field;
  // Null: nothing to name but the character's skeleton.
  const RegistryLookup* registry = nullptr;
};

// An op's field name, e.g. "frame.characters[0]" + ".ops[1].aim_ik", kept
// in its two parts and joined only for an error: joining them for every op
// of every frame would cost more than some ops' own bookkeeping.
struct OpField {
  absl::string_view character;
  absl::string_view op;

  std::string str() const { return absl::StrCat(character, op); }
  // `status` with this field before its message; OK stays OK.
  absl::Status Prefix(absl::Status status) const {
    if (status.ok()) return status;
    return PrefixField(str(), status);
  }
};

// What one frame's run of a prepared op reads and writes.
struct OpFrame {
  const Skeleton& skeleton;
  ClipLibrary& clips;
  float dt;               // seconds stateful ops advance by
  const Transform& root;  // component-to-world placement
  LocalPose& pose;        // in and out
  // Whether `pose` is known valid (every transform finite with a unit
  // rotation): RunPlan screens it once and each op's changes after the op.
  // Ops pass it to their job's `input_validated`.
  bool pose_validated = false;
  CharacterState& state;
  // This frame's update of the op, or null; already checked against the
  // inputs the op's table entry says it may change.
  const v1::OpUpdate* update;
  v1::OperationResult& result;
  // The op's field for errors, e.g. "frame.characters[0].ops[1].aim_ik".
  OpField field;
  // Where a stateful op records what it changed in `state`; null when the
  // caller keeps no state after a failure (a Solve).
  StateUndo* undo = nullptr;
};

// An OpUpdate's vector, which IndexOpUpdates has checked finite.
inline Eigen::Vector3f UpdateVector(const v1::Vec3& v) {
  return Eigen::Vector3f(v.x(), v.y(), v.z());
}

// Whether entry `i` of an update's indexed list (effectors, colliders)
// names the same index as an earlier entry. Such lists hold a few entries
// and are checked every frame, so a scan, not a set.
template <typename Entries>
bool IndexRepeats(const Entries& entries, int i) {
  for (int j = 0; j < i; ++j) {
    if (entries[j].index() == entries[i].index()) return true;
  }
  return false;
}

// Names a field of the frame's OpUpdate in an error, e.g. where(".wind")
// is "frame.characters[0].op_updates[1].wind".
using UpdateWhere = absl::FunctionRef<std::string(absl::string_view leaf)>;

class PreparedOp {
 public:
  virtual ~PreparedOp() = default;
  // Checks what the op's table entry cannot: an update's fields against
  // this op (effector indices, layer counts, collider placements). The
  // table's checks (which fields the op takes, finite vectors and scalars)
  // have passed. Run may then apply the update without checking it.
  virtual absl::Status CheckUpdate(const v1::OpUpdate& update,
                                   UpdateWhere where) const {
    (void)update;
    (void)where;
    return absl::OkStatus();
  }
  virtual absl::Status Run(OpFrame& frame) const = 0;
  // The joints Run may change, when they are fixed at compile time (an IK
  // chain, a spring rig's bones), or nullopt when any joint may change (a
  // clip sample, a blend). RunPlan then screens only these joints of the
  // op's result for NaN and infinity: the rest is the op's input, which
  // was screened before the op ran.
  virtual std::optional<std::vector<int>> JointsWritten() const {
    return std::nullopt;
  }
};

using CompiledOp = absl::StatusOr<std::unique_ptr<const PreparedOp>>;

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_OP_H_

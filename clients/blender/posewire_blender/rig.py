"""posewire messages for an armature: skeleton, rig pipeline, frames.

The rig (skeleton and operations) is registered once per live session; each
frame then carries the input pose and the same operations with the targets
where the Blender objects are now (CharacterFrame.ops replaces the rig's
pipeline for that frame). Targets are converted to the armature's space,
which is posewire's model space.
"""

from mathutils import Vector

from . import conversion

_AXIS_VECTORS = {
    "X": (1, 0, 0), "Y": (0, 1, 0), "Z": (0, 0, 1),
    "NEG_X": (-1, 0, 0), "NEG_Y": (0, -1, 0), "NEG_Z": (0, 0, -1),
}

_BIPED_EFFECTOR_IDS = {
    "body": "BIPED_EFFECTOR_BODY",
    "left_hand": "BIPED_EFFECTOR_LEFT_HAND",
    "right_hand": "BIPED_EFFECTOR_RIGHT_HAND",
    "left_foot": "BIPED_EFFECTOR_LEFT_FOOT",
    "right_foot": "BIPED_EFFECTOR_RIGHT_FOOT",
}


class SetupError(ValueError):
    """A set-up that cannot be sent (a missing bone or target); the message
    names the set-up and the field, for a Blender report."""


def skeleton_message(pw, layout):
    """posewire.v1.Skeleton of a RigLayout."""
    return pw.types.Skeleton(joint_names=layout.names,
                             parents=layout.parents,
                             rest_pose=layout.rest_floats())


def _vec3(pw, v):
    return pw.types.Vec3(x=v[0], y=v[1], z=v[2])


class RigBuilder:
    """Turns an armature's set-ups into posewire operations.

    `pw` is the imported posewire package; `armature_object` the Blender
    armature; `depsgraph` (optional) gives the evaluated target positions
    during a frame change, when animated targets have moved."""

    def __init__(self, pw, armature_object, layout, depsgraph=None):
        self.pw = pw
        self.obj = armature_object
        self.layout = layout
        self.depsgraph = depsgraph
        self._to_model = armature_object.matrix_world.inverted()

    def point(self, obj):
        """A target object's world position in model space."""
        if self.depsgraph is not None:
            obj = obj.evaluated_get(self.depsgraph)
        return self._to_model @ obj.matrix_world.translation

    def _bone(self, setup, field):
        name = getattr(setup, field)
        if name not in self.layout.index:
            raise SetupError(f"{setup.name}: {field} '{name}' is not a bone "
                             f"of {self.obj.name}")
        return name

    def _target(self, setup):
        if setup.target is None:
            raise SetupError(f"{setup.name}: no target object")
        return _vec3(self.pw, self.point(setup.target))

    def chain(self, setup):
        """Bone names from start_bone down to end_bone."""
        root = self._bone(setup, "start_bone")
        tip = self._bone(setup, "end_bone")
        names = [tip]
        parents = self.layout.parents
        i = self.layout.index[tip]
        while names[-1] != root:
            i = parents[i]
            if i < 0:
                raise SetupError(f"{setup.name}: '{root}' is not an ancestor "
                                 f"of '{tip}'")
            names.append(self.layout.names[i])
        return names[::-1]

    def hinge_axis(self, setup, pose_floats):
        """The mid joint's bend axis in its own space, from how the limb is
        bent in the input pose, so knees and elbows keep bending the way
        they already do; the bone's X axis (Blender rigs' usual hinge) for a
        straight limb."""
        layout = self.layout
        model = layout.model_matrices(layout.local_matrices(pose_floats))
        i_start, i_mid, i_end = (layout.index[getattr(setup, f)] for f in
                                 ("start_bone", "mid_bone", "end_bone"))
        upper = model[i_mid].translation - model[i_start].translation
        lower = model[i_end].translation - model[i_mid].translation
        axis = upper.cross(lower)
        if axis.length < 1e-4 * max(upper.length * lower.length, 1e-12):
            return Vector((1.0, 0.0, 0.0))
        local = model[i_mid].to_3x3().inverted() @ axis
        return local.normalized()

    def operation(self, setup, pose_floats):
        """The posewire.v1.Operation of one set-up."""
        ops = self.pw.ops
        kind = setup.kind
        if kind == "TWO_BONE":
            for field in ("start_bone", "mid_bone", "end_bone"):
                self._bone(setup, field)
            op = ops.TwoBoneIkOp(
                start_joint=setup.start_bone, mid_joint=setup.mid_bone,
                end_joint=setup.end_bone, target=self._target(setup),
                mid_axis=_vec3(self.pw, self.hinge_axis(setup, pose_floats)),
                weight=setup.weight)
            if setup.pole is not None:
                op.bend_goal.CopyFrom(_vec3(self.pw, self.point(setup.pole)))
            return ops.Operation(two_bone_ik=op)
        if kind in ("CCD", "FABRIK"):
            tolerance = ops.Tolerance(absolute=setup.tolerance)
            common = dict(chain=self.chain(setup), target=self._target(setup),
                          max_iterations=setup.iterations,
                          tolerance=tolerance, weight=setup.weight)
            if kind == "CCD":
                return ops.Operation(ccd_ik=ops.CcdIkOp(**common))
            return ops.Operation(fabrik_ik=ops.FabrikIkOp(**common))
        if kind == "AIM":
            op = ops.AimIkOp(
                joint=self._bone(setup, "end_bone"),
                target=self._target(setup),
                forward=_vec3(self.pw, _AXIS_VECTORS[setup.forward_axis]),
                up=_vec3(self.pw, _AXIS_VECTORS[setup.up_axis]),
                weight=setup.weight)
            if setup.pole is not None:
                head = self.layout.model_matrices(self.layout.local_matrices(
                    pose_floats))[self.layout.index[op.joint]].translation
                op.pole_vector.CopyFrom(
                    _vec3(self.pw, self.point(setup.pole) - head))
            return ops.Operation(aim_ik=op)
        if kind == "LOOK_AT":
            chain = self.chain(setup)
            return ops.Operation(look_at=ops.LookAtOp(
                spine=chain[:-1], head=chain[-1], target=self._target(setup),
                character_forward=_vec3(self.pw, _AXIS_VECTORS[setup.facing]),
                weight=setup.weight, body_weight=setup.body_weight))
        if kind == "BIPED":
            return ops.Operation(full_body_biped_ik=self.biped(setup))
        if kind == "GROUND":
            return ops.Operation(ground=self.ground(setup, pose_floats))
        raise SetupError(f"{setup.name}: unknown kind {kind}")

    def biped(self, setup):
        """FullBodyBipedIkOp: effectors from the set targets; the mapping
        from the role fields unless the server is to detect it."""
        ops = self.pw.ops
        op = ops.FullBodyBipedIkOp(ik_position_weight=setup.weight,
                                   iterations=setup.biped_iterations)
        for name, effector_id in _BIPED_EFFECTOR_IDS.items():
            target = getattr(setup, f"{name}_target")
            if target is None:
                continue
            op.effectors.add(id=ops.BipedEffectorId.Value(effector_id),
                             position=_vec3(self.pw, self.point(target)),
                             position_weight=1.0)
        if not op.effectors:
            raise SetupError(f"{setup.name}: no effector target set")
        if not setup.biped_auto_mapping:
            mapping = op.mapping
            mapping.pelvis = setup.pelvis
            mapping.head = setup.head
            mapping.spine.extend(
                s.strip() for s in setup.spine.split(",") if s.strip())
            for limb in ("left_arm", "right_arm", "left_leg", "right_leg"):
                joints = getattr(mapping, limb)
                for part in ("clavicle", "upper", "lower", "end"):
                    setattr(joints, part, getattr(setup, f"{limb}_{part}"))
        return op

    def ground(self, setup, pose_floats):
        """GroundOp: the legs from the foot bones, and the ground under each
        foot ray-cast on the ground mesh as a game engine would, all in the
        armature's space (whose up is the world's +Z seen from the
        armature)."""
        ops = self.pw.ops
        pelvis = self._bone(setup, "start_bone")
        feet = [f.strip() for f in setup.ground_feet.split(",") if f.strip()]
        if not feet:
            raise SetupError(f"{setup.name}: no foot bones (Feet)")
        if setup.ground_object is None or setup.ground_object.type != "MESH":
            raise SetupError(f"{setup.name}: Ground must be a mesh object")
        parents = self.layout.parents
        model = self.layout.model_matrices(
            self.layout.local_matrices(pose_floats))
        # Normals and up go to armature space by the inverse transpose.
        normal_to_model = self.obj.matrix_world.to_3x3().transposed()
        up = (normal_to_model @ Vector((0.0, 0.0, 1.0))).normalized()
        op = ops.GroundOp(pelvis=pelvis, up=_vec3(self.pw, up),
                          floor_height=setup.floor_height,
                          max_tilt=setup.max_tilt, weight=setup.weight)
        for foot in feet:
            if foot not in self.layout.index:
                raise SetupError(f"{setup.name}: foot '{foot}' is not a bone "
                                 f"of {self.obj.name}")
            ankle = self.layout.index[foot]
            knee = parents[ankle]
            hip = parents[knee] if knee >= 0 else -1
            if hip < 0:
                raise SetupError(f"{setup.name}: foot '{foot}' needs a parent "
                                 "(knee) and a grandparent (hip)")
            names = self.layout.names
            op.legs.add(hip=names[hip], knee=names[knee], ankle=foot)
            leg_length = ((model[knee].translation - model[hip].translation)
                          .length + (model[ankle].translation -
                                     model[knee].translation).length)
            op.samples.append(self._ground_hit(
                setup.ground_object, model[ankle].translation, leg_length, up))
        return op

    def _ground_hit(self, ground, ankle_model, leg_length, up):
        """GroundHit under an ankle (armature space, whose up is `up`): the
        mesh ray-cast from a leg's length above it straight down (world
        -Z), two legs' long."""
        hit = self.pw.ops.GroundHit(hit=False)
        world = self.obj.matrix_world
        # World distances: the leg's length scaled as the armature is.
        reach = leg_length * max(world.to_scale())
        origin = world @ ankle_model + Vector((0.0, 0.0, reach))
        if self.depsgraph is not None:
            ground = ground.evaluated_get(self.depsgraph)
        to_ground = ground.matrix_world.inverted()
        found, location, normal, _ = ground.ray_cast(
            to_ground @ origin,
            (to_ground.to_3x3() @ Vector((0.0, 0.0, -1.0))).normalized(),
            distance=2.0 * reach * max(to_ground.to_scale()))
        if not found:
            return hit
        point = self._to_model @ (ground.matrix_world @ location)
        world_normal = to_ground.to_3x3().transposed() @ normal
        model_normal = world.to_3x3().transposed() @ world_normal
        if model_normal.dot(up) < 0.0:
            model_normal = -model_normal  # the mesh's face points down
        hit.hit = True
        hit.point.CopyFrom(_vec3(self.pw, point))
        hit.normal.CopyFrom(_vec3(self.pw, model_normal.normalized()))
        return hit

    def spring(self, spring):
        """SpringBonesOp for one chain; gravity stays in world space, as
        posewire's spring solver expects."""
        ops = self.pw.ops
        root = spring.root_bone
        if root not in self.layout.index:
            raise SetupError(f"{spring.name}: root bone '{root}' is not a "
                             f"bone of {self.obj.name}")
        settings = ops.SpringBoneSettings(
            damping=spring.damping, stiffness=spring.stiffness,
            world_damping_location=spring.world_damping_location,
            world_damping_rotation=spring.world_damping_rotation,
            radius=spring.radius, limit_angle_degrees=spring.limit_angle)
        rig = ops.SpringRig(root_joints=[root], settings=settings,
                            dummy_tip_length=spring.dummy_tip_length,
                            tip_axis=ops.SPRING_TIP_AXIS_ALONG_BONE)
        return ops.Operation(spring_bones=ops.SpringBonesOp(
            rig=rig, gravity=_vec3(self.pw, spring.gravity),
            state_key=f"spring:{spring.name}"))

    def operations(self, pose_floats):
        """Every enabled set-up, IK first, then spring chains (which then
        swing from the solved pose)."""
        settings = self.obj.posewire
        result = [self.operation(s, pose_floats)
                  for s in settings.solvers if s.enabled]
        result += [self.spring(s) for s in settings.springs if s.enabled]
        if not result:
            raise SetupError(f"{self.obj.name}: no enabled solver or spring "
                             "chain")
        return result

    def setup_names(self):
        """The set-up behind each op of `operations`, in the same order."""
        settings = self.obj.posewire
        return ([s.name for s in settings.solvers if s.enabled] +
                [s.name for s in settings.springs if s.enabled])

    def character_frame(self, character_id, pose_floats, reset_state=False):
        """A posewire.v1.CharacterFrame with this frame's pose, placement and
        targets."""
        return self.pw.pb.CharacterFrame(
            character_id=character_id,
            pose=self.pw.types.Pose(transforms=pose_floats),
            root=root_message(self.pw, self.obj),
            ops=self.operations(pose_floats), reset_state=reset_state)


def root_message(pw, obj):
    """The armature object's world placement as a posewire.v1.Transform."""
    f = conversion.root_floats(obj)
    return pw.types.Transform(
        translation=pw.types.Vec3(x=f[0], y=f[1], z=f[2]),
        rotation=pw.types.Quat(x=f[3], y=f[4], z=f[5], w=f[6]),
        scale=pw.types.Vec3(x=f[7], y=f[8], z=f[9]))

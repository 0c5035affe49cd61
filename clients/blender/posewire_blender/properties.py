"""Add-on preferences and the per-armature solver set-ups.

Everything an artist sets lives in Blender data (saved with the .blend file):
the server address in the add-on preferences, the solver set-ups and spring
chains on the armature object (`Object.posewire`). Targets, poles and bend
goals are ordinary Blender objects (empties, usually) so they can be moved,
parented and animated like anything else.
"""

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty,
                       FloatProperty, FloatVectorProperty, IntProperty,
                       PointerProperty, StringProperty)

ADDON_ID = __package__

SOLVER_KINDS = [
    ("TWO_BONE", "Two-bone limb", "Analytic IK for an arm or a leg"),
    ("CCD", "CCD chain", "Cyclic coordinate descent over a bone chain"),
    ("FABRIK", "FABRIK chain", "Forward and backward reaching IK"),
    ("AIM", "Aim", "Points a bone's axis at a target (look-at)"),
    ("LOOK_AT", "Look-at", "Turns a spine and head toward a target, the "
     "spine's share rising toward the head (FinalIK LookAtIK)"),
    ("BIPED", "Full-body biped", "FinalIK-style full-body IK with hand, "
     "foot and body effectors"),
    ("GROUND", "Ground", "Plants the feet on a mesh under the character, "
     "lowering the pelvis so the lower foot reaches (FinalIK Grounder)"),
]

AXES = [
    ("X", "X", ""), ("Y", "Y", ""), ("Z", "Z", ""),
    ("NEG_X", "-X", ""), ("NEG_Y", "-Y", ""), ("NEG_Z", "-Z", ""),
]

# Biped roles: (property name, label). Empty names let the server detect the
# role from bone names (CMU, Mixamo, Daz, Blender .L/.R, Fox conventions).
BIPED_ROLES = [
    ("pelvis", "Pelvis"), ("spine", "Spine (comma-separated)"),
    ("head", "Head"),
] + [(f"{limb}_{part}", f"{limb.replace('_', ' ').title()} {part}")
     for limb in ("left_arm", "right_arm", "left_leg", "right_leg")
     for part in ("clavicle", "upper", "lower", "end")]

BIPED_EFFECTORS = [
    ("body", "Body"), ("left_hand", "Left hand"), ("right_hand", "Right hand"),
    ("left_foot", "Left foot"), ("right_foot", "Right foot"),
]


def _biped_role_properties():
    return {name: StringProperty(name=label) for name, label in BIPED_ROLES}


def _biped_effector_properties():
    return {f"{name}_target": PointerProperty(type=bpy.types.Object,
                                              name=f"{label} target")
            for name, label in BIPED_EFFECTORS}


class PosewirePreferences(bpy.types.AddonPreferences):
    """Where the server is and how to authenticate to it."""
    bl_idname = ADDON_ID

    address: StringProperty(name="Server", default="127.0.0.1:50051",
                            description="HOST:PORT of posewire-server")
    token: StringProperty(name="Token", subtype="PASSWORD",
                          description="Bearer token (--auth_token_file)")
    use_tls: BoolProperty(name="TLS", default=False)
    ca_certificate: StringProperty(
        name="CA certificate", subtype="FILE_PATH",
        description="PEM file to trust; empty: the system roots")
    stubs_dir: StringProperty(
        name="Python stubs", subtype="DIR_PATH",
        description="<build>/clients/python/stubs, when "
                    "POSEWIRE_PYTHON_STUBS is not set")

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "address")
        layout.prop(self, "token")
        row = layout.row()
        row.prop(self, "use_tls")
        sub = row.row()
        sub.enabled = self.use_tls
        sub.prop(self, "ca_certificate")
        layout.prop(self, "stubs_dir")


class PosewireSolver(bpy.types.PropertyGroup):
    """One IK set-up; `kind` says which fields matter."""
    name: StringProperty(name="Name", default="Solver")
    kind: EnumProperty(name="Kind", items=SOLVER_KINDS, default="TWO_BONE")
    enabled: BoolProperty(name="Enabled", default=True)
    weight: FloatProperty(name="Weight", default=1.0, min=0.0, max=1.0)
    # Two-bone: start -> mid -> end. Chains: root .. tip. Aim: tip.
    # Look-at: the first spine bone .. the head.
    start_bone: StringProperty(name="Start / root bone")
    mid_bone: StringProperty(name="Mid bone")
    end_bone: StringProperty(name="End / tip bone")
    target: PointerProperty(type=bpy.types.Object, name="Target")
    pole: PointerProperty(type=bpy.types.Object, name="Pole / bend goal",
                          description="Two-bone: point the mid joint bends "
                                      "toward; aim: point the up axis leans to")
    iterations: IntProperty(name="Iterations", default=20, min=1, max=1000)
    tolerance: FloatProperty(name="Tolerance", default=1e-3, min=0.0,
                             precision=5)
    forward_axis: EnumProperty(name="Forward", items=AXES, default="Y",
                               description="Aim axis in bone space (Blender "
                                           "bones point along Y)")
    up_axis: EnumProperty(name="Up", items=AXES, default="Z")
    facing: EnumProperty(
        name="Facing", items=AXES, default="NEG_Y",
        description="Look-at: the direction the rest pose faces, in the "
                    "armature's space (Blender characters face -Y); each "
                    "bone looks along the axis its rest turns onto it")
    body_weight: FloatProperty(
        name="Body weight", default=0.5, min=0.0, max=1.0,
        description="Look-at: how much of the turn the spine takes")
    biped_auto_mapping: BoolProperty(
        name="Detect mapping", default=True,
        description="Let the server map pelvis, spine, head and limbs from "
                    "bone names; off: use the names below")
    biped_iterations: IntProperty(name="Iterations", default=4, min=0,
                                  max=64)
    # Ground: the pelvis is start_bone; each foot's knee and hip are its
    # parent and grandparent.
    ground_feet: StringProperty(
        name="Feet", description="Ground: the foot (ankle) bones, "
                                 "comma-separated; each one's parent is its "
                                 "knee and grandparent its hip")
    ground_object: PointerProperty(
        type=bpy.types.Object, name="Ground",
        description="Ground: the mesh the feet stand on; it is ray-cast "
                    "straight down (world -Z) under each foot")
    floor_height: FloatProperty(
        name="Clip floor", default=0.0,
        description="Ground: the height (armature space, along its up) of "
                    "the floor the animation was made on")
    max_tilt: FloatProperty(
        name="Max foot tilt", subtype="ANGLE", default=0.7853982, min=0.0,
        max=1.4835298,
        description="Ground: how far a foot turns toward a sloped ground")


# The biped's 19 role names and 5 effector targets, added as annotations (how
# Blender declares properties) rather than spelled out one by one.
PosewireSolver.__annotations__.update(_biped_role_properties())
PosewireSolver.__annotations__.update(_biped_effector_properties())


class PosewireSpring(bpy.types.PropertyGroup):
    """A spring-bone chain: every bone below `root_bone` swings."""
    name: StringProperty(name="Name", default="Spring")
    enabled: BoolProperty(name="Enabled", default=True)
    root_bone: StringProperty(name="Root bone")
    damping: FloatProperty(name="Damping", default=0.1, min=0.0, max=1.0)
    stiffness: FloatProperty(name="Stiffness", default=0.05, min=0.0,
                             max=1.0)
    world_damping_location: FloatProperty(name="World damping (location)",
                                          default=0.8, min=0.0, max=1.0)
    world_damping_rotation: FloatProperty(name="World damping (rotation)",
                                          default=0.8, min=0.0, max=1.0)
    radius: FloatProperty(name="Radius", default=0.0, min=0.0)
    limit_angle: FloatProperty(name="Limit angle (degrees)", default=0.0,
                               min=0.0, max=180.0)
    gravity: FloatVectorProperty(name="Gravity", subtype="ACCELERATION",
                                 default=(0.0, 0.0, -9.81),
                                 description="World space, scene units/s^2")
    dummy_tip_length: FloatProperty(name="Dummy tip length", default=0.0,
                                    min=0.0)


class PosewireArmature(bpy.types.PropertyGroup):
    """Object.posewire: an armature's set-ups and live-link state."""
    solvers: CollectionProperty(type=PosewireSolver)
    active_solver: IntProperty()
    springs: CollectionProperty(type=PosewireSpring)
    active_spring: IntProperty()
    live: BoolProperty(name="Live", default=False,
                       description="Solve on the server on every frame "
                                   "change and target move")
    bake_start: IntProperty(name="Start", default=1)
    bake_end: IntProperty(name="End", default=30)
    bake_mode: EnumProperty(name="Keys", items=[
        ("REPLACE", "Replace", "Key the solved pose into the current action"),
        ("LAYER", "Layer", "Keep the action as an NLA strip and key the "
                           "solved pose into a new action on top"),
    ], default="REPLACE")
    bake_progress: FloatProperty(name="Bake", subtype="PERCENTAGE", min=0.0,
                                 max=100.0)
    last_error: StringProperty(name="Last error")


CLASSES = (PosewirePreferences, PosewireSolver, PosewireSpring,
           PosewireArmature)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Object.posewire = PointerProperty(type=PosewireArmature)


def unregister():
    del bpy.types.Object.posewire
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)


def preferences(context=None):
    """The add-on preferences (or defaults if the add-on is not enabled
    through the preferences, as when a script registers it directly)."""
    context = context or bpy.context
    addon = context.preferences.addons.get(ADDON_ID)
    return addon.preferences if addon else None

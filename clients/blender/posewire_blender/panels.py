"""The posewire panel in the armature's Object Data properties.

Sub-panels follow the artist's order of work: connection (with the lost
server and its reason in plain sight), solver set-ups, spring chains, live
mode and bake.
"""

import bpy

from . import runtime
from .link import CONNECTED, LOST
from .properties import BIPED_EFFECTORS, BIPED_ROLES


class _Panel:
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "data"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "ARMATURE"


class POSEWIRE_PT_main(_Panel, bpy.types.Panel):
    bl_label = "posewire"

    def draw(self, context):
        layout = self.layout
        obj = context.object
        state, message = runtime.status()
        row = layout.row()
        icon = {CONNECTED: "LINKED", LOST: "ERROR"}.get(state, "UNLINKED")
        link = runtime.RUNTIME.link
        where = f" {link.address}" if link else ""
        row.label(text=f"{state.title()}{where}", icon=icon)
        if state == "DISCONNECTED":
            row.operator("posewire.connect")
        else:
            if state == LOST:
                row.operator("posewire.reconnect", icon="FILE_REFRESH")
            row.operator("posewire.disconnect")
        if message:
            # Connected, the message is a note (a resumed session).
            layout.label(text=message,
                         icon="INFO" if state == CONNECTED else "ERROR")
        settings = obj.posewire
        row = layout.row()
        if settings.live:
            row.operator("posewire.live", text="Stop live", icon="PAUSE",
                         depress=True).action = "STOP"
        else:
            row.operator("posewire.live", text="Live",
                         icon="PLAY").action = "START"
        if settings.last_error:
            layout.label(text=settings.last_error, icon="ERROR")


class POSEWIRE_UL_setups(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data,
                  active_property, index=0, flt_flag=0):
        layout.prop(item, "enabled", text="")
        layout.prop(item, "name", text="", emboss=False)


def _list(layout, obj, collection, add_button):
    """A UIList of the armature's set-ups with add and remove buttons beside
    it and, below, a box for the selected one to draw in; returns (item,
    box), or (None, None) when nothing is selected."""
    settings = obj.posewire
    active = "active_solver" if collection == "solvers" else "active_spring"
    row = layout.row()
    row.template_list("POSEWIRE_UL_setups", collection, settings, collection,
                      settings, active, rows=3)
    column = row.column(align=True)
    add_button(column)
    column.operator("posewire.remove", text="",
                    icon="REMOVE").collection = collection
    items = getattr(settings, collection)
    index = getattr(settings, active)
    if not 0 <= index < len(items):
        return None, None
    return items[index], layout.box()


def _bone_field(layout, obj, setup, field, text=None):
    layout.prop_search(setup, field, obj.data, "bones", text=text)


def _object_field(layout, setup, field, bone=""):
    row = layout.row(align=True)
    row.prop(setup, field)
    op = row.operator("posewire.target_add", text="", icon="ADD")
    op.field = field
    op.bone = bone


def _draw_biped(box, obj, setup):
    """Effector targets, weights, and the mapping when not detected."""
    for name, _ in BIPED_EFFECTORS:
        _object_field(box, setup, f"{name}_target")
    box.prop(setup, "weight")
    box.prop(setup, "biped_iterations")
    box.prop(setup, "biped_auto_mapping")
    if setup.biped_auto_mapping:
        box.label(text="The server maps the rig from bone names")
        return
    for name, _ in BIPED_ROLES:
        if name == "spine":
            box.prop(setup, name)
        else:
            _bone_field(box, obj, setup, name)


class POSEWIRE_PT_solvers(_Panel, bpy.types.Panel):
    bl_label = "IK set-ups"
    bl_parent_id = "POSEWIRE_PT_main"

    def draw(self, context):
        obj = context.object
        setup, box = _list(self.layout, obj, "solvers",
                           lambda column: column.operator_menu_enum(
                               "posewire.solver_add", "kind", text="",
                               icon="ADD"))
        if setup is None:
            return
        box.prop(setup, "kind")
        if setup.kind == "BIPED":
            _draw_biped(box, obj, setup)
            return
        if setup.kind == "GROUND":
            _bone_field(box, obj, setup, "start_bone", "Pelvis")
            box.prop(setup, "ground_feet")
            box.prop(setup, "ground_object")
            box.prop(setup, "floor_height")
            box.prop(setup, "max_tilt")
            box.prop(setup, "weight")
            return
        if setup.kind == "AIM":
            _bone_field(box, obj, setup, "end_bone", "Bone")
            box.prop(setup, "forward_axis")
            box.prop(setup, "up_axis")
        elif setup.kind == "LOOK_AT":
            _bone_field(box, obj, setup, "start_bone", "Spine from")
            _bone_field(box, obj, setup, "end_bone", "Head")
            box.prop(setup, "facing")
            box.prop(setup, "body_weight")
        else:
            _bone_field(box, obj, setup, "start_bone", "Start")
            if setup.kind == "TWO_BONE":
                _bone_field(box, obj, setup, "mid_bone", "Mid")
            _bone_field(box, obj, setup, "end_bone", "End")
        _object_field(box, setup, "target")
        if setup.kind in ("TWO_BONE", "AIM"):
            _object_field(box, setup, "pole",
                          setup.mid_bone if setup.kind == "TWO_BONE" else "")
        if setup.kind in ("CCD", "FABRIK"):
            box.prop(setup, "iterations")
            box.prop(setup, "tolerance")
        box.prop(setup, "weight")


class POSEWIRE_PT_springs(_Panel, bpy.types.Panel):
    bl_label = "Spring chains"
    bl_parent_id = "POSEWIRE_PT_main"

    def draw(self, context):
        obj = context.object
        spring, box = _list(self.layout, obj, "springs",
                            lambda column: column.operator(
                                "posewire.spring_add", text="", icon="ADD"))
        if spring is None:
            return
        _bone_field(box, obj, spring, "root_bone", "Root")
        for field in ("damping", "stiffness", "world_damping_location",
                      "world_damping_rotation", "radius", "limit_angle",
                      "gravity", "dummy_tip_length"):
            box.prop(spring, field)


class POSEWIRE_PT_bake(_Panel, bpy.types.Panel):
    bl_label = "Bake"
    bl_parent_id = "POSEWIRE_PT_main"

    def draw(self, context):
        layout = self.layout
        settings = context.object.posewire
        row = layout.row(align=True)
        row.prop(settings, "bake_start")
        row.prop(settings, "bake_end")
        layout.prop(settings, "bake_mode", expand=True)
        layout.operator("posewire.bake", icon="REC")
        if 0.0 < settings.bake_progress < 100.0:
            layout.prop(settings, "bake_progress", slider=True)


CLASSES = (POSEWIRE_PT_main, POSEWIRE_UL_setups, POSEWIRE_PT_solvers,
           POSEWIRE_PT_springs, POSEWIRE_PT_bake)

# Registers CLASSES in order and unregisters them in reverse.
register, unregister = bpy.utils.register_classes_factory(CLASSES)

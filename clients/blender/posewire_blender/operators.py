"""Operators: connect, live mode, set-ups, targets, bake.

Failures are reported with the server's or the set-up's message and the
operator is cancelled; nothing raises into Blender's UI.
"""

import bpy
from bpy.props import EnumProperty, StringProperty

from . import bake, rig, runtime
from .link import CONNECTED
from .properties import SOLVER_KINDS

_KIND_LABELS = {kind: label for kind, label, _ in SOLVER_KINDS}


def _armature(context):
    obj = context.object
    return obj if obj is not None and obj.type == "ARMATURE" else None


class _ArmatureOperator:
    @classmethod
    def poll(cls, context):
        return _armature(context) is not None


class POSEWIRE_OT_report(bpy.types.Operator):
    """Turns a message from the timer into a Blender report"""
    bl_idname = "posewire.report"
    bl_label = "posewire report"
    bl_options = {"INTERNAL"}

    kind: StringProperty(default="ERROR")
    message: StringProperty()

    def execute(self, context):
        self.report({self.kind}, self.message)
        return {"FINISHED"}


class POSEWIRE_OT_connect(bpy.types.Operator):
    """Connect to the posewire server set in the add-on preferences"""
    bl_idname = "posewire.connect"
    bl_label = "Connect"

    def execute(self, context):
        try:
            runtime.connect(context)
        except (ImportError, OSError) as error:
            self.report({"ERROR"}, f"posewire: {error}")
            return {"CANCELLED"}
        return {"FINISHED"}


class POSEWIRE_OT_disconnect(bpy.types.Operator):
    """Stop live mode and close the connection"""
    bl_idname = "posewire.disconnect"
    bl_label = "Disconnect"

    def execute(self, context):
        runtime.disconnect()
        return {"FINISHED"}


class POSEWIRE_OT_reconnect(bpy.types.Operator):
    """Try to reach the server again now"""
    bl_idname = "posewire.reconnect"
    bl_label = "Reconnect"

    def execute(self, context):
        if runtime.RUNTIME.link is None:
            return bpy.ops.posewire.connect()
        runtime.RUNTIME.link.reconnect_now()
        return {"FINISHED"}


class POSEWIRE_OT_live(_ArmatureOperator, bpy.types.Operator):
    """Solve this armature on the server on every frame change and target
    move"""
    bl_idname = "posewire.live"
    bl_label = "Live"

    action: EnumProperty(items=[("START", "Start", ""), ("STOP", "Stop", "")],
                         default="START")

    def execute(self, context):
        obj = _armature(context)
        if self.action == "STOP":
            runtime.stop_live(obj)
            return {"FINISHED"}
        try:
            runtime.connect(context)
            runtime.start_live(obj)
        except (ImportError, OSError, rig.SetupError) as error:
            self.report({"ERROR"}, f"posewire: {error}")
            return {"CANCELLED"}
        return {"FINISHED"}


class POSEWIRE_OT_solver_add(_ArmatureOperator, bpy.types.Operator):
    """Add an IK set-up; with a pose bone selected, fills in its chain"""
    bl_idname = "posewire.solver_add"
    bl_label = "Add solver"
    bl_options = {"REGISTER", "UNDO"}

    kind: EnumProperty(items=SOLVER_KINDS)

    def execute(self, context):
        settings = _armature(context).posewire
        setup = settings.solvers.add()
        setup.kind = self.kind
        setup.name = _KIND_LABELS[self.kind]
        bone = context.active_pose_bone
        if bone is not None and self.kind != "BIPED":
            setup.end_bone = bone.name
            parent = bone.parent
            if parent is not None:
                setup.mid_bone = parent.name
                setup.start_bone = (parent.parent or parent).name
        settings.active_solver = len(settings.solvers) - 1
        return {"FINISHED"}


class POSEWIRE_OT_remove(_ArmatureOperator, bpy.types.Operator):
    """Remove the selected IK set-up or spring chain"""
    bl_idname = "posewire.remove"
    bl_label = "Remove"
    bl_options = {"REGISTER", "UNDO"}

    collection: EnumProperty(items=[("solvers", "IK set-up", ""),
                                    ("springs", "Spring chain", "")])

    def execute(self, context):
        settings = _armature(context).posewire
        active = "active_solver" if self.collection == "solvers" else \
            "active_spring"
        getattr(settings, self.collection).remove(getattr(settings, active))
        setattr(settings, active, max(0, getattr(settings, active) - 1))
        return {"FINISHED"}


class POSEWIRE_OT_spring_add(_ArmatureOperator, bpy.types.Operator):
    """Add a spring-bone chain rooted at the active pose bone"""
    bl_idname = "posewire.spring_add"
    bl_label = "Add spring chain"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        settings = _armature(context).posewire
        spring = settings.springs.add()
        bone = context.active_pose_bone
        if bone is not None:
            spring.root_bone = bone.name
            spring.name = f"Spring {bone.name}"
        settings.active_spring = len(settings.springs) - 1
        return {"FINISHED"}


class POSEWIRE_OT_target_add(_ArmatureOperator, bpy.types.Operator):
    """Create an empty where the bone is now and use it as this set-up's
    target (or pole, or biped effector)"""
    bl_idname = "posewire.target_add"
    bl_label = "New target"
    bl_options = {"REGISTER", "UNDO"}

    field: StringProperty(default="target")
    bone: StringProperty()

    def execute(self, context):
        obj = _armature(context)
        settings = obj.posewire
        setup = settings.solvers[settings.active_solver]
        pose_bone = obj.pose.bones.get(self.bone or setup.end_bone)
        if pose_bone is None:
            self.report({"ERROR"}, "posewire: name a bone first")
            return {"CANCELLED"}
        empty = bpy.data.objects.new(f"{pose_bone.name} {self.field}", None)
        empty.empty_display_type = "SPHERE"
        empty.empty_display_size = max(0.05 * obj.dimensions.length, 1e-3)
        empty.location = obj.matrix_world @ pose_bone.head
        context.collection.objects.link(empty)
        setattr(setup, self.field, empty)
        return {"FINISHED"}


class POSEWIRE_OT_bake(_ArmatureOperator, bpy.types.Operator):
    """Solve the frame range on the server and key the result"""
    bl_idname = "posewire.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    _job = None
    _timer = None

    def _begin(self, context):
        obj = _armature(context)
        settings = obj.posewire
        try:
            link = runtime.connect(context)
            if link.state != CONNECTED and not runtime.pump_until(
                    lambda: link.state == CONNECTED, 5.0):
                raise bake.BakeError(link.error or "not connected")
            return bake.BakeJob(context, obj, settings.bake_start,
                                settings.bake_end, settings.bake_mode)
        except (ImportError, OSError, rig.SetupError,
                bake.BakeError) as error:
            self.report({"ERROR"}, f"posewire bake: {error}")
            return None

    def execute(self, context):
        """Blocking bake, for scripts and background mode."""
        job = self._begin(context)
        if job is None:
            return {"CANCELLED"}
        settings = job.obj.posewire
        wm = context.window_manager
        wm.progress_begin(0, 100)
        try:
            job.run(progress=lambda f: (
                wm.progress_update(int(100 * f)),
                setattr(settings, "bake_progress", 100 * f)))
        except (rig.SetupError, bake.BakeError) as error:
            job.close()
            self.report({"ERROR"}, f"posewire bake: {error}")
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        self.report({"INFO"}, f"posewire: baked {len(job.frames)} frames")
        return {"FINISHED"}

    def invoke(self, context, event):
        """Interactive bake: one frame per timer tick; Esc cancels."""
        self._job = self._begin(context)
        if self._job is None:
            return {"CANCELLED"}
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.progress_begin(0, 100)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        job = self._job
        if event.type == "ESC":
            job.close()
            self._end(context)
            self.report({"WARNING"}, "posewire: bake cancelled")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            done = job.step()
        except (rig.SetupError, bake.BakeError) as error:
            job.close()
            self._end(context)
            self.report({"ERROR"}, f"posewire bake: {error}")
            return {"CANCELLED"}
        job.obj.posewire.bake_progress = 100 * job.progress
        context.window_manager.progress_update(int(100 * job.progress))
        if not done:
            return {"RUNNING_MODAL"}
        job.finish()
        self._end(context)
        self.report({"INFO"}, f"posewire: baked {len(job.frames)} frames")
        return {"FINISHED"}

    def _end(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()


CLASSES = (POSEWIRE_OT_report, POSEWIRE_OT_connect, POSEWIRE_OT_disconnect,
           POSEWIRE_OT_reconnect, POSEWIRE_OT_live, POSEWIRE_OT_solver_add,
           POSEWIRE_OT_spring_add, POSEWIRE_OT_remove, POSEWIRE_OT_target_add,
           POSEWIRE_OT_bake)

# Registers CLASSES in order and unregisters them in reverse.
register, unregister = bpy.utils.register_classes_factory(CLASSES)

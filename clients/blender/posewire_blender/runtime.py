"""Live mode: what runs between Blender events and the network worker.

One connection (link.Link) serves every armature. An armature in live mode
is registered once (skeleton and rig), then each frame change or move of one
of its targets sends a frame with the input pose and the targets' new
positions. A bpy.app.timers callback (`pump`) takes the answers off the
worker's queue and writes them onto the pose bones, so Blender never waits
for the network.

The input pose is captured from the pose bones when live mode starts and on
every frame change of an animated armature (Blender has just evaluated the
action). Moving a target re-sends that captured pose rather than the pose
bones, which by then hold the previous answer: IK applied to its own output
would drift.
"""

import time

import bpy

from . import conversion, posing, rig, stubs
from .link import CONNECTED, LOST, Link, Result

PUMP_SECONDS = 1.0 / 30.0


class LiveRig:
    """One armature in live mode."""

    def __init__(self, obj, layout):
        self.object_name = obj.name
        self.layout = layout
        self.key = obj.name
        self.input = layout.pose_floats(obj.pose.bones)
        self.sent_input = self.input
        self.last_frame = None
        self.sent_targets = None
        self.frames_applied = 0
        self.last_result = None
        self.sent_ticket = None  # the newest frame sent
        self.answered_ticket = None  # the newest frame answered

    def settled(self):
        """Whether the newest frame sent has been answered (applied, or
        reported as an error)."""
        return self.sent_ticket == self.answered_ticket


class Runtime:
    """Module-level state: Blender handlers and timers are plain functions,
    so the state they share lives here, one instance per add-on load."""

    def __init__(self):
        self.link = None
        self.rigs = {}  # object name -> LiveRig
        self.consumers = {}  # link key -> callable(result), e.g. a bake
        self.applying = False
        self.baking = False
        self.last_state = None


RUNTIME = Runtime()


def posewire_package():
    """The posewire client package, with the stubs preference applied."""
    from .properties import preferences
    prefs = preferences()
    return stubs.import_posewire(prefs.stubs_dir if prefs else "")


def connect(context):
    """Starts the worker for the server in the preferences (if not running).
    Raises ImportError or OSError with a message for a report."""
    from .properties import preferences
    if RUNTIME.link is not None:
        return RUNTIME.link
    prefs = preferences(context)
    pw = posewire_package()
    address = prefs.address if prefs else "127.0.0.1:50051"
    ca_pem = None
    if prefs and prefs.use_tls and prefs.ca_certificate:
        with open(bpy.path.abspath(prefs.ca_certificate), "rb") as file:
            ca_pem = file.read()
    RUNTIME.link = Link(pw, address, token=prefs.token if prefs else "",
                        tls=bool(prefs and prefs.use_tls), ca_pem=ca_pem)
    _ensure_timer()
    return RUNTIME.link


def disconnect():
    """Stops live mode on every armature and closes the connection."""
    for name in list(RUNTIME.rigs):
        obj = bpy.data.objects.get(name)
        if obj is not None:
            obj.posewire.live = False
    RUNTIME.rigs.clear()
    if RUNTIME.link is not None:
        RUNTIME.link.close()
        RUNTIME.link = None


def status():
    """(state, message) for the panel."""
    link = RUNTIME.link
    if link is None:
        return "DISCONNECTED", ""
    state, message = link.state, link.error
    if state == "CONNECTED" and not message and link.last_resume:
        message = link.last_resume
    return state, message


def start_live(obj):
    """Registers the armature and sends its first frame. Raises
    rig.SetupError for a set-up that cannot be sent."""
    link = RUNTIME.link
    pw = posewire_package()
    layout = conversion.RigLayout(obj.data)
    live = LiveRig(obj, layout)
    builder = rig.RigBuilder(pw, obj, layout)
    ops = builder.operations(live.input)
    link.register(live.key, rig.skeleton_message(pw, layout), ops)
    RUNTIME.rigs[obj.name] = live
    obj.posewire.live = True
    obj.posewire.last_error = ""
    send_frame(obj, live, dt=0.0, reset=True)
    return live


def stop_live(obj):
    RUNTIME.rigs.pop(obj.name, None)
    obj.posewire.live = False


def _target_positions(obj, depsgraph):
    """Where every target (and ground mesh) of the armature is, to skip
    frames that would change nothing (a depsgraph update of something
    else)."""
    positions = [tuple(obj.matrix_world.col[3])]
    for setup in obj.posewire.solvers:
        for field in ("target", "pole", "body_target", "left_hand_target",
                      "right_hand_target", "left_foot_target",
                      "right_foot_target"):
            target = getattr(setup, field)
            if target is not None:
                if depsgraph is not None:
                    target = target.evaluated_get(depsgraph)
                positions.append(tuple(target.matrix_world.translation))
        if setup.ground_object is not None:
            # The whole placement: a ground that tilts changes the answer.
            ground = setup.ground_object
            if depsgraph is not None:
                ground = ground.evaluated_get(depsgraph)
            positions.append(tuple(v for row in ground.matrix_world
                                   for v in row))
    return positions


def send_frame(obj, live, dt, reset=False, depsgraph=None):
    """Builds and queues one frame; a set-up error is stored on the
    armature (shown in the panel) instead of raising into a handler."""
    pw = posewire_package()
    builder = rig.RigBuilder(pw, obj, live.layout, depsgraph)
    try:
        frame = builder.character_frame(live.key, live.input, reset)
    except rig.SetupError as error:
        obj.posewire.last_error = str(error)
        return None
    live.sent_input = live.input
    live.sent_targets = _target_positions(obj, depsgraph)
    live.sent_ticket = RUNTIME.link.send_frame(live.key, frame, dt)
    return live.sent_ticket


def _live_rigs(scene):
    for name, live in list(RUNTIME.rigs.items()):
        obj = bpy.data.objects.get(name)
        if obj is None or obj.type != "ARMATURE":
            RUNTIME.rigs.pop(name, None)
            continue
        if scene.objects.get(name) is not None:
            yield obj, live


@bpy.app.handlers.persistent
def on_frame_change(scene, depsgraph=None):
    """Sends each live armature's pose for the new frame. Moving one frame
    forward advances spring bones by one frame's time; any other jump
    restarts them from the animated pose."""
    if RUNTIME.baking or RUNTIME.link is None:
        return
    fps = scene.render.fps / scene.render.fps_base
    frame = scene.frame_current
    for obj, live in _live_rigs(scene):
        animation = obj.animation_data
        if animation is not None and (animation.action is not None
                                      or len(animation.nla_tracks)):
            live.input = live.layout.pose_floats(obj.pose.bones)
        step = None if live.last_frame is None else frame - live.last_frame
        live.last_frame = frame
        if step == 1:
            send_frame(obj, live, dt=1.0 / fps, depsgraph=depsgraph)
        else:
            send_frame(obj, live, dt=0.0, reset=step != 0,
                       depsgraph=depsgraph)


@bpy.app.handlers.persistent
def on_depsgraph_update(scene, depsgraph):
    """Re-solves (with no time step) when a target or the armature object
    moved; ignores the updates our own pose writes cause."""
    if RUNTIME.applying or RUNTIME.baking or RUNTIME.link is None:
        return
    if not any(u.is_updated_transform for u in depsgraph.updates):
        return
    for obj, live in _live_rigs(scene):
        if _target_positions(obj, None) != live.sent_targets:
            send_frame(obj, live, dt=0.0)


def report(message, kind="ERROR"):
    """A Blender report from outside an operator (the timer): through a
    tiny internal operator, so it lands in the info log and status bar."""
    try:
        bpy.ops.posewire.report(kind=kind, message=message)
    except RuntimeError:
        pass  # bpy.ops raises for ERROR reports it just made; that is fine


def _apply(result):
    for obj_name, live in list(RUNTIME.rigs.items()):
        if live.key != result.key:
            continue
        obj = bpy.data.objects.get(obj_name)
        if obj is None:
            return
        if result.pose is not None or not result.ok:
            live.answered_ticket = result.ticket
        if not result.ok:
            obj.posewire.last_error = result.message
            report(f"posewire: {result.message}")
            return
        if result.pose is None:  # a registration's acknowledgement
            return
        RUNTIME.applying = True
        try:
            posing.apply_pose(obj, live.layout, result.pose,
                              live.sent_input)
        finally:
            RUNTIME.applying = False
        obj.posewire.last_error = ""
        live.last_result = result
        live.frames_applied += 1


def dispatch():
    """Hands every arrived result to its owner: a bake waiting for it (its
    progress and end), or a live armature. Returns how many there were."""
    link = RUNTIME.link
    if link is None:
        return 0
    results = link.poll()
    for result in results:
        consumer = RUNTIME.consumers.get(result.key)
        if consumer is not None:
            consumer(result)
        elif isinstance(result, Result):
            _apply(result)
        # else: a closed bake's late progress or end, for nobody.
    return len(results)


def _redraw_if_state_changed():
    state = status()
    if state == RUNTIME.last_state:
        return
    previous, RUNTIME.last_state = RUNTIME.last_state, state
    if state[0] == CONNECTED and previous is not None and previous[0] == LOST:
        # A reconnected session has the rigs registered again, but the pose
        # shown may be stale: solve the current frame once more.
        for obj, live in _live_rigs(bpy.context.scene):
            send_frame(obj, live, dt=0.0)
    wm = bpy.context.window_manager
    for window in (wm.windows if wm else ()):
        for area in window.screen.areas:
            area.tag_redraw()


def pump():
    """The timer: apply results, refresh the panel when the connection
    state changes. Returns the delay to the next call (None ends it)."""
    if RUNTIME.link is None:
        return None
    dispatch()
    _redraw_if_state_changed()
    return PUMP_SECONDS


def pump_until(predicate, timeout=10.0):
    """Calls pump until predicate() holds: for scripts and tests, where
    Blender runs no timers while the script runs. Returns predicate()."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        if not dispatch():
            time.sleep(0.005)
        _redraw_if_state_changed()
    return True


def _ensure_timer():
    if not bpy.app.timers.is_registered(pump):
        bpy.app.timers.register(pump, first_interval=PUMP_SECONDS,
                                persistent=True)


def register():
    bpy.app.handlers.frame_change_post.append(on_frame_change)
    bpy.app.handlers.depsgraph_update_post.append(on_depsgraph_update)


def unregister():
    disconnect()
    if bpy.app.timers.is_registered(pump):
        bpy.app.timers.unregister(pump)
    for handlers, function in (
            (bpy.app.handlers.frame_change_post, on_frame_change),
            (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update)):
        if function in handlers:
            handlers.remove(function)

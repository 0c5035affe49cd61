"""posewire for Blender: IK and spring bones solved by a posewire server
while you animate.

Modules, one concern each:
  conversion  Blender bone space <-> posewire joint transforms
  rig         skeleton, rig pipeline and frames as posewire messages
  link        the worker thread that owns the gRPC connection
  runtime     live mode: handlers, the timer that applies answers
  posing      solved poses onto pose bones
  bake        frame range -> server -> keys
  properties, operators, panels: the Blender side
"""

bl_info = {
    "name": "posewire",
    "author": "posewire",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "Properties > Object Data (armature) > posewire",
    "description": "Solve IK and spring bones on a posewire server, live "
                   "or baked to keys",
    "category": "Animation",
}

from . import operators, panels, properties, runtime  # noqa: E402

_MODULES = (properties, operators, panels, runtime)


def register():
    for module in _MODULES:
        module.register()


def unregister():
    for module in reversed(_MODULES):
        module.unregister()

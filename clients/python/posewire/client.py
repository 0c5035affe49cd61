"""Client for posewire.v1.PoseWire: GetInfo, unary Solve, streaming Session.

Every error comes back as a PosewireError carrying the gRPC status code and
the server's message, whether it ended a unary call, a registration in a
session, or a whole session frame. Per-character errors inside a frame do
not raise: the frame's other characters solved, and the result says which
one failed (see Session.frame).
"""

import queue

import grpc

from posewire.v1 import posewire_pb2 as pb
from posewire.v1 import posewire_pb2_grpc as pb_grpc

_CODES = {code.value[0]: code for code in grpc.StatusCode}


def status_code(number):
    """The grpc.StatusCode for a numeric code (as in posewire.v1.Status)."""
    return _CODES.get(number, grpc.StatusCode.UNKNOWN)


class PosewireError(Exception):
    """A call or message the server refused.

    code: a grpc.StatusCode (INVALID_ARGUMENT, NOT_FOUND, ...).
    message: the server's message, naming the field, character and joint.
    """

    def __init__(self, code, message, context=""):
        self.code = code
        self.message = message
        prefix = f"{context}: " if context else ""
        super().__init__(f"{prefix}{code.name}: {message}")

    @classmethod
    def from_rpc_error(cls, error, context=""):
        return cls(error.code(), error.details() or "", context)

    @classmethod
    def from_status(cls, status, context=""):
        return cls(status_code(status.code), status.message, context)


class Client:
    """A connection to a posewire server.

    target: "HOST:PORT". timeout: seconds each unary call may take.
    token: optional bearer token sent as `authorization` metadata.
    tls: connect with TLS; root_certificates: PEM bytes of the CA to trust
    (None: the system roots).
    channel: an existing grpc.Channel to use instead of opening one.
    """

    def __init__(self, target="127.0.0.1:50051", timeout=10.0,
                 max_message_bytes=16 << 20, token=None, channel=None,
                 tls=False, root_certificates=None):
        if channel is None:
            options = [
                ("grpc.max_send_message_length", max_message_bytes),
                ("grpc.max_receive_message_length", max_message_bytes),
            ]
            if tls:
                credentials = grpc.ssl_channel_credentials(
                    root_certificates=root_certificates)
                channel = grpc.secure_channel(target, credentials, options)
            else:
                channel = grpc.insecure_channel(target, options)
            self._owns_channel = True
        else:
            self._owns_channel = False
        self._channel = channel
        self._stub = pb_grpc.PoseWireStub(channel)
        self._timeout = timeout
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None

    def info(self):
        """GetInfo: version, revision, limits and supported operations."""
        try:
            return self._stub.GetInfo(pb.GetInfoRequest(), timeout=self._timeout,
                                      metadata=self._metadata)
        except grpc.RpcError as error:
            raise PosewireError.from_rpc_error(error, "GetInfo") from None

    def solve(self, request):
        """Solve: one self-contained batch (a posewire.v1.SolveRequest)."""
        try:
            return self._stub.Solve(request, timeout=self._timeout,
                                    metadata=self._metadata)
        except grpc.RpcError as error:
            raise PosewireError.from_rpc_error(error, "Solve") from None

    def session(self):
        """Opens a streaming Session (use it as a context manager)."""
        return Session(self._stub, self._metadata)

    def close(self):
        if self._owns_channel:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Session:
    """A synchronous streaming session: each call sends one message and
    waits for its answer (the server answers every message, in order).
    Not thread-safe."""

    def __init__(self, stub, metadata=None):
        self._requests = queue.Queue()
        self._responses = stub.Session(self._outgoing(), metadata=metadata)
        self._sequence = 0
        self._closed = False

    @property
    def closed(self):
        """True once the stream has ended (closed here, by the server, or
        by a lost connection); a message the server refused does not close
        it."""
        return self._closed

    def _outgoing(self):
        while True:
            request = self._requests.get()
            if request is None:  # half-close
                return
            yield request

    def call(self, request):
        """Sends any posewire.v1.SessionRequest; returns its SessionResponse."""
        if self._closed:
            raise PosewireError(grpc.StatusCode.FAILED_PRECONDITION,
                                "the session is closed")
        self._requests.put(request)
        try:
            return next(self._responses)
        except grpc.RpcError as error:
            self._closed = True
            raise PosewireError.from_rpc_error(error, "Session") from None
        except StopIteration:
            self._closed = True
            raise PosewireError(grpc.StatusCode.UNAVAILABLE,
                                "the session stream closed") from None

    def _register(self, kind, request):
        response = self.call(request)
        status = response.registered.status
        if status.code != 0:
            raise PosewireError.from_status(
                status, f"register {kind} '{response.registered.id}'")
        return response.registered

    def register_skeleton(self, skeleton_id, skeleton):
        """skeleton: a posewire.v1.Skeleton (see poses.make_skeleton)."""
        return self._register("skeleton", pb.SessionRequest(
            register_skeleton=pb.RegisterSkeleton(id=skeleton_id,
                                                  skeleton=skeleton)))

    def register_clip(self, clip_id, skeleton_id, clip):
        """clip: a posewire.v1.Clip for the registered skeleton. Operations
        name it by clip_id."""
        return self._register("clip", pb.SessionRequest(
            register_clip=pb.RegisterClip(id=clip_id, skeleton_id=skeleton_id,
                                          clip=clip)))

    def register_rig(self, rig_id, skeleton_id, ops):
        """ops: posewire.v1.Operation messages, the rig's pipeline."""
        return self._register("rig", pb.SessionRequest(
            register_rig=pb.RegisterRig(id=rig_id, skeleton_id=skeleton_id,
                                        ops=list(ops))))

    def register_character(self, character_id, rig_id):
        return self._register("character", pb.SessionRequest(
            register_character=pb.RegisterCharacter(id=character_id,
                                                    rig_id=rig_id)))

    def frame(self, characters, dt=0.0, sequence=None):
        """Solves one frame and returns its posewire.v1.FrameResult.

        characters: posewire.v1.CharacterFrame messages, or character ids
        (strings) for characters that just run their rig. sequence: default
        one more than the previous frame's.

        A frame-level error (sequence out of order, bad dt, too many
        characters) raises PosewireError. A character's own error does not:
        its CharacterResult.status is non-zero and the others are solved;
        check result.characters[i].status.code (0 is OK) or use
        Session.raise_for_characters.
        """
        if sequence is None:
            sequence = self._sequence + 1
        frame = pb.Frame(sequence=sequence, dt=dt)
        for character in characters:
            if isinstance(character, str):
                frame.characters.add(character_id=character)
            else:
                frame.characters.append(character)
        response = self.call(pb.SessionRequest(frame=frame))
        result = response.frame
        if result.status.code != 0:
            raise PosewireError.from_status(result.status,
                                            f"frame {sequence}")
        self._sequence = sequence
        return result

    @staticmethod
    def raise_for_characters(result):
        """Raises PosewireError for the first failed character of a frame."""
        for character in result.characters:
            if character.status.code != 0:
                raise PosewireError.from_status(
                    character.status, f"character '{character.character_id}'")
        return result

    def close(self):
        """Half-closes the stream and waits for the server to end it."""
        if self._closed:
            return
        self._closed = True
        self._requests.put(None)
        try:
            for _ in self._responses:
                pass
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.OK:
                raise PosewireError.from_rpc_error(error, "Session") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            self._closed = True
            self._requests.put(None)
            self._responses.cancel()

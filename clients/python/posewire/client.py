"""Client for posewire.v1.PoseWire: GetInfo, unary Solve, streaming Session,
server-streaming Bake.

Every error comes back as a PosewireError carrying the gRPC status code and
the server's message, whether it ended a unary call, a registration in a
session, or a whole session frame. Per-character errors inside a frame do
not raise: the frame's other characters solved, and the result says which
one failed (see Session.frame).
"""

import dataclasses
import queue
import time

import grpc

from posewire.bake import FrameGatherer, bake_request
from posewire.calls import SolvesPoses
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
    partial: for a bake cut short (cancelled, or a frame failed), the
    frames that arrived before, as a posewire.BakedClip; else None.
    """

    partial = None

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


class Client(SolvesPoses):
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
        """Solve: one self-contained batch (a posewire.v1.SolveRequest).
        solve_pose (posewire.calls) is the one-character call on numpy
        arrays."""
        try:
            return self._stub.Solve(request, timeout=self._timeout,
                                    metadata=self._metadata)
        except grpc.RpcError as error:
            raise PosewireError.from_rpc_error(error, "Solve") from None

    def query(self, request):
        """Query: a hit query without a session (a posewire.v1.QueryRequest:
        the HitQuery, and each character's skeleton, hitboxes and recorded
        frames). Returns the posewire.v1.QueryResult, the same bytes a
        Session holding those frames answers."""
        try:
            return self._stub.Query(request, timeout=self._timeout,
                                    metadata=self._metadata)
        except grpc.RpcError as error:
            raise PosewireError.from_rpc_error(error, "Query") from None

    def learn_limits(self, skeleton, clips, **options):
        """LearnLimits: joint limits learnt from `clips` (posewire.v1.Clip
        messages) of `skeleton` (a posewire.v1.Skeleton, a content hash, or
        an asset from posewire.local.load: then `clips` may be None for
        all its clips). options: LearnLimitsOptions fields (margin,
        min_range, kind, euler_order, unlimited_joints, limit_root).
        Returns the posewire.v1.LearnLimitsResponse; its `limits` go into
        plausibility_op(limits=...) or an IK op's limits."""
        if clips is None:
            clips = list(getattr(skeleton, "clips", {}).values())
        skeleton = getattr(skeleton, "skeleton", skeleton)
        ref = (pb.SkeletonRef(hash=skeleton) if isinstance(skeleton, str)
               else pb.SkeletonRef(skeleton=skeleton))
        request = pb.LearnLimitsRequest(
            skeleton=ref, clips=list(clips),
            options=pb.LearnLimitsOptions(**options))
        try:
            return self._stub.LearnLimits(request, timeout=self._timeout,
                                          metadata=self._metadata)
        except grpc.RpcError as error:
            raise PosewireError.from_rpc_error(error, "LearnLimits") from None

    def bake(self, skeleton, clip=None, ops=(), *, on_progress=None,
             timeout=None, **options):
        """Bake: runs `ops` on every frame of a clip on the server and
        returns the frames as a BakedClip (poses as (frames, joints, 10)
        float32 arrays, times, per-frame op results, the final state, the
        skeleton's hash).

        skeleton: a posewire.v1.Skeleton, a content hash (a BakedClip's or
          SolvedPose's skeleton_hash), or an asset from posewire.local.load
          (its clips are sent).
        clip: the source each frame's input pose is sampled from: a
          posewire.v1.Clip, a clip name (of the asset or `clips`), or None:
          the asset's first clip; with a bare skeleton, the rest pose (for
          ops that make their own motion, such as a crossfade).
        options (bake_request): clips (more posewire.v1.Clip the ops
          name), frame_rate (unset: 30), frame_count (unset: the clip from
          start_time to its end), start_time (seconds), loop (wrap past the
          clip's end instead of holding its last pose), frame_updates (per
          frame, a list of posewire.v1.OpUpdate such as target_update(...):
          that frame's op inputs, as a Session frame's op_updates),
          timed_ops (indices of ops whose time follows the frame's),
          state (a previous bake's state: continue it, else frame 0 has
          dt 0), root (a posewire.v1.Transform), want_model_pose,
          frames_per_message (0: the server's choice),
          rotation_interpolation.
        on_progress(done, total): called as each message arrives; returning
          False cancels the call, which raises PosewireError CANCELLED (an
          exception from it cancels the call too, and propagates).
        timeout: seconds for the whole bake; None (the default): no
          deadline, since a long bake may take minutes (cancel instead).

        Errors raise PosewireError with the server's code and message
        (INVALID_ARGUMENT naming the field, RESOURCE_EXHAUSTED past
        GetInfo's max_bake_frames, max_bake_bytes, max_concurrent_bakes).
        A cancelled or failed bake's PosewireError carries the frames that
        arrived before as `partial` (a BakedClip): they are final.
        """
        request = bake_request(skeleton, clip, ops, **options)
        names = getattr(getattr(skeleton, "skeleton", skeleton),
                        "joint_names", ())
        return self.run_bake(request, on_progress, timeout, names)

    def run_bake(self, request, on_progress=None, timeout=None,
                 joint_names=()):
        """Bake with a ready posewire.v1.BakeRequest (see bake)."""
        gathered = FrameGatherer(list(joint_names))
        responses = self._stub.Bake(request, timeout=timeout,
                                    metadata=self._metadata)
        finished = False
        try:
            for message in responses:
                gathered.add(message)
                if on_progress is not None and on_progress(
                        gathered.done, gathered.total) is False:
                    raise _with_partial(PosewireError(
                        grpc.StatusCode.CANCELLED,
                        f"bake cancelled by the caller after {gathered.done} "
                        f"of {gathered.total} frames", "Bake"), gathered)
            finished = True
        except grpc.RpcError as error:
            finished = True
            raise _with_partial(PosewireError.from_rpc_error(error, "Bake"),
                                gathered) from None
        finally:
            # Stopped by the callback, by an exception from it, or by an
            # interrupt: cancelling stops the server at its next frame.
            if not finished:
                responses.cancel()
        return gathered.clip()

    def session(self, auto_resume=False, **resume_options):
        """Opens a streaming Session (use it as a context manager).

        auto_resume: resume by itself when the stream ends UNAVAILABLE or
        CANCELLED (a server killed, unreachable, or draining: it hands the
        session over): reconnect through this client's channel (a balancer,
        or gRPC's address list "ipv4:10.0.0.1:50051,10.0.0.2:50051"),
        resume from the newest snapshot, replay what was answered after it
        and resend the message in flight; the caller sees only the answer.
        resume_options (ResumeOptions fields): snapshot_every_frames (30),
        max_attempts (8), first_backoff (0.01 s), max_backoff (1 s),
        connect_timeout (2 s), on_resume (called with a ResumeEvent).
        """
        return Session(self._stub, self._metadata, channel=self._channel,
                       resume=ResumeOptions(**resume_options)
                       if auto_resume else None)

    def resume_session(self, point):
        """Opens a Session that resumes from `point` (a ResumePoint, from
        Session.resume_point(), possibly taken on another server): sends the
        snapshot, resends the registrations the server asks for, and
        returns the session ready for frames after
        point.snapshot.after_sequence. A refused snapshot or registration
        raises PosewireError with the server's message."""
        session = Session(self._stub, self._metadata)
        try:
            session._resume(point)
        except PosewireError:
            session.close()
            raise
        return session

    def close(self):
        if self._owns_channel:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _with_partial(error, gathered):
    """The error, with the bake's frames that arrived before it."""
    error.partial = gathered.clip()
    return error


def _registration_key(kind, skeleton_id, registration_id):
    # Clip ids are per skeleton.
    return (kind, skeleton_id, registration_id)


def _request_key(request):
    """The key of a register_* request a snapshot lists (None for a
    character: a snapshot carries those whole)."""
    which = request.WhichOneof("message")
    if which == "register_clip":
        return _registration_key("clip", request.register_clip.skeleton_id,
                                 request.register_clip.id)
    if which in ("register_skeleton", "register_rig", "register_hitboxes",
                 "register_limits"):
        return _registration_key(which[len("register_"):], "",
                                 getattr(request, which).id)
    return None


class ResumePoint:
    """What resumes a session on any server: a posewire.v1.SessionSnapshot
    and the registration requests it lists (the snapshot holds only their
    hashes)."""

    def __init__(self, snapshot, registrations):
        self.snapshot = snapshot
        self.registrations = list(registrations)


@dataclasses.dataclass
class ResumeOptions:
    """How a Session with auto_resume resumes (see Client.session)."""
    snapshot_every_frames: int = 30
    max_attempts: int = 8
    first_backoff: float = 0.01
    max_backoff: float = 1.0
    connect_timeout: float = 2.0
    on_resume: object = None


@dataclasses.dataclass
class ResumeEvent:
    """One automatic resume. cause: the PosewireError that ended the stream;
    handover: the server drained and handed the state over (nothing it had
    answered is replayed); after_sequence: the frame the snapshot resumed
    from was taken after (0: none yet, the session was rebuilt from its
    first message); replayed: messages replayed (their answers are not
    returned again); attempts; seconds from the broken stream to the
    resumed session."""
    cause: object
    handover: bool
    after_sequence: int
    replayed: int
    attempts: int
    seconds: float


@dataclasses.dataclass
class ResumeCounters:
    """What a session's automatic resumes did so far."""
    resumes: int = 0
    handovers: int = 0
    replayed: int = 0
    failed_attempts: int = 0


# How a stream ends when its server goes away rather than refuses:
# UNAVAILABLE (killed, unreachable, draining), CANCELLED (cut past a
# shutdown's grace), or reset by a proxy whose upstream died (nginx sends
# RST_STREAM INTERNAL_ERROR: INTERNAL "Received RST_STREAM ...").
def _server_went_away(error):
    return (error.code in (grpc.StatusCode.UNAVAILABLE,
                           grpc.StatusCode.CANCELLED) or
            (error.code == grpc.StatusCode.INTERNAL and
             error.message.startswith("Received RST_STREAM")))


class Session:
    """A synchronous streaming session: each call sends one message and
    waits for its answer (the server answers every message, in order;
    periodic snapshots, which follow a frame's answer, are read by frame()).
    Not thread-safe."""

    def __init__(self, stub, metadata=None, channel=None, resume=None):
        self._stub = stub
        self._metadata = metadata
        self._channel = channel
        self._resume_options = resume
        self.resume_counters = ResumeCounters()
        # Accepted registrations and frames since the newest snapshot (all
        # of them before the first), in order: what a resume replays.
        self._replay_log = []
        # The error that ended the stream, until a resume opens another.
        self._ended = None
        self._handed_over = False
        self._open_stream()
        self._sequence = 0
        self._closed = False
        # Accepted registrations by _request_key, to resend on a resume.
        self._registrations = {}
        self._latest_snapshot = pb.SessionSnapshot()
        # Periodic snapshots: the server's every_frames, and the accepted
        # frames since the last one, counted as the server counts them.
        self._snapshot_every = 0
        self._frames_since_snapshot = 0

    @property
    def closed(self):
        """True once the stream has ended (closed here, by the server, or
        by a lost connection); a message the server refused does not close
        it."""
        return self._closed

    def _open_stream(self):
        self._requests = queue.Queue()
        self._responses = self._stub.Session(self._outgoing(self._requests),
                                             metadata=self._metadata)
        self._ended = None
        self._handed_over = False

    @staticmethod
    def _outgoing(requests):
        while True:
            request = requests.get()
            if request is None:  # half-close
                return
            yield request

    def call(self, request):
        """Sends any posewire.v1.SessionRequest; returns its SessionResponse
        (resuming first, with auto_resume, when the stream broke)."""
        if self._closed:
            raise PosewireError(grpc.StatusCode.FAILED_PRECONDITION,
                                "the session is closed")
        options = self._resume_options
        passes = 0
        while True:
            if self._ended is not None:
                if options is None or not _server_went_away(self._ended):
                    raise self._ended
                passes += 1
                if passes > options.max_attempts:
                    raise self._ended
                self._reconnect(self._ended)
            try:
                response = self._exchange(request)
            except PosewireError:
                if options is None or not _server_went_away(self._ended):
                    raise
                continue
            self._log_for_replay(request, response)
            return response

    def _exchange(self, request):
        """One request and its answer on the current stream, no resume. A
        hand-over in its place (the server drains and did not read
        `request`) becomes the newest snapshot, and the stream's end is
        raised."""
        if self._ended is not None:
            raise self._ended
        self._requests.put(request)
        response = self._next_response()
        if response.HasField("snapshot") and response.snapshot.handover:
            self._handed_over = True
            if response.snapshot.status.code == 0:
                self._take_snapshot(response.snapshot)
            self._next_response()  # raises the stream's end
            raise self._stream_ended(PosewireError(
                grpc.StatusCode.UNAVAILABLE, "the session was handed over",
                "Session"))
        return response

    def _stream_ended(self, error):
        self._ended = error
        if self._resume_options is None:
            self._closed = True
        return error

    def _next_response(self):
        try:
            return next(self._responses)
        except grpc.RpcError as error:
            raise self._stream_ended(
                PosewireError.from_rpc_error(error, "Session")) from None
        except StopIteration:
            raise self._stream_ended(PosewireError(
                grpc.StatusCode.UNAVAILABLE,
                "the session stream closed")) from None

    def _log_for_replay(self, request, response):
        if self._resume_options is None:
            return
        which = request.WhichOneof("message")
        if which and which.startswith("register_"):
            accepted = response.registered.status.code == 0
        elif which == "frame":
            # A refused frame changed nothing; one with per-character
            # errors advanced the session.
            accepted = response.frame.status.code == 0
        else:
            accepted = False
        if accepted:
            self._replay_log.append(request)

    def _take_snapshot(self, snapshot):
        self._latest_snapshot = snapshot
        self._replay_log = []

    def _reconnect(self, cause):
        options = self._resume_options
        started = time.monotonic()
        handover = self._handed_over
        backoff = options.first_backoff
        last = cause
        for attempt in range(1, options.max_attempts + 1):
            if attempt > 1:
                self.resume_counters.failed_attempts += 1
                time.sleep(backoff)
                backoff = min(backoff * 2, options.max_backoff)
            if self._channel is not None:
                try:
                    grpc.channel_ready_future(self._channel).result(
                        timeout=options.connect_timeout)
                except grpc.FutureTimeoutError:
                    last = PosewireError(
                        grpc.StatusCode.UNAVAILABLE,
                        f"no server answered within {options.connect_timeout} s")
                    continue
            self._open_stream()
            resumed_from = self._latest_snapshot.after_sequence
            try:
                replayed = self._resume_on_new_stream()
            except PosewireError as error:
                last = error
                if not _server_went_away(error):
                    break
                continue
            counters = self.resume_counters
            counters.resumes += 1
            counters.handovers += 1 if handover else 0
            counters.replayed += replayed
            if options.on_resume is not None:
                options.on_resume(ResumeEvent(
                    cause=cause, handover=handover,
                    after_sequence=resumed_from, replayed=replayed,
                    attempts=attempt, seconds=time.monotonic() - started))
            return
        error = PosewireError(
            last.code, f"the session could not be resumed after its stream "
            f"ended ({cause.message}): {last.message}", "Session")
        self._ended = error
        raise error

    def _resume_on_new_stream(self):
        if self._latest_snapshot.data:
            self._resume_stream(self.resume_point())
        log, self._replay_log = self._replay_log, []
        for i, request in enumerate(log):
            try:
                self._exchange(request)
            except PosewireError:
                # A hand-over covers what was replayed; the rest is left.
                self._replay_log.extend(log[i:])
                raise
            self._replay_log.append(request)
        # Periodic snapshots are per stream: ask again, which also takes
        # one covering the replay.
        if self._snapshot_every > 0:
            response = self._exchange(pb.SessionRequest(
                snapshot=pb.SnapshotRequest(
                    every_frames=self._snapshot_every)))
            if response.snapshot.status.code == 0:
                self._take_snapshot(response.snapshot)
            self._frames_since_snapshot = 0
        return len(log)

    def _register(self, kind, request):
        response = self.call(request)
        status = response.registered.status
        if status.code != 0:
            raise PosewireError.from_status(
                status, f"register {kind} '{response.registered.id}'")
        key = _request_key(request)
        if key is not None:
            self._registrations[key] = request
        return response.registered

    def snapshot(self, every_frames=0):
        """Asks for a snapshot of the session now and returns it (a
        posewire.v1.SessionSnapshot); with every_frames > 0 the server also
        sends one after every that many accepted frames, which frame()
        reads and resume_point() then holds. Raises PosewireError when the
        server refuses (e.g. over limits.max_snapshot_bytes)."""
        response = self.call(pb.SessionRequest(
            snapshot=pb.SnapshotRequest(every_frames=every_frames)))
        if response.snapshot.status.code != 0:
            raise PosewireError.from_status(response.snapshot.status,
                                            "snapshot")
        self._snapshot_every = every_frames
        self._frames_since_snapshot = 0
        self._take_snapshot(response.snapshot)
        return response.snapshot

    def resume_point(self):
        """The newest snapshot (from snapshot() or periodic) with the
        registrations it lists, as a ResumePoint for
        Client.resume_session."""
        registrations = []
        for r in self._latest_snapshot.registrations:
            request = self._registrations.get(
                _registration_key(r.kind, r.skeleton_id, r.id))
            if request is not None:
                registrations.append(request)
        return ResumePoint(self._latest_snapshot, registrations)

    def _resume(self, point):
        self._sequence = self._resume_stream(point)
        self._take_snapshot(point.snapshot)

    def _resume_stream(self, point):
        """Sends the resume and resends what it asks for, on the current
        stream; returns the sequence the session goes on after."""
        response = self._exchange(pb.SessionRequest(
            resume=pb.ResumeSession(snapshot=point.snapshot.data)))
        if response.resume.status.code != 0:
            raise PosewireError.from_status(response.resume.status, "resume")
        by_key = {_request_key(r): r for r in point.registrations}
        for missing in response.resume.missing:
            request = by_key.get(_registration_key(
                missing.kind, missing.skeleton_id, missing.id))
            if request is None:
                raise PosewireError(
                    grpc.StatusCode.NOT_FOUND,
                    f"resume: the server asks for {missing.kind} "
                    f"'{missing.id}', which the resume point does not hold")
            status = self._exchange(request).registered.status
            if status.code != 0:
                raise PosewireError.from_status(
                    status, f"register {missing.kind} '{missing.id}'")
            self._registrations[_request_key(request)] = request
        return response.resume.after_sequence

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

    def register_hitboxes(self, set_id, skeleton_id, hitboxes):
        """hitboxes: posewire.v1.Hitbox messages (spheres, capsules, boxes on
        joints of the registered skeleton). Queries name the set by set_id."""
        return self._register("hitboxes", pb.SessionRequest(
            register_hitboxes=pb.RegisterHitboxes(
                id=set_id, skeleton_id=skeleton_id, hitboxes=list(hitboxes))))

    def register_limits(self, limits_id, skeleton_id, limits):
        """A limit set for the rigs of the registered skeleton, which
        plausibility ops name by limits_id (plausibility_op(limits_id=...)).
        limits: posewire.v1.JointLimitSpec messages, e.g. kept from an
        earlier learn_limits."""
        return self._register("limits", pb.SessionRequest(
            register_limits=pb.RegisterLimits(
                id=limits_id, skeleton_id=skeleton_id, limits=list(limits))))

    def learn_limits(self, limits_id, skeleton_id, clip_ids, **options):
        """Learns a limit set on the server from clips this session
        registered for the skeleton (clip_ids) and registers it as
        limits_id. options: LearnLimitsOptions fields (margin, min_range,
        kind, euler_order, unlimited_joints, limit_root). Returns the
        posewire.v1.LearnLimitsResponse (the limits, to keep and send back
        with register_limits or plausibility_op(limits=...))."""
        request = pb.SessionRequest(register_limits=pb.RegisterLimits(
            id=limits_id, skeleton_id=skeleton_id,
            learn_from_clips=list(clip_ids),
            learn_options=pb.LearnLimitsOptions(**options)))
        return self._register("limits", request).learned

    def query(self, targets, rays=(), spheres=(), time=None, want_poses=False):
        """Rewinds characters and casts rays and spheres at their hitboxes;
        returns the posewire.v1.QueryResult.

        targets: (character_id, hitbox_set) pairs. rays: posewire.v1.Ray
        messages (world space); spheres: posewire.v1.SphereQuery messages.
        time: the game time (Frame.time) to rewind to; None: each
        character's newest frame. A query error (time outside the rewind
        window, a bad ray, an unknown character) raises PosewireError.
        """
        query = pb.HitQuery(rays=list(rays), spheres=list(spheres),
                            want_poses=want_poses)
        if time is not None:
            query.time = time
        for character_id, hitbox_set in targets:
            query.targets.add(character_id=character_id, hitbox_set=hitbox_set)
        result = self.call(pb.SessionRequest(query=query)).query
        if result.status.code != 0:
            raise PosewireError.from_status(result.status, "query")
        return result

    def frame(self, characters, dt=0.0, sequence=None, time=None):
        """Solves one frame and returns its posewire.v1.FrameResult.

        characters: posewire.v1.CharacterFrame messages, or character ids
        (strings) for characters that just run their rig. sequence: default
        one more than the previous frame's. time: the game's tick time in
        seconds (Frame.time; never going backwards), kept with each
        character's pose for Session.query rewinds.

        A frame-level error (sequence out of order, bad dt, too many
        characters) raises PosewireError. A character's own error does not:
        its CharacterResult.status is non-zero and the others are solved;
        check result.characters[i].status.code (0 is OK) or use
        Session.raise_for_characters.
        """
        options = self._resume_options
        if (options is not None and self._snapshot_every == 0
                and options.snapshot_every_frames > 0):
            # Resuming needs snapshots: without them every frame is kept.
            self.snapshot(options.snapshot_every_frames)
        if sequence is None:
            sequence = self._sequence + 1
        frame = pb.Frame(sequence=sequence, dt=dt)
        if time is not None:
            frame.time = time
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
        if self._snapshot_every > 0:
            self._frames_since_snapshot += 1
            if self._frames_since_snapshot >= self._snapshot_every:
                self._frames_since_snapshot = 0
                self._read_periodic_snapshot()
        return result

    def _read_periodic_snapshot(self):
        try:
            snapshot = self._next_response().snapshot
        except PosewireError:
            # The frame was answered; with auto_resume the next call
            # resumes, without it the stream's end is the error.
            if self._resume_options is None:
                raise
            return
        # A refused one (over the size limit) leaves the previous in place.
        if snapshot.status.code == 0:
            self._take_snapshot(snapshot)

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
        if self._ended is not None:
            return  # its calls saw the status
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

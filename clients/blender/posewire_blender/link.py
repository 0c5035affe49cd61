"""The network side: one worker thread per server connection.

Blender's UI thread must never wait on the network, and bpy must only be
touched from that thread. So the UI thread builds messages and `submit`s
them; the worker owns the gRPC channel and the posewire Session, sends them
in order, and queues results that a bpy.app.timers callback picks up with
`poll` (which never blocks) and hands to their owner by key (runtime.py). Nothing here imports bpy.

The session resumes by itself (the Python client's auto_resume) when its
server goes away and another replica answers at the same address (a
balancer, or a gRPC address list such as
"ipv4:10.0.0.1:50051,10.0.0.2:50051"): registrations and per-character
state (spring bones, crossfades) carry on, and `resumes` counts it. When
that fails, registrations die with the session, so the worker remembers
every registered character and registers it again after reconnecting: it
reports LOST with the reason and keeps trying to reconnect with a growing
delay; `reconnect_now` skips the wait.

A bake is one Bake call the worker makes on the same client (channel, token,
TLS) between session messages: it queues BakeProgress as each message of
frames arrives and a BakeResult at the end, and stops the call at the next
message once `cancel_bake` (or `close`) asked it to. Live frames queued
meanwhile wait for it; the add-on pauses live mode while baking anyway.
`calls` counts the calls made, by kind, for the panel and tests.
"""

import collections
import queue
import threading

CONNECTING = "CONNECTING"
CONNECTED = "CONNECTED"
LOST = "LOST"
CLOSED = "CLOSED"

_RETRY_SECONDS = (0.5, 1.0, 2.0, 4.0)

Registration = collections.namedtuple(
    "Registration", "key skeleton ops")
"""A character to (re-)register: key is the character id; the skeleton and
rig get ids derived from it."""

Result = collections.namedtuple(
    "Result", "ticket key ok message pose model_pose op_results")
"""One answered request. ok False: message is the server's (or the
connection's) error; pose and model_pose are flat float lists."""


BakeProgress = collections.namedtuple("BakeProgress",
                                      "ticket key done total")
"""Frames the server has baked so far, of the total."""

BakeResult = collections.namedtuple("BakeResult",
                                    "ticket key ok message baked")
"""A bake's end. ok: baked is the posewire.BakedClip; else message is the
server's (or the connection's) error, CANCELLED after cancel_bake."""


class _Bake:
    __slots__ = ("ticket", "key", "request", "joint_names")

    def __init__(self, ticket, key, request, joint_names):
        self.ticket = ticket
        self.key = key
        self.request = request
        self.joint_names = joint_names


class _Frame:
    __slots__ = ("ticket", "key", "frame", "dt", "latest_only")

    def __init__(self, ticket, key, frame, dt, latest_only):
        self.ticket = ticket
        self.key = key
        self.frame = frame
        self.dt = dt
        self.latest_only = latest_only


class Link:
    """A connection to a posewire server on its own thread.

    pw: the imported posewire package. address: HOST:PORT. token: bearer
    token or "". tls: use TLS; ca_pem: bytes of the CA to trust or None."""

    def __init__(self, pw, address, token="", tls=False, ca_pem=None):
        self._pw = pw
        self.address = address
        self._token = token or None
        self._tls = tls
        self._ca_pem = ca_pem
        self._requests = queue.Queue()
        self._results = queue.Queue()
        self._lock = threading.Lock()
        self._state = CONNECTING
        self._error = ""
        self._registrations = {}  # key -> Registration (wanted)
        self._registered = set()  # keys registered in the current session
        self._character_ids = {}  # key -> id in the current session
        self._version = 0  # makes every registration's ids unique
        self._next_ticket = 0
        self._wake = threading.Event()
        self._stop = False
        self.server_info = None
        # Automatic resumes of the session on another replica, and what the
        # last one said (for the panel).
        self.resumes = 0
        self.last_resume = ""
        self._cancelled_bakes = set()
        self.calls = collections.Counter()  # "Bake", "Session frame"
        self._thread = threading.Thread(target=self._run, name="posewire",
                                        daemon=True)
        self._thread.start()

    # ---------------------------------------------------------- UI thread --

    @property
    def state(self):
        with self._lock:
            return self._state

    @property
    def error(self):
        with self._lock:
            return self._error

    def register(self, key, skeleton, ops):
        """Registers (or re-registers, after a set-up change) a character
        with its skeleton and rig pipeline. Returns the ticket."""
        return self._put(Registration(key, skeleton, list(ops)))

    def send_frame(self, key, character_frame, dt, latest_only=True):
        """Queues one frame for a registered character. latest_only: if a
        newer frame for the same key is queued before this one is sent, this
        one is dropped (live editing only needs the newest pose); a bake
        sends with latest_only False. Returns the ticket."""
        with self._lock:
            self._next_ticket += 1
            ticket = self._next_ticket
        self._requests.put(_Frame(ticket, key, character_frame, dt,
                                  latest_only))
        return ticket

    def bake(self, key, request, joint_names=()):
        """Queues a Bake call (a posewire.v1.BakeRequest); its BakeProgress
        and BakeResult come back through poll. Returns the ticket."""
        with self._lock:
            self._next_ticket += 1
            ticket = self._next_ticket
        self._requests.put(_Bake(ticket, key, request, list(joint_names)))
        return ticket

    def cancel_bake(self, ticket):
        """Stops a queued or running bake (at its next message of frames);
        it ends with a CANCELLED BakeResult."""
        with self._lock:
            self._cancelled_bakes.add(ticket)

    def poll(self):
        """Every result that arrived since the last poll (never blocks)."""
        results = []
        while True:
            try:
                results.append(self._results.get_nowait())
            except queue.Empty:
                return results

    def reconnect_now(self):
        """Skips the wait before the next reconnection attempt."""
        self._wake.set()

    def close(self):
        """Stops the worker; it ends the session and closes the channel."""
        with self._lock:
            self._stop = True
        self._requests.put(None)
        self._wake.set()

    def join(self, timeout=None):
        self._thread.join(timeout)

    def _put(self, request):
        with self._lock:
            self._next_ticket += 1
            ticket = self._next_ticket
        self._requests.put((ticket, request))
        return ticket

    # ------------------------------------------------------ worker thread --

    def _set_state(self, state, error=None):
        with self._lock:
            self._state = state
            if error is not None:
                self._error = error

    def _stopping(self):
        with self._lock:
            return self._stop

    def _open(self):
        """Connects, checks the server answers, starts a session."""
        pw = self._pw
        client = pw.Client(self.address, timeout=5.0, token=self._token,
                           tls=self._tls, root_certificates=self._ca_pem)
        try:
            self.server_info = client.info()
            session = client.session(auto_resume=True,
                                     on_resume=self._resumed)
        except Exception:
            client.close()
            raise
        return client, session

    def _run(self):
        attempt = 0
        while not self._stopping():
            self._set_state(CONNECTING)
            try:
                client, session = self._open()
            except self._pw.PosewireError as error:
                self._lost(f"{error.code.name}: {error.message}")
                attempt = self._backoff(attempt)
                continue
            attempt = 0
            self._set_state(CONNECTED, "")
            self._registered.clear()
            try:
                self._serve(client, session)
            except self._pw.PosewireError as error:
                self._lost(f"{error.code.name}: {error.message}")
                attempt = self._backoff(attempt)
            finally:
                try:
                    session.close()
                except self._pw.PosewireError:
                    pass
                client.close()
        self._set_state(CLOSED)

    def _resumed(self, event):
        how = ("handed over by a draining server" if event.handover else
               f"after {event.cause.code.name}, {event.replayed} "
               "messages replayed")
        with self._lock:
            self.resumes += 1
            self.last_resume = (f"session resumed on another replica "
                                f"({how}, {event.seconds * 1000:.0f} ms)")

    def _lost(self, message):
        self._set_state(LOST, f"server {self.address} lost: {message}")

    def _backoff(self, attempt):
        self._wake.wait(_RETRY_SECONDS[min(attempt, len(_RETRY_SECONDS) - 1)])
        self._wake.clear()
        return attempt + 1

    def _next_requests(self):
        """Blocks for the next request, then takes everything queued behind
        it, dropping live frames that a newer frame of the same key
        supersedes."""
        first = self._requests.get()
        batch = [first]
        while True:
            try:
                batch.append(self._requests.get_nowait())
            except queue.Empty:
                break
        newest = {}
        for i, request in enumerate(batch):
            if isinstance(request, _Frame) and request.latest_only:
                newest[request.key] = i
        return [r for i, r in enumerate(batch)
                if not (isinstance(r, _Frame) and r.latest_only
                        and newest[r.key] != i)]

    def _serve(self, client, session):
        """Sends requests until stopped; a PosewireError from the stream
        itself (not from one message) ends the session."""
        for key in list(self._registrations):
            self._register(session, None, self._registrations[key])
        while True:
            for request in self._next_requests():
                if request is None:
                    return
                if isinstance(request, _Frame):
                    self._frame(session, request)
                elif isinstance(request, _Bake):
                    self._bake(client, request)
                else:
                    ticket, registration = request
                    self._registrations[registration.key] = registration
                    self._register(session, ticket, registration)
            if self._stopping():
                return

    def _register(self, session, ticket, registration):
        key = registration.key
        self._version += 1
        version = self._version
        skeleton_id = f"{key}/skeleton/{version}"
        rig_id = f"{key}/rig/{version}"
        character_id = f"{key}/{version}"
        try:
            session.register_skeleton(skeleton_id, registration.skeleton)
            session.register_rig(rig_id, skeleton_id, registration.ops)
            session.register_character(character_id, rig_id)
        except self._pw.PosewireError as error:
            self._registered.discard(key)
            self._results.put(Result(ticket, key, False, str(error), None,
                                     None, None))
            if _stream_ended(session):
                raise
            return
        self._registered.add(key)
        self._character_ids[key] = character_id
        self._results.put(Result(ticket, key, True, "", None, None, None))

    def _frame(self, session, request):
        pw = self._pw
        if request.key not in self._registered:
            self._results.put(Result(
                request.ticket, request.key, False,
                f"'{request.key}' is not registered on the server", None,
                None, None))
            return
        frame = pw.pb.CharacterFrame()
        frame.CopyFrom(request.frame)
        frame.character_id = self._character_ids[request.key]
        self._count("Session frame")
        try:
            result = session.frame([frame], dt=request.dt)
        except pw.PosewireError as error:
            self._results.put(Result(request.ticket, request.key, False,
                                     str(error), None, None, None))
            if _stream_ended(session):
                raise
            return
        character = result.characters[0]
        if character.status.code != 0:
            error = pw.PosewireError.from_status(
                character.status, f"character '{request.key}'")
            self._results.put(Result(request.ticket, request.key, False,
                                     str(error), None, None, None))
            return
        self._results.put(Result(
            request.ticket, request.key, True, "",
            list(character.pose.transforms),
            list(character.model_pose.transforms), list(character.ops)))


    def _count(self, kind):
        with self._lock:
            self.calls[kind] += 1

    def _bake_stopped(self, ticket):
        with self._lock:
            return self._stop or ticket in self._cancelled_bakes

    def _bake(self, client, request):
        """One Bake call; its own failure (a refused request, a cancel, a
        lost server) is its result's, never the session's."""
        ticket, key = request.ticket, request.key

        def on_progress(done, total):
            self._results.put(BakeProgress(ticket, key, done, total))
            return not self._bake_stopped(ticket)

        try:
            if self._bake_stopped(ticket):
                result = BakeResult(
                    ticket, key, False,
                    "Bake: CANCELLED: cancelled before it started", None)
            else:
                self._count("Bake")
                baked = client.run_bake(
                    request.request, on_progress=on_progress,
                    joint_names=request.joint_names)
                result = BakeResult(ticket, key, True, "", baked)
        except self._pw.PosewireError as error:
            result = BakeResult(ticket, key, False, str(error), None)
        except Exception as error:  # noqa: BLE001 - the worker must live on
            # (numpy missing, a malformed answer): the bake reports it.
            result = BakeResult(ticket, key, False,
                                f"Bake: {type(error).__name__}: {error}",
                                None)
        finally:
            with self._lock:
                self._cancelled_bakes.discard(ticket)
        self._results.put(result)


def _stream_ended(session):
    """Whether a PosewireError ended the whole stream (server gone, stream
    cancelled) rather than refusing one message. The client marks the
    session closed in exactly that case."""
    return session.closed

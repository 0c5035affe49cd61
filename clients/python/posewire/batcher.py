"""Many characters submitted one by one, sent as one Session frame per tick.

A game server that drives many characters would otherwise pay one round
trip per character; a FrameBatcher gathers the characters submitted
separately (from any number of threads) into one posewire.v1.Frame and
hands each caller its own character's posewire.v1.CharacterResult:

    with posewire.FrameBatcher(session, expected_characters=len(npcs),
                               max_characters=1024) as batcher:
        for tick in game_ticks:
            futures = [batcher.submit(npc.character_frame(tick), dt=1 / 60)
                       for npc in npcs]
            poses = [future.result().pose for future in futures]

FrameBatcher's docstring states the flush rule (when a batch is sent) and
the threading rule (the batcher's thread is the session's only user while
the batcher is open).
"""

import collections
import concurrent.futures
import dataclasses
import math
import numbers
import threading
import time as _time

import grpc

from posewire.client import PosewireError
from posewire.v1 import posewire_pb2 as _pb

# Far above any server's --max_characters worth running: a larger value is
# a mistake (a delay or a byte count passed by position), not a batch size.
MAX_CHARACTERS_BOUND = 1 << 16

# Why a batch was sent: the names of the BatcherCounters fields that count
# them, in the order of the flush rule.
FULL_TICK = "full_tick"
MAX_CHARACTERS = "max_characters"
REPEAT = "repeat"
DT_OR_TIME = "dt_or_time"
MAX_DELAY = "max_delay"
FLUSH = "flush"


@dataclasses.dataclass
class BatcherCounters:
    """What a FrameBatcher sent so far.

    batches: frames sent; characters: the characters in them;
    failed_batches: frames refused whole or lost with the stream (their
    futures hold the error). The rest count the frames sent for each
    reason of the flush rule: full_tick (1), max_characters (2), repeat (3,
    a character submitted again), dt_or_time (3, another dt or time),
    max_delay (4), flush (5, flush() or close()); they add up to batches.
    """
    batches: int = 0
    characters: int = 0
    failed_batches: int = 0
    full_tick: int = 0
    max_characters: int = 0
    repeat: int = 0
    dt_or_time: int = 0
    max_delay: int = 0
    flush: int = 0


class _Batch:
    """Characters that go out in one frame, with the future of each."""

    def __init__(self, dt, time, started):
        self.dt = dt
        self.time = time
        # time.monotonic() of the first submit: rule 4 counts from it.
        self.started = started
        self.frames = []
        self.futures = []
        self.ids = set()
        self.reason = None

    def add(self, frame, future):
        self.frames.append(frame)
        self.futures.append(future)
        self.ids.add(frame.character_id)

    def __len__(self):
        return len(self.frames)


class FrameBatcher:
    """Gathers characters submitted separately into one Session frame.

    session: an open posewire.Session, with its skeletons, rigs and
      characters registered. The batcher does not own it: close the session
      after the batcher.
    expected_characters: characters per tick (0: no fixed count); a full
      tick is sent at once, without waiting for max_delay.
    max_characters: most characters in one frame, from 1 to
      MAX_CHARACTERS_BOUND and at least expected_characters.
    max_delay: seconds the oldest waiting submit may wait (finite, >= 0).

    Flush rule: the waiting batch is sent as one frame (sequence: the
    session's next; the batch's dt and time) as soon as the first of these
    holds:
      1. expected_characters > 0 and that many characters are waiting (a
         full tick);
      2. max_characters are waiting (keep it at or under the server's
         limits.max_characters_per_batch from GetInfo, 1024 by default);
      3. a character already waiting is submitted again, or a submit comes
         with a different dt or time: the waiting batch goes first, so each
         character's frames reach the server in the order submitted and
         each batch has one dt and time (the server solves a character
         listed twice in one frame twice, so a batch never lists a
         character twice);
      4. the oldest waiting submit has waited max_delay seconds (so a
         submit is sent within max_delay plus the time of the frame in
         flight);
      5. flush() or close().

    Threading rule: submit, flush and close may be called from any thread.
    One background thread sends every frame, one in flight at a time;
    submits that arrive meanwhile wait for the next batch. While the
    batcher is open that thread is the session's only user: do not call
    the session (frame, register_*, query, snapshot, close) until close()
    has returned. Futures complete on that thread, so their done callbacks
    run there: keep them short (they may submit; a flush or close from one
    does not wait).
    """

    def __init__(self, session, expected_characters=0, max_characters=64,
                 max_delay=0.001):
        _check_count("expected_characters", expected_characters, 0,
                     MAX_CHARACTERS_BOUND)
        _check_count("max_characters", max_characters, 1,
                     MAX_CHARACTERS_BOUND)
        if expected_characters > max_characters:
            # Rule 2 would always fire first: a full tick would never be
            # recognised and its last characters would wait for max_delay.
            raise ValueError(
                f"expected_characters ({expected_characters}) exceeds "
                f"max_characters ({max_characters})")
        self._session = session
        self._expected = expected_characters
        self._max_characters = max_characters
        self._max_delay = _check_seconds("max_delay", max_delay)
        self._counters = BatcherCounters()
        # Guards everything below; the sender waits on it for work, flush
        # for the sender.
        self._changed = threading.Condition()
        self._waiting = None
        self._sealed = collections.deque()
        # Batches sealed and batches the sender is done with, ever: flush
        # waits until the second catches up with the first.
        self._sealed_total = 0
        self._finished_total = 0
        self._closed = False
        self._thread = threading.Thread(
            target=self._run, name="posewire-frame-batcher", daemon=True)
        self._thread.start()

    @property
    def counters(self):
        """A copy of the BatcherCounters, consistent at one instant."""
        with self._changed:
            return dataclasses.replace(self._counters)

    def submit(self, character, dt=0.0, time=None):
        """Queues one character for the next frame; returns a
        concurrent.futures.Future of its posewire.v1.CharacterResult.

        character: a posewire.v1.CharacterFrame (copied here, so the caller
        may reuse it) or a character id (the character just runs its rig).
        dt: seconds since the character's previous frame (finite, >= 0).
        time: the game's tick time (Frame.time) or None.

        The future raises PosewireError when the character failed (its
        CharacterResult.status, the message naming the character) or its
        whole frame did (the frame's error, shared by the batch). Raises
        RuntimeError once the batcher is closed.
        """
        frame = _character_frame(character)
        dt = _check_seconds("dt", dt)
        if time is not None:
            time = _check_time(time)
        future = concurrent.futures.Future()
        with self._changed:
            if self._closed:
                raise RuntimeError(
                    "FrameBatcher.submit: the batcher is closed")
            sealed_before = self._sealed_total
            self._make_room_for(frame.character_id, dt, time)
            starts_batch = self._waiting is None
            if starts_batch:
                self._waiting = _Batch(dt, time, _time.monotonic())
            self._waiting.add(frame, future)
            self._seal_if_full()
            # The sender cares about a new batch (its max_delay clock
            # starts) or a sealed one; waking it for every other submit
            # would only make it fight the submitters for the GIL.
            if starts_batch or self._sealed_total != sealed_before:
                self._changed.notify_all()
        return future

    def flush(self):
        """Sends what is waiting now and returns once every character
        submitted before has been answered (at once when called from a
        future's done callback, which runs on the sending thread)."""
        with self._changed:
            self._seal(FLUSH)
            self._changed.notify_all()
            target = self._sealed_total
            if self._on_sender_thread():
                return
            # The sender never stops with sealed batches left unless it
            # died; checking keeps a bug there from hanging the caller.
            while (self._finished_total < target
                   and self._thread.is_alive()):
                self._changed.wait(0.1)

    def close(self):
        """Sends what is waiting, waits for every frame to be answered,
        and stops the sending thread. Later submits raise; calling close
        again does nothing. The session stays open."""
        with self._changed:
            if not self._closed:
                self._closed = True
                self._seal(FLUSH)
                self._changed.notify_all()
        if not self._on_sender_thread():
            self._thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- under the lock ------------------------------------------------

    def _make_room_for(self, character_id, dt, time):
        """Rule 3: a repeated character, or another dt or time, sends the
        waiting batch first."""
        batch = self._waiting
        if batch is None:
            return
        if character_id in batch.ids:
            self._seal(REPEAT)
        elif batch.dt != dt or batch.time != time:
            self._seal(DT_OR_TIME)

    def _seal_if_full(self):
        """Rules 1 and 2, checked after each submit."""
        waiting = len(self._waiting)
        if self._expected > 0 and waiting >= self._expected:
            self._seal(FULL_TICK)
        elif waiting >= self._max_characters:
            self._seal(MAX_CHARACTERS)

    def _seal(self, reason):
        """Closes the waiting batch (if any) and queues it to be sent."""
        if self._waiting is None:
            return
        self._waiting.reason = reason
        self._sealed.append(self._waiting)
        self._sealed_total += 1
        self._waiting = None

    def _next_batch(self):
        """Blocks until a batch is due (rule 4 is checked here); None once
        closed with nothing left."""
        while True:
            if self._sealed:
                return self._sealed.popleft()
            if self._waiting is None:
                if self._closed:
                    return None
                self._changed.wait()
                continue
            remaining = (self._waiting.started + self._max_delay
                         - _time.monotonic())
            if remaining <= 0:
                self._seal(MAX_DELAY)
            else:
                self._changed.wait(remaining)

    def _count_sent(self, batch):
        counters = self._counters
        counters.batches += 1
        counters.characters += len(batch)
        setattr(counters, batch.reason, getattr(counters, batch.reason) + 1)

    # -- the sending thread ----------------------------------------------

    def _on_sender_thread(self):
        return threading.current_thread() is self._thread

    def _run(self):
        while True:
            with self._changed:
                batch = self._next_batch()
            if batch is None:
                return
            try:
                self._send(batch)
            except Exception as error:  # noqa: BLE001 - handed to callers
                # A bug here must neither strand this batch's callers nor
                # stop the batches after it.
                _fail_unfinished(batch.futures, error)
            finally:
                with self._changed:
                    self._finished_total += 1
                    self._changed.notify_all()

    def _send(self, batch):
        _drop_cancelled(batch)
        if not batch.frames:
            return
        with self._changed:
            self._count_sent(batch)
        try:
            result = self._session.frame(batch.frames, dt=batch.dt,
                                         time=batch.time)
        except Exception as error:  # noqa: BLE001 - each future gets it
            # The frame was refused whole or the stream broke: every
            # character of the batch shares the error; the next batch
            # still tries (a session with auto_resume may recover).
            with self._changed:
                self._counters.failed_batches += 1
            for future in batch.futures:
                future.set_exception(error)
            return
        _deliver(batch, result)


def _deliver(batch, result):
    """Each future gets the CharacterResult at its own position."""
    answers = result.characters
    for position, (frame, future) in enumerate(
            zip(batch.frames, batch.futures)):
        context = f"character '{frame.character_id}'"
        if position >= len(answers):
            future.set_exception(PosewireError(
                grpc.StatusCode.INTERNAL,
                f"frame {result.sequence} answered {len(answers)} "
                f"characters for {len(batch.frames)} sent", context))
            continue
        answer = answers[position]
        if answer.character_id != frame.character_id:
            future.set_exception(PosewireError(
                grpc.StatusCode.INTERNAL,
                f"frame {result.sequence} answered '{answer.character_id}' "
                f"at position {position}", context))
        elif answer.status.code != 0:
            future.set_exception(
                PosewireError.from_status(answer.status, context))
        else:
            future.set_result(answer)


def _drop_cancelled(batch):
    """Leaves out the characters whose future the caller cancelled (and
    marks the rest running, so they can no longer be cancelled)."""
    kept = [(frame, future) for frame, future in
            zip(batch.frames, batch.futures)
            if future.set_running_or_notify_cancel()]
    batch.frames = [frame for frame, _ in kept]
    batch.futures = [future for _, future in kept]


def _fail_unfinished(futures, error):
    for future in futures:
        if not future.done():
            future.set_exception(error)


def _character_frame(character):
    if isinstance(character, str):
        return _pb.CharacterFrame(character_id=character)
    if isinstance(character, _pb.CharacterFrame):
        frame = _pb.CharacterFrame()
        frame.CopyFrom(character)
        return frame
    raise TypeError(
        "FrameBatcher.submit: character must be a posewire.v1.CharacterFrame "
        f"or a character id string, not {type(character).__name__}")


def _check_count(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, not "
                        f"{type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low} to {high}, not {value}")


def _check_seconds(name, value):
    """A finite, non-negative number of seconds, as a float."""
    value = _check_real(name, value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, not {value}")
    return value


def _check_time(value):
    value = _check_real("time", value)
    if not math.isfinite(value):
        raise ValueError(f"time must be finite, not {value}")
    return value


def _check_real(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not "
                        f"{type(value).__name__}")
    return float(value)

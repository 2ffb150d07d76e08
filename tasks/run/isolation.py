"""Run computations in forked worker processes that can be stopped: a real timeout and memory limit.

Threads cannot be interrupted, so a stuck check would hold the whole run and a runaway allocation
would kill it. A forked child shares the parent's memory copy-on-write, so the frames the parent
already holds reach the child for free; only the (small) return value is pickled back through a pipe.
A `Lane` is one such worker that computes several calls one after another, each within its own limits,
so a run of many cheap checks forks a few workers rather than one per check.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import resource
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")

# How long a terminated worker gets to exit before it is killed.
TERMINATE_GRACE_S = 2.0
PR_SET_PDEATHSIG = 1  # prctl option: the signal a process gets when its parent thread ends


class IsolationError(RuntimeError):
    """The isolated computation did not produce a value."""


class CheckTimeout(IsolationError):
    """The worker ran past its time limit and was stopped."""


class WorkerDied(IsolationError):
    """The worker ended without an answer (killed, out of memory, or exited)."""


class WorkerRaised(IsolationError):
    """The computation raised an exception that could not be sent back as itself."""


def fork_available() -> bool:
    """Whether this platform can fork workers (Linux and other POSIX systems)."""
    return "fork" in multiprocessing.get_all_start_methods()


def may_fork_workers() -> bool:
    """Whether this process can start worker processes: the platform forks and the process is not a
    daemon (a Dask worker, say, which may not have children)."""
    return fork_available() and not multiprocessing.current_process().daemon


def _limit_memory(memory_mb: int | None) -> None:
    """Cap the worker's address space at what it has now plus `memory_mb` (None: lift the cap). Only
    the soft limit is set, so a lane can lift it again for its next call."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = hard
    if memory_mb is not None:
        with open("/proc/self/statm") as fh:
            current = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = current + memory_mb * 2**20
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when `parent` (the thread that started it) dies (Linux), so
    nothing a run starts outlives it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _send(conn: Connection, message: tuple[str, Any]) -> None:
    try:
        conn.send(message)
    except Exception as exc:  # an unpicklable value or exception is described instead
        conn.send(("raised", (type(exc).__name__, f"result could not be sent back: {exc}")))


def plain_logging() -> None:
    """Logging in a forked worker: one plain stderr handler, none of the parent's. A parent's handler
    (a rich console, an orchestrator's log queue) may hold a lock that another thread of the parent
    had at the fork, and its background thread does not exist here: writing through it could block
    for ever. (The logging module's own locks are made anew at a fork.)"""
    manager = logging.Logger.manager
    loggers = [logging.root, *(v for v in manager.loggerDict.values() if isinstance(v, logging.Logger))]
    for logger in loggers:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.propagate = True
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    logging.root.addHandler(handler)


def _answer(conn: Connection, call: Callable[[], Any], memory_mb: int | None) -> bool:
    """Compute `call` within `memory_mb` and send its outcome; False when it ran out of memory (the
    worker then leaves rather than compute on in a state the failed allocation may have left)."""
    _limit_memory(memory_mb)
    try:
        _send(conn, ("ok", call()))
    except MemoryError:
        _send(conn, ("memory", memory_mb))
        return False
    except BaseException as exc:
        try:
            pickle.dumps(exc)
            _send(conn, ("exception", exc))
        except Exception:
            _send(conn, ("raised", (type(exc).__name__, str(exc))))
    _limit_memory(None)
    return True


def _serve(calls: Sequence[Callable[[], Any]], conn: Connection, parent: int) -> None:
    """Body of a worker: compute `calls[i]` for each `(i, memory_mb)` request, answer each once, and
    leave at the end (None or a closed pipe) without running the parent's exit hooks."""
    code = 0
    try:
        die_with_parent(parent)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        plain_logging()
        while (request := _next_request(conn)) is not None:
            index, memory_mb = request
            if not _answer(conn, calls[index], memory_mb):
                break
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _next_request(conn: Connection) -> tuple[int, int | None] | None:
    """The next call to compute, or None when the parent is done with this worker (it says so, or its
    end of the pipe is closed)."""
    try:
        return conn.recv()
    except EOFError:
        return None


def _stop(process: multiprocessing.process.BaseProcess) -> None:
    """Terminate, then kill, then reap the worker."""
    process.terminate()
    process.join(TERMINATE_GRACE_S)
    if process.is_alive():
        process.kill()
        process.join()


def _death(exitcode: int | None) -> WorkerDied:
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (out of memory?)" if -exitcode == signal.SIGKILL else ""
        return WorkerDied(f"worker killed by {name}{hint}")
    return WorkerDied(f"worker exited with code {exitcode} without an answer")


def _outcome(kind: str, value: Any) -> Any:
    """The computation's value, or the exception that stands for how it failed."""
    if kind == "ok":
        return value
    if kind == "exception":
        raise value
    if kind == "memory":
        raise MemoryError(f"ran out of its memory limit ({value} MB)")
    name, message = value
    raise WorkerRaised(f"{name}: {message}")


class Lane:
    """A forked worker that computes `calls[i]` on request, one call at a time, each within its own time
    and memory limit. A call that times out, ends the worker or runs out of memory closes the lane
    (its worker stopped); the caller starts another for the calls that remain.

    The worker is forked by the thread that creates the lane and dies with that thread (Linux): use a
    lane from the thread that made it, and close it there.
    """

    def __init__(self, calls: Sequence[Callable[[], Any]], label: str = "worker") -> None:
        context = multiprocessing.get_context("fork")
        self._conn, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(calls, child, os.getpid()), name=f"driftline-{label}", daemon=True
        )
        self.process.start()
        child.close()
        self.closed = False

    def compute(self, index: int, *, timeout_s: float | None, memory_mb: int | None = None) -> Any:
        """`calls[index]()` computed in the worker; raises CheckTimeout past `timeout_s`, WorkerDied when
        the worker ends without answering, MemoryError past `memory_mb`, or the exception the call
        raised."""
        if self.closed:
            raise RuntimeError("this lane is closed")
        try:
            self._conn.send((index, memory_mb))
            if not self._conn.poll(timeout_s):
                self.close(stop=True)
                raise CheckTimeout(f"timed out after {timeout_s:g} s")
            kind, value = self._conn.recv()
        except (EOFError, BrokenPipeError):
            self.close()
            raise _death(self.process.exitcode) from None
        if kind == "memory":
            self.close()
        return _outcome(kind, value)

    def close(self, stop: bool = False) -> None:
        """Let the worker leave, or `stop` it now (a stuck call); either way it is reaped, and stopped
        if it has not left within the grace period."""
        if self.closed:
            return
        self.closed = True
        if not stop:
            self._say_goodbye()
            self.process.join(TERMINATE_GRACE_S)
        self._conn.close()
        if self.process.is_alive():
            _stop(self.process)
        self.process.join()

    def _say_goodbye(self) -> None:
        """Tell the worker to leave (closing the pipe is not enough: workers forked since hold copies of
        its end)."""
        with contextlib.suppress(OSError):  # the worker is gone already
            self._conn.send(None)

    def __enter__(self) -> Lane:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def run_isolated(
    fn: Callable[[], T], *, timeout_s: float | None, memory_mb: int | None = None, label: str = "worker"
) -> T:
    """`fn()` computed in a forked worker of its own; raises CheckTimeout past `timeout_s`, WorkerDied
    when the worker ends without answering, MemoryError past `memory_mb`, or the exception `fn` raised.

    Safe to call from several threads at once: each call has its own worker and pipe.
    """
    with Lane([fn], label) as lane:
        return lane.compute(0, timeout_s=timeout_s, memory_mb=memory_mb)

"""Run one computation in a forked worker process that can be stopped: a real timeout and memory limit.

Threads cannot be interrupted, so a stuck check would hold the whole run and a runaway allocation
would kill it. A forked child shares the parent's memory copy-on-write, so the frames the parent
already holds reach the child for free; only the (small) return value is pickled back through a pipe.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import resource
import signal
import sys
import traceback
from collections.abc import Callable
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


def _limit_memory(memory_mb: int) -> None:
    """Cap the worker's address space at what it has now plus `memory_mb`."""
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = current + memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


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


def _child(fn: Callable[[], Any], conn: Connection, memory_mb: int | None, parent: int) -> None:
    """Body of the worker: compute, answer once, and leave without running the parent's exit hooks."""
    code = 0
    try:
        die_with_parent(parent)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        plain_logging()
        if memory_mb is not None:
            _limit_memory(memory_mb)
        try:
            _send(conn, ("ok", fn()))
        except MemoryError:
            _send(conn, ("memory", memory_mb))
        except BaseException as exc:
            try:
                pickle.dumps(exc)
                _send(conn, ("exception", exc))
            except Exception:
                _send(conn, ("raised", (type(exc).__name__, str(exc))))
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


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


def run_isolated(
    fn: Callable[[], T], *, timeout_s: float | None, memory_mb: int | None = None, label: str = "worker"
) -> T:
    """`fn()` computed in a forked worker; raises CheckTimeout past `timeout_s`, WorkerDied when the
    worker ends without answering, MemoryError past `memory_mb`, or the exception `fn` raised.

    Safe to call from several threads at once: each call has its own worker and pipe.
    """
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_child, args=(fn, sender, memory_mb, os.getpid()), name=f"driftline-{label}", daemon=True
    )
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout_s):
            _stop(process)
            raise CheckTimeout(f"timed out after {timeout_s:g} s")
        try:
            kind, value = receiver.recv()
        except EOFError:
            process.join()
            raise _death(process.exitcode) from None
        process.join()
        return _outcome(kind, value)
    finally:
        receiver.close()
        if process.is_alive():
            _stop(process)

"""The local engine's process pool: a table on a local disk is listed and planned by several
forked processes, each over a share of its folders, as Hudi's `HoodieLocalEngineContext.map`
maps over partitions with a parallel stream."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from timeline.exceptions import CleanlineError

T = TypeVar("T")
MAX_LOCAL_PROCESSES = 8


def local_processes(environ: Mapping[str, str] | None = None) -> int:
    """`CLEANLINE_LOCAL_PROCESSES`: how many processes the local engine lists and plans a table on
    a local disk with, as Hudi's HoodieLocalEngineContext.map maps over partitions with a
    parallel stream (default: the machine's cores, at most 8; 1: this process only). The CLI
    uses it; the console's workers plan in their own process (a Celery pool process may not
    have children)."""
    value = (os.environ if environ is None else environ).get("CLEANLINE_LOCAL_PROCESSES", "")
    if not value.strip():  # the cores this process may run on (its affinity), not the machine's
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(cores, MAX_LOCAL_PROCESSES))
    try:
        count = int(value)
    except ValueError:
        count = 0
    if count < 1:
        raise CleanlineError(f"CLEANLINE_LOCAL_PROCESSES={value!r}: expected a whole number of processes, 1 or more")
    return count


def may_fork() -> bool:
    """Whether this process may fork workers: the platform forks, no other Python thread runs
    (a fork copies only the calling thread, and the locks the others hold), and it is not a
    daemonic multiprocessing process, which may not have children. Threads that native
    libraries start are not seen here; the children use only Python and the file system.
    (Celery's pool processes are billiard's, not seen either: the console plans with one
    process.)"""
    return ("fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
            and not multiprocessing.current_process().daemon)


def fork_map(work: Callable[[int, int], T], processes: int) -> list[T]:
    """`work(i, n)` for every share i of n, in share order: share 0 in this process, the others
    in forked children, which inherit this process's memory (nothing is sent to them) and send
    their result back pickled. With one process, or where `may_fork` says no, everything runs
    here as one share: `[work(0, 1)]`. An error in a child is raised here."""
    if processes <= 1 or not may_fork():
        return [work(0, 1)]
    context = multiprocessing.get_context("fork")
    children = []
    try:
        for index in range(1, processes):
            receive, send = context.Pipe(duplex=False)
            child = context.Process(target=_share, args=(work, index, processes, send), daemon=True,
                                    name=f"cleanline-share-{index}")
            try:
                child.start()
            except BaseException:
                receive.close()
                raise
            finally:
                send.close()
            children.append((child, receive))
        results = [work(0, processes)]
        for child, receive in children:
            try:
                answer = receive.recv_bytes()
            except EOFError:
                child.join()
                raise CleanlineError(f"a local engine process (share {len(results)} of {processes}) ended without "
                                     f"an answer (exit code {child.exitcode})") from None
            ok, value = pickle.loads(answer)
            if not ok:
                raise value
            results.append(value)
        return results
    finally:
        for child, receive in children:
            receive.close()
            if child.is_alive() and child.exitcode is None:
                child.join(timeout=5)
            if child.is_alive():
                child.kill()
                child.join()


def _share(work: Callable[[int, int], Any], index: int, count: int, send: Any) -> None:
    """A forked child: one share's result (or its error), pickled, down the pipe. An error goes
    as itself when it comes back the same (type and message), else as a CleanlineError with its
    message: library errors built from (path, reason) do not unpickle whole."""
    try:
        answer: tuple[bool, Any] = (True, work(index, count))
    except BaseException as exc:  # sent to the parent, which raises it
        answer = (False, exc)
    try:
        data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        if not answer[0]:
            back = pickle.loads(data)[1]
            if type(back) is not type(answer[1]) or str(back) != str(answer[1]):
                raise TypeError("the error does not come back the same")
    except Exception:
        error = answer[1] if not answer[0] else None
        text = str(error) if isinstance(error, CleanlineError) else f"{type(error).__name__}: {error}"
        if error is None:
            text = f"share {index} of {count}: its result does not pickle"
        data = pickle.dumps((False, CleanlineError(text)))
    try:
        send.send_bytes(data)
        send.close()
    except OSError:  # the parent stopped listening (it failed or was interrupted): nothing to tell
        pass


__all__ = ["MAX_LOCAL_PROCESSES", "fork_map", "local_processes", "may_fork"]

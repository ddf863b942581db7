"""Run one container under the TIRA contract and a sandbox policy, and say how it ended.

This module only executes: it mounts, starts, watches (time, memory, output
size, logs), kills when a limit is hit, always removes the container, and
returns a :class:`RunResult`. Choosing defaults from a task, validating the
output and writing the run record happen in :mod:`sharedtask.sandbox.api`.

The contract is TIRA's (docs/task-contract.md, "The execution
contract"); the mounts, variables and ``$var`` substitution mirror what
``tira-run`` does (tira 0.0.207, ``tira/local_execution_integration.py``).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sharedtask.images.client import docker_client
from sharedtask.errors import SharedTaskError
from sharedtask.sandbox import limitfs
from sharedtask.sandbox.bounds import Bounds, declared_volumes
from sharedtask.sandbox.cpu import profile
from sharedtask.sandbox.interrupts import MESSAGE, Interrupted, step, stopping
from sharedtask.sandbox.orphans import OWNER_LABEL, SANDBOX_LABEL, owner, reap_orphans, signals_held
from sharedtask.sandbox.outputs import Usage, output_usage
from sharedtask.sandbox.policy import INPUT_MOUNT, INPUT_RUN_MOUNT, OUTPUT_MOUNT, Limits, Policy
from sharedtask.sandbox.probes import MemoryProbe
from sharedtask.units import format_size

# Statuses of a finished run (the run record's "status").
SUCCESS, FAILED, TIMEOUT, OOM, OUTPUT_LIMIT, DISK_LIMIT, INTERRUPTED = (
    "success", "failed", "timeout", "oom", "output-limit", "disk-limit", "interrupted",
)
SAMPLE_INTERVAL = 0.1  # s between memory samples, limit checks and UI ticks
#: Walks of $outputDir and of the container's writable layer take at most this share of
#: the time between checks (the interval grows with the cost of a walk, never below
#: SAMPLE_INTERVAL): a bound on the overshoot of the output and disk limits.
WALK_SHARE = 0.25
LOG_FILE_CAP = 64 * 1024**2  # bytes kept per stream on disk
TAIL_LINES = 20


@dataclass(frozen=True)
class RunRequest:
    """What to run, where, and under which policy."""

    image: str
    input_dir: Path
    output_dir: Path
    log_dir: Path
    policy: Policy
    command: str | None = None  # None: the image's ENTRYPOINT/CMD
    input_run: Path | None = None
    dataset_id: str = "unknown"
    #: what the container sees as ``$inputDataset`` when it is not ``input_dir``: a re-ranker's
    #: re-rank dataset (docs/pipelines.md); ``input_dir`` stays the dataset the run is of.
    dataset_mount: Path | None = None
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class Snapshot:
    """Live state for progress displays."""

    elapsed: float
    timeout: float
    memory_current: int | None
    memory_peak: int | None
    memory_limit: int
    output_bytes: int
    output_limit: int


@dataclass
class RunResult:
    status: str
    message: str
    exit_code: int | None
    started_at: str
    ended_at: str
    wall_seconds: float
    image: str
    image_id: str
    container_id: str
    repo_digests: list[str]
    container_command: list[str] | None
    container_entrypoint: list[str] | None
    command: str | None
    environment: dict[str, str]
    mounts: dict[str, dict[str, str]]
    oom_killed: bool
    peak_memory: int | None
    peak_memory_source: str
    output_bytes: int
    output_entries: int
    output_enforcement: str
    output_disk_bytes: int | None  # blocks used on the output file system (kernel-enforced runs)
    disk_bytes: int | None
    disk_enforcement: str
    stdout_path: Path
    stderr_path: Path
    log_tail: list[str]
    log_truncated: bool
    container_options: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.status == SUCCESS


class RunObserver(Protocol):
    """Receives live events; implementations must be fast (called from the run loop/threads)."""

    def started(self, request: RunRequest, container_id: str) -> None: ...
    def log(self, stream: str, line: str) -> None: ...
    def tick(self, snapshot: Snapshot) -> None: ...
    def finished(self, result: RunResult) -> None: ...




def substitute(command: str, has_input_run: bool) -> str:
    """Replace ``$inputDataset``/``$outputDir``/``$inputRun`` (and ``${...}``) like tira-run."""
    mapping = {"inputDataset": INPUT_MOUNT, "outputDir": OUTPUT_MOUNT}
    if has_input_run:
        mapping["inputRun"] = INPUT_RUN_MOUNT
    for name, value in mapping.items():
        command = command.replace("${" + name + "}", value).replace("$" + name, value)
    return command


def contract_environment(dataset_id: str, has_input_run: bool) -> dict[str, str]:
    """The variables TIRA sets (docs/task-contract.md)."""
    env = {
        "inputDataset": INPUT_MOUNT,
        "outputDir": OUTPUT_MOUNT,
        "TIRA_INPUT_DATASET": INPUT_MOUNT,
        "TIRA_OUTPUT_DIR": OUTPUT_MOUNT,
        "TIRA_DATASET_ID": dataset_id,
    }
    if has_input_run:
        env["inputRun"] = INPUT_RUN_MOUNT
    return env


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def check_output_dir(output_dir: Path) -> None:
    """An output folder is a new or an empty folder (TIRA starts with an empty $outputDir)."""
    if output_dir.exists() and not output_dir.is_dir():
        raise SharedTaskError(f"output directory {output_dir} is a file, not a folder", hint="choose a new --output")
    if output_dir.is_dir() and any(output_dir.iterdir()):
        raise SharedTaskError(
            f"output directory {output_dir} is not empty",
            hint="TIRA starts with an empty $outputDir: choose a new --output or remove it",
        )


def _prepare_output(output_dir: Path, user: str | None) -> None:
    """The output directory must exist, be empty (TIRA) and be writable by the container user."""
    check_output_dir(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    _give_to_container(output_dir, user)


def _give_to_container(folder: Path, user: str | None) -> None:
    """Let the container user write to ``folder`` (the run's output folder, or its bounded file system)."""
    uid, _, gid = (user or "").partition(":")
    if user is not None and int(uid) == os.getuid():
        return
    if user is not None and os.geteuid() == 0:
        os.chown(folder, int(uid), int(gid or uid))
    else:
        # Unknown or foreign container user without CAP_DAC_OVERRIDE (all caps are
        # dropped): only a world-writable directory lets it write.
        folder.chmod(0o777)


class _LogPump(threading.Thread):
    """Copies one output stream of the container to a file and to the shared tail."""

    def __init__(self, container: Any, stream: str, path: Path, tail: deque[str],
                 observer: RunObserver | None) -> None:
        super().__init__(name=f"sandbox-log-{stream}", daemon=True)
        self.container, self.stream, self.path = container, stream, path
        self.tail, self.observer = tail, observer
        self.truncated = False
        self.error: str | None = None

    def run(self) -> None:
        written = 0
        pending = ""
        try:
            chunks = self.container.logs(
                stdout=self.stream == "stdout", stderr=self.stream == "stderr", stream=True, follow=True
            )
            with self.path.open("wb") as fh:
                for chunk in chunks:
                    if written < LOG_FILE_CAP:
                        part = chunk[: LOG_FILE_CAP - written]
                        fh.write(part)
                        written += len(part)
                        if len(part) < len(chunk):
                            self.truncated = True
                    else:
                        self.truncated = True
                    pending += chunk.decode("utf-8", errors="replace")
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        self._emit(line)
                    if len(pending) > 4096:  # a huge line without newline: show its start
                        self._emit(pending[:4096])
                        pending = ""
                if pending:
                    self._emit(pending)
        except Exception as exc:  # noqa: BLE001 - a broken log stream must not break the run
            self.error = f"{exc.__class__.__name__}: {exc}"

    def _emit(self, line: str) -> None:
        line = line.rstrip("\r")
        prefix = "" if self.stream == "stdout" else "[stderr] "
        self.tail.append(prefix + line)
        if self.observer is not None:
            self.observer.log(self.stream, line)


class _Waiter(threading.Thread):
    """Blocks on the container's exit so the main loop can keep ticking."""

    def __init__(self, container: Any) -> None:
        super().__init__(name="sandbox-wait", daemon=True)
        self.container = container
        self.done = threading.Event()
        self.status_code: int | None = None
        self.error: str | None = None

    def run(self) -> None:
        try:
            self.status_code = int(self.container.wait()["StatusCode"])
        except Exception as exc:  # noqa: BLE001 - e.g. container removed under us
            self.error = f"{exc.__class__.__name__}: {exc}"
        finally:
            self.done.set()


def _container_spec(request: RunRequest) -> dict[str, Any]:
    has_run = request.input_run is not None
    env = {**profile(request.policy.cpu).env(), **contract_environment(request.dataset_id, has_run)}
    user = request.policy.user
    if user is not None and user.split(":")[0] != "0":
        # A uid the image does not know gets HOME=/ (not writable): caches go to /tmp.
        env["HOME"] = "/tmp"
    mounts = {
        str((request.dataset_mount or request.input_dir).resolve()): {"bind": INPUT_MOUNT, "mode": "ro"},
        str(request.output_dir.resolve()): {"bind": OUTPUT_MOUNT, "mode": "rw"},
    }
    if has_run:
        assert request.input_run is not None
        mounts[str(request.input_run.resolve())] = {"bind": INPUT_RUN_MOUNT, "mode": "ro"}
    spec: dict[str, Any] = {
        "environment": env,
        "volumes": mounts,
        "labels": {SANDBOX_LABEL: "1", OWNER_LABEL: owner(), **request.labels},
        **request.policy.container_options(),
    }
    if request.command is not None:
        # TIRA: `sh -c "<command>"` after substitution; the image needs /bin/sh.
        spec["entrypoint"] = ["sh", "-c"]
        spec["command"] = [substitute(request.command, has_run)]
    return spec


def run_container(request: RunRequest, observer: RunObserver | None = None,
                  stop: threading.Event | None = None) -> RunResult:
    """Run ``request`` to completion (or until a limit is hit) and return what happened.

    Raises :class:`SharedTaskError` for problems the user can fix before anything
    ran (no daemon, unknown image, non-empty output). An interrupt (Ctrl-C, SIGTERM or
    SIGHUP in this thread, or ``stop`` set from another thread) at any step is answered
    the same way (:mod:`sharedtask.sandbox.interrupts`): before the container exists,
    what was made is removed and :class:`Interrupted` raised; after, the container is
    removed and the result has status ``interrupted``, whatever the step under way made
    of it (a failure caused by the stop is not the run's, nor an internal error).
    """
    client = docker_client()
    if not (request.dataset_mount or request.input_dir).is_dir():
        raise SharedTaskError(f"input directory {request.dataset_mount or request.input_dir} does not exist")
    if request.input_run is not None and not request.input_run.is_dir():
        raise SharedTaskError(f"input run directory {request.input_run} does not exist")
    limits = request.policy.limits
    bounds: Bounds | None = None
    try:
        step("image", stop)
        image = local_image(client, request.image)
        reap_orphans(client)
        limitfs.reap()  # after the containers: docker unmounts their layers with them
        _prepare_output(request.output_dir, request.policy.user)
        request.log_dir.mkdir(parents=True, exist_ok=True)
        step("output-fs", stop)
        bounds = Bounds.prepare(limits, declared_volumes(image.attrs),
                                lambda root: _give_to_container(root, request.policy.user))
    except BaseException as exc:
        _raise_interrupted(exc, stop, bounds)
        raise
    assert bounds is not None
    recorded = _container_spec(request)  # the record names the run's own folders
    spec = bounds.apply(recorded, request.output_dir)
    watch = _Watch(request, observer, bounds, stop)
    started_at = _now()
    t0 = time.monotonic()
    container: Any = None
    try:
        with signals_held():  # a signal now is delivered once `container` holds the id
            step("create", stop)
            container = _create(client, image.id, spec, request.policy)
            step("layer", stop)
            watch.upper_dir = bounds.bound_layer(container)
        watch.run(container, t0)
    except BaseException as exc:  # Ctrl-C, SIGTERM or SIGHUP, or a stop request, at any step
        if container is None:
            bounds.release()
            _raise_interrupted(exc, stop, None)
            raise
        if not isinstance(exc, KeyboardInterrupt) and not stopping(stop):
            _finish(container, bounds, request.output_dir)
            raise
        watch.status, watch.message = INTERRUPTED, MESSAGE
    if container is not None:
        _finish(container, bounds, request.output_dir)
    wall = time.monotonic() - t0
    ended_at = _now()
    if stopping(stop) and watch.status is not None:  # whatever the stop made of the step under way
        watch.status, watch.message = INTERRUPTED, MESSAGE
    if watch.status != INTERRUPTED:  # an interrupted run's output is what it is: no verdict on top
        if bounds.copied.error is not None:
            watch.status = FAILED
            watch.message = f"the output could not be copied from its file system: {bounds.copied.error}"
        elif watch.status is None and not bounds.copied.complete:
            watch.status = OUTPUT_LIMIT
            watch.message = (f"output is more than the limit of {format_size(limits.max_output)} "
                             "(hard links count once per name)")
    output = output_usage(request.output_dir, max_bytes=limits.max_output, max_entries=limits.max_output_entries)
    status, message = watch.status, watch.message
    if status is None:
        status, message = _classify(watch.exit_code, watch.oom_killed, output, limits, watch.full)
        if stopping(stop) and status != SUCCESS:  # killed by the stop request (a pool's close)
            status, message = INTERRUPTED, MESSAGE
    for path in (watch.stdout_path, watch.stderr_path):
        path.touch(exist_ok=True)
    memory = watch.memory
    peak, peak_source = memory.peak, memory.source
    if watch.oom_killed and (peak is None or peak < limits.memory):
        # The kernel kills only at the limit; the last sample may predate the final spike.
        peak, peak_source = limits.memory, "the memory limit: the kernel's OOM killer ended the container there"
    elif peak is None:
        peak_source = "not measured: the container exited before the first sample"
    result = RunResult(
        status=status,
        message=message,
        exit_code=watch.exit_code,
        started_at=started_at,
        ended_at=ended_at,
        wall_seconds=round(wall, 3),
        image=request.image,
        image_id=image.id,
        container_id=container.id,
        repo_digests=list(image.attrs.get("RepoDigests") or []),
        container_command=spec.get("command") or image.attrs.get("Config", {}).get("Cmd"),
        container_entrypoint=spec.get("entrypoint") or image.attrs.get("Config", {}).get("Entrypoint"),
        command=request.command,
        environment=dict(spec["environment"]),
        mounts=dict(recorded["volumes"]),
        oom_killed=watch.oom_killed,
        peak_memory=peak,
        peak_memory_source=peak_source,
        output_bytes=output.bytes,
        output_entries=output.entries,
        output_enforcement=bounds.output_enforcement,
        output_disk_bytes=watch.output_disk,
        disk_bytes=watch.disk.bytes if bounds.disk_enforcement.startswith("enforced") else None,
        disk_enforcement=bounds.disk_enforcement,
        stdout_path=watch.stdout_path,
        stderr_path=watch.stderr_path,
        log_tail=list(watch.tail),
        log_truncated=any(p.truncated for p in watch.pumps),
        container_options={k: v for k, v in spec.items() if k not in ("environment", "volumes", "labels")},
    )
    if observer is not None:
        observer.finished(result)
    return result


def _finish(container: Any, bounds: Bounds, output_dir: Path) -> None:
    """Remove the container, then copy its output and release its file systems."""
    with signals_held():  # a second Ctrl-C waits until the container is gone
        bounds.detach_layer()
        _remove(container)  # forced: a running container is killed first
        try:
            bounds.collect(output_dir)
        finally:
            bounds.release(wait=False)


def _raise_interrupted(exc: BaseException, stop: threading.Event | None, bounds: Bounds | None) -> None:
    """Before the container exists: an interrupt, or any failure while a stop request is made,
    releases what was made and raises :class:`Interrupted` (the caller re-raises anything else)."""
    if isinstance(exc, KeyboardInterrupt) or stopping(stop):
        if bounds is not None:
            bounds.release()
        raise Interrupted(f"{MESSAGE} before its container started: nothing of the run was kept") from None
    if bounds is not None:
        bounds.release()


def _create(client: Any, image_id: str, spec: dict[str, Any], policy: Policy) -> Any:
    """Create the container; a runtime the daemon does not know is the user's to fix, in one line."""
    import docker

    if policy.runtime != "runc" and policy.network is not None:
        raise SharedTaskError(f"--runtime {policy.runtime} runs without any network",
                              hint="drop --allow-network/--network, or use --runtime runc")
    try:
        return client.containers.create(image_id, detach=True, **spec)
    except docker.errors.APIError as exc:
        text = str(exc.explanation or exc)
        if "runtime" in text.lower():
            raise SharedTaskError(f"the docker daemon cannot use the runtime {policy.runtime!r}: {text}",
                                  hint="bash docker/setup.sh registers runsc (gVisor) with dockerd") from None
        if "no command specified" in text.lower():  # a FROM scratch image without CMD, and no command given
            raise SharedTaskError("the image has no command to run: no ENTRYPOINT or CMD, and none was given",
                                  hint="give the command (submit --command, tira.yml's command), or set CMD "
                                       "in the Dockerfile") from None
        raise


def local_image(client: Any, reference: str) -> Any:
    """The image, which must already be local: a run never pulls (reproducible offline)."""
    import docker

    try:
        return client.images.get(reference)
    except docker.errors.ImageNotFound:
        raise SharedTaskError(
            f"image {reference} is not available locally",
            hint="build or `docker pull` it first: sharedtask run never pulls (runs must be reproducible offline)",
        ) from None
    except (docker.errors.NullResource, docker.errors.APIError) as exc:
        # A malformed reference ("Bad Image", "x:y:z", "") is the user's typo, not a daemon fault.
        if isinstance(exc, docker.errors.APIError) and exc.status_code != 400:
            raise
        reason = exc.explanation if isinstance(exc, docker.errors.APIError) else "no image name given"
        raise SharedTaskError(f"invalid image reference {reference!r}: {reason}",
                              hint="use name[:tag] in lowercase, e.g. my-team/ranker:1") from None


class _Watch:
    """Starts a created container and watches it (time, memory, output size, logs) until it
    ends or a limit is hit; what it saw is left on its attributes."""

    def __init__(self, request: RunRequest, observer: RunObserver | None, bounds: Bounds,
                 stop: threading.Event | None = None) -> None:
        self.request, self.observer, self.bounds, self.stop = request, observer, bounds, stop
        self.output_disk: int | None = None
        self.full: str | None = None  # the kernel-bounded file system that was full at the end
        self.stdout_path = request.log_dir / "stdout.log"
        self.stderr_path = request.log_dir / "stderr.log"
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.status: str | None = None
        self.message = ""
        self.exit_code: int | None = None
        self.oom_killed = False
        self.memory = MemoryProbe(None, None, SAMPLE_INTERVAL)
        self.pumps: list[_LogPump] = []
        self.output = Usage()
        self.disk = Usage()
        self.upper_dir: str | None = None  # set when the walk holds the disk limit

    def run(self, container: Any, t0: float) -> None:
        import docker

        step("start", self.stop)
        try:
            container.start()
        except docker.errors.APIError as exc:
            self.status, self.message = FAILED, f"container did not start: {exc.explanation or exc}"
            if 'exec: "sh"' in self.message:  # the command runs through `sh -c`, as in TIRA
                self.message += ("; the image has no sh (FROM scratch?): a command runs through `sh -c`, so add "
                                 "a shell (e.g. a static busybox as /bin/sh), or give no command and set the "
                                 "image's ENTRYPOINT/CMD")
            return
        self._probe_memory(container)
        step("logs", self.stop)
        self.pumps = [
            _LogPump(container, "stdout", self.stdout_path, self.tail, self.observer),
            _LogPump(container, "stderr", self.stderr_path, self.tail, self.observer),
        ]
        waiter = _Waiter(container)
        for thread in (*self.pumps, waiter):
            thread.start()
        try:
            step("watch", self.stop)
            self._loop(container, waiter, t0)
        except KeyboardInterrupt:
            _kill(container)
            self.status, self.message = INTERRUPTED, MESSAGE
        for pump in self.pumps:
            pump.join(timeout=10)
        if self.status is None:  # what it wrote in its last interval (the layer goes with the container)
            self._check_usage(final=True)
            over = self._over_limit("")
            if over is not None:
                self.status, self.message = over
            self.full = self.bounds.full()
        state = _inspect_state(container)
        self.oom_killed = bool(state.get("OOMKilled"))
        self.exit_code = waiter.status_code if waiter.status_code is not None else state.get("ExitCode")

    def _probe_memory(self, container: Any) -> None:
        self.memory = MemoryProbe(None, None, SAMPLE_INTERVAL, container.id)
        self.memory.sample()
        if self.observer is not None:
            self.observer.started(self.request, container.id)
        if self.memory.source == "not measured":  # unusual cgroup layout: ask for the pid
            container.reload()
            pid = container.attrs.get("State", {}).get("Pid") or None
            self.memory = MemoryProbe(pid, lambda: container.stats(stream=False, one_shot=True), SAMPLE_INTERVAL)
        self.memory.sample()

    def _check_usage(self, final: bool = False) -> None:
        """Read what the kernel counts (one statvfs per file system); walk where it cannot."""
        limits = self.request.policy.limits
        out_bytes, out_entries, layer_bytes = self.bounds.usage()
        if out_bytes is not None and out_entries is not None:
            self.output_disk = out_bytes
            self.output = Usage(out_bytes, out_entries)
        elif not final:  # after the run the walk of the copied folder reports it
            self.output = output_usage(self.request.output_dir, max_bytes=limits.max_output,
                                       max_entries=limits.max_output_entries)
        if layer_bytes is not None:
            self.disk = Usage(layer_bytes)
        elif self.upper_dir is not None:
            self.disk = _disk_usage(self.upper_dir, limits.disk)

    def _over_limit(self, prefix: str = "killed: ") -> tuple[str, str] | None:
        """The status and message of the first limit passed, if any."""
        limits = self.request.policy.limits
        if self.output.bytes > limits.max_output:
            return OUTPUT_LIMIT, f"{prefix}output exceeded {format_size(limits.max_output)}"
        if self.output.entries > limits.max_output_entries:
            return OUTPUT_LIMIT, (f"{prefix}output has more than {limits.max_output_entries:,} "
                                  "files, directories and links")
        if self.disk.bytes > limits.disk:
            return DISK_LIMIT, (f"{prefix}wrote more than {format_size(limits.disk)} "
                                "to its own file system (disk limit)")
        return None

    def _loop(self, container: Any, waiter: _Waiter, t0: float) -> None:
        """Sample until the container exits; kill it when a limit is hit."""
        limits = self.request.policy.limits
        next_check = 0.0
        while not waiter.done.wait(SAMPLE_INTERVAL):
            elapsed = time.monotonic() - t0
            self.memory.sample()
            if elapsed >= next_check:
                walk_start = time.monotonic()
                self._check_usage()
                cost = time.monotonic() - walk_start
                next_check = elapsed + max(SAMPLE_INTERVAL, cost / WALK_SHARE)
            over = self._over_limit()
            if over is not None:
                self.status, self.message = over
            elif elapsed > limits.timeout:
                self.status = TIMEOUT
                self.message = f"timed out after {limits.timeout:g} s"
            if stopping(self.stop):  # a pool's close or a worker's shutdown
                self.status, self.message = INTERRUPTED, MESSAGE
            if self.status is not None:
                _kill(container)
                waiter.done.wait(30)
                return
            if self.observer is not None:
                self.observer.tick(Snapshot(elapsed, limits.timeout, self.memory.current, self.memory.peak,
                                            limits.memory, self.output.bytes, limits.max_output))


#: What a file system entry costs on disk at least (one block), however small: a million
#: empty files fill inodes and directories even though their sizes add up to nothing.
ENTRY_COST = 4096


def _disk_usage(upper_dir: str, limit: int) -> Usage:
    """Bytes the container wrote to its own layer: allocated blocks, at least a block per entry."""
    return output_usage(Path(upper_dir), max_bytes=limit, entry_cost=ENTRY_COST, allocated=True)


def _classify(exit_code: int | None, oom_killed: bool, output: Usage, limits: Limits,
              full: str | None = None) -> tuple[str, str]:
    """Status and plain-words message of a container that ended by itself; ``full`` names the
    kernel-bounded file system that was full at the end (a failure there was the limit's doing)."""
    if oom_killed and exit_code != 0:
        return OOM, f"killed: out of memory at {format_size(limits.memory)}"
    if full is not None and exit_code != 0:
        if full == "output":
            return OUTPUT_LIMIT, (f"the kernel refused writes past the output limit of {format_size(limits.max_output)} "
                                  f"(exit code {exit_code})")
        return DISK_LIMIT, (f"the kernel refused writes past the disk limit of {format_size(limits.disk)} "
                            f"(exit code {exit_code})")
    if output.bytes > limits.max_output:
        return OUTPUT_LIMIT, (
            f"output is more than the limit of {format_size(limits.max_output)}"
        )
    if output.entries > limits.max_output_entries:
        return OUTPUT_LIMIT, f"output has more than {limits.max_output_entries:,} files, directories and links"
    if exit_code == 0:
        note = " (a process inside ran out of memory, but the command still succeeded)" if oom_killed else ""
        return SUCCESS, f"exited with code 0{note}"
    if exit_code is None:
        return FAILED, "the exit code could not be read"
    if exit_code == 137:
        return FAILED, "killed by SIGKILL (exit code 137), not by a sandbox limit"
    return FAILED, f"exited with code {exit_code}"


def _kill(container: Any) -> None:
    try:
        container.kill()
    except Exception:  # noqa: BLE001 - it may have exited in the meantime
        pass


def _inspect_state(container: Any) -> dict[str, Any]:
    try:
        container.reload()
        return dict(container.attrs.get("State", {}))
    except Exception:  # noqa: BLE001
        return {}


def _remove(container: Any, attempts: int = 3) -> None:
    """Remove the container, trying again when the daemon fails for another reason than
    "gone" or "already being removed" (a busy daemon can fail to kill in time)."""
    import docker

    for attempt in range(attempts):
        try:
            container.remove(force=True, v=True)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if exc.status_code == 409 and "in progress" in str(exc.explanation or exc):
                return
            time.sleep(0.5 * (attempt + 1))
        except Exception:  # noqa: BLE001 - the daemon went away: the next run reaps it (orphans)
            return

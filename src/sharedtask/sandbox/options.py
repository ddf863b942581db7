"""The sandbox's options, declared once.

``sharedtask run``'s flags (:func:`add_arguments`, :func:`from_args`), the keywords of
:func:`sharedtask.sandbox.run` (:func:`resolve`) and what a job may carry to a compute worker
(``executor/admission.py``: :func:`job_names`) are all read from :data:`OPTIONS`. A new
option is one row here; before, each was spelled in the parser, in the command's call, in
``run``'s signature and in the job schema.

Light on purpose (no Docker, no rich): the CLI's parser imports it for ``--help``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Callable, Literal

#: What a job may do with an option: lower a limit of its task, set a harmless choice, or
#: nothing (the worker decides it: user, network).
JobUse = Literal["limit", "choice", "never"]


@dataclass(frozen=True)
class Option:
    """One sandbox option: its keyword of ``sandbox.run``, its flag, and what a job may do with it."""

    name: str
    flag: str
    help: str
    job: JobUse
    metavar: str | None = None
    type: Callable[[str], Any] | None = None  # argparse's; None: the text as given
    choices: tuple[str, ...] | None = None
    default: Any = None  # sandbox.run's default (None: the task's spec, or off)
    switch: bool = False  # a flag without a value (store_true)


OPTIONS: tuple[Option, ...] = (
    Option("timeout", "--timeout", "wall-clock limit: seconds or 90s/15m/2h (default: task spec)", "limit", "S"),
    Option("memory", "--memory", "memory limit, no swap: e.g. 2g, 512m; Docker's minimum is 6m (default: task spec)",
           "limit", "M"),
    Option("cpus", "--cpus", "CPU cores, may be fractional, at most the Docker host's (default: task spec)",
           "limit", "N", float),
    Option("pids", "--pids", "process/thread limit (default: task spec)", "limit", "N", int),
    Option("max_output", "--max-output", "output size limit, e.g. 1g (default: task spec)", "limit", "SIZE"),
    Option("disk", "--disk", "limit on what the container writes to its own file system, outside $outputDir "
                             "and /tmp, e.g. 10g (default: task spec)", "limit", "SIZE"),
    Option("cpu", "--cpu-profile", "hide newer vector units from numpy, OpenBLAS and the JVM in the container: "
                                   "native, haswell (no AVX-512) or nehalem (no AVX); default "
                                   "$SHAREDTASK_CPU_PROFILE or native", "choice", "NAME"),
    Option("runtime", "--runtime", "OCI runtime: runc (docker's default) or runsc (gVisor; see "
                                   "docs/threat-model.md) (default: task spec)", "choice", choices=("runc", "runsc")),
    Option("network", "--network", "join this docker network (implies network access; "
                                   "--allow-network: docker's default bridge). Default: no network", "never", "NAME"),
    Option("user", "--user", "container user: 'me' (default, your uid:gid, so output files are yours), 'image' "
                             "(the image's USER, like TIRA: files usually end up root-owned), or UID[:GID]",
           "never", "UID[:GID]", default="me"),
    Option("read_only_root", "--read-only-root", "also make the image's root file system read-only "
                                                 "(stricter than TIRA)", "choice", default=False, switch=True),
    Option("dataset_id", "--dataset-id", "value of TIRA_DATASET_ID (default: the dataset folder's name)", "choice"),
)
BY_NAME = {option.name: option for option in OPTIONS}
#: ``--allow-network``: the one flag that is not an option's own (it means network="bridge").
ALLOW_NETWORK = "--allow-network"


def job_names(use: JobUse) -> tuple[str, ...]:
    """The options a job may carry as ``use`` (``limit``: lower only; ``choice``), or never."""
    return tuple(option.name for option in OPTIONS if option.job == use)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option as a flag of ``parser`` (``--network`` and ``--allow-network`` exclude each other)."""
    for option in OPTIONS:
        target: Any = parser
        if option.name == "network":
            target = parser.add_mutually_exclusive_group()
            target.add_argument(ALLOW_NETWORK, action="store_true",
                                help="join docker's default bridge network (TIRA runs have no network)")
        if option.switch:
            target.add_argument(option.flag, dest=option.name, action="store_true", help=option.help)
        else:
            target.add_argument(option.flag, dest=option.name, metavar=option.metavar, type=option.type,
                                choices=option.choices, default=option.default, help=option.help)


def from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of ``sandbox.run`` from the flags :func:`add_arguments` made."""
    values = {option.name: getattr(args, option.name) for option in OPTIONS}
    if values["network"] is None and getattr(args, "allow_network", False):
        values["network"] = "bridge"
    return values


def resolve(given: dict[str, Any]) -> dict[str, Any]:
    """Every option's value: ``given`` over the defaults; an unknown keyword is a TypeError, as
    for any Python call (a typo must not pass silently)."""
    unknown = sorted(set(given) - set(BY_NAME))
    if unknown:
        raise TypeError(f"sandbox.run() got an unexpected keyword argument {unknown[0]!r} "
                        f"(options: {', '.join(BY_NAME)})")
    return {option.name: given.get(option.name, option.default) for option in OPTIONS}

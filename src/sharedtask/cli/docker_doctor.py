"""``sharedtask docker-doctor [--fix]``: is Docker usable for sharedtask, and what to do if not.

Checks the docker CLI, the daemon, the base image and a sandboxed container
start; ``--fix`` runs docker/setup.sh (install + start dockerd as root on
Debian, build the base image offline when no registry is reachable), then checks again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass

from sharedtask.cli import LazyConsole
from sharedtask.resources import resource

console = LazyConsole(highlight=False)
err_console = LazyConsole(stderr=True, highlight=False)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _setup_script() -> str:
    return str(resource("docker") / "setup.sh")


def run_checks() -> list[Check]:
    """Each check depends on the previous one; stop at the first failure that blocks the rest."""
    checks: list[Check] = []
    setup = _setup_script()
    cli = shutil.which("docker")
    checks.append(Check("docker CLI", cli is not None, cli or "not on PATH",
                        "" if cli else f"sudo bash {setup}  (installs docker.io)"))
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        version = client.version()
        info = client.info()
        checks.append(Check("docker daemon", True,
                            f"server {version.get('Version')}, API {version.get('ApiVersion')}, "
                            f"cgroup v{info.get('CgroupVersion', '?')}, {info.get('Driver')} storage"))
    except Exception as exc:  # noqa: BLE001 - every failure means "no daemon"
        checks.append(Check("docker daemon", False, f"not reachable ({exc.__class__.__name__})",
                            f"sudo bash {setup}  (starts dockerd, log /var/log/sharedtask-dockerd.log)"))
        return checks
    from sharedtask.images.build import base_image

    name = base_image()
    try:
        image = client.images.get(name)
        labels = image.labels or {}
        checks.append(Check("base image", True,
                            f"{name} {image.short_id}, built from {labels.get('sharedtask.built-from', '?')}, "
                            f"source hash {labels.get('sharedtask.source-hash', 'none')}",
                            f"bash {setup}  rebuilds it when src/ changed"))
    except docker.errors.ImageNotFound:
        checks.append(Check("base image", False, f"{name} is missing",
                            f"bash {setup}  (builds it, offline with debootstrap if needed)"))
        return checks
    try:
        output = client.containers.run(name, ["sh", "-c", "python -c 'import sharedtask' && echo ok"],
                                       network_mode="none", cap_drop=["ALL"],
                                       security_opt=["no-new-privileges"], remove=True)
        ok = output.decode().strip().endswith("ok")
        checks.append(Check("sandboxed start", ok, "a --network none container with all capabilities "
                            "dropped imports sharedtask" if ok else output.decode()[-200:]))
    except Exception as exc:  # noqa: BLE001
        checks.append(Check("sandboxed start", False, f"{exc.__class__.__name__}: {exc}"[:300],
                            f"see the daemon log; re-run bash {setup}"))
    return checks


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "docker-doctor",
        help="check that Docker and the base image are ready; --fix sets them up",
        description="Check the docker CLI, daemon, base image and a sandboxed container start. "
                    "--fix runs docker/setup.sh (as root on Debian it installs and starts Docker; "
                    "it builds the base image, offline when no registry is reachable).",
    )
    parser.add_argument("--fix", action="store_true", help="run docker/setup.sh, then check again")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    if args.fix:
        # setup.sh is idempotent and decides by itself what is missing or stale
        # (daemon, base image source hash), so --fix always runs it.
        script = _setup_script()
        err_console.print(f"[bold]running[/] bash {script}")
        # With --json, stdout carries only the JSON: the script talks on stderr.
        code = subprocess.call(["bash", script], stdout=sys.stderr if args.json else None)
        if code != 0:
            err_console.print(f"[bold red]docker/setup.sh failed with exit code {code}[/]")
    checks = run_checks()
    if args.json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        from rich.markup import escape

        from sharedtask.tables import Column, KeyedTable

        table = KeyedTable([Column("check"), Column("", whole=True), Column("detail"), Column("what to do")],
                           title="sharedtask docker-doctor", title_justify="left")
        for c in checks:
            table.add_row(f"[bold]{escape(c.name)}[/]", "[green]OK[/]" if c.ok else "[bold red]FAIL[/]", escape(c.detail),
                          "" if c.ok else escape(c.fix))
        console.print(table)
        if not all(c.ok for c in checks) and not args.fix:
            console.print(f"Fix it all at once: [bold]sharedtask docker-doctor --fix[/] (runs {_setup_script()})")
    return 0 if all(c.ok for c in checks) else 1

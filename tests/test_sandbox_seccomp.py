"""Our seccomp profile under runc: Docker's default with io_uring refused (issue 26).

Real containers: a python3 in ``sharedtask/base:latest`` calls io_uring_setup (425 on
x86_64) through ctypes; in the sandbox it gets EPERM, while every other call the run
makes (python's start, files, threads) still works.
"""

from __future__ import annotations

import json
import platform

import pytest

from sharedtask.sandbox.seccomp import IO_URING, from_oci, without_io_uring

TASK = "touche-2021-task1"
BASE = "sharedtask/base:latest"
PROBE = ("import ctypes, os, threading; libc = ctypes.CDLL(None, use_errno=True); "
         "params = (ctypes.c_ubyte * 120)(); fd = libc.syscall(425, 4, ctypes.byref(params)); "
         "t = threading.Thread(target=lambda: None); t.start(); t.join(); "
         "print(fd, ctypes.get_errno(), len(os.listdir('/tira-data/input')) > 0)")


def test_io_uring_is_taken_out_of_every_rule_and_refused_and_nothing_else_changes():
    base = {"defaultAction": "SCMP_ACT_ERRNO", "architectures": ["SCMP_ARCH_X86_64"],
            "syscalls": [{"names": ["read", "io_uring_setup", "write"], "action": "SCMP_ACT_ALLOW"},
                         {"names": ["io_uring_enter"], "action": "SCMP_ACT_ALLOW"},
                         {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                          "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]}]}
    ours = without_io_uring(base)
    assert ours["defaultAction"] == "SCMP_ACT_ERRNO" and ours["architectures"] == base["architectures"]
    assert ours["syscalls"][0]["names"] == ["read", "write"] and ours["syscalls"][1] == base["syscalls"][2]
    assert ours["syscalls"][-1]["names"] == list(IO_URING) and ours["syscalls"][-1]["action"] == "SCMP_ACT_ERRNO"
    allowed = {n for r in ours["syscalls"] if r["action"] == "SCMP_ACT_ALLOW" for n in r["names"]}
    assert not allowed & set(IO_URING)
    with pytest.raises(ValueError, match="allows every other call"):
        without_io_uring({**base, "defaultAction": "SCMP_ACT_ALLOW"})  # would drop Docker's default
    assert from_oci({**base, "flags": ["SECCOMP_FILTER_FLAG_LOG"]}) == base


@pytest.mark.docker
@pytest.mark.skipif(platform.machine() != "x86_64", reason="io_uring_setup is 425 on x86_64")
def test_io_uring_is_blocked_in_the_sandbox_and_normal_runs_pass(docker_client, tmp_path):
    from sharedtask.sandbox import run as sandbox_run

    try:
        docker_client.images.get(BASE)
    except Exception:  # noqa: BLE001
        pytest.skip(f"{BASE} is not built (sharedtask docker setup)")
    outcome = sandbox_run(TASK, BASE, command=f'python3 -c "{PROBE}" > $outputDir/probe.txt',
                          output_dir=tmp_path / "run" / "output")
    assert outcome.result.status == "success", outcome.result.message
    fd, errno, listed = (tmp_path / "run" / "output" / "probe.txt").read_text().split()
    assert (fd, errno, listed) == ("-1", "1", "True")  # EPERM; python, threads and files work
    seccomp = outcome.record["policy"]["seccomp"]
    assert seccomp["profile"].startswith("sharedtask") and len(seccomp["sha256"]) == 64
    profile = json.loads(open(seccomp["file"]).read())
    assert profile["defaultAction"] != "SCMP_ACT_ALLOW" and len(profile["syscalls"]) > 3  # Docker's default kept
    assert f"seccomp={seccomp['file']}" in outcome.record["reproduce"]

    # The control: Docker's default alone (this daemon's) lets the same call through, or already blocks it.
    out = docker_client.containers.run(BASE, ["python3", "-c", PROBE.replace("/tira-data/input", "/")],
                                       remove=True, network_mode="none", cap_drop=["ALL"])
    fd, errno, _ = out.decode().split()
    assert int(fd) >= 0 or errno in ("1", "38")


def test_an_organizers_profile_is_taken_with_io_uring_refused_and_an_allow_all_one_is_not(tmp_path, monkeypatch):
    from sharedtask.sandbox import seccomp

    given = tmp_path / "default.json"
    given.write_text(json.dumps({"defaultAction": "SCMP_ACT_ERRNO",
                                 "syscalls": [{"names": ["read", "io_uring_enter"], "action": "SCMP_ACT_ALLOW"}]}))
    monkeypatch.setenv(seccomp.ENV, str(given))
    monkeypatch.setattr(seccomp, "_known", {})
    chosen = seccomp.profile(client=None)
    assert chosen.description.startswith("sharedtask") and chosen.path == str(given)
    assert json.loads(chosen.json)["syscalls"][0]["names"] == ["read"]
    given.write_text(json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []}))
    monkeypatch.setattr(seccomp, "_known", {})
    fallback = seccomp.profile(client=None)
    assert fallback.json is None and "io_uring allowed" in fallback.description and "allows every" in fallback.description

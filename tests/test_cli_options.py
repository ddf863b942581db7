"""The options several commands share are declared once (sharedtask.cli.options): no command
declares them itself, and every command that takes them shows the same help and refuses the
same mistakes."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from sharedtask.cli import build_parser
from sharedtask.cli.options import BROKER_URLS

CLI = Path(__file__).resolve().parents[1] / "src" / "sharedtask" / "cli"
SHARED = {"--server", "--token", "--broker", "--queue", "--images-registry", "--images-dir", "--images-url"}


def test_no_command_declares_a_shared_option_itself() -> None:
    found = []
    for path in sorted(CLI.glob("*.py")):
        if path.name == "options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                flags = {a.value for a in node.args if isinstance(a, ast.Constant)}
                found += [f"{path.name}:{node.lineno}: {flag}" for flag in sorted(flags & SHARED)]
    assert found == []


def _actions(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {flag: action for action in sub.choices[command]._actions for flag in action.option_strings}


@pytest.mark.parametrize("command", ["submit", "status"])
def test_server_and_token_are_the_same_everywhere(command: str) -> None:
    actions = _actions(command)
    assert actions["--server"].required and actions["--token"].help == "your team's token (default: $SHAREDTASK_TOKEN)"


@pytest.mark.parametrize("command", ["serve", "demo", "worker"])
def test_the_broker_options_are_the_same_everywhere(command: str) -> None:
    actions = _actions(command)
    assert actions["--broker"].help.endswith(BROKER_URLS)
    assert actions["--queue"].help == "the workers' queue (default: sharedtask)"
    assert actions["--broker"].required == (command == "worker")


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_images_url_without_its_folder_is_refused_by_both(command: str, tmp_path: Path,
                                                          capfd: pytest.CaptureFixture[str]) -> None:
    from sharedtask.cli import main

    extra = ["--data-dir", str(tmp_path / "svc")] if command == "serve" else ["--out", str(tmp_path / "never")]
    assert main([command, "--broker", "redis://127.0.0.1:1/0", "--images-url", "http://127.0.0.1:1/", *extra]) == 2
    assert "--images-url needs --images-dir DIR" in capfd.readouterr().err
    assert not (tmp_path / "svc").exists() and not (tmp_path / "never").exists()

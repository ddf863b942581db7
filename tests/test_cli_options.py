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
SHARED = {"--server", "--token", "--broker", "--queue", "--images-registry", "--images-dir", "--images-url",
          "--output", "--out"}


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

    extra = ["--data-dir", str(tmp_path / "svc")] if command == "serve" else ["--output", str(tmp_path / "never")]
    assert main([command, "--broker", "redis://127.0.0.1:1/0", "--images-url", "http://127.0.0.1:1/", *extra]) == 2
    assert "--images-url needs --images-dir DIR" in capfd.readouterr().err
    assert not (tmp_path / "svc").exists() and not (tmp_path / "never").exists()


def _all_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _all_parsers(sub, (*path, name))


WRITERS = {("run",), ("baseline", "run"), ("reproduce",), ("pool",), ("qrels",), ("rerank-input",), ("demo",),
           ("data", "ir-layout"), ("evaluate",)}


def test_every_command_that_writes_names_it_output() -> None:
    """One name per idea (issue 40): where a command writes is --output; --out and --output-dir are gone from help."""
    found = set()
    for path, parser in _all_parsers(build_parser()):
        flags = {flag for action in parser._actions for flag in action.option_strings}
        assert not flags & {"--out", "--output-dir", "--out-dir", "-o"}, path
        if "--output" in flags:
            found.add(path)
    assert found == WRITERS


@pytest.mark.parametrize("path", sorted(WRITERS), ids=" ".join)
def test_the_old_name_sets_the_same_value_and_says_the_new_one(path: tuple[str, ...],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    parsers = dict(_all_parsers(build_parser()))
    parser = parsers[path]
    required = [a for a in parser._actions if a.required and a.option_strings and "--output" not in a.option_strings]
    assert {a.option_strings[0] for a in required} <= {"--task", "--run", "--image"}, required
    base = [*[x for a in required for x in (a.option_strings[0], "x")]]
    positional = {("baseline", "run"): ["b"], ("qrels",): ["pool"], ("data", "ir-layout"): ["in"]}.get(path, [])
    new = parser.parse_args([*positional, *base, "--output", "somewhere"])
    capsys.readouterr()
    old = parser.parse_args([*positional, *base, "--out", "somewhere"])  # --output required or not: both pass
    assert vars(old) == vars(new) and new.output == Path("somewhere")
    assert capsys.readouterr().err == "sharedtask: --out is now --output; --out still works for now\n"
    if path == ("evaluate",):
        assert vars(parser.parse_args([*base, "--output-dir", "somewhere"])) == vars(new)
        assert "--output-dir is now --output" in capsys.readouterr().err


def test_a_renamed_option_cannot_hide_an_existing_one() -> None:
    from sharedtask.cli.options import add_output, renamed_option

    parser = argparse.ArgumentParser()
    add_output(parser, "where")
    with pytest.raises(ValueError, match="--out is already an option"):
        renamed_option(parser, "--out", "--output")

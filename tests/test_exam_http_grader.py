"""The HTTP EXAM grader against a REAL chat-completions server started on 127.0.0.1 in the
test (tests/llm_server.py: a ThreadingHTTPServer reached over TCP, no mock object); no
network beyond loopback. Each error a model server can cause is one clear line."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from sharedtask.answers.exam import grade_all
from sharedtask.answers.llm import HttpGrader, HttpGraderConfig, load_grader, parse_reply
from sharedtask.errors import SharedTaskError
from sharedtask.formats.jsonl import ExamQuestion
from llm_server import ChatServer

CHOICE = ExamQuestion("A.1", "q1", "Which value?", r"\sqrt{2}", (r"\sqrt{3}", r"\sqrt{2}", "1"))
FREE = ExamQuestion("A.1", "q2", "Which notion?", "geometric")


@pytest.fixture
def server():
    with ChatServer() as running:
        yield running


def _grader(server: ChatServer, tmp_path: Path, mode: str = "ok", **kw) -> HttpGrader:
    kw.setdefault("backoff", 0.0)
    return HttpGrader(HttpGraderConfig(base_url=server.url(mode), model="m1", cache_dir=tmp_path / "cache", **kw))


def test_grades_choices_and_free_answers_through_the_server(server: ChatServer, tmp_path: Path) -> None:
    grader = _grader(server, tmp_path)
    pairs = [(CHOICE, r"so $\sqrt{2}$ is irrational"),   # server picks B = \sqrt{2} = the key -> True
             (CHOICE, r"we get $\sqrt{3}$"),              # server picks A = \sqrt{3} -> wrong -> False
             (CHOICE, "nothing here"),                    # UNANSWERABLE -> False
             (FREE, "A Geometric series.\nmore text"),    # first line states the key (case ignored) -> True
             (FREE, "an arithmetic series")]              # the reply does not state the key -> False
    assert grade_all(grader, pairs) == [True, False, False, True, False]
    assert server.requests["ok"] == 5 and grader.sent == 5


def test_the_cache_makes_a_second_evaluation_free_and_identical(server: ChatServer, tmp_path: Path) -> None:
    pairs = [(CHOICE, r"$\sqrt{2}$"), (FREE, "geometric"), (CHOICE, r"$\sqrt{2}$")]  # one prompt twice
    first = grade_all(_grader(server, tmp_path), pairs)
    assert server.requests["ok"] == 2  # the repeated prompt is asked once
    again = _grader(server, tmp_path)
    assert grade_all(again, pairs) == first == [True, True, True]
    assert server.requests["ok"] == 2 and again.sent == 0
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == 2 and all('"model": "m1"' in p.read_text() for p in entries)
    # another model is another key: asked again
    other = HttpGrader(HttpGraderConfig(base_url=server.url(), model="m2", cache_dir=tmp_path / "cache"))
    grade_all(other, pairs)
    assert server.requests["ok"] == 4


def test_replies_before_a_failure_stay_cached(server: ChatServer, tmp_path: Path) -> None:
    pairs = [(FREE, "geometric"), (FREE, "poison"), (CHOICE, r"$\sqrt{2}$")]
    with pytest.raises(SharedTaskError, match=r"failed with HTTP 500 \(1 try\)"):
        grade_all(_grader(server, tmp_path, "picky", retries=0, concurrency=1), pairs)
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2  # the two good replies
    again = _grader(server, tmp_path, "picky", retries=0, concurrency=1)
    assert grade_all(again, [pairs[0], pairs[2]]) == [True, True] and again.sent == 0


def test_retries_a_server_error_then_succeeds(server: ChatServer, tmp_path: Path) -> None:
    assert _grader(server, tmp_path, "flaky", retries=1).grade(CHOICE, r"$\sqrt{2}$") is True
    assert server.requests["flaky"] == 2


def test_the_api_key_comes_from_the_named_variable(server: ChatServer, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_KEY", "secret")
    assert _grader(server, tmp_path, "auth", api_key_env="GRADER_KEY").grade(FREE, "geometric") is True
    monkeypatch.setenv("GRADER_KEY", "wrong")
    with pytest.raises(SharedTaskError, match=r"refused the request: HTTP 401 \(API key\).*GRADER_KEY"):
        _grader(server, tmp_path / "b", "auth", api_key_env="GRADER_KEY").grade(FREE, "geometric")
    monkeypatch.delenv("GRADER_KEY")
    with pytest.raises(SharedTaskError, match=r"\$GRADER_KEY is not set"):
        _grader(server, tmp_path / "c", "auth", api_key_env="GRADER_KEY").grade(FREE, "geometric")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


@pytest.mark.parametrize(("mode", "kw", "message"), [
    ("fail", {"retries": 2}, r"/fail/v1/chat/completions failed with HTTP 503 \(3 tries\)"),
    ("garbage", {}, r"sent a reply that is not an OpenAI chat completion: '\{\"oops\": 1\}'"),
    ("chatty", {}, r"malformed reply to question q1: expected a choice letter A-C or UNANSWERABLE, found "
                   r"'I believe the answer is B, because'"),
    ("slow", {"timeout": 0.3, "retries": 1}, r"did not answer within 0.3 s \(2 tries\)"),
    ("missing", {}, r"refused the request: HTTP 404"),
])
def test_each_server_error_is_one_clear_line(server: ChatServer, tmp_path: Path, mode: str, kw: dict,
                                             message: str) -> None:
    with pytest.raises(SharedTaskError, match=message) as info:
        _grader(server, tmp_path, mode, **kw).grade(CHOICE, "text")
    assert "\n" not in str(info.value)
    assert not list((tmp_path / "cache").rglob("*.json"))  # nothing cached from a failure


def test_an_unwritable_cache_is_one_line(server: ChatServer, tmp_path: Path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be", encoding="utf-8")
    with pytest.raises(SharedTaskError, match=r"cannot write the grader's cache in .*cache: "):
        _grader(server, tmp_path).grade(FREE, "geometric")


def test_a_refused_connection_is_one_line(tmp_path: Path) -> None:
    grader = HttpGrader(HttpGraderConfig(base_url=f"http://127.0.0.1:{_free_port()}/v1", model="m",
                                         retries=1, backoff=0.0))
    with pytest.raises(SharedTaskError, match=r"cannot be reached \(connection refused\) \(2 tries\)"):
        grader.grade(FREE, "text")


@pytest.mark.parametrize(("reply", "expected"), [
    ("B", r"\sqrt{2}"), (" (A) ", r"\sqrt{3}"), ("C.", "1"), ("unanswerable", None), ("UNANSWERABLE.", None),
])
def test_choice_replies_are_read_strictly(reply: str, expected: str | None) -> None:
    assert parse_reply(CHOICE, reply) == expected


@pytest.mark.parametrize("reply", ["D", "B because", "b c", "", "the second one"])
def test_anything_else_is_malformed(reply: str) -> None:
    with pytest.raises(ValueError):
        parse_reply(CHOICE, reply)


def test_a_free_reply_is_one_line() -> None:
    assert parse_reply(FREE, "  geometric ") == "geometric"
    with pytest.raises(ValueError):
        parse_reply(FREE, "geometric\nseries")


def test_the_grader_file(tmp_path: Path) -> None:
    path = tmp_path / "grader.yml"
    path.write_text("grader: http\nbase_url: http://127.0.0.1:9/v1\nmodel: m\napi_key_env: KEY\n"
                    "timeout: 5\nretries: 0\nconcurrency: 2\ncache: c\n", encoding="utf-8")
    grader = load_grader(path)
    assert isinstance(grader, HttpGrader)
    assert grader.config.cache_dir == (tmp_path / "c").resolve() and grader.config.concurrency == 2
    assert grader.config.timeout == 5.0 and grader.config.retries == 0


@pytest.mark.parametrize(("text", "message"), [
    ("grader: http\nmodel: m\n", "(top level): 'base_url' is a required property"),
    ("grader: http\nbase_url: ftp://x\nmodel: m\n", "base_url: 'ftp://x' does not match"),
    ("grader: llm\nbase_url: http://x/v1\nmodel: m\n", "grader: 'llm' is not one of ['http', 'offline']"),
    ("base_url: http://x/v1\nmodel: m\nretries: -1\n", "retries: -1 is less than the minimum of 0"),
    ("base_url: http://x/v1\nmodel: m\nconcurrency: true\n", "concurrency: True is not of type 'integer'"),
    ("base_url: http://x/v1\nmodel: m\napi_key: sk-123\n", "('api_key' was unexpected)"),
    ("base_url: http://x/v1\nmodel: m\napi_key_env: sk-123\n", "api_key_env: 'sk-123' does not match"),
    ("grader: [\n", "invalid YAML"),
    # a final newline (a YAML block scalar keeps one) is no part of a URL or a variable's name
    ("base_url: |\n  http://x/v1\nmodel: m\n", "base_url: 'http://x/v1\\n' does not match"),
    ("base_url: http://x/v1\nmodel: m\napi_key_env: |\n  KEY\n", "api_key_env: 'KEY\\n' does not match"),
])
def test_a_bad_grader_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "grader.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SharedTaskError, match=None) as info:
        load_grader(path)
    assert message in str(info.value) and str(path) in str(info.value)

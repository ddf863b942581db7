"""An EXAM grader that asks a language model behind any OpenAI-compatible HTTP endpoint
(``POST {base_url}/chat/completions``: OpenAI, vLLM, llama.cpp's server, Ollama, ...).

The prompt is the passage, the question and, for a multiple-choice question, its lettered
choices (the original EXAM asks its QA model to pick a choice; Sander and Dietz, DESIRES
2021). The reply is read strictly: a choice letter, or for a question without choices one
line of answer, or ``UNANSWERABLE``. Anything else is an error, never a guess. A free
answer counts when it states the key by the offline grader's rules
(:class:`sharedtask.answers.exam.OfflineGrader`).

Every reply is cached on disk under the SHA-256 of (model, prompt), so evaluating again
sends nothing and gives the same grades. Requests go out ``concurrency`` at a time, each
retried ``retries`` times on a refused connection, a timeout, HTTP 429 or 5xx. The API key
is read from the environment variable the organizer names, never from a file.

httpx is imported when a request is sent (``pip install 'sharedtask[llm]'``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharedtask.answers.exam import Grader, OfflineGrader
from sharedtask.errors import SharedTaskError
from sharedtask.formats.jsonl import ExamQuestion

UNANSWERABLE = "UNANSWERABLE"
_LETTER = re.compile(r"\(?([A-Z])[).]?")  # "B", "B.", "B)", "(B)"
_MAX_PASSAGE = 8000  # characters of the passage put into the prompt


@dataclass(frozen=True)
class HttpGraderConfig:
    """What the organizer configures (``--grader FILE``, docs/evaluation.md)."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 60.0
    retries: int = 2
    concurrency: int = 4
    cache_dir: Path | None = None
    backoff: float = 1.0  # seconds before the first retry, doubled for each further one
    max_tokens: int = 64


def prompt(question: ExamQuestion, passage: str) -> str:
    """The one user message sent for a (question, passage) pair."""
    lines = ["Answer the exam question using only the passage below.",
             "Reply with the letter of the correct choice only." if question.choices
             else "Reply with the answer only, on one line.",
             f"If the passage does not answer the question, reply {UNANSWERABLE}.", "",
             "Passage:", passage[:_MAX_PASSAGE], "", f"Question: {question.question}"]
    if question.choices:
        lines.append("Choices:")
        lines.extend(f"{chr(65 + i)}. {choice}" for i, choice in enumerate(question.choices))
    return "\n".join(lines)


def parse_reply(question: ExamQuestion, reply: str) -> str | None:
    """The answer a reply gives (the chosen choice's text, or the free answer), None for
    UNANSWERABLE; ``ValueError`` when the reply follows neither form."""
    text = reply.strip()
    if text.upper().rstrip(".") == UNANSWERABLE:
        return None
    if question.choices:
        match = _LETTER.fullmatch(text)
        if match is None or ord(match.group(1)) - 65 >= len(question.choices):
            last = chr(64 + len(question.choices))
            raise ValueError(f"expected a choice letter A-{last} or {UNANSWERABLE}, found {text[:60]!r}")
        return question.choices[ord(match.group(1)) - 65]
    if not text or "\n" in text:
        raise ValueError(f"expected one line of answer or {UNANSWERABLE}, found {text[:60]!r}")
    return text


class HttpGrader:
    """Grades by asking the configured model (module docstring); thread-safe."""

    def __init__(self, config: HttpGraderConfig) -> None:
        self.config = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.sent = 0  # requests that went out (cache misses), for reports and tests
        self._lock = threading.Lock()
        self._offline: Grader = OfflineGrader()

    # --- the Grader interface -------------------------------------------------------------

    def grade(self, question: ExamQuestion, text: str) -> bool:
        return self.grade_many([(question, text)])[0]

    def grade_many(self, pairs: Sequence[tuple[ExamQuestion, str]]) -> list[bool]:
        asked = {prompt(q, t): q for q, t in pairs}  # one prompt, one question form (its choices are in it)
        replies = self._replies(asked)
        out = []
        for question, text in pairs:
            answer = self._parse(question, replies[prompt(question, text)])
            if answer is None:
                out.append(False)
            elif question.choices:
                out.append(answer == question.answer)
            else:
                out.append(self._offline.grade(question, answer))
        return out

    def _parse(self, question: ExamQuestion, reply: str) -> str | None:
        try:
            return parse_reply(question, reply)
        except ValueError as exc:
            raise SharedTaskError(f"the grader at {self.url} ({self.config.model}) gave a malformed reply to "
                                  f"question {question.id}: {exc}",
                                  hint="the model must follow the prompt's reply format; try another model") from None

    # --- replies: cache, then the endpoint -------------------------------------------------

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.config.model}\0{text}".encode()).hexdigest()

    def _cache_path(self, text: str) -> Path | None:
        if self.config.cache_dir is None:
            return None
        key = self._key(text)
        return Path(self.config.cache_dir) / key[:2] / f"{key}.json"

    def _cached(self, text: str) -> str | None:
        path = self._cache_path(text)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            return entry["reply"] if entry.get("model") == self.config.model else None
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry is asked again and rewritten

    def _store(self, text: str, reply: str) -> None:
        path = self._cache_path(text)
        if path is None:
            return
        entry = {"model": self.config.model, "prompt_sha256": hashlib.sha256(text.encode()).hexdigest(),
                 "reply": reply}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False)
            os.replace(tmp, path)  # whole or not at all, also with several graders at once
        except OSError as exc:
            raise SharedTaskError(f"cannot write the grader's cache in {self.config.cache_dir}: "
                                  f"{exc.strerror or exc}",
                                  hint="set cache: to a writable folder in the grader file") from None

    def _replies(self, asked: dict[str, ExamQuestion]) -> dict[str, str]:
        """Reply per prompt: from the cache, else from the endpoint (``concurrency`` at a time);
        a reply is checked before it is cached, so a malformed one is asked again next time,
        and the replies that came before a failure stay cached."""
        replies: dict[str, str] = {}
        missing = []
        for text in asked:
            cached = self._cached(text)
            if cached is None:
                missing.append(text)
            else:
                replies[text] = cached
        if not missing:
            return replies
        try:
            import httpx
        except ImportError:
            raise SharedTaskError("the HTTP grader needs httpx", hint="pip install 'sharedtask[llm]'") from None
        headers = {"Content-Type": "application/json"}
        key_env = self.config.api_key_env
        if key_env:
            key = os.environ.get(key_env)
            if not key:
                raise SharedTaskError(f"the grader's API key variable ${key_env} is not set",
                                      hint=f"export {key_env}=... or remove api_key_env from the grader file")
            headers["Authorization"] = f"Bearer {key}"

        def fetch(text: str) -> str:
            reply = self._ask(client, text)
            self._parse(asked[text], reply)
            self._store(text, reply)
            return reply

        with httpx.Client(timeout=self.config.timeout, headers=headers) as client, \
                ThreadPoolExecutor(max_workers=max(1, self.config.concurrency)) as pool:
            replies.update(zip(missing, pool.map(fetch, missing)))
        return replies

    def _ask(self, client: Any, text: str) -> str:
        """One completion, with retries for what may pass (refused, timeout, 429, 5xx)."""
        import httpx

        body = {"model": self.config.model, "messages": [{"role": "user", "content": text}],
                "temperature": 0, "max_tokens": self.config.max_tokens}
        tries = self.config.retries + 1
        failure = ""
        for attempt in range(tries):
            if attempt:
                time.sleep(self.config.backoff * 2 ** (attempt - 1))
            try:
                response = client.post(self.url, json=body)
            except httpx.TimeoutException:
                failure = f"did not answer within {self.config.timeout:g} s"
                continue
            except httpx.TransportError as exc:
                failure = f"cannot be reached ({_reason(exc)})"
                continue
            with self._lock:
                self.sent += 1
            status = response.status_code
            if status in (401, 403):
                where = f"${self.config.api_key_env}" if self.config.api_key_env else "api_key_env in the grader file"
                raise SharedTaskError(f"the grader at {self.url} refused the request: HTTP {status} (API key)",
                                      hint=f"check {where}")
            if status == 429 or status >= 500:
                failure = f"failed with HTTP {status}"
                continue
            if status != 200:
                raise SharedTaskError(f"the grader at {self.url} refused the request: HTTP {status} "
                                      f"{_snippet(response.text)}",
                                      hint="check base_url (it ends before /chat/completions) and model")
            return self._content(response)
        raise SharedTaskError(f"the grader at {self.url} {failure} ({tries} {'try' if tries == 1 else 'tries'})",
                              hint="is the model server running? raise timeout or retries in the grader file")

    def _content(self, response: Any) -> str:
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise SharedTaskError(f"the grader at {self.url} sent a reply that is not an OpenAI chat completion: "
                                  f"{_snippet(response.text)}",
                                  hint="expected {\"choices\": [{\"message\": {\"content\": ...}}]}")
        return content


def _snippet(text: str) -> str:
    return repr(" ".join(text.split())[:80])


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return "connection refused" if "refused" in text.lower() else text.splitlines()[0][:80]


# --- the organizer's grader file -------------------------------------------------------------

#: The grader file's JSON Schema (docs/evaluation.md, "EXAM"); jsonschema checks it.
GRADER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "grader": {"enum": ["http", "offline"]},
        # "(?!\n)$": Python's re, which jsonschema uses, lets "$" match before a final newline
        # (docs.python.org/3/library/re.html, "$"); the look-ahead keeps "http://x\n" out, and is
        # the same rule in ECMA-262, the dialect JSON Schema names
        "base_url": {"type": "string", "pattern": r"^https?://\S+(?!\n)$"},
        "model": {"type": "string", "minLength": 1},
        "api_key_env": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*(?!\n)$"},  # a name, never the key
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "retries": {"type": "integer", "minimum": 0},
        "concurrency": {"type": "integer", "minimum": 1},
        "backoff": {"type": "number", "minimum": 0},
        "max_tokens": {"type": "integer", "minimum": 1},
        "cache": {"type": "string", "minLength": 1},
    },
    "if": {"properties": {"grader": {"const": "offline"}}, "required": ["grader"]},
    "else": {"required": ["base_url", "model"]},
}


def load_grader(path: Path) -> Grader:
    """A grader from a YAML file: ``grader: offline``, or ``grader: http`` (the default) with
    ``base_url``, ``model`` and optionally ``api_key_env``, ``timeout``, ``retries``,
    ``concurrency``, ``backoff``, ``max_tokens``, ``cache`` (a folder, relative to the file;
    default ``exam-cache`` next to it)."""
    import jsonschema

    from sharedtask.spec import read_yaml, yaml_path

    path = Path(path)
    doc = read_yaml(path)
    errors = sorted(jsonschema.Draft202012Validator(GRADER_SCHEMA).iter_errors(doc),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        raise SharedTaskError(f"{path}: {yaml_path(list(errors[0].absolute_path))}: {errors[0].message}",
                              hint="docs/evaluation.md, 'EXAM': grader: http, base_url: http://HOST:PORT/v1, "
                                   "model: NAME, api_key_env: VARIABLE")
    if doc.get("grader") == "offline":
        return OfflineGrader()
    options = {k: doc[k] for k in ("timeout", "retries", "concurrency", "backoff", "max_tokens") if k in doc}
    return HttpGrader(HttpGraderConfig(base_url=doc["base_url"], model=doc["model"], api_key_env=doc.get("api_key_env"),
                                       cache_dir=(path.parent / doc.get("cache", "exam-cache")).resolve(), **options))

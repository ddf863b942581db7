"""A participant's Dockerfile, read and checked before the organizer's daemon builds it.

Why: dockerd runs a build with the organizer's privileges. ``ADD <URL>`` is fetched by
dockerd itself, on the host's network, whatever the build's network is; ``FROM`` and
``COPY --from`` of another team's image copy that team's files; a registry name makes
dockerd contact any host (issue 26). So every image a Dockerfile names must be one of the
organizer's allow-listed bases (or one of its own earlier stages), registry hosts other
than the organizer's are refused, and ``ADD`` takes local files only.

The reading follows Docker's Dockerfile reference (docs.docker.com/reference/dockerfile):
parser directives at the top (``escape`` is honoured; ``syntax`` would fetch a frontend
image and is refused), line continuations with the escape character (comment and empty
lines inside a continuation are skipped, as dockerd does), ``ARG`` before the first
``FROM`` substituted into ``FROM`` (``$X``, ``${X}``, ``${X:-default}``, ``${X-default}``,
``${X:+alt}``, ``${X+alt}``), multi-stage names, ``FROM --platform``. What cannot be vouched
for is refused rather than guessed: heredocs, flags of ``RUN`` (``--mount``, ``--network``,
``--security``), a variable in ``COPY --from`` or in an ``ADD`` source, an unknown
instruction or flag. The builder is dockerd's classic builder (the docker SDK's build
API), which knows none of these BuildKit extensions either.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field

from sharedtask.findings.codes import finding
from sharedtask.findings import Finding

INSTRUCTIONS = frozenset({"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                          "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"})
#: Flags allowed per instruction (values checked below); any other flag is refused.
FLAGS = {"FROM": {"platform"}, "COPY": {"from", "chown", "chmod", "link"}, "ADD": {"chown", "chmod", "link"},
         "HEALTHCHECK": {"interval", "timeout", "start-period", "start-interval", "retries"}}
_DIRECTIVE = re.compile(r"#\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*(.*?)\s*$")
_HEREDOC = re.compile(r"(?<!<)<<-?\s*([\"']?)[A-Za-z_][A-Za-z0-9_]*\1(?![<\w])")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^git@")
_UNQUOTE = re.compile(r"[\"'\\`]")
_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-+])(?P<word>[^}$]*))?\}"
                  r"|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Instruction:
    """One logical line: its first physical line, keyword, leading ``--flags`` and the rest."""

    line: int
    keyword: str
    flags: dict[str, str | None]
    args: str


@dataclass(frozen=True)
class BuildPolicy:
    """What a build may name: the organizer's base images (exact references or fnmatch
    patterns, ``name`` meaning ``name:latest``) and the organizer's registry host (None: only
    local names, no registry host at all)."""

    allowed: tuple[str, ...]
    registry: str | None = None

    def allows(self, ref: str) -> bool:
        norm = normalize(ref)
        return any(fnmatch.fnmatchcase(norm, p if any(c in p for c in "*?[") else normalize(p))
                   for p in self.allowed)

    def describe(self) -> str:
        return ", ".join(self.allowed) or "none"


@dataclass
class _Stages:
    names: list[str] = field(default_factory=list)  # lower-cased stage names, by index
    count: int = 0


def normalize(ref: str) -> str:
    """``name`` -> ``name:latest``; a tag or digest is kept."""
    last = ref.rsplit("/", 1)[-1]
    return ref if (":" in last or "@" in ref) else f"{ref}:latest"


def registry_of(ref: str) -> str | None:
    """The registry host a reference names (``host[:port]/...``, ``localhost/...``), else None."""
    first, sep, _ = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return None


def logical_lines(text: str, name: str) -> tuple[list[tuple[int, str]], list[Finding]]:
    """(first line number, joined text) of each instruction, after the parser directives."""
    findings: list[Finding] = []
    escape = "\\"
    lines = [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]  # dockerd splits at \n only
    k = 0
    while k < len(lines):  # parser directives: only at the very top
        m = _DIRECTIVE.fullmatch(lines[k].strip())
        if m is None:
            break
        key, value = m.group(1).lower(), m.group(2)
        if key == "escape":
            if value not in ("\\", "`"):
                findings.append(finding("BUILD-UNSUPPORTED", f"the escape directive {value!r} is neither \\ nor `",
                                        name, k + 1))
            escape = value or escape
        elif key == "syntax":
            findings.append(finding("BUILD-UNSUPPORTED", f"the syntax directive ({value}) makes the builder fetch a "
                                    "frontend image from a registry", name, k + 1,
                                    hint="remove the `# syntax=` line: the organizer's builder reads the Dockerfile "
                                    "itself"))
        k += 1
    # As dockerd's parser (moby/buildkit frontend/dockerfile/parser): the first line loses its
    # leading whitespace, continuation lines are appended as they are, without a separator.
    out: list[tuple[int, str]] = []
    current: str | None = None
    start = 0
    for n in range(k, len(lines)):
        raw = lines[n]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue  # outside a continuation, and inside one too (dockerd drops them there)
        if current is None:
            start, current = n + 1, ""
            raw = raw.lstrip()
        body = raw.rstrip(" \t")
        if body.endswith(escape):
            current += body[: -len(escape)]
            continue
        out.append((start, (current + raw).strip()))
        current = None
    if current is not None:
        out.append((start, current.strip()))
    return out, findings


def _split_flags(rest: str) -> tuple[dict[str, str | None], str]:
    flags: dict[str, str | None] = {}
    while rest.startswith("--"):
        word, tail = (re.split(r"\s+", rest, maxsplit=1) + [""])[:2]
        if word == "--":
            return flags, tail.lstrip()
        key, eq, value = word[2:].partition("=")
        flags[key.lower()] = value if eq else None
        rest = tail.lstrip()
    return flags, rest


def _instruction(line: int, text: str) -> Instruction:
    keyword, rest = (re.split(r"\s+", text.strip(), maxsplit=1) + [""])[:2]
    flags, args = _split_flags(rest.strip())
    return Instruction(line, keyword.upper(), flags, args)


def parse(text: str, name: str = "Dockerfile") -> tuple[list[Instruction], list[Finding]]:
    """The instructions of a Dockerfile, and findings about what this reader does not vouch for."""
    logical, findings = logical_lines(text, name)
    out: list[Instruction] = []
    for line, joined in logical:
        out.append(_instruction(line, joined))
    return out, findings


def _substitute(value: str, scope: dict[str, str | None]) -> str | None:
    """Docker's variable forms, with the values in scope; None when a variable is not declared
    or a form is not one of those this reader knows."""
    failed = False

    def one(m: re.Match[str]) -> str:
        nonlocal failed
        var = m.group("braced") or m.group("plain")
        op, word = m.group("op"), m.group("word") or ""
        present = var in scope
        val = scope.get(var)
        if op is None:
            if not present or val is None:
                failed = True
                return ""
            return val
        unset = not present or val is None or (op.startswith(":") and val == "")
        if op.endswith("-"):
            return word if unset else str(val)
        return "" if unset else word

    result = _VAR.sub(one, value.replace("\\$", "\0"))
    if failed or "$" in result:
        return None
    return result.replace("\0", "$")


def _arg_pairs(args: str) -> list[tuple[str, str | None]]:
    """``ARG A=1 B="x y" C`` -> [(A, 1), (B, x y), (C, None)]."""
    pairs: list[tuple[str, str | None]] = []
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)(?:=(\"[^\"]*\"|'[^']*'|\S*))?", args):
        value = m.group(2)
        if value is not None and len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        pairs.append((m.group(1), value))
    return pairs


def _sources(args: str) -> list[str]:
    """The sources of COPY/ADD (every argument but the destination), JSON or shell form."""
    if args.startswith("["):
        try:
            items = json.loads(args)
        except ValueError:
            items = None
        if isinstance(items, list) and all(isinstance(i, str) for i in items):
            return items[:-1]
    return args.split()[:-1]


class _Checker:
    def __init__(self, policy: BuildPolicy, build_args: dict[str, str], name: str) -> None:
        self.policy, self.build_args, self.name = policy, build_args, name
        self.globals: dict[str, str | None] = {}
        self.stages = _Stages()
        self.findings: list[Finding] = []

    def refuse(self, code: str, message: str, line: int, hint: str | None = None) -> None:
        self.findings.append(finding(code, message, self.name, line, hint=hint))

    def image(self, ref: str, line: int, what: str, code: str) -> None:
        host = registry_of(ref)
        if host is not None and host != self.policy.registry:
            where = f"the organizer's registry is {self.policy.registry}" if self.policy.registry else \
                "the organizer allows no registry: only local images"
            self.refuse("BUILD-REGISTRY", f"{what} {ref} names the registry {host}; {where}", line,
                        hint=f"build FROM one of the organizer's base images: {self.policy.describe()}")
            return
        if not self.policy.allows(ref):
            self.refuse(code, f"{what} {ref} is not one of the organizer's base images "
                        f"(allowed: {self.policy.describe()})", line,
                        hint="start from an allowed base (ARG BASE_IMAGE, then FROM ${BASE_IMAGE}, is the "
                        "project's base image) and copy only files of your own build context or earlier stages")

    def check(self, ins: Instruction, onbuild: bool = False) -> None:
        kw = ins.keyword
        if kw not in INSTRUCTIONS:
            self.refuse("BUILD-UNSUPPORTED", f"unknown instruction {kw}", ins.line)
            return
        allowed_flags = FLAGS.get(kw, set())
        for flag in ins.flags:
            if flag not in allowed_flags:
                self.refuse("BUILD-UNSUPPORTED", f"{kw} --{flag} is not supported by the organizer's builder",
                            ins.line, hint=f"remove --{flag}" + (f" (allowed flags of {kw}: "
                                                                + ", ".join(f"--{f}" for f in sorted(allowed_flags))
                                                                + ")" if allowed_flags else ""))
        if kw in ("RUN", "COPY", "ADD") and _HEREDOC.search(ins.args):
            self.refuse("BUILD-UNSUPPORTED", f"{kw} with a heredoc (<<)", ins.line,
                        hint="put the script in a file of the build context and COPY it")
        if kw == "ONBUILD":
            self.check(_instruction(ins.line, ins.args), onbuild=True)
        elif kw == "ARG" and self.stages.count == 0 and not onbuild:
            for key, default in _arg_pairs(ins.args):
                value = self.build_args.get(key, default)
                self.globals[key] = _substitute(value, self.globals) if value is not None else None
        elif kw == "FROM":
            self._from(ins)
        elif kw in ("COPY", "ADD"):
            self._copy(ins, onbuild)

    def _from(self, ins: Instruction) -> None:
        words = ins.args.split()
        if len(words) not in (1, 3) or (len(words) == 3 and words[1].upper() != "AS"):
            self.refuse("BUILD-UNSUPPORTED", f"FROM {ins.args!r} is not `FROM image [AS name]`", ins.line)
            return
        ref = _substitute(words[0], self.globals)
        if ref is None:
            self.refuse("BUILD-UNSUPPORTED", f"FROM {words[0]}: a variable that is not an ARG declared before the "
                        "first FROM, or a form this reader does not know", ins.line,
                        hint="declare it with ARG before the first FROM, e.g. ARG BASE_IMAGE, then FROM ${BASE_IMAGE}")
        elif ref.lower() in self.stages.names or ref == "scratch":
            pass
        else:
            self.image(ref, ins.line, "FROM", "BUILD-FROM")
        self.stages.names.append(words[2].lower() if len(words) == 3 else "")
        self.stages.count += 1

    def _copy(self, ins: Instruction, onbuild: bool) -> None:
        source = ins.flags.get("from")
        if "from" in ins.flags:
            if not source or "$" in source:
                self.refuse("BUILD-UNSUPPORTED", f"COPY --from={source or ''}: write the stage name or image "
                            "literally", ins.line)
            elif source.isdigit() and not onbuild:
                if int(source) >= self.stages.count - 1:
                    self.refuse("BUILD-COPY-FROM", f"COPY --from={source} names no earlier stage", ins.line)
            elif source.lower() not in self.stages.names[:-1] or onbuild:
                self.image(source, ins.line, "COPY --from", "BUILD-COPY-FROM")
        for src in _sources(ins.args):
            # dockerd removes quotes and escapes from these words ("http://..." is a URL too)
            if _URL.search(_UNQUOTE.sub("", src)) or "://" in src:
                self.refuse("BUILD-ADD-URL", f"{ins.keyword} {src}: the builder (dockerd, on the host's network) would "
                            "fetch it", ins.line,
                            hint="put the file in your build context and COPY it; or fetch it in a RUN step where the "
                            "organizer's build network allows it")
            elif ins.keyword == "ADD" and "$" in src:
                self.refuse("BUILD-UNSUPPORTED", f"ADD {src}: a variable in an ADD source could name a URL",
                            ins.line, hint="write the source path literally, or use COPY")


def check(text: str, policy: BuildPolicy, build_args: dict[str, str] | None = None,
          name: str = "Dockerfile") -> list[Finding]:
    """Every reason to refuse building this Dockerfile under ``policy`` (empty: it may be built)."""
    instructions, findings = parse(text, name)
    checker = _Checker(policy, dict(build_args or {}), name)
    checker.findings = findings
    for ins in instructions:
        checker.check(ins)
    if checker.stages.count == 0:
        checker.refuse("BUILD-UNSUPPORTED", "the Dockerfile has no FROM", 1)
    return checker.findings

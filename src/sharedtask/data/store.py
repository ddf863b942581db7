"""Where datasets live on disk, and how they get there: assemble, import, verify.

Layout under the store (``$SHAREDTASK_DATA``, default ``~/.cache/sharedtask/data``):

    datasets/<task>/<name>/input/...      the task's $inputDataset layout (check-input passes)
    datasets/<task>/<name>/truth/...      qrels and the other truth files
    datasets/<task>/<name>/manifest.json  sha256 and source of every file placed
    files/<checksum>/<name>               verified downloads, hard-linked into datasets
    downloads/<checksum>-<name>.part      an unfinished download (resumed next time)

Every file reaches its place as ``NAME.part`` and is renamed only once its checksum
holds, so a failure never leaves a half-written file where a dataset is read.
"""

from __future__ import annotations

import json
import errno
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sharedtask.data import checksum, fetch, irds
from sharedtask.data.progress import byte_progress
from sharedtask.data.registry import DataFile, Dataset
from sharedtask.data.root import store_root
from sharedtask.errors import SharedTaskError

MANIFEST = "manifest.json"


def dataset_dir(ds: Dataset) -> Path:
    return store_root() / "datasets" / ds.id


# --------------------------------------------------------------------------- manifest

def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of an assembled dataset folder ({} when there is none)."""
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _record(ds: Dataset, placed: dict[str, dict[str, Any]]) -> None:
    folder = dataset_dir(ds)
    manifest = read_manifest(folder) or {"dataset": ds.id, "task": ds.task, "files": {}}
    manifest["files"].update(placed)
    tmp = folder / (MANIFEST + ".part")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)
    # a large truth file was just hashed on its way in: its stamp spares check_truth a second pass
    _remember_stamps(folder, {t: e["sha256"] for t, e in placed.items() if t.startswith("truth/")})


def provenance(input_dir: Path) -> dict[str, Any] | None:
    """For a run record: the registry dataset an input folder was assembled as and the
    sha256 of each of its input files (None when the folder is not a registry dataset)."""
    input_dir = Path(input_dir)
    manifest = read_manifest(input_dir.parent) if input_dir.name == "input" else {}
    if not manifest:
        return None
    files = {path[len("input/"):]: entry["sha256"] for path, entry in sorted(manifest["files"].items())
             if path.startswith("input/")}
    return {"id": manifest["dataset"], "sha256": files}


# --------------------------------------------------------------------------- status

@dataclass(frozen=True)
class FileState:
    file: DataFile
    present: list[str]  # targets placed (several for a glob)

    @property
    def ok(self) -> bool:
        return bool(self.present) or not self.file.required


def status(ds: Dataset) -> list[FileState]:
    folder = dataset_dir(ds)
    placed = read_manifest(folder).get("files", {})
    out = []
    for f in ds.files:
        if f.is_glob:
            prefix = f.role + "/"
            hits = [t for t in placed if t.startswith(prefix) and Path(t[len(prefix):]).match(f.path)]
        else:
            hits = [f.target] if f.target in placed else []
        out.append(FileState(f, [t for t in hits if (folder / t).is_file()]))
    return out


def missing(ds: Dataset, role: str | None = None) -> list[DataFile]:
    return [s.file for s in status(ds) if not s.ok and (role is None or s.file.role == role)]


# --------------------------------------------------------------------------- placing files

def _part(path: Path) -> Path:
    return path.with_name(path.name + ".part")


def _algorithms(f: DataFile, byte_copy: bool) -> tuple[str, ...]:
    """sha256 always (the manifest keeps it); md5 where the registry's md5 is of this very file."""
    return ("sha256", "md5") if (f.md5 and byte_copy and not f.extract) else ("sha256",)


def _check(f: DataFile, got: dict[str, str], what: str, byte_copy: bool = True) -> None:
    for algo in ("sha256", "md5"):
        want = getattr(f, algo)
        if want and algo in got and got[algo] != want and byte_copy:
            raise SharedTaskError(f"{what}: {algo} is {got[algo]}, the registry expects {want}",
                                  hint="the file is not the official one (corrupt, truncated or another version); "
                                       "nothing was kept")


def _copy_hashed(src: Path, dest: Path, algorithms: tuple[str, ...], show_progress: bool, *,
                 untrusted: bool = False) -> dict[str, str]:
    """Copy ``src`` to ``dest`` and hash the bytes on the way (one read); ``untrusted``: a file of
    someone's folder, opened without following a link or blocking on a FIFO, and only if regular."""
    import hashlib

    hashers = {a: hashlib.new(a) for a in algorithms}
    with (_open_regular(src) if untrusted else open(src, "rb")) as fin, open(dest, "wb") as fout, \
            byte_progress(f"copy {src.name}", os.fstat(fin.fileno()).st_size,
                          enabled=show_progress and os.fstat(fin.fileno()).st_size > 64 << 20) as advance:
        while block := fin.read(checksum.BLOCK):
            fout.write(block)
            for h in hashers.values():
                h.update(block)
            advance(len(block))
    return {a: h.hexdigest() for a, h in hashers.items()}


def _install(src_part: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src_part, final)


def _link(blob: Path, final: Path) -> None:
    """Hard-link a verified blob into a dataset (a copy across file systems); never a
    symlink, which would dangle inside a container that mounts only the dataset."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _part(final)
    tmp.unlink(missing_ok=True)
    try:
        os.link(blob, tmp)
    except OSError:
        shutil.copyfile(blob, tmp)
    os.replace(tmp, final)


def file_entry(sha256: str, size: int, source: str) -> dict[str, Any]:
    return {"sha256": sha256, "size": size, "source": source}


def _place_built(f: DataFile, final: Path, build: Callable[[Path], dict[str, str]],
                 source: str) -> dict[str, dict[str, Any]]:
    """Write ``final`` through a part file that ``build`` fills and checks (it returns the
    digests): the dataset holds the whole verified file or nothing, never a half-written one."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _part(final)
    try:
        got = build(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _install(tmp, final)
    return {f.target: file_entry(got["sha256"], final.stat().st_size, source)}


def _place_package(ds: Dataset, f: DataFile, show_progress: bool) -> dict[str, dict[str, Any]]:
    def build(tmp: Path) -> dict[str, str]:
        got = _copy_hashed(f.package_path(), tmp, ("sha256",), show_progress)
        _check(f, got, f"{f.package_path()} (shipped for {ds.id})")
        return got

    return _place_built(f, dataset_dir(ds) / f.target, build, f"package:{f.package}")


def _place_irds(ds: Dataset, f: DataFile) -> dict[str, dict[str, Any]]:
    assert ds.irds is not None and f.irds is not None
    if f.source_md5:  # written from records: the organizers' file behind them is what the registry pins
        source = irds.source_path(ds.irds, f.irds)
        got_source = checksum.digests(source, ("md5",))["md5"]
        if got_source != f.source_md5:
            raise SharedTaskError(f"{f.irds} of ir_datasets {ds.irds}: {source} has md5 {got_source}, the registry "
                                  f"expects {f.source_md5}",
                                  hint="the file in ir_datasets' cache is not the organizers' (corrupt, truncated or "
                                       "another version); nothing was kept")
    def build(tmp: Path) -> dict[str, str]:
        assert ds.irds is not None and f.irds is not None
        irds.write_part(ds.irds, f.irds, tmp)
        byte_copy = f.irds != "qrels-quality"
        got = checksum.digests(tmp, _algorithms(f, byte_copy))
        _check(f, got, f"{f.irds} of ir_datasets {ds.irds}", byte_copy)
        return got

    return _place_built(f, dataset_dir(ds) / f.target, build, f"irds:{ds.irds}#{f.irds}")


def _declared(f: DataFile) -> str:
    return f.sha256 or f.md5 or "unchecked"


def _blob(f: DataFile) -> Path:
    return store_root() / "files" / _declared(f) / Path(f.path).name


def _fetch_blob(f: DataFile, mirror: str | None, show_progress: bool) -> Path:
    """The verified file behind a URL entry: downloaded (resumed), checked, extracted."""
    blob = _blob(f)
    if blob.is_file():
        return blob
    assert f.url is not None
    url = fetch.mirrored(f.url, mirror)
    name = f.url.rsplit("/", 1)[-1]
    part = store_root() / "downloads" / f"{_declared(f)}-{name}.part"
    fetch.download(url, part, size=f.size, show_progress=show_progress)
    with byte_progress(f"verify {name}", part.stat().st_size, enabled=show_progress) as advance:
        got = checksum.digests(part, [a for a in ("sha256", "md5") if getattr(f, a)], progress=advance)
    try:
        _check(f, got, f"download of {url}")
    except SharedTaskError:
        part.unlink()
        raise
    blob.parent.mkdir(parents=True, exist_ok=True)
    if f.extract:
        try:
            _extract(part, f.extract, blob, url)
        finally:
            part.unlink()  # extracted, or an archive that cannot be: either way not kept
    else:
        os.replace(part, blob)
    return blob


def _extract(archive: Path, member: str, dest: Path, what: str) -> None:
    tmp = _part(dest)
    try:
        with zipfile.ZipFile(archive) as zf, zf.open(member) as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, checksum.BLOCK)
    except KeyError:
        tmp.unlink(missing_ok=True)
        raise SharedTaskError(f"{what}: the archive has no member {member!r}",
                              hint="the registry or the mirror is wrong") from None
    except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, OSError) as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is not None:
            raise
        raise SharedTaskError(f"{what}: the archive is truncated or corrupt ({exc})",
                              hint="fetch or import it again") from None
    os.replace(tmp, dest)


def _place_url(ds: Dataset, f: DataFile, mirror: str | None, show_progress: bool) -> dict[str, dict[str, Any]]:
    blob = _fetch_blob(f, mirror, show_progress)
    final = dataset_dir(ds) / f.target
    _link(blob, final)
    sha = f.sha256 if (f.sha256 and not f.extract) else checksum.sha256(final)
    return {f.target: file_entry(sha, final.stat().st_size, f.url or "")}


def _place_derived(ds: Dataset, f: DataFile) -> dict[str, dict[str, Any]]:
    """Build ``f`` from the placed file it derives from (sharedtask.data.derive); {} until that is placed."""
    from sharedtask.data import derive

    assert f.derive is not None
    folder = dataset_dir(ds)
    source = folder / f.derive
    if f.derive not in read_manifest(folder).get("files", {}) or not source.is_file():
        return {}

    def build(tmp: Path) -> dict[str, str]:
        derive.BUILDERS[f.format](source, tmp)
        got = checksum.digests(tmp, ("sha256",))
        _check(f, got, f"{f.target} built from {f.derive}")
        return got

    return _place_built(f, folder / f.target, build, f"derived:{f.derive}")


def assemble(ds: Dataset, *, download: bool = False, mirror: str | None = None, roles: tuple[str, ...] = ("input", "truth"),
             show_progress: bool = True) -> list[DataFile]:
    """Place every file that can be placed without a person: package and ir_datasets files,
    and with ``download`` the URL files. Returns the required files still missing."""
    dataset_dir(ds).mkdir(parents=True, exist_ok=True)
    states = status(ds)
    for state in sorted(states, key=lambda st: st.file.source == "derived"):  # derived files last
        f = state.file
        if state.present or f.role not in roles:
            continue
        placed: dict[str, dict[str, Any]] = {}
        if f.source == "derived":
            placed = _place_derived(ds, f)
        elif f.source == "package":
            placed = _place_package(ds, f, show_progress)
        elif f.source == "irds" and f.url and download:  # the organizers' archive, its md5 checked here
            placed = _place_url(ds, f, mirror, show_progress)
        elif f.source == "irds":
            placed = _place_irds(ds, f)
        elif f.source == "url" and download:
            placed = _place_url(ds, f, mirror, show_progress)
        if placed:
            _record(ds, placed)
    return [f for f in missing(ds) if f.role in roles]


# --------------------------------------------------------------------------- import

def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a folder" if stat.S_ISDIR(mode) else "not a regular file")


def _not_regular(path: Path, mode: int) -> SharedTaskError:
    return SharedTaskError(f"{path} is {_kind(mode)}: data import copies regular files only, and never reads "
                           "anything outside the folder it is given",
                           hint="replace it with the file itself (cp -L), or import from the folder that holds it")


def _source_file(root: Path, path: Path) -> Path | None:
    """``path`` when it is a regular file reached from ``root`` through real folders only (``lstat``
    of every step); None when it is not there; a refusal naming a link, a FIFO or a device on the way."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return None
    if ".." in parts:
        raise SharedTaskError(f"{path} leaves the folder {root}: data import reads nothing outside it")
    current = root
    for i, part in enumerate(parts):
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        last = i == len(parts) - 1
        if stat.S_ISLNK(mode) or (last and not stat.S_ISREG(mode)) or (not last and not stat.S_ISDIR(mode)):
            if not last and not stat.S_ISLNK(mode) and stat.S_ISREG(mode):
                return None  # a file where a folder was expected: simply not there
            raise _not_regular(current, mode)
    return current


def _candidates(f: DataFile, src: Path) -> list[Path]:
    """Where a local copy of the organizers' release may hold ``f``: regular files below ``src``
    only, reached without following a link (a link, a FIFO or a device there is refused)."""
    if src.is_file():
        return [src]
    names = [f.path]
    if f.origin:
        names.append(f.origin if not f.is_glob else f"{f.origin}/{Path(f.path).name}")
    if f.url:
        names.append(f.url.rsplit("/", 1)[-1])
    if f.extract:
        names.append(f.extract)
    if f.package:
        names.append(Path(f.package).name)
    for name in names:
        found = sorted(src.glob(name)) if any(c in name for c in "*?[") else [src / name]
        hits = [hit for hit in (_source_file(src, p) for p in found) if hit is not None]
        if hits:
            return hits
    return []


def _open_regular(path: Path) -> Any:
    """``path`` opened for reading without following a link or blocking on a FIFO, checked regular."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_regular(path, stat.S_IFLNK) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_regular(path, mode)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def import_from(ds: Dataset, src: Path, *, show_progress: bool = True) -> list[str]:
    """Copy the dataset's files found under ``src`` (a folder, or one file) into place,
    checked against the registry; then place what the package and ir_datasets provide.
    Returns the targets imported."""
    if not src.exists():
        raise SharedTaskError(f"{src} does not exist", hint="give the folder of your copy of the official release")
    if not src.is_dir() and not stat.S_ISREG(os.lstat(src).st_mode):
        raise _not_regular(src, os.lstat(src).st_mode)
    imported: list[str] = []
    folder = dataset_dir(ds)
    for f in ds.files:
        if f.source in ("derived", "build"):  # built from the imported files (assemble() below) or a checkout
            continue
        hits = _candidates(f, src)
        if src.is_file():
            hits = hits if src.name in (Path(f.path).name, f.origin, f.extract,
                                        (f.url or "").rsplit("/", 1)[-1]) else []
        for hit in hits:
            rel = f"{f.role}/{Path(f.path).parent / hit.name}" if f.is_glob else f.target
            final = folder / rel
            final.parent.mkdir(parents=True, exist_ok=True)
            if f.extract and zipfile.is_zipfile(hit):  # the archive as published: check it, then extract
                got = checksum.digests(hit, [a for a in ("sha256", "md5") if getattr(f, a)])
                _check(f, got, str(hit))
                _extract(hit, f.extract, final, str(hit))
                sha = checksum.sha256(final)
            else:
                tmp = _part(final)
                try:
                    got = _copy_hashed(hit, tmp, _algorithms(f, True), show_progress, untrusted=True)
                    _check(f, got, str(hit), byte_copy=not f.extract)
                except BaseException:
                    tmp.unlink(missing_ok=True)
                    raise
                _install(tmp, final)
                sha = got["sha256"]
            _record(ds, {rel: file_entry(sha, final.stat().st_size, f"import:{hit.resolve()}")})
            imported.append(rel)
    if not imported:
        raise SharedTaskError(f"nothing of {ds.id} found in {src}",
                              hint="expected names: " + ", ".join(sorted({f.origin or f.path for f in ds.files})))
    assemble(ds, show_progress=show_progress)
    return imported


# --------------------------------------------------------------------------- build from a checkout

def build_from(ds: Dataset, checkout: Path, *, show_progress: bool = True) -> tuple[list[str], Any]:
    """Derive the dataset's ``build:`` files from the user's checkout of its repository
    (sharedtask.data.mathlib4.build), check each against the registry's sha256, and place
    them all, or none: a checkout at another commit or with local changes gives other bytes,
    and nothing is kept. Returns the targets placed and the builder's result (counts)."""
    from sharedtask.data.mathlib4 import build as mathlib4

    files = [f for f in ds.files if f.source == "build"]
    if not files or ds.checkout is None:
        raise SharedTaskError(f"dataset {ds.id} is not built from a checkout",
                              hint="data build is for datasets whose files say build: (sharedtask data show ID)")
    checkout = Path(checkout)
    mathlib4.check_checkout(checkout)
    commit = mathlib4.check_commit(checkout, ds.checkout.commit)
    folder = dataset_dir(ds)
    parts = {f.target: _part(folder / f.target) for f in files}
    for part in parts.values():
        part.parent.mkdir(parents=True, exist_ok=True)
    try:
        sources = mathlib4.lean_files(checkout)
        with byte_progress(f"read {mathlib4.SOURCE_DIR}/*.lean", sum(size for _, _, size in sources),
                           enabled=show_progress) as advance:
            result = mathlib4.build(checkout, parts, files=sources, progress=advance)
        wrong = [f for f in files if f.sha256 and result.digests[f.target] != f.sha256]
        if wrong:
            at = (f"at commit {commit}, the pinned one" if commit else "not a git work tree, so its commit is unknown")
            raise SharedTaskError(
                f"{checkout} gives other files than the registry's: "
                + ", ".join(f"{f.target} sha256 {result.digests[f.target][:16]}…, expected {f.sha256[:16]}…"
                            for f in wrong) + f" (the checkout is {at}); nothing was kept",
                hint=f"build from a clean clone: git clone {ds.checkout.repository} && git -C mathlib4 checkout "
                     f"{ds.checkout.commit} (git status there shows local changes)")
    except BaseException:
        for part in parts.values():
            part.unlink(missing_ok=True)
        raise
    placed: dict[str, dict[str, Any]] = {}
    for f in files:
        final = folder / f.target
        _install(parts[f.target], final)
        placed[f.target] = file_entry(result.digests[f.target], final.stat().st_size,
                                  f"build:{ds.checkout.repository}@{ds.checkout.commit}")
    _record(ds, placed)
    return list(placed), result


# --------------------------------------------------------------------------- verify

@dataclass(frozen=True)
class Check:
    target: str
    ok: bool
    detail: str


def verify(ds: Dataset, *, show_progress: bool = True) -> list[Check]:
    """Re-hash every placed file; compare with the manifest and the registry."""
    folder = dataset_dir(ds)
    placed = read_manifest(folder).get("files", {})
    checks: list[Check] = []
    for state in status(ds):
        f = state.file
        if not state.present:
            checks.append(Check(f.target, not f.required, "not placed" + ("" if f.required else " (optional)")))
            continue
        for target in state.present:
            path = folder / target
            entry = placed[target]
            byte_copy = not f.extract and f.irds != "qrels-quality"
            with byte_progress(f"verify {target}", path.stat().st_size, enabled=show_progress) as advance:
                got = checksum.digests(path, _algorithms(f, byte_copy), progress=advance)
            if got["sha256"] != entry["sha256"]:
                checks.append(Check(target, False, f"changed since it was placed: sha256 {got['sha256']}, "
                                                   f"recorded {entry['sha256']}"))
            elif f.sha256 and byte_copy and got["sha256"] != f.sha256:
                checks.append(Check(target, False, f"sha256 {got['sha256']} is not the registry's {f.sha256}"))
            elif f.md5 and "md5" in got and got["md5"] != f.md5:
                checks.append(Check(target, False, f"md5 {got['md5']} is not the registry's {f.md5}"))
            else:
                checks.append(Check(target, True, f"sha256 {got['sha256']}" + _archive_note(f, entry)))
    return checks


def _archive_note(f: DataFile, entry: dict[str, Any]) -> str:
    """Who checked the organizers' archive of a file extracted from one (the Touché topics)."""
    if not (f.irds and f.url and f.md5):
        return ""
    if str(entry.get("source", "")).startswith("irds:"):
        return (f"; through ir_datasets, which checks the archive's md5 {f.md5} when it downloads it (`data fetch` "
                "or `data import --from` the archive checks it here)")
    return f"; extracted from the archive with md5 {f.md5}, checked when it was placed"


# --------------------------------------------------------------------------- truth re-check

#: files up to this size are re-hashed in full at every evaluation (the largest official
#: qrels, ARQMath-1 Task 1's, is 684 kB: 0.4 ms, benchmarks/truth_check.py)
FULL_HASH_MAX = 16 << 20
STAMPS = ".verified.json"


def _stamp(st: os.stat_result) -> list[int]:
    """What changes when a file's bytes change: size, mtime, ctime (which no user call can
    set back) and inode (a file replaced by rename)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _read_stamps(folder: Path) -> dict[str, Any]:
    try:
        stamps = json.loads((folder / STAMPS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stamps if isinstance(stamps, dict) else {}


def _write_stamps(folder: Path, stamps: dict[str, Any]) -> None:
    tmp = folder / (STAMPS + ".part")
    try:
        tmp.write_text(json.dumps(stamps, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, folder / STAMPS)
    except OSError:  # a read-only store: the large files are hashed in full next time
        tmp.unlink(missing_ok=True)


def _remember_stamps(folder: Path, hashed: dict[str, str]) -> None:
    """Record the stamp of large files whose sha256 was just computed (placement)."""
    stamps, changed = _read_stamps(folder), False
    for target, sha in hashed.items():
        try:
            st = (folder / target).stat()
        except OSError:
            continue
        if st.st_size > FULL_HASH_MAX:
            stamps[target] = {"stamp": _stamp(st), "sha256": sha}
            changed = True
    if changed:
        _write_stamps(folder, stamps)


def check_truth(ds: Dataset, folder: Path | None = None) -> dict[str, str]:
    """Re-check the placed truth of ``ds`` before it scores a run; returns {target: sha256}.

    Why: ``evaluate`` names the official file and its registry checksum, so the bytes it
    reads must be those bytes. Files up to ``FULL_HASH_MAX`` are hashed in full every time;
    larger ones (ARQMath Task 2's formula index) are hashed when their stamp (size, mtime,
    ctime, inode) differs from the one recorded at their last full hash. A file that differs
    from the manifest is refused with one line naming it and ``sharedtask data verify``.
    ``folder``: the dataset folder (default: where the store places ``ds``)."""
    folder = Path(folder) if folder is not None else dataset_dir(ds)
    placed = read_manifest(folder).get("files", {})
    stamps = _read_stamps(folder)
    changed = False
    out: dict[str, str] = {}
    for target, entry in sorted(placed.items()):
        if not target.startswith("truth/"):
            continue
        path = folder / target
        try:
            st = path.stat()
        except OSError:
            raise SharedTaskError(f"{path}: the official truth file is missing; refusing to score",
                                  hint=f"sharedtask data verify {ds.id}") from None
        stamp = _stamp(st)
        known = stamps.get(target)
        if (st.st_size > FULL_HASH_MAX and isinstance(known, dict) and known.get("stamp") == stamp
                and known.get("sha256") == entry["sha256"]):
            out[target] = entry["sha256"]
            continue
        got = checksum.sha256(path)
        if got != entry["sha256"]:
            raise SharedTaskError(
                f"{path} has changed since it was placed (sha256 {got[:16]}…, recorded {entry['sha256'][:16]}…); "
                "refusing to score against it",
                hint=f"sharedtask data verify {ds.id}; place it again with sharedtask data import/fetch")
        out[target] = got
        if st.st_size > FULL_HASH_MAX and (not isinstance(known, dict) or known.get("stamp") != stamp):
            stamps[target] = {"stamp": stamp, "sha256": got}
            changed = True
    if changed:
        _write_stamps(folder, stamps)
    return out

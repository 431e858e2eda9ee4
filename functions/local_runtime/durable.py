"""Keeps the embedded AWS account's data on disk, so `make run` finds it again after a restart.

What is kept: every DynamoDB item, every S3 object (its latest version, body and metadata) and every
EventBridge Scheduler schedule of moto. Step Functions executions, Lambda functions, IAM roles and state
machines are not: `EmbeddedAws` creates those afresh at every start. What becomes of the jobs whose
executions died with the old process is `recovery.py`'s: one waiting at a human checkpoint waits there
again (a new execution from the state its record kept); any other ends FAILED at start-up.

How: a journal of resulting state. After every mutating request that moto answered (PutItem, UpdateItem,
DeleteItem, BatchWriteItem, TransactWriteItems; PutObject, CopyObject, DeleteObject(s), multipart
completion; CreateSchedule, UpdateSchedule, DeleteSchedule) the *current* image of each touched item,
object or schedule is read back from moto and appended as one JSON line to `journal.jsonl` (a deletion is
a line with no image). S3 bodies go to `blobs/<sha256>` (written to a temporary name, then renamed)
before their line is appended. Reading back and appending happen under one lock, so the last line of a
key is always its latest state, whatever the threads did in between. Each line is written with one
`write` and flushed before moto's answer is returned: a SIGKILL loses at most the requests in flight
(the kernel keeps what was written; `LOCAL_STATE_FSYNC=1` also fsyncs each line, against power loss).

At start, the journal is read with a tolerant reader (a torn or unparsable line, such as the last one
after a kill, is skipped), the last line of each key wins, the state is loaded straight into moto's
backends (no HTTP round trips), and the journal is rewritten compacted (temporary file, fsync, rename:
atomic). Blobs no longer referenced are removed then. While running, the journal is compacted again
when it has grown to four times its compacted size (and at least 64 MB).

One runtime per directory: `LocalState` takes an exclusive `flock` on `runtime.lock` in it before it
reads the journal and holds it for the process's life (the kernel drops it when the process dies, even
by SIGKILL). A second runtime on the same directory refuses to start (`StateDirInUse`, naming the
holder's pid) instead of compacting the journal under the first one. The directory and `blobs/` are
0700, and every file in them (journal, blobs, lock, temporary files) is created 0600: the state holds
every team's data.

Why not moto's request recorder: it replays every request ever made (start-up grows with history, not
with data), it would start every recorded Step Functions execution again, and it records to a file it
rewrites rather than appends. Why not pickling the backends: moto's backends hold locks and threads, and a
whole-state snapshot per write costs O(state) per request; a periodic one loses what came after it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import hashlib
import inspect
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler
from moto.s3.models import FakeKey, s3_backends
from moto.s3.responses import S3Response
from moto.scheduler.models import EventBridgeSchedulerBackend, Schedule, ScheduleGroup, scheduler_backends

from functions.common.observability import get_logger
from functions.local_runtime.patching import MethodPatch

logger = get_logger("local-state")

JOURNAL = "journal.jsonl"
BLOBS = "blobs"
LOCK_FILE = "runtime.lock"
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700
_COMPACT_MIN_BYTES = 64 * 1024 * 1024
_DYNAMO_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


def state_dir_from_env(default: str | Path | None = None) -> Path | None:
    """LOCAL_STATE_DIR when set (empty: in memory, nothing kept); else `default`."""
    value = os.environ.get("LOCAL_STATE_DIR")
    if value is None:
        return Path(default) if default else None
    return Path(value) if value.strip() else None


class StateDirInUse(Exception):
    """Another process holds the state directory's lock."""

    def __init__(self, directory: Path, holder_pid: int | None) -> None:
        holder = f"pid {holder_pid}" if holder_pid is not None else "a process whose pid is unknown"
        super().__init__(
            f"{directory} is in use by another local runtime ({holder}): stop it first, "
            "or give this one another LOCAL_STATE_DIR"
        )
        self.directory = directory
        self.holder_pid = holder_pid


def private_directory(directory: Path) -> None:
    """`directory` (and its parents) exists, and is the owner's only (0700)."""
    directory.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    if directory.stat().st_mode & 0o777 != DIRECTORY_MODE:
        os.chmod(directory, DIRECTORY_MODE)


def private_file(path: Path) -> None:
    """Take group and other permissions off an existing file (one written by an older runtime)."""
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_mode & 0o077:
            os.chmod(path, FILE_MODE)


class StateDirLock:
    """An exclusive `flock` on `<directory>/runtime.lock`, with the holder's pid written in the file."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Raises StateDirInUse when another process (or another open of it here) holds it."""
        if self._fd is not None:
            return
        private_directory(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _pid_in(fd)
            os.close(fd)
            raise StateDirInUse(self.path.parent, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _pid_in(fd: int) -> int | None:
    raw = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    return int(raw) if raw.isdigit() else None


def _key_id(kind: str, region: str, parts: list[Any]) -> str:
    return json.dumps([kind, region, *parts], separators=(",", ":"), sort_keys=True)


@dataclass
class LocalState:
    """The journal in `directory`; `load()` then `record_*` (via the installed moto hooks)."""

    directory: Path
    fsync: bool = field(default_factory=lambda: os.environ.get("LOCAL_STATE_FSYNC", "") == "1")
    _latest: dict[str, str] = field(default_factory=dict, init=False)  # key id -> its last line
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False)
    _file: Any = field(default=None, init=False)
    _dir_lock: StateDirLock | None = field(default=None, init=False)
    _compacted_bytes: int = field(default=0, init=False)
    _written_bytes: int = field(default=0, init=False)
    skipped_lines: int = field(default=0, init=False)
    load_seconds: float = field(default=0.0, init=False)

    # -- start-up ---------------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the directory for this process (StateDirInUse otherwise); `load` does it too, `close`
        gives it back."""
        if self._dir_lock is None:
            self._dir_lock = StateDirLock(self.directory)
        self._dir_lock.acquire()

    def load(self) -> dict[str, int]:
        """Read the journal, load its state into moto, rewrite it compacted; counts of what was loaded."""
        started = time.perf_counter()
        self.lock()  # before the journal is read: a second runtime stops here, having touched nothing
        private_directory(self.directory)
        private_directory(self.directory / BLOBS)
        journal = self.directory / JOURNAL
        self._latest.clear()
        for line in _read_lines(journal, self):
            self._latest[_line_key(line)] = line
        counts = {"dynamodb_items": 0, "s3_objects": 0, "schedules": 0}
        for line in list(self._latest.values()):
            record = json.loads(line)
            if record.get("v") is None:
                continue
            try:
                counts[self._restore(record)] += 1
            except Exception:  # one unloadable record must not keep the rest from loading
                logger.exception("local state record not restored", record_key=_line_key(line))
        self._latest = {
            key: line for key, line in self._latest.items() if json.loads(line).get("v") is not None
        }
        self._compact()
        self.load_seconds = time.perf_counter() - started
        global _active
        _active = self
        return counts

    def _restore(self, record: dict[str, Any]) -> str:
        kind, region, value = record["t"], record["r"], record["v"]
        account = record.get("a", DEFAULT_ACCOUNT_ID)
        if kind == "ddb":
            table = dynamodb_backends[account][region].get_table(record["k"][0])
            table.put_item(value)
            return "dynamodb_items"
        if kind == "s3":
            bucket, key = record["k"]
            body = (self.directory / BLOBS / value["blob"]).read_bytes()
            stored = s3_backends[account]["global"].put_object(bucket, key, body)
            stored.set_metadata(dict(value.get("meta") or {}), replace=True)
            return "s3_objects"
        if kind == "sched":
            group_name, _name = record["k"]
            backend = scheduler_backends[account][region]
            group = backend.schedule_groups.get(group_name)
            if group is None:
                group = backend.schedule_groups[group_name] = ScheduleGroup(region, account, group_name)
            schedule = object.__new__(Schedule)
            schedule.__dict__.update(value)
            group.add_schedule(schedule)
            return "schedules"
        raise ValueError(f"unknown record type {kind!r}")

    # -- recording --------------------------------------------------------------------------------
    def _append(self, kind: str, account: str, region: str, key: list[Any], value: Any) -> None:
        record: dict[str, Any] = {"t": kind, "r": region, "k": key, "v": value}
        if account != DEFAULT_ACCOUNT_ID:
            record["a"] = account
        line = json.dumps(record, separators=(",", ":"), default=str)
        data = (line + "\n").encode("utf-8")
        self._file.write(data)
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        self._latest[_line_key(line)] = line
        self._written_bytes += len(data)
        if self._written_bytes > max(_COMPACT_MIN_BYTES, 3 * self._compacted_bytes):
            self._compact()

    def record_dynamodb(self, backend: Any, table_name: str, key: dict[str, Any]) -> None:
        with self._lock:
            table = backend.get_table(table_name)
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            item = table.get_item(hash_key, range_key)
            key_parts = [
                table_name,
                key[table.hash_key_attr],
                key.get(table.range_key_attr) if table.range_key_attr else None,
            ]
            image = {name: _plain(value) for name, value in item.attrs.items()} if item is not None else None
            self._append("ddb", backend.account_id, backend.region_name, key_parts, image)

    def record_s3(self, backend: Any, bucket_name: str, key_name: str) -> None:
        with self._lock:
            bucket = backend.buckets.get(bucket_name)
            stored = bucket.keys.get(key_name) if bucket is not None else None
            value: dict[str, Any] | None = None
            if isinstance(stored, FakeKey):
                body = stored.value
                digest = hashlib.sha256(body).hexdigest()
                blob = self.directory / BLOBS / digest
                if not blob.exists():
                    _atomic_write(blob, body, fsync=self.fsync)
                value = {"blob": digest, "meta": dict(stored.metadata)}
            self._append("s3", backend.account_id, "global", [bucket_name, key_name], value)

    def record_schedule(self, backend: Any, group_name: str, name: str) -> None:
        with self._lock:
            group = backend.schedule_groups.get(group_name)
            schedule = group.schedules.get(name) if group is not None else None
            value = dict(vars(schedule)) if schedule is not None else None
            self._append("sched", backend.account_id, backend.region_name, [group_name, name], value)

    # -- compaction -------------------------------------------------------------------------------
    def _compact(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
            journal = self.directory / JOURNAL
            data = "".join(line + "\n" for line in self._latest.values()).encode("utf-8")
            _atomic_write(journal, data, fsync=True)
            self._compacted_bytes = len(data)
            self._written_bytes = 0
            referenced = set()
            for line in self._latest.values():
                record = json.loads(line)
                if record["t"] == "s3" and record.get("v"):
                    referenced.add(record["v"]["blob"])
            for blob in (self.directory / BLOBS).iterdir():
                if blob.name not in referenced:
                    blob.unlink(missing_ok=True)
                else:
                    private_file(blob)
            fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
            self._file = os.fdopen(fd, "ab")  # kept open until close()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            if self._dir_lock is not None:
                self._dir_lock.release()


def _plain(value: Any) -> Any:
    """A moto DynamoType as the request's attribute-value JSON (what `Table.put_item` takes back)."""
    if not isinstance(value, DynamoType):
        return base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
    inner = value.value
    if isinstance(inner, dict):
        inner = {key: _plain(nested) for key, nested in inner.items()}
    elif isinstance(inner, list):
        inner = [_plain(nested) for nested in inner]
    elif isinstance(inner, bytes):
        inner = base64.b64encode(inner).decode("ascii")
    return {value.type: inner}


def _line_key(line: str) -> str:
    record = json.loads(line)
    return _key_id(record["t"], record.get("a", DEFAULT_ACCOUNT_ID) + "/" + record["r"], record["k"])


def _read_lines(journal: Path, state: LocalState) -> Iterator[str]:
    """Every whole, parsable line; a torn or corrupt one (a kill mid-write) is counted and skipped."""
    if not journal.exists():
        return
    with open(journal, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                state.skipped_lines += 1
                continue
            try:
                line = raw.decode("utf-8").rstrip("\n")
                record = json.loads(line)
                if not isinstance(record, dict) or not {"t", "r", "k"} <= record.keys():
                    raise ValueError("not a journal record")
            except ValueError:
                state.skipped_lines += 1
                continue
            yield line


def _atomic_write(path: Path, data: bytes, *, fsync: bool) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        if fsync:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temporary, path)
    if fsync:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


# -- moto hooks: one active LocalState at a time (the embedded runtime is one per process) -------------
_active: LocalState | None = None


def _dynamo_keys(backend: Any, action: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    def key_of(table_name: str, item: dict[str, Any]) -> dict[str, Any]:
        table = backend.get_table(table_name)
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        return {name: item[name] for name in names if name in item}

    if action == "PutItem":
        return [(params["TableName"], key_of(params["TableName"], params["Item"]))]
    if action in ("UpdateItem", "DeleteItem"):
        return [(params["TableName"], params["Key"])]
    touched: list[tuple[str, dict[str, Any]]] = []
    if action == "BatchWriteItem":
        for table_name, requests in params.get("RequestItems", {}).items():
            for request in requests:
                if "PutRequest" in request:
                    touched.append((table_name, key_of(table_name, request["PutRequest"]["Item"])))
                elif "DeleteRequest" in request:
                    touched.append((table_name, request["DeleteRequest"]["Key"]))
    elif action == "TransactWriteItems":
        for entry in params.get("TransactItems", []):
            if "Put" in entry:
                touched.append(
                    (entry["Put"]["TableName"], key_of(entry["Put"]["TableName"], entry["Put"]["Item"]))
                )
            for kind in ("Update", "Delete"):
                if kind in entry:
                    touched.append((entry[kind]["TableName"], entry[kind]["Key"]))
    return touched


def _journal_dynamodb(call_action: Callable[[DynamoHandler], Any]) -> Callable[[DynamoHandler], Any]:
    @functools.wraps(call_action)
    def journaled_call_action(self: DynamoHandler) -> Any:
        response = call_action(self)
        state = _active
        if state is None:
            return response
        action = self._get_action()
        if action in _DYNAMO_WRITES and response[0] == 200:
            params = getattr(self, "params", None) or {}
            for table_name, key in _dynamo_keys(self.dynamodb_backend, action, params):
                state.record_dynamodb(self.dynamodb_backend, table_name, key)
        return response

    return journaled_call_action


def _journal_s3_key(key_response: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(key_response)
    def journaled_key_response(self: S3Response, request: Any, full_url: str) -> Any:
        response = key_response(self, request, full_url)
        state = _active
        if state is not None and request.method in ("PUT", "POST", "DELETE"):
            state.record_s3(
                self.backend, self.parse_bucket_name_from_url(request, full_url), self.parse_key_name()
            )
        return response

    return journaled_key_response


def _journal_s3_delete_keys(delete_keys: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(delete_keys)
    def journaled_delete_keys(self: S3Response, bucket_name: str, *args: Any, **kwargs: Any) -> Any:
        response = delete_keys(self, bucket_name, *args, **kwargs)
        state = _active
        if state is not None:
            import xmltodict  # type: ignore[import-untyped]  # moto's own dependency

            objects = xmltodict.parse(self.body, strip_whitespace=False)["Delete"].get("Object", [])
            for entry in objects if isinstance(objects, list) else [objects]:
                state.record_s3(self.backend, bucket_name, str(entry["Key"]))
        return response

    return journaled_delete_keys


def _journal_schedule(method: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(method)

    @functools.wraps(method)
    def journaled(self: EventBridgeSchedulerBackend, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        state = _active
        if state is not None:
            bound = signature.bind(self, *args, **kwargs)
            state.record_schedule(
                self, bound.arguments.get("group_name") or "default", bound.arguments["name"]
            )
        return result

    return journaled


_PATCHES = (
    MethodPatch(DynamoHandler, "call_action", _journal_dynamodb),
    MethodPatch(S3Response, "_key_response", _journal_s3_key),
    MethodPatch(S3Response, "_bucket_response_delete_keys", _journal_s3_delete_keys),
    MethodPatch(EventBridgeSchedulerBackend, "create_schedule", _journal_schedule),
    MethodPatch(EventBridgeSchedulerBackend, "update_schedule", _journal_schedule),
    MethodPatch(EventBridgeSchedulerBackend, "delete_schedule", _journal_schedule),
)


def install() -> None:
    """The moto hooks; they record once a `LocalState` has loaded. Install before `dynamodb_atomic`, so its
    lock wraps the journal."""
    for patch in _PATCHES:
        patch.install()


def deactivate() -> None:
    """Stop recording (the hooks stay, doing nothing)."""
    global _active
    _active = None


def uninstall() -> None:
    """After `dynamodb_atomic.uninstall()` (patches come off in the reverse order)."""
    deactivate()
    for patch in reversed(_PATCHES):
        patch.uninstall()

"""An offline W&B run read back from what wandb wrote, for the tests: the environment that keeps
wandb on this machine, and a reader of the run folder (the .wandb file's records, decoded with
wandb's own protobuf module, and the media files wandb writes beside it).

    with offline_env(tmp_path):  # WANDB_MODE=offline, WANDB_DIR=tmp_path, no console capture
        run = wandb.init(project="t")
        ...; run.finish()
    back = OfflineRun(run_folder(run))
    back.history()  # [{"_step": 0, "loss": 1.0, "gradscope/step": 0, ...}, ...]

wandb 0.31 writes the file from its Go service and no longer ships a Python reader (the
sdk.internal.datastore of older releases); its framing is LevelDB's log format, which the
datastore documented: a 7-byte file header (":W&B", magic 0xBEE1, version), then 32 KiB blocks
of chunks, each a 7-byte header (CRC-32 of the type byte and data, length, type: 1 whole,
2 first, 3 middle, 4 last) and its data; a block's tail too short for a header is padding.
Every chunk's CRC is checked, so a misread file fails here instead of reading as fewer rows."""
import contextlib
import glob
import json
import os
import socket
import struct
import time
import zlib

from wandb.proto import wandb_internal_pb2

_BLOCK = 32768
_FILE_HEADER = struct.Struct("<4sHB")
_CHUNK_HEADER = struct.Struct("<IHB")
_WHOLE, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


@contextlib.contextmanager
def offline_env(folder, monkeypatch):
    """wandb offline, silent, writing under `folder` only, and every socket of this process kept
    to the machine (wandb talks to its own service over a local socket); at the end the run is
    finished if a test left it open, and wandb's service stopped."""
    import wandb
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(folder), "WANDB_SILENT": "true", "WANDB_CONSOLE": "off",
           "WANDB_CONFIG_DIR": str(folder / "config"), "WANDB_CACHE_DIR": str(folder / "cache"),
           "WANDB_DATA_DIR": str(folder / "data"), "WANDB_DISABLE_GIT": "true", "WANDB_DISABLE_CODE": "true"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    for method in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, method, _local_only(getattr(socket.socket, method)))
    try:
        yield
    finally:
        if wandb.run is not None:
            wandb.run.finish()
        wandb.teardown()  # wandb reads the environment once per setup: the next test starts afresh


def _local_only(connect):
    def guarded(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"the W&B tests reach nothing outside this machine: a connection to {address} was refused")
        return connect(sock, address)
    return guarded


def run_folder(run):
    """The folder of `run` (offline-run-<time>-<id>): run.dir is its files/ subfolder."""
    return os.path.dirname(run.dir)


def read_records(path):
    """The wandb_internal_pb2.Record messages of a .wandb file, in order."""
    with open(path, "rb") as f:
        data = f.read()
    ident, magic, _version = _FILE_HEADER.unpack_from(data)
    if ident != b":W&B" or magic != 0xBEE1:
        raise ValueError(f"{path}: not a W&B run file (header {ident!r}, magic {magic:#x})")
    records, pending, pos = [], b"", _FILE_HEADER.size
    while pos + _CHUNK_HEADER.size <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _CHUNK_HEADER.size:  # a block's tail: padding
            pos += left
            continue
        crc, length, kind = _CHUNK_HEADER.unpack_from(data, pos)
        if kind == 0 and length == 0:  # zeros to the end of a block
            pos += left
            continue
        chunk = data[pos + _CHUNK_HEADER.size:pos + _CHUNK_HEADER.size + length]
        if len(chunk) != length or zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != crc:
            raise ValueError(f"{path}: damaged chunk at byte {pos}")
        pos += _CHUNK_HEADER.size + length
        pending = chunk if kind in (_WHOLE, _FIRST) else pending + chunk
        if kind in (_WHOLE, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def _finished_records(folder):
    """(records, None) once the run's file ends with its exit record, else (None, what is missing)."""
    paths = glob.glob(os.path.join(folder, "run-*.wandb"))
    if len(paths) != 1:
        return None, f"{len(paths)} run-*.wandb files"
    try:
        records = read_records(paths[0])
    except (ValueError, struct.error) as e:  # a chunk still being written
        return None, str(e)
    if not records or records[-1].WhichOneof("record_type") != "exit":
        return None, f"no exit record in {paths[0]} ({len(records)} records)"
    return records, None


def _put(row, item):
    """Sets `item` (a history item or summary update: key, or nested_key path) into `row`."""
    path = [item.key] if item.key else list(item.nested_key)
    for key in path[:-1]:
        row = row.setdefault(key, {})
    row[path[-1]] = json.loads(item.value_json)


class OfflineRun:
    """What an offline run folder holds, as wandb wrote it. run.finish() can return before
    wandb's service has written the file out (seen with 0.31: an empty file, now and then), so
    this waits, up to `wait_s`, for the run's exit record, the last one the service writes."""

    def __init__(self, folder, wait_s=60):
        self.folder = folder
        deadline = time.monotonic() + wait_s
        while True:
            self.records, why = _finished_records(folder)
            if why is None:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{folder}: {why} after {wait_s} s")
            time.sleep(0.1)

    def _of(self, kind):
        return [getattr(r, kind) for r in self.records if r.WhichOneof("record_type") == kind]

    def history(self):
        """The rows of run.log, in order: {key: value} (a table: {"path": ..., ...})."""
        rows = []
        for h in self._of("history"):
            row = {}
            for item in h.item:
                _put(row, item)
            rows.append(row)
        return rows

    def summary(self):
        """The run's summary: every update and removal applied in order."""
        summary = {}
        for s in self._of("summary"):
            for item in s.update:
                _put(summary, item)
            for item in s.remove:
                summary.pop(item.key or item.nested_key[0], None)
        return summary

    def step_metrics(self):
        """{name or glob: step_metric} of every define_metric that names one."""
        return {m.name or m.glob_name: m.step_metric for m in self._of("metric") if m.step_metric}

    def table(self, key):
        """(columns, data) of the table last logged under `key`, from its media file."""
        logged = [row[key] for row in self.history() if key in row]
        assert logged, f"no table {key!r} in the history"
        with open(os.path.join(self.folder, "files", logged[-1]["path"])) as f:
            table = json.load(f)
        return table["columns"], table["data"]

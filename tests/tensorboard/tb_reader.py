"""An event-file reader independent of gradscope's writer: Python's protobuf with a module
protoc generates from the .proto, and CRC-32C from PyPI's crc32c (not Boost). It checks
both CRCs of every record and that the file ends on a whole record."""
import os
import struct
import subprocess
import sys

import crc32c


def masked(crc):
    # TensorFlow's crc32c.h Mask: rotate right by 15, add a constant.
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def proto_module(proto_path, out_dir):
    """Generates and imports the Python module of tensorboard_event.proto."""
    proto_dir = os.path.dirname(proto_path)
    protoc = os.environ.get("GRADSCOPE_PROTOC", "protoc")  # the one CMake found
    subprocess.run([protoc, "-I", proto_dir, "--python_out", out_dir, proto_path], check=True)
    sys.path.insert(0, out_dir)
    import tensorboard_event_pb2  # noqa: E402

    return tensorboard_event_pb2


def read_records(path):
    """The data of every record; raises AssertionError on a bad CRC or a torn record."""
    with open(path, "rb") as f:
        data = f.read()
    pos, out = 0, []
    while pos < len(data):
        assert pos + 12 <= len(data), f"torn record header at byte {pos}"
        (length,) = struct.unpack_from("<Q", data, pos)
        (length_crc,) = struct.unpack_from("<I", data, pos + 8)
        assert length_crc == masked(crc32c.crc32c(data[pos : pos + 8])), f"length CRC at byte {pos}"
        start = pos + 12
        assert start + length + 4 <= len(data), f"torn record at byte {pos}"
        body = data[start : start + length]
        (body_crc,) = struct.unpack_from("<I", data, start + length)
        assert body_crc == masked(crc32c.crc32c(body)), f"data CRC at byte {pos}"
        out.append(body)
        pos = start + length + 4
    return out


def read_events(path, pb):
    events = []
    for body in read_records(path):
        e = pb.Event()
        e.ParseFromString(body)
        events.append(e)
    return events


def event_file(folder):
    names = [n for n in os.listdir(folder) if "tfevents" in n]
    assert len(names) == 1, names
    return os.path.join(folder, names[0])

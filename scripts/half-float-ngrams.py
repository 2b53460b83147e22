#!/usr/bin/env python3
"""Stores a model directory's n-gram embedding tables (`column_ngrams.safetensors`, its
experts' included) in half floats, halving the largest files of a model, and records the new
checksums in each manifest. The tables hold one 64-wide row per hash bucket; f16 keeps about
three significant digits of each value (the loader reads them back as f32).

Usage: scripts/half-float-ngrams.py MODEL_DIR

The directory is changed in place (work on a copy). A table already in f16 is left alone.
`colswarm inspect --verify MODEL_DIR` checks every checksum afterwards.
"""

import hashlib
import json
import struct
import sys
from array import array
from pathlib import Path

NGRAMS = "column_ngrams"


def read_safetensors(path):
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    return header, data[8 + n:]


def colswarm_checksum(tensors):
    """colswarm's tensor checksum: SHA-256 over each tensor's name, shape and stored bytes, in
    name order, each length as a little-endian u64."""
    h = hashlib.sha256()
    for name, shape, raw in sorted(tensors):
        h.update(struct.pack("<Q", len(name.encode())) + name.encode())
        h.update(struct.pack("<Q", len(shape)))
        for dim in shape:
            h.update(struct.pack("<Q", dim))
        h.update(struct.pack("<Q", len(raw)) + raw)
    return h.hexdigest()


def to_half(path):
    """Rewrites one colswarm safetensors file with its f32 tensors as f16; False if none was."""
    header, body = read_safetensors(path)
    metadata = header.pop("__metadata__", {})
    if all(t["dtype"] != "F32" for t in header.values()):
        return False
    tensors = []
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        start, end = t["data_offsets"]
        raw = body[start:end]
        if t["dtype"] == "F32":
            values = array("f")
            values.frombytes(raw)
            if sys.byteorder != "little":
                values.byteswap()
            raw = struct.pack(f"<{len(values)}e", *values)
        tensors.append((name, t["shape"], raw))
    metadata["colswarm.checksum"] = colswarm_checksum(tensors)
    out_header, offset, chunks = {}, 0, []
    for name, shape, raw in tensors:
        dtype = "F16" if header[name]["dtype"] == "F32" else header[name]["dtype"]
        out_header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        chunks.append(raw)
    out_header["__metadata__"] = dict(sorted(metadata.items()))
    text = json.dumps(dict(sorted(out_header.items())), separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    partial.replace(path)
    return True


def convert(model_dir):
    manifest_path = model_dir / "swarm.json"
    manifest = json.loads(manifest_path.read_text())
    entry = manifest.get(NGRAMS)
    if entry:
        path = model_dir / entry["path"]
        old = entry["sha256"]
        if to_half(path):
            new = hashlib.sha256(path.read_bytes()).hexdigest()
            # Only the checksum changes: the manifest's text is kept as colswarm wrote it.
            text = manifest_path.read_text()
            assert text.count(old) == 1, f"{manifest_path}: {old} is not listed once"
            partial = manifest_path.with_name("swarm.json.partial")
            partial.write_text(text.replace(old, new))
            partial.replace(manifest_path)
            print(f"{path}: f16, {path.stat().st_size / 1e6:.2f} MB")
    experts = model_dir / "experts"
    for expert in sorted(experts.iterdir()) if experts.is_dir() else []:
        if (expert / "swarm.json").is_file():
            convert(expert)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    convert(Path(sys.argv[1]))

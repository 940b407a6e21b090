#!/usr/bin/env python3
"""mufu_table.py: pack the H200's rcp.approx.ftz.f32 table for fa4sim's CPU model.

Reads the probe's rcp_table.bin.gz (scripts/gpu/mufu_probe.cu: gzip of 2^23 int8, entry j =
bits(rcp.approx.ftz(1 + j 2^-23)) - bits(1/x correctly rounded to float32), in ulps) and writes:
  OUT.bin   2^23 entries of 2 bits, 4 per byte, entry j in bits 2(j%4)..2(j%4)+1 of byte j/4,
            code = delta + 1 (0: -1 ulp, 1: exact, 2: +1 ulp; 3 never occurs) -> 2 MiB
  OUT.json  format, the encoding, the CRC-32 (zlib / IEEE 802.3) of OUT.bin that the C++ loader
            checks (src/core/mufu.cpp), the SHA-256 of the source, and the provenance: the GPU run
            that measured the source and this command.
Refuses (exit 2) a source of the wrong length or with a delta outside -1..+1: the 2-bit code
cannot hold it, and the model would be wrong there.

Usage: python3 scripts/datagen/mufu_table.py [SRC.bin.gz] [OUT.bin]
  defaults: data/gpu/mufu/2026-12-01/rcp_table.bin.gz data/mufu/rcp_approx_ftz.bin
"""
import gzip
import hashlib
import json
import os
import sys
import zlib

ENTRIES = 1 << 23
DEFAULT_SRC = "data/gpu/mufu/2026-12-01/rcp_table.bin.gz"
DEFAULT_OUT = "data/mufu/rcp_approx_ftz.bin"
# What measured the default source (data/gpu/mufu/2026-12-01/README.md).
PROBE = {
    "gpu": "NVIDIA H200 (SXM)",
    "driver": "580.159.04",
    "date": "2026-12-01 20:28 UTC",
    "command": "nvcc -O2 -arch=sm_90a -o mufu_probe scripts/gpu/mufu_probe.cu && ./mufu_probe OUT > "
               "OUT/mufu_probe.json; gzip -9 OUT/rcp_table.bin",
    "readme": "data/gpu/mufu/2026-12-01/README.md",
}


def fail(what, hint):
    print(f"mufu_table.py: error: {what} ({hint})", file=sys.stderr)
    sys.exit(2)


def pack(raw):
    """2 bits per entry, 4 entries per byte, little end first."""
    out = bytearray(ENTRIES // 4)
    codes = bytes((d + 1) & 0xFF for d in raw)  # int8 -> code; checked below
    for k in range(4):
        sl = codes[k::4]
        for i, c in enumerate(sl):
            out[i] |= c << (2 * k)
    return bytes(out)


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SRC
    out = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_OUT
    if not out.endswith(".bin"):
        fail(f"output '{out}' does not end in .bin", "the JSON sidecar is written next to it as .json")
    try:
        with open(src, "rb") as f:
            gz = f.read()
        raw = gzip.decompress(gz)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        fail(f"cannot read {src}: {e}", "give the probe's rcp_table.bin.gz")
    if len(raw) != ENTRIES:
        fail(f"{src} holds {len(raw)} bytes", f"the probe writes {ENTRIES} int8 entries")
    deltas = [b - 256 if b > 127 else b for b in raw]
    hist = {d: deltas.count(d) for d in (-1, 0, 1)}
    if sum(hist.values()) != ENTRIES:
        bad = next(j for j, d in enumerate(deltas) if d not in (-1, 0, 1))
        fail(f"entry {bad} of {src} is {deltas[bad]} ulps", "the 2-bit table holds -1..+1 only")
    packed = pack(deltas)
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    command = "python3 scripts/datagen/mufu_table.py" + (
        "" if (src, out) == (DEFAULT_SRC, DEFAULT_OUT) else f" {src} {out}")
    meta = {
        "format": "fa4sim/mufu-table-v1",
        "unit": "rcp.approx.ftz.f32",
        "entries": ENTRIES,
        "bits_per_entry": 2,
        "encoding": "entry j = bits(rcp.approx.ftz.f32(1 + j 2^-23)) - bits(1.0f / (1 + j 2^-23)) "
                    "in ulps, stored as code = delta + 1 in bits 2(j%4)..2(j%4)+1 of byte j/4",
        "bytes": len(packed),
        "crc32": f"{zlib.crc32(packed):08x}",
        "delta_histogram": {str(d): hist[d] for d in (-1, 0, 1)},
        "source": src,
        "source_sha256": hashlib.sha256(gz).hexdigest(),
        "measured_by": PROBE if src == DEFAULT_SRC else "see the source's README",
        "command": command,
    }
    write_atomic(out, packed)
    write_atomic(out[:-4] + ".json", (json.dumps(meta, indent=2) + "\n").encode())
    print(f"wrote {out} ({len(packed)} bytes, crc32 {meta['crc32']}) and its .json; "
          f"deltas -1/0/+1: {hist[-1]}/{hist[0]}/{hist[1]}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""mufu_table.py: pack the H200's measured MUFU tables for fa4sim's CPU models (src/core/mufu.cpp).

rcp.approx.ftz.f32 (fa4sim/mufu-table-v1): reads the probe's rcp_table.bin.gz
(scripts/gpu/mufu_probe.cu: gzip of 2^23 int8, entry j = bits(rcp.approx.ftz(1 + j 2^-23)) -
bits(1/x correctly rounded to float32), in ulps) and writes:
  OUT.bin   2^23 entries of 2 bits, 4 per byte, entry j in bits 2(j%4)..2(j%4)+1 of byte j/4,
            code = delta + 1 (0: -1 ulp, 1: exact, 2: +1 ulp; 3 never occurs) -> 2 MiB
  OUT.json  format, the encoding, the CRC-32 (zlib / IEEE 802.3) of OUT.bin that the C++ loader
            checks, the SHA-256 of the source, and the provenance: the GPU run that measured the
            source and this command.
Refuses (exit 2) a source of the wrong length or with a delta outside -1..+1: the 2-bit code
cannot hold it, and the model would be wrong there.

ex2.approx.ftz.f32 (fa4sim/mufu-ex2-table-v1, data/mufu/ex2_approx_ftz.bin): the two tables
Tpos[j] = ex2(j 2^-23) and Tneg[j] = ex2(-j 2^-23), j < 2^23, as deltas in ulps from
(float)exp2((double)x) (probe's ex2_table.bin.gz, -1..+1; mufu_structure.cu's ex2_neg23.bin.gz,
-2..+1), 2 bits each packed like rcp's (code = delta + 1 and delta + 2): 2 MiB + 2 MiB.

lg2.approx.ftz.f32 (fa4sim/mufu-lg2-table-v1, data/mufu/lg2_approx_ftz.bin): y0[j] = lg2(m) and
y1[j] = lg2(m / 2), m = 1 + j 2^-23, as deltas in ulps from (float)log2((double)x), the bit
patterns read as ordered integers (mufu_structure.cu's lg2_y0/lg2_y1.bin.gz, int32). The deltas
reach 2.4e7 near m = 1 (the unit's error is absolute there), so each table is a stream of 2^17
blocks of 64 entries: one byte w (0..32), then the 64 zigzag codes (d >= 0: 2d, d < 0: -2d - 1)
as w-bit fields, field k in bits kw..kw+w-1 of the block's 8w bytes (little-endian bit order);
y0's stream, then y1's.

For ex2 and lg2 the builder rebuilds every hardware result from its delta (NumPy float64
exp2/log2 rounded to float32) and checks the sums of their bit patterns against the ones the GPU
printed (mufu_structure.json), so a table that is not the hardware's, or a libm that rounds
differently, is refused; the sidecar keeps the sums for the C++ loader's own check.

Usage: python3 scripts/datagen/mufu_table.py              all three tables, default sources
       python3 scripts/datagen/mufu_table.py SRC.bin.gz OUT.bin   rcp only (as before)
  rcp defaults: data/gpu/mufu/2026-12-01/rcp_table.bin.gz data/mufu/rcp_approx_ftz.bin
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


def read_gz_raw(path, hint):
    """A gzip file's bytes and its decompressed content."""
    try:
        with open(path, "rb") as f:
            gz = f.read()
        return gz, gzip.decompress(gz)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        fail(f"cannot read {path}: {e}", hint)


def build_rcp(src, out):
    if not out.endswith(".bin"):
        fail(f"output '{out}' does not end in .bin", "the JSON sidecar is written next to it as .json")
    gz, raw = read_gz_raw(src, "give the probe's rcp_table.bin.gz")
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



# ---- ex2 and lg2 (NumPy: 2^23-entry tables, rebuilt and summed)

STRUCT_DIR = "data/gpu/mufu/2026-12-02-structure"
EX2_POS_SRC = "data/gpu/mufu/2026-12-01/ex2_table.bin.gz"
EX2_NEG_SRC = STRUCT_DIR + "/ex2_neg23.bin.gz"
LG2_Y0_SRC = STRUCT_DIR + "/lg2_y0.bin.gz"
LG2_Y1_SRC = STRUCT_DIR + "/lg2_y1.bin.gz"
STRUCT_JSON = STRUCT_DIR + "/mufu_structure.json"
EX2_OUT = "data/mufu/ex2_approx_ftz.bin"
LG2_OUT = "data/mufu/lg2_approx_ftz.bin"
LG2_BLOCK = 64
# What measured the negative ex2 table and the lg2 tables (data/gpu/mufu/2026-12-02-structure).
STRUCTURE = {
    "gpu": "NVIDIA H200 (SXM)",
    "driver": "580.159.04",
    "date": "2026-12-02 03:19 UTC",
    "command": "nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o ms scripts/gpu/mufu_structure.cu "
               "&& ./ms OUT > OUT/mufu_structure.json; gzip -9 OUT/*.bin",
    "readme": STRUCT_DIR + "/README.md",
}


def read_gz(path, dtype):
    """The int array in a gzip file, and the file's SHA-256."""
    import numpy as np
    gz, raw = read_gz_raw(path, "run from the repository root; the GPU data is committed")
    a = np.frombuffer(raw, dtype=dtype).astype(np.int64)
    if a.size != ENTRIES:
        fail(f"{path} holds {a.size} entries", f"the probe writes {ENTRIES}")
    return a, hashlib.sha256(gz).hexdigest()


def hardware_sums():
    try:
        with open(STRUCT_JSON, encoding="utf-8") as f:
            js = json.load(f)
        return {"ex2_pos": js["ex2_table_bit_sums"]["pos23"],
                "ex2_neg": js["ex2_table_bit_sums"]["neg23"],
                "lg2_y0": js["lg2_sum_y0"], "lg2_y1": js["lg2_two_table"]["sum_y1"]}
    except (OSError, ValueError, KeyError) as e:
        fail(f"cannot read the hardware bit sums from {STRUCT_JSON}: {e}", "it is committed data")


def bit_sum(bits):
    """The sum mod 2^64 of a uint64 array of bit patterns (what the GPU summed)."""
    return int(bits.sum(dtype="uint64"))


# The rebuilds run over CHUNK entries at a time: the same values, without a dozen temporary
# arrays of 2^23 entries (64 MiB each, whose page faults were most of the check's time).
CHUNK = 1 << 20


def check_sum(name, got, want):
    """got: the sum mod 2^64 of the rebuilt float32 bit patterns; it must be the GPU's."""
    if got != want:
        fail(f"{name}: rebuilt bit sum {got} != {want} measured on the GPU",
             "the deltas or this machine's exp2/log2 are not the ones the table was measured with")
    return got


def pack2(codes):
    """2 bits per entry, entry j in bits 2(j%4).. of byte j/4 (rcp's layout)."""
    import numpy as np
    c = codes.astype(np.uint8).reshape(-1, 4)
    return (c[:, 0] | (c[:, 1] << 2) | (c[:, 2] << 4) | (c[:, 3] << 6)).astype(np.uint8).tobytes()


def ex2_part(name, path, offset, negate, want):
    """One ex2 table: deltas -offset..+1 as codes delta + offset (positive: code 3 is unused, as
    for rcp, and the C++ loader refuses it)."""
    import numpy as np
    d, sha = read_gz(path, np.int8)
    if d.min() < -offset or d.max() > 1:
        bad = int(np.argmax((d < -offset) | (d > 1)))
        fail(f"entry {bad} of {path} is {d[bad]} ulps", f"the {name} table's code holds {-offset}..+1")
    got = 0
    for b in range(0, ENTRIES, CHUNK):
        x = np.arange(b, b + CHUNK, dtype=np.float64) * 2.0**-23
        ref = np.exp2(-x if negate else x).astype(np.float32).view(np.uint32).astype(np.int64)
        got += bit_sum((ref + d[b:b + CHUNK]).astype(np.uint64))
    check_sum(f"ex2 {name} table", got % 2**64, want)
    hist = {str(v): int((d == v).sum()) for v in range(-offset, 2)}
    return pack2(d + offset), {"source": path, "source_sha256": sha, "delta_histogram": hist}


def ordered(bits):
    import numpy as np
    return np.where(bits < 2**31, bits, -(bits - 2**31))


def lg2_part(name, path, halve, want):
    """One lg2 table: (block stream, facts for the sidecar)."""
    import numpy as np
    d, sha = read_gz(path, np.int32)
    got, on_grid = 0, True
    for b in range(0, ENTRIES, CHUNK):
        m = (1.0 + np.arange(b, b + CHUNK, dtype=np.float64) * 2.0**-23).astype(np.float32)
        x = (m * np.float32(0.5)) if halve else m
        ref = np.log2(x.astype(np.float64)).astype(np.float32).view(np.uint32).astype(np.int64)
        o = ordered(ref) + d[b:b + CHUNK]
        bits = np.where(o >= 0, o, -o + 2**31)
        got += bit_sum(bits.astype(np.uint64))
        y = bits.astype(np.uint32).view(np.float32).astype(np.float64)
        on_grid = on_grid and bool(np.all(np.ldexp(y, 36) == np.floor(np.ldexp(y, 36))))
    check_sum(f"lg2 {name} table", got % 2**64, want)
    if not on_grid:
        fail(f"{path}: an entry is not a multiple of 2^-36", "the model sums in units of 2^-36")
    z = np.where(d >= 0, 2 * d, -2 * d - 1).astype(np.uint64).reshape(-1, LG2_BLOCK)
    out = bytearray()
    widths = []
    for blk in z:
        w = int(blk.max()).bit_length()
        widths.append(w)
        acc = 0
        for k, v in enumerate(blk.tolist()):
            acc |= v << (k * w)
        out.append(w)
        out += acc.to_bytes(8 * w, "little")
    return bytes(out), {"source": path, "source_sha256": sha, "bytes": len(out),
                        "max_width_bits": max(widths), "delta_min": int(d.min()),
                        "delta_max": int(d.max())}


def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_table(out, packed, meta):
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    meta["bytes"] = len(packed)
    meta["crc32"] = f"{zlib.crc32(packed):08x}"
    meta["command"] = "python3 scripts/datagen/mufu_table.py"
    write_atomic(out, packed)
    write_atomic(out[:-4] + ".json", (json.dumps(meta, indent=2) + "\n").encode())
    print(f"wrote {out} ({len(packed)} bytes, crc32 {meta['crc32']}) and its .json")


def build_ex2(sums):
    pos, pos_meta = ex2_part("positive", EX2_POS_SRC, 1, False, sums["ex2_pos"])
    neg, neg_meta = ex2_part("negative", EX2_NEG_SRC, 2, True, sums["ex2_neg"])
    pos_meta["measured_by"] = dict(PROBE, command=PROBE["command"].replace("rcp_table", "ex2_table"))
    neg_meta["measured_by"] = STRUCTURE
    meta = {
        "format": "fa4sim/mufu-ex2-table-v1",
        "unit": "ex2.approx.ftz.f32",
        "entries": ENTRIES,
        "bits_per_entry": 2,
        "encoding": "two tables of 2^23 entries, positive then negative, each packed 4 entries per "
                    "byte, entry j in bits 2(j%4)..2(j%4)+1 of byte j/4; positive entry j = "
                    "bits(ex2.approx.ftz.f32(j 2^-23)) - bits((float)exp2((double)(j 2^-23))) in "
                    "ulps, code = delta + 1; negative entry j = bits(ex2.approx.ftz.f32(-j 2^-23)) "
                    "- bits((float)exp2(-(double)(j 2^-23))), code = delta + 2",
        "code_offset": {"positive": 1, "negative": 2},
        "hardware_bit_sums": {"positive": sums["ex2_pos"], "negative": sums["ex2_neg"]},
        "bit_sums_note": "sums mod 2^64 of the 2^23 hardware results' bit patterns per table, "
                         "printed by the GPU run (" + STRUCT_JSON + ", ex2_table_bit_sums pos23 / "
                         "neg23); the loader rebuilds each table with std::exp2 and checks them",
        "tables": {"positive": pos_meta, "negative": neg_meta},
        "structure_source": STRUCT_JSON,
        "structure_source_sha256": file_sha256(STRUCT_JSON),
    }
    write_table(EX2_OUT, pos + neg, meta)


def build_lg2(sums):
    y0, y0_meta = lg2_part("y0", LG2_Y0_SRC, False, sums["lg2_y0"])
    y1, y1_meta = lg2_part("y1", LG2_Y1_SRC, True, sums["lg2_y1"])
    y0_meta["measured_by"] = y1_meta["measured_by"] = STRUCTURE
    meta = {
        "format": "fa4sim/mufu-lg2-table-v1",
        "unit": "lg2.approx.ftz.f32",
        "entries": ENTRIES,
        "block_entries": LG2_BLOCK,
        "encoding": "two tables of 2^23 entries, y0 then y1; y0[j] = lg2.approx.ftz.f32(m), y1[j] = "
                    "lg2.approx.ftz.f32(m / 2), m = 1 + j 2^-23, each stored as the delta d from "
                    "(float)log2((double)x) in ulps (bit patterns read as ordered integers: b < 2^31 "
                    "? b : -(b - 2^31)); each table is 2^17 blocks of 64 entries: one byte w "
                    "(0..32), then 8w bytes holding the 64 zigzag codes (d >= 0: 2d, d < 0: -2d - 1) "
                    "as w-bit fields, field k in bits kw..kw+w-1, little-endian bit order",
        "hardware_bit_sums": {"y0": sums["lg2_y0"], "y1": sums["lg2_y1"]},
        "bit_sums_note": "sums mod 2^64 of the 2^23 hardware results' bit patterns per table, "
                         "printed by the GPU run (" + STRUCT_JSON + ", lg2_sum_y0 / "
                         "lg2_two_table.sum_y1); the loader rebuilds each table with std::log2 and "
                         "checks them",
        "tables": {"y0": y0_meta, "y1": y1_meta},
        "structure_source": STRUCT_JSON,
        "structure_source_sha256": file_sha256(STRUCT_JSON),
    }
    write_table(LG2_OUT, y0 + y1, meta)


def main():
    if len(sys.argv) > 1:
        if len(sys.argv) != 3:
            fail("give no arguments (all tables) or SRC.bin.gz OUT.bin (rcp)", __doc__.splitlines()[-3])
        build_rcp(sys.argv[1], sys.argv[2])
        return
    build_rcp(DEFAULT_SRC, DEFAULT_OUT)
    sums = hardware_sums()
    build_ex2(sums)
    build_lg2(sums)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tools/quant_ref.py — reference files for the GGUF block formats.

For each type, random blocks (random bytes with the f16 scales drawn to
cover extreme, zero, denormal and ordinary values) and the floats the `gguf`
package's dequantizer makes of them. tests/test_quant.c checks devkit's
dequantization bit for bit against these files, on every device, with no
Python at test time. Run from the repository root with the venv that has
`gguf` and `numpy`:

    /work/venv/bin/python tools/quant_ref.py        # writes tests/data/quant_*.bin

File layout (little-endian): magic b"DKQR", u32 ggml type number, u32 block
count, u32 values per block, u32 bytes per block, the blocks, then the f32
values. tests/data/quantize_<type>.bin (the types gguf quantizes) are the
other way round: magic b"DKQQ", the same four u32, the f32 values, then
gguf's blocks for them.
"""
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

# ggml type, values per block, bytes per block, byte offsets of f16 scales
TYPES = {
    "q4_0": (T.Q4_0, 32, 18, [0]),
    "q8_0": (T.Q8_0, 32, 34, [0]),
    "q4_1": (T.Q4_1, 32, 20, [0, 2]),
    "q5_0": (T.Q5_0, 32, 22, [0]),
    "q5_1": (T.Q5_1, 32, 24, [0, 2]),
    "q2_K": (T.Q2_K, 256, 84, [80, 82]),
    "q3_K": (T.Q3_K, 256, 110, [108]),
    "q4_K": (T.Q4_K, 256, 144, [0, 2]),
    "q5_K": (T.Q5_K, 256, 176, [0, 2]),
    "q6_K": (T.Q6_K, 256, 210, [208]),
}
# the non-linear 4-bit formats, drawn from a random stream of their own so
# that the files above stay as they were
TYPES_IQ = {
    "iq4_nl": (T.IQ4_NL, 32, 18, [0]),
    "iq4_xs": (T.IQ4_XS, 256, 136, [0]),
}
TYPES.update(TYPES_IQ)
# the 3-bit codebook formats, a stream of their own again; their first
# blocks index every point of the codebook in turn (ENUM), so the file
# checks each point of backends/iq_grids.h
TYPES_IQ3 = {
    "iq3_xxs": (T.IQ3_XXS, 256, 98, [0]),
    "iq3_s": (T.IQ3_S, 256, 110, [0]),
}
TYPES.update(TYPES_IQ3)
# the 2-bit ones, likewise (their own stream; every point enumerated)
TYPES_IQ2 = {
    "iq2_xxs": (T.IQ2_XXS, 256, 66, [0]),
    "iq2_xs": (T.IQ2_XS, 256, 74, [0]),
    "iq2_s": (T.IQ2_S, 256, 82, [0]),
}
TYPES.update(TYPES_IQ2)
IQ2_POINTS = {"iq2_xxs": 256, "iq2_xs": 512, "iq2_s": 1024}


def enumerate_points(name, raw):
    if name in TYPES_IQ2:                       # 32 points a block
        for i in range(IQ2_POINTS[name]):
            b, k = divmod(i, 32)
            if name == "iq2_xxs":               # byte l of group g's first u32
                raw[b, 2 + 8 * (k // 4) + k % 4] = i
            elif name == "iq2_xs":              # the low 9 bits of u16 k
                raw[b, 2 + 2 * k] = i & 255
                raw[b, 3 + 2 * k] = (int(raw[b, 3 + 2 * k]) & 0xFE) | (i >> 8)
            else:                               # qs[k], and 2 bits of qh[k / 4]
                raw[b, 2 + k] = i & 255
                byte = 2 + 64 + k // 4
                raw[b, byte] = (int(raw[b, byte]) & ~(3 << (2 * (k % 4))) & 255) | ((i >> 8) << (2 * (k % 4)))
        return
    n = 256 if name == "iq3_xxs" else 512
    for i in range(n):
        b, k = divmod(i, 64)
        raw[b, 2 + k] = i & 255                 # qs[k]
        if name == "iq3_s":                     # bit k of qh: the point's ninth bit
            byte = 2 + 64 + k // 8
            raw[b, byte] = (int(raw[b, byte]) & ~(1 << (k % 8)) & 255) | ((i >> 8) << (k % 8))

# f16 bit patterns for scales: the extremes and the odd ones by name, the
# rest drawn at random over every finite value
SPECIAL = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x1400]


def f16_bits(rng, n):
    out = []
    for i in range(n):
        if i < len(SPECIAL) * 2 and i % 2 == 0:
            out.append(SPECIAL[(i // 2) % len(SPECIAL)])
            continue
        while True:
            b = int(rng.integers(0, 1 << 16))
            if (b >> 10) & 0x1F != 0x1F:   # finite only: inf*0 gives NaNs whose sign is not specified
                out.append(b)
                break
    return out


def make(name, nblocks, rng):
    qtype, bs, bb, scale_offs = TYPES[name]
    raw = rng.integers(0, 256, size=(nblocks, bb), dtype=np.uint8)
    if name in TYPES_IQ3 or name in TYPES_IQ2:
        enumerate_points(name, raw)
    for off in scale_offs:
        bits = f16_bits(rng, nblocks)
        for b in range(nblocks):
            raw[b, off] = bits[b] & 0xFF
            raw[b, off + 1] = bits[b] >> 8
    # one block that is all zero bytes, one with zero scales and random codes
    raw[nblocks - 1, :] = 0
    for off in scale_offs:
        raw[nblocks - 2, off:off + 2] = 0
    vals = quants.dequantize(raw.reshape(-1), qtype).astype(np.float32).reshape(-1)
    assert vals.size == nblocks * bs
    head = b"DKQR" + struct.pack("<4I", int(qtype), nblocks, bs, bb)
    return head + raw.tobytes() + vals.astype("<f4").tobytes()


def make_quantized(name, nblocks, rng):
    """random floats (spread over magnitudes, with constant and zero blocks)
    and gguf's quantization of them: dk_quantize must write these bytes"""
    qtype, bs, bb, _ = TYPES[name]
    x = rng.standard_normal((nblocks, bs)).astype(np.float32)
    x *= np.float32(10.0) ** rng.integers(-6, 4, size=(nblocks, 1)).astype(np.float32)
    x[0, :] = 0
    x[1, :] = 0.375
    x[2, ::2] = -x[2, 1::2]          # ties in magnitude
    q = quants.quantize(x.reshape(-1), qtype).reshape(-1)
    assert q.size == nblocks * bb
    head = b"DKQQ" + struct.pack("<4I", int(qtype), nblocks, bs, bb)
    return head + x.astype("<f4").tobytes() + q.tobytes()


def write_dequant(out, names, rng):
    for name in names:
        nblocks = 64 if TYPES[name][1] == 32 else max(12, -(-(IQ2_POINTS.get(name, 0) // 32 + 2) // 6) * 6)
        data = make(name, nblocks, rng)
        path = os.path.join(out, "quant_%s.bin" % name)
        with open(path, "wb") as f:
            f.write(data)
        print("%s: %d blocks, %d bytes" % (path, nblocks, len(data)))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.join(root, "tests", "data")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261124)
    write_dequant(out, [n for n in TYPES if n not in TYPES_IQ and n not in TYPES_IQ3 and n not in TYPES_IQ2], rng)
    # quantizers gguf has: the bytes dk_quantize must match
    for name in ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1"):
        data = make_quantized(name, 64, rng)
        path = os.path.join(out, "quantize_%s.bin" % name)
        with open(path, "wb") as f:
            f.write(data)
        print("%s: 64 blocks, %d bytes" % (path, len(data)))
    write_dequant(out, list(TYPES_IQ), np.random.default_rng(20261129))
    write_dequant(out, list(TYPES_IQ3), np.random.default_rng(20261130))
    write_dequant(out, list(TYPES_IQ2), np.random.default_rng(20261201))
    return 0


if __name__ == "__main__":
    sys.exit(main())

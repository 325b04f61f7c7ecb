#!/usr/bin/env python3
"""tools/gen_iq_grids.py — writes backends/iq_grids.h, the codebooks of the
iq3 and iq2 formats.

iq3_xxs and iq3_s code four weights at a time, iq2_xxs, iq2_xs and iq2_s
eight, as an index into a fixed table of points (256 and 512 four-byte
points; 256, 512 and 1024 eight-byte points), chosen by the formats' author
from the values real weights take. The table is part of the format, like
iq4's 16 levels: a file's codes mean nothing without it. It is taken here
from the `gguf` package (the format's reference, MIT), so the one header
that C and CUDA (kernels/quants.cuh) include, and whose C arrays the Vulkan
backend copies into the buffer shaders/quants.glsl reads, holds exactly the
reference's points; tests/data/quant_iq*.bin check every point through the
dequantizer. Run from the repository root with the venv that has `gguf`:

    /work/venv/bin/python tools/gen_iq_grids.py
"""
import numpy as np
from gguf import quants

OUT = "backends/iq_grids.h"


def points(cls, width):
    cls.init_grid()
    g = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
    assert g.shape[1] == width and np.all(g == np.round(g)) and g.min() >= 0 and g.max() < 256
    b = g.astype(np.uint64)
    return [int(sum(int(v) << (8 * k) for k, v in enumerate(r))) for r in b]


def macro(name, vals, width):
    fmt, per = ("X(0x%08xu)", 8) if width == 4 else ("X(0x%016xull)", 5)
    lines = []
    for i in range(0, len(vals), per):
        lines.append("  " + " ".join(fmt % v for v in vals[i:i + per]))
    return "#define %s(X) \\\n%s\n" % (name, " \\\n".join(lines))


def main():
    xxs, s = points(quants.IQ3_XXS, 4), points(quants.IQ3_S, 4)
    assert len(xxs) == 256 and len(s) == 512
    two = [points(quants.IQ2_XXS, 8), points(quants.IQ2_XS, 8), points(quants.IQ2_S, 8)]
    assert [len(t) for t in two] == [256, 512, 1024]
    with open(OUT, "w") as f:
        f.write("/* backends/iq_grids.h — the codebooks of iq3_xxs (256 points) and iq3_s\n"
                " * (512), point i's four values the bytes of entry i, the first in the low\n"
                " * byte; and of iq2_xxs (256), iq2_xs (512) and iq2_s (1024), eight values\n"
                " * to a 64-bit entry the same way. Written by tools/gen_iq_grids.py from\n"
                " * the gguf package's tables; do not edit. Lists of X(value), so that C and\n"
                " * CUDA make their own arrays of one copy (Vulkan's shaders read the C\n"
                " * arrays from a buffer). */\n")
        f.write("#ifndef DK_IQ_GRIDS_H\n#define DK_IQ_GRIDS_H\n")
        f.write(macro("DK_IQ3XXS_GRID", xxs, 4))
        f.write(macro("DK_IQ3S_GRID", s, 4))
        for name, t in zip(("DK_IQ2XXS_GRID", "DK_IQ2XS_GRID", "DK_IQ2S_GRID"), two):
            f.write(macro(name, t, 8))
        f.write("#endif\n")


if __name__ == "__main__":
    main()

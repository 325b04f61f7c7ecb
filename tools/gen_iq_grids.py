#!/usr/bin/env python3
"""tools/gen_iq_grids.py — writes backends/iq_grids.h, the codebooks of the
iq3 formats.

iq3_xxs and iq3_s code four weights at a time as an index into a fixed
table of 4-byte points (256 and 512 of them), chosen by the formats' author
from the values real weights take. The table is part of the format, like
iq4's 16 levels: a file's codes mean nothing without it. It is taken here
from the `gguf` package (the format's reference, MIT), so the one header
that C, CUDA (kernels/quants.cuh) and GLSL (shaders/quants.glsl) include
holds exactly the reference's points; tests/data/quant_iq3_*.bin check every
point through the dequantizer. Run from the repository root with the venv
that has `gguf`:

    /work/venv/bin/python tools/gen_iq_grids.py
"""
import numpy as np
from gguf import quants

OUT = "backends/iq_grids.h"


def points(cls):
    cls.init_grid()
    g = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
    assert g.shape[1] == 4 and np.all(g == np.round(g)) and g.min() >= 0 and g.max() < 256
    b = g.astype(np.uint32)
    return [int(r[0] | (r[1] << 8) | (r[2] << 16) | (r[3] << 24)) for r in b]


def macro(name, vals):
    lines = []
    for i in range(0, len(vals), 8):
        lines.append("  " + " ".join("X(0x%08xu)" % v for v in vals[i:i + 8]))
    return "#define %s(X) \\\n%s\n" % (name, " \\\n".join(lines))


def main():
    xxs, s = points(quants.IQ3_XXS), points(quants.IQ3_S)
    assert len(xxs) == 256 and len(s) == 512
    with open(OUT, "w") as f:
        f.write("/* backends/iq_grids.h — the codebooks of iq3_xxs (256 points) and iq3_s\n"
                " * (512): point i's four values are the bytes of entry i, the first in the\n"
                " * low byte. Written by tools/gen_iq_grids.py from the gguf package's tables;\n"
                " * do not edit. Lists of X(value), so that C, CUDA and GLSL make their own\n"
                " * arrays (or stores) of one copy. */\n")
        f.write("#ifndef DK_IQ_GRIDS_H\n#define DK_IQ_GRIDS_H\n")
        f.write(macro("DK_IQ3XXS_GRID", xxs))
        f.write(macro("DK_IQ3S_GRID", s))
        f.write("#endif\n")


if __name__ == "__main__":
    main()

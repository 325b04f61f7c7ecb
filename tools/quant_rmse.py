#!/usr/bin/env python3
"""tools/quant_rmse.py — devkit's quantizers (dk_quantize, through
build/quantize_file) beside the `gguf` package's, on the same tensors: the
RMS error of the round trip for each type, and whether the bytes are the
same. gguf quantizes q4_0, q4_1, q5_0, q5_1 and q8_0 but not the K-quants
(it only dequantizes those), so their row has devkit's figure only.

    cc -O2 -std=c11 -o build/quantize_file tools/quantize_file.c -ldl -lm -lpthread
    /work/venv/bin/python tools/quant_rmse.py [build/quantize_file]

Tensors (fixed seed, 2^20 values each): uniform in [-1, 1]; normal; Student-t
with 3 degrees of freedom (heavy tails, as real weights have).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

TYPES = [("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("q4_1", T.Q4_1), ("q5_0", T.Q5_0), ("q5_1", T.Q5_1),
         ("q2_K", T.Q2_K), ("q3_K", T.Q3_K), ("q4_K", T.Q4_K), ("q5_K", T.Q5_K), ("q6_K", T.Q6_K)]


def rmse(a, b):
    return float(np.sqrt(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)))


def main():
    tool = sys.argv[1] if len(sys.argv) > 1 else "build/quantize_file"
    rng = np.random.default_rng(17)
    n = 256 * 4096
    tensors = {
        "uniform": rng.uniform(-1, 1, n).astype(np.float32),
        "normal": rng.standard_normal(n).astype(np.float32),
        "student-t3": rng.standard_t(3, n).astype(np.float32),
    }
    print("| type | tensor | devkit RMSE | gguf RMSE | same bytes |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for tname, x in tensors.items():
            src = os.path.join(tmp, tname + ".f32")
            x.tofile(src)
            for name, qt in TYPES:
                out = os.path.join(tmp, name + ".bin")
                subprocess.run([tool, src, name, out], check=True)
                dq = np.fromfile(out, dtype=np.uint8)
                ours = rmse(quants.dequantize(dq, qt).reshape(-1), x)
                try:
                    gq = quants.quantize(x.reshape(-1, 256), qt).reshape(-1)
                    theirs = "%.5f" % rmse(quants.dequantize(gq, qt).reshape(-1), x)
                    same = "yes" if gq.tobytes() == dq.tobytes() else "no (%d of %d bytes differ)" % (
                        int(np.count_nonzero(gq != dq)), dq.size)
                except NotImplementedError:
                    theirs, same = "(gguf has no quantizer)", "-"
                print("| %s | %s | %.5f | %s | %s |" % (name, tname, ours, theirs, same))
    return 0


if __name__ == "__main__":
    sys.exit(main())

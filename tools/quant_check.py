#!/usr/bin/env python3
"""tools/quant_check.py — a real GGUF file's every tensor, dequantized by
devkit on a device, compared bit for bit with the `gguf` package's
dequantization (through the sums tools/quant_check.c prints).

    cc -O2 -std=c11 -o build/quant_check tools/quant_check.c -ldl -lm -lpthread
    /work/venv/bin/python tools/quant_check.py FILE.gguf [device] [build/quant_check]

Prints one line per tensor type (count, how many match) and exits non-zero
on any difference. Not part of the test suite: real files are too large to
commit, and the suite needs no Python.
"""
import collections
import subprocess
import sys

import numpy as np
from gguf import GGUFReader, quants


def sums(vals):
    w = np.ascontiguousarray(vals, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    idx = np.arange(1, w.size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int(w.sum(dtype=np.uint64)), int((w * idx).sum(dtype=np.uint64))


def main():
    path = sys.argv[1]
    dev = sys.argv[2] if len(sys.argv) > 2 else "cpu"
    tool = sys.argv[3] if len(sys.argv) > 3 else "build/quant_check"
    run = subprocess.run([tool, path, dev], capture_output=True, text=True)
    got = {}
    for line in run.stdout.splitlines():
        name, dt, n, s1, s2 = line.split()
        got[name] = (dt, int(n), int(s1), int(s2))
    if run.returncode != 0:
        sys.stderr.write(run.stderr)
    r = GGUFReader(path)
    per = collections.defaultdict(lambda: [0, 0])
    bad = 0
    for t in r.tensors:
        ref = quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        s1, s2 = sums(ref)
        typ = t.tensor_type.name
        per[typ][0] += 1
        g = got.get(t.name)
        if g and g[1] == ref.size and g[2] == s1 and g[3] == s2:
            per[typ][1] += 1
        else:
            bad += 1
            print("MISMATCH %s %s: devkit %s, gguf n=%d %d %d" % (t.name, typ, g, ref.size, s1, s2))
    for typ, (n, ok) in sorted(per.items()):
        print("%-5s %4d tensors, %4d bit-exact" % (typ, n, ok))
    print("%s on %s: %d tensors, %d differ" % (path, dev, len(r.tensors), bad))
    return 1 if bad or run.returncode else 0


if __name__ == "__main__":
    sys.exit(main())

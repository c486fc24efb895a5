#!/usr/bin/env python3
"""Writes the sample corpora of text.pipe: lines of token ids separated by spaces ("12 7 301 4").

  python3 examples/text/make_data.py     # rewrites examples/text/corpus/{chat,docs}.txt

chat.txt holds 600 short lines (1 to 12 tokens), docs.txt 200 long ones (16 to 120 tokens), so the
lengths of the mix spread far: the case bucketing and packing are for. Some lines carry what real
text files do: spaces or a tab around the tokens, two spaces between two of them, an empty line.
Deterministic (a fixed seed), plain Python; the files are committed, so running the example needs
only pipec.
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 1000


def line(rng, lo, hi):
    tokens = [str(rng.randrange(1, VOCAB)) for _ in range(rng.randint(lo, hi))]
    text = " ".join(tokens)
    r = rng.random()
    if r < 0.05:
        text = "  " + text + " "
    elif r < 0.08:
        text = "\t" + text
    elif r < 0.10 and len(tokens) > 1:
        text = text.replace(" ", "  ", 1)
    return text


def write(name, lines):
    os.makedirs(os.path.join(HERE, "corpus"), exist_ok=True)
    with open(os.path.join(HERE, "corpus", name), "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def main():
    rng = random.Random(2026)
    chat = [line(rng, 1, 12) for _ in range(600)]
    chat[17] = ""  # an empty line: no tokens; the pipeline filters it out
    docs = [line(rng, 16, 120) for _ in range(200)]
    write("chat.txt", chat)
    write("docs.txt", docs)


if __name__ == "__main__":
    main()

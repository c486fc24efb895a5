#!/usr/bin/env python3
"""Writes the pack_* conformance fixtures from a small model of first-fit sequence packing.

tf.data has no pack, so these expected outputs come from the model below, written from the rule
docs/language.md gives (the rule Grain's first-fit packer follows), not from pipec's code. Plain Python:
no NumPy or TensorFlow needed (the .npy files are written by hand, format version 1.0).

    python3 tests/conformance/make_pack_fixtures.py
"""
import os
import shutil
import struct

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def pack(examples, length, rows_open, truncate):
    """First-fit packing. `examples` are dicts of equally long lists (one per field). Returns the rows in
    the order they are handed out, each a dict of the fields (padded with 0 to `length`), segment_ids and
    positions.

    An example goes to the oldest open row with room for it. Otherwise it starts a new row; a row that is
    exactly full goes out at once (it is never open), and when `rows_open` rows are open already the
    oldest goes out first. When the input ends, the open rows go out oldest first. Empty examples are
    skipped; an example longer than `length` keeps its first `length` tokens when `truncate` (else the
    stage fails, which this model does not make fixtures of)."""
    out, open_rows = [], []

    def new_row(fields):
        return {"fields": {f: [] for f in fields}, "segment_ids": [], "positions": []}

    def add(row, example, n):
        segment = (row["segment_ids"][-1] if row["segment_ids"] else 0) + 1
        for f, tokens in example.items():
            row["fields"][f].extend(tokens[:n])
        row["segment_ids"].extend([segment] * n)
        row["positions"].extend(range(n))

    for example in examples:
        n = len(next(iter(example.values())))
        if n > length:
            assert truncate, "an example longer than a row without truncate is a run-time error"
            n = length
        if n == 0:
            continue
        for row in open_rows:
            if length - len(row["segment_ids"]) >= n:
                add(row, example, n)
                if len(row["segment_ids"]) == length:
                    open_rows.remove(row)
                    out.append(row)
                break
        else:
            row = new_row(example.keys())
            add(row, example, n)
            if n == length:
                out.append(row)
            else:
                if len(open_rows) == rows_open:
                    out.append(open_rows.pop(0))
                open_rows.append(row)
    out.extend(open_rows)
    rows = []
    for row in out:
        pad = length - len(row["segment_ids"])
        r = {f: tokens + [0] * pad for f, tokens in row["fields"].items()}
        r["segment_ids"] = row["segment_ids"] + [0] * pad
        r["positions"] = row["positions"] + [0] * pad
        rows.append(r)
    return rows


def write_npy(path, values, descr):
    """A 1-D .npy file (format 1.0): little-endian i8, i4 or f4 values."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(values))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    code = {"<i8": "q", "<i4": "i", "<f4": "f"}[descr]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


# Each case: the example lengths, the row length, rows_open, truncate, and whether a second field
# (weights: f32, the tokens halved) is packed beside the tokens. Example i's tokens are
# i * 100, i * 100 + 1, ...
CASES = [
    ("pack_first_fit", [3, 5, 2, 6, 1, 4, 4, 2], 8, 8, False, False,
     "later short examples fill the gaps of older rows"),
    ("pack_rows_open_1", [3, 5, 2, 6, 1, 4, 4, 2], 8, 1, False, False,
     "one open row: a row goes out as soon as an example does not fit"),
    ("pack_rows_open_2", [5, 6, 7, 2, 1, 3, 1, 1, 4], 8, 2, False, False,
     "two open rows: the oldest goes out when a third is needed"),
    ("pack_exact", [8, 3, 8, 5, 8, 4, 4], 8, 4, False, False,
     "examples exactly a row long go out at once; rows filled exactly go out when full"),
    ("pack_two_fields", [4, 7, 1, 3, 2, 6, 5], 10, 3, False, True,
     "tokens (i64) and weights (f32) packed side by side"),
    ("pack_truncate", [12, 3, 9, 2, 1], 8, 2, True, False,
     "truncate = true keeps the first 8 tokens of longer examples"),
    ("pack_empty_examples", [0, 3, 0, 0, 2, 0], 4, 2, False, False, "empty examples are skipped"),
    ("pack_empty", [], 8, 8, False, False, "an empty input packs to no row"),
    ("pack_many", [(i * 7 + 3) % 13 + 1 for i in range(40)], 16, 3, False, False,
     "40 examples of 1 to 13 tokens, rows of 16, three open"),
]


def spec_of(lengths, length, rows_open, truncate, weights):
    top = max(lengths + [1])
    if lengths:
        iota = ", ".join(str(k) for k in range(top))
        lens = ", ".join(str(n) for n in lengths)
        tokens = f"([{iota}] + r.value * 100)[0:[{lens}][r.value]]"
    else:
        tokens = "[0][0:r.value]"
    fields = '["tokens", "weights"]' if weights else '["tokens"]'
    args = f"length = {length}, fields = {fields}"
    args += f", rows_open = {rows_open}" + (", truncate = true" if truncate else "")
    if weights:
        return (f"pipeline p = range({len(lengths)}) | map(r => {{ t: {tokens} }}) | "
                f"map(r => {{ tokens: r.t, weights: f32(r.t) * 0.5 }}) | pack({args})\n")
    return f"pipeline p = range({len(lengths)}) | map(r => {{ tokens: {tokens} }}) | pack({args})\n"


def main():
    for name, lengths, length, rows_open, truncate, weights, what in CASES:
        examples = []
        for i, n in enumerate(lengths):
            e = {"tokens": [i * 100 + k for k in range(n)]}
            if weights:
                e["weights"] = [t * 0.5 for t in e["tokens"]]
            examples.append(e)
        rows = pack(examples, length, rows_open, truncate)
        folder = os.path.join(FIXTURES, name)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        with open(os.path.join(folder, "spec.pipe"), "w") as f:
            f.write(f"# {what} (tests/conformance/make_pack_fixtures.py; tf.data has no pack)\n")
            f.write(spec_of(lengths, length, rows_open, truncate, weights))
        for i, row in enumerate(rows):
            d = os.path.join(folder, "expected", f"{i:06d}")
            os.makedirs(d)
            write_npy(os.path.join(d, "tokens.npy"), row["tokens"], "<i8")
            if weights:
                write_npy(os.path.join(d, "weights.npy"), row["weights"], "<f4")
            write_npy(os.path.join(d, "segment_ids.npy"), row["segment_ids"], "<i4")
            write_npy(os.path.join(d, "positions.npy"), row["positions"], "<i4")
        with open(os.path.join(folder, "case.txt"), "w") as f:
            f.write(f"description = lengths {lengths}, rows of {length}, rows_open {rows_open}"
                    f"{', truncate' if truncate else ''}: {what}; made by make_pack_fixtures.py's model\n")
            f.write(f"elements = {len(rows)}\n")
        print(f"  {name}: {len(rows)} rows")


if __name__ == "__main__":
    main()

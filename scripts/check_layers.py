#!/usr/bin/env python3
"""Fails when a project header is included against the layering.

Each folder of runtime/ and compiler/ has a rank; a file may include headers of its own folder and
of folders with a lower rank, never a higher one (the runtime never includes the compiler, core never
includes exec, ...). Folders of equal rank are siblings and may not include each other. A folder not
listed here is an error too, so a new folder must be placed in the table (CONTRIBUTING.md).

  python3 scripts/check_layers.py [ROOT]      # exit 0 when clean; otherwise one line per violation
"""
import os
import re
import sys

# Lowest first. The runtime is entirely below the compiler; within each, a folder may use the ones
# above it in this list.
LAYERS = [
    # The runtime: what a built spec links.
    ["runtime/core"],                     # tensors, chunks, dtypes, buffer pool, Philox, dtype dispatch
    ["runtime/trace"],                    # Chrome trace events: spans, counters, training steps
    ["runtime/threads"],                  # thread pool, bounded queues, cancellation
    ["runtime/plan"],                     # the plan and expression IR, printer, verifier, serialization
    ["runtime/model"],                    # the model IR: layer table, model and training-step graphs
    ["runtime/io"],                       # file formats: TFRecord, tf.Example, NumPy, CSV, compression, event files
    ["runtime/image"],                    # image codecs and transforms
    ["runtime/ops"],                      # the reference interpreter's kernels
    ["runtime/gpu"],                      # CUDA driver / NVRTC loading, device buffers, the GPU executor
    ["runtime/dist"],                     # collectives behind one interface: threads, Open MPI (a plugin), NCCL
    ["runtime/dist/mpi"],                 # libpipec_mpi.so: the plugin built against the machine's MPI
    ["runtime/train/dnnl"],               # CPU training kernels on oneDNN (the only code that includes dnnl.hpp)
    ["runtime/exec"],                     # iterators: the shared base, run, checkpoints
    ["runtime/exec/sources", "runtime/exec/stages", "runtime/exec/sinks"],
    # Training, by job: the reference kernels (plain loops) and the step math (optimizers, schedules, loss
    # scale, initializers, 16-bit rounding); the executor interface and the CPU executors' shared state;
    # the reference executor and persistence (safetensors, weights files, checkpoints); the loop (training
    # loop, evaluation, thread split, strategies).
    ["runtime/train/ref", "runtime/train/math"],
    ["runtime/train"],
    ["runtime/train/reference", "runtime/train/persist", "runtime/train/parallel"],
    ["runtime/train/loop"],
    ["runtime/train/gpu/kernels"],        # the GPU step kernels' source (portable CUDA, also host C++)
    # The fast training executor (the step graph on runtime/train/dnnl); the GPU executor and its launches.
    ["runtime/train/fast", "runtime/train/gpu"],
    ["runtime/capi"],                     # the C ABI of built libraries
    ["runtime/serve"],                    # served models: preprocessing + forward pass, pipe_predict
    # The compiler.
    ["compiler/front"],                   # parse tree -> AST, diagnostics
    ["compiler/sema"],                    # checking, builtin registry
    ["compiler/lower"],                   # checked AST -> plan
    ["compiler/train"],                   # model and train blocks -> training-step graph (gradient pass)
    ["compiler/train/passes"],            # the step graph's passes (fusion), one per file, in one list
    ["compiler/passes"],                  # the optimizer
    ["compiler/advice"],                  # advice after a run: one rule per file, from the seeds' lessons
    ["compiler/codegen", "compiler/codegen/llvm", "compiler/codegen/cuda"],
    ["compiler/compile"],                 # the one compile entry: check -> lower -> passes -> kernels
    ["compiler/fmt"],                     # the formatter
    ["compiler/lsp"],                     # the language server
    ["compiler/driver"],                  # the command line
    # Hosts of the compiler and runtime.
    ["python/src"],                       # the Python module's extension (pipec._pipec)
]

# Inside one rank the code generator's printers share the backend-neutral loop nests, so codegen/llvm
# and codegen/cuda may include compiler/codegen (but not each other).
SHARED_WITHIN_RANK = {"compiler/codegen"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:runtime|compiler)/[^"]+)"')


def rank_of(folder):
    for i, row in enumerate(LAYERS):
        if folder in row:
            return i
    return None


def folder_of(path):
    return os.path.dirname(path)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    for top in ("runtime", "compiler", "python/src"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if not name.endswith((".h", ".cpp", ".def", ".inc")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                own = folder_of(path)
                own_rank = rank_of(own)
                if own_rank is None:
                    problems.append(f"{path}: folder {own} is not in scripts/check_layers.py's LAYERS table")
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = folder_of(m.group(1))
                        if target == own:
                            continue
                        target_rank = rank_of(target)
                        if target_rank is None:
                            problems.append(f"{path}:{lineno}: includes {m.group(1)} from an unknown folder")
                        elif target_rank > own_rank:
                            problems.append(f"{path}:{lineno}: {own} includes {m.group(1)}, a layer above it")
                        elif target_rank == own_rank and target not in SHARED_WITHIN_RANK:
                            problems.append(f"{path}:{lineno}: {own} includes {m.group(1)}, a sibling folder")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against the layering (see LAYERS in scripts/check_layers.py)")
        return 1
    print("check_layers: every include respects the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())

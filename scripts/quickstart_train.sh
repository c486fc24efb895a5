#!/usr/bin/env bash
# The quick start's training part (scripts/quickstart.sh runs it once pipec is built and the sample data
# made): trains the chess example's `train` block for a few hundred steps, with its progress line and
# summary, then sets the loss on the held-out positions against the mean-prediction baseline and fails
# unless the model beats it by the margin below.
#
# Both figures come from pipec: the held-out mse is the run's own evaluation of the block's `validation`
# data (the last entry of --stats-json's "validation"), and the baseline is the spec's `mean_baseline`
# pipeline, the mse on those same held-out positions of always predicting the training targets' mean.
#
#   bash scripts/quickstart_train.sh [PIPEC_ARGS...]    # extra arguments go to both `pipec run`s (-D BATCH=64)
#
# Environment: PIPEC the pipec binary (build/pipec); CHESS_SPEC the spec (examples/chess/chess.pipe, its
# data/ made by make_data.pipe); STEPS (150: about a minute on 2 cores); OUT where the weights, the run's
# statistics and the baseline go (out/quickstart).
set -euo pipefail
cd "$(dirname "$0")/.."
pipec=${PIPEC:-build/pipec}
spec=${CHESS_SPEC:-examples/chess/chess.pipe}
steps=${STEPS:-150}
out=${OUT:-out/quickstart}
# The margin: the model's held-out mse at most half the baseline's, i.e. it explains at least half of
# what the mean leaves unexplained. 150 steps on the sample data give about 0.3.
max_ratio=0.5

rm -rf "$out/baseline"
mkdir -p "$out"
"$pipec" run "$spec" --pipeline mean_baseline --output "$out/baseline" -q "$@"
# One element: the spec batches up to a million positions a side into it.
if [ -e "$out/baseline/000001" ]; then
  echo "quickstart: more positions than mean_baseline batches at once (its const ALL); raise ALL" >&2
  exit 1
fi

echo
echo "training the chess net for $steps steps of the train block in $spec"
"$pipec" run "$spec" --steps "$steps" --save "$out/chess_net.safetensors" --stats-json "$out/stats.json" "$@"
[ -s "$out/chess_net.safetensors" ] || { echo "quickstart: no weights in $out/chess_net.safetensors" >&2; exit 1; }

python3 - "$out" "$max_ratio" <<'EOF'
import json, struct, sys

out, max_ratio = sys.argv[1], float(sys.argv[2])

def scalar(name):
    """The one value of a 0-d .npy file that `pipec run --output` wrote (f8 or i8, little-endian)."""
    data = open(f"{out}/baseline/000000/{name}.npy", "rb").read()
    header = data[10:10 + struct.unpack("<H", data[8:10])[0]].decode("latin-1")
    if "'<f8'" in header:
        return struct.unpack("<d", data[-8:])[0]
    if "'<i8'" in header:
        return struct.unpack("<q", data[-8:])[0]
    sys.exit(f"quickstart: {name}.npy holds {header!r}, not one f8 or i8")

evals = json.load(open(f"{out}/stats.json")).get("validation", [])
if not evals:
    sys.exit("quickstart: the run reported no evaluation on the held-out positions")
held_out = evals[-1]
baseline, mean = scalar("mse"), scalar("mean_score")
if held_out["examples"] != scalar("held_out_examples"):
    sys.exit(f"quickstart: the run evaluated {held_out['examples']} held-out positions, the baseline "
             f"{scalar('held_out_examples')}")
ratio = held_out["loss"] / baseline
print()
print(f"held-out positions ({held_out['examples']:,}, never trained on): mse {held_out['loss']:.4f}, "
      f"mae {held_out.get('mae', float('nan')):.4f} after step {held_out['step']}")
print(f"mean-prediction baseline (always {mean:.4f}, the mean of {scalar('training_examples'):,} training "
      f"targets): mse {baseline:.4f}")
if ratio > max_ratio:
    sys.exit(f"quickstart: FAILED: the model's held-out mse is {ratio:.2f} of the baseline's; it must be at most "
             f"{max_ratio:.2f}")
print(f"the model's mse is {ratio:.2f} of the baseline's (at most {max_ratio:.2f} passes): it learned from the board")
print(f"weights: {out}/chess_net.safetensors (safetensors: torch, JAX, Keras and numpy read them)")
EOF

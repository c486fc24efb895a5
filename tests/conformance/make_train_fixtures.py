#!/usr/bin/env python3
"""Regenerates the Keras training fixtures in tests/conformance/fixtures/train/ with real Keras.

  pip install tensorflow-cpu numpy safetensors && python3 tests/conformance/make_train_fixtures.py

Each case is one file fixtures/train/<case>.safetensors, written by the safetensors package:
  metadata  spec         a pipec spec whose train block `t` is the Keras model below, written in pipec
            steps        how many optimizer steps Keras took on the same batch
            rtol, atol   the tolerance of the comparison (pipec accumulates in f64, TensorFlow in f32)
            description  what the case pins down
  tensors   input:<field>        the batch fed to the model input called <field>
            target               the loss target (class labels as f32)
            <name>               every parameter and state tensor, named as pipec names them
                                 (`pipec explain`: conv2d/kernel, batch_normalization/moving_mean, ...)
            expect:output        the model's output on the batch, before any step
            expect:loss          the loss on the batch, before any step
            expect:grad:<name>   the gradient of that loss for every parameter
            expect:after:<name>  every parameter and state tensor after `steps` optimizer steps
tests/unit/train_keras_test.cpp compiles the spec, loads the weights and compares everything. The
trajectory fixtures in fixtures/train_steps/ (whole models over 20 steps) are described below, at
make_trajectories; `--steps-only` regenerates only them, `--mixed-only` only the mixed-precision ones. The
layers are named as pipec names its layers (a statement `h = x | dense(4)` names its one layer `h`), so
the names line up without a table. `--only CASE...` (re)makes just those cases of fixtures/train/.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers as L  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

from train_formula import formula_batch, formula_target, formula_values, sampled  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures", "train")
BATCH = 4
ONLY = set()  # `--only CASE...`: (re)make just these cases of fixtures/train/, leaving the other files as they are


def shape_text(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def input_fields(inputs):
    """inputs as (field, shape, pipec dtype, ids' upper bound or None): a pair (field, shape) is an f32
    input drawn uniform in [-1, 1), a tuple (field, shape, dtype, n) integer ids drawn from [0, n)."""
    return [(i[0], i[1], "f32", None) if len(i) == 2 else tuple(i) for i in inputs]


def spec_of(inputs, target, body, output, loss, optimizer):
    inputs = input_fields(inputs)
    fields = ", ".join(f"{n}: {dt}{shape_text(s)}" for n, s, dt, _ in inputs)
    tdtype, tshape = target
    tfield = f"y: {tdtype}{shape_text(tshape) if tshape else ''}"
    params = fields
    args = ", ".join(n for n, *_ in inputs)
    return (f'source s = tfrecord("unused.tfrecord") {{ {fields}, {tfield} }}\n'
            f"pipeline data = s | batch({BATCH}, drop_remainder = true)\n"
            f"model net({params}) -> f32{shape_text(output)} {{\n  {body}\n}}\n"
            f"train t = {{ data = data, model = net({args}), loss = {loss}(y), optimizer = {optimizer}, steps = 1 }}\n")


def keras_loss(name, from_model_softmax=True):
    return {
        "mse": keras.losses.MeanSquaredError(),
        "mae": keras.losses.MeanAbsoluteError(),
        "huber": keras.losses.Huber(delta=1.0),
        "binary_cross_entropy": keras.losses.BinaryCrossentropy(),
        "cross_entropy": keras.losses.CategoricalCrossentropy(),
        "sparse": keras.losses.SparseCategoricalCrossentropy(),
    }[name]


def keras_optimizer(text):
    kind, _, rest = text.partition("(")
    args = {}
    for part in rest.rstrip(")").split(","):
        if "=" in part:
            k, v = part.split("=")
            args[k.strip()] = float(v)
    lr = args.get("lr", 1e-3 if kind != "sgd" else 1e-2)
    if kind == "sgd":
        return keras.optimizers.SGD(learning_rate=lr, momentum=args.get("momentum", 0.0))
    common = dict(learning_rate=lr, beta_1=args.get("beta1", 0.9), beta_2=args.get("beta2", 0.999), epsilon=args.get("eps", 1e-7))
    if kind == "adam":
        return keras.optimizers.Adam(weight_decay=args.get("weight_decay") or None, **common)
    return keras.optimizers.AdamW(weight_decay=args.get("weight_decay", 0.004), **common)


def make_case(name, description, inputs, target, body, output, build, loss="mse", optimizer="sgd(lr = 0.1)", steps=1,
              rtol=2e-5, atol=2e-6, seed=0):
    """inputs: see input_fields; target: (pipec dtype, per-example shape) or "labels:<classes>";
    build: keras inputs dict -> output tensor, with layers named as pipec names them."""
    if ONLY and name not in ONLY:
        return
    fields = input_fields(inputs)
    rng = np.random.default_rng(seed)
    keras_inputs = {n: keras.Input(shape=s, batch_size=BATCH, name=n, dtype="float32" if dt == "f32" else {"i32": "int32", "i64": "int64"}[dt])
                    for n, s, dt, _ in fields}
    out = build(keras_inputs)
    model = keras.Model(inputs=[keras_inputs[n] for n, *_ in fields], outputs=out)
    # Weights: every variable drawn afresh (so the case does not depend on either initializer), except
    # that variances stay positive.
    for layer in model.layers:
        new = []
        for w in layer.weights:
            v = rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
            if "variance" in w.path:
                v = rng.uniform(0.5, 1.5, w.shape).astype(np.float32)
            new.append(v)
        if new:
            layer.set_weights(new)
    batch = {n: rng.uniform(-1, 1, (BATCH,) + tuple(s)).astype(np.float32) if dt == "f32" else
             rng.integers(0, ids, (BATCH,) + tuple(s)).astype({"i32": np.int32, "i64": np.int64}[dt]) for n, s, dt, ids in fields}
    loss_name = loss
    if isinstance(target, str) and target.startswith("labels:"):
        classes = int(target.split(":")[1])
        y = rng.integers(0, classes, (BATCH,) + tuple(output[:-1])).astype(np.int64)
        pipec_target = ("i64", list(output[:-1]))
        loss_name = "sparse"
    else:
        dtype, tshape = target
        pipec_target = target
        if loss in ("binary_cross_entropy",):
            y = rng.uniform(0.05, 0.95, (BATCH,) + tuple(tshape)).astype(np.float32)
        elif loss == "cross_entropy":
            y = rng.uniform(0.1, 1.0, (BATCH,) + tuple(tshape)).astype(np.float32)
            y /= y.sum(axis=-1, keepdims=True)
        else:
            y = rng.uniform(-1, 1, (BATCH,) + tuple(tshape)).astype(np.float32)
    keras_y = y.reshape((BATCH,) + tuple(output)) if loss_name in ("mse", "mae", "huber", "binary_cross_entropy") else y
    loss_fn = keras_loss(loss_name)
    xs = [tf.constant(batch[n]) for n, *_ in fields]

    tensors = {}
    for n, *_ in fields:
        tensors[f"input:{n}"] = batch[n].astype(np.float32)  # ids too, as the target's labels
    tensors["target"] = y.astype(np.float32)  # class labels too: pipec reads float tensors from safetensors
    names = {}
    for layer in model.layers:
        for w in layer.weights:
            pipec_name = w.path  # "conv2d_1/kernel"
            names[id(w)] = pipec_name
            tensors[pipec_name] = np.array(w.numpy(), dtype=np.float32)
    with tf.GradientTape() as tape:
        pred = model(xs, training=True)
        value = loss_fn(keras_y, pred)
    grads = tape.gradient(value, model.trainable_variables)
    # The forward pass above updated batch_norm's moving statistics; restore them for the steps below.
    for layer in model.layers:
        for w in layer.weights:
            w.assign(tensors[names[id(w)]])
    tensors["expect:output"] = np.array(pred.numpy(), dtype=np.float32)
    tensors["expect:loss"] = np.array(value.numpy(), dtype=np.float32).reshape(())
    for w, g in zip(model.trainable_variables, grads):
        # An embedding's gradient comes as IndexedSlices (rows and their ids): made dense, repeated ids add up.
        tensors[f"expect:grad:{names[id(w)]}"] = np.array(tf.convert_to_tensor(g).numpy(), dtype=np.float32)
    opt = keras_optimizer(optimizer)
    for _ in range(steps):
        with tf.GradientTape() as tape:
            value = loss_fn(keras_y, model(xs, training=True))
        grads = tape.gradient(value, model.trainable_variables)
        # Dense gradients, as Keras' JAX and PyTorch backends give them: with the TensorFlow backend an
        # embedding's gradient stays IndexedSlices, whose repeated ids Adam squares one by one (its second
        # moment gets 1^2 + 2^2 where the gradient is 1 + 2 = 3), which neither of the others does.
        grads = [tf.convert_to_tensor(g) for g in grads]
        opt.apply_gradients(zip(grads, model.trainable_variables))
    for layer in model.layers:
        for w in layer.weights:
            tensors[f"expect:after:{names[id(w)]}"] = np.array(w.numpy(), dtype=np.float32)
    spec = spec_of(inputs, pipec_target, body, output, loss, optimizer)
    save_file(tensors, os.path.join(OUT, name + ".safetensors"),
              metadata={"spec": spec, "steps": str(steps), "rtol": repr(rtol), "atol": repr(atol), "description": description})
    print(f"{name}: {len(tensors)} tensors, params {model.count_params()}")


def seq(*layers):
    def build(inputs):
        x = inputs["x"]
        for layer in layers:
            x = layer(x)
        return x
    return build


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.endswith(".safetensors") and not ONLY:
            os.remove(os.path.join(OUT, f))
    keras.utils.set_random_seed(0)
    img = [("x", (6, 6, 2))]
    r = ("f32", [2])

    make_case("conv2d_same", "conv2d, padding same, stride 1; dense head", img, r,
              "x | conv2d(3, 3, padding = same) | flatten | dense(2)", [2],
              seq(L.Conv2D(3, 3, padding="same", name="conv2d"), L.Flatten(), L.Dense(2, name="dense")))
    make_case("conv2d_strided", "conv2d, padding same, stride 2 (TensorFlow pads the odd row at the bottom); dilation 2; [2, 3] kernels",
              img, r, "x | conv2d(3, [2, 3], strides = 2, padding = same) | conv2d(2, 3, dilation = 2, padding = same) | flatten | dense(2)", [2],
              seq(L.Conv2D(3, (2, 3), strides=2, padding="same", name="conv2d"),
                  L.Conv2D(2, 3, dilation_rate=2, padding="same", name="conv2d_1"), L.Flatten(), L.Dense(2, name="dense")))
    make_case("conv2d_valid", "conv2d, padding valid, strides [2, 1]", [("x", (7, 6, 2))], r,
              "x | conv2d(3, 3, strides = [2, 1]) | flatten | dense(2)", [2],
              seq(L.Conv2D(3, 3, strides=(2, 1), name="conv2d"), L.Flatten(), L.Dense(2, name="dense")))
    make_case("conv2d_transpose", "conv2d_transpose: padding same stride 2, padding valid stride 2 with kernel 3", [("x", (3, 3, 2))], r,
              "x | conv2d_transpose(3, 3, strides = 2, padding = same) | conv2d_transpose(2, 3, strides = 2) | flatten | dense(2)", [2],
              seq(L.Conv2DTranspose(3, 3, strides=2, padding="same", name="conv2d_transpose"),
                  L.Conv2DTranspose(2, 3, strides=2, name="conv2d_transpose_1"), L.Flatten(), L.Dense(2, name="dense")))
    make_case("conv2d_transpose_wide_stride", "conv2d_transpose with a stride larger than its kernel", [("x", (3, 2, 2))], r,
              "x | conv2d_transpose(2, 2, strides = 3) | flatten | dense(2)", [2],
              seq(L.Conv2DTranspose(2, 2, strides=3, name="conv2d_transpose"), L.Flatten(), L.Dense(2, name="dense")))
    make_case("pools", "max_pool2d and avg_pool2d, padding same with stride 2 (padding is not averaged)", img, r,
              "x | conv2d(3, 1) | max_pool2d(3, strides = 2, padding = same) | avg_pool2d(2, strides = 1, padding = same) | flatten | dense(2)", [2],
              seq(L.Conv2D(3, 1, name="conv2d"), L.MaxPooling2D(3, strides=2, padding="same"),
                  L.AveragePooling2D(2, strides=1, padding="same"), L.Flatten(), L.Dense(2, name="dense")))
    make_case("global_pools", "global_avg_pool and global_max_pool", img, r,
              "h = x | conv2d(3, 1)\n  concat([h | global_avg_pool, h | global_max_pool]) | dense(2)", [2],
              lambda i: L.Dense(2, name="dense")(L.Concatenate()([L.GlobalAveragePooling2D()(c := L.Conv2D(3, 1, name="h")(i["x"])),
                                                                    L.GlobalMaxPooling2D()(c)])))
    make_case("upsample2d", "upsample2d nearest and bilinear (half-pixel centres)", [("x", (3, 2, 2))], r,
              "x | conv2d(2, 1) | upsample2d([2, 3]) | upsample2d(2, method = bilinear) | flatten | dense(2)", [2],
              seq(L.Conv2D(2, 1, name="conv2d"), L.UpSampling2D((2, 3)), L.UpSampling2D(2, interpolation="bilinear"), L.Flatten(),
                  L.Dense(2, name="dense")))
    make_case("batch_norm", "batch_norm in training: batch statistics, moving statistics after the step", img, r,
              "x | conv2d(3, 3) | batch_norm(momentum = 0.9) | relu | flatten | dense(2)", [2],
              seq(L.Conv2D(3, 3, name="conv2d"), L.BatchNormalization(momentum=0.9, name="batch_normalization"), L.ReLU(), L.Flatten(),
                  L.Dense(2, name="dense")))
    make_case("layer_norm", "layer_norm over the last axis", [("x", (3, 5))], ("f32", [3, 2]),
              "x | dense(4) | layer_norm | dense(2)", [3, 2],
              seq(L.Dense(4, name="dense"), L.LayerNormalization(epsilon=1e-3, name="layer_normalization"), L.Dense(2, name="dense_1")))
    make_case("activations", "relu, leaky_relu, tanh, sigmoid, gelu (exact), softmax over a middle axis",
              [("x", (3, 4))], ("f32", [3, 2]),
              "h = x | dense(4)\n  y = (h | relu) + (h | leaky_relu(alpha = 0.3)) + (h | tanh) + (h | sigmoid) + (h | gelu) + (h | softmax(axis = 0))\n  y | dense(2)",
              [3, 2],
              lambda i: L.Dense(2, name="dense")(L.Add()([
                  L.ReLU()(h := L.Dense(4, name="h")(i["x"])), L.LeakyReLU(negative_slope=0.3)(h), L.Activation("tanh")(h),
                  L.Activation("sigmoid")(h), L.Activation(lambda t: keras.activations.gelu(t, approximate=False))(h),
                  L.Softmax(axis=1)(h)])))
    vec = [("x", (5,))]
    for loss in ["mse", "mae", "huber"]:
        make_case(f"loss_{loss}", f"{loss}, mean over the batch and the last axis", vec, ("f32", [2, 3]),
                  "x | dense(6) | tanh | dense(6) | reshape([2, 3])", [2, 3],
                  seq(L.Dense(6, name="dense"), L.Activation("tanh"), L.Dense(6, name="dense_1"), L.Reshape((2, 3))), loss=loss)
    make_case("loss_bce_logits", "binary_cross_entropy after a sigmoid: computed from the logits", vec, ("f32", [3]),
              "x | dense(3) | sigmoid", [3], seq(L.Dense(3, name="dense"), L.Activation("sigmoid")), loss="binary_cross_entropy")
    make_case("loss_bce_probabilities", "binary_cross_entropy of probabilities (clipped to [1e-7, 1 - 1e-7])", vec, ("f32", [3]),
              "(x | dense(3) | tanh) * 0.45 + 0.5", [3],
              lambda i: L.Rescaling(0.45, offset=0.5)(L.Activation("tanh")(L.Dense(3, name="dense")(i["x"]))), loss="binary_cross_entropy")
    make_case("loss_ce_logits", "cross_entropy after a softmax, one-hot/probability targets: from the logits", vec, ("f32", [4]),
              "x | dense(4) | softmax", [4], seq(L.Dense(4, name="dense"), L.Softmax()), loss="cross_entropy")
    make_case("loss_ce_probabilities", "cross_entropy of probabilities that do not sum to one (Keras normalizes them)", vec, ("f32", [4]),
              "(x | dense(4) | tanh) * 0.45 + 0.5", [4],
              lambda i: L.Rescaling(0.45, offset=0.5)(L.Activation("tanh")(L.Dense(4, name="dense")(i["x"]))), loss="cross_entropy")
    make_case("loss_ce_labels", "cross_entropy with integer class labels, per pixel, after a softmax", [("x", (3, 3, 2))], "labels:4",
              "x | conv2d(4, 1) | softmax", [3, 3, 4], seq(L.Conv2D(4, 1, name="conv2d"), L.Softmax()), loss="cross_entropy")
    make_case("loss_ce_labels_probabilities", "cross_entropy with class labels on probabilities", vec, "labels:4",
              "(x | dense(4) | tanh) * 0.45 + 0.5", [4],
              lambda i: L.Rescaling(0.45, offset=0.5)(L.Activation("tanh")(L.Dense(4, name="dense")(i["x"]))), loss="cross_entropy")
    head = seq(L.Dense(8, name="dense"), L.Activation("tanh"), L.Dense(2, name="dense_1"))
    body = "x | dense(8) | tanh | dense(2)"
    make_case("sgd", "sgd, 3 steps", vec, r, body, [2], head, optimizer="sgd(lr = 0.1)", steps=3)
    make_case("sgd_momentum", "sgd with momentum, 3 steps", vec, r, body, [2], head, optimizer="sgd(lr = 0.1, momentum = 0.9)", steps=3)
    make_case("adam", "adam, 3 steps", vec, r, body, [2], head, optimizer="adam(lr = 0.01)", steps=3, rtol=1e-4, atol=1e-5)
    make_case("adam_eps", "adam with a large eps (Keras adds it to sqrt(v), not to the bias-corrected sqrt(v_hat))", vec, r, body, [2], head,
              optimizer="adam(lr = 0.01, eps = 0.1)", steps=3, rtol=1e-4, atol=1e-5)
    make_case("adamw", "adamw (decoupled weight decay on every weight, biases included), 3 steps", vec, r, body, [2], head,
              optimizer="adamw(lr = 0.01, weight_decay = 0.1)", steps=3, rtol=1e-4, atol=1e-5)
    # Ids (i64: a tf.Example field's integer type) of rank 1 and 2, each drawn from [0, input_dim) so that
    # ids repeat within the batch (their rows of the gradient add up) and some rows are never looked up.
    make_case("embedding", "embedding: ids of rank 1 and 2, repeated ids, unused rows; adam, 3 steps",
              [("tokens", (5,), "i64", 30), ("grid", (2, 3), "i64", 7)], r,
              "concat([tokens | embedding(30, 3) | flatten, grid | embedding(7, 2) | flatten]) | dense(2)", [2],
              lambda i: L.Dense(2, name="dense")(L.Concatenate()([
                  L.Flatten()(L.Embedding(30, 3, name="embedding")(i["tokens"])),
                  L.Flatten()(L.Embedding(7, 2, name="embedding_1")(i["grid"]))])),
              optimizer="adam(lr = 0.01)", steps=3, rtol=1e-4, atol=1e-5)
    make_case("chess_small", "the chess net's shape, smaller: conv, concat of flatten and flags, dense, tanh, mse, adam",
              [("board", (4, 4, 3)), ("flags", (5,))], ("f32", [1]),
              "x = board | conv2d(8, 3, padding = same) | relu | conv2d(8, 3, padding = same) | relu\n"
              "  x = concat([flatten(x), flags])\n  x | dense(16) | relu | dense(1) | tanh", [1],
              lambda i: L.Activation("tanh")(L.Dense(1, name="dense_1")(L.Dense(16, activation="relu", name="dense")(
                  L.Concatenate()([L.Flatten()(L.Conv2D(8, 3, padding="same", activation="relu", name="conv2d_1")(
                      L.Conv2D(8, 3, padding="same", activation="relu", name="conv2d")(i["board"]))), i["flags"]])))),
              optimizer="adam(lr = 0.001)", steps=2, rtol=1e-4, atol=1e-5)


# ---- Trajectories: whole models, 20 steps on 20 batches ----------------------------------------------
#
# fixtures/train_steps/<case>.safetensors: the chess net of examples/chess and a small net with every
# layer that has weights or a gradient rule, trained by Keras for 20 steps, each on a batch of its own,
# with sgd + momentum, adam and adamw. The initial weights and the batches are not stored: both sides make
# them with the same formula (`formula_values`, tests/unit/train_formula.h), a splitmix64 hash of the
# tensor's name and the element's index, so a 1.1-million-parameter model costs a few kilobytes.
#   metadata  spec, steps, rtol, atol, description   as above
#             strides   "name=k;..." an expected tensor with more than 2048 elements keeps every k-th
#   tensors   expect:output, expect:loss            on the first batch, before any step
#             expect:grad:<name>                     the gradient on the first batch (every k-th element)
#             expect:losses                          the loss of each of the steps, before its update
#             expect:after:<name>                    parameters and states after the steps (every k-th)
# Targets: mse targets (2u - 1) * 0.9; class labels floor(u * classes).
STEPS_OUT = os.path.join(HERE, "fixtures", "train_steps")
TRAJ_BATCH = 8
TRAJ_STEPS = 20


KERAS_POLICY = {"mixed_bf16": "mixed_bfloat16", "mixed_fp16": "mixed_float16"}


def make_trajectory(name, description, inputs, spec_body, output, build, optimizer, classes=0, rtol=1e-5, atol=1e-6,
                    precision="fp32"):
    """inputs: [(field, per-example shape)]; build: keras inputs -> output, layers named as pipec names them.
    precision: fp32, or mixed_bf16 / mixed_fp16 (Keras' mixed policies: the layers compute in bf16 / f16
    with f32 variables; f16 with Keras' LossScaleOptimizer, dynamic scale from 2^15)."""
    keras.mixed_precision.set_global_policy(KERAS_POLICY.get(precision, "float32"))
    try:
        _make_trajectory(name, description, inputs, spec_body, output, build, optimizer, classes, rtol, atol, precision)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _make_trajectory(name, description, inputs, spec_body, output, build, optimizer, classes, rtol, atol, precision):
    keras_inputs = {n: keras.Input(shape=s, batch_size=TRAJ_BATCH, name=n) for n, s in inputs}
    model = keras.Model(inputs=[keras_inputs[n] for n, _ in inputs], outputs=build(keras_inputs))
    names = {}
    for layer in model.layers:
        for w in layer.weights:
            names[id(w)] = w.path
            w.assign(formula_values(w.path, tuple(w.shape)))
    tshape = (TRAJ_BATCH,) + tuple(output[:-1] if classes else output)
    loss_fn = keras.losses.SparseCategoricalCrossentropy() if classes else keras.losses.MeanSquaredError()

    def batch(step):
        return [tf.constant(formula_batch(n, step, (TRAJ_BATCH,) + tuple(s))) for n, s in inputs], formula_target(step, tshape, classes)

    tensors, strides = {}, {}
    xs, y = batch(0)
    initial = {id(w): w.numpy().copy() for layer in model.layers for w in layer.weights}
    fp16 = precision == "mixed_fp16"
    scale0 = 2.0 ** 15
    with tf.GradientTape() as tape:
        pred = model(xs, training=True)
        value = loss_fn(y, pred)
        scaled = value * scale0 if fp16 else value
    # Under mixed_fp16 the gradients are taken of the scaled loss (small ones would flush to zero in
    # f16) and unscaled in f32, as the LossScaleOptimizer does; the fixture holds the unscaled ones.
    grads = [g / scale0 for g in tape.gradient(scaled, model.trainable_variables)] if fp16 else \
        tape.gradient(value, model.trainable_variables)
    for layer in model.layers:
        for w in layer.weights:
            w.assign(initial[id(w)])
    tensors["expect:output"] = np.array(pred.numpy(), dtype=np.float32)
    tensors["expect:loss"] = np.array(value.numpy(), dtype=np.float32).reshape(())
    for w, g in zip(model.trainable_variables, grads):
        tensors[f"expect:grad:{names[id(w)]}"] = sampled(f"expect:grad:{names[id(w)]}", g.numpy(), strides)
    opt = keras_optimizer(optimizer)
    if fp16:
        opt = keras.optimizers.LossScaleOptimizer(opt, initial_scale=scale0, dynamic_growth_steps=2000)
    losses = []
    for step in range(TRAJ_STEPS):
        xs, y = batch(step)
        with tf.GradientTape() as tape:
            value = loss_fn(y, model(xs, training=True))
            scaled = opt.scale_loss(value) if fp16 else value
        losses.append(float(value.numpy()))
        grads = tape.gradient(scaled, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    tensors["expect:losses"] = np.array(losses, dtype=np.float32)
    for layer in model.layers:
        for w in layer.weights:
            tensors[f"expect:after:{names[id(w)]}"] = sampled(f"expect:after:{names[id(w)]}", w.numpy(), strides)
    fields = ", ".join(f"{n}: f32{shape_text(s)}" for n, s in inputs)
    target = f"y: i64{shape_text(output[:-1]) if output[:-1] else ''}" if classes else f"y: f32{shape_text(output)}"
    loss = "cross_entropy" if classes else "mse"
    spec = (f'source s = tfrecord("unused.tfrecord") {{ {fields}, {target} }}\n'
            f"pipeline data = s | batch({TRAJ_BATCH}, drop_remainder = true)\n"
            f"model net({fields}) -> f32{shape_text(output)} {{\n  {spec_body}\n}}\n"
            f"train t = {{ data = data, model = net({', '.join(n for n, _ in inputs)}), loss = {loss}(y), "
            f"optimizer = {optimizer}, steps = {TRAJ_STEPS}"
            + (f", precision = {precision}" if precision != "fp32" else "") + " }\n")
    meta = {"spec": spec, "steps": str(TRAJ_STEPS), "rtol": repr(rtol), "atol": repr(atol), "description": description,
            "precision": precision,
            "strides": ";".join(f"{k}={v}" for k, v in sorted(strides.items())), "classes": str(classes)}
    save_file(tensors, os.path.join(STEPS_OUT, name + ".safetensors"), metadata=meta)
    print(f"{name}: {len(tensors)} tensors, params {model.count_params()}, losses {losses[0]:.5f} -> {losses[-1]:.5f}")


CHESS_BODY = ("x = board | conv2d(64, 3, padding = same) | relu | conv2d(64, 3, padding = same) | relu\n"
              "  x = concat([flatten(x), flags])\n  x | dense(256) | relu | dense(1) | tanh")


def chess_keras(i):
    x = L.Conv2D(64, 3, padding="same", activation="relu", name="conv2d")(i["board"])
    x = L.Conv2D(64, 3, padding="same", activation="relu", name="conv2d_1")(x)
    x = L.Concatenate()([L.Flatten()(x), i["flags"]])
    return L.Activation("tanh")(L.Dense(1, name="dense_1")(L.Dense(256, activation="relu", name="dense")(x)))


EVERY_LAYER_BODY = (
    "h = x | conv2d(4, 3, padding = same) | relu | batch_norm(momentum = 0.9)\n"
    "  p = h | max_pool2d(2) | add(h | avg_pool2d(2))\n"
    "  u = p | conv2d_transpose(4, 3, strides = 2, padding = same) | leaky_relu(alpha = 0.2)\n"
    "  v = u | max_pool2d(2) | upsample2d(2) | gelu | sigmoid\n"
    "  g = concat([v | global_avg_pool, v | global_max_pool, flatten(p | avg_pool2d(2))])\n"
    "  g | dense(8) | layer_norm | tanh | dense(3) | softmax")


def every_layer_keras(i):
    # batch_norm after the relu, not right after the convolution: there the bias would get a gradient of
    # exactly 0 in theory and rounding noise in practice, which adam scales up to steps of lr.
    h = L.BatchNormalization(momentum=0.9, name="batch_normalization")(L.ReLU()(L.Conv2D(4, 3, padding="same", name="conv2d")(i["x"])))
    p = L.Add()([L.MaxPooling2D(2)(h), L.AveragePooling2D(2)(h)])
    u = L.LeakyReLU(negative_slope=0.2)(L.Conv2DTranspose(4, 3, strides=2, padding="same", name="u")(p))
    v = L.Activation("sigmoid")(L.Activation(lambda t: keras.activations.gelu(t, approximate=False))(
        L.UpSampling2D(2)(L.MaxPooling2D(2)(u))))
    g = L.Concatenate()([L.GlobalAveragePooling2D()(v), L.GlobalMaxPooling2D()(v), L.Flatten()(L.AveragePooling2D(2)(p))])
    g = L.Activation("tanh")(L.LayerNormalization(epsilon=1e-3, name="layer_normalization")(L.Dense(8, name="dense")(g)))
    return L.Softmax()(L.Dense(3, name="dense_1")(g))


# adam's learning rate stays small enough that the chess net's tanh does not saturate in 20 steps, and
# its eps is 1e-6 rather than 1e-7: a gradient at the level of rounding noise (a saturated or nearly dead
# unit) would otherwise be scaled up to a step of lr, and TensorFlow (f32 sums) and pipec (f64 sums)
# round differently, so their trajectories would part for no reason of semantics.
OPTIMIZERS = {"sgd_momentum": "sgd(lr = 0.01, momentum = 0.9)", "adam": "adam(lr = 0.0001, eps = 1e-06)",
              "adamw": "adamw(lr = 0.0001, eps = 1e-06, weight_decay = 0.004)"}


def make_trajectories(mixed_only=False):
    os.makedirs(STEPS_OUT, exist_ok=True)
    for short, opt in ({} if mixed_only else OPTIMIZERS).items():
        # With adam one weight of the 1.1 million (conv2d_1/kernel[2, 0, 53, 40], a nearly dead input
        # channel) ends 4.2e-6 apart, adam scaling a gradient at rounding level up: atol 5e-6 there.
        make_trajectory(f"chess_{short}", f"the chess net of examples/chess, {opt}, 20 steps on 20 batches of {TRAJ_BATCH}",
                        [("board", (8, 8, 24)), ("flags", (10,))], CHESS_BODY, [1], chess_keras, opt,
                        atol=1e-6 if short == "sgd_momentum" else 5e-6)
        make_trajectory(f"every_layer_{short}", f"every layer kind, sparse cross_entropy after softmax, {opt}, 20 steps",
                        [("x", (8, 8, 3))], EVERY_LAYER_BODY, [3], every_layer_keras, opt, classes=3)
    # Mixed precision: Keras computes the layers in bf16 / f16 (its CPU kernels round their results to the
    # compute type), pipec rounds operands and results at the same points and computes in f32
    # (docs/design.md, "Mixed precision"), so the two agree to the compute type's precision, not f32's:
    # rtol and atol 1e-2 for bf16 (2.6 units of its 2^-8) and 4e-3 for f16 (8 units of its 2^-11; at
    # 2e-3 one of the 1.1 million, a bias gradient summed over 512 positions, is 2.6e-3 apart), relative
    # to each tensor's largest element: the bounds docs/design.md states.
    for precision, tol in {"mixed_bf16": 1e-2, "mixed_fp16": 4e-3}.items():
        opt = OPTIMIZERS["adam"]
        make_trajectory(f"chess_adam_{precision}", f"the chess net, {opt}, {precision}, 20 steps on 20 batches of {TRAJ_BATCH}",
                        [("board", (8, 8, 24)), ("flags", (10,))], CHESS_BODY, [1], chess_keras, opt,
                        rtol=tol, atol=tol, precision=precision)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--steps-only"]:
        make_trajectories()
    elif sys.argv[1:2] == ["--only"]:
        ONLY.update(sys.argv[2:])
        main()
    elif sys.argv[1:] == ["--mixed-only"]:
        make_trajectories(mixed_only=True)
    else:
        main()
        make_trajectories()

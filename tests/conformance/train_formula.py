"""The formula behind the trajectory fixtures' starting weights and batches (tests/unit/train_formula.h
computes the same): splitmix64 of fnv1a64(key) + the element's index, the top 53 bits as a uniform u in
[0, 1), in doubles, then rounded to f32."""
import numpy as np

MASK = (1 << 64) - 1


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def formula_uniform(key, n):
    """n uniforms in [0, 1): splitmix64 of fnv1a64(key) + index, the top 53 bits."""
    with np.errstate(over="ignore"):
        x = np.arange(n, dtype=np.uint64) + np.uint64(fnv1a64(key))
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def formula_values(name, shape):
    """A parameter or state tensor's starting values, by the variable's kind (the name's last part)."""
    n = int(np.prod(shape)) if len(shape) else 1
    u = formula_uniform(name, n)
    kind = name.rsplit("/", 1)[-1]
    if kind == "kernel":
        rf = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        limit = np.sqrt(6.0 / (rf * shape[-2] + rf * shape[-1]))
        v = (2.0 * u - 1.0) * limit
    elif kind == "gamma":
        v = 1.0 + (2.0 * u - 1.0) * 0.2
    elif kind == "moving_variance":
        v = 0.5 + u
    else:  # bias, beta, moving_mean
        v = (2.0 * u - 1.0) * 0.1
    return v.astype(np.float32).reshape(shape)


def formula_batch(field, step, shape):
    return (2.0 * formula_uniform(f"input:{field}:{step}", int(np.prod(shape))) - 1.0).astype(np.float32).reshape(shape)


def formula_target(step, shape, classes=0):
    u = formula_uniform(f"target:{step}", int(np.prod(shape)))
    if classes:
        return np.floor(u * classes).astype(np.int64).reshape(shape)
    return ((2.0 * u - 1.0) * 0.9).astype(np.float32).reshape(shape)


def sampled(name, array, strides):
    flat = np.asarray(array, dtype=np.float32).reshape(-1)
    k = -(-flat.size // 2048) if flat.size > 2048 else 1
    if k > 1:
        strides[name] = k
    return np.ascontiguousarray(flat[::k])



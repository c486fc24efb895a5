"""JAX: jax.dlpack.from_dlpack reads a batch; the values equal numpy's. Skipped without jax."""
import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402


def test_jax_reads_batches(chess_spec):
    with chess_spec.pipeline("train", threads=2) as ds:
        batch = next(ds)
        x = jax.dlpack.from_dlpack(batch["board"])
        assert x.shape == (64, 8, 8, 24) and x.dtype == jnp.float32
        assert np.array_equal(np.asarray(x), np.from_dlpack(batch["board"]))
        # A step on it.
        y = jax.jit(lambda b: jnp.sum(b * 2.0, axis=(1, 2, 3)))(x)
        assert np.allclose(np.asarray(y), 2.0 * np.from_dlpack(batch["board"]).sum(axis=(1, 2, 3)))

"""Errors name where they happened: SpecError the spec's file:line:col, DataError the stage, the file and
the byte offset; a state of another pipeline is refused."""
import shutil

import pytest

import pipec


def test_spec_error_names_file_line_and_column(write_spec):
    path = write_spec("""
        pipeline p = range(10)
          | batch(0)
    """)
    with pytest.raises(pipec.SpecError) as e:
        pipec.compile(path)
    err = e.value
    assert err.file == str(path) and err.line == 2 and err.column > 1
    d = err.diagnostics[0]
    assert d.severity == "error" and d.kind and d.message
    assert str(err).startswith(f"{path}:2:{err.column}: error[")
    assert "| batch(0)" in str(err)  # the source line is shown


def test_spec_error_in_an_import_names_that_file(write_spec):
    write_spec("fn twice(x: i64) -> i64 = x * undefined_name\n", name="helpers.pipe")
    path = write_spec("import helpers\npipeline p = range(3) | map(r => { v: twice(r.value) })\n")
    with pytest.raises(pipec.SpecError) as e:
        pipec.compile(path)
    assert e.value.file.endswith("helpers.pipe") and e.value.line == 1


def test_spec_warnings_are_issued(write_spec):
    path = write_spec("const UNUSED = 3\npipeline p = range(3)\n")
    with pytest.warns(pipec.SpecWarning, match="UNUSED"):
        spec = pipec.compile(path)
    assert spec.warnings and spec.warnings[0].severity == "warning"


def corrupt_copy(src, dst, at):
    data = bytearray(src.read_bytes())
    data[at] ^= 0xFF
    dst.write_bytes(bytes(data))


def test_corrupt_tfrecord_is_a_data_error_with_stage_file_and_offset(chess_dir, tmp_path, write_spec):
    (tmp_path / "data").mkdir()
    src = sorted((chess_dir / "data").glob("chess-*.tfrecord"))[0]
    bad = tmp_path / "data" / "bad.tfrecord"
    # A byte in the payload of a record well inside the file: its data CRC no longer matches.
    corrupt_copy(src, bad, at=src.stat().st_size // 2)
    path = write_spec("""
        source positions = tfrecord("data/*.tfrecord") {
          d: bytes[194]
          s: i64
        }
        pipeline p = positions | map(r => { s: r.s }) | batch(16)
    """)
    spec = pipec.compile(path)
    ds = spec.pipeline(threads=2)
    with pytest.raises(pipec.DataError) as e:
        for _ in ds:
            pass
    err = e.value
    assert err.stage == "tfrecord"
    assert err.spec_location.startswith(f"{path}:1:")
    assert err.file == str(bad)
    assert err.offset is not None and 0 < err.offset < bad.stat().st_size
    assert err.record is not None and err.record > 0
    message = str(err)
    assert message.startswith(f"{err.spec_location}: tfrecord: {bad}: record {err.record} at byte offset {err.offset}: ")
    assert "corrupt" in message or "CRC" in message
    # The pipeline stopped: iterating again ends at once.
    assert ds.closed
    with pytest.raises(StopIteration):
        next(ds)


def test_missing_files_are_a_data_error_naming_the_pattern(write_spec):
    path = write_spec("""
        source s = tfrecord("nowhere/*.tfrecord") { x: i64 }
        pipeline p = s
    """)
    with pytest.raises(pipec.DataError) as e:
        pipec.compile(path).pipeline()
    assert e.value.stage == "tfrecord" and "nowhere" in str(e.value)


def test_a_map_error_on_the_data_names_the_map(write_spec, tmp_path):
    (tmp_path / "list.csv").write_text("path\nno_such_image.jpg\n")
    path = write_spec("""
        import images
        source rows = csv("list.csv") { path: bytes }
        pipeline p = rows | map(r => { image: read_jpeg_rgb(r.path) })
    """)
    with pytest.raises(pipec.DataError) as e:
        next(pipec.compile(path).pipeline())
    assert e.value.stage == "map" and "no_such_image.jpg" in str(e.value)
    assert e.value.spec_location.startswith(f"{path}:3:")


def test_a_state_of_another_seed_is_refused(chess_spec):
    with chess_spec.pipeline(seed=1, threads=2) as ds:
        next(ds)
        state = ds.state()
    with pytest.raises(pipec.StateError):
        chess_spec.pipeline(seed=2, threads=2, state=state)
    with pytest.raises(pipec.StateError):
        chess_spec.pipeline(seed=1, threads=2, state=state[:-7] + b"garbage")

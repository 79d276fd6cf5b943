"""Batch pieces on small inputs: grouping (with a made-up sibling rule), output names, globs,
progress modes, what a rerun redoes and what it skips, post-steps, a crashing worker, the lock,
and the CLI's usage errors."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

import gamemesh
from gamemesh.batch import MANIFEST_NAME, BatchConfig, Manifest, run_batch
from gamemesh.batch.discover import Candidate, discover, matches
from gamemesh.batch.group import group
from gamemesh.batch.progress import Progress
from gamemesh.batch.run import _LOCK_NAME, output_names
from gamemesh.batch.work import version_variant
from gamemesh.cli import main
from gamemesh.registry import formats


def importable() -> list[gamemesh.FormatSpec]:
    return [s for s in formats() if s.make_sample is not None and s.can_import
            and s.name != "pba"]  # pba's smallest sample is 3 MB: too slow for unit tests


def write_samples(root: Path, count: int) -> list[Path]:
    """``count`` valid files, cycling through the formats that can make samples."""
    specs = importable()
    if not specs:
        pytest.skip("no registered format makes samples")
    data = {s.name: s.make_sample(1500) for s in specs}
    out = []
    for i in range(count):
        s = specs[i % len(specs)]
        p = root / f"d{i % 3}" / f"f{i:03d}{s.extensions[0]}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data[s.name])
        out.append(p)
    return out


def rows(dst: Path) -> dict[str, dict[str, object]]:
    with Manifest(dst / MANIFEST_NAME, create=False) as m:
        return m.row_map()


def cfg(src: Path, dst: Path, **kw: object) -> BatchConfig:
    kw.setdefault("jobs", 1)
    return BatchConfig(src, dst, quiet=True, **kw)  # type: ignore[arg-type]


# -- grouping ------------------------------------------------------------------------------

def cand(rel: str, root: Path = Path("/r")) -> Candidate:
    return Candidate(root / rel, rel, 10, 1, "fake")


def test_group_mutual_claims_pick_the_file_that_reads_most() -> None:
    # unit reads its texture and both animations; each animation reads the unit (skeleton).
    files = ["a/unit.x", "a/unit_tex.x", "a/unit_anim_run.x", "a/unit_anim_walk.x", "b/lone.x"]
    cs = [cand(f) for f in files]
    reads = {"a/unit.x": ["a/unit_tex.x", "a/unit_anim_run.x", "a/unit_anim_walk.x"],
             "a/unit_anim_run.x": ["a/unit.x"], "a/unit_anim_walk.x": ["a/unit.x"]}
    units = group(cs, lambda c: [Path("/r") / p for p in reads.get(c.rel, [])])
    assert [(u.primary.rel, [m.rel for m in u.members]) for u in units] == [
        ("a/unit.x", ["a/unit_anim_run.x", "a/unit_anim_walk.x", "a/unit_tex.x"]),
        ("b/lone.x", [])]


def test_group_every_file_once_and_shared_members_go_to_the_first_reader(tmp_path: Path) -> None:
    cs = [cand(f, tmp_path) for f in ("m1.x", "m2.x", "shared.x", "own2.x")]
    outside = tmp_path.parent / "outside_texture.x"
    outside.write_bytes(b"t")
    reads = {"m1.x": ["shared.x", str(outside), "absent.x"], "m2.x": ["shared.x", "own2.x"]}
    units = group(cs, lambda c: [tmp_path / p for p in reads.get(c.rel, [])])
    got = {u.primary.rel: [m.rel for m in u.members] for u in units}
    # m2 reads more, so it claims first; m1 keeps what is left and its out-of-tree texture.
    assert got == {"m2.x": ["own2.x", "shared.x"], "m1.x": []}
    m1 = next(u for u in units if u.primary.rel == "m1.x")
    assert m1.outside == [outside.resolve()]


def test_group_survives_a_failing_sibling_rule() -> None:
    def boom(c: Candidate) -> list[Path]:
        if c.rel == "bad.x":
            fmt, msg = "fake", "damaged header"
            raise gamemesh.CorruptDataError(fmt, msg)
        return []

    units = group([cand("bad.x"), cand("good.x")], boom)
    assert [(u.primary.rel, u.problem) for u in units] == [
        ("bad.x", "CorruptDataError: fake: damaged header"), ("good.x", None)]


def test_output_names_mirror_and_keep_apart_colliding_stems() -> None:
    units = group([cand("a/x.papa"), cand("a/x.pmf"), cand("a/y.pmf"), cand("b/x.papa")],
                  lambda c: [])
    assert output_names(units, ".glb") == {"a/x.papa": "a/x.papa.glb", "a/x.pmf": "a/x.pmf.glb",
                                           "a/y.pmf": "a/y.glb", "b/x.papa": "b/x.glb"}


def test_globs() -> None:
    assert matches("a/b/x.papa", ["*.papa"], [])
    assert not matches("a/b/x.papa", ["a/*.pmf"], [])
    assert matches("a/b/x.papa", ["a/*"], [])  # fnmatch's * crosses folders
    assert not matches("a/b/x.papa", [], ["a/b/*"])
    assert not matches("a/b/x_diffuse.papa", ["*.papa"], ["*_diffuse.papa"])


def test_version_variant_from_info() -> None:
    assert version_variant({"version": 3, "kind": "model", "layout": "as read"}) == (
        "3", "model/as read")
    assert version_variant({"vertices": 4}) == (None, None)
    v = version_variant({"kind": "x" * 100})[1]
    assert v is not None and len(v) == 40 and v.endswith("…")


# -- progress ------------------------------------------------------------------------------

def test_progress_bar_on_a_terminal() -> None:
    out = io.StringIO()
    p = Progress(10, 1000, stream=out, tty=True)
    p.advance(4, 400)
    p.tick(force=True)
    p.close()
    text = out.getvalue()
    assert "\r" in text and "[" in text and "#" in text
    assert "4/10 files (40%)" in text and "files/s" in text and "ETA" in text
    assert text.endswith("\n")


def test_progress_plain_lines_when_piped_and_nothing_when_quiet() -> None:
    out = io.StringIO()
    p = Progress(5, 0, stream=out, tty=False, interval=3600)
    for _ in range(5):
        p.advance(1, 0, errors=1)
    p.close()
    lines = out.getvalue().splitlines()
    # The interval has not passed: only the final line, no carriage returns.
    assert lines == [lines[0]] and "\r" not in out.getvalue()
    assert lines[0].startswith("gamemesh: batch: 5/5 files (100%)")
    assert "5 errors" in lines[0] and "ETA 0:00" in lines[0]
    quiet = io.StringIO()
    q = Progress(5, 0, stream=quiet, tty=True, quiet=True)
    q.advance(5, 0)
    q.close()
    assert quiet.getvalue() == ""


# -- reruns --------------------------------------------------------------------------------

def test_rerun_redoes_changed_content_missing_outputs_and_forced(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    files = write_samples(src, 6)
    first = run_batch(cfg(src, dst))
    assert (first.converted, first.ok) == (6, 6)
    r1 = rows(dst)

    # Same bytes, new mtime: the worker hashes and finds nothing to do.
    os.utime(files[0], ns=(1, 1))
    # New content: converted again.
    other = next(p for p in files if p.suffix != files[1].suffix)
    files[1].write_bytes(other.read_bytes())
    # A deleted output is made again.
    out2 = dst / str(r1[files[2].relative_to(src).as_posix()]["outputs"][0])  # type: ignore[index]
    out2.unlink()
    second = run_batch(cfg(src, dst))
    assert (second.converted, second.skipped) == (2, 4)
    r2 = rows(dst)
    rel0 = files[0].relative_to(src).as_posix()
    assert r2[rel0]["mtime_ns"] == 1 and r2[rel0]["run"] == r1[rel0]["run"]
    assert r2[files[1].relative_to(src).as_posix()]["hash"] != r1[
        files[1].relative_to(src).as_posix()]["hash"]
    assert out2.is_file()

    forced = run_batch(cfg(src, dst, force=True))
    assert (forced.converted, forced.skipped) == (6, 0)

    files[5].unlink()
    gone = run_batch(cfg(src, dst))
    assert gone.converted == 0
    assert rows(dst)[files[5].relative_to(src).as_posix()]["status"] == "missing"


def test_errors_are_kept_until_retried_and_filters_apply(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    files = write_samples(src, 4)
    bad = files[0].with_name("bad" + files[0].suffix)
    bad.write_bytes(files[0].read_bytes()[:20])
    (src / "skip").mkdir()
    (src / "skip" / files[1].name).write_bytes(files[1].read_bytes())
    res = run_batch(cfg(src, dst, exclude=["skip/*"]))
    assert (res.units, res.ok, res.errors, res.errors_total) == (5, 4, 1, 1)
    assert res.failed[0][0] == bad.relative_to(src).as_posix()
    again = run_batch(cfg(src, dst, exclude=["skip/*"]))
    assert (again.converted, again.errors_total) == (0, 1)
    retry = run_batch(cfg(src, dst, exclude=["skip/*"], retry_errors=True))
    assert (retry.converted, retry.errors) == (1, 1)
    fmt = files[1].suffix.lstrip(".")
    only = run_batch(cfg(src, tmp_path / "only", formats=[fmt], include=["skip/*"]))
    assert only.units == 1 and set(rows(tmp_path / "only")) == {f"skip/{files[1].name}"}


def test_units_from_a_sibling_rule_convert_once_and_follow_member_changes(
        tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    a, b, c = write_samples(src, 3)
    # A made-up rule: the first file "reads" the second (as a Papa model reads its texture).
    rule = {a.resolve(): [b]}

    def sib(cand: Candidate) -> list[Path]:
        return rule.get(cand.path.resolve(), [])

    res = run_batch(cfg(src, dst, siblings=sib))
    assert (res.units, res.inputs, res.grouped, res.converted) == (2, 3, 1, 2)
    r = rows(dst)
    ra, rb = a.relative_to(src).as_posix(), b.relative_to(src).as_posix()
    assert r[rb]["status"] == "grouped" and r[rb]["group_of"] == ra and r[rb]["outputs"] is None
    assert r[ra]["members"] == [rb]
    assert not (dst / rb).with_suffix(".glb").exists()
    # The member changes: its unit is converted again, nothing else.
    os.utime(b, ns=(5, 5))
    assert run_batch(cfg(src, dst, siblings=sib)).converted == 0  # same bytes: unchanged
    b.write_bytes(c.read_bytes())
    again = run_batch(cfg(src, dst, siblings=sib))
    assert (again.converted, again.skipped) == (1, 1)
    assert rows(dst)[rb]["hash"] != r[rb]["hash"]


# -- post-steps, crashes, the lock, stale temporary files ---------------------------------

def thumb(output: Path, source: Path) -> list[Path]:
    """A stand-in for --thumbnails: writes one file next to the output."""
    p = output.with_suffix(".thumb.txt")
    p.write_text(source.name)
    return [p]


def broken_step(output: Path, source: Path) -> list[Path]:
    msg = "renderer unavailable"
    raise RuntimeError(msg)


def crash_on_first(output: Path, source: Path) -> list[Path]:
    """Kills the worker process outright (as a segfault in native code would)."""
    if source.name.startswith("f000"):
        os._exit(3)
    return []


def test_post_steps_add_outputs_and_their_failure_is_a_note(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_samples(src, 2)
    res = run_batch(cfg(src, dst, post=[f"{__name__}:thumb", f"{__name__}:broken_step"]))
    assert res.ok == 2
    for rel, r in rows(dst).items():
        outs = r["outputs"]
        assert isinstance(outs, list) and len(outs) == 2 and outs[1].endswith(".thumb.txt")
        assert (dst / outs[1]).read_text() == Path(rel).name
        codes = [n["code"] for n in r["notes"]]  # type: ignore[union-attr]
        assert "batch.post_step_failed" in codes


def test_a_worker_that_dies_costs_only_its_own_file(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_samples(src, 6)
    res = run_batch(cfg(src, dst, jobs=2, post=[f"{__name__}:crash_on_first"]))
    r = rows(dst)
    crashed = {p for p, x in r.items() if x["status"] == "error"}
    assert crashed == {p for p in r if Path(p).name.startswith("f000")}
    assert len(crashed) == 1
    assert r[next(iter(crashed))]["error_type"] == "WorkerCrashed"
    assert (res.ok, res.errors) == (5, 1)


def test_one_batch_per_destination_and_stale_partials_are_swept(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_samples(src, 1)
    dst.mkdir()
    stale = dst / "d0" / ".gamemesh-abc.part"
    stale.parent.mkdir()
    stale.write_bytes(b"half a file")
    with (dst / _LOCK_NAME).open("a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        with pytest.raises(ValueError, match="another gamemesh batch"):
            run_batch(cfg(src, dst))
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    assert run_batch(cfg(src, dst)).ok == 1
    assert not stale.exists()


def test_dst_inside_src_is_not_an_input(tmp_path: Path) -> None:
    write_samples(tmp_path, 2)
    first = run_batch(cfg(tmp_path, tmp_path / "out"))
    again = run_batch(cfg(tmp_path, tmp_path / "out"))
    assert (first.units, again.units, again.converted) == (2, 2, 0)
    assert all(not c.rel.startswith("out/") for c in discover(tmp_path, skip=[tmp_path / "out"])
               .candidates)


# -- CLI -----------------------------------------------------------------------------------

def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The CLI in this process (a subprocess per call costs a second of imports)."""
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse's own usage errors
        code = int(e.code or 0)
    return code, capsys.readouterr().err


def test_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "batch")[0] == 2
    assert run_cli(capsys, "batch", str(tmp_path), "--report", str(tmp_path))[0] == 2
    assert run_cli(capsys, "batch", str(tmp_path), str(tmp_path / "o"), "--jobs", "0")[0] == 2
    code, err = run_cli(capsys, "batch", str(tmp_path), str(tmp_path / "o"), "--to", "nosuch")
    assert code == 2 and "unknown format" in err
    code, err = run_cli(capsys, "batch", "--report", str(tmp_path / "nothing"))
    assert code == 1 and "no batch manifest" in err
    code, err = run_cli(capsys, "scan", str(tmp_path / "nothing"))
    assert code == 2 and "not a folder" in err
    code, err = run_cli(capsys, "batch", str(tmp_path / "nothing"), str(tmp_path / "o"))
    assert code == 2 and "not a folder" in err
    (tmp_path / "file").write_bytes(b"")
    code, err = run_cli(capsys, "batch", str(tmp_path), str(tmp_path / "file"))
    assert code == 2 and "is not a folder" in err
    code, err = run_cli(capsys, "batch", str(tmp_path), str(tmp_path))
    assert code == 2 and "another folder than SRC" in err


def test_options_compare_as_stored(tmp_path: Path) -> None:
    """Tuples and paths in the options come back from the manifest as lists and strings; a
    rerun with the same options must still skip, and other options must convert again."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_samples(src, 2)
    opts = {"batch_test_option": (1, tmp_path)}
    post = (f"{__name__}:thumb",)
    assert run_batch(cfg(src, dst, options=opts, post=post)).converted == 2
    assert run_batch(cfg(src, dst, options=dict(opts), post=post)).converted == 0
    assert run_batch(cfg(src, dst, options={"batch_test_option": 2}, post=post)).converted == 2
    stored = next(iter(rows(dst).values()))["options"]
    assert stored == {"to": ".glb", "format_options": {"batch_test_option": 2},
                      "post": [f"{__name__}:thumb"], "gamemesh": gamemesh.__version__}

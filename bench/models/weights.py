"""Seeded float32 weights and inputs shared by the tinygrad and PyTorch versions of each model, so
every backend computes the same function and outputs can be compared across them."""
from __future__ import annotations

import numpy as np

LLAMA = dict(dim=512, n_layers=8, n_heads=8, hidden=1536, vocab=4096, max_context=128, norm_eps=1e-5,
             decode_tokens=32, first_token=1)
RESNET = dict(batch=1, size=224, classes=1000, images=4)
TRAIN = dict(batch=64, size=28, classes=10, lr=1e-3, steps=4, batches=4)


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).astype(np.float32)


def llama(cfg: dict = LLAMA, seed: int = 0) -> dict[str, np.ndarray]:
    """nn.Linear layout (out, in), as checkpoints store them."""
    rng = np.random.default_rng(seed)
    dim, hidden, vocab = cfg["dim"], cfg["hidden"], cfg["vocab"]
    w: dict[str, np.ndarray] = {"tok_embeddings": _normal(rng, (vocab, dim), 1.0),
                                "norm": np.ones(dim, np.float32),
                                "output": _normal(rng, (vocab, dim), dim ** -0.5)}
    for layer in range(cfg["n_layers"]):
        p = f"layers.{layer}."
        w[p + "attention_norm"] = (1 + 0.1 * rng.standard_normal(dim)).astype(np.float32)
        w[p + "ffn_norm"] = (1 + 0.1 * rng.standard_normal(dim)).astype(np.float32)
        for name in ("wq", "wk", "wv", "wo"):
            w[p + name] = _normal(rng, (dim, dim), dim ** -0.5)
        w[p + "w1"] = _normal(rng, (hidden, dim), dim ** -0.5)
        w[p + "w3"] = _normal(rng, (hidden, dim), dim ** -0.5)
        w[p + "w2"] = _normal(rng, (dim, hidden), hidden ** -0.5)
    return w


def rope_tables(cfg: dict = LLAMA, theta: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of the rotary embedding, (max_context, head_dim // 2)."""
    head_dim = cfg["dim"] // cfg["n_heads"]
    freqs = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(cfg["max_context"], dtype=np.float64), freqs)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def _conv_weight(rng: np.random.Generator, cout: int, cin_per_group: int, k: int) -> np.ndarray:
    """He-initialized (cout, cin_per_group, k, k)."""
    return _normal(rng, (cout, cin_per_group, k, k), (2.0 / (cin_per_group * k * k)) ** 0.5)


def _batchnorm_weights(rng: np.random.Generator, name: str, c: int) -> dict[str, np.ndarray]:
    """An eval-mode BatchNorm's weight, bias, running mean and variance, drawn in that order."""
    return {name + ".weight": (1 + 0.1 * rng.standard_normal(c)).astype(np.float32),
            name + ".bias": (0.1 * rng.standard_normal(c)).astype(np.float32),
            name + ".mean": (0.1 * rng.standard_normal(c)).astype(np.float32),
            name + ".var": (1 + 0.1 * rng.random(c)).astype(np.float32)}


def _images(cfg: dict, seed: int) -> list[np.ndarray]:
    """cfg["images"] batches of cfg["batch"] RGB images, cfg["size"] square."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((cfg["batch"], 3, cfg["size"], cfg["size"]), dtype=np.float32)
            for _ in range(cfg["images"])]


RESNET18_STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))  # (channels, stride of the first block)


def resnet18(cfg: dict = RESNET, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    w: dict[str, np.ndarray] = {}

    def conv(name: str, cout: int, cin_per_group: int, k: int) -> None:
        w[name] = _conv_weight(rng, cout, cin_per_group, k)

    def bn(name: str, c: int) -> None:
        w.update(_batchnorm_weights(rng, name, c))

    conv("conv1", 64, 3, 7)
    bn("bn1", 64)
    cin = 64
    for stage, (c, stride) in enumerate(RESNET18_STAGES):
        for block in range(2):
            p = f"layer{stage + 1}.{block}."
            s = stride if block == 0 else 1
            conv(p + "conv1", c, cin, 3)
            bn(p + "bn1", c)
            conv(p + "conv2", c, c, 3)
            bn(p + "bn2", c)
            if s != 1 or cin != c:
                conv(p + "downsample", c, cin, 1)
                bn(p + "downsample_bn", c)
            cin = c
    w["fc.weight"] = _normal(rng, (cfg["classes"], 512), 512 ** -0.5)
    w["fc.bias"] = np.zeros(cfg["classes"], np.float32)
    return w


def resnet_images(cfg: dict = RESNET, seed: int = 2) -> list[np.ndarray]:
    return _images(cfg, seed)


def cnn(cfg: dict = TRAIN, seed: int = 3) -> dict[str, np.ndarray]:
    """Two 3x3 convolutions (each ReLU and 2x2 max pool) and two linear layers."""
    rng = np.random.default_rng(seed)
    flat = 64 * 5 * 5
    return {"c1.weight": _normal(rng, (32, 1, 3, 3), (2 / 9) ** 0.5), "c1.bias": np.zeros(32, np.float32),
            "c2.weight": _normal(rng, (64, 32, 3, 3), (2 / 288) ** 0.5), "c2.bias": np.zeros(64, np.float32),
            "l1.weight": _normal(rng, (128, flat), (2 / flat) ** 0.5), "l1.bias": np.zeros(128, np.float32),
            "l2.weight": _normal(rng, (cfg["classes"], 128), 128 ** -0.5), "l2.bias": np.zeros(cfg["classes"], np.float32)}


CNN_ORDER = ("c1.weight", "c1.bias", "c2.weight", "c2.bias", "l1.weight", "l1.bias", "l2.weight", "l2.bias")


def cnn_batches(cfg: dict = TRAIN, seed: int = 4) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((cfg["batch"], 1, cfg["size"], cfg["size"]), dtype=np.float32),
             rng.integers(0, cfg["classes"], cfg["batch"]).astype(np.int32)) for _ in range(cfg["batches"])]


BERT = dict(batch=2, seq=128, dim=256, n_layers=2, n_heads=4, hidden=1024, vocab=2048, norm_eps=1e-12, batches=2)


def bert(cfg: dict = BERT, seed: int = 5) -> dict[str, np.ndarray]:
    """A BERT-style encoder's weights: nn.Linear layout (out, in), LayerNorm weight and bias."""
    rng = np.random.default_rng(seed)
    dim, hidden = cfg["dim"], cfg["hidden"]
    w: dict[str, np.ndarray] = {"tok_embeddings": _normal(rng, (cfg["vocab"], dim), 0.5),
                                "pos_embeddings": _normal(rng, (cfg["seq"], dim), 0.5)}

    def norm(name: str) -> None:
        w[name + ".weight"] = (1 + 0.1 * rng.standard_normal(dim)).astype(np.float32)
        w[name + ".bias"] = (0.1 * rng.standard_normal(dim)).astype(np.float32)

    norm("embeddings_norm")
    for layer in range(cfg["n_layers"]):
        p = f"layers.{layer}."
        for name in ("wq", "wk", "wv", "wo"):
            w[p + name] = _normal(rng, (dim, dim), dim ** -0.5)
            w[p + name + ".bias"] = (0.02 * rng.standard_normal(dim)).astype(np.float32)
        w[p + "w1"], w[p + "w1.bias"] = _normal(rng, (hidden, dim), dim ** -0.5), np.zeros(hidden, np.float32)
        w[p + "w2"], w[p + "w2.bias"] = _normal(rng, (dim, hidden), hidden ** -0.5), np.zeros(dim, np.float32)
        norm(p + "attention_norm")
        norm(p + "ffn_norm")
    return w


def bert_tokens(cfg: dict = BERT, seed: int = 6) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, cfg["vocab"], (cfg["batch"], cfg["seq"])).astype(np.int32) for _ in range(cfg["batches"])]


MOBILENET = dict(batch=1, size=160, classes=1000, images=4)
# MobileNetV2's inverted residual blocks: (expansion, output channels, repeats, stride of the first)
MOBILENET_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                    (6, 320, 1, 1))


def mobilenet_layers(cfg: dict = MOBILENET) -> list[tuple[str, int, int, int, int]]:
    """(block name, input channels, expanded channels, output channels, stride) of every block."""
    layers, cin = [], 32
    for group, (t, c, n, s) in enumerate(MOBILENET_BLOCKS):
        for i in range(n):
            layers.append((f"block{group}.{i}.", cin, cin * t, c, s if i == 0 else 1))
            cin = c
    return layers


def mobilenet(cfg: dict = MOBILENET, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    w: dict[str, np.ndarray] = {}

    def conv(name: str, cout: int, cin_per_group: int, k: int) -> None:
        w[name] = _conv_weight(rng, cout, cin_per_group, k)

    def bn(name: str, c: int) -> None:
        w.update(_batchnorm_weights(rng, name, c))

    conv("stem", 32, 3, 3)
    bn("stem_bn", 32)
    for p, cin, mid, cout, _ in mobilenet_layers(cfg):
        if mid != cin:
            conv(p + "expand", mid, cin, 1)
            bn(p + "expand_bn", mid)
        conv(p + "depthwise", mid, 1, 3)
        bn(p + "depthwise_bn", mid)
        conv(p + "project", cout, mid, 1)
        bn(p + "project_bn", cout)
    conv("head", 1280, 320, 1)
    bn("head_bn", 1280)
    w["fc.weight"] = _normal(rng, (cfg["classes"], 1280), 1280 ** -0.5)
    w["fc.bias"] = np.zeros(cfg["classes"], np.float32)
    return w


def mobilenet_images(cfg: dict = MOBILENET, seed: int = 8) -> list[np.ndarray]:
    return _images(cfg, seed)

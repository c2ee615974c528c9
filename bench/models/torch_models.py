"""The same workloads in PyTorch eager, from the same weights (bench/models/weights.py), the
baseline the issue measures against."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from . import weights as W


def _t(a: np.ndarray, requires_grad: bool = False) -> torch.Tensor:
    return torch.from_numpy(a.copy()).requires_grad_(requires_grad)


class Llama:
    def __init__(self, cfg: dict = W.LLAMA):
        self.cfg = cfg
        self.w = {k: _t(v) for k, v in W.llama(cfg).items()}
        cos, sin = W.rope_tables(cfg)
        self.cos, self.sin = _t(cos), _t(sin)
        hd = cfg["dim"] // cfg["n_heads"]
        self.caches = [torch.zeros(2, 1, cfg["max_context"], cfg["n_heads"], hd) for _ in range(cfg["n_layers"])]

    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + self.cfg["norm_eps"]) * weight

    def _rope(self, x: torch.Tensor, pos: int) -> torch.Tensor:
        b, s, h, hd = x.shape
        cos, sin = self.cos[pos].reshape(1, 1, 1, hd // 2), self.sin[pos].reshape(1, 1, 1, hd // 2)
        pairs = x.reshape(b, s, h, hd // 2, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).reshape(b, s, h, hd)

    def _step(self, tok: int, pos: int) -> tuple[int, torch.Tensor]:
        cfg, w = self.cfg, self.w
        h, hd = cfg["n_heads"], cfg["dim"] // cfg["n_heads"]
        x = F.embedding(torch.tensor([[tok]]), w["tok_embeddings"])
        for layer in range(cfg["n_layers"]):
            p = f"layers.{layer}."
            a = self._rms(x, w[p + "attention_norm"])
            q = self._rope(F.linear(a, w[p + "wq"]).reshape(1, 1, h, hd), pos)
            k = self._rope(F.linear(a, w[p + "wk"]).reshape(1, 1, h, hd), pos)
            v = F.linear(a, w[p + "wv"]).reshape(1, 1, h, hd)
            cache = self.caches[layer]
            cache[0, :, pos:pos + 1] = k
            cache[1, :, pos:pos + 1] = v
            keys, values = cache[0, :, :pos + 1], cache[1, :, :pos + 1]
            out = F.scaled_dot_product_attention(q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2))
            x = x + F.linear(out.transpose(1, 2).reshape(1, 1, cfg["dim"]), w[p + "wo"])
            f = self._rms(x, w[p + "ffn_norm"])
            x = x + F.linear(F.silu(F.linear(f, w[p + "w1"])) * F.linear(f, w[p + "w3"]), w[p + "w2"])
        logits = F.linear(self._rms(x, w["norm"]), w["output"])[:, -1, :]
        return int(logits.argmax(-1).item()), logits

    @torch.no_grad()
    def run_sample(self) -> dict:
        tok, tokens, logits = self.cfg["first_token"], [], None
        for pos in range(self.cfg["decode_tokens"]):
            tok, logits = self._step(tok, pos)
            tokens.append(tok)
        return {"tokens": tokens, "logits": logits.reshape(-1)[:64].tolist()}

    def units(self) -> int:
        return self.cfg["decode_tokens"]


def _batchnorm(x: torch.Tensor, w: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    return F.batch_norm(x, w[name + ".mean"], w[name + ".var"], w[name + ".weight"], w[name + ".bias"], False, 0.0, 1e-5)


class _ImageClassifier:
    def __init__(self, cfg: dict, weights: dict[str, np.ndarray], images: list[np.ndarray]):
        self.cfg = cfg
        self.w = {k: _t(v) for k, v in weights.items()}
        self.images = [_t(x) for x in images]

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @torch.no_grad()
    def run_sample(self) -> dict:
        outs = [self._forward(x).numpy() for x in self.images]
        return {"logits": np.concatenate([o.reshape(-1)[:16] for o in outs]).tolist()}

    def units(self) -> int:
        return len(self.images)


class ResNet18(_ImageClassifier):
    def __init__(self, cfg: dict = W.RESNET):
        super().__init__(cfg, W.resnet18(cfg), W.resnet_images(cfg))

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.w
        x = F.relu(_batchnorm(F.conv2d(x, w["conv1"], stride=2, padding=3), w, "bn1"))
        x = F.max_pool2d(x, 3, 2, 1)
        cin = 64
        for stage, (c, stride) in enumerate(W.RESNET18_STAGES):
            for block in range(2):
                p, s = f"layer{stage + 1}.{block}.", stride if block == 0 else 1
                out = F.relu(_batchnorm(F.conv2d(x, w[p + "conv1"], stride=s, padding=1), w, p + "bn1"))
                out = _batchnorm(F.conv2d(out, w[p + "conv2"], padding=1), w, p + "bn2")
                if s != 1 or cin != c:
                    x = _batchnorm(F.conv2d(x, w[p + "downsample"], stride=s), w, p + "downsample_bn")
                x, cin = F.relu(out + x), c
        return F.linear(x.mean((2, 3)), w["fc.weight"], w["fc.bias"])


class CnnTraining:
    def __init__(self, cfg: dict = W.TRAIN):
        self.cfg = cfg
        init = W.cnn(cfg)
        self.params = [_t(init[k], requires_grad=True) for k in W.CNN_ORDER]
        self.batches = [(_t(x), torch.from_numpy(y.astype(np.int64))) for x, y in W.cnn_batches(cfg)]
        self.opt = torch.optim.Adam(self.params, lr=cfg["lr"])
        self.next = 0

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        c1w, c1b, c2w, c2b, l1w, l1b, l2w, l2b = self.params
        x = F.max_pool2d(F.relu(F.conv2d(x, c1w, c1b)), 2)
        x = F.max_pool2d(F.relu(F.conv2d(x, c2w, c2b)), 2)
        x = F.relu(F.linear(x.flatten(1), l1w, l1b))
        return F.linear(x, l2w, l2b)

    def run_sample(self) -> dict:
        losses = []
        for _ in range(self.cfg["steps"]):
            x, y = self.batches[self.next % len(self.batches)]
            self.next += 1
            self.opt.zero_grad()
            loss = F.cross_entropy(self._forward(x), y)
            loss.backward()
            self.opt.step()
            losses.append(float(loss.item()))
        return {"losses": losses}

    def units(self) -> int:
        return self.cfg["steps"]


class Bert:
    def __init__(self, cfg: dict = W.BERT):
        self.cfg = cfg
        self.w = {k: _t(v) for k, v in W.bert(cfg).items()}
        self.tokens = [torch.from_numpy(t.astype(np.int64)) for t in W.bert_tokens(cfg)]

    def _norm(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, (self.cfg["dim"],), self.w[name + ".weight"], self.w[name + ".bias"], self.cfg["norm_eps"])

    def _linear(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.linear(x, self.w[name], self.w[name + ".bias"])

    def _forward(self, tokens: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        b, s = tokens.shape
        h, hd = cfg["n_heads"], cfg["dim"] // cfg["n_heads"]
        x = self._norm(F.embedding(tokens, self.w["tok_embeddings"]) + self.w["pos_embeddings"], "embeddings_norm")
        for layer in range(cfg["n_layers"]):
            p = f"layers.{layer}."
            q, k, v = (self._linear(x, p + n).reshape(b, s, h, hd).transpose(1, 2) for n in ("wq", "wk", "wv"))
            att = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, cfg["dim"])
            x = self._norm(x + self._linear(att, p + "wo"), p + "attention_norm")
            x = self._norm(x + self._linear(F.gelu(self._linear(x, p + "w1"), approximate="tanh"), p + "w2"),
                           p + "ffn_norm")
        return x

    @torch.no_grad()
    def run_sample(self) -> dict:
        outs = [self._forward(t).numpy() for t in self.tokens]
        return {"logits": np.concatenate([o.reshape(-1)[:64] for o in outs]).tolist()}

    def units(self) -> int:
        return len(self.tokens) * self.cfg["batch"]


class MobileNetV2(_ImageClassifier):
    def __init__(self, cfg: dict = W.MOBILENET):
        super().__init__(cfg, W.mobilenet(cfg), W.mobilenet_images(cfg))

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.w
        x = F.relu6(_batchnorm(F.conv2d(x, w["stem"], stride=2, padding=1), w, "stem_bn"))
        for p, cin, mid, cout, stride in W.mobilenet_layers(self.cfg):
            y = x
            if mid != cin:
                y = F.relu6(_batchnorm(F.conv2d(y, w[p + "expand"]), w, p + "expand_bn"))
            y = F.relu6(_batchnorm(F.conv2d(y, w[p + "depthwise"], groups=mid, stride=stride, padding=1), w,
                                   p + "depthwise_bn"))
            y = _batchnorm(F.conv2d(y, w[p + "project"]), w, p + "project_bn")
            x = x + y if stride == 1 and cin == cout else y
        x = F.relu6(_batchnorm(F.conv2d(x, w["head"]), w, "head_bn"))
        return F.linear(x.mean((2, 3)), w["fc.weight"], w["fc.bias"])


MODELS = {"llama": Llama, "resnet": ResNet18, "train": CnnTraining, "bert": Bert, "mobilenet": MobileNetV2}

"""The workloads in tinygrad (0.12 and 0.14), written as tinygrad's own examples write them
(nn.Embedding, a KV cache updated with assign and read with a symbolic length, eval-mode BatchNorm,
LayerNorm and GELU, grouped convolutions, nn.optim.Adam), each behind a TinyJit. `device` is "CPU"
(tinygrad's own CPU device) or "UOPD"."""
from __future__ import annotations

import numpy as np
from tinygrad import Tensor, TinyJit, Variable, dtypes, nn

from . import weights as W


class Llama:
    """A LLaMA-style decoder (RMSNorm, rotary embeddings, KV cache, SwiGLU), greedy decoding one token
    per JIT call with the position as a symbolic variable, as tinygrad's examples/llama.py does."""

    def __init__(self, device: str, cfg: dict = W.LLAMA):
        self.cfg, self.device = cfg, device
        self.w = {k: Tensor(v, device=device).realize() for k, v in W.llama(cfg).items()}
        self.embedding = nn.Embedding(cfg["vocab"], cfg["dim"])
        self.embedding.weight = self.w["tok_embeddings"]
        cos, sin = W.rope_tables(cfg)
        self.cos, self.sin = Tensor(cos, device=device).realize(), Tensor(sin, device=device).realize()
        hd = cfg["dim"] // cfg["n_heads"]
        self.caches = [Tensor.zeros(2, 1, cfg["max_context"], cfg["n_heads"], hd, device=device).contiguous().realize()
                       for _ in range(cfg["n_layers"])]
        self.step = TinyJit(self._step)

    def _rms(self, x: Tensor, weight: Tensor) -> Tensor:
        return (x * (x.square().mean(-1, keepdim=True) + self.cfg["norm_eps"]).rsqrt()) * weight

    def _rope(self, x: Tensor, pos: Variable) -> Tensor:
        b, s, h, hd = x.shape
        cos = self.cos.shrink(((pos, pos + 1), None)).reshape(1, 1, 1, hd // 2)
        sin = self.sin.shrink(((pos, pos + 1), None)).reshape(1, 1, 1, hd // 2)
        pairs = x.reshape(b, s, h, hd // 2, 2)
        x0, x1 = pairs[..., 0], pairs[..., 1]
        return Tensor.stack(x0 * cos - x1 * sin, x0 * sin + x1 * cos, dim=-1).reshape(b, s, h, hd)

    def _attention(self, layer: int, x: Tensor, pos: Variable) -> Tensor:
        p, cfg = f"layers.{layer}.", self.cfg
        h, hd = cfg["n_heads"], cfg["dim"] // cfg["n_heads"]
        q = self._rope(x.linear(self.w[p + "wq"].T).reshape(1, 1, h, hd), pos)
        k = self._rope(x.linear(self.w[p + "wk"].T).reshape(1, 1, h, hd), pos)
        v = x.linear(self.w[p + "wv"].T).reshape(1, 1, h, hd)
        cache = self.caches[layer]
        cache[:, :, pos:pos + 1, :, :].assign(Tensor.stack(k, v)).realize()
        keys, values = cache[0, :, 0:pos + 1, :, :], cache[1, :, 0:pos + 1, :, :]
        out = q.transpose(1, 2).scaled_dot_product_attention(keys.transpose(1, 2), values.transpose(1, 2))
        return out.transpose(1, 2).reshape(1, 1, cfg["dim"]).linear(self.w[p + "wo"].T)

    def _ffn(self, layer: int, x: Tensor) -> Tensor:
        p = f"layers.{layer}."
        return (x.linear(self.w[p + "w1"].T).silu() * x.linear(self.w[p + "w3"].T)).linear(self.w[p + "w2"].T)

    def _step(self, tok: Tensor, pos: Variable) -> tuple[Tensor, Tensor]:
        x = self.embedding(tok)
        for layer in range(self.cfg["n_layers"]):
            p = f"layers.{layer}."
            x = x + self._attention(layer, self._rms(x, self.w[p + "attention_norm"]), pos)
            # contiguous, as tinygrad's TransformerBlock: each layer's output is a buffer, so the
            # next layer's KV-cache realize does not recompute the layers before it
            x = (x + self._ffn(layer, self._rms(x, self.w[p + "ffn_norm"]))).contiguous()
        logits = self._rms(x, self.w["norm"]).linear(self.w["output"].T)[:, -1, :].contiguous()
        return logits.argmax(-1).cast(dtypes.int32).realize(), logits.realize()

    def decode(self, n: int) -> tuple[list[int], np.ndarray]:
        """n greedy tokens from position 0; the tokens and the last step's logits."""
        tok, tokens, logits = self.cfg["first_token"], [], None
        for pos in range(n):
            t, logits = self.step(Tensor([[tok]], dtype=dtypes.int32, device=self.device),
                                  Variable("pos", 0, self.cfg["max_context"] - 1).bind(pos))
            tok = int(t.item())
            tokens.append(tok)
        return tokens, logits.numpy()

    def run_sample(self) -> dict:
        tokens, logits = self.decode(self.cfg["decode_tokens"])
        return {"tokens": tokens, "logits": logits.reshape(-1)[:64].tolist()}

    def jit(self) -> TinyJit:
        return self.step

    def jit_args(self) -> tuple:
        return (Tensor([[self.cfg["first_token"]]], dtype=dtypes.int32, device=self.device),
                Variable("pos", 0, self.cfg["max_context"] - 1).bind(self.cfg["decode_tokens"] // 2))

    def units(self) -> int:
        return self.cfg["decode_tokens"]


def _batchnorm(x: Tensor, w: dict[str, Tensor], name: str) -> Tensor:
    # tinygrad's nn.BatchNorm in eval mode
    return x.batchnorm(w[name + ".weight"], w[name + ".bias"], w[name + ".mean"], w[name + ".var"].add(1e-5).rsqrt())


class _ImageClassifier:
    """Inference on a batch of images per JIT call: the subclass's weights and _forward."""

    def __init__(self, device: str, cfg: dict, weights: dict[str, np.ndarray], images: list[np.ndarray]):
        self.cfg, self.device = cfg, device
        self.w = {k: Tensor(v, device=device).realize() for k, v in weights.items()}
        self.images = [Tensor(x, device=device).realize() for x in images]
        self.forward = TinyJit(lambda x: self._forward(x).realize())

    def _forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def run_sample(self) -> dict:
        outs = [self.forward(x).numpy() for x in self.images]
        return {"logits": np.concatenate([o.reshape(-1)[:16] for o in outs]).tolist()}

    def jit(self) -> TinyJit:
        return self.forward

    def jit_args(self) -> tuple:
        return (self.images[0],)

    def units(self) -> int:
        return len(self.images)


class ResNet18(_ImageClassifier):
    """ResNet-18 inference (eval-mode BatchNorm), one image per JIT call."""

    def __init__(self, device: str, cfg: dict = W.RESNET):
        super().__init__(device, cfg, W.resnet18(cfg), W.resnet_images(cfg))

    def _forward(self, x: Tensor) -> Tensor:
        w = self.w
        x = _batchnorm(x.conv2d(w["conv1"], stride=2, padding=3), w, "bn1").relu()
        x = x.max_pool2d(kernel_size=(3, 3), stride=2, padding=1)
        cin = 64
        for stage, (c, stride) in enumerate(W.RESNET18_STAGES):
            for block in range(2):
                p, s = f"layer{stage + 1}.{block}.", stride if block == 0 else 1
                out = _batchnorm(x.conv2d(w[p + "conv1"], stride=s, padding=1), w, p + "bn1").relu()
                out = _batchnorm(out.conv2d(w[p + "conv2"], padding=1), w, p + "bn2")
                if s != 1 or cin != c:
                    x = _batchnorm(x.conv2d(w[p + "downsample"], stride=s), w, p + "downsample_bn")
                x, cin = (out + x).relu(), c
        return x.mean((2, 3)).linear(w["fc.weight"].T, w["fc.bias"])


def _training():
    if hasattr(Tensor, "train"):
        return Tensor.train()
    from tinygrad.helpers import Context  # tinygrad 0.14: the training flag is a context variable
    return Context(TRAINING=1)


def _parameter(value: np.ndarray, device: str) -> Tensor:
    try:
        return Tensor(value, device=device, requires_grad=True).realize()
    except TypeError:  # tinygrad 0.14: backward fills .grad of every float tensor it reaches
        return Tensor(value, device=device).realize()


class CnnTraining:
    """Training steps of a small CNN (batch 64, Adam), one step per JIT call."""

    def __init__(self, device: str, cfg: dict = W.TRAIN):
        self.cfg, self.device = cfg, device
        init = W.cnn(cfg)
        self.params = [_parameter(init[k], device) for k in W.CNN_ORDER]
        self.batches = [(Tensor(x, device=device).realize(), Tensor(y, device=device).realize())
                        for x, y in W.cnn_batches(cfg)]
        self.opt = nn.optim.Adam(self.params, lr=cfg["lr"])
        self.train_step = TinyJit(self._step)
        self.next = 0

    def _forward(self, x: Tensor) -> Tensor:
        c1w, c1b, c2w, c2b, l1w, l1b, l2w, l2b = self.params
        x = x.conv2d(c1w, c1b).relu().max_pool2d((2, 2))
        x = x.conv2d(c2w, c2b).relu().max_pool2d((2, 2))
        x = x.flatten(1).linear(l1w.T, l1b).relu()
        return x.linear(l2w.T, l2b)

    def _step(self, x: Tensor, y: Tensor) -> Tensor:
        with _training():
            self.opt.zero_grad()
            loss = self._forward(x).sparse_categorical_crossentropy(y).backward()
            return loss.realize(*self.opt.schedule_step())  # as tinygrad's beautiful_mnist

    def run_sample(self) -> dict:
        losses = []
        for _ in range(self.cfg["steps"]):
            x, y = self.batches[self.next % len(self.batches)]
            self.next += 1
            losses.append(float(self.train_step(x, y).item()))
        return {"losses": losses}

    def jit(self) -> TinyJit:
        return self.train_step

    def jit_args(self) -> tuple:
        return self.batches[0]

    def units(self) -> int:
        return self.cfg["steps"]


class Bert:
    """A BERT-style encoder (token and position embeddings, post-LayerNorm blocks of bidirectional
    attention and a GELU feed-forward), a batch of sequences per JIT call: prefill-shaped attention
    (sequence x sequence scores) and row-wise norms, which the decoder does not have."""

    def __init__(self, device: str, cfg: dict = W.BERT):
        self.cfg, self.device = cfg, device
        self.w = {k: Tensor(v, device=device).realize() for k, v in W.bert(cfg).items()}
        self.embedding = nn.Embedding(cfg["vocab"], cfg["dim"])
        self.embedding.weight = self.w["tok_embeddings"]
        self.tokens = [Tensor(t, device=device).realize() for t in W.bert_tokens(cfg)]
        self.forward = TinyJit(lambda t: self._forward(t).realize())

    def _norm(self, x: Tensor, name: str) -> Tensor:
        return x.layernorm(eps=self.cfg["norm_eps"]) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _linear(self, x: Tensor, name: str) -> Tensor:
        return x.linear(self.w[name].T, self.w[name + ".bias"])

    def _forward(self, tokens: Tensor) -> Tensor:
        cfg = self.cfg
        b, s = tokens.shape
        h, hd = cfg["n_heads"], cfg["dim"] // cfg["n_heads"]
        x = self._norm(self.embedding(tokens) + self.w["pos_embeddings"], "embeddings_norm")
        for layer in range(cfg["n_layers"]):
            p = f"layers.{layer}."
            q, k, v = (self._linear(x, p + n).reshape(b, s, h, hd).transpose(1, 2) for n in ("wq", "wk", "wv"))
            att = q.scaled_dot_product_attention(k, v).transpose(1, 2).reshape(b, s, cfg["dim"])
            x = self._norm(x + self._linear(att, p + "wo"), p + "attention_norm")
            x = self._norm(x + self._linear(self._linear(x, p + "w1").gelu(), p + "w2"), p + "ffn_norm")
        return x

    def run_sample(self) -> dict:
        outs = [self.forward(t).numpy() for t in self.tokens]
        return {"logits": np.concatenate([o.reshape(-1)[:64] for o in outs]).tolist()}

    def jit(self) -> TinyJit:
        return self.forward

    def jit_args(self) -> tuple:
        return (self.tokens[0],)

    def units(self) -> int:
        return len(self.tokens) * self.cfg["batch"]


class MobileNetV2(_ImageClassifier):
    """MobileNetV2 inference (inverted residual blocks: 1x1 expansion, 3x3 depthwise convolution,
    1x1 projection; eval-mode BatchNorm, ReLU6), one image per JIT call: grouped convolutions,
    which ResNet does not have."""

    def __init__(self, device: str, cfg: dict = W.MOBILENET):
        super().__init__(device, cfg, W.mobilenet(cfg), W.mobilenet_images(cfg))

    def _forward(self, x: Tensor) -> Tensor:
        w = self.w
        x = _batchnorm(x.conv2d(w["stem"], stride=2, padding=1), w, "stem_bn").relu6()
        for p, cin, mid, cout, stride in W.mobilenet_layers(self.cfg):
            y = x
            if mid != cin:
                y = _batchnorm(y.conv2d(w[p + "expand"]), w, p + "expand_bn").relu6()
            y = _batchnorm(y.conv2d(w[p + "depthwise"], groups=mid, stride=stride, padding=1), w,
                           p + "depthwise_bn").relu6()
            y = _batchnorm(y.conv2d(w[p + "project"]), w, p + "project_bn")
            x = x + y if stride == 1 and cin == cout else y
        x = _batchnorm(x.conv2d(w["head"]), w, "head_bn").relu6()
        return x.mean((2, 3)).linear(w["fc.weight"].T, w["fc.bias"])


MODELS = {"llama": Llama, "resnet": ResNet18, "train": CnnTraining, "bert": Bert, "mobilenet": MobileNetV2}

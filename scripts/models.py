"""Layer-shape tables of the models in the gradient-traffic experiment (no downloads).

Each model is a list of ``(tensor name, shape, head)`` rows, one per trainable tensor, in the
order the framework lists them; ``head`` marks the task head that stays on the FP32 path. The
shapes follow the reference implementations (torchvision-style ResNet-18 with the CIFAR stem,
Hugging Face DistilBERT and GPT-2); the tests check the totals against their published
parameter counts.
"""

from math import prod

__all__ = ["MODELS", "parameter_count"]


def _conv_bn(name, c_in, c_out, k):
    return [(f"{name}.weight", (c_out, c_in, k, k), False),
            (f"{name}.bn.weight", (c_out,), False), (f"{name}.bn.bias", (c_out,), False)]


def resnet18_cifar(classes):
    """ResNet-18 with the CIFAR stem (3x3 conv, no max-pool) and a ``classes``-way head."""
    rows = _conv_bn("conv1", 3, 64, 3)
    c_in = 64
    for stage, c_out in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            name = f"layer{stage}.{block}"
            rows += _conv_bn(f"{name}.conv1", c_in, c_out, 3)
            rows += _conv_bn(f"{name}.conv2", c_out, c_out, 3)
            if c_in != c_out:
                rows += _conv_bn(f"{name}.downsample", c_in, c_out, 1)
            c_in = c_out
    return rows + [("fc.weight", (classes, 512), True), ("fc.bias", (classes,), True)]


def _linear(name, d_in, d_out, head=False):
    return [(f"{name}.weight", (d_out, d_in), head), (f"{name}.bias", (d_out,), head)]


def _layer_norm(name, d):
    return [(f"{name}.weight", (d,), False), (f"{name}.bias", (d,), False)]


def distilbert_sst2():
    """DistilBERT-base-uncased with the sequence-classification head (2 classes)."""
    d, ff = 768, 3072
    rows = [("embeddings.word_embeddings.weight", (30522, d), False),
            ("embeddings.position_embeddings.weight", (512, d), False)]
    rows += _layer_norm("embeddings.LayerNorm", d)
    for i in range(6):
        name = f"transformer.layer.{i}"
        for proj in ("q_lin", "k_lin", "v_lin", "out_lin"):
            rows += _linear(f"{name}.attention.{proj}", d, d)
        rows += _layer_norm(f"{name}.sa_layer_norm", d)
        rows += _linear(f"{name}.ffn.lin1", d, ff) + _linear(f"{name}.ffn.lin2", ff, d)
        rows += _layer_norm(f"{name}.output_layer_norm", d)
    return rows + _linear("pre_classifier", d, d, True) + _linear("classifier", d, 2, True)


def gpt2_small():
    """GPT-2 small (124M); its language-model head is tied to the token embedding, so the
    token embedding is the head."""
    d, ff = 768, 3072
    rows = [("wte.weight", (50257, d), True), ("wpe.weight", (1024, d), False)]
    for i in range(12):
        name = f"h.{i}"
        rows += _layer_norm(f"{name}.ln_1", d)
        rows += _linear(f"{name}.attn.c_attn", d, 3 * d) + _linear(f"{name}.attn.c_proj", d, d)
        rows += _layer_norm(f"{name}.ln_2", d)
        rows += _linear(f"{name}.mlp.c_fc", d, ff) + _linear(f"{name}.mlp.c_proj", ff, d)
    return rows + _layer_norm("ln_f", d)


#: name -> (description, rows)
MODELS = {
    "ResNet-18 / CIFAR-10": ("ResNet-18, CIFAR stem, 10-way head", resnet18_cifar(10)),
    "ResNet-18 / CIFAR-100": ("ResNet-18, CIFAR stem, 100-way head", resnet18_cifar(100)),
    "DistilBERT / SST-2": ("DistilBERT-base-uncased, 2-way head", distilbert_sst2()),
    "GPT-2 small": ("GPT-2 124M, LM head tied to the token embedding", gpt2_small()),
}


def parameter_count(rows, head=None):
    """Elements of ``rows``; only the head's (``True``) or only the backbone's (``False``)."""
    return sum(prod(shape) for _, shape, is_head in rows if head is None or is_head == head)

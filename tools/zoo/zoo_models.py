"""The zoo's models: torchvision's classification architectures and a few small models of our
own built on torch.nn.TransformerEncoder (see README.md beside this file).

Every model is built with random weights only (nothing is downloaded): the caller seeds torch
before calling a builder. Each entry says how to build the model and the shape of its input.
"""

import inspect

import torch
import torch.nn as nn

# torchvision is needed for its classifiers only; our own models export without it.
try:
    import torchvision
    import torchvision.models as tvm
except ImportError:
    torchvision = None
    tvm = None

from zoo_sets import FAST, SETS, TRANSFORMERS

# Submodules of torchvision.models that are not image classification.
NON_CLASSIFICATION = ("detection", "segmentation", "video", "quantization", "optical_flow")
# Public functions of torchvision.models that are not model builders.
NOT_BUILDERS = {"get_model", "get_model_builder", "get_model_weights", "get_weight", "list_models"}
# Input sizes other than 224: inception_v3 is designed for (and trained at) 299x299; its own
# weights' transforms crop to 299, so that is the size its graph is exported at.
IMAGE_SIZE = {"inception_v3": 299}
# Files over protobuf's 2 GiB limit (torch would write external data): skipped, with this reason.
ONNX_LIMIT_BYTES = 2 * 1024**3


def torchvision_classifiers():
    """Names of torchvision.models' classification builders, sorted (none without torchvision)."""
    if tvm is None:
        return []
    names = []
    for name, fn in inspect.getmembers(tvm, inspect.isfunction):
        if name.startswith("_") or name in NOT_BUILDERS:
            continue
        module = getattr(fn, "__module__", "") or ""
        if not module.startswith("torchvision.models."):
            continue
        sub = module.split(".")[2]
        if sub in NON_CLASSIFICATION or sub.startswith("_"):
            continue
        names.append(name)
    return sorted(names)


# ---------------------------------------------------------------------------------------------
# Models of our own design.


class SmallViT(nn.Module):
    """A small ViT: 16x16 patches by a strided conv, class token, learned position embedding,
    pre-norm GELU transformer encoder (4 layers, d_model 192, 3 heads), LayerNorm, Linear."""

    def __init__(self, image=224, patch=16, dim=192, depth=4, heads=3, classes=100):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
        tokens = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, tokens + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x)                      # [B, D, H/16, W/16]
        x = x.flatten(2).transpose(1, 2)             # [B, N, D]
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        x = self.encoder(x)
        return self.head(self.norm(x[:, 0]))


class AudioEncoder(nn.Module):
    """An audio-style encoder: two stride-2 Conv1d with GELU on [B, 80, T] mel frames, a ReLU
    transformer encoder (4 layers, d_model 192, 4 heads) over time, mean over time, Linear."""

    def __init__(self, mels=80, dim=192, depth=4, heads=4, classes=35):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, dim, kernel_size=3, stride=2, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, kernel_size=3, stride=2, padding=1)
        self.act = nn.GELU()
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                           activation="relu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.act(self.conv1(x))
        x = self.act(self.conv2(x))                  # [B, D, T/4]
        x = self.encoder(x.transpose(1, 2))          # [B, T/4, D]
        return self.head(x.mean(dim=1))


def conv_bn_act(cin, cout, k=3, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand=4):
        super().__init__()
        hidden = cin * expand
        self.block = nn.Sequential(conv_bn_act(cin, hidden, 1),
                                   conv_bn_act(hidden, hidden, 3, stride, groups=hidden),
                                   conv_bn_act(hidden, cout, 1, act=False))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class MobileViTBlock(nn.Module):
    """Local 3x3 + 1x1 convs, unfold into 2x2 patches (rank-6 reshape and transpose), a
    transformer encoder over the patches of each of the 4 pixel positions, fold back (through a
    rank-5 and a rank-6 transpose), 1x1 conv, concat with the input and a 3x3 fusion conv."""

    def __init__(self, channels, dim=64, depth=2, heads=4, patch=2):
        super().__init__()
        self.patch = patch
        self.local = nn.Sequential(conv_bn_act(channels, channels, 3),
                                   nn.Conv2d(channels, dim, 1, bias=False))
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.proj = conv_bn_act(dim, channels, 1)
        self.fuse = conv_bn_act(2 * channels, channels, 3)

    def forward(self, x):
        y = self.local(x)
        b, d, hh, ww = y.shape
        p = self.patch
        h, w = hh // p, ww // p
        # Unfold: [B, D, h, p, w, p] -> [B, p, p, h, w, D] -> [B*p*p, h*w, D].
        y = y.reshape(b, d, h, p, w, p).permute(0, 3, 5, 2, 4, 1).reshape(b * p * p, h * w, d)
        y = self.norm(self.transformer(y))
        # Fold: [B, p*p, h, w, D] -> [B, D, h, w, p*p] -> [B, D, h, w, p, p] -> [B, D, h, p, w, p].
        y = y.reshape(b, p * p, h, w, d).permute(0, 4, 2, 3, 1)
        y = y.reshape(b, d, h, w, p, p).permute(0, 1, 2, 4, 3, 5).reshape(b, d, hh, ww)
        y = self.proj(y)
        return self.fuse(torch.cat([x, y], dim=1))


class MobileViTLike(nn.Module):
    def __init__(self, classes=100):
        super().__init__()
        self.stem = conv_bn_act(3, 16, 3, stride=2)                 # 128 -> 64
        self.ir1 = InvertedResidual(16, 32, stride=2)               # 64 -> 32
        self.ir2 = InvertedResidual(32, 48, stride=2)               # 32 -> 16
        self.mvit = MobileViTBlock(48, dim=64, depth=2, heads=4)
        self.head_conv = conv_bn_act(48, 128, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        x = self.mvit(self.ir2(self.ir1(self.stem(x))))
        x = self.pool(self.head_conv(x)).flatten(1)
        return self.fc(x)


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


class SmallUNet(nn.Module):
    """Three max-pool downs, two ConvTranspose2d ups and one bilinear Upsample up, skip concats,
    and a 1x1 conv head giving per-pixel class scores."""

    def __init__(self, classes=4, base=16):
        super().__init__()
        c1, c2, c3, c4 = base, 2 * base, 4 * base, 8 * base
        self.enc1, self.enc2, self.enc3 = double_conv(3, c1), double_conv(c1, c2), double_conv(c2, c3)
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(c3, c4)
        self.up3 = nn.ConvTranspose2d(c4, c3, 2, stride=2)
        self.dec3 = double_conv(2 * c3, c3)
        self.up2 = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                                 nn.Conv2d(c3, c2, 1))
        self.dec2 = double_conv(2 * c2, c2)
        self.up1 = nn.ConvTranspose2d(c2, c1, 2, stride=2)
        self.dec1 = double_conv(2 * c1, c1)
        self.head = nn.Conv2d(c1, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        b = self.bottleneck(self.pool(e3))
        d3 = self.dec3(torch.cat([self.up3(b), e3], dim=1))
        d2 = self.dec2(torch.cat([self.up2(d3), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


CUSTOM = {
    # name: (builder, input shape, what it covers)
    "small_vit": (lambda: SmallViT(image=224), [1, 3, 224, 224]),
    "audio_encoder": (lambda: AudioEncoder(), [1, 80, 200]),
    "mobilevit_like": (lambda: MobileViTLike(), [1, 3, 128, 128]),
    "small_unet": (lambda: SmallUNet(), [1, 3, 128, 128]),
}


def all_models():
    return torchvision_classifiers() + list(CUSTOM)


def model_set(name):
    if name in SETS:
        return list(SETS[name])
    if name == "all":
        return all_models()
    raise ValueError(f"unknown set {name!r} (fast, all, transformers, bench)")


def input_shape(name):
    if name in CUSTOM:
        return list(CUSTOM[name][1])
    size = IMAGE_SIZE.get(name, 224)
    return [1, 3, size, size]


def build(name, calibrate=True):
    """The model in eval mode, with the current torch random state's weights. Without
    calibrate, the caller calls calibrate_batch_norms(model, input_shape(name)) itself (a
    forward pass: worth skipping for a model that is too large to export)."""
    if name in CUSTOM:
        model = CUSTOM[name][0]()
    else:
        if name not in torchvision_classifiers():
            raise ValueError(f"unknown model {name!r}")
        fn = getattr(tvm, name)
        kwargs = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            # Without weights these default to building their auxiliary classifiers (only
            # used in training) and googlenet to transform_input=False; keep the eval graph.
            kwargs.update(aux_logits=False, init_weights=True)
        model = fn(**kwargs)
    decorrelate_transformer_layers(model)
    redraw_zero_weights(model)
    randomize_norms(model)
    if calibrate:
        calibrate_batch_norms(model, input_shape(name))
    return model.eval()


def decorrelate_transformer_layers(model):
    """nn.TransformerEncoder deep-copies one layer, so every layer starts with the same weights
    (and the ONNX exporter then stores them once). Draw each layer's weights anew."""
    for enc in model.modules():
        if isinstance(enc, nn.TransformerEncoder):
            for layer in enc.layers:
                for sub in layer.modules():
                    if sub is layer:
                        continue
                    if isinstance(sub, nn.MultiheadAttention):
                        sub._reset_parameters()
                    elif isinstance(sub, nn.Linear) and not isinstance(
                            sub, nn.modules.linear.NonDynamicallyQuantizableLinear):
                        sub.reset_parameters()


@torch.no_grad()
def redraw_zero_weights(model):
    """Some builders start a layer at zero (torchvision's ViT head), which makes the model's
    output all zeros and any comparison with it meaningless: draw such weights as PyTorch's
    default initialization of that layer does."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)) and not m.weight.any():
            m.reset_parameters()


NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)


@torch.no_grad()
def randomize_norms(model):
    """Normalization scales and shifts start at exactly 1 and 0; draw them near there so that
    a kernel dropping or misplacing them shows in the output."""
    for m in model.modules():
        if isinstance(m, NORMS) and getattr(m, "weight", None) is not None:
            m.weight.uniform_(0.75, 1.25)
            if m.bias is not None:
                m.bias.normal_(0.0, 0.1)


@torch.no_grad()
def calibrate_batch_norms(model, shape):
    """Random weights leave batch norms' running statistics at mean 0 and variance 1, which
    makes them the identity in eval mode. Set them from one training-mode pass over a seeded
    random batch of two, so that eval-mode batch norm really normalizes (and activations stay
    in a sensible range through deep networks)."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    momenta = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average: after one batch, exactly that batch's stats
    gen = torch.Generator().manual_seed(12345)
    batch = torch.randn(2, *shape[1:], generator=gen)
    model.train()
    model(batch)
    for bn, momentum in zip(bns, momenta):
        bn.momentum = momentum
    model.eval()


def parameter_count(model):
    return int(sum(p.numel() for p in model.parameters()))


def too_large(params):
    """Whether float32 weights alone pass protobuf's 2 GiB limit for one ONNX file."""
    return params * 4 >= ONNX_LIMIT_BYTES


def versions():
    return {"torch": torch.__version__,
            "torchvision": torchvision.__version__ if torchvision is not None else None}


__all__ = ["all_models", "model_set", "input_shape", "build", "calibrate_batch_norms",
           "parameter_count", "too_large",
           "torchvision_classifiers", "versions", "FAST", "TRANSFORMERS", "CUSTOM"]

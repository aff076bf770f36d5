#!/usr/bin/python3
"""Builds the edge-case ONNX models the model/ tests import.

mixed.onnx: a small PyTorch network (random weights, seeded) mixing the conversions that are
easy to get wrong: BatchNorm after Conv and after a MatMul (BatchNorm1d), ReLU6 (Clip with
inputs), HardSwish as exported at opset 13 (HardSigmoid + Mul), a squeeze-excitation gate
(tensor * tensor broadcast), a [C,1,1] parameter and a scalar as constant operands,
dilated depthwise conv, ceil-mode max pooling, F.pad (PyTorch's shape sub-graph for pads),
average pooling with count_include_pad, bilinear resize, concat, and a flatten of a tensor
with H*W > 1 feeding a fully-connected layer. mixed.input.npy / mixed.output.npy hold a
fixed input and the output PyTorch computed for it.

residual.onnx: two residual blocks (conv-BN-ReLU, conv-BN, + identity, ReLU), the second with
a strided 1x1 projection on the identity path, as ResNets and HRNet have them; psched's
executors run each block's Add inside the conv before it (executor/common/
residual_add_fusion.h). residual.input.npy / residual.output.npy as above.

encoder.onnx (opset 17): a small vision transformer as torch.nn builds one: a 4x4 patch
embedding conv, a class token and position embeddings, two nn.TransformerEncoder layers
(pre-norm, GELU, 4 heads: Reshape/Transpose head splits, batched MatMuls, Softmax,
LayerNormalization), the class token gathered and a Linear head. encoder13.onnx: the same
network at opset 13, where LayerNorm and GELU arrive decomposed (ReduceMean, Sub, Pow, Sqrt,
Div, Erf).

shuffle.onnx: a ShuffleNetV2-style unit (channel split, channel shuffle through a rank-5
Reshape and Transpose, depthwise conv) and a MnasNet-style head (ReduceMean over H and W),
then a Linear layer applied per token of a channels-last view (Transpose to [1,H,W,C]).

sequence.onnx: a Conv1d front end on [1,6,20] frames, attention written with torch.einsum, a
band mask computed from the input's shape (Shape, Range, Abs, Mod, Equal, an in-place
assignment as ScatterND, Where), F.normalize (ReduceL2, Clip, Expand, Div), a mean over time
and a Linear head.

pooled_head.onnx (opset 13): a conv stem, global pooling flattened to [1,C] and a decomposed
LayerNorm, a mean and a slice over the pooled vector, and a concat: ops that index axes on a
tensor whose pooled [1,C,1,1] storage an identity reshape aliases as [1,C].

unet_tiny.onnx: a small U-Net: a stride-2 conv down, a stride-2 ConvTranspose2d with
output_padding back up, the skip concat, a grouped dilated ConvTranspose2d with a sigmoid,
a bilinear nn.Upsample and a 1x1 conv head.

Run with Debian's Python (it has torch and onnx): /usr/bin/python3 make_models.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.se1 = nn.Conv2d(8, 4, 1)
        self.se2 = nn.Conv2d(4, 8, 1)
        self.c2 = nn.Conv2d(8, 6, (1, 3), padding=(0, 1))
        self.fc1 = nn.Linear(14 * 4 * 4, 32, bias=False)
        self.bnf = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 10)
        self.scale = nn.Parameter(torch.randn(8, 1, 1))
        for bn in (self.bn1, self.bn2, self.bnf):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        x = F.relu6(self.bn1(self.c1(x)))                        # 8x16x16
        y = F.hardswish(self.bn2(self.dw(x)))
        gate = torch.sigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        y = y * gate * self.scale + 0.1
        y = F.max_pool2d(y, 3, 2, ceil_mode=True)                # 8x8x8
        z = self.c2(F.avg_pool2d(F.pad(y, (1, 1, 1, 1)), 3, 1))  # 6x8x8
        u = F.interpolate(F.avg_pool2d(z, 2), scale_factor=2, mode="bilinear",
                          align_corners=False)
        w = F.avg_pool2d(torch.cat([y, z - u], 1), 2, count_include_pad=True)  # 14x4x4
        h = F.relu(self.bnf(self.fc1(torch.flatten(w, 1))))
        return self.fc2(h) * 10


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                      nn.BatchNorm2d(cout))
        for bn in (self.b1, self.b2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        identity = x if self.proj is None else self.proj(x)
        return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + identity)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.block1 = Block(16, 16, 1)
        self.block2 = Block(16, 32, 2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.block2(self.block1(F.relu(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Encoder(nn.Module):
    def __init__(self, dim=32, heads=4, layers=2, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, stride=4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.5)
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.5)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)  # [1, 16, dim]
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.norm(self.encoder(x))
        return self.head(x[:, 0])


class Shuffle(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.branch = nn.Sequential(nn.Conv2d(8, 8, 1), nn.ReLU(),
                                    nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.Conv2d(8, 8, 1))
        self.token = nn.Linear(16, 12)
        self.fc = nn.Linear(12, 10)

    def forward(self, x):
        x = F.relu(self.stem(x))                               # 16x8x8
        a, b = x.chunk(2, dim=1)
        x = torch.cat([a, F.relu(self.branch(b))], dim=1)
        n, c, h, w = x.shape
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        t = torch.tanh(self.token(x.permute(0, 2, 3, 1)))      # [1, 8, 8, 12]
        return self.fc(t.mean(dim=(1, 2))) + x.mean(dim=(2, 3)).sum(dim=1, keepdim=True)


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(6, 16, 3, stride=2, padding=1)
        self.q, self.k, self.v = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 16)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        h = F.gelu(self.conv(x)).transpose(1, 2)               # [1, 10, 16]
        n = h.shape[1]
        q, k, v = (f(h).view(1, n, 2, 8).transpose(1, 2) for f in (self.q, self.k, self.v))
        s = torch.einsum("bhid,bhjd->bhij", q, k) / 8 ** 0.5
        idx = torch.arange(n)
        band = (idx[:, None] - idx[None, :]).abs() % 4 == 3
        band[:1] = False
        s = s.masked_fill(band, -1e4)
        a = torch.einsum("bhij,bhjd->bhid", s.softmax(-1), v).transpose(1, 2).reshape(1, n, 16)
        return self.fc(F.normalize(a, dim=-1).mean(1))


class PooledHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(17, 4)

    def forward(self, x):
        v = self.norm(torch.flatten(F.adaptive_avg_pool2d(F.relu(self.stem(x)), 1), 1))
        return self.fc(torch.cat([v[:, 8:], v[:, :8], v.mean(dim=1, keepdim=True)], dim=1))


class UNetTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 3, padding=1)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)
        self.fuse = nn.Conv2d(16, 8, 3, padding=1)
        self.refine = nn.ConvTranspose2d(8, 8, 3, padding=2, dilation=2, groups=2)
        self.upsample = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        e = F.relu(self.enc(x))                                 # 8x16x16
        d = F.relu(self.down(e))                                # 16x8x8
        u = F.relu(self.up(d))                                  # 8x16x16
        x = F.relu(self.fuse(torch.cat([u, e], dim=1)))         # skip concat, 8x16x16
        x = torch.sigmoid(self.refine(x))
        return self.head(self.upsample(x))                      # 2x32x32


def export(net, x, stem, opset=13):
    with torch.no_grad():
        out = net(x)
    torch.onnx.export(net, x, stem + ".onnx", opset_version=opset, input_names=["input"],
                      output_names=["logits"])
    np.save(stem + ".input.npy", x.numpy())
    np.save(stem + ".output.npy", out.numpy())


def main():
    torch.manual_seed(0)
    export(Mixed().eval(), torch.randn(1, 3, 32, 32), "mixed")
    torch.manual_seed(1)
    export(Residual().eval(), torch.randn(1, 3, 24, 24), "residual")
    torch.manual_seed(2)
    encoder = Encoder().eval()
    x = torch.randn(1, 3, 16, 16)
    export(encoder, x, "encoder", opset=17)
    export(encoder, x, "encoder13", opset=13)
    torch.manual_seed(3)
    export(Shuffle().eval(), torch.randn(1, 3, 16, 16), "shuffle")
    torch.manual_seed(4)
    export(Sequence().eval(), torch.randn(1, 6, 20), "sequence", opset=17)
    torch.manual_seed(5)
    export(PooledHead().eval(), torch.randn(1, 3, 16, 16), "pooled_head")
    torch.manual_seed(6)
    export(UNetTiny().eval(), torch.randn(1, 3, 16, 16), "unet_tiny")


if __name__ == "__main__":
    main()

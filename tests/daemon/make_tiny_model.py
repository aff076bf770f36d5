#!/usr/bin/python3
"""Writes data/tiny_cnn.onnx with a fixed input and PyTorch's output for it, and
data/tiny_cnn_dynamic.onnx: the same network exported with dynamic axes (batch, height,
width symbolic), which pschedd registers with its input shape bound.

A small CNN (conv, relu, pool, 1x1 conv, global pool, linear) that runs in milliseconds, so
the daemon integration tests can run hundreds of inferences. Seeded: rerunning gives the
same files. Run with Debian's python3 (torch + onnx): /usr/bin/python3 make_tiny_model.py
"""
import os

import numpy as np
import torch

torch.manual_seed(7)


class TinyCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(2)
        self.conv2 = torch.nn.Conv2d(8, 16, 1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv1(x))))
        x = torch.relu(self.conv2(x))
        x = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    model = TinyCnn().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(11))
    path = os.path.join(out_dir, "tiny_cnn.onnx")
    torch.onnx.export(model, x, path, input_names=["input"], output_names=["logits"],
                      opset_version=13)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, x, os.path.join(out_dir, "tiny_cnn_dynamic.onnx"),
                      input_names=["input"], output_names=["logits"], opset_version=13,
                      dynamic_axes={"input": {0: "batch", 2: "height", 3: "width"},
                                    "logits": {0: "batch"}})
    np.save(os.path.join(out_dir, "tiny_cnn.input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(out_dir, "tiny_cnn.output.npy"), y.numpy().astype(np.float32))


if __name__ == "__main__":
    main()

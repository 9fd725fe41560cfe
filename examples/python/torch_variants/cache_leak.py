"""A device leak held by a cache on an object: a model wrapper memoizes each step's fp16 features in a
dict it never clears. The features are made by `.to(torch.float16)` at line 19 from a temporary; the
temporary (line 18) and the matmul (line 17) are freed each step.

Expected memshim report: tensors held at exit 12 x 512 x 1024 x 2 B = 12582912 B in 12 tensors at
`remember` line 19 (under `forward` line 23), growth at that line; prints "cached 12582912".
"""
import torch


class Featurizer:
    def __init__(self):
        self.w = torch.randn(1024, 1024, device="cuda")
        self.cache = {}

    def remember(self, key, x):
        h = x @ self.w
        h = h * 2.0
        self.cache[key] = h.to(torch.float16)
        return h

    def forward(self, key, x):
        h = self.remember(key, x)
        return torch.relu(h).mean().item()


f = Featurizer()
for step in range(12):
    f.forward(step, torch.randn(512, 1024, device="cuda"))
torch.cuda.synchronize()
print("cached", sum(t.numel() * t.element_size() for t in f.cache.values()))

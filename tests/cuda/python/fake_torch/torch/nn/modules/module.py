"""A stand-in for torch.nn.Module in memshim's tests: its frames sit where PyTorch's do, so the
report's roles read them as PyTorch's. Allocates through the stand-in allocator (`lib`)."""
MiB = 1 << 20


class Module:
    def __init__(self, lib, params):
        self.lib = lib
        self.sizes = params
        self.params = []

    def to_device(self):
        self._apply()
        return self

    def _apply(self):
        self.params = [self.lib.standin_torch_malloc(s) for s in self.sizes]

    def __call__(self, batch):
        return self.forward(batch)

    def forward(self, batch):
        return self.lib.standin_torch_malloc(2 * MiB)

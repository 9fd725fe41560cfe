"""A stand-in for `torch.optim.AdamW` in memshim's tests: two state tensors per parameter at the
first step, and one 1 MiB temporary every step."""
MiB = 1 << 20


class AdamW:
    def __init__(self, lib, sizes):
        self.lib = lib
        self.sizes = sizes
        self.state = []

    def step(self):
        if not self.state:
            self.state = [self.lib.standin_torch_malloc(s) for s in self.sizes + self.sizes]
        tmp = self.lib.standin_torch_malloc(MiB)
        self.lib.standin_torch_free(tmp)

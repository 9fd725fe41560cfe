"""A stand-in for a DataLoader's batch in memshim's tests."""
MiB = 1 << 20


def load_batch(lib):
    return lib.standin_torch_malloc(MiB)

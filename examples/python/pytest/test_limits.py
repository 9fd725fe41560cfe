"""Tests for `pytest --memshim` (tests/e2e/pytest_plugin.rs runs them).

Expected: test_within_its_limit passes; test_over_its_peak fails naming load_blob at line 13 with
30.0 MiB; test_that_leaks fails naming keep at line 17 with 2.0 MiB; test_unmarked passes.
"""
import pytest

KEPT = []


def load_blob():
    # One 30 MiB object, freed when the test returns: a peak, not a leak.
    return bytearray(30 << 20)


def keep():
    KEPT.append(bytearray(2 << 20))


@pytest.mark.limit_memory("10 MB")
def test_within_its_limit():
    assert len(bytearray(1 << 20)) == 1 << 20


@pytest.mark.limit_memory("24 MB")
def test_over_its_peak():
    assert len(load_blob()) == 30 << 20


@pytest.mark.limit_leaks("1 MB")
def test_that_leaks():
    keep()


def test_unmarked():
    assert len(load_blob()) == 30 << 20

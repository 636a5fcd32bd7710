"""The allocator setting: freed activations are reused instead of page-faulted back."""

from __future__ import annotations

import platform
import resource

import pytest
import torch

from runtime.memory import MMAP_THRESHOLD_BYTES, retain_freed_memory

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


@glibc
def test_a_freed_block_is_reused_without_page_faults() -> None:
    """40 MB is above glibc's largest dynamic mmap threshold (32 MB): without the setting every such block is a
    fresh mapping, faulted in page by page each time (here 33,000-61,000 faults of this thread for the five rounds
    below, by thread count; with it 0-5,000, where glibc realigns a block)."""
    assert retain_freed_memory()
    size = 40 << 20
    assert size < MMAP_THRESHOLD_BYTES

    def layer() -> None:  # a big activation, a smaller one made from it, both freed
        big = torch.empty(size // 4).fill_(1.0)
        torch.mul(big[: size // 8], 2.0)

    # This thread's faults only: engine threads left by earlier tests may still be finishing a step.
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    for _ in range(3):  # the heap grows to its working size
        layer()
    before = resource.getrusage(who).ru_minflt
    for _ in range(5):
        layer()
    faults = resource.getrusage(who).ru_minflt - before
    fresh_pages = 5 * size // resource.getpagesize()
    assert faults < fresh_pages // 4, f"{faults} page faults for five reused 40 MB blocks"

import platform

from runtime.arenas import limit_arenas, trim_freed_memory


def test_arena_limit_and_trim_apply_on_glibc() -> None:
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert limit_arenas(0) is False  # 0 keeps glibc's default
    assert limit_arenas(8) is glibc
    assert isinstance(trim_freed_memory(), bool)

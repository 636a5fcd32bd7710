"""PostgreSQL's binary COPY format, encoded with numpy and struct: the bulk load's fast path.

A stream is a header, one tuple per row (int16 field count, then per field an int32 byte length, -1 for NULL,
and the value in its binary send format, big-endian) and a trailer. The postings, fixed-width, are one numpy
structured array; chunk rows carry text, a text[] and a pgvector `vector` (int16 dim, int16 0, float4 x dim).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
TRAILER = struct.pack(">h", -1)
TEXT_OID = 25
_NULL = struct.pack(">i", -1)


def int4(value: int | None) -> bytes:
    return _NULL if value is None else struct.pack(">ii", 4, value)


def float8(value: float) -> bytes:
    return struct.pack(">id", 8, value)


def text(value: str) -> bytes:
    data = value.encode("utf-8")
    return struct.pack(">i", len(data)) + data


def jsonb(value: Any) -> bytes:
    data = b"\x01" + json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return struct.pack(">i", len(data)) + data


def text_array(values: Iterable[str]) -> bytes:
    items = [value.encode("utf-8") for value in values]
    if not items:
        body = struct.pack(">iii", 0, 0, TEXT_OID)
    else:
        body = struct.pack(">iiiii", 1, 0, TEXT_OID, len(items), 1)
        body += b"".join(struct.pack(">i", len(item)) + item for item in items)
    return struct.pack(">i", len(body)) + body


def vector(values: np.ndarray) -> bytes:
    data = struct.pack(">hh", len(values), 0) + np.asarray(values, dtype=">f4").tobytes()
    return struct.pack(">i", len(data)) + data


def send(copy: Any, rows: Iterable[bytes], buffer_bytes: int = 1 << 20) -> None:
    """Write a whole binary COPY stream (header, rows, trailer) to a psycopg Copy, in ~1 MB writes."""
    buffer = bytearray(HEADER)
    for encoded in rows:
        buffer += encoded
        if len(buffer) >= buffer_bytes:
            copy.write(bytes(buffer))
            buffer.clear()
    buffer += TRAILER
    copy.write(bytes(buffer))


def row(*fields: bytes) -> bytes:
    return struct.pack(">h", len(fields)) + b"".join(fields)


POSTING_DTYPE = np.dtype([("fields", ">i2"), ("l1", ">i4"), ("term", ">i4"), ("l2", ">i4"), ("chunk", ">i4"),
                     ("l3", ">i4"), ("weight", ">f8")])  # fmt: skip


def postings_rows(term_ids: np.ndarray, chunk_nos: np.ndarray, weights: np.ndarray,
                  batch: int = 1 << 20) -> Iterator[bytes]:  # fmt: skip
    """(term_id int4, chunk_no int4, weight float8) tuples in batches of encoded bytes (no header/trailer)."""
    for start in range(0, len(term_ids), batch):
        stop = min(start + batch, len(term_ids))
        records = np.empty(stop - start, dtype=POSTING_DTYPE)
        records["fields"], records["l1"], records["l2"], records["l3"] = 3, 4, 4, 8
        records["term"], records["chunk"], records["weight"] = (
            term_ids[start:stop], chunk_nos[start:stop], weights[start:stop])  # fmt: skip
        yield records.tobytes()

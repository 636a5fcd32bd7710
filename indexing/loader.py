"""Stage 1: read the corpus CSV, validate it and turn its rows into cleaned Documents."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from corpus.documents import Document
from indexing.cleaning import TextCleaner, merge_codes, split_jel_codes

REQUIRED_COLUMNS = ("abstract", "doi")
_DATE = re.compile(r"^(?P<year>\d{4})(?:-(?P<month>\d{2}))?(?:-\d{2})?$")

# Skip reasons, as counted in the summary and the manifest.
SKIP_EMPTY_ABSTRACT = "empty abstract"
SKIP_FRONT_MATTER = "front matter"
SKIP_DUPLICATE = "duplicate of an earlier row"


class CorpusError(ValueError):
    """The corpus cannot be indexed. The message names the file, the row number(s) and the problem."""

    def __init__(self, path: Path, problem: str, rows: list[int] | None = None) -> None:
        self.path = path
        self.rows = rows or []
        self.problem = problem
        where = ""
        if self.rows:
            label = "row" if len(self.rows) == 1 else "rows"
            where = f", {label} {', '.join(str(row) for row in self.rows)}"
        super().__init__(f"{path}{where}: {problem}")


@dataclass
class LoadedCorpus:
    documents: list[Document]
    rows_read: int
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> number of rows
    skipped_rows: dict[str, list[int]] = field(default_factory=dict)  # reason -> row numbers
    date_warnings: list[int] = field(default_factory=list)  # rows whose date was not YYYY[-MM[-DD]]


class CorpusLoader:
    """Reads a UTF-8 CSV with at least the columns `abstract` and `doi` (see ../shared/data/README.md).

    Fatal problems raise CorpusError; rows that are merely unusable are skipped and counted by reason.
    Row numbers are 1-based data rows (the header is row 0), as in every message of this package.
    """

    def __init__(self, cleaner: TextCleaner | None = None) -> None:
        self.cleaner = cleaner or TextCleaner()

    def load(self, path: Path) -> LoadedCorpus:
        rows = self._read_rows(path)
        corpus = LoadedCorpus(documents=[], rows_read=len(rows))
        first_row_of: dict[str, int] = {}
        by_id: dict[str, Document] = {}
        for row_number, row in enumerate(rows, start=1):
            document = self._to_document(row, row_number, corpus)
            if document is None:
                continue
            earlier = by_id.get(document.doc_id)
            if earlier is not None:
                if earlier.abstract != document.abstract:
                    raise CorpusError(
                        path,
                        f"identifier {document.doc_id!r} appears more than once with different abstracts.",
                        rows=[first_row_of[document.doc_id], row_number],
                    )
                self._skip(corpus, SKIP_DUPLICATE, row_number)
                continue
            by_id[document.doc_id] = document
            first_row_of[document.doc_id] = row_number
            corpus.documents.append(document)
        if not corpus.documents:
            reasons = ", ".join(f"{count} {reason}" for reason, count in corpus.skipped.items())
            detail = f" ({corpus.rows_read} data rows: {reasons})" if corpus.rows_read else ""
            raise CorpusError(path, f"the corpus contains no usable rows{detail}.")
        return corpus

    def _read_rows(self, path: Path) -> list[dict[str, str]]:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CorpusError(path, "file not found.") from None
        except IsADirectoryError:
            raise CorpusError(path, "is a directory, not a CSV file.") from None
        except OSError as error:
            raise CorpusError(path, f"cannot be read ({error.strerror}).") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            row = _row_containing(data, error.start)
            line = data.count(b"\n", 0, error.start) + 1
            raise CorpusError(
                path,
                f"is not valid UTF-8: byte 0x{data[error.start]:02x} at offset {error.start} (line {line}).",
                rows=[row] if row > 0 else None,
            ) from None
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        rows: list[dict[str, str]] = []
        try:
            header = next(reader, None)
            if header is None:
                raise CorpusError(path, "the file is empty (no header row).")
            header = [name.strip() for name in header]
            missing = [column for column in REQUIRED_COLUMNS if column not in header]
            if missing:
                raise CorpusError(
                    path,
                    f"missing required column(s) {', '.join(missing)}; the header has: {', '.join(header)}.",
                )
            for row_number, fields in enumerate(reader, start=1):
                if not any(value.strip() for value in fields):
                    fields = [""] * len(header)  # a blank line is an empty row, skipped later
                if len(fields) != len(header):
                    raise CorpusError(
                        path, f"has {len(fields)} fields but the header has {len(header)}.", rows=[row_number]
                    )
                rows.append(dict(zip(header, fields, strict=True)))
        except csv.Error as error:
            raise CorpusError(
                path, f"is not valid CSV at line {reader.line_num} ({error}).", rows=[len(rows) + 1]
            ) from None
        return rows

    def _to_document(self, row: dict[str, str], row_number: int, corpus: LoadedCorpus) -> Document | None:
        raw_abstract = row["abstract"]
        raw_title = row.get("title", "")
        if not raw_abstract.strip():
            self._skip(corpus, SKIP_EMPTY_ABSTRACT, row_number)
            return None
        title = self.cleaner.clean_text(raw_title)
        if self.cleaner.is_front_matter(title):
            self._skip(corpus, SKIP_FRONT_MATTER, row_number)
            return None
        cleaned = self.cleaner.clean_abstract(raw_abstract)
        if not cleaned.text:  # nothing but a JEL list or markup
            self._skip(corpus, SKIP_EMPTY_ABSTRACT, row_number)
            return None
        doi = row["doi"].strip()
        date, year = _parse_date(row.get("date", ""))
        if row.get("date", "").strip() and year is None:
            corpus.date_warnings.append(row_number)
        return Document(
            doc_id=doi or fallback_doc_id(raw_title, raw_abstract),
            doi=doi,
            title=title,
            abstract=cleaned.text,
            abstract_original=raw_abstract,
            date=date,
            year=year,
            authors=_split_authors(row.get("authors", "")),
            journal=self.cleaner.clean_text(row.get("journal", "")),
            url=row.get("url", "").strip(),
            jel_codes=merge_codes(split_jel_codes(row.get("jel_codes", "")), cleaned.jel_codes),
            row_number=row_number,
        )

    @staticmethod
    def _skip(corpus: LoadedCorpus, reason: str, row_number: int) -> None:
        corpus.skipped[reason] += 1
        corpus.skipped_rows.setdefault(reason, []).append(row_number)


def fallback_doc_id(raw_title: str, raw_abstract: str) -> str:
    """A stable id for rows without a DOI, from the CSV text exactly as stored."""
    digest = hashlib.sha1(f"{raw_title}\n{raw_abstract}".encode()).hexdigest()
    return f"sha1:{digest[:16]}"


def _parse_date(raw: str) -> tuple[str, int | None]:
    match = _DATE.match(raw.strip())
    if match is None:
        return "", None
    year, month = match.group("year"), match.group("month")
    return (f"{year}-{month}" if month else year), int(year)


def _split_authors(raw: str) -> list[str]:
    """Authors joined with "; " are split; an unsplittable string (source A) stays one entry."""
    return [name.strip() for name in raw.split(";") if name.strip()]


def _row_containing(data: bytes, offset: int) -> int:
    """The 1-based data row holding byte `offset` (0 for the header), counting quoted newlines right."""
    prefix = data[:offset].decode("utf-8", errors="replace")
    records = list(csv.reader(io.StringIO(prefix, newline="")))
    # The last parsed record is the (partial) row that contains the bad byte; the header is record 0.
    ends_at_boundary = prefix.endswith(("\n", "\r"))
    return len(records) - (0 if ends_at_boundary else 1)

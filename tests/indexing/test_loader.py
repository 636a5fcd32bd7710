from collections.abc import Callable
from pathlib import Path

import pytest

from indexing.loader import (
    SKIP_DUPLICATE,
    SKIP_EMPTY_ABSTRACT,
    SKIP_FRONT_MATTER,
    CorpusError,
    CorpusLoader,
    LoadedCorpus,
)

Rows = list[dict[str, str]]
WriteCsv = Callable[..., Path]


def load(path: Path) -> LoadedCorpus:
    return CorpusLoader().load(path)


def test_valid_corpus_becomes_clean_documents(sample_corpus: Path, sample_rows: Rows) -> None:
    corpus = load(sample_corpus)
    assert corpus.rows_read == 5
    assert not corpus.skipped
    by_row = {document.row_number: document for document in corpus.documents}

    minimum_wage = by_row[1]
    assert minimum_wage.doc_id == "10.1257/test.1"
    assert minimum_wage.abstract.endswith("Earnings of teenagers rise.")
    assert minimum_wage.abstract_original == sample_rows[0]["abstract"]
    assert minimum_wage.jel_codes == ["J23", "J38"]  # column first, then the suffix's new codes
    assert minimum_wage.authors == ["Card, David", "Krueger, Alan"]
    assert (minimum_wage.date, minimum_wage.year) == ("2010-03", 2010)

    communication = by_row[3]
    assert communication.title == "Central Bank Communication & Inflation Expectations"
    assert '"plain language"' in communication.abstract
    assert communication.jel_codes == ["E52", "E58"]
    assert (communication.date, communication.year) == ("2015", 2015)

    no_doi = by_row[4]
    assert no_doi.doi == ""
    assert no_doi.doc_id.startswith("sha1:") and len(no_doi.doc_id) == len("sha1:") + 16
    assert load(sample_corpus).documents[3].doc_id == no_doi.doc_id  # stable across loads

    carbon = by_row[5]
    assert carbon.title == "Carbon Taxes and Power Plant Emissions"
    assert "CO2 emissions" in carbon.abstract


def test_unusable_rows_are_skipped_and_counted(tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows) -> None:
    rows = [
        *sample_rows[:2],
        {"title": "Front Matter", "abstract": "Includes the table of contents.", "doi": "10.1257/fm"},
        {"title": "Nothing here", "abstract": "   ", "doi": "10.1257/empty"},
        {"title": "Only codes", "abstract": "(JEL D83)", "doi": "10.1257/codes"},
        dict(sample_rows[0]),  # the same article twice, same text
    ]
    corpus = load(write_csv(tmp_path / "c.csv", rows))
    assert [document.row_number for document in corpus.documents] == [1, 2]
    assert corpus.skipped == {SKIP_FRONT_MATTER: 1, SKIP_EMPTY_ABSTRACT: 2, SKIP_DUPLICATE: 1}
    assert corpus.skipped_rows[SKIP_EMPTY_ABSTRACT] == [4, 5]


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    with pytest.raises(CorpusError, match=r"nope\.csv: file not found"):
        load(missing)


def test_missing_required_column_names_it(tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows) -> None:
    columns = ["date", "title", "authors", "doi", "jel_codes"]
    path = write_csv(tmp_path / "c.csv", sample_rows, columns=columns)
    with pytest.raises(CorpusError, match=r"c\.csv: missing required column\(s\) abstract"):
        load(path)


def test_undecodable_bytes_name_the_row(tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows) -> None:
    path = write_csv(tmp_path / "c.csv", sample_rows)
    data = path.read_bytes()
    # Corrupt a byte inside the 3rd data row (the one starting "2015,").
    offset = data.index(b"Forward guidance") + 3
    path.write_bytes(data[:offset] + b"\xff\xfe" + data[offset:])
    with pytest.raises(CorpusError) as error:
        load(path)
    assert error.value.rows == [3]
    assert "c.csv, row 3: is not valid UTF-8" in str(error.value)


def test_undecodable_bytes_after_a_multiline_row_count_records_not_lines(tmp_path: Path, write_csv: WriteCsv) -> None:
    rows = [{"abstract": "First line.\nSecond line.\nThird line.", "doi": "10.1/a"}, {"abstract": "Bad", "doi": "b"}]
    path = write_csv(tmp_path / "c.csv", rows)
    data = path.read_bytes()
    offset = data.index(b"Bad")
    path.write_bytes(data[:offset] + b"\xc3\x28" + data[offset:])
    with pytest.raises(CorpusError) as error:
        load(path)
    assert error.value.rows == [2]


@pytest.mark.parametrize(
    "rows", [[], [{"title": "Front Matter", "abstract": "Contents.", "doi": "x"}]], ids=["header-only", "all-skipped"]
)
def test_empty_corpus_is_an_error(tmp_path: Path, rows: list[dict[str, str]], write_csv: WriteCsv) -> None:
    with pytest.raises(CorpusError, match="no usable rows"):
        load(write_csv(tmp_path / "c.csv", rows))


def test_zero_byte_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_bytes(b"")
    with pytest.raises(CorpusError, match="empty"):
        load(path)


def test_duplicate_ids_with_different_text_name_both_rows(
    tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows
) -> None:
    rows = [*sample_rows, {**sample_rows[1], "abstract": "A different abstract under the same DOI."}]
    with pytest.raises(CorpusError) as error:
        load(write_csv(tmp_path / "c.csv", rows))
    assert error.value.rows == [2, 6]
    assert "'10.1257/test.2' appears more than once with different abstracts" in str(error.value)


def test_row_with_wrong_field_count_is_an_error(tmp_path: Path, write_csv: WriteCsv, sample_rows: Rows) -> None:
    path = write_csv(tmp_path / "c.csv", sample_rows)
    with path.open("a", encoding="utf-8", newline="") as handle:
        handle.write("2020-01,only,three\r\n")
    with pytest.raises(CorpusError, match="row 6: has 3 fields but the header has 10"):
        load(path)

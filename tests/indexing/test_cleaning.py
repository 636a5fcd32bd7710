import pytest

from indexing.cleaning import CleaningSettings, TextCleaner, merge_codes, split_jel_codes


@pytest.fixture
def cleaner() -> TextCleaner:
    return TextCleaner()


@pytest.mark.parametrize(
    ("raw", "text", "codes"),
    [
        ("Prices rise. (JEL D83, G14)", "Prices rise.", ["D83", "G14"]),
        ("Prices rise. (JEL: J24; K42)", "Prices rise.", ["J24", "K42"]),
        ("Prices rise. (JEL, J0, H0)", "Prices rise.", ["J0", "H0"]),
        ("Prices rise. (JEL F13, F15).", "Prices rise.", ["F13", "F15"]),
        ("Prices rise.(JEL C91 D81 D91)", "Prices rise.", ["C91", "D81", "D91"]),
        ("Prices rise. (JEL L11 , L16,L25 )", "Prices rise.", ["L11", "L16", "L25"]),
        ("Prices rise. JEL: D14, R31", "Prices rise.", ["D14", "R31"]),
        ("Prices rise. 1JEL D31, H21, H242", "Prices rise.", ["D31", "H21", "H24"]),
        ("Prices rise.\n\n(JEL\n\nE22, E32).", "Prices rise.", ["E22", "E32"]),
        ("Growth (JEL codes are elsewhere) continues.", "Growth (JEL codes are elsewhere) continues.", []),
        ("No list here.", "No list here.", []),
    ],
)
def test_jel_suffix_is_split_from_the_abstract(cleaner: TextCleaner, raw: str, text: str, codes: list[str]) -> None:
    cleaned = cleaner.clean_abstract(raw)
    assert cleaned.text == text
    assert cleaned.jel_codes == codes


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Fish &amp; chips", "Fish & chips"),
        ("double &amp;gt; encoded", "double > encoded"),
        ("Valid <i>t</i>-ratio Inference", "Valid t-ratio Inference"),
        ("CO<sub>2</sub>from power plants", "CO2 from power plants"),
        ("Narratives:<i>The Birth of a Nation</i>after", "Narratives: The Birth of a Nation after"),
        ("Yes, r < g. so what?", "Yes, r < g. so what?"),
        ("  line one\r\n\n  line\ttwo  ", "line one line two"),
        ("cotinine concentration\x97a metabolite\x97measured, the firm\x92s \x93own\x94", (
            "cotinine concentration\u2014a metabolite\u2014measured, the firm\u2019s \u201cown\u201d")),
    ],
)
def test_clean_text_decodes_entities_strips_tags_and_whitespace(cleaner: TextCleaner, raw: str, expected: str) -> None:
    assert cleaner.clean_text(raw) == expected


def test_front_matter_titles_are_recognised(cleaner: TextCleaner) -> None:
    assert cleaner.is_front_matter("Front Matter")
    assert cleaner.is_front_matter("  front matter ")
    assert not cleaner.is_front_matter("Front Matter and Back Matter in Corporate Filings")


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="empty"):
        CleaningSettings(front_matter_titles=("front matter", " "))


def test_code_helpers() -> None:
    assert split_jel_codes("D83, G14;O11  x12 and") == ["D83", "G14", "O11"]
    assert merge_codes(["D83", "G14"], ["G14", "E52"]) == ["D83", "G14", "E52"]

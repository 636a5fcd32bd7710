"""Search filters: restrictions a search backend applies to the whole corpus before any list is cut."""

from __future__ import annotations

from dataclasses import dataclass

from corpus.documents import Document


@dataclass(frozen=True)
class SearchFilters:
    """Restrictions applied to the whole index before any result list is cut to size."""

    year_min: int | None = None
    year_max: int | None = None
    jel_prefix: str | None = None  # e.g. "D8" matches D81 and D83; case-insensitive

    def __post_init__(self) -> None:
        if self.year_min is not None and self.year_max is not None and self.year_min > self.year_max:
            raise ValueError(f"year_min ({self.year_min}) is after year_max ({self.year_max}).")
        if self.jel_prefix is not None and not self.jel_prefix.strip():
            raise ValueError("jel_prefix must not be blank; leave it out to match every JEL code.")

    @property
    def is_empty(self) -> bool:
        return self.year_min is None and self.year_max is None and self.jel_prefix is None

    def matches(self, document: Document) -> bool:
        """True when the document passes every filter that is set.

        A document without a year never passes a year filter, and one without JEL codes never
        passes a JEL filter: we cannot claim it is in range.
        """
        if self.year_min is not None and (document.year is None or document.year < self.year_min):
            return False
        if self.year_max is not None and (document.year is None or document.year > self.year_max):
            return False
        if self.jel_prefix is not None:
            prefix = self.jel_prefix.strip().upper()
            if not any(code.upper().startswith(prefix) for code in document.jel_codes):
                return False
        return True

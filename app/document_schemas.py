"""Bodies of the /v1/documents routes beyond the document itself: related papers and citation export."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.schemas import DocumentOut, StrictModel

CitationFormat = Literal["bibtex", "ris"]
MAX_EXPORT = 100
DocId = Annotated[str, StringConstraints(min_length=1, max_length=300)]


class RelatedPaperOut(BaseModel):
    document: DocumentOut
    display_title: str = Field(description="The title, or the abstract's first words in brackets when it has none.")
    similarity: float = Field(description="Cosine similarity of the paper's closest chunk to this paper's vector.")


class RelatedResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "doc_id": "10.1257/aer.103.6.2121", "k": 1,
        "related": [{"document": {
            "doc_id": "10.1257/aer.20191823", "doi": "10.1257/aer.20191823", "title": "Trade Shocks and Local Labor "
            "Markets", "date": "2012-05", "year": 2012, "authors": ["Autor, David H."],
            "journal": "American Economic Review", "url": "https://doi.org/10.1257/aer.20191823",
            "jel_codes": ["F14", "J23"]},
            "display_title": "Trade Shocks and Local Labor Markets", "similarity": 0.71}],
    }]})  # fmt: skip

    doc_id: str
    k: int
    related: list[RelatedPaperOut] = Field(description="The nearest other papers by their stored embeddings, "
                                                       "most similar first.")  # fmt: skip


class ExportRequest(StrictModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={"examples": [
            {"doc_ids": ["10.1257/aer.103.6.2121", "10.1257/aer.20191823"], "format": "bibtex"},
            {"doc_ids": ["10.1257/aer.20191823"], "format": "ris"},
        ]},
    )  # fmt: skip

    doc_ids: list[DocId] = Field(min_length=1, max_length=MAX_EXPORT,
                               description="The papers to cite, in order (repeats are listed once).")  # fmt: skip
    format: CitationFormat = Field("bibtex", description="bibtex (.bib) or ris (.ris).")

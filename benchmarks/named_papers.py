"""Questions that name a paper by its authors, through the real service path: is the named paper the one answered?

`eval/named_papers/questions.jsonl` (README there): 20 questions that cite an AER paper of the corpus by its
authors ("What did Autor, Dorn, and Hanson (2013) find about …?", four with no topic at all: "What did Herbst and
Hendren find?"), and 4 that name authors beside a topic none of their papers is about ("What did Lochner and
Moretti find about central bank independence?"). Each goes through a POST /v1/ask, as a user's would:

  named answered      `answer` questions whose answer cites the named paper
  named first         ... cites it first
  others cited        `answer` questions citing any paper besides the named one
  named kept out      `not_named` questions whose answer cites none of the named authors' papers

    python -m benchmarks.named_papers --config before --repo before=../aer-rag-before --config after

JSON to benchmarks/results/named_papers.json (the answers themselves to var/named_papers/LABEL.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import httpx

from benchmarks.common import REPO_ROOT, git_commit, machine, relative, write_results
from benchmarks.service import add_config_arguments, configs_from, served

QUESTIONS = REPO_ROOT / "eval" / "named_papers" / "questions.jsonl"
DETAILS = REPO_ROOT / "var" / "named_papers"


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for question in questions:
        if question["expect"] not in ("answer", "not_named") or not question["papers"]:
            raise ValueError(f"{question['id']}: expect answer|not_named, with the named papers")
    return questions


def ask(client: httpx.Client, base: str, question: dict) -> dict:
    response = client.post(f"{base}/v1/ask", json={"query": question["question"]}, timeout=300)
    response.raise_for_status()
    body = response.json()
    cited = list(dict.fromkeys(c["doc_id"] for c in body["citations"]))
    named = [doc_id for doc_id in cited if doc_id in question["papers"]]
    record = {"id": question["id"], "expect": question["expect"], "question": question["question"],
              "covered": body["covered"], "cited": cited, "answer": body["answer"]}  # fmt: skip
    if question["expect"] == "answer":
        record.update(named=bool(named), first=bool(cited) and cited[0] in question["papers"],
                      others=any(doc_id not in question["papers"] for doc_id in cited))  # fmt: skip
    else:
        record.update(kept_out=not named)
    return record


def summarize(records: list[dict]) -> dict:
    answer = [r for r in records if r["expect"] == "answer"]
    kept = [r for r in records if r["expect"] == "not_named"]

    def share(rows: list[dict], key: str) -> float | None:
        return round(sum(r[key] for r in rows) / len(rows), 3) if rows else None

    return {"named answered": share(answer, "named"), "named first": share(answer, "first"),
            "others cited": share(answer, "others"), "named kept out": share(kept, "kept_out"),
            "questions": len(records)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.named_papers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_config_arguments(parser)
    parser.add_argument("--index", type=Path, default=REPO_ROOT / "var" / "index")
    args = parser.parse_args()
    configs = configs_from(args)
    questions = load_questions()
    DETAILS.mkdir(parents=True, exist_ok=True)
    results = {}
    for config in configs:
        with served(args.index.resolve(), "cpu", config.env, config.repo) as (_, base), httpx.Client() as client:
            records = [ask(client, base, question) for question in questions]
        (DETAILS / f"{config.label}.json").write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n")
        results[config.label] = {"settings": config.env, "commit": git_commit(config.repo), "machine": machine(),
                                 "summary": summarize(records)}  # fmt: skip
        print(config.label, json.dumps(results[config.label]["summary"]), flush=True)
    payload = {"questions": relative(QUESTIONS), "configs": results}
    print(f"wrote {relative(write_results('named_papers', payload))}")


if __name__ == "__main__":
    main()

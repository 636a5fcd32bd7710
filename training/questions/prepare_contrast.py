"""Draw the abstracts for contrastive near misses (issue 20's judge) and write them as batches under var/ (never
committed: the abstracts are the publishers' text). Each entry is an abstract the reranker trained on, with its
written paraphrase question and the sentences that answer it, and the way its near miss should differ: the
writer asks, in the same voice, about the same topic, something the abstract does not answer, so the pair (the
paraphrase answered, the near miss not, one abstract) teaches a judge what is asked, not what the topic is.

    python -m training.questions.prepare_contrast --batches 8 --abstracts 1200
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from training.corpus import REPO_ROOT, load_training_corpus
from training.questions.dataset import load_paraphrases
from training.questions.prepare import describe

# Outcome and population first: the development set's hardest near misses ask about an outcome the paper never
# measures (adult earnings of a voucher lottery's winners) or a group it never studies.
DIFFERENCES = ("outcome", "population", "outcome", "country", "period", "mechanism", "population", "outcome")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.questions.prepare_contrast", description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "var" / "questions" / "contrast")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--abstracts", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=2028)
    args = parser.parse_args(argv)
    documents = load_training_corpus()
    # The judge's training questions: the paraphrases outside the validation split (the held-out ones, with the
    # topical and unanswerable questions, fit the decision over the judge, so the judge must not see them).
    paraphrases = sorted((q for q in load_paraphrases() if not q.is_validation), key=lambda q: q.question_id)
    random.Random(args.seed).shuffle(paraphrases)
    chosen = paraphrases[: args.abstracts]
    args.out.mkdir(parents=True, exist_ok=True)
    for batch in range(args.batches):
        entries = []
        for number, question in enumerate(chosen[batch :: args.batches]):
            entries.append({**describe(documents[question.doc_id]), "paraphrase_id": question.question_id,
                            "paraphrase": question.question, "answer_sentences": list(question.answer_sentences),
                            "differ_by": DIFFERENCES[number % len(DIFFERENCES)]})  # fmt: skip
        path = args.out / f"batch_{batch + 1:02d}.json"
        path.write_text(json.dumps({"batch": batch + 1, "abstracts": entries}, ensure_ascii=False, indent=1) + "\n",
                        encoding="utf-8")  # fmt: skip
        print(f"{path.relative_to(REPO_ROOT)}: {len(entries)} abstracts")


if __name__ == "__main__":
    main()

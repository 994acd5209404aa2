"""Issue 47 row 8: invisible characters, look-alike and math-bold letters change no verdict.

The four forms of one failing question travel as real OTel traffic through the collector, are
judged by the job's offline judges and grouped by golden growth; each is judged as the plain
one is, all four land in one candidate, and the stored record keeps the text as it was sent.
"""

from __future__ import annotations

from typing import Any

from test_run_support import Turn, send, settings, wait_stored

from ragsieve.evaluators.records import normalize_text
from ragsieve.evaluators.tools.lookalike import matching_text
from ragsieve.jobs.run.run import run_once

Q = "How many vacation days do new employees get per year?"
FORMS = {
    "plain": Q,
    # zero-width space, word joiner and soft hyphen inside words
    "invisible": Q.replace("employees", "empl\u200boyees")
    .replace("vacation", "vaca\u2060tion")
    .replace("year", "ye\u00adar"),
    # Cyrillic а, о, е for the Latin letters
    "homoglyph": Q.replace("vacation", "v\u0430c\u0430ti\u043en").replace(
        "employees", "\u0435mploy\u0435\u0435s"
    ),
    "math_bold": Q.replace("vacation days", "𝐯𝐚𝐜𝐚𝐭𝐢𝐨𝐧 𝐝𝐚𝐲𝐬"),
}
CHUNKS = [
    "Our office cafeteria serves lunch from noon to 2 pm on weekdays.",
    "New employees receive 25 vacation days per year, rising to 30 after five years.",
]
ANSWER = "New employees get 20 vacation days per year."  # the chunks say 25: a failure


def test_a_flagged_failure_stays_flagged_in_every_form(collector: Any) -> None:
    ids = send(collector.traces_url, [Turn(q, CHUNKS, ANSWER) for q in FORMS.values()])
    wait_stored(collector.store, len(FORMS))
    out = run_once(collector.store, settings(store=collector.store.url), take_all=True)
    by_form = dict(zip(FORMS, ids, strict=True))
    results: dict[str, dict[str, tuple[str, float]]] = {}
    for tid, evaluator, label, score in collector.store.query(
        "SELECT trace_id, evaluator, label, score FROM results"
    ):
        results.setdefault(tid, {})[evaluator] = (label, score)
    plain = results[by_form["plain"]]
    assert plain["faithfulness"][0] == "unfaithful"
    assert plain["context_relevance"][0] == "relevant"
    for form, tid in by_form.items():
        assert results[tid] == plain, form  # same labels, same scores
    verdicts = dict(collector.store.query("SELECT trace_id, root_cause FROM samples"))
    assert out.report["flagged"] == len(FORMS)
    assert {verdicts[t] for t in ids} == {verdicts[by_form["plain"]]}
    golden = out.report["golden"]  # one question, one candidate seen four times
    assert golden["new_candidates"] == 1 and golden["merged_duplicates"] == 3
    for form, tid in by_form.items():  # what people are shown is what was sent
        it = collector.store.get_interaction(tid)
        assert it is not None and it.query == FORMS[form]


def test_normalize_text_removes_format_characters_and_folds_lookalikes() -> None:
    want = "how many vacation days do new employees get per year"
    assert {form: normalize_text(q) for form, q in FORMS.items()} == dict.fromkeys(FORMS, want)
    assert normalize_text("empl\u200boyees") == "employees"  # joined, not "empl oyees"
    assert normalize_text("\ufeffＦｕｌｌ\u200dwidth ﬁle") == "fullwidth file"
    assert normalize_text("Ｉ") == "i" and normalize_text("ǅ") == "dz"
    # text written in Cyrillic or Greek keeps its letters; a mixed word is read as Latin
    assert normalize_text("Какой пароль от сор?") == "какои пароль от сор"
    assert normalize_text("Ο Κόσμος") == "ο κοσμοσ"  # casefold: final sigma is sigma
    assert normalize_text("Какой p\u0430ssword?") == "какои password"
    assert normalize_text("Send the \u0440\u0430\u0440\u0435rs to me") == "send the papers to me"
    assert matching_text("V\u0430cation\u200b") == "Vacation"  # case kept for the judges
    assert matching_text(Q) is Q

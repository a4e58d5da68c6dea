"""Loaders read hostile files exactly or refuse them clearly: lines end at line feeds only
(U+2028 is data), names are kept exactly as written, errors name the file and the line and
quote a bounded excerpt."""

from __future__ import annotations

import json

import pytest

from grounding.datasets import load_musique, read_statements


def test_wd50k_lines_end_at_line_feeds_and_fields_are_kept_exactly(tmp_path):
    """A U+2028 inside a value is data, not a line break (a form feed or U+0085 is a control
    character: refused on its own line, not split there); a padded field is an error, never
    merged with the unpadded one; errors quote a bounded excerpt."""
    path = tmp_path / "s.txt"
    path.write_text("Q1,P1,Q2\u2028x,P3,Q4\nQ5,P1,Q6\r\n", encoding="utf-8")
    assert read_statements(path) == [
        ("Q1", "P1", "Q2\u2028x", (("P3", "Q4"),)),
        ("Q5", "P1", "Q6", ()),
    ]
    for bad, what in [
        ("Q1,P1,Q2\nQ1, P1,Q2\n", r"line 2: field 2 ' P1' has leading or trailing whitespace"),
        ("Q1,P1,Q\x002\n", r"line 1: field 3 'Q\\x002' holds the control character"),
        ("Q1,P1,Q2\nQ1,P1,Q\x0c2,P3,Q4\n", r"line 2: field 3 'Q\\x0c2' holds the control"),
        ("Q1,P1,Q2\nQ1,P1,Q2,P3,Q\x854\n", r"line 2: field 5 'Q\\x854' holds the control"),
        (b"Q1,P1,Q2\n\xff\n", r"line 2: not UTF-8"),
    ]:
        path.write_bytes(bad if isinstance(bad, bytes) else bad.encode())
        with pytest.raises(ValueError, match=rf"s.txt, {what}"):
            read_statements(path)
    path.write_text("Q1,P1" + "x" * 5_000_000 + "\n")
    with pytest.raises(ValueError, match="s.txt, line 1") as info:
        read_statements(path)
    assert len(str(info.value)) < 400


def _musique_line(question: str = "Who is #1?", qid: object = "q1") -> str:
    steps = [{"question": "Who?", "answer": "A"}, {"question": "#1 where?", "answer": "B"}]
    row = {"id": qid, "question": question, "question_decomposition": steps, "answer": "B"}
    return json.dumps(row, ensure_ascii=False)


def test_musique_keeps_a_raw_line_separator_inside_a_json_string(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(_musique_line("Who\u2028is?") + "\n" + _musique_line(qid=7) + "\n", "utf-8")
    got = load_musique(path)
    assert [q.text for q in got] == ["Who\u2028is?", "Who is #1?"] and got[1].id == "7"


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("[1, 2]", "expected a JSON object, got list"),
        (_musique_line(qid=1.5), "id must be a string or an integer"),
        (_musique_line(qid=["x"] * 1_000_000), "id must be a string or an integer"),
        (_musique_line(question=["x"] * 1_000_000), "expected text"),
        ('{"id": "' + "x" * 5_000_000, "Unterminated string"),
    ],
)
def test_musique_bad_lines_name_file_and_line_briefly(tmp_path, line, what):
    path = tmp_path / "m.jsonl"
    path.write_text(_musique_line() + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"m.jsonl, line 2: {what}") as info:
        load_musique(path)
    assert len(str(info.value)) < 400

"""Corpus readers: every supported format, and the bad input the issue lists (reported, never fatal)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from agentgym_knowledge.readers import ReadReport, chunk_text, read_passages

MEDQUAD_XML = """<?xml version="1.0" encoding="UTF-8"?>
<Document id="0000042" source="TESTSRC" url="https://example.org/x">
<Focus>Made-up Syndrome</Focus>
<QAPairs>
<QAPair pid="1"><Question qid="0000042-1" qtype="information">What is made-up syndrome ?</Question>
<Answer>Made-up syndrome is a condition invented for this test. It has no symptoms.</Answer></QAPair>
<QAPair pid="2"><Question qid="0000042-2" qtype="treatment">How to treat it ?</Question><Answer></Answer></QAPair>
<QAPair pid="3"><Question qid="0000042-3" qtype="causes">What causes it ?</Question>
<Answer>Nothing causes it, since it does not exist.</Answer></QAPair>
</QAPairs>
</Document>
"""


def read(paths: list[Path], **options: int) -> tuple[list, ReadReport]:
    report = ReadReport()
    return list(read_passages(paths, report=report, **options)), report


def test_jsonl_with_id_text_title_source(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "Alpha text.", "title": "A", "source": "s1"}) + "\n"
                    + json.dumps({"id": "b", "text": "Beta text."}) + "\n")
    passages, report = read([path])
    assert [(p.id, p.text, p.title, p.source) for p in passages] == [
        ("a", "Alpha text.", "A", "s1"), ("b", "Beta text.", "", "c")]  # source defaults to the file's stem
    assert report.problems == []


def test_medrag_jsonl_prefers_content_over_contents(tmp_path: Path) -> None:
    path = tmp_path / "textbook.jsonl"
    path.write_text(json.dumps({"id": "m1", "title": "Anatomy", "content": "The heart has four chambers.",
                                "contents": "Anatomy. The heart has four chambers."}) + "\n"
                    + json.dumps({"id": "m2", "title": "Physiology", "contents": "Blood carries oxygen."}) + "\n")
    passages, _ = read([path])
    assert [(p.id, p.text, p.title) for p in passages] == [
        ("m1", "The heart has four chambers.", "Anatomy"), ("m2", "Blood carries oxygen.", "Physiology")]


def test_medquad_xml_folder(tmp_path: Path) -> None:
    folder = tmp_path / "8_TEST_QA_XML"
    folder.mkdir()
    (folder / "0000042.xml").write_text(MEDQUAD_XML)
    passages, report = read([tmp_path])
    assert [p.id for p in passages] == ["8_0000042_1", "8_0000042_3"]  # the empty answer is not a passage
    assert passages[0].title == "Made-up Syndrome" and passages[0].source == "TESTSRC"
    assert passages[1].text == "Nothing causes it, since it does not exist."
    assert report.problems == []


def test_plain_text_split_at_sentences_with_overlap(tmp_path: Path) -> None:
    sentences = [f"Sentence number {i} has exactly seven words." for i in range(30)]  # 7 words each
    (tmp_path / "notes.txt").write_text(" ".join(sentences))
    passages, report = read([tmp_path / "notes.txt"], chunk_size=30, overlap=10)
    assert len(passages) > 1
    for passage in passages:
        assert len(passage.text.split()) <= 30
        assert passage.text.startswith("Sentence") and passage.text.endswith("words.")  # whole sentences
        assert passage.document_id == "notes"
    for first, second in itertools.pairwise(passages):
        assert first.text.split(". ")[-1] in second.text  # consecutive chunks share the last sentence
    assert [p.id for p in passages] == [f"notes#{i}" for i in range(len(passages))]
    assert report.split_documents == 0  # text files are expected to be cut; that is not a warning


def test_chunk_text_cuts_a_sentence_longer_than_the_chunk() -> None:
    chunks = chunk_text(" ".join(["word"] * 95) + ".", chunk_size=40, overlap=5)
    assert all(len(chunk.split()) <= 40 for chunk in chunks)
    assert sum(len(chunk.split()) for chunk in chunks) >= 95


def test_malformed_lines_reported_with_file_and_line_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([
        json.dumps({"id": "ok1", "text": "Fine."}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"id": "no-text", "title": "nothing else"}),
        json.dumps({"id": "ok2", "text": "Also fine."}),
    ]) + "\n")
    passages, report = read([path])
    assert [p.id for p in passages] == ["ok1", "ok2"]
    assert report.malformed == 3
    assert [problem.split(": ")[0] for problem in report.problems] == [f"{path}:2", f"{path}:3", f"{path}:4"]
    assert "not valid JSON" in report.problems[0] and "'text'" not in report.problems[0]
    assert "text, content, contents, answer" in report.problems[2]


def test_duplicate_ids_keep_first_and_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps({"id": "x", "text": "First."}) + "\n" + json.dumps({"id": "x", "text": "Second."})
                    + "\n")
    passages, report = read([path])
    assert [p.text for p in passages] == ["First."]
    assert report.duplicates == 1 and f"{path}:2: duplicate id 'x'" in report.problems[0]


def test_huge_passage_split_and_said_so(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    huge = " ".join(f"Fact {i} is stated here." for i in range(200))  # 1,000 words
    path.write_text(json.dumps({"id": "big", "text": huge}) + "\n")
    passages, report = read([path], chunk_size=100, overlap=10)
    assert len(passages) >= 10 and all(len(p.text.split()) <= 100 for p in passages)
    assert {p.document_id for p in passages} == {"big"}
    assert report.split_documents == 1
    assert any("split into" in line for line in report.summary())


def test_non_utf8_file_decoded_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps({"id": "c", "text": "Caf\u00e9 au lait spots"}, ensure_ascii=False)
                     .encode("cp1252") + b"\n")
    passages, report = read([path])
    assert passages[0].text == "Caf\u00e9 au lait spots"
    assert "not valid UTF-8" in report.problems[0] and "cp1252" in report.problems[0]


def test_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read([tmp_path / "nope.jsonl"])

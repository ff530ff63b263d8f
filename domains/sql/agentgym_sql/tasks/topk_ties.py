"""Top-k with ties: maxima that several rows share, ties-inclusive top-k, and fully ordered top-k."""

from __future__ import annotations

from .base import Context, Draft, group_note, output_column, skip_missing, with_evidence

FAMILY = "topk_ties"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        table = ctx.pick_table("measure")
        if table is None:
            break
        measure = rng.choice(table.with_role("measure"))
        column, words = output_column(table)
        kind = rng.choice(("extreme", "extreme", "top_k_ties", "ordered_top_k", "most_common"))
        condition = ctx.condition(table, kinds=("category",)) if rng.random() < 0.5 else None
        where = f" WHERE {condition.sql}" if condition else ""
        also = f" AND {condition.sql}" if condition else ""
        scope = f"{table.plural} {condition.phrase}" if condition else table.plural
        if kind == "extreme":
            function, word = rng.choice((("MAX", "highest"), ("MIN", "lowest")))
            gold = (f"SELECT {column.name} FROM {table.name} WHERE {measure.name} = (SELECT {function}({measure.name}) "
                    f"FROM {table.name}{where}){also}")
            question = rng.choice((
                f"Which of the {scope} have the {word} {measure.words}? List every tied {words}.",
                f"Give the {words} of all {scope} sharing the {word} {measure.words}.",
            ))
            drafts.append(Draft(FAMILY, question, gold, match="multiset", difficulty="moderate",
                                evidence=with_evidence(rng, condition),
                                notes=((f"Give one row per {table.noun}: two of them with the same {words} make "
                                       "two rows."),)))
        elif kind == "top_k_ties":
            k = rng.choice((3, 5, 10))
            gold = (f"SELECT {column.name}, {measure.name} FROM (SELECT {column.name}, {measure.name}, RANK() OVER "
                    f"(ORDER BY {measure.name} DESC) AS position FROM {table.name} WHERE {measure.name} IS NOT NULL"
                    f"{also}) AS ranked WHERE position <= {k}")
            question = rng.choice((
                (f"List the top {k} {scope} by {measure.words}, keeping any rows tied with the {k}th. Show {words} "
                f"and {measure.words}."),
                (f"Which {scope} rank in the top {k} by {measure.words} when ties share a rank? Return {words} and "
                f"{measure.words}."),
            ))
            drafts.append(Draft(FAMILY, question, gold, match="multiset", difficulty="challenging",
                                evidence=with_evidence(rng, condition), notes=(skip_missing(table, measure),)))
        elif kind == "ordered_top_k" and table.key is not None:
            k = rng.choice((3, 5, 8))
            key = table.key
            gold = (f"SELECT {column.name}, {measure.name} FROM {table.name} WHERE {measure.name} IS NOT NULL{also} "
                    f"ORDER BY {measure.name} DESC, {key.name} ASC LIMIT {k}")
            question = rng.choice((
                (f"Show the {k} {scope} with the largest {measure.words}, largest first; break ties by {table.noun} "
                f"{key.words} ascending. Return {words} and {measure.words}."),
                (f"Order {scope} by {measure.words} descending (then {table.noun} {key.words} ascending) and give the "
                f"first {k}: {words} and {measure.words}."),
            ))
            drafts.append(Draft(FAMILY, question, gold, match="ordered", difficulty="moderate",
                                evidence=with_evidence(rng, condition), notes=(skip_missing(table, measure),)))
        else:
            groups = [c for c in table.with_role("category") if not c.messy]
            if not groups:
                continue
            group = rng.choice(groups)
            present = f" WHERE {group.name} IS NOT NULL" if group.nullable else ""
            gold = (f"SELECT {group.name} FROM {table.name}{present} GROUP BY {group.name} HAVING COUNT(*) = "
                    f"(SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM {table.name}{present} GROUP BY {group.name}) "
                    "AS counts)")
            question = rng.choice((
                f"Which {group.words} is the most common among {table.plural}? If several tie, list them all.",
                f"Find the {group.words} value(s) with the most {table.plural}, including ties.",
            ))
            drafts.append(Draft(FAMILY, question, gold, match="set", difficulty="moderate",
                                answer_mode=False, notes=(group_note(table, group),)))
    return drafts

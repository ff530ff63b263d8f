"""Nested queries: comparisons with a subquery's aggregate, IN / NOT IN / EXISTS over related tables."""

from __future__ import annotations

from .base import Condition, Context, Draft, group_note, output_column, skip_missing, with_evidence

FAMILY = "nested"


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    edges = [e for e in ctx.references() if not e[0].large and not e[2].large]
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        kind = rng.choice(("above_average", "above_average", "exists", "not_in", "max_per_group"))
        if kind == "above_average":
            table = ctx.pick_table("measure", "category")
            if table is None:
                continue
            measure = rng.choice(table.with_role("measure"))
            condition = ctx.condition(table, kinds=("category",))
            if condition is None:
                continue
            narrower = ctx.condition(table, kinds=("category", "date"), avoid=(measure.name,))
            if narrower is not None and narrower.sql != condition.sql and rng.random() < 0.6:
                condition = Condition(f"{condition.sql} AND {narrower.sql}", f"{condition.phrase} and {narrower.phrase}",
                                      "; ".join(filter(None, (condition.evidence, narrower.evidence))),
                                      condition.always_explain or narrower.always_explain)
            column, words = output_column(table)
            gold = (f"SELECT {column.name} FROM {table.name} WHERE {condition.sql} AND {measure.name} > "
                    f"(SELECT AVG({measure.name}) FROM {table.name} WHERE {condition.sql})")
            question = rng.choice((
                (f"Among {table.plural} {condition.phrase}, which have a {measure.words} above the average "
                f"{measure.words} of that group? Give their {words}."),
                (f"List the {words} of {table.plural} {condition.phrase} whose {measure.words} is higher than "
                f"the group's mean {measure.words}."),
            ))
            # The group's average must matter: not every member is above it, and neither the whole table's average
            # nor (for two conditions) the average of a wider group splits the members the same way.
            everyone = f"SELECT {column.name} FROM {table.name} WHERE {condition.sql}"
            wider = [f"{gold.rsplit(' WHERE ', 1)[0]}{f' WHERE {part}' if part else ''})"
                     for part in ("", *(condition.sql.split(" AND ", 1) if " AND " in condition.sql else ()))]
            drafts.append(Draft(FAMILY, question, gold, difficulty="moderate",
                                evidence=with_evidence(rng, condition), decoys=(everyone, *wider),
                                notes=(f"The average skips missing {measure.words} values, and {table.plural} with "
                                       f"no {measure.words} are not above it." if measure.nullable else "",)))
        elif kind in ("exists", "not_in") and edges:
            child, fk, parent, key = rng.choice(edges)
            column, words = output_column(parent)
            if kind == "exists":
                condition = ctx.condition(child, alias="c")
                if condition is None:
                    continue
                gold = (f"SELECT p.{column.name} FROM {parent.name} AS p WHERE EXISTS (SELECT 1 FROM {child.name} "
                        f"AS c WHERE c.{fk.name} = p.{key.name} AND {condition.sql})")
                question = rng.choice((
                    f"Which {parent.plural} have at least one {child.noun} {condition.phrase}? Give their {words}.",
                    f"List the {words} of {parent.plural} for which some {child.noun} {condition.phrase} exists.",
                ))
                # Where the condition keeps every parent, or every parent with a child, it is not asked.
                decoys = (f"SELECT {column.name} FROM {parent.name}",
                          (f"SELECT p.{column.name} FROM {parent.name} AS p WHERE EXISTS (SELECT 1 FROM {child.name} "
                          f"AS c WHERE c.{fk.name} = p.{key.name})"))
                drafts.append(Draft(FAMILY, question, gold, difficulty="moderate",
                                    evidence=with_evidence(rng, condition), decoys=decoys))
            else:
                # NOT IN over a nullable column returns nothing in SQL; the gold guards it, the hint says so.
                gold = (f"SELECT {column.name} FROM {parent.name} WHERE {key.name} NOT IN (SELECT {fk.name} FROM "
                        f"{child.name} WHERE {fk.name} IS NOT NULL)")
                question = rng.choice((
                    f"Which {parent.plural} have no {child.plural} at all? Give their {words}.",
                    f"List the {words} of {parent.plural} that no {child.noun} refers to.",
                ))
                evidence = (f"{child.name}.{fk.name} can be NULL; exclude NULLs inside NOT IN"
                            if fk.nullable else None)
                drafts.append(Draft(FAMILY, question, gold, difficulty="challenging", evidence=evidence))
        elif kind == "max_per_group":
            table = ctx.pick_table("measure", "category")
            if table is None:
                continue
            groups = [c for c in table.with_role("category") if not c.messy]
            if not groups:
                continue
            group, measure = rng.choice(groups), rng.choice(table.with_role("measure"))
            column, words = output_column(table)
            # Joined to the per-group maximum rather than correlated: the same answer without a quadratic scan.
            # The join on the group leaves out the group of missing values (NULL = NULL is not true): said below.
            gold = (f"SELECT t.{group.name}, t.{column.name}, t.{measure.name} FROM {table.name} AS t JOIN "
                    f"(SELECT {group.name}, MAX({measure.name}) AS top FROM {table.name}"
                    f"{f' WHERE {group.name} IS NOT NULL' if group.nullable else ''} GROUP BY {group.name}) AS best "
                    f"ON t.{group.name} = best.{group.name} AND t.{measure.name} = best.top")
            question = rng.choice((
                (f"For each {group.words}, which {table.noun} has the highest {measure.words}? Show the "
                f"{group.words}, the {words} and the {measure.words}; include ties."),
                (f"Find, per {group.words}, the {table.plural} whose {measure.words} equals the maximum within "
                f"that {group.words} (all ties). Return {group.words}, {words}, {measure.words}."),
            ))
            # Where every group's maximum is the overall one, the question does not need its grouping.
            overall = (f"SELECT {group.name}, {column.name}, {measure.name} FROM {table.name} WHERE {measure.name} = "
                       f"(SELECT MAX({measure.name}) FROM {table.name})"
                       f"{f' AND {group.name} IS NOT NULL' if group.nullable else ''}")
            drafts.append(Draft(FAMILY, question, gold, difficulty="challenging",
                                notes=(group_note(table, group), skip_missing(table, measure)), decoys=(overall,)))
    return drafts

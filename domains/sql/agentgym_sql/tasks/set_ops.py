"""Set operations: UNION, INTERSECT and EXCEPT across conditions or across tables sharing a column."""

from __future__ import annotations

from .base import Context, Draft, output_column, with_evidence

FAMILY = "set_ops"

_WORDS = {"UNION": ("either", "or"), "INTERSECT": ("both", "and"), "EXCEPT": ("", "but not")}


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    shared = [(a, b, ca, cb) for a in ctx.tables() for b in ctx.tables() if a.name < b.name
              for ca in a.columns for cb in b.columns
              if ca.name == cb.name and ca.role in ("category", "label") and cb.role in ("category", "label")]
    for _ in range(count * 4):
        if len(drafts) >= count:
            break
        operation = rng.choice(("UNION", "INTERSECT", "EXCEPT"))
        if shared and rng.random() < 0.3:
            left, right, column_a, column_b = rng.choice(shared)
            # Missing values are no value of the column: left out on both sides, and the prompt says so.
            keep_a = f" WHERE {column_a.name} IS NOT NULL" if column_a.nullable else ""
            keep_b = f" WHERE {column_b.name} IS NOT NULL" if column_b.nullable else ""
            gold = (f"SELECT {column_a.name} FROM {left.name}{keep_a} {operation} SELECT {column_b.name} FROM "
                    f"{right.name}{keep_b}")
            words = column_a.words
            question = {
                "UNION": f"Which {words} values appear among {left.plural} or among {right.plural}?",
                "INTERSECT": f"Which {words} values appear among both {left.plural} and {right.plural}?",
                "EXCEPT": f"Which {words} values appear among {left.plural} but never among {right.plural}?",
            }[operation] + " List each value once, exactly as stored."
            drafts.append(Draft(FAMILY, question, gold, difficulty="moderate", decoys=_operands(gold, operation),
                                notes=("A missing (NULL) value is not a value: leave it out."
                                       if keep_a or keep_b else "",)))
            continue
        table = ctx.pick_table()
        if table is None:
            break
        first = ctx.condition(table)
        second = ctx.condition(table)
        if first is None or second is None or first.sql == second.sql:
            continue
        column, words = output_column(table)
        gold = (f"SELECT {column.name} FROM {table.name} WHERE {first.sql} {operation} "
                f"SELECT {column.name} FROM {table.name} WHERE {second.sql}")
        question = {
            "UNION": rng.choice((
                f"Give the distinct {words} values of {table.plural} that are {first.phrase} or {second.phrase}.",
                (f"Combine (without duplicates) the {words} of {table.plural} {first.phrase} with those of "
                f"{table.plural} {second.phrase}."))),
            "INTERSECT": rng.choice((
                (f"Which {words} values occur both among {table.plural} {first.phrase} and among {table.plural} "
                f"{second.phrase}?"),
                (f"Find the {words} values shared by {table.plural} {first.phrase} and {table.plural} "
                f"{second.phrase}."))),
            "EXCEPT": rng.choice((
                (f"Which {words} values belong to {table.plural} {first.phrase} but to no {table.noun} "
                f"{second.phrase}?"),
                (f"List the {words} values found among {table.plural} {first.phrase}, removing any that also occur "
                f"among {table.plural} {second.phrase}."))),
        }[operation]
        drafts.append(Draft(FAMILY, question, gold, difficulty="moderate" if operation == "UNION" else "challenging",
                            evidence=with_evidence(rng, first, second), decoys=_operands(gold, operation)))
    return drafts


def _operands(gold: str, operation: str) -> tuple[str, ...]:
    """Each side of the set operation alone: where one of them is the answer (an EXCEPT that removes nothing,
    playtest #34), the question does not test its operation."""
    return tuple(gold.split(f" {operation} "))

"""Hard tier: units shipped in a category and all its subcategories, from one warehouse, in one period.

The work: walk the category tree to any depth (a recursive query: the tree is three or four levels deep and
products hang on inner nodes too), tie order lines to their order's shipment and its warehouse code, and read
ship dates written in four formats. The decoys stop one level down, take the category alone, or compare the
raw date text.
"""

from __future__ import annotations

from .base import Context, Draft
from .erp import KIND, PER_DATABASE, iso_day, naive_between, period

FAMILY = "rollups"
__all__ = ["FAMILY", "KIND", "PER_DATABASE", "generate"]


def generate(ctx: Context, count: int) -> list[Draft]:
    drafts: list[Draft] = []
    rng = ctx.rng
    inner = [row[0] for row in ctx.run(
        "SELECT p.category_name FROM categories AS p WHERE EXISTS (SELECT 1 FROM categories AS c JOIN categories "
        "AS g ON g.parent_id = c.category_id WHERE c.parent_id = p.category_id) ORDER BY 1")]
    warehouses = [row[0] for row in ctx.run("SELECT warehouse_code FROM warehouses ORDER BY 1")]
    for _ in range(count):
        category, warehouse = rng.choice(inner), rng.choice(warehouses)
        words, first, last = period(ctx)
        tree = (f"WITH RECURSIVE tree(category_id) AS (SELECT category_id FROM categories WHERE category_name = "
                f"'{category}' UNION ALL SELECT c.category_id FROM categories AS c JOIN tree AS t ON c.parent_id = "
                "t.category_id) ")
        one_level = (f"WITH tree(category_id) AS (SELECT category_id FROM categories WHERE category_name = "
                     f"'{category}' UNION ALL SELECT c.category_id FROM categories AS c JOIN categories AS t ON "
                     f"c.parent_id = t.category_id WHERE t.category_name = '{category}') ")
        alone = f"WITH tree(category_id) AS (SELECT category_id FROM categories WHERE category_name = '{category}') "
        body = ("SELECT COALESCE(SUM(l.quantity), 0) FROM order_lines AS l JOIN products AS p ON p.product_id = "
                "l.product_id JOIN shipments AS sh ON sh.order_id = l.order_id JOIN warehouses AS w ON "
                "w.warehouse_id = sh.warehouse_id WHERE p.category_id IN (SELECT category_id FROM tree) AND "
                f"w.warehouse_code = '{warehouse}' AND ")
        dates = f"{iso_day('sh.shipped_at')} BETWEEN '{first}' AND '{last}'"
        gold = tree + body + dates
        question = rng.choice((
            (f"How many units of products in the category '{category}', counting every subcategory below it at any "
             f"depth, were shipped from warehouse {warehouse} in {words}?"),
            (f"Count the units shipped from warehouse {warehouse} in {words} whose product belongs to '{category}' "
             "or to any category under it (children, their children, and so on)."),
            (f"In {words}, what quantity of '{category}' products, subcategories at every level included, left "
             f"warehouse {warehouse}?"),
        ))
        notes = (("Count the quantities on the order lines of every order shipped from that warehouse in that period "
                 "(by its shipment date); returns do not change the count. Answer with one number."),)
        traps = (tree + body + naive_between("sh.shipped_at", first, last), one_level + body + dates,
                  alone + body + dates)
        drafts.append(Draft(FAMILY, question, gold, difficulty="challenging", answer_mode=True, single=True,
                            notes=notes, traps=traps))
    return drafts

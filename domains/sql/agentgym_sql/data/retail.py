"""Retail: customers, stores, products, orders and order lines (about 30,000 rows)."""

from __future__ import annotations

import random

from .schema import Column, DatabaseSpec, Rows, Table, key, ref
from .vocab import CITIES, day, maybe, messy, moment, person_name

CATEGORIES = {
    "Books": ("Atlas", "Cookbook", "Novel", "Poetry Reader", "Travel Guide"),
    "Electronics": ("Headphones", "Keyboard", "Monitor", "Router", "Webcam"),
    "Garden": ("Hose", "Planter", "Rake", "Seed Kit", "Shovel"),
    "Kitchen": ("Blender", "Kettle", "Knife Set", "Skillet", "Toaster"),
    "Toys": ("Board Game", "Kite", "Puzzle", "Robot Kit", "Yo-yo"),
}
BRANDS = ("Acme", "Borealis", "Cobalt", "Dune", "Ember", "Fjord")

TABLES = (
    Table("customers", "customer", "customers", (
        key("customer_id"),
        Column("full_name", "text", role="label", phrase="name", messy=True),
        Column("email", "text", nullable=True),
        Column("city", "text", role="category", messy=True),
        Column("segment", "text", role="category", phrase="customer segment"),
        Column("signup_date", "date", role="date", phrase="sign-up date"),
    )),
    Table("stores", "store", "stores", (
        key("store_id"),
        Column("store_name", "text", role="label", phrase="name"),
        Column("city", "text", role="category"),
        Column("opened_on", "date", role="date", phrase="opening date"),
    )),
    Table("products", "product", "products", (
        key("product_id"),
        Column("product_name", "text", role="label", phrase="name"),
        Column("category", "text", role="category"),
        Column("brand", "text", role="category"),
        Column("unit_price", "money", role="measure", phrase="unit price"),
        Column("stock", "integer", role="measure", phrase="units in stock", nullable=True),
    )),
    Table("orders", "order", "orders", (
        key("order_id"),
        ref("customer_id", "customers.customer_id"),
        ref("store_id", "stores.store_id", nullable=True),
        Column("order_date", "date", role="date", phrase="order date"),
        Column("status", "text", role="category", phrase="order status"),
        Column("shipped_at", "timestamp", role="date", phrase="shipping time", nullable=True),
    )),
    Table("order_items", "order line", "order lines", (
        key("item_id"),
        ref("order_id", "orders.order_id"),
        ref("product_id", "products.product_id"),
        Column("quantity", "integer", role="measure"),
        Column("discount", "real", role="measure", phrase="discount rate", nullable=True),
    )),
)


def build_rows(rng: random.Random, scale: int) -> Rows:
    customers = []
    for customer_id in range(1, 2001):
        name = person_name(rng)
        email = maybe(rng, name.lower().replace(" ", ".") + f"{customer_id}@example.com", 0.12)
        customers.append((customer_id, messy(rng, name, 0.08), email, messy(rng, rng.choice(CITIES), 0.1),
                          rng.choices(("Consumer", "Corporate", "Home Office"), (6, 3, 1))[0],
                          day(rng, "2019-01-01", "2024-06-30")))
    stores = [(i, f"{city} {suffix}", city, day(rng, "2015-01-01", "2021-12-31"))
              for i, (city, suffix) in enumerate(((c, s) for c in CITIES[:8] for s in ("Central", "Outlet")), 1)]
    products = []
    for product_id in range(1, 301):
        category = rng.choice(tuple(CATEGORIES))
        name = f"{rng.choice(BRANDS)} {rng.choice(CATEGORIES[category])} {product_id}"
        price = float(rng.choice((5, 10, 15, 20, 25, 40, 60, 99, 150, 250))) if rng.random() < 0.4 \
            else round(rng.uniform(3, 400), 2)
        products.append((product_id, name, category, rng.choice(BRANDS), price,
                         maybe(rng, rng.randint(0, 500), 0.1)))
    orders, items = [], []
    statuses = ("delivered", "delivered", "delivered", "shipped", "processing", "cancelled", "returned")
    for order_id in range(1, 8001):
        date = day(rng, "2021-01-01", "2024-12-31")
        status = rng.choice(statuses)
        shipped = None if status in ("processing", "cancelled") else moment(rng, date, date)
        orders.append((order_id, rng.randint(1, 2000), maybe(rng, rng.randint(1, len(stores)), 0.2), date,
                       status, shipped))
    for item_id in range(1, 20001):
        items.append((item_id, rng.randint(1, 8000), rng.randint(1, 300), rng.choice((1, 1, 1, 2, 2, 3, 5)),
                      maybe(rng, rng.choice((0.05, 0.1, 0.15, 0.2)), 0.7)))
    return {"customers": customers, "stores": stores, "products": products, "orders": orders,
            "order_items": items}


SPEC = DatabaseSpec(
    name="retail", split="train", tables=TABLES, build_rows=build_rows,
    description="An online and in-store retailer: customers, stores, products, orders and order lines.",
)

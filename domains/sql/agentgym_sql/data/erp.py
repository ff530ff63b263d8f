"""ERP: a wholesale distributor's operational database, 33 tables wide, with the mess real systems keep.

The hard tier's databases. One schema, several instances (`SPECS`), each built from its own seed and its own
profile (how often dates are written in each format, how many records were merged, which currencies it trades
in, the shape of its category tree), so the same question has other facts and another answer on each.
Train tasks use `erp_north` and `erp_east`, test tasks `erp_south` and `erp_west`.

What a careful analyst has to find out by looking (nothing in the schema says it):
- `orders.order_date` and `shipments.shipped_at` are text in several formats ('2024-03-05', '2024/03/05',
  '20240305', '05 Mar 2024'), so text comparison and ordering on them go wrong;
- `orders.channel` is typed by hand: 'web', 'Web ', ' WEB' are the same channel;
- customers registered twice were merged: the duplicate record stays, pointing at the surviving one through
  `merged_into`, and old orders still reference the duplicate;
- amounts are in the order's currency (`fx_rates` has a rate to USD per currency and month);
- `order_lines.discount_pct` is NULL where no discount was given;
- order ids were assigned by several systems, so they do not follow the order dates;
- delivery events are sometimes logged twice; payments may be partial, late or reversed.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from .schema import Column, DatabaseSpec, Rows, Table, key, ref
from .vocab import person_name

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
COUNTRIES = (  # code, name, region, currency, cities
    ("US", "United States", "Americas", "USD", ("Austin", "Boston", "Denver", "Seattle")),
    ("CA", "Canada", "Americas", "CAD", ("Toronto", "Calgary")),
    ("PT", "Portugal", "Europe", "EUR", ("Lisbon", "Porto")),
    ("ES", "Spain", "Europe", "EUR", ("Madrid", "Valencia")),
    ("FR", "France", "Europe", "EUR", ("Lyon", "Nantes")),
    ("NO", "Norway", "Europe", "NOK", ("Oslo", "Bergen")),
    ("CH", "Switzerland", "Europe", "CHF", ("Zurich", "Basel")),
    ("KE", "Kenya", "Africa", "KES", ("Nairobi", "Mombasa")),
    ("JP", "Japan", "Asia-Pacific", "JPY", ("Osaka", "Tokyo")),
)
CURRENCY_NAMES = {"USD": "US dollar", "CAD": "Canadian dollar", "EUR": "euro", "NOK": "Norwegian krone",
                  "CHF": "Swiss franc", "KES": "Kenyan shilling", "JPY": "Japanese yen"}
BASE_RATES = {"USD": 1.0, "CAD": 0.74, "EUR": 1.08, "NOK": 0.094, "CHF": 1.12, "KES": 0.0071, "JPY": 0.0069}
CATEGORY_WORDS = {
    "Electronics": ("Audio", "Cameras", "Computers", "Phones", "Wearables", "Television"),
    "Home": ("Kitchen", "Bedding", "Lighting", "Furniture", "Bath", "Decor"),
    "Outdoor": ("Camping", "Garden", "Cycling", "Fishing", "Climbing", "Water Sports"),
    "Office": ("Paper", "Writing", "Desks", "Printers", "Storage", "Mailing"),
    "Grocery": ("Coffee", "Tea", "Snacks", "Spices", "Baking", "Beverages"),
}
LEAF_WORDS = ("Basic", "Premium", "Compact", "Pro", "Travel", "Classic", "Eco", "Kids")
DEPARTMENTS = ("Executive", "Sales", "Operations", "Finance", "Warehouse", "Support", "Purchasing", "IT")
STATUSES = ((1, "NEW", "New"), (2, "SHP", "Shipped"), (3, "DLV", "Delivered"), (4, "CXL", "Cancelled"),
            (5, "RTN", "Returned"))
SEGMENTS = (("RET", "Retail"), ("SMB", "Small business"), ("ENT", "Enterprise"))
CHANNELS = ("web", "phone", "partner")
FIRST_DAY, LAST_DAY = dt.date(2023, 1, 1), dt.date(2024, 12, 31)


@dataclass(frozen=True)
class Profile:
    """What differs between two instances besides the seed: how messy, and what is traded."""

    countries: tuple[str, ...]  # country codes where customers live
    format_shares: tuple[int, int, int, int]  # ISO, slashes, compact, 'DD Mon YYYY' (weights)
    merged_share: float  # customers that are a merged duplicate
    null_discount_share: float
    tree_width: int  # subcategories per top category
    customers: int
    orders: int


def _c(name: str, kind: str = "text", *, nullable: bool = False, phrase: str = "") -> Column:
    # Roles stay "text": the generic families never run on these databases (they have their own families).
    return Column(name, kind, nullable=nullable, phrase=phrase)  # type: ignore[arg-type]


TABLES = (
    Table("regions", "region", "regions", (key("region_id"), _c("region_name"))),
    Table("countries", "country", "countries", (
        Column("country_code", "text", role="key", primary_key=True), _c("country_name"),
        ref("region_id", "regions.region_id"), _c("currency_code"))),
    Table("cities", "city", "cities", (key("city_id"), _c("city_name"), ref("country_code", "countries.country_code"))),
    Table("currencies", "currency", "currencies", (
        Column("currency_code", "text", role="key", primary_key=True), _c("currency_name"))),
    Table("fx_rates", "rate", "rates", (
        key("rate_id"), ref("currency_code", "currencies.currency_code"), _c("month"), _c("rate_to_usd", "real"))),
    Table("customer_segments", "segment", "segments", (
        Column("segment_code", "text", role="key", primary_key=True), _c("segment_label"))),
    Table("departments", "department", "departments", (key("department_id"), _c("department_name"))),
    Table("employees", "employee", "employees", (
        key("employee_id"), _c("full_name"), ref("department_id", "departments.department_id"),
        ref("manager_id", "employees.employee_id", nullable=True), _c("hired_on", "date"),
        _c("terminated_on", "date", nullable=True), _c("salary", "money"))),
    Table("customers", "customer", "customers", (
        key("customer_id"), _c("customer_name"), _c("email"), ref("city_id", "cities.city_id"),
        ref("segment_code", "customer_segments.segment_code"), _c("signup_date"),
        ref("merged_into", "customers.customer_id", nullable=True),
        ref("account_manager_id", "employees.employee_id", nullable=True))),
    Table("customer_contacts", "contact", "contacts", (
        key("contact_id"), ref("customer_id", "customers.customer_id"), _c("contact_type"), _c("contact_value"))),
    Table("categories", "category", "categories", (
        key("category_id"), _c("category_name"), ref("parent_id", "categories.category_id", nullable=True))),
    Table("suppliers", "supplier", "suppliers", (
        key("supplier_id"), _c("supplier_name"), ref("country_code", "countries.country_code"))),
    Table("products", "product", "products", (
        key("product_id"), _c("sku"), _c("product_name"), ref("category_id", "categories.category_id"),
        ref("supplier_id", "suppliers.supplier_id"), _c("unit_cost", "money"), _c("discontinued", "integer"))),
    Table("product_prices", "price", "prices", (
        key("price_id"), ref("product_id", "products.product_id"), _c("list_price_usd", "money"),
        _c("valid_from", "date"), _c("valid_to", "date", nullable=True))),
    Table("warehouses", "warehouse", "warehouses", (
        key("warehouse_id"), _c("warehouse_code"), ref("city_id", "cities.city_id"))),
    Table("inventory_snapshots", "snapshot", "snapshots", (
        key("snapshot_id"), ref("warehouse_id", "warehouses.warehouse_id"), ref("product_id", "products.product_id"),
        _c("snapshot_date", "date"), _c("qty_on_hand", "integer"))),
    Table("order_statuses", "status", "statuses", (key("status_id"), _c("status_code"), _c("status_label"))),
    Table("orders", "order", "orders", (
        key("order_id"), ref("customer_id", "customers.customer_id"), _c("order_date"),
        ref("status_id", "order_statuses.status_id"), ref("currency_code", "currencies.currency_code"),
        ref("sales_rep_id", "employees.employee_id", nullable=True), _c("channel"))),
    Table("order_lines", "order line", "order lines", (
        key("line_id"), ref("order_id", "orders.order_id"), ref("product_id", "products.product_id"),
        _c("quantity", "integer"), _c("unit_price", "money"), _c("discount_pct", "real", nullable=True))),
    Table("promotions", "promotion", "promotions", (
        key("promo_id"), _c("promo_code"), _c("pct_off", "real"), _c("starts_on", "date"), _c("ends_on", "date"))),
    Table("order_promotions", "order promotion", "order promotions", (
        key("order_promo_id"), ref("order_id", "orders.order_id"), ref("promo_id", "promotions.promo_id"))),
    Table("carriers", "carrier", "carriers", (key("carrier_id"), _c("carrier_name"))),
    Table("shipments", "shipment", "shipments", (
        key("shipment_id"), ref("order_id", "orders.order_id"), ref("warehouse_id", "warehouses.warehouse_id"),
        ref("carrier_id", "carriers.carrier_id"), _c("shipped_at"))),
    Table("shipment_events", "event", "events", (
        key("event_id"), ref("shipment_id", "shipments.shipment_id"), _c("event_type"), _c("event_time", "timestamp"))),
    Table("return_reasons", "reason", "reasons", (
        Column("reason_code", "text", role="key", primary_key=True), _c("reason_text"))),
    Table("returns", "return", "returns", (
        key("return_id"), ref("line_id", "order_lines.line_id"), _c("returned_qty", "integer"),
        ref("reason_code", "return_reasons.reason_code"), _c("returned_on", "date"))),
    Table("invoices", "invoice", "invoices", (
        key("invoice_id"), ref("order_id", "orders.order_id"), _c("issued_on", "date"), _c("due_on", "date"),
        _c("amount", "money"), ref("currency_code", "currencies.currency_code"))),
    Table("payments", "payment", "payments", (
        key("payment_id"), ref("invoice_id", "invoices.invoice_id"), _c("paid_on", "date"), _c("amount", "money"),
        _c("method"), _c("payment_status"))),
    Table("support_tickets", "ticket", "tickets", (
        key("ticket_id"), ref("customer_id", "customers.customer_id"), _c("opened_at", "timestamp"),
        _c("closed_at", "timestamp", nullable=True), _c("priority"), _c("topic"))),
    Table("ticket_comments", "comment", "comments", (
        key("comment_id"), ref("ticket_id", "support_tickets.ticket_id"),
        ref("author_employee_id", "employees.employee_id", nullable=True), _c("posted_at", "timestamp"))),
    Table("purchase_orders", "purchase order", "purchase orders", (
        key("po_id"), ref("supplier_id", "suppliers.supplier_id"), _c("ordered_on", "date"),
        _c("received_on", "date", nullable=True))),
    Table("purchase_order_lines", "purchase order line", "purchase order lines", (
        key("po_line_id"), ref("po_id", "purchase_orders.po_id"), ref("product_id", "products.product_id"),
        _c("quantity", "integer"), _c("unit_cost", "money"))),
    Table("audit_log", "log entry", "log entries", (
        key("log_id"), _c("table_name"), _c("row_id", "integer"), _c("action"), _c("logged_at", "timestamp"))),
)


def written_date(rng: random.Random, day: dt.date, shares: tuple[int, int, int, int]) -> str:
    """`day` in one of the formats the source systems used, drawn with `shares` as weights."""
    style = rng.choices(range(4), shares)[0]
    if style == 0:
        return day.isoformat()
    if style == 1:
        return day.strftime("%Y/%m/%d")
    if style == 2:
        return day.strftime("%Y%m%d")
    return f"{day.day:02d} {MONTHS[day.month - 1]} {day.year}"


def _day(rng: random.Random, first: dt.date = FIRST_DAY, last: dt.date = LAST_DAY) -> dt.date:
    return first + dt.timedelta(days=rng.randint(0, (last - first).days))


def _hand_typed(rng: random.Random, word: str) -> str:
    kind = rng.choices(range(5), (70, 8, 8, 7, 7))[0]
    return (word, word.capitalize() + " ", " " + word.upper(), word.upper(), f" {word}")[kind]


def _months() -> list[str]:
    return [f"{year}-{month:02d}" for year in (2023, 2024) for month in range(1, 13)]


def build_rows(profile: Profile, rng: random.Random, scale: int) -> Rows:
    rows: Rows = {}
    regions = sorted({c[2] for c in COUNTRIES})
    rows["regions"] = [(i, name) for i, name in enumerate(regions, 1)]
    rows["countries"] = [(code, name, regions.index(region) + 1, currency)
                         for code, name, region, currency, _ in COUNTRIES]
    rows["cities"] = []
    for code, _name, _region, _currency, names in COUNTRIES:
        rows["cities"].extend((len(rows["cities"]) + 1, city, code) for city in names)
    city_country = {city_id: code for city_id, _name, code in rows["cities"]}
    currency_of = {code: currency for code, _n, _r, currency, _c in COUNTRIES}
    traded = sorted({currency_of[code] for code in profile.countries} | {"USD"})
    rows["currencies"] = [(code, CURRENCY_NAMES[code]) for code in sorted(CURRENCY_NAMES)]
    rows["fx_rates"] = []
    for code in traded:
        rate = BASE_RATES[code]
        for month in _months():
            if code != "USD":
                rate *= rng.uniform(0.96, 1.04)
            rows["fx_rates"].append((len(rows["fx_rates"]) + 1, code, month, round(rate, 6)))
    rate_of = {(code, month): rate for _i, code, month, rate in rows["fx_rates"]}
    rows["customer_segments"] = list(SEGMENTS)

    # Departments and a reporting tree up to five levels deep; some names are shared by two people.
    rows["departments"] = [(i, name) for i, name in enumerate(DEPARTMENTS, 1)]
    employees: list[tuple[object, ...]] = []
    names = [person_name(rng) for _ in range(160)]
    for twin in range(4):
        names[20 + twin * 7] = names[60 + twin * 11]
    levels: list[list[int]] = [[1]]
    heads = rng.sample(range(3, len(DEPARTMENTS) + 1), len(DEPARTMENTS) - 2) + [2]  # Sales always has a head
    employees.append((1, names[0], 1, None, "2012-03-01", None, 250000.0))
    next_id = 2
    for depth, width in enumerate((6, 3, 3, 2), 1):
        level: list[int] = []
        for boss in levels[-1]:
            for _ in range(rng.randint(max(1, width - 1), width + 1)):
                if next_id > len(names):
                    break
                hired = _day(rng, dt.date(2010, 1, 1), dt.date(2024, 6, 30))
                left = (hired + dt.timedelta(days=rng.randint(60, 3000))) if rng.random() < 0.18 else None
                department = heads.pop() if depth == 1 and heads else employees[boss - 1][2]
                employees.append((next_id, names[next_id - 1], department, boss, hired.isoformat(),
                                  left.isoformat() if left and left <= LAST_DAY else None,
                                  float(rng.choice((42000, 51000, 60000, 75000, 90000)) + 1000 * rng.randint(0, 9))))
                level.append(next_id)
                next_id += 1
        levels.append(level)
    rows["employees"] = employees
    sales_reps = [e[0] for e in employees if e[2] == 2]

    # Categories: five roots, `tree_width` children each, some grandchildren and great-grandchildren.
    categories: list[tuple[object, ...]] = []
    leaves: list[int] = []
    for root, words in CATEGORY_WORDS.items():
        categories.append((len(categories) + 1, root, None))
        root_id = len(categories)
        for word in rng.sample(words, profile.tree_width):
            categories.append((len(categories) + 1, word, root_id))
            child_id = len(categories)
            leaves.append(child_id)
            for leaf in rng.sample(LEAF_WORDS, rng.randint(0, 3)):
                categories.append((len(categories) + 1, f"{leaf} {word}", child_id))
                grandchild = len(categories)
                leaves.append(grandchild)
                if rng.random() < 0.3:
                    categories.append((len(categories) + 1, f"{leaf} {word} Accessories", grandchild))
                    leaves.append(len(categories))
    rows["categories"] = categories
    rows["suppliers"] = [(i, (f"{rng.choice(('Nordic', 'Atlas', 'Sunrise', 'Pacific', 'Iberia', 'Summit'))} "
                          f"{rng.choice(('Trading', 'Supply', 'Goods', 'Imports'))} {i}"),
                          rng.choice(COUNTRIES)[0]) for i in range(1, 31)]
    products = []
    for i in range(1, 301):
        category = rng.choice(leaves) if rng.random() < 0.8 else rng.randint(1, len(categories))
        products.append((i, f"SKU-{rng.randint(10000, 99999)}-{i}", f"{categories[category - 1][1]} item {i}",
                         category, rng.randint(1, 30), round(rng.uniform(2, 400), 2), int(rng.random() < 0.1)))
    rows["products"] = products
    prices: list[tuple[object, ...]] = []
    price_now: dict[int, list[tuple[dt.date, dt.date | None, float]]] = {}
    for product_id, *_rest, cost, _d in products:
        start, price = dt.date(2022, 1, 1), round(float(cost) * rng.uniform(1.3, 2.2), 2)  # type: ignore[arg-type]
        spans = []
        while True:
            end = start + dt.timedelta(days=rng.randint(120, 500))
            if end > LAST_DAY:
                spans.append((start, None, price))
                break
            spans.append((start, end, price))
            start, price = end + dt.timedelta(days=1), round(price * rng.uniform(0.9, 1.15), 2)
        price_now[product_id] = spans
        first_id = len(prices) + 1
        prices.extend((first_id + i, product_id, p, s.isoformat(), e.isoformat() if e else None)
                      for i, (s, e, p) in enumerate(spans))
    rows["product_prices"] = prices
    warehouse_cities = rng.sample(range(1, len(rows["cities"]) + 1), 6)
    rows["warehouses"] = [(i, f"WH-{rows['cities'][city - 1][1][:3].upper()}-{i}", city)
                          for i, city in enumerate(warehouse_cities, 1)]
    rows["inventory_snapshots"] = [(i, rng.randint(1, 6), rng.randint(1, 300),
                                    _day(rng).isoformat(), rng.randint(0, 500)) for i in range(1, 1501)]

    # Customers: some registered twice; the duplicate record points at the surviving one.
    customers: list[tuple[object, ...]] = []
    local_cities = [c[0] for c in rows["cities"] if c[2] in profile.countries]
    managers = sales_reps or [1]
    for i in range(1, profile.customers + 1):
        if customers and rng.random() < profile.merged_share:
            original = rng.choice([c for c in customers if c[6] is None][-200:])
            name = str(original[1])
            name = rng.choice((name.upper(), name.lower(), f" {name}", name))
            customers.append((i, name, str(original[2]).upper(), original[3], original[4],
                              written_date(rng, _day(rng), profile.format_shares), original[0], original[7]))
            continue
        name = person_name(rng)
        customers.append((i, name, f"{name.lower().replace(' ', '.')}{i}@example.com", rng.choice(local_cities),
                          rng.choices(("RET", "SMB", "ENT"), (55, 35, 10))[0],
                          written_date(rng, _day(rng, dt.date(2019, 1, 1), dt.date(2024, 6, 30)),
                                       profile.format_shares),
                          None, rng.choice(managers) if rng.random() < 0.7 else None))
    rows["customers"] = customers
    rows["customer_contacts"] = [(i, rng.randint(1, len(customers)), rng.choice(("phone", "email", "fax")),
                                  f"contact-{i}") for i in range(1, 1201)]

    # Orders with ids from several systems (not in date order), hand-typed channels, mixed date formats.
    rows["order_statuses"] = list(STATUSES)
    order_ids = rng.sample(range(100000, 100000 + profile.orders * 4), profile.orders)
    orders, lines, shipments, events, returns, invoices, payments = [], [], [], [], [], [], []
    for order_id in order_ids:
        customer = customers[rng.randint(0, len(customers) - 1)]
        when = _day(rng)
        country = city_country[int(customer[3])]  # type: ignore[call-overload]
        currency = currency_of[country] if rng.random() < 0.85 else "USD"
        status = rng.choices((1, 2, 3, 4, 5), (4, 10, 70, 10, 6))[0]
        orders.append((order_id, customer[0], written_date(rng, when, profile.format_shares), status, currency,
                       rng.choice(sales_reps) if sales_reps and rng.random() < 0.8 else None,
                       _hand_typed(rng, rng.choices(CHANNELS, (60, 25, 15))[0])))
        month = when.strftime("%Y-%m")
        total = 0.0
        order_lines = []
        for _ in range(rng.choices((1, 2, 3, 4), (35, 30, 20, 15))[0]):
            product_id = rng.randint(1, len(products))
            usd = next(p for s, e, p in price_now[product_id] if s <= when and (e is None or when <= e))
            price = round(usd / rate_of[(currency, month)], 2)
            discount = None if rng.random() < profile.null_discount_share else float(rng.choice((5, 10, 15, 20)))
            quantity = rng.randint(1, 12)
            line_id = len(lines) + 1
            lines.append((line_id, order_id, product_id, quantity, price, discount))
            order_lines.append((line_id, quantity))
            total += quantity * price * (1 - (discount or 0) / 100)
        if status == 4:
            continue
        if status != 1:
            shipped = when + dt.timedelta(days=rng.randint(0, 6))
            shipment_id = len(shipments) + 1
            shipments.append((shipment_id, order_id, rng.randint(1, 6), rng.randint(1, 5),
                              written_date(rng, shipped, profile.format_shares)))
            if status in (3, 5):
                delivered = shipped + dt.timedelta(days=rng.randint(1, 9))
                for kind, moment in (("picked", shipped), ("in_transit", shipped), ("delivered", delivered)):
                    for _ in range(2 if kind == "delivered" and rng.random() < 0.12 else 1):
                        events.append((len(events) + 1, shipment_id, kind,
                                       f"{moment.isoformat()} {rng.randint(6, 21):02d}:{rng.randint(0, 59):02d}:00"))
                if status == 5 or rng.random() < 0.04:
                    line_id, quantity = rng.choice(order_lines)
                    returns.append((len(returns) + 1, line_id, rng.randint(1, quantity),
                                    rng.choice(("DMG", "WRG", "LATE", "CHG")),
                                    (delivered + dt.timedelta(days=rng.randint(1, 30))).isoformat()))
        invoice_id = len(invoices) + 1
        amount = round(total, 2)
        invoices.append((invoice_id, order_id, when.isoformat(), (when + dt.timedelta(days=30)).isoformat(), amount,
                         currency))
        fate = rng.choices(("paid", "split", "partial", "none"), (55, 20, 13, 12))[0]
        parts = {"paid": [amount], "split": [round(amount * 0.4, 2), round(amount - round(amount * 0.4, 2), 2)],
                 "partial": [round(amount * rng.uniform(0.2, 0.8), 2)], "none": []}[fate]
        paid_on = when
        for part in parts:
            paid_on += dt.timedelta(days=rng.randint(3, 75))
            if rng.random() < 0.07:  # a payment that bounced, then came again
                payments.append((len(payments) + 1, invoice_id, paid_on.isoformat(), part, "card", "reversed"))
                paid_on += dt.timedelta(days=rng.randint(1, 20))
            payments.append((len(payments) + 1, invoice_id, paid_on.isoformat(), part,
                             rng.choice(("card", "transfer", "cash")), "settled"))
    rows["orders"], rows["order_lines"], rows["shipments"] = orders, lines, shipments
    rows["shipment_events"], rows["returns"] = events, returns
    rows["invoices"], rows["payments"] = invoices, payments
    rows["return_reasons"] = [("DMG", "Damaged"), ("WRG", "Wrong item"), ("LATE", "Arrived late"),
                              ("CHG", "Changed mind")]
    rows["promotions"] = [(i, f"PROMO{i:03d}", float(rng.choice((5, 10, 15))), d.isoformat(),
                           (d + dt.timedelta(days=30)).isoformat()) for i, d in
                          ((i, _day(rng)) for i in range(1, 21))]
    rows["order_promotions"] = [(i, rng.choice(order_ids), rng.randint(1, 20)) for i in range(1, 401)]
    rows["carriers"] = [(i, name) for i, name in enumerate(("FastShip", "Parcelo", "RoadRunner", "BlueFreight",
                                                            "Northline"), 1)]
    rows["support_tickets"] = []
    rows["ticket_comments"] = []
    for i in range(1, 801):
        opened = dt.datetime.combine(_day(rng), dt.time(rng.randint(8, 18)))
        closed = opened + dt.timedelta(hours=rng.randint(1, 400)) if rng.random() < 0.8 else None
        rows["support_tickets"].append((i, rng.randint(1, len(customers)), opened.isoformat(" "),
                                        closed.isoformat(" ") if closed else None,
                                        _hand_typed(rng, rng.choice(("low", "normal", "high"))),
                                        rng.choice(("billing", "delivery", "product", "account"))))
        for _ in range(rng.randint(0, 4)):
            rows["ticket_comments"].append((len(rows["ticket_comments"]) + 1, i,
                                            rng.choice([e[0] for e in employees]) if rng.random() < 0.7 else None,
                                            (opened + dt.timedelta(hours=rng.randint(0, 300))).isoformat(" ")))
    rows["purchase_orders"] = []
    rows["purchase_order_lines"] = []
    for i in range(1, 301):
        ordered = _day(rng)
        received = ordered + dt.timedelta(days=rng.randint(5, 60))
        rows["purchase_orders"].append((i, rng.randint(1, 30), ordered.isoformat(),
                                        received.isoformat() if received <= LAST_DAY and rng.random() < 0.9 else None))
        for _ in range(rng.randint(1, 5)):
            product = products[rng.randint(0, len(products) - 1)]
            rows["purchase_order_lines"].append((len(rows["purchase_order_lines"]) + 1, i, product[0],
                                                 rng.randint(10, 200), product[5]))
    rows["audit_log"] = [(i, rng.choice(("orders", "customers", "payments", "products")), rng.randint(1, 9999),
                          rng.choice(("insert", "update", "delete")),
                          f"{_day(rng).isoformat()} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00")
                         for i in range(1, 2001)]
    return rows


def _spec(name: str, split: str, profile: Profile, description: str) -> DatabaseSpec:
    return DatabaseSpec(
        name=name, split=split, tables=TABLES, kind="erp",
        build_rows=lambda rng, scale: build_rows(profile, rng, scale),
        indexes=("orders.customer_id", "order_lines.order_id", "payments.invoice_id"),
        description=description,
    )


SPECS = (
    _spec("erp_north", "train", Profile(("US", "CA", "NO", "FR"), (60, 15, 10, 15), 0.06, 0.55, 3, 1400, 5200),
          "A wholesale distributor's ERP (North America and northern Europe): 33 tables."),
    _spec("erp_east", "train", Profile(("JP", "KE", "CH", "ES"), (50, 10, 20, 20), 0.08, 0.6, 4, 1300, 5000),
          "A wholesale distributor's ERP (Asia, Africa and central Europe): 33 tables."),
    _spec("erp_south", "test", Profile(("ES", "PT", "KE", "US"), (55, 15, 15, 15), 0.07, 0.6, 3, 1500, 5400),
          "A wholesale distributor's ERP (southern Europe, Africa and the US): 33 tables."),
    _spec("erp_west", "test", Profile(("US", "CA", "FR", "JP", "CH"), (60, 10, 12, 18), 0.05, 0.5, 4, 1400, 5200),
          "A wholesale distributor's ERP (the Americas, western Europe and Japan): 33 tables."),
)

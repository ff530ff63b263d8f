"""Flights: airlines, airports (text keys), aircraft, flights, passengers and bookings (about 90,000 rows)."""

from __future__ import annotations

import random

from .schema import Column, DatabaseSpec, Rows, Table, key, ref
from .vocab import CITIES, COUNTRIES, day, maybe, messy, moment, person_name, shift

AIRLINES = ("Aurora Air", "Blue Heron", "Cirrus Lines", "Delta Wing", "Equator Jet", "Falcon Express",
            "Glacier Air", "Harbor Airways", "Ibis Air", "Jade Airlines", "Kestrel", "Lumen Air")
MODELS = (("A320", 180), ("A321", 220), ("B737", 189), ("B787", 296), ("E190", 100), ("ATR72", 70))

TABLES = (
    Table("airlines", "airline", "airlines", (
        key("airline_id"),
        Column("airline_name", "text", role="label", phrase="name"),
        Column("country", "text", role="category"),
        Column("founded_year", "integer", role="measure", phrase="founding year"),
    )),
    Table("airports", "airport", "airports", (
        Column("airport_code", "text", role="key", primary_key=True, phrase="code"),
        Column("airport_name", "text", role="label", phrase="name"),
        Column("city", "text", role="category"),
        Column("country", "text", role="category"),
        Column("elevation_m", "integer", role="measure", phrase="elevation in metres", nullable=True),
    )),
    Table("aircraft", "aircraft", "aircraft", (
        key("aircraft_id"),
        ref("airline_id", "airlines.airline_id"),
        Column("model", "text", role="category"),
        Column("seats", "integer", role="measure", phrase="seat count"),
        Column("year_built", "integer", role="measure", phrase="year built"),
    )),
    Table("flights", "flight", "flights", (
        key("flight_id"),
        Column("flight_number", "text", role="label", phrase="flight number"),
        ref("airline_id", "airlines.airline_id"),
        ref("aircraft_id", "aircraft.aircraft_id"),
        ref("origin_code", "airports.airport_code", phrase="origin airport"),
        ref("destination_code", "airports.airport_code", phrase="destination airport"),
        Column("departure_at", "timestamp", role="date", phrase="scheduled departure"),
        Column("arrival_at", "timestamp", role="date", phrase="scheduled arrival"),
        Column("status", "text", role="category", phrase="flight status"),
        Column("delay_minutes", "integer", role="measure", phrase="delay in minutes", nullable=True),
    )),
    Table("passengers", "passenger", "passengers", (
        key("passenger_id"),
        Column("full_name", "text", role="label", phrase="name", messy=True),
        Column("nationality", "text", role="category"),
        Column("loyalty_tier", "text", role="category", phrase="loyalty tier", nullable=True),
        Column("birth_date", "date", role="date", phrase="date of birth"),
    )),
    Table("bookings", "booking", "bookings", (
        key("booking_id"),
        ref("flight_id", "flights.flight_id"),
        ref("passenger_id", "passengers.passenger_id"),
        Column("fare_class", "text", role="category", phrase="fare class"),
        Column("price", "money", role="measure", phrase="ticket price"),
        Column("booked_at", "timestamp", role="date", phrase="booking time"),
    )),
)


def build_rows(rng: random.Random, scale: int) -> Rows:
    airlines = [(i, name, rng.choice(sorted(set(COUNTRIES.values()))), rng.randint(1950, 2015))
                for i, name in enumerate(AIRLINES, 1)]
    airports = []
    letters = "ABCDEFGHJKLMNPRSTVWXYZ"
    for i in range(120):
        city = CITIES[i % len(CITIES)]
        code = city[:1].upper() + letters[i // len(letters) % len(letters)] + letters[i % len(letters)]
        airports.append((code, f"{city} {('International', 'Regional', 'Field', 'Airpark')[i % 4]} {i}", city,
                         COUNTRIES[city], maybe(rng, rng.randint(0, 2400), 0.1)))
    codes = [a[0] for a in airports]
    aircraft = []
    for i in range(1, 251):
        model, seats = rng.choice(MODELS)
        aircraft.append((i, rng.randint(1, len(AIRLINES)), model, seats, rng.randint(1995, 2023)))
    flights = []
    for i in range(1, 20001):
        plane = aircraft[rng.randrange(len(aircraft))]
        origin, destination = rng.sample(codes, 2)
        departure = moment(rng, "2023-01-01", "2024-12-31")
        status = rng.choices(("on time", "delayed", "cancelled", "diverted"), (70, 22, 6, 2))[0]
        delay = 0 if status == "on time" else (rng.randint(5, 300) if status == "delayed" else None)
        flights.append((i, f"{AIRLINES[plane[1] - 1][:2].upper()}{100 + i % 900}", plane[1], plane[0], origin,
                        destination, departure, shift(departure, rng.randint(45, 720)), status, delay))
    passengers = [(i, messy(rng, person_name(rng), 0.08), rng.choice(sorted(set(COUNTRIES.values()))),
                   maybe(rng, rng.choice(("silver", "gold", "platinum")), 0.55), day(rng, "1940-01-01", "2015-12-31"))
                  for i in range(1, 8001)]
    bookings = []
    for i in range(1, 60001):
        flight = flights[rng.randrange(len(flights))]
        fare = rng.choices(("economy", "premium", "business", "first"), (70, 15, 12, 3))[0]
        base = {"economy": 80, "premium": 160, "business": 420, "first": 900}[fare]
        bookings.append((i, flight[0], rng.randint(1, 8000), fare, float(base + 10 * rng.randint(0, 30)),
                         shift(flight[6], -rng.randint(60, 90 * 24 * 60))))
    return {"airlines": airlines, "airports": airports, "aircraft": aircraft, "flights": flights,
            "passengers": passengers, "bookings": bookings}


SPEC = DatabaseSpec(
    name="flights", split="train", tables=TABLES, build_rows=build_rows,
    description="Airline operations: airlines, airports, aircraft, scheduled flights, passengers and bookings.",
)

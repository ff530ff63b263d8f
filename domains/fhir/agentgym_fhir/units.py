"""Unit conversion for clinical values: mass, length, temperature, volume, time, and lab concentrations.

Units are accepted as UCUM codes (``mg/dL``, ``mmol/L``, ``Cel``, ``[lb_av]``, ``[in_i]``) or the spellings
people write (``lb``, ``lbs``, ``in``, ``degF``, ``°C``, ``mEq/L``). Concentrations that change between mass
and amount (mg/dL and mmol/L) need the analyte, because the factor is its molar mass; the analytes covered
are the ones records in this project carry (`ANALYTES`). ``mEq/L`` is read as ``mmol/L``, which holds for
the monovalent ions reported in it (sodium, potassium, chloride, bicarbonate).
"""

from __future__ import annotations

import re

# Linear units: name -> (dimension, factor to the dimension's base unit).
_LINEAR: dict[str, tuple[str, float]] = {
    "kg": ("mass", 1000.0), "g": ("mass", 1.0), "mg": ("mass", 1e-3), "ug": ("mass", 1e-6), "lb": ("mass", 453.59237),
    "oz": ("mass", 28.349523125),
    "m": ("length", 100.0), "cm": ("length", 1.0), "mm": ("length", 0.1), "in": ("length", 2.54), "ft": ("length", 30.48),
    "L": ("volume", 1000.0), "dL": ("volume", 100.0), "mL": ("volume", 1.0), "uL": ("volume", 1e-3),
    "s": ("time", 1.0), "ms": ("time", 1e-3), "min": ("time", 60.0), "h": ("time", 3600.0), "d": ("time", 86400.0),
    "wk": ("time", 604800.0), "mm[Hg]": ("pressure", 1.0), "kPa": ("pressure", 7.50062),
    # concentrations, base mg/dL (mass) and mmol/L (amount); g/L etc. are mass concentrations
    "mg/dL": ("mass_conc", 1.0), "g/dL": ("mass_conc", 1000.0), "g/L": ("mass_conc", 100.0),
    "mg/L": ("mass_conc", 0.1), "ug/dL": ("mass_conc", 1e-3), "ng/mL": ("mass_conc", 1e-4),
    "ug/L": ("mass_conc", 1e-4), "pg/mL": ("mass_conc", 1e-7),
    "mmol/L": ("amount_conc", 1.0), "umol/L": ("amount_conc", 1e-3), "mol/L": ("amount_conc", 1000.0),
    "10*3/uL": ("count_conc", 1.0), "10*9/L": ("count_conc", 1.0), "/uL": ("count_conc", 1e-3),
    "10*6/uL": ("count_conc", 1000.0), "10*12/L": ("count_conc", 1000.0),
    "%": ("fraction", 1.0), "1": ("fraction", 100.0),
}

_ALIASES: dict[str, str] = {
    "kilogram": "kg", "kilograms": "kg", "kgs": "kg", "gram": "g", "grams": "g", "milligram": "mg", "mcg": "ug",
    "µg": "ug", "μg": "ug", "[lb_av]": "lb", "lbs": "lb", "pound": "lb", "pounds": "lb", "[oz_av]": "oz",
    "meter": "m", "metre": "m", "meters": "m", "centimeter": "cm", "centimeters": "cm", "[in_i]": "in",
    "inch": "in", "inches": "in", "[ft_i]": "ft", "foot": "ft", "feet": "ft", "l": "L", "liter": "L", "dl": "dL",
    "ml": "mL", "µl": "uL", "ul": "uL", "sec": "s", "second": "s", "seconds": "s", "msec": "ms", "minute": "min",
    "minutes": "min", "hr": "h", "hour": "h", "hours": "h", "day": "d", "days": "d", "week": "wk", "weeks": "wk",
    "mmhg": "mm[Hg]", "mm hg": "mm[Hg]", "kpa": "kPa", "mg/dl": "mg/dL", "g/dl": "g/dL", "g/l": "g/L",
    "mg/l": "mg/L", "mcg/dl": "ug/dL", "ug/dl": "ug/dL", "ng/ml": "ng/mL", "pg/ml": "pg/mL", "ug/l": "ug/L",
    "mmol/l": "mmol/L", "meq/l": "mmol/L", "meq/L": "mmol/L", "mEq/L": "mmol/L", "umol/l": "umol/L",
    "µmol/l": "umol/L", "µmol/L": "umol/L", "μmol/L": "umol/L", "10^3/ul": "10*3/uL", "k/ul": "10*3/uL",
    "10^9/l": "10*9/L", "10*3/ul": "10*3/uL", "percent": "%",
}

_TEMPERATURE = {"cel": "Cel", "c": "Cel", "°c": "Cel", "degc": "Cel", "celsius": "Cel", "[degf]": "[degF]",
                "f": "[degF]", "°f": "[degF]", "degf": "[degF]", "fahrenheit": "[degF]", "k": "K", "kelvin": "K"}

# Analyte -> molar mass in g/mol (mg/dL * 10 / M = mmol/L); valence for mEq where it differs from 1.
ANALYTES: dict[str, float] = {
    "glucose": 180.16, "creatinine": 113.12, "calcium": 40.08, "magnesium": 24.305, "bun": 28.014,
    "urea nitrogen": 28.014, "cholesterol": 386.65, "ldl": 386.65, "hdl": 386.65, "triglycerides": 885.7,
    "bilirubin": 584.66, "uric acid": 168.11, "potassium": 39.098, "sodium": 22.99, "chloride": 35.45,
    "phosphate": 30.97, "lactate": 90.08,
}
_ANALYTE_ALIASES = {"blood urea nitrogen": "bun", "urea": "bun", "total cholesterol": "cholesterol",
                    "ldl cholesterol": "ldl", "hdl cholesterol": "hdl", "triglyceride": "triglycerides",
                    "total bilirubin": "bilirubin", "ca": "calcium", "mg": "magnesium", "k": "potassium",
                    "na": "sodium", "cl": "chloride", "lactic acid": "lactate"}


class UnitError(ValueError):
    """A conversion that cannot be made; the message says what is accepted."""


def canonical_unit(unit: str) -> str:
    """The canonical spelling of a unit (`lbs` -> `lb`, `mEq/L` -> `mmol/L`, `°F` -> `[degF]`)."""
    text = unit.strip()
    if text in _LINEAR:
        return text
    lowered = re.sub(r"\s+", " ", text.lower())
    if lowered in _TEMPERATURE:
        return _TEMPERATURE[lowered]
    if text in _ALIASES:
        return _ALIASES[text]
    if lowered in _ALIASES:
        return _ALIASES[lowered]
    for key in _LINEAR:
        if key.lower() == lowered:
            return key
    raise UnitError(f"unknown unit {unit!r}; accepted units include kg, lb, cm, in, Cel, [degF], mg/dL, "
                    "mmol/L, umol/L, g/dL, g/L, mEq/L, mm[Hg], kPa, %, h, d")


def _to_celsius(value: float, unit: str) -> float:
    return value if unit == "Cel" else (value - 32) * 5 / 9 if unit == "[degF]" else value - 273.15


def _from_celsius(value: float, unit: str) -> float:
    return value if unit == "Cel" else value * 9 / 5 + 32 if unit == "[degF]" else value + 273.15


def convert(value: float, from_unit: str, to_unit: str, analyte: str | None = None) -> float:
    """Convert `value` from one unit to another.

    Args:
        value: The number to convert.
        from_unit: Its unit (UCUM code or common spelling).
        to_unit: The unit wanted.
        analyte: For mass <-> molar concentration (mg/dL <-> mmol/L), what is measured, e.g. "glucose".

    Raises:
        UnitError: unknown unit, incompatible dimensions, or a missing or unknown analyte.
    """
    source, target = canonical_unit(from_unit), canonical_unit(to_unit)
    temperatures = {"Cel", "[degF]", "K"}
    if source in temperatures or target in temperatures:
        if not (source in temperatures and target in temperatures):
            raise UnitError(f"cannot convert {from_unit} to {to_unit}: only temperatures convert to temperatures")
        return _from_celsius(_to_celsius(value, source), target)
    source_dim, source_factor = _LINEAR[source]
    target_dim, target_factor = _LINEAR[target]
    if source_dim == target_dim:
        return value * source_factor / target_factor
    if {source_dim, target_dim} == {"mass_conc", "amount_conc"}:
        molar_mass = molar_mass_of(analyte, from_unit, to_unit)
        if source_dim == "mass_conc":  # -> mg/dL -> mmol/L
            mmol_l = value * source_factor * 10 / molar_mass
            return mmol_l / target_factor
        mg_dl = value * source_factor * molar_mass / 10
        return mg_dl / target_factor
    raise UnitError(f"cannot convert {from_unit} ({source_dim.replace('_', ' ')}) to {to_unit} "
                    f"({target_dim.replace('_', ' ')})")


def molar_mass_of(analyte: str | None, from_unit: str = "", to_unit: str = "") -> float:
    """The molar mass used for an analyte's mg/dL <-> mmol/L conversion."""
    if not analyte:
        raise UnitError(f"converting {from_unit} to {to_unit} depends on what is measured; pass analyte, one of: "
                        f"{', '.join(sorted(ANALYTES))}")
    key = analyte.strip().lower()
    key = _ANALYTE_ALIASES.get(key, key)
    if key not in ANALYTES:
        raise UnitError(f"no molar mass known for {analyte!r}; known analytes: {', '.join(sorted(ANALYTES))}")
    return ANALYTES[key]

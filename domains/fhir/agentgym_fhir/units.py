"""Unit conversion for clinical values: mass, length, temperature, volume, time, and lab concentrations.

Units are accepted as UCUM codes (``mg/dL``, ``mmol/L``, ``Cel``, ``[lb_av]``, ``[in_i]``) or the spellings
people write (``lb``, ``lbs``, ``in``, ``degF``, ``°C``, ``mEq/L``). Concentrations that change between mass
and amount (mg/dL and mmol/L) need the analyte, because the factor is its molar mass; the analytes covered
are the ones records in this project carry (`ANALYTES`). ``mEq/L`` is read as ``mmol/L``, which holds for
the monovalent ions reported in it (sodium, potassium, chloride, bicarbonate).
"""

from __future__ import annotations

import re
import unicodedata

from agentgym import answers

# Linear units: canonical UCUM code -> (dimension, factor to the dimension's base unit). Units that convert to
# nothing else (scores, eGFR's per-1.73 m2 rate) get a dimension of their own.
_LINEAR: dict[str, tuple[str, float]] = {
    "kg": ("mass", 1000.0), "g": ("mass", 1.0), "mg": ("mass", 1e-3), "ug": ("mass", 1e-6), "[lb_av]": ("mass", 453.59237),
    "[oz_av]": ("mass", 28.349523125),
    "m": ("length", 100.0), "cm": ("length", 1.0), "mm": ("length", 0.1), "[in_i]": ("length", 2.54),
    "[ft_i]": ("length", 30.48),
    "L": ("volume", 1000.0), "dL": ("volume", 100.0), "mL": ("volume", 1.0), "uL": ("volume", 1e-3),
    "s": ("time", 1.0), "ms": ("time", 1e-3), "min": ("time", 60.0), "h": ("time", 3600.0), "d": ("time", 86400.0),
    "wk": ("time", 604800.0), "mm[Hg]": ("pressure", 1.0), "kPa": ("pressure", 7.50062),
    # concentrations, base mg/dL (mass) and mmol/L (amount); g/L etc. are mass concentrations
    "mg/dL": ("mass_conc", 1.0), "g/dL": ("mass_conc", 1000.0), "g/L": ("mass_conc", 100.0),
    "mg/L": ("mass_conc", 0.1), "ug/dL": ("mass_conc", 1e-3), "ng/mL": ("mass_conc", 1e-4),
    "ug/L": ("mass_conc", 1e-4), "pg/mL": ("mass_conc", 1e-7), "ng/L": ("mass_conc", 1e-7),
    # mEq/L equals mmol/L for the monovalent ions reported in it (sodium, potassium, chloride, bicarbonate)
    "mmol/L": ("amount_conc", 1.0), "umol/L": ("amount_conc", 1e-3), "mol/L": ("amount_conc", 1000.0),
    "meq/L": ("amount_conc", 1.0),
    "10*3/uL": ("count_conc", 1.0), "10*9/L": ("count_conc", 1.0), "/uL": ("count_conc", 1e-3),
    "10*6/uL": ("count_conc", 1000.0), "10*12/L": ("count_conc", 1000.0),
    "%": ("fraction", 1.0), "1": ("fraction", 100.0),
    "U/L": ("enzyme_conc", 1.0), "m[IU]/L": ("iu_conc", 1.0), "u[IU]/mL": ("iu_conc", 1.0),
    "/min": ("rate", 1.0), "mL/min": ("flow", 1.0), "mL/min/{1.73_m2}": ("flow_per_area", 1.0),
    "kg/m2": ("mass_per_area", 1.0), "m2": ("area", 1.0), "mg/g": ("ratio", 1.0), "mosm/kg": ("osmolality", 1.0),
    "meq": ("equivalents", 1.0), "mmol": ("amount", 1.0), "[iU]": ("international_units", 1.0),
    "{puff}": ("puffs", 1.0), "ug/min": ("mass_rate", 1.0), "{score}": ("score", 1.0), "{INR}": ("inr", 1.0),
}
_TEMPERATURES = ("Cel", "[degF]", "K")

# Other spellings of each canonical unit, as people and records write them. `unit_key` folds case, spaces,
# brackets, braces, "^", "*", "_" and superscripts first, so "mL/min/1.73 m²", "ML/MIN/1.73M2" and
# "mL/min/{1.73_m2}" are one key, and only spellings that differ in more than that need a row here.
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "kg": ("kilogram", "kilograms", "kgs"), "g": ("gram", "grams", "gm"), "mg": ("milligram", "milligrams"),
    "ug": ("mcg", "microgram", "micrograms"), "[lb_av]": ("lb", "lbs", "pound", "pounds"),
    "[oz_av]": ("oz", "ounce", "ounces"), "m": ("meter", "metre", "meters", "metres"),
    "cm": ("centimeter", "centimetre", "centimeters", "centimetres"), "mm": ("millimeter", "millimeters"),
    "[in_i]": ("in", "inch", "inches"), "[ft_i]": ("ft", "foot", "feet"), "L": ("liter", "litre", "liters"),
    "mL": ("cc", "milliliter", "millilitre", "milliliters"), "s": ("sec", "second", "seconds"),
    "ms": ("msec", "millisecond", "milliseconds"), "min": ("minute", "minutes"), "h": ("hr", "hrs", "hour", "hours"),
    "d": ("day", "days"), "wk": ("week", "weeks"), "mm[Hg]": ("millimeters of mercury",),
    "mg/dL": ("mg/100ml", "mg%"), "ug/dL": ("mcg/dl",), "ug/L": ("mcg/l",), "umol/L": ("micromol/l",),
    "meq/L": ("meq/liter",), "mmol/L": ("mmol/liter",),
    "10*3/uL": ("x10^3/ul", "x103/ul", "k/ul", "thousand/ul", "10^3/mm3", "x10^3/mm3", "k/mm3", "10e3/ul"),
    "10*9/L": ("x10^9/l", "x109/l", "10e9/l", "giga/l"), "10*6/uL": ("x10^6/ul", "m/ul", "million/ul"),
    "10*12/L": ("x10^12/l",), "%": ("percent", "per cent", "pct"), "U/L": ("iu/l", "units/l", "unit/l"),
    "m[IU]/L": ("mu/l", "miu/l", "milliunits/l"), "u[IU]/mL": ("uiu/ml", "uu/ml", "microunits/ml"),
    "/min": ("per min", "per minute", "bpm", "beats/min", "beats per minute", "breaths/min", "breaths per minute",
             "1/min", "min-1", "/minute"),
    "mL/min": ("ml/minute",),
    "mL/min/{1.73_m2}": ("ml/min/1.73m2", "ml/min per 1.73 m2", "ml/min/1.73 m^2", "ml/min/1.73sqm",
                         "ml/min/1.73 square meters", "ml/min/bsa"),
    "kg/m2": ("kg/m^2", "kg per m2", "kg/sqm"), "m2": ("sqm", "square meters", "square metres"),
    "mosm/kg": ("mosmol/kg", "mosm/kg h2o", "mosm/kgh2o"), "meq": ("milliequivalent", "milliequivalents"),
    "mmol": ("millimole", "millimoles"), "[iU]": ("iu", "unit", "units", "international unit", "international units"),
    "{puff}": ("puff", "puffs", "inhalation", "inhalations", "actuation", "actuations"),
    "ug/min": ("mcg/min",), "{score}": ("score", "points", "point"), "{INR}": ("inr",),
    "Cel": ("c", "°c", "degc", "deg c", "celsius", "degrees celsius", "degree celsius", "degrees c", "centigrade"),
    "[degF]": ("f", "°f", "degf", "deg f", "fahrenheit", "degrees fahrenheit", "degree fahrenheit", "degrees f"),
    "K": ("kelvin",),
}
# Unit annotations a dimensionless result may carry, and the words that name no unit at all.
_DIMENSIONLESS = ("{score}", "{INR}")
_SUPERSCRIPTS = str.maketrans("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b",
                              "0123456789-")


def unit_key(unit: str) -> str:
    """The comparable form of a unit's spelling: `agentgym.answers.normalize_unit` (the core answer library's
    one rule for case, spacing, superscripts, powers of ten, annotations and common displays), and, for what
    that reads as "no unit" (a bare annotation such as "{score}" or "{puff}"), the annotation's own folded text,
    so "{puff}" and "{INR}" stay apart."""
    key = answers.normalize_unit(unit)
    return key if key else "{}" + _folded(unit)


def _folded(unit: str) -> str:
    """Superscripts as digits, micro signs as "u", case folded, spaces, brackets, braces, "^", "*", "_" gone."""
    text = str(unit).translate(_SUPERSCRIPTS)
    text = unicodedata.normalize("NFKC", text).replace("\u03bc", "u").replace("\u00d7", "x").casefold()
    text = text.strip().strip(".")
    text = re.sub(r"\s+per\s+", "/", text)
    return re.sub(r"[\s\[\]{}^*_]", "", text)


def _key_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for canonical in [*_LINEAR, *_TEMPERATURES]:
        table.setdefault(unit_key(canonical), canonical)
    for canonical, spellings in _SPELLINGS.items():
        for spelling in spellings:
            table.setdefault(unit_key(spelling), canonical)
    return table


_KEYS = _key_table()


def ucum_code(unit: str) -> str | None:
    """The UCUM code this project uses for a unit however it is spelled ("lbs" -> "[lb_av]", "°F" -> "[degF]",
    "mL/min/1.73m²" -> "mL/min/{1.73_m2}", "mEq/L" -> "meq/L"), or None for a spelling it does not know."""
    if not isinstance(unit, str) or not unit.strip():
        return None
    return _KEYS.get(unit_key(unit))


def known_unit(text: str) -> bool:
    """Whether `text` is a unit spelling this module knows."""
    return ucum_code(text) is not None


def same_unit(written: str, asked: str) -> bool:
    """Whether `written` names exactly the unit `asked` names: its UCUM code, a usual display of it, or either
    with other case, spacing or superscripts. A different unit the value could be converted to is not the same
    unit ("g" is not "kg", "mEq/L" is not "mmol/L"). Unknown spellings match only their own folded form."""
    if not isinstance(written, str) or not written.strip():
        return False
    first, second = ucum_code(written), ucum_code(asked)
    if first is not None or second is not None:
        return first == second
    return unit_key(written) == unit_key(asked)


def is_dimensionless(unit: str) -> bool:
    """A unit that is only an annotation of a count or score ("{score}", "{INR}", "1"): an answer may omit it."""
    return not str(unit).strip() or ucum_code(unit) in (*_DIMENSIONLESS, "1")


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
    """The canonical UCUM code of a unit (`lbs` -> `[lb_av]`, `mEq/L` -> `meq/L`, `°F` -> `[degF]`).

    Raises:
        UnitError: a spelling this module does not know.
    """
    code = ucum_code(unit)
    if code is None:
        raise UnitError(f"unknown unit {unit!r}; accepted units include kg, lb, cm, in, Cel, [degF], mg/dL, "
                        "mmol/L, umol/L, g/dL, g/L, mEq/L, mm[Hg], kPa, %, h, d")
    return code


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
    temperatures = set(_TEMPERATURES)
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

"""English text normalization for speech synthesis: what is written -> what is said.

`normalize_text` lower-cases, spells out numbers (cardinals with thousands
separators, decimals, ordinals, years, times, currency, percentages), expands
common abbreviations and symbols, folds accents and typographic quotes and
dashes to ASCII, and keeps only the characters of `TTS_CHARACTERS` (letters,
space and the punctuation that shapes prosody).

Example:
    >>> normalize_text("Dr. Smith paid $3.50 for 2 apples on May 1st, 1999!")
    'doctor smith paid three dollars fifty cents for two apples on may first, nineteen ninety-nine!'
"""

from __future__ import annotations

import re
import unicodedata

TTS_CHARACTERS = " !'(),-.:;?abcdefghijklmnopqrstuvwxyz"

ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen"
).split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))
ORDINAL_WORDS = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}
ABBREVIATIONS = {
    "mr": "mister",
    "mrs": "misess",
    "ms": "miss",
    "dr": "doctor",
    "st": "saint",
    "jr": "junior",
    "sr": "senior",
    "co": "company",
    "corp": "corporation",
    "ltd": "limited",
    "inc": "incorporated",
    "vs": "versus",
    "etc": "et cetera",
    "prof": "professor",
    "gen": "general",
    "col": "colonel",
    "lt": "lieutenant",
    "sgt": "sergeant",
    "capt": "captain",
    "maj": "major",
    "rev": "reverend",
    "hon": "honorable",
    "ft": "fort",
    "mt": "mount",
    "no": "number",
    "approx": "approximately",
    "dept": "department",
}
SYMBOLS = {
    "&": " and ",
    "%": " percent ",
    "+": " plus ",
    "@": " at ",
    "=": " equals ",
    "/": " slash ",
    "#": " number ",
}
CURRENCIES = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "€": ("euro", "euros", "cent", "cents"),
}
TYPOGRAPHY = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201c": "",
    "\u201d": "",
    '"': "",
    "\u2013": "-",
    "\u2014": ", ",
    "\u2026": "...",
    "[": "(",
    "]": ")",
    "{": "(",
    "}": ")",
}


def cardinal(number: int) -> str:
    """Words for a whole number: 1234 -> 'one thousand two hundred thirty-four'."""
    if number < 0:
        return "minus " + cardinal(-number)
    if number < 20:
        return ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return TENS[tens] + (f"-{ONES[ones]}" if ones else "")
    if number < 1000:
        hundreds, rest = divmod(number, 100)
        return f"{ONES[hundreds]} hundred" + (f" {cardinal(rest)}" if rest else "")
    for scale, name in SCALES:
        if number >= scale:
            high, rest = divmod(number, scale)
            return f"{cardinal(high)} {name}" + (f" {cardinal(rest)}" if rest else "")
    raise AssertionError("unreachable")


def ordinal(number: int) -> str:
    """Words for an ordinal: 21 -> 'twenty-first'."""
    words = cardinal(number)
    head, sep, last = words.rpartition("-" if words.rfind("-") > words.rfind(" ") else " ")
    if last in ORDINAL_WORDS:
        last = ORDINAL_WORDS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return head + sep + last


def year(number: int) -> str:
    """Words for a year as it is said: 1999 -> 'nineteen ninety-nine', 2005 -> 'two thousand five'."""
    if 2000 <= number < 2010 or number % 1000 == 0:
        return cardinal(number)
    high, low = divmod(number, 100)
    if low == 0:
        return f"{cardinal(high)} hundred"
    return f"{cardinal(high)} {'oh ' + ONES[low] if low < 10 else cardinal(low)}"


def _money(match: re.Match) -> str:
    one, many, cent, cents = CURRENCIES[match.group(1)]
    whole, fraction = (
        int(match.group(2).replace(",", "")),
        int((match.group(3) or "0").ljust(2, "0")[:2]),
    )
    parts = [f"{cardinal(whole)} {one if whole == 1 else many}"] if whole or not fraction else []
    if fraction:
        parts.append(f"{cardinal(fraction)} {cent if fraction == 1 else cents}")
    return " ".join(parts)


def _decimal(match: re.Match) -> str:
    whole, digits = match.group(1).replace(",", ""), match.group(2)
    return f"{cardinal(int(whole))} point {' '.join(ONES[int(d)] for d in digits)}"


def _number(match: re.Match) -> str:
    text = match.group(0)
    value = int(text.replace(",", ""))
    if "," not in text and len(text) == 4 and 1100 <= value < 2100:
        return year(value)
    return cardinal(value)


def _time(match: re.Match) -> str:
    hours, minutes = int(match.group(1)), int(match.group(2))
    said = (
        "o'clock" if minutes == 0 else f"oh {ONES[minutes]}" if minutes < 10 else cardinal(minutes)
    )
    return f"{cardinal(hours)} {said}"


def _abbreviation(match: re.Match) -> str:
    return ABBREVIATIONS[match.group(1).lower()]


ABBREVIATION_PATTERN = re.compile(r"\b(" + "|".join(ABBREVIATIONS) + r")\.", re.IGNORECASE)
RULES = (
    (re.compile(r"([$£€])\s?(\d[\d,]*)(?:\.(\d+))?"), _money),
    (re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b"), _time),
    (re.compile(r"(\d[\d,]*)\.(\d+)"), _decimal),
    (re.compile(r"(\d+)(st|nd|rd|th)\b", re.IGNORECASE), lambda m: ordinal(int(m.group(1)))),
    (re.compile(r"\d{1,3}(?:,\d{3})+|\d+"), _number),
)


def normalize_text(text: str) -> str:
    """Spoken form of English text, in the characters of `TTS_CHARACTERS`."""
    for symbol, spoken in TYPOGRAPHY.items():
        text = text.replace(symbol, spoken)
    text = ABBREVIATION_PATTERN.sub(_abbreviation, text)
    for pattern, spell in RULES:
        text = pattern.sub(spell, text)
    for symbol, spoken in SYMBOLS.items():
        text = text.replace(symbol, spoken)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    text = "".join(c if c in TTS_CHARACTERS else " " for c in text)
    text = re.sub(r"\s+([,.!?;:)])", r"\1", " ".join(text.split()))  # no space before punctuation
    return text.strip()

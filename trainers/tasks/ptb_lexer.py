"""The rules of Stanford CoreNLP 3.4.1's PTB tokenizer (``PTBLexer.flex`` at tag v3.4.1) as Python regexes.

JFlex macros become the constants below, JFlex rules the ``RULES`` list, in the file's order, each with what
its action does (``ptb_tokenizer`` runs them). The options are those pycocoevalcap's command line gives: PTB3
escaping (brackets as -LRB- and the like, LaTeX quotes, ``...``, ``--``), ``tokenizeNLs``, no americanisation,
``/`` and ``*`` not escaped. The scanner is %caseless, which JFlex does not apply inside character classes:
``ci`` marks the literal text matched without regard to case.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import NamedTuple


def _char_class(test: Callable[[str], bool]) -> str:
    """The characters of the Basic Multilingual Plane that pass ``test``, as the inside of a regex class."""
    ranges: list[list[int]] = []
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF or not test(chr(code)):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


# JFlex's [:letter:], [:digit:] and [:uppercase:] are Java's Character.isLetter, isDigit and isUpperCase
# (the scanner reads UTF-16 units, so characters beyond the BMP never match them)
L = _char_class(lambda c: unicodedata.category(c).startswith("L"))
D = _char_class(lambda c: unicodedata.category(c) == "Nd")
UP = _char_class(lambda c: unicodedata.category(c) == "Lu")


def ci(words: str) -> str:
    """Literal text matched without regard to case (the scanner is %caseless; its character classes are not)."""
    return f"(?i:{words})"


# ---- the macros of PTBLexer.flex (v3.4.1), translated to Python regular expressions ----
SGML = (
    r"<(?:[!?][A-Za-z\-][^>\r\n]*"
    r"|[A-Za-z][A-Za-z0-9_:.\-]*(?:[ ]+(?:[A-Za-z][A-Za-z0-9_:.\-]*[ ]*=[ ]*(?:'[^']*'|\"[^\"]*\")"
    r"|[A-Za-z][A-Za-z0-9_:.\-]*))*[ ]*/?"
    r"|/[A-Za-z][A-Za-z0-9_:.\-]*)[ ]*>"
)
SPMDASH = "&" + ci("mdash|ndash|md") + ";|[\u0096\u0097\u2013\u2014\u2015]"
SPAMP = ci("&amp;")
SPPUNC = "&" + ci("ht|tl|ur|lr|qc|ql|qr|odq|cdq|#[0-9]+") + ";"
SPLET = "&[aeiouAEIOU]" + ci("acute|grave|uml") + ";"
SPACE = "[ \t\u00a0\u2000-\u200a\u3000]"
NEWLINE = "\r\n|\r|\n|\u2028|\u2029|\u000b|\u000c|\u0085"
SPACENL = f"(?:{SPACE}|{NEWLINE})"
SENTEND = f"{SPACENL}(?:{SPACENL}|[{UP}]|{SGML})"
DIGIT = f"[{D}\u07c0-\u07c9]"
DATE = f"{DIGIT}{{1,2}}[\\-/]{DIGIT}{{1,2}}[\\-/]{DIGIT}{{2,4}}"
NUM = f"{DIGIT}*(?:[.:,\u00ad\u066b\u066c]{DIGIT}+)+|{DIGIT}+"
NUMBER = f"[\\-+]?(?:{NUM})"
SUBSUPNUM = "[\u207a\u207b\u208a\u208b]?(?:[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+|[\u2080-\u2089]+)"
FRAC = f"(?:{DIGIT}{{1,4}}[\\- \u00a0])?{DIGIT}{{1,4}}(?:\\\\?/|\u2044){DIGIT}{{1,4}}"
FRAC2 = "[\u00bc\u00bd\u00be\u2153-\u215e]"
DOLSIGN = r"[A-Z]*\$|#"
DOLSIGN2 = "[\u00a2\u00a3\u00a4\u00a5\u0080\u20a0\u20ac\u060b\u0e3f\u20a4\uffe0\uffe1\uffe5\uffe6]"
LETTER_EXTRA = (
    "\u00ad\u0237-\u024f\u02c2-\u02c5\u02d2-\u02df\u02e5-\u02ff\u0300-\u036f\u0370-\u037d\u0384\u0385\u03cf\u03f6"
    "\u03fc-\u03ff\u0483-\u0487\u04cf\u04f6-\u04ff\u0510-\u0525\u055a-\u055f\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4"
    "\u05c5\u05c7\u0615-\u061a\u063b-\u063f\u064b-\u065e\u0670\u06d6-\u06ef\u06fa-\u06ff\u070f\u0711\u0730-\u074f"
    "\u0750-\u077f\u07a6-\u07b1\u07ca-\u07f5\u07fa\u0900-\u0903\u093c\u093e-\u094e\u0951-\u0955\u0962-\u0963"
    "\u0981-\u0983\u09bc-\u09c4\u09c7\u09c8\u09cb-\u09cd\u09d7\u09e2\u09e3\u0a01-\u0a03\u0a3c\u0a3e-\u0a4f"
    "\u0a81-\u0a83\u0abc-\u0acf\u0b82\u0bbe-\u0bc2\u0bc6-\u0bc8\u0bca-\u0bcd\u0c01-\u0c03\u0c3e-\u0c56\u0d3e-\u0d44"
    "\u0d46-\u0d48\u0e30-\u0e3a\u0e47-\u0e4e\u0eb1-\u0ebc\u0ec8-\u0ecd"
)
LETTER = f"(?:[{L}{LETTER_EXTRA}]|{SPLET})"
WORD = f"{LETTER}(?:{LETTER}|{DIGIT})*(?:[.!?]{LETTER}(?:{LETTER}|{DIGIT})*)*"
FILENAME_EXT = ci(
    "class|docx|html|java|jpeg|bat|bmp|cgi|cpp|dll|doc|exe|gif|htm|jar|jpg|mov|mp3|pdf|php|png|ppt|sql|tar|txt"
    "|wav|xml|zip|gz|pl|ps|py|c|h|x"
)
FILENAME = f"(?:{LETTER}|{DIGIT})+(?:[.](?:{LETTER}|{DIGIT})+)*[.]{FILENAME_EXT}"
APOS = "(?:['\u0092\u2019]|" + ci("&apos;") + ")"
APOSETCETERA = f"(?:{APOS}|[`\u0091\u2018\u201b])"
HYPHEN = "[\\-_\u058a\u2010\u2011]"
_LD = f"[{L}{D}]"  # [:letter:]|[:digit:]
_THING_PART = f"(?:[dDoOlL]{APOSETCETERA}{_LD})?{_LD}+"
THING = f"{_THING_PART}(?:{HYPHEN}{_THING_PART})*"
THINGA = "[A-Z]+(?:(?:" + ci("&amp;") + "|[+&])[A-Z]+)+"
THING3 = r"[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\?/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}"
_ACRO_SPECIAL = (
    ci("canada|sino|korean|eu|japan|non") + "-" + ci(r"u\.s") + "|" + ci(r"u\.s\.-") + ci(r"u\.s\.s\.r|u\.k")
)
ACRO = f"{_ACRO_SPECIAL}|[A-Za-z](?:\\.[A-Za-z])*"
ACRO2 = f"{_ACRO_SPECIAL}|[A-Za-z](?:\\.[A-Za-z])+"
HTHING = f"[A-Za-z0-9][A-Za-z0-9.,\u00ad]*(?:-(?:(?:{ACRO2})\\.|[A-Za-z0-9\u00ad]+))+"
REDAUX = f"{APOS}(?:[msdMSD]|{ci('re|ve|ll')})"
SWORD = "[A-Za-z\u00ad]*[A-MO-Za-mo-z]\u00ad*"
SREDAUX = f"{ci('n')}{APOSETCETERA}{ci('t')}"
APOWORD_ALTERNATIVES = (
    f"{APOS}{ci('n')}{APOS}?",
    f"[lLdDjJ]{APOS}",
    f"{ci('dunkin')}{APOS}",
    f"{ci('somethin')}{APOS}",
    f"{ci('ol')}{APOS}",
    f"{APOS}{ci('em')}",
    f"[A-HJ-XZn]{APOSETCETERA}[{L}]{{2}}[{L}]*",
    f"{APOS}[2-9]{ci('0s')}",
    f"{APOS}{ci('till?')}",
    f"[{L}][{L}]*[aeiouyAEIOUY]{APOSETCETERA}[aeiouA-Z][{L}]*",
    f"{APOS}{ci('cause')}",
    ci(r"cont'd\.?|'twas|nor'easter|c'mon|e'er|s'mores|ev'ry|li'l|nat'l"),
    f"{ci('o')}{APOSETCETERA}{ci('o')}",
)
APOWORD2 = f"{ci('y')}{APOS}"
FULLURL = ci("https?") + r"://[^ \t\n\f\r\"<>|(){}]+[^ \t\n\f\r\"<>|.!?(){},-]"
_URL_PATH = r"(?:/[^ \t\n\f\r\"<>|()]+[^ \t\n\f\r\"<>|.!?(){},-])?"
LIKELYURL_ALTERNATIVES = (
    ci("www") + r"\.(?:[^ \t\n\f\r\"<>|.!?(){},]+\.)+[a-zA-Z]{2,4}" + _URL_PATH,
    # `,-_` is a range (comma to underscore: digits, capitals and more), as it is in the JFlex source
    r"(?:[^ \t\n\f\r\"`'<>|.!?(){},-_$]+\.)+" + ci("com|net|org|edu") + _URL_PATH,
)
EMAIL = (
    "(?:" + ci("&lt;") + r"|<)?[a-zA-Z0-9][^ \t\n\f\r\"<>|()\u00a0{}]*@(?:[^ \t\n\f\r\"<>|(){}.\u00a0]+\.)*"
    r"(?:[^ \t\n\f\r\"<>|(){}.\u00a0]+)(?:" + ci("&gt;") + "|>)?"
)
TWITTER = f"@[a-zA-Z_][a-zA-Z_0-9]*|#{LETTER}+"
ABMONTH = ci("jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec")
ABDAYS = ci("mon|tues|tue|wed|thurs|thu|fri")
ABSTATE = "|".join(
    ci(w) if w[0] != "[" else f"{w[1]}{ci(w[3:])}"
    for w in (
        "ala|ariz|[A]z|[A]rk|calif|colo|conn|ct|dak|[D]el|fla|ga|[I]ll|ind|kans?|ky|[L]a|[M]ass|md|mich|minn|[M]iss"
        "|mo|mont|neb|nev|okla|[O]re|[P]a|penn|tenn|[T]ex|va|vt|[W]ash|wisc?|wyo"
    ).split("|")
)
ABCOMP = ci("inc|cos?|corp|pp?t[ye]s?|ltd|plc|rt|bancorp|bhd|assn|univ|intl|sys")
ABNUM = ci("tel|est|ext|sq")
ABPTIT = ci(r"jr|sr|bros|(?:ed|ph)\.d|blvd|rd|esq")
ABBREV1 = f"(?:{ABMONTH}|{ABDAYS}|{ABSTATE}|{ABCOMP}|{ABNUM}|{ABPTIT}|{ci('etc|al|seq|bldg')})\\."
ABTITLE = (
    ci("mrs|mr|ms")
    + "|M"
    + ci("iss")
    + "|"
    + ci(
        "drs?|profs?|sens?|reps?|attys?|lt|col|gen|messrs|govs?|adm|rev|maj|sgt|cpl|pvt|capt|ste?|ave|pres|lieut"
        "|hon|brig|co?mdr|pfc|spc|supts?|det|mt|ft|adj|adv|asst|assoc|ens|insp|mlle|mme|msgr|sfc"
    )
)
ABCOMP2 = ci("invt|elec|natl|m[ft]g|dept")
ABBREV4 = ABTITLE + "|" + ci(r"vs|alex|wm|jos|cie|a\.k\.a|cf|treas|ph") + f"|{ACRO}|{ABCOMP2}"
ABBREV2 = f"(?:{ABBREV4})\\."
ACRONYM = f"(?:{ACRO})\\."
ABBREV3 = ci(r"(?:ca|figs?|prop|nos?|art|bldg|pp|op)\.")
PHONE_ALTERNATIVES = (
    r"(?:\([0-9]{2,3}\)[ \u00a0]?|(?:\+\+?)?(?:[0-9]{2,4}[\- \u00a0])?[0-9]{2,4}[\- \u00a0])"
    r"[0-9]{3,4}[\- \u00a0]?[0-9]{3,5}",
    r"(?:(?:\+\+?)?[0-9]{2,4}\.)?[0-9]{2,4}\.[0-9]{3,4}\.[0-9]{3,5}",
)
LDOTS_ALTERNATIVES = (r"\.{3,5}", r"(?:\.[ \u00a0]){2,4}\.", "[\u0085\u2026]")
ASTS = r"\*+|(?:\\\*){1,3}"
FNMARKS = "@+|#+|_+"
INSENTP = "[,;:\u3001]"
QUOTES_ALTERNATIVES = (
    APOS,
    "''",
    "[`\u2018\u2019\u201a\u201b\u201c\u201d\u0091\u0092\u0093\u0094\u201e\u201f\u2039\u203a\u00ab\u00bb]{1,2}",
)
DBLQUOT = '"|' + ci("&quot;")
SMILEY = r"[<>]?[:;=][\-o*']?[()DPdpO\\{@|\[\]]"
ASIANSMILEY_ALTERNATIVES = (
    r"[\^x=~<>]\.\[\^x=~<>]",
    r"[\-\^x=~<>']_[\-\^x=~<>']",
    r"\([\-\^x=~<>'][_.]?[\-\^x=~<>']\)",
    r"\([\^x=~<>']-[\^x=~<>'`]\)",
)
MISCSYMBOL = (
    "[+%&~\\^|\\\\\u00a6\u00a7\u00a8\u00a9\u00ac\u00ae\u00af\u00b0-\u00b3\u00b4-\u00ba\u00d7\u00f7\u0387\u05be\u05c0"
    "\u05c3\u05c6\u05f3\u05f4\u0600-\u0603\u0606-\u060a\u060c\u0614\u061b\u061e\u066a\u066d\u0703-\u070d\u07f6"
    "\u07f7\u07f8\u0964\u0965\u0e4f\u1fbd\u2016\u2017\u2020-\u2023\u2030-\u2038\u203b\u203e-\u2042\u2044"
    "\u207a-\u207f\u208a-\u208e\u2100-\u214f\u2190-\u21ff\u2200-\u2bff\u3012\u30fb\uff01-\uff0f\uff1a-\uff20"
    "\uff3b-\uff40\uff5b-\uff65]"
)
_ACRONYM_NEXT = "|".join(
    f"{w[0]}{ci(w[1:])}" if len(w) > 1 else w
    for w in (
        "About According Additionally After An A As At But Earlier He Her Here However If In It Last Many More "
        r"Mr\. Ms\. Now Once One Other Our She Since So Some Such That The Their Then There These They This We When "
        "While What Yet You"
    ).split()
)

# ---- what a rule does with its text: (token or None, how many characters it consumes) ----
Action = Callable[[str], tuple[str | None, int]]


def keep(text: str) -> tuple[str | None, int]:
    return text, len(text)


def word(text: str) -> tuple[str | None, int]:
    """Words and numbers lose their soft hyphens (U+00AD), which only mark where a line may break."""
    return text.replace("\u00ad", "") or "-", len(text)


def skip(text: str) -> tuple[str | None, int]:
    return None, len(text)


def becomes(token: str) -> Action:
    return lambda text: (token, len(text))


def push_back(n: int) -> Action:
    """Return the text less its last ``n`` characters, which are scanned again (``cannot`` -> ``can`` ``not``)."""
    return lambda text: (text[:-n], len(text) - n)


def with_period_again(text: str) -> tuple[str | None, int]:
    """An abbreviation ending a sentence: the token keeps its period and the period is also a token."""
    return text, len(text) - 1


def acronym_before_sentence(text: str) -> tuple[str | None, int]:
    """``U.S. The`` -> ``U.S.`` ``.``; a one-letter ``I. The`` -> ``I`` ``.``."""
    return (text[:-1], 1) if len(text) == 2 else (text, len(text) - 1)


# the curly and CP1252 quotes, as PTBLexer's leftSingleQuote, rightSingleQuote, leftDoubleQuote, rightDoubleQuote
_QUOTE_MAP = str.maketrans(
    {
        **dict.fromkeys("\u0091\u2018\u201b\u2039", "`"),
        **dict.fromkeys("\u0092\u2019\u203a", "'"),
        **dict.fromkeys("\u0093\u201c\u00ab", "``"),
        **dict.fromkeys("\u0094\u201d\u00bb", "''"),
    }
)


def quotes(left: bool) -> Action:
    """PTB (LaTeX-style) quotes: ' and " become ` and `` where they probably open a quote, else ' and ''."""

    def action(text: str) -> tuple[str | None, int]:
        token = text.replace("&apos;", "'").replace("&quot;", '"')
        token = token.replace("'", "`" if left else "'").replace('"', "``" if left else "''")
        return token.translate(_QUOTE_MAP), len(text)

    return action


def fractions(text: str) -> tuple[str | None, int]:
    table = {"\u00bc": "1/4", "\u00bd": "1/2", "\u00be": "3/4", "\u2153": "1/3", "\u2154": "2/3"}
    return "".join(table.get(c, c) for c in text), len(text)


def currency(text: str) -> tuple[str | None, int]:
    return re.sub("[\u0080\u00a4\u20a0\u20ac]", "$", text.replace("\u00a2", "cents").replace("\u00a3", "#")), len(text)


def amp(text: str) -> tuple[str | None, int]:
    return re.sub("(?i:&amp;)", "&", text), len(text)


def spaces_to_nbsp(text: str) -> tuple[str | None, int]:
    return text.replace(" ", "\u00a0"), len(text)


def brackets(text: str) -> tuple[str | None, int]:
    return text.replace("(", "-LRB-").replace(")", "-RRB-"), len(text)


def phone(text: str) -> tuple[str | None, int]:
    return brackets(text.replace(" ", "\u00a0"))[0], len(text)


def dashes(text: str) -> tuple[str | None, int]:
    return ("--" if 3 <= len(text) <= 4 else text), len(text)


NEWLINE_TOKEN = "\n"


class Rule(NamedTuple):
    name: str
    alternatives: tuple[str, ...]  # regexes of r1; several where the longest of them must win
    context: str | None  # the trailing context r2 of a rule ``r1/r2``
    action: Action


# PTBLexer.flex's rules in its order. Several alternatives stand for one rule whose longest alternative
# Python's first-match regexes would miss.
RULE_TABLE: list[tuple[str, tuple[str, ...], str | None, Action]] = [
    ("c++", (ci("c") + r"[+][+]",), None, keep),
    ("c#", (ci("c|f") + "#",), None, keep),
    ("cannot", (ci("cannot"),), None, push_back(3)),
    ("'twas", ("'" + ci("twas"),), None, push_back(3)),
    ("'tis", ("'" + ci("tis"),), None, push_back(2)),
    ("gonna", (ci("gonna|gotta|lemme|gimme|wanna"),), None, push_back(2)),
    ("SGML", (SGML,), None, spaces_to_nbsp),
    ("SPMDASH", (SPMDASH,), None, becomes("--")),
    ("SPAMP", (SPAMP,), None, becomes("&")),
    ("SPPUNC", (SPPUNC,), None, keep),
    ("WORD/REDAUX", (WORD,), REDAUX, word),
    ("SWORD/SREDAUX", (SWORD,), SREDAUX, word),
    ("WORD", (WORD,), None, word),
    ("APOWORD", APOWORD_ALTERNATIVES, None, keep),
    ("APOWORD2", (APOWORD2,), f"[{L}]", keep),
    ("FULLURL", (FULLURL,), None, keep),
    ("LIKELYURL", LIKELYURL_ALTERNATIVES, None, keep),
    ("EMAIL", (EMAIL,), None, keep),
    ("TWITTER", (TWITTER,), None, keep),
    ("REDAUX/", (REDAUX,), "[^A-Za-z]", quotes(left=False)),
    ("SREDAUX/", (SREDAUX,), "[^A-Za-z]", quotes(left=False)),
    ("DATE", (DATE,), None, keep),
    ("NUMBER", (NUMBER,), None, word),
    ("SUBSUPNUM", (SUBSUPNUM,), None, keep),
    ("FRAC", (FRAC,), None, spaces_to_nbsp),
    ("FRAC2", (FRAC2,), None, fractions),
    (
        "TBSPEC",
        (
            ci(r"-(?:rrb|lrb|rcb|lcb|rsb|lsb)-|c\.d\.s|pro-|anti-|s(?:&amp;|&)p-500|s(?:&amp;|&)ls"),
            ci("cap") + APOS + ci("n"),
            ci("c") + APOS + ci("est"),
        ),
        None,
        amp,
    ),
    ("THING3", (THING3,), None, keep),
    ("DOLSIGN", (DOLSIGN,), None, keep),
    ("DOLSIGN2", (DOLSIGN2,), None, currency),
    ("ACRONYM/", (ACRONYM,), f"{SPACENL}+(?:{_ACRONYM_NEXT}|{SGML}){SPACENL}", acronym_before_sentence),
    ("ABBREV3/", (ABBREV3,), f"{SPACENL}?[{D}]", keep),
    ("pty.", (ci(r"pt[eyEY]\.|co\."),), SPACE + ci("ltd|lim"), keep),
    ("ABBREV1/SENTEND", (ABBREV1,), SENTEND, with_period_again),
    ("ABBREV1/..", (ABBREV1,), r"[\s\S][\s\S]", keep),
    ("ABBREV1", (ABBREV1,), None, with_period_again),
    ("ABBREV2", (ABBREV2,), None, keep),
    ("ABBREV4/", (ABBREV4,), SPACE, keep),
    ("ACRO/", (ACRO,), SPACENL, keep),
    ("TBSPEC2/", (APOS + "[0-9][0-9]",), SPACENL, keep),
    ("FILENAME/", (FILENAME,), f"{SPACENL}|[.?!,]", keep),
    ("WORD./", (WORD + r"\.",), INSENTP, word),
    ("PHONE", PHONE_ALTERNATIVES, None, phone),
    ("DBLQUOT/", (DBLQUOT,), "[A-Za-z0-9$]", quotes(left=True)),
    ("DBLQUOT", (DBLQUOT,), None, quotes(left=False)),
    ("DEL", ("\x7f",), None, skip),
    ("LESSTHAN", ("<|" + ci("&lt;"),), None, becomes("<")),
    ("GREATERTHAN", (">|" + ci("&gt;"),), None, becomes(">")),
    ("SMILEY/", (SMILEY,), "[^A-Za-z0-9]", brackets),
    ("ASIANSMILEY", ASIANSMILEY_ALTERNATIVES, None, brackets),
    ("{", (r"\{",), None, becomes("-LCB-")),
    ("}", (r"\}",), None, becomes("-RCB-")),
    ("[", (r"\[",), None, becomes("-LSB-")),
    ("]", (r"\]",), None, becomes("-RSB-")),
    ("(", (r"\(",), None, becomes("-LRB-")),
    (")", (r"\)",), None, becomes("-RRB-")),
    ("HYPHENS", (r"-+",), None, dashes),
    ("LDOTS", LDOTS_ALTERNATIVES, None, becomes("...")),
    ("FNMARKS", (FNMARKS,), None, keep),
    ("ASTS", (ASTS,), None, keep),
    ("INSENTP", (INSENTP,), None, keep),
    ("?!", ("[?!]+",), None, keep),
    ("period", ("[.\u00a1\u00bf\u037e\u0589\u061f\u06d4\u0700-\u0702\u07fa\u3002]",), None, keep),
    ("=", ("=",), None, keep),
    ("/", ("/",), None, keep),
    ("HTHING./", (HTHING + r"\.",), INSENTP, word),
    ("HTHING", (HTHING,), None, word),
    ("THING./", (THING + r"\.",), INSENTP, keep),
    ("THING", (THING,), None, keep),
    ("THINGA./", (THINGA + r"\.",), INSENTP, amp),
    ("THINGA", (THINGA,), None, amp),
    ("'/", ("'",), "[A-Za-z][^ \t\n\r\u00a0]", quotes(left=True)),
    ("REDAUX", (REDAUX,), None, quotes(left=False)),
    ("SREDAUX", (SREDAUX,), None, quotes(left=False)),
    ("QUOTES", QUOTES_ALTERNATIVES, None, quotes(left=False)),
    ("FAKEDUCKFEET", ("<<|>>",), None, keep),
    ("MISCSYMBOL", (MISCSYMBOL,), None, keep),
    ("SPACES", (f"\x00|{SPACE}+|[\u200b\u200e\u200f\ufeff]",), None, skip),
    ("NEWLINE", (NEWLINE,), None, becomes(NEWLINE_TOKEN)),
    ("&nbsp;", (ci("&nbsp;"),), None, skip),
    ("untokenizable", (r"[^\n]",), None, skip),
]
RULES = [Rule(*r) for r in RULE_TABLE]

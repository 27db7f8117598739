"""Captions tokenized as coco-caption's ``PTBTokenizer`` tokenizes them, in Python (no Java).

pycocoevalcap (``tokenizer/ptbtokenizer.py``) writes every caption, one a line, to a file; runs Stanford
CoreNLP 3.4.1's ``edu.stanford.nlp.process.PTBTokenizer -preserveLines -lowerCase`` over it; and drops the
tokens in ``PUNCTUATIONS``; its BLEU and CIDEr then split the rest on whitespace. The Java tokenizer is a
JFlex scanner (``PTBLexer.flex`` at tag v3.4.1): at each position the rule with the longest match wins, ties
going to the rule listed first, and a rule ``r1/r2`` matches ``r1`` only where ``r2`` follows, ``r2``'s
length counting toward the longest match. ``ptb_lexer.RULES`` are that file's rules, in its order, with the
options the command line sets (PTB3 escaping, ``tokenizeNLs``; no americanisation, ``/`` not escaped).

What this gives for captions: possessives and contractions split (``man's`` -> ``man 's``, ``it's`` ->
``it 's``, ``don't`` -> ``do n't``, ``cannot`` -> ``can not``); hyphenated words, numbers (``1,000``,
``3.5``) and abbreviations (``mr.``, ``u.s.``, ``a.m.``) kept whole; quotes, periods, commas, dashes and the
other tokens in ``PUNCTUATIONS`` dropped. Brackets become ``-lrb-`` and the like, which pycocoevalcap keeps:
its list holds them upper-case, and the tokenizer has already lower-cased them.

Captions are tokenized together, joined by newlines as pycocoevalcap joins them, because a few rules look
past the end of a line (an abbreviation at the end of a caption followed by one that starts upper-case).
One deliberate difference: a line break inside a caption other than ``\\n`` (``\\r``, U+2028, ...) is a
space here, where pycocoevalcap would start a new output line and misalign every later caption.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Sequence

from .ptb_lexer import ABBREV1, ABBREV2, ABBREV3, NEWLINE_TOKEN, RULES, SPACE, Rule, ci

# pycocoevalcap's tokenizer/ptbtokenizer.py
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)
# Fast paths that give what the rules give (tests/test_caption_scores.py compares both on every reference):
# a run of ASCII letters ending at a space or line end, or at one of , ; : ! ? . before one, is one word unless
# the scanner splits it (cannot) or, before a period, it is an abbreviation that keeps the period (mr.);
# a period before a space, a line end or the end is a period; spaces are skipped; a line break is one.
_PLAIN_WORD = re.compile(r"[A-Za-z]+(?:(?=[,;:!?]?(?:[ \n]|\Z))|(?=\.(?:[ \n]|\Z)))")
_SPLIT_WORDS = frozenset({"cannot", "gonna", "gotta", "lemme", "gimme", "wanna"})
_PLAIN_PERIOD = re.compile(r"\.(?=\n|\Z| (?!\.))")
_SPACES = re.compile(f"{SPACE}+")
# line breaks other than \n, which the scanner would take for the end of a caption (see the module docstring)
_OTHER_LINE_BREAKS = re.compile("\r|\u2028|\u2029|\u000b|\u000c")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _as_java_chars(text: str) -> str:
    """Characters beyond the BMP (emoji, ...) as the two UTF-16 units a Java string holds, which the scanner
    sees one at a time (``http://😀`` is a URL to it: two characters follow the slashes)."""

    def pair(m: re.Match) -> str:
        code = ord(m.group()) - 0x10000
        return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))

    return _ASTRAL.sub(pair, text)


def _as_python_text(token: str) -> str:
    """UTF-16 pairs joined again; a half left alone is written ``?``, as Java writes it to UTF-8."""
    if not _SURROGATE.search(token):
        return token
    joined = token.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return joined.replace("\ufffd", "?")


@functools.cache
def _compiled() -> tuple[list[tuple[re.Pattern, bool, Rule]], re.Pattern]:
    """Every rule alternative compiled (token in group ``t``, trailing context in ``c``), and a regex of the
    abbreviations that keep their period. Compiled on first use: it takes most of a second."""
    patterns = []
    for rule in RULES:
        tail = f"(?=(?P<c>{rule.context}))" if rule.context else ""
        patterns += [(re.compile(f"(?P<t>{a}){tail}"), rule.context is not None, rule) for a in rule.alternatives]
    abbreviations = re.compile(f"{ABBREV1}|{ABBREV2}|{ABBREV3}|" + ci(r"pt[eyEY]\.|co\."))
    return patterns, abbreviations


def _longest(text: str, pos: int) -> tuple[Rule, str]:
    """The rule that wins at ``pos`` (longest match counting trailing context; the first rule on ties), its text."""
    best, best_text, best_length = RULES[-1], text[pos], 0
    for pattern, has_context, rule in _compiled()[0]:
        m = pattern.match(text, pos)
        if m is None:
            continue
        length = m.end("t") - pos + (len(m.group("c")) if has_context else 0)
        if length > best_length:
            best, best_text, best_length = rule, m.group("t"), length
    return best, best_text


def _fast(text: str, pos: int) -> tuple[str | None, int] | None:
    """The token at ``pos`` and where the next starts, where a fast path applies; else None."""
    c = text[pos]
    if c == " " or c == "\t":
        return None, _SPACES.match(text, pos).end()  # type: ignore[union-attr]
    if c == "\n":
        return NEWLINE_TOKEN, pos + 1
    if c == ".":
        return (".", pos + 1) if _PLAIN_PERIOD.match(text, pos) else None
    m = _PLAIN_WORD.match(text, pos)
    if m is None or m.group().lower() in _SPLIT_WORDS:
        return None
    if text.startswith(".", m.end()) and _compiled()[1].fullmatch(text, pos, m.end() + 1):
        return None
    return m.group(), m.end()


def scan(text: str, fast: bool = True) -> list[str]:
    """PTBLexer's tokens of ``text`` (before lower-casing), with ``NEWLINE_TOKEN`` at each line break;
    ``fast=False`` takes every token from the rules (the tests compare the two)."""
    tokens, pos = [], 0
    while pos < len(text):
        step = _fast(text, pos) if fast else None
        if step is None:
            rule, matched = _longest(text, pos)
            token, consumed = rule.action(matched)
            step = token, pos + consumed
        token, pos = step
        if token is not None:
            tokens.append(token)
    return tokens


def ptb_tokenize(captions: Sequence[str]) -> list[list[str]]:
    """Each caption's words as pycocoevalcap's BLEU and CIDEr see them after its ``PTBTokenizer``.

    The captions are scanned as one text, a caption a line (see the module docstring); tokens are
    lower-cased, those in ``PUNCTUATIONS`` dropped and the rest split on whitespace, as pycocoevalcap does.
    """
    if not captions:
        return []
    text = "\n".join(_OTHER_LINE_BREAKS.sub(" ", c.replace("\n", " ")) for c in captions)
    lines: list[list[str]] = [[]]
    for token in scan(_as_java_chars(text)):
        if token == NEWLINE_TOKEN:
            lines.append([])
        else:
            token = _as_python_text(token).lower()  # Java's toLowerCase(Locale.ENGLISH)
            if token not in PUNCTUATIONS:
                lines[-1].append(token)
    return [" ".join(line).split() for line in lines]


if __name__ == "__main__":  # tokenize the lines of stdin (for comparing with the Java tokenizer by hand)
    print("\n".join(" ".join(t) for t in ptb_tokenize(sys.stdin.read().split("\n"))))

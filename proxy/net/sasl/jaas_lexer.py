"""The tokenizer of JAAS text: `java.io.StreamTokenizer` as the JDK's ConfigFile (a JAAS file) or Kafka's JaasConfig
(a `sasl.jaas.config` value) sets it up. The syntax it reads is described in proxy/net/sasl/jaas_parser.py."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from proxy.net.sasl.jaas_model import MAX_JAAS_BYTES, JaasError

__all__ = [
    "BAD",
    "EOF",
    "FILE_WORD",
    "PROPERTY_WORD",
    "PUNCT",
    "QUOTED",
    "WORD",
    "Lexer",
    "Token",
    "check_size",
    "describe",
    "shown_name",
]

WORD, QUOTED, PUNCT, BAD, EOF = "word", "quoted", "punct", "bad", "eof"

_WHITESPACE = re.compile(r"[\x00-\x20]+")
# ConfigFile (StreamTokenizer's defaults plus $ _ - *): a word starts with a letter, $, _, *, U+00A0..U+00FF or
# anything past U+00FF, and goes on over those, digits, '.' and '-'. A digit, '.' or '-' first starts a number.
FILE_WORD = re.compile(r"[A-Za-z$_*\u00a0-\U0010ffff][A-Za-z0-9$_*.\-\u00a0-\U0010ffff]*")
_FILE_NUMBER = re.compile(r"-?[0-9.][0-9.]*|-")
# JaasConfig: every character from U+0021 to U+0080 but ; = / " ', U+00A0 and up.
PROPERTY_WORD = re.compile(r"[^\x00-\x20;=/\"'\x81-\x9f]+")
_SPECIAL_IN_QUOTES = {'"': re.compile(r'["\\\r\n]'), "'": re.compile(r"['\\\r\n]")}
_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BLOCK_COMMENT_END = re.compile(r"\*/")
_LINE_END = re.compile(r"[\r\n]")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str  # the word, the unquoted value, the punctuation character; "" at the end
    pos: int
    quote: str = ""
    why: str = ""  # for BAD


class Lexer:
    """StreamTokenizer as ConfigFile (`file=True`) or JaasConfig (`file=False`) sets it up."""

    def __init__(self, text: str, *, file: bool, source: str, key: str | None) -> None:
        self.text = text
        self.file = file
        self.source = source
        self.key = key
        self.pos = 0
        self.entry: str | None = None
        self._line_starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        self.lone_slashes: list[int] = []  # a '/' that began a comment to the end of its line, inside an unquoted value
        self.open_comment: int | None = None  # position of a '/*' never closed
        self.gap_start = 0  # where the whitespace and comments before the last token began

    def where(self, pos: int) -> tuple[int, int]:
        index = bisect.bisect_right(self._line_starts, pos) - 1
        return index + 1, pos - self._line_starts[index] + 1

    def error(self, reason: str, pos: int, *, since: int | None = None) -> JaasError:
        """An error at `pos`; `since` (where the module began) decides which comment hints apply."""
        line, column = self.where(min(pos, len(self.text)))
        hints = []
        start = 0 if since is None else min(since, self.gap_start)
        for slash in self.lone_slashes:
            if start <= slash <= pos:
                hints.append(
                    f"the '/' on line {self.where(slash)[0]} starts a comment in JAAS syntax, so the rest of that line is ignored: quote values that contain '/'"
                )
                break
        if self.open_comment is not None and pos >= len(self.text):
            hints.append(f"the '/*' comment opened on line {self.where(self.open_comment)[0]} is never closed")
        if hints:
            reason = f"{reason} ({'; '.join(hints)})"
        return JaasError(reason, file=self.source, line=line, column=column, entry=self.entry, key=self.key)

    def _skip(self) -> None:
        text = self.text
        while True:
            match = _WHITESPACE.match(text, self.pos)
            if match is not None:
                self.pos = match.end()
            if not text.startswith("/", self.pos):
                return
            after = text[self.pos + 1 : self.pos + 2]
            if after == "*":
                end = _BLOCK_COMMENT_END.search(text, self.pos + 2)
                if end is None:
                    self.open_comment = self.pos
                    self.pos = len(text)
                    return
                self.pos = end.end()
            elif after == "/":
                if self.pos and text[self.pos - 1] not in ' \t\r\n;={}"\'':
                    self.lone_slashes.append(self.pos)  # glued to a word, as in an unquoted http://...: worth a hint
                self.pos = self._line_end(self.pos)
            else:
                # A lone '/': StreamTokenizer reads the next character (even a line break), then skips to the end of the line.
                self.lone_slashes.append(self.pos)
                self.pos = self._line_end(min(self.pos + 2, len(text)))

    def _line_end(self, pos: int) -> int:
        found = _LINE_END.search(self.text, pos)
        return len(self.text) if found is None else found.start()

    def next(self) -> Token:
        self.gap_start = self.pos
        self._skip()
        text, pos = self.text, self.pos
        if pos >= len(text):
            return Token(EOF, "", pos)
        char = text[pos]
        if char in "\"'":
            return self._quoted(char)
        if char in ";=" or (self.file and char in "{}"):
            self.pos = pos + 1
            return Token(PUNCT, char, pos)
        word = (FILE_WORD if self.file else PROPERTY_WORD).match(text, pos)
        if word is not None:
            self.pos = word.end()
            return Token(WORD, word.group(), pos)
        if self.file:
            number = _FILE_NUMBER.match(text, pos)
            if number is not None:
                self.pos = number.end()
                return Token(BAD, "", pos, why="a name or value starting with a digit, '.' or '-', which Java's JAAS parser refuses unless quoted")
        self.pos = pos + 1
        shown = repr(char) if 0x21 <= ord(char) < 0x7F else f"the character U+{ord(char):04X}"
        return Token(BAD, "", pos, why=f"{shown}, which must be quoted")

    def _quoted(self, quote: str) -> Token:
        text, start = self.text, self.pos
        special = _SPECIAL_IN_QUOTES[quote]
        out: list[str] = []
        index = start + 1
        while True:
            match = special.search(text, index)
            if match is None or match.group() in "\r\n":
                stop = len(text) if match is None else match.start()
                end = "the end of the line" if match is not None else "the end of the text"
                raise self.error(f"a quoted value is not closed before {end} (Java would end it there; close the quote)", stop, since=start)
            out.append(text[index : match.start()])
            index = match.end()
            if match.group() == quote:
                self.pos = index
                if self.file and quote == "'":
                    return Token(BAD, "", start, why="a value in single quotes, which Java's JAAS file parser refuses: use double quotes")
                return Token(QUOTED, "".join(out), start, quote=quote)
            # a backslash escape, as StreamTokenizer reads it
            if index >= len(text):
                raise self.error("a quoted value ends with a lone backslash", index, since=start)
            escaped = text[index]
            if "0" <= escaped <= "7":
                digits = 1
                limit = 3 if escaped <= "3" else 2
                while digits < limit and index + digits < len(text) and "0" <= text[index + digits] <= "7":
                    digits += 1
                out.append(chr(int(text[index : index + digits], 8)))
                index += digits
            else:
                out.append(_ESCAPES.get(escaped, escaped))
                index += 1


def shown_name(name: str, limit: int = 80) -> str:
    """A class, entry or option name as an error message shows it: at most `limit` characters, printable."""
    short = name if len(name) <= limit else name[:limit] + "..."
    return short if short and short.isprintable() and " " not in short else repr(short)


def describe(token: Token, end: str) -> str:
    if token.kind == EOF:
        return end
    if token.kind == PUNCT:
        return repr(token.text)
    if token.kind == QUOTED:
        return "a quoted value"
    if token.kind == BAD:
        return token.why
    return "a name"


def check_size(text: str, *, source: str, key: str | None) -> None:
    if len(text) > MAX_JAAS_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_JAAS_BYTES:
        raise JaasError(f"larger than {MAX_JAAS_BYTES} bytes, the limit for JAAS configuration", file=source, key=key)

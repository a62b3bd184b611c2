"""Deterministic chunking of Markdown and plain text.

Text is split into blocks (Markdown headings start a section; blank lines end
a paragraph), blocks are packed greedily up to ``size`` characters, and a
block longer than ``size`` is cut between list items and sentences (one item or sentence that
fits in ``size`` stays whole, a chunk of its own), then at
word boundaries; a table is cut between rows only, and each piece of it repeats
the header row (a row read without its header means nothing: "Grande (acima de
25 kg) | R$ 105,00 | R$ 165,00"). Each
chunk after the first of a section starts with the previous chunk's last
whole sentences that fit in ``overlap`` characters, so context that spans a
boundary stays retrievable without a chunk starting mid-sentence. The same input always gives the same chunks, so
an unchanged paragraph keeps its content_hash and is not re-embedded.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
# where a long paragraph may be cut: after a sentence, or before a list item ("- Broto: R$ 32,00")
_PIECE_END = re.compile(r"(?<=[.!?…])\s+|\s+(?=[-•*]\s+\S)")
_TABLE_RULE = re.compile(r"\|\s*:?-{3,}:?\s*\|")
_ROW_END = re.compile(r"(?<=\|)\s+(?=\|)")


@dataclass(frozen=True)
class Chunk:
    seq: int
    content: str

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sections(text: str) -> list[list[str]]:
    """Sections of paragraphs; a Markdown heading opens a new section."""
    sections: list[list[str]] = [[]]
    para: list[str] = []

    def flush() -> None:
        if para:
            sections[-1].append(" ".join(s.strip() for s in para).strip())
            para.clear()

    for line in text.replace("\r\n", "\n").split("\n"):
        if _HEADING.match(line):
            flush()
            sections.append([line.strip()])
        elif not line.strip():
            flush()
        else:
            para.append(line)
    flush()
    return [[p for p in s if p] for s in sections if any(p for p in s)]


def _split_table(block: str, size: int) -> list[str] | None:
    """A Markdown table (its lines joined by spaces) cut between rows, every piece
    starting with the header row and the rule; None if ``block`` is not one."""
    start = block.find("|")
    rule = _TABLE_RULE.search(block)
    if start < 0 or rule is None or block[:start].strip():
        return None
    rows = [r.strip() for r in _ROW_END.split(block[start:]) if r.strip()]
    head = [r for r in rows if not re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+", r)]
    rules = [r for r in rows if r not in head]
    if len(head) < 2 or not rules:
        return None
    header = f"{head[0]} {rules[0]}"
    out, cur = [], header
    for r in head[1:]:
        if cur != header and len(cur) + 1 + len(r) > size:
            out.append(cur)
            cur = header
        cur = f"{cur} {r}"
    out.append(cur)
    return out


def _split_long(block: str, size: int, whole: int | None = None) -> list[str]:
    """``block`` packed into pieces of up to ``size`` characters, cut between list items and
    sentences; a single sentence or list item is cut at words only past ``whole`` (default
    ``size``): an item a little longer than ``size`` stays one piece, a chunk of its own, rather
    than lose its end ("- **Pacote Aurora** — R$ 260,00: …, cesta de chocolates e morangos e
    balões" / "pode ser escolhida).")."""
    whole = size if whole is None else max(size, whole)
    if len(block) <= size:
        return [block]
    table = _split_table(block, size)
    if table is not None:
        return table
    out: list[str] = []
    cur = ""
    for piece in _PIECE_END.split(block):
        if size < len(piece) <= whole:   # one item, whole: a piece of its own
            if cur:
                out.append(cur)
            out.append(piece)
            cur = ""
            continue
        while len(piece) > size:  # a single sentence longer than size: cut at words
            cut = piece.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            head, piece = piece[:cut].strip(), piece[cut:].strip()
            if cur:
                out.append(cur)
                cur = ""
            out.append(head)
        if cur and len(cur) + 1 + len(piece) > size:
            out.append(cur)
            cur = piece
        else:
            cur = f"{cur} {piece}".strip()
    if cur:
        out.append(cur)
    return out


def _tail(text: str, overlap: int) -> str:
    """The last whole sentences of ``text`` that fit in ``overlap`` characters.

    Whole sentences only: a chunk never starts in the middle of a sentence, so
    anything that quotes chunk text (the offline composer) quotes full sentences.
    """
    if overlap <= 0:
        return ""
    last_block = text.split("\n\n")[-1]
    out = ""
    for sentence in reversed(_SENTENCE_END.split(last_block)):
        candidate = f"{sentence} {out}".strip()
        if len(candidate) > overlap:
            break
        out = candidate
    return out


def chunk_text(text: str, size: int = 800, overlap: int = 120) -> list[Chunk]:
    if size < 50:
        raise ValueError("chunk size must be at least 50 characters")
    if not 0 <= overlap < size // 2:
        raise ValueError("chunk overlap must be >= 0 and smaller than half the chunk size")
    pieces: list[str] = []
    for section in _sections(text):
        blocks = [b for p in section for b in _split_long(p, size - overlap, size)]
        cur = ""
        for b in blocks:
            if cur and len(cur) + 2 + len(b) > size:
                pieces.append(cur)
                prefix = _tail(cur, overlap)
                cur = f"{prefix} {b}".strip() if prefix and len(prefix) + 1 + len(b) <= size else b
            else:
                cur = f"{cur}\n\n{b}" if cur else b
        if cur:
            pieces.append(cur)
    return [Chunk(i, p) for i, p in enumerate(pieces)]

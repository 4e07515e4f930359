"""Text from artifacts is shown literally: never as rich markup, never as terminal escapes."""

from __future__ import annotations

import re

# C0 but tab and newline, DEL, C1 (0x9b is CSI to some terminals), line/paragraph separators,
# and every bidi control: embeddings, overrides, isolates and marks ("Trojan Source"). Lone
# surrogates too: a byte of a file name that is not UTF-8 (Python's surrogateescape) or a `\ud800`
# escape in a json; no UTF-8 stream can write them, so a terminal, file or CSV would raise.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """Replace control characters (ESC, BEL, bidi overrides...) and lone surrogates with visible
    `\\xNN` / `\\uNNNN` escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


def json_safe(json_text: str) -> str:
    """JSON text with what `json.dumps(ensure_ascii=False)` leaves raw but a terminal acts on (DEL,
    C1 controls, bidi overrides) or cannot encode (lone surrogates) written as `\\uXXXX` escapes: it loads back
    the very same data."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def surrogates_escaped(text: str) -> str:
    """`text` with each lone surrogate written as a visible `\\udcff`: what any UTF-8 writer can
    write. Everything else is kept as it is (CSV keeps an artifact's text)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# Names (kernels, keys, archs, versions) come from a kernel's json: a hostile one may be megabytes.
# Triton's longest (Inductor's fused kernels) are about 100 characters.
NAME_LIMIT = 200


def shorten(text: str, limit: int = NAME_LIMIT) -> str:
    """`text`, or its first and last characters with how many were left out between them:
    `triton_poi_fused_…[9,999,800 characters]…_3`. Saved reports (JSON, SARIF) keep the whole name."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    return f"{text[:keep]}…[{len(text) - 2 * keep:,} characters]…{text[-keep:]}"


def printable_name(text: str, limit: int = NAME_LIMIT) -> str:
    """A name as a terminal shows it: shortened, then escaped (printable)."""
    return printable(shorten(text, limit))


# A problem's or finding's message as a terminal shows it. Real ones are a line or two (paths
# included); one past this holds a hostile name or value (a 10 MB kernel name quoted in "no
# register count for kernel '...'"), cut in the middle as names are.
MESSAGE_LIMIT = 2000


def printable_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message as a terminal shows it: shortened past `limit` characters, then escaped."""
    return printable(shorten(text, limit))

"""Kit's own comments in Markdown (`<!-- kit:promoted key=… -->`): provenance for Kit, not content.

Search snippets, embedded text, claims and prompts all read a file without them, through this one
definition: two copies with different rules once turned `- <!-- kit:… --> Ada` into `-Ada` for
search (a list item no longer, so its claim was another) and `-  Ada` for the prompt. A leaf module.
"""

from __future__ import annotations

import re

# a comment body never holds "-->": without that bound, a lazy `.*?` looking for a comment that ends
# its line ran on through the next comment and took the text between them
_BODY = r"<!--\s*kit:(?:(?!-->).)*-->"
# what a comment is, for a caller that puts something in its place (a claim's normalised text, whose
# whitespace is collapsed: a space keeps "- <!-- kit:… -->" a list marker, as claim hashes always had it)
KIT_COMMENT = re.compile(_BODY, re.S)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)  # any comment, Kit's or the user's: what no reader sees
# a comment alone on its line (or lines) takes the line with it — on the last line, the line break
# before it, so no blank end is left where it was
_ALONE = re.compile(r"^[ \t]*" + _BODY + r"[ \t]*(?:\r?\n|\Z)|\r?\n[ \t]*" + _BODY + r"[ \t]*\Z", re.M | re.S)
# one inside a line (or several side by side), with the blanks around it
_INLINE = re.compile(r"[ \t]*(?:" + _BODY + r"[ \t]*)+", re.S)


def _gap(match: re.Match[str]) -> str:
    # between two words the comment was a gap (one space); at either end of a line, nothing
    text, start, end = match.string, match.start(), match.end()
    at_edge = start == 0 or text[start - 1] in "\r\n" or end == len(text) or text[end] in "\r\n"
    return "" if at_edge else " "


def strip_kit_comments(text: str) -> str:
    """`text` without Kit's comments: one alone on its line goes with its line, one between two
    words leaves one space, one at a line's start or end leaves nothing."""
    if "<!--" not in text:
        return text
    return _INLINE.sub(_gap, _ALONE.sub("", text))

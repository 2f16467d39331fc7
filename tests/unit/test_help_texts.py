"""Every help text reads as written: rich markup would swallow a bracketed word such as ``[lab]`` (it did, in
`protolab lab up --help`), so a literal bracket in a help text is escaped."""

from __future__ import annotations

import re

import typer.main

from protolab.commands import app

#: rich's markup tags a help text may use on purpose (none today).
MARKUP = re.compile(r"\[/?(bold|italic|dim|red|green|yellow|cyan|magenta|blue|link[^\]]*)\]")


def _texts(command, path: str):
    yield path, command.help or ""
    for p in command.params:
        yield f"{path} {p.name}", getattr(p, "help", None) or ""
    for name, sub in getattr(command, "commands", {}).items():
        yield from _texts(sub, f"{path} {name}")


def test_no_help_text_has_an_unescaped_bracketed_word():
    texts = list(_texts(typer.main.get_command(app), "protolab"))
    assert len(texts) > 50  # every command and option was walked
    bare = [(where, text) for where, text in texts
            if re.search(r"(?<!\\)\[[^\]\s]+\]", MARKUP.sub("", text))]
    assert bare == [], "escape '[' as '\\[' in these help texts: " + repr(bare)
